#include "epprof/rt/tensor_io.h"

#include <fstream>
#include <limits>
#include <sstream>

#include "epprof/rt/error.h"
#include "onnx/onnx-data_pb.h"
#include "proto_convert.h"

namespace epprof::rt {

NamedTensor parse_tensor_proto(const void* data, size_t size) {
  onnx::TensorProto proto;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(data, static_cast<int>(size)))
    throw Error(ErrorKind::Io, "not a valid ONNX TensorProto");
  const std::string what = "tensor '" + proto.name() + "'";
  return {proto.name(), detail::tensor_from_proto(proto, what, ErrorKind::Io)};
}

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot open tensor file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename Proto>
void parse(Proto& proto, const std::string& bytes, const char* what) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorKind::Io, std::string("not a valid ONNX ") + what);
}

Tensor sequence_from_proto(const onnx::SequenceProto& p, DataType declared) {
  if (p.elem_type() != onnx::SequenceProto::TENSOR && p.elem_type() != onnx::SequenceProto::UNDEFINED)
    throw Error(ErrorKind::Io, "sequence '" + p.name() + "' does not hold tensors (elem_type " +
                                   std::to_string(p.elem_type()) + ")");
  std::vector<Tensor> items;
  for (const auto& t : p.tensor_values())
    items.push_back(detail::tensor_from_proto(t, "sequence '" + p.name() + "' item", ErrorKind::Io));
  const DataType type = items.empty() ? declared : items.front().dtype();
  return Tensor::sequence_of(type, std::move(items));
}

}  // namespace

NamedTensor read_value_file(const std::string& path, const IoInfo& info) {
  if (!info.optional && info.kind == ValueKind::Tensor) return read_tensor_file(path);
  const std::string bytes = read_bytes(path);
  try {
    if (!info.optional) {
      onnx::SequenceProto p;
      parse(p, bytes, "SequenceProto");
      return {p.name(), sequence_from_proto(p, info.type)};
    }
    onnx::OptionalProto p;
    parse(p, bytes, "OptionalProto");
    if (p.has_tensor_value())
      return {p.name(), detail::tensor_from_proto(p.tensor_value(), "optional '" + p.name() + "'", ErrorKind::Io)};
    if (p.has_sequence_value()) return {p.name(), sequence_from_proto(p.sequence_value(), info.type)};
    return {p.name(), Tensor::none(info.type, p.elem_type() == onnx::OptionalProto::SEQUENCE ||
                                                  info.kind == ValueKind::Sequence)};
  } catch (const Error& e) {
    throw Error(ErrorKind::Io, "'" + path + "': " + e.message());
  }
}

NamedTensor read_tensor_file(const std::string& path) {
  const std::string bytes = read_bytes(path);
  try {
    return parse_tensor_proto(bytes.data(), bytes.size());
  } catch (const Error& e) {
    throw Error(ErrorKind::Io, "'" + path + "': " + e.what());
  }
}

std::string serialize_tensor_proto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  detail::tensor_to_proto(tensor, &proto);
  if (!name.empty()) proto.set_name(name);
  return proto.SerializeAsString();
}

void write_tensor_file(const std::string& path, const Tensor& tensor, const std::string& name) {
  const std::string bytes = serialize_tensor_proto(tensor, name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(ErrorKind::Io, "cannot create tensor file '" + path + "'");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error(ErrorKind::Io, "cannot write tensor file '" + path + "'");
}

}  // namespace epprof::rt
