// Shared helpers for CPU kernels.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "epprof/rt/error.h"
#include "epprof/rt/execution_provider.h"
#include "epprof/rt/graph.h"
#include "epprof/rt/tensor.h"

namespace epprof::rt::kernels {

[[noreturn]] inline void fail(const std::string& message) { throw Error(ErrorKind::Kernel, message); }

// dst[0, n) = src[0, n) for the short runs of packing and im2col (a row of
// a panel, a row of an image): fixed-size copies the compiler inlines, where
// std::copy is a memmove call that costs more than 32 floats.
template <typename T>
inline void copy_short(T* dst, const T* src, int64_t n) {
  static_assert(std::is_trivially_copyable_v<T>);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) std::memcpy(dst + i, src + i, 8 * sizeof(T));
  if (n - i >= 4) std::memcpy(dst + i, src + i, 4 * sizeof(T)), i += 4;
  if (n - i >= 2) std::memcpy(dst + i, src + i, 2 * sizeof(T)), i += 2;
  if (n - i >= 1) dst[i] = src[i];
}

// dst[0, n) = T{}, as copy_short.
template <typename T>
inline void zero_short(T* dst, int64_t n) {
  static_assert(std::is_trivially_copyable_v<T>);
  static constexpr T kZeros[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) std::memcpy(dst + i, kZeros, sizeof kZeros);
  for (; i < n; ++i) dst[i] = T{};
}

// A kernel whose state is captured by a lambda built in the factory.
class FnKernel final : public Kernel {
 public:
  using Fn = std::function<void(KernelContext&)>;
  explicit FnKernel(Fn fn) : fn_(std::move(fn)) {}
  void compute(KernelContext& ctx) const override { fn_(ctx); }

 private:
  Fn fn_;
};

inline std::unique_ptr<Kernel> make_kernel(FnKernel::Fn fn) { return std::make_unique<FnKernel>(std::move(fn)); }

using KernelFactory = std::unique_ptr<Kernel> (*)(const Node&);

struct KernelDef {
  const char* op_type;
  int since_version;  // of its domain's opset
  int max_version;
  KernelFactory factory;
  const char* domain = "";  // "" : the default ONNX domain
};

// Each kernel file appends its definitions.
void register_elementwise(std::vector<KernelDef>& table);
void register_linalg(std::vector<KernelDef>& table);
void register_nn(std::vector<KernelDef>& table);
void register_conv(std::vector<KernelDef>& table);
void register_pool(std::vector<KernelDef>& table);
void register_shape(std::vector<KernelDef>& table);
void register_cast(std::vector<KernelDef>& table);               // Cast, CastLike
void register_unary(std::vector<KernelDef>& table);          // unary math and activations
void register_logical(std::vector<KernelDef>& table);        // comparisons, logic, Where, bit ops
void register_indexing(std::vector<KernelDef>& table);       // gather/scatter, slicing, TopK, ArgMax...
void register_tensor_ops(std::vector<KernelDef>& table);     // Pad, Tile, Expand, Range, Split, ...
void register_reductions(std::vector<KernelDef>& table);     // the Reduce* family
void register_normalization(std::vector<KernelDef>& table);  // InstanceNorm, LRN, MVN, softmax family
void register_loss(std::vector<KernelDef>& table);           // NLL and softmax cross-entropy losses
void register_einsum(std::vector<KernelDef>& table);
void register_conv_transpose(std::vector<KernelDef>& table);
void register_resize(std::vector<KernelDef>& table);         // Resize, Upsample
void register_quantized(std::vector<KernelDef>& table);      // (De)QuantizeLinear, QLinear*, *Integer
void register_sampling(std::vector<KernelDef>& table);       // GridSample, RoiAlign, NMS, MaxUnpool
void register_rnn(std::vector<KernelDef>& table);            // RNN, GRU, LSTM
void register_signal(std::vector<KernelDef>& table);         // DFT, STFT, windows, mel matrix
void register_control_flow(std::vector<KernelDef>& table);   // If, Loop, Scan
void register_sequence(std::vector<KernelDef>& table);       // Sequence* and Optional*
void register_text(std::vector<KernelDef>& table);           // TfIdfVectorizer

const std::vector<KernelDef>& cpu_kernel_table();

int64_t normalize_axis(int64_t axis, int64_t rank);       // [-rank, rank) → [0, rank)
std::vector<int64_t> to_int64s(const Tensor& t);          // int64 or int32 tensor → values
void require_type(const Tensor& t, DataType type, const char* what);
void require_float(const Tensor& t, const char* what);

// Dispatch on a tensor's element type among the common numeric types.
template <typename F>
void dispatch_numeric(DataType type, F&& f) {
  switch (type) {
    case DataType::Float: f(float{}); break;
    case DataType::Double: f(double{}); break;
    case DataType::Int64: f(int64_t{}); break;
    case DataType::Int32: f(int32_t{}); break;
    default: fail(std::string("unsupported element type ") + type_name(type));
  }
}

// Dispatch among every real-number type: the float types and all integers
// (not bool, not the 16-bit float types).
template <typename F>
void dispatch_arith(DataType type, F&& f) {
  switch (type) {
    case DataType::Float: f(float{}); break;
    case DataType::Double: f(double{}); break;
    case DataType::Int64: f(int64_t{}); break;
    case DataType::Int32: f(int32_t{}); break;
    case DataType::Int16: f(int16_t{}); break;
    case DataType::Int8: f(int8_t{}); break;
    case DataType::Uint64: f(uint64_t{}); break;
    case DataType::Uint32: f(uint32_t{}); break;
    case DataType::Uint16: f(uint16_t{}); break;
    case DataType::Uint8: f(uint8_t{}); break;
    default: fail(std::string("unsupported element type ") + type_name(type));
  }
}

// Every real-number type: dispatch_arith's types plus Float16 and BFloat16.
template <typename F>
void dispatch_real(DataType type, F&& f) {
  switch (type) {
    case DataType::Float16: f(Float16{}); break;
    case DataType::BFloat16: f(BFloat16{}); break;
    default: dispatch_arith(type, std::forward<F>(f)); break;
  }
}

// Float or double: `x`'s type, else an error naming `what` and x.
template <typename F>
void dispatch_float(const Tensor& x, const std::string& what, F&& f) {
  if (x.dtype() == DataType::Float) f(float{});
  else if (x.dtype() == DataType::Double) f(double{});
  else fail(what + ": input must be float or double, got " + x.description());
}

// The [N, C, ...] shape the per-channel kernels (BatchNormalization,
// InstanceNormalization, LRN) read X as: N, C, and S elements per (n, c).
// Fails, naming `what` and X (`input`), below rank 2.
struct ChannelShape {
  int64_t N, C, S;
};
ChannelShape channel_shape(const Tensor& x, const std::string& what, const char* input = "input");

// Input `i` of a per-channel kernel, a [C] vector of x's type (T), else a
// failure naming `what` and the input (`name`).
template <typename T>
const T* channel_param(const KernelContext& ctx, size_t i, const Tensor& x, int64_t C, const std::string& what,
                       const char* name) {
  const Tensor& p = ctx.input(i);
  if (p.dtype() != x.dtype() || p.shape() != Shape{C})
    fail(what + ": input '" + name + "' must be " + type_name(x.dtype()) + "[" + std::to_string(C) + "], got " +
         p.description());
  return p.data<T>();
}

// The 16-bit floats compute in float; every other type as itself.
template <typename T>
constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
template <typename T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

template <typename T>
compute_t<T> to_compute(T v) {
  if constexpr (is_half_v<T>) return v.to_float();
  else return v;
}
template <typename T>
T from_compute(compute_t<T> v) {
  if constexpr (is_half_v<T>) return T::from_float(v);
  else return v;
}

// Dispatch over every storable type (for data movement ops). Float16 and
// BFloat16 arrive as their bit-pattern structs.
template <typename F>
void dispatch_any(DataType type, F&& f) {
  switch (type) {
    case DataType::Bool: f(bool{}); break;
    case DataType::Float16: f(Float16{}); break;
    case DataType::BFloat16: f(BFloat16{}); break;
    default: dispatch_arith(type, std::forward<F>(f)); break;
  }
}

}  // namespace epprof::rt::kernels
