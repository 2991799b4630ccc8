#include "proto_convert.h"

#include <cstring>
#include <limits>

#include "external_data.h"

namespace epprof::rt::detail {

namespace {
template <typename Dst, typename Field>
void copy_field(const Field& field, Tensor& t) {
  Dst* out = static_cast<Dst*>(t.raw_mutable());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

// Whether `p` carries data of its own (raw_data or a typed field).
bool has_inline_data(const onnx::TensorProto& p) {
  return p.has_raw_data() || p.float_data_size() || p.int32_data_size() || p.string_data_size() ||
         p.int64_data_size() || p.double_data_size() || p.uint64_data_size();
}

Tensor external_tensor(const onnx::TensorProto& p, const std::string& what, ErrorKind kind, ExternalData* external,
                       DataType type, const Shape& shape, size_t count) {
  if (has_inline_data(p))
    throw Error(ErrorKind::InvalidModel, what + " has data_location EXTERNAL but also carries inline data");
  if (!external)
    throw Error(kind, what + " uses external data, which is only read for a model loaded from its file");
  const size_t es = element_size(type);
  if (count > std::numeric_limits<size_t>::max() / es)
    throw Error(ErrorKind::InvalidModel, what + " has dims " + shape_to_string(shape) + " too large to hold");
  // The file must hold the bytes before they are allocated: dims alone
  // cannot make the loader allocate more than the external file has.
  const ExternalData::Range range = external->locate(p, what, count * es);
  Tensor t(type, shape);
  external->read(range, what, t.raw_mutable());
  return t;
}
}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& what, ErrorKind kind,
                         ExternalData* external) {
  const bool is_external = p.data_location() == onnx::TensorProto::EXTERNAL;
  if (!is_external && p.external_data_size() > 0)
    throw Error(ErrorKind::InvalidModel, what + " has external_data entries but its data_location is not EXTERNAL");
  if (p.has_segment()) throw Error(kind, what + " is segmented, which is not supported");
  if (!is_supported_type(p.data_type()))
    throw Error(kind, what + " has unsupported element type " + std::to_string(p.data_type()));
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw Error(kind, what + " has a negative dimension in " + shape_to_string(shape));
  const auto type = static_cast<DataType>(p.data_type());
  int64_t count = 0;
  try {
    count = shape_size(shape);
  } catch (const Error& e) {
    throw Error(kind, what + ": " + e.message());
  }
  const size_t n = static_cast<size_t>(count);
  if (is_external) return external_tensor(p, what, kind, external, type, shape, n);
  auto mismatch = [&](size_t got, const char* field) {
    return Error(kind, what + " has dims " + shape_to_string(shape) + " (" + std::to_string(n) +
                           " elements) but " + field + " holds " + std::to_string(got));
  };
  // Check the data size before allocating, so that dims cannot make us allocate
  // more than the model file holds.
  const size_t es = element_size(type);
  size_t have = 0;
  const char* field = "";
  if (p.has_raw_data()) {
    have = p.raw_data().size();
    field = "raw_data bytes";
    if (n > have / es || n * es != have) throw mismatch(have, field);
  } else {
    switch (type) {
      case DataType::Float: have = static_cast<size_t>(p.float_data_size()); field = "float_data"; break;
      case DataType::Double: have = static_cast<size_t>(p.double_data_size()); field = "double_data"; break;
      case DataType::Int64: have = static_cast<size_t>(p.int64_data_size()); field = "int64_data"; break;
      case DataType::Uint32:
      case DataType::Uint64: have = static_cast<size_t>(p.uint64_data_size()); field = "uint64_data"; break;
      default: have = static_cast<size_t>(p.int32_data_size()); field = "int32_data"; break;
    }
    if (have != n) throw mismatch(have, field);
  }
  Tensor t(type, shape);
  if (p.has_raw_data()) {
    if (t.byte_size()) std::memcpy(t.raw_mutable(), p.raw_data().data(), t.byte_size());
    return t;
  }
  switch (type) {
    case DataType::Float:
      copy_field<float>(p.float_data(), t);
      break;
    case DataType::Double:
      copy_field<double>(p.double_data(), t);
      break;
    case DataType::Int64:
      copy_field<int64_t>(p.int64_data(), t);
      break;
    case DataType::Int32:
      copy_field<int32_t>(p.int32_data(), t);
      break;
    case DataType::Uint8:
    case DataType::Int8:
    case DataType::Bool:
      if (type == DataType::Bool) {
        bool* out = t.mutable_data<bool>();
        for (size_t i = 0; i < n; ++i) out[i] = p.int32_data(static_cast<int>(i)) != 0;
      } else if (type == DataType::Uint8) {
        copy_field<uint8_t>(p.int32_data(), t);
      } else {
        copy_field<int8_t>(p.int32_data(), t);
      }
      break;
    case DataType::Uint16:
    case DataType::Float16:
    case DataType::BFloat16:  // 16-bit types keep their bit pattern in int32_data
      copy_field<uint16_t>(p.int32_data(), t);
      break;
    case DataType::Int16:
      copy_field<int16_t>(p.int32_data(), t);
      break;
    case DataType::Uint32:
      copy_field<uint32_t>(p.uint64_data(), t);
      break;
    case DataType::Uint64:
      copy_field<uint64_t>(p.uint64_data(), t);
      break;
    case DataType::Undefined:
      break;
  }
  return t;
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto* p) {
  p->set_data_type(static_cast<int>(t.dtype()));
  p->clear_dims();
  for (int64_t d : t.shape()) p->add_dims(d);
  p->set_raw_data(static_cast<const char*>(t.raw()), t.byte_size());
}

Attribute attribute_from_proto(const onnx::AttributeProto& a, const std::string& what, ExternalData* external) {
  Attribute out;
  // Old models may omit `type`; infer it from the populated field.
  auto type = a.type();
  if (type == onnx::AttributeProto::UNDEFINED) {
    if (a.has_f()) type = onnx::AttributeProto::FLOAT;
    else if (a.has_i()) type = onnx::AttributeProto::INT;
    else if (a.has_s()) type = onnx::AttributeProto::STRING;
    else if (a.has_t()) type = onnx::AttributeProto::TENSOR;
    else if (a.floats_size()) type = onnx::AttributeProto::FLOATS;
    else if (a.ints_size()) type = onnx::AttributeProto::INTS;
    else if (a.strings_size()) type = onnx::AttributeProto::STRINGS;
    else if (a.has_tp()) type = onnx::AttributeProto::TYPE_PROTO;
  }
  switch (type) {
    case onnx::AttributeProto::FLOAT: out.kind = Attribute::Kind::Float; out.f = a.f(); break;
    case onnx::AttributeProto::INT: out.kind = Attribute::Kind::Int; out.i = a.i(); break;
    case onnx::AttributeProto::STRING: out.kind = Attribute::Kind::String; out.s = a.s(); break;
    case onnx::AttributeProto::TENSOR:
      out.kind = Attribute::Kind::Tensor;
      out.t = tensor_from_proto(a.t(), what + " attribute '" + a.name() + "'", ErrorKind::BadInitializer, external);
      break;
    case onnx::AttributeProto::FLOATS:
      out.kind = Attribute::Kind::Floats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      out.kind = Attribute::Kind::Ints;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      out.kind = Attribute::Kind::Strings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::TYPE_PROTO: {
      const onnx::TypeProto* t = &a.tp();
      if (t->has_optional_type()) t = &t->optional_type().elem_type();
      const bool of_sequence = t->has_sequence_type();
      if (of_sequence) t = &t->sequence_type().elem_type();
      if (!t->has_tensor_type() || !is_supported_type(t->tensor_type().elem_type())) {
        out.kind = Attribute::Kind::Other;  // a type the runtime cannot hold; ops reading it reject it
        break;
      }
      out.kind = Attribute::Kind::TypeProto;
      out.t = Tensor::none(static_cast<DataType>(t->tensor_type().elem_type()), of_sequence);
      break;
    }
    default: out.kind = Attribute::Kind::Other; break;
  }
  return out;
}

}  // namespace epprof::rt::detail
