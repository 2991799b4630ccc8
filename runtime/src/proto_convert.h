// Conversions between onnx::TensorProto / AttributeProto and runtime types.
#pragma once
#include <string>

#include "epprof/rt/error.h"
#include "epprof/rt/graph.h"
#include "epprof/rt/tensor.h"
#include "onnx/onnx_pb.h"

namespace epprof::rt::detail {

class ExternalData;

// `what` names the tensor in error messages ("initializer 'W'"); errors use
// `kind`, those about external data InvalidModel. A tensor with
// data_location EXTERNAL is read through `external` (the model's files);
// with none (a tensor file, not a model) it is refused.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what, ErrorKind kind,
                         ExternalData* external = nullptr);
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto* proto);
Attribute attribute_from_proto(const onnx::AttributeProto& proto, const std::string& what,
                               ExternalData* external = nullptr);

}  // namespace epprof::rt::detail
