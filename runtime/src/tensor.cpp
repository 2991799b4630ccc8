#include "epprof/rt/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "epprof/rt/error.h"
#include "buffer_pool.h"
#include "memory_hooks.h"

namespace epprof::rt {

size_t element_size(DataType type) {
  switch (type) {
    case DataType::Float: return 4;
    case DataType::Uint8: return 1;
    case DataType::Int8: return 1;
    case DataType::Int32: return 4;
    case DataType::Int64: return 8;
    case DataType::Bool: return 1;
    case DataType::Double: return 8;
    case DataType::Uint16: return 2;
    case DataType::Int16: return 2;
    case DataType::Uint32: return 4;
    case DataType::Uint64: return 8;
    case DataType::Float16: return 2;
    case DataType::BFloat16: return 2;
    case DataType::Undefined: break;
  }
  throw Error(ErrorKind::Kernel, "unsupported tensor element type " + std::to_string(static_cast<int>(type)));
}

const char* type_name(DataType type) {
  switch (type) {
    case DataType::Float: return "float";
    case DataType::Uint8: return "uint8";
    case DataType::Int8: return "int8";
    case DataType::Int32: return "int32";
    case DataType::Int64: return "int64";
    case DataType::Bool: return "bool";
    case DataType::Double: return "double";
    case DataType::Uint16: return "uint16";
    case DataType::Int16: return "int16";
    case DataType::Uint32: return "uint32";
    case DataType::Uint64: return "uint64";
    case DataType::Float16: return "float16";
    case DataType::BFloat16: return "bfloat16";
    case DataType::Undefined: break;
  }
  return "undefined";
}

bool is_supported_type(int t) {
  switch (static_cast<DataType>(t)) {
    case DataType::Float: case DataType::Uint8: case DataType::Int8: case DataType::Int32:
    case DataType::Int64: case DataType::Bool: case DataType::Double: case DataType::Uint16:
    case DataType::Int16: case DataType::Uint32: case DataType::Uint64: case DataType::Float16:
    case DataType::BFloat16: return true;
    default: return false;
  }
}

Float16 Float16::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  Float16 h;
  if (abs >= 0x7f800000u) {  // inf or NaN
    h.bits = static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  } else if (abs >= 0x477ff000u) {  // rounds to a value beyond the largest half
    h.bits = static_cast<uint16_t>(sign | 0x7c00u);
  } else if (abs < 0x38800000u) {  // a subnormal half or zero: let the FPU round
    float a;
    std::memcpy(&a, &abs, 4);
    h.bits = static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  } else {
    const uint32_t mant_odd = (abs >> 13) & 1u;
    const uint32_t r = abs + 0xc8000fffu + mant_odd;  // rebias the exponent, round to nearest even
    h.bits = static_cast<uint16_t>(sign | (r >> 13));
  }
  return h;
}

float Float16::to_float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  const uint32_t x = exp == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp + 112u) << 23) | (mant << 13));
  std::memcpy(&f, &x, 4);
  return f;
}

BFloat16 BFloat16::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  BFloat16 b;
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    b.bits = static_cast<uint16_t>((x >> 16) | 0x40u);  // a quiet NaN
  } else {
    b.bits = static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  }
  return b;
}

float BFloat16::to_float() const {
  const uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

int64_t shape_size(const Shape& shape) {
  int64_t n = 1;
  // One multiply per dim with the overflow flag: a division per dim to
  // test for overflow cost more than the rest of a small tensor's creation.
  for (int64_t d : shape) {
    if (d < 0) throw Error(ErrorKind::Kernel, "negative dimension in shape " + shape_to_string(shape));
    if (__builtin_mul_overflow(n, d, &n)) throw Error(ErrorKind::Kernel, "shape " + shape_to_string(shape) + " overflows");
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor(DataType type, Shape shape) : Tensor(type, std::move(shape), true) {}

Tensor Tensor::uninitialized(DataType type, Shape shape) { return Tensor(type, std::move(shape), false); }

Tensor::Tensor(DataType type, Shape shape, bool zeroed) : type_(type), shape_(std::move(shape)) {
  const int64_t n = shape_size(shape_);
  const size_t es = element_size(type);
  if (static_cast<uint64_t>(n) > (uint64_t{1} << 40) / es)
    throw Error(ErrorKind::Kernel, "tensor " + description() + " is too large");
  bytes_ = static_cast<size_t>(n) * es;
  // Always allocate at least 64 bytes, 64-byte aligned, so data() is never null.
  const size_t alloc = ((bytes_ + 63) / 64) * 64 + 64;
  void* p = memory::acquire_buffer(alloc);
  if (!p) throw std::bad_alloc();
  if (zeroed) {
    std::memset(p, 0, alloc);
  } else {
    // EPPROF_RT_POISON_UNINITIALIZED=1 (for tests) fills the data with 0xFF
    // bytes, NaN as floats, so a kernel that leaves an element unwritten
    // fails its comparison instead of passing on a recycled buffer's zeros.
    static const bool poison = [] {
      const char* v = std::getenv("EPPROF_RT_POISON_UNINITIALIZED");
      return v && *v && *v != '0';
    }();
    if (poison) std::memset(p, 0xFF, bytes_);
    std::memset(static_cast<char*>(p) + bytes_, 0, alloc - bytes_);  // the padding past the data stays defined
  }
  const memory::Owners owners = memory::report_allocated(p, alloc);
  if (owners.n == 0) {
    data_ = std::shared_ptr<void>(p, [alloc](void* q) { memory::release_buffer(q, alloc); });
  } else {
    data_ = std::shared_ptr<void>(p, [owners, alloc](void* q) {
      memory::report_freed(owners, q);
      memory::release_buffer(q, alloc);
    });
  }
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_size(shape) != size())
    throw Error(ErrorKind::Kernel, "cannot reshape " + description() + " to " + shape_to_string(shape));
  Tensor t;  // not a copy of *this: that would copy the shape only to replace it
  t.type_ = type_;
  t.kind_ = kind_;
  t.shape_ = std::move(shape);
  t.bytes_ = bytes_;
  t.data_ = data_;
  return t;
}

struct Tensor::Composite {
  DataType element_type;
  bool of_sequence;  // for an empty optional
  std::vector<Tensor> items;
};

Tensor Tensor::sequence_of(DataType element_type, std::vector<Tensor> items) {
  if (element_type != DataType::Undefined) element_size(element_type);  // throws for an unsupported type
  for (size_t i = 0; i < items.size(); ++i)
    if (!items[i].is_dense() || items[i].dtype() != element_type)
      throw Error(ErrorKind::Kernel, "sequence item " + std::to_string(i) + " is " + items[i].description() +
                                         ", expected a " + type_name(element_type) + " tensor");
  Tensor t;
  t.kind_ = Kind::Sequence;
  t.data_ = std::make_shared<Composite>(Composite{element_type, true, std::move(items)});
  return t;
}

Tensor Tensor::none(DataType element_type, bool of_sequence) {
  Tensor t;
  t.kind_ = Kind::None;
  t.data_ = std::make_shared<Composite>(Composite{element_type, of_sequence, {}});
  return t;
}

const std::vector<Tensor>& Tensor::sequence() const {
  if (!is_sequence()) throw Error(ErrorKind::Kernel, "expected a sequence, got " + description());
  return composite().items;
}

DataType Tensor::element_type() const { return kind_ == Kind::Dense ? type_ : composite().element_type; }

bool Tensor::none_of_sequence() const { return is_none() && composite().of_sequence; }

Tensor Tensor::clone() const {
  if (empty()) return {};
  if (kind_ != Kind::Dense) return *this;  // immutable: sharing is a copy
  Tensor t(type_, shape_);
  if (bytes_) std::memcpy(t.raw_mutable(), raw(), bytes_);
  return t;
}

std::string Tensor::description() const {
  switch (kind_) {
    case Kind::Sequence:
      return std::string("seq<") + type_name(composite().element_type) + ">(" +
             std::to_string(composite().items.size()) + ")";
    case Kind::None:
      return std::string("optional<") + (composite().of_sequence ? "seq<" : "") + type_name(composite().element_type) +
             (composite().of_sequence ? ">" : "") + ">(none)";
    case Kind::Dense: break;
  }
  return std::string(type_name(type_)) + shape_to_string(shape_);
}

void Tensor::check_type(DataType expected) const {
  if (expected != type_)
    throw Error(ErrorKind::Kernel, std::string("tensor of type ") + type_name(type_) + " accessed as " +
                                       type_name(expected));
}

void Tensor::throw_size_mismatch(int64_t expected, size_t got) {
  throw Error(ErrorKind::Kernel,
              "expected " + std::to_string(expected) + " values, got " + std::to_string(got));
}

}  // namespace epprof::rt
