// Dense CPU tensor: element type, shape and a shared, immutable-by-convention buffer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace epprof::rt {

// Numbering follows onnx::TensorProto::DataType.
enum class DataType : int {
  Undefined = 0,
  Float = 1,
  Uint8 = 2,
  Int8 = 3,
  Uint16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  Uint32 = 12,
  Uint64 = 13,
  BFloat16 = 16,
};

// IEEE 754 half and bfloat16, stored as their bit patterns. Kernels compute
// in float: convert with to_float() and the from_float() constructors
// (round to nearest even, NaN kept a NaN).
struct Float16 {
  uint16_t bits = 0;
  static Float16 from_float(float f);
  float to_float() const;
};
struct BFloat16 {
  uint16_t bits = 0;
  static BFloat16 from_float(float f);
  float to_float() const;
};

size_t element_size(DataType type);          // throws Error for unsupported types
const char* type_name(DataType type);        // ONNX Runtime spelling: "float", "int64", ...
bool is_supported_type(int onnx_elem_type);  // a type Tensor can store

using Shape = std::vector<int64_t>;
int64_t shape_size(const Shape& shape);      // product of dims (1 for a scalar)
std::string shape_to_string(const Shape& shape);

template <typename T> constexpr DataType data_type_of();
template <> constexpr DataType data_type_of<float>() { return DataType::Float; }
template <> constexpr DataType data_type_of<double>() { return DataType::Double; }
template <> constexpr DataType data_type_of<int64_t>() { return DataType::Int64; }
template <> constexpr DataType data_type_of<int32_t>() { return DataType::Int32; }
template <> constexpr DataType data_type_of<uint8_t>() { return DataType::Uint8; }
template <> constexpr DataType data_type_of<int8_t>() { return DataType::Int8; }
template <> constexpr DataType data_type_of<bool>() { return DataType::Bool; }
template <> constexpr DataType data_type_of<uint16_t>() { return DataType::Uint16; }
template <> constexpr DataType data_type_of<int16_t>() { return DataType::Int16; }
template <> constexpr DataType data_type_of<uint32_t>() { return DataType::Uint32; }
template <> constexpr DataType data_type_of<uint64_t>() { return DataType::Uint64; }
template <> constexpr DataType data_type_of<Float16>() { return DataType::Float16; }
template <> constexpr DataType data_type_of<BFloat16>() { return DataType::BFloat16; }

// Copying a Tensor is shallow (the buffer is shared); kernels never write to
// their inputs, so sharing is safe. Use clone() for a deep copy.
//
// A Tensor is also how the runtime passes ONNX's other value types, so that
// kernels, executors and observers keep one value type:
//  - a sequence (ONNX seq(tensor(T))): is_sequence(), its tensors in
//    sequence(), their element type in element_type() (known even when the
//    sequence is empty);
//  - an optional: one that holds a value is that value (a tensor or a
//    sequence); an empty one is_none(), with element_type() and
//    none_of_sequence() saying what it would hold.
// Sequences and empty optionals have dtype() Undefined, no buffer and rank
// 0, so a kernel that expects a dense tensor rejects them by type; empty()
// is false for them ("no value" stays a default-constructed Tensor).
class Tensor {
 public:
  Tensor() = default;
  Tensor(DataType type, Shape shape);  // zero-initialised buffer
  // A dense tensor whose buffer is NOT initialised (it may hold an earlier
  // tensor's bytes): for a kernel that writes every element before anything
  // reads one. Saves the zeroing pass, one write of the whole output.
  static Tensor uninitialized(DataType type, Shape shape);

  // A sequence of tensors of `element_type` (each item must be a dense tensor of that type).
  static Tensor sequence_of(DataType element_type, std::vector<Tensor> items);
  // An empty optional that would hold a tensor (or, with `of_sequence`, a sequence) of `element_type`.
  static Tensor none(DataType element_type, bool of_sequence = false);

  bool is_sequence() const { return kind_ == Kind::Sequence; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_dense() const { return kind_ == Kind::Dense && type_ != DataType::Undefined; }
  const std::vector<Tensor>& sequence() const;  // throws Error unless is_sequence()
  DataType element_type() const;                 // dtype() for a dense tensor
  bool none_of_sequence() const;                 // for is_none(): whether it would hold a sequence

  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  template <typename T>
  static Tensor scalar(T value) { return from_vector<T>({}, {value}); }

  DataType dtype() const { return type_; }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_.at(i); }
  int64_t size() const { return shape_size(shape_); }
  size_t byte_size() const { return bytes_; }
  bool empty() const { return type_ == DataType::Undefined && kind_ == Kind::Dense; }

  // The element buffer; null for a sequence or an empty optional.
  const void* raw() const { return kind_ == Kind::Dense ? data_.get() : nullptr; }
  void* raw_mutable() { return kind_ == Kind::Dense ? data_.get() : nullptr; }
  template <typename T> const T* data() const { check_type(data_type_of<T>()); return static_cast<const T*>(raw()); }
  template <typename T> T* mutable_data() { check_type(data_type_of<T>()); return static_cast<T*>(raw_mutable()); }
  template <typename T> std::vector<T> to_vector() const { const T* p = data<T>(); return std::vector<T>(p, p + size()); }

  // Whether `other` holds this tensor's very buffer (a copy or a reshape of
  // it), not merely equal bytes. False when either has none.
  bool shares_buffer(const Tensor& other) const { return data_ && data_ == other.data_; }

  // Same buffer, new shape with the same number of elements.
  Tensor reshaped(Shape shape) const;
  Tensor clone() const;
  std::string description() const;  // "float[1,3,224,224]", "seq<float>(3)", "optional<float>(none)"

 private:
  enum class Kind : uint8_t { Dense, Sequence, None };
  struct Composite;  // what data_ holds for a sequence or an empty optional
  const Composite& composite() const { return *static_cast<const Composite*>(data_.get()); }

  Tensor(DataType type, Shape shape, bool zeroed);
  void check_type(DataType expected) const;
  [[noreturn]] static void throw_size_mismatch(int64_t expected, size_t got);

  DataType type_ = DataType::Undefined;
  Kind kind_ = Kind::Dense;  // fits in type_'s padding: a Tensor stays 56 bytes
  Shape shape_;
  size_t bytes_ = 0;
  std::shared_ptr<void> data_;
};

template <typename T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(data_type_of<T>(), std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.size()) throw_size_mismatch(t.size(), values.size());
  T* p = t.mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

}  // namespace epprof::rt
