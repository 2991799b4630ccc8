#include "epprof/rt/tensor_io.h"

#include <fstream>
#include <limits>
#include <sstream>

#include "epprof/rt/error.h"
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

NamedTensor read_tensor_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot open tensor file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
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
