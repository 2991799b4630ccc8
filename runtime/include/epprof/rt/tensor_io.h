// Reading and writing ONNX TensorProto files (.pb), as used by ONNX's test data
// and by `epprof run --input name=file.pb / --save-outputs DIR`.
#pragma once
#include <string>

#include "epprof/rt/graph.h"
#include "epprof/rt/tensor.h"

namespace epprof::rt {

struct NamedTensor {
  std::string name;  // TensorProto.name (may be empty)
  Tensor tensor;
};

NamedTensor read_tensor_file(const std::string& path);            // throws Error
void write_tensor_file(const std::string& path, const Tensor& tensor, const std::string& name = "");
NamedTensor parse_tensor_proto(const void* data, size_t size);   // throws Error
std::string serialize_tensor_proto(const Tensor& tensor, const std::string& name = "");

// A value of the type `info` declares, from a TensorProto, SequenceProto
// (info.kind Sequence) or OptionalProto (info.optional) file, as a Tensor
// (sequence_of / none; see tensor.h). An empty sequence or optional whose
// file does not say its element type gets info.type.
NamedTensor read_value_file(const std::string& path, const IoInfo& info);  // throws Error

}  // namespace epprof::rt
