// Conversions between onnx::TensorProto / AttributeProto and runtime types.
#pragma once
#include <string>

#include "epprof/rt/error.h"
#include "epprof/rt/graph.h"
#include "epprof/rt/tensor.h"
#include "onnx/onnx_pb.h"

namespace epprof::rt::detail {

// `what` names the tensor in error messages ("initializer 'W'"); errors use `kind`.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what, ErrorKind kind);
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto* proto);
Attribute attribute_from_proto(const onnx::AttributeProto& proto, const std::string& what);

}  // namespace epprof::rt::detail
