// Helpers shared by the data-movement kernels (shape_ops.cpp, tensor_ops.cpp,
// indexing.cpp): index inputs and their bounds checks, the outer × axis × inner
// view of a shape, strided copies, and per-type arithmetic that is safe for
// every storable type (16-bit floats compute in float, integers wrap instead
// of overflowing, NaN has a fixed place in orderings).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.h"

namespace epprof::rt::kernels {

// Row-major element strides of `shape`.
inline std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// Values of an int32 or int64 index input; `what` names the input in errors.
inline std::vector<int64_t> read_indices(const Tensor& t, const std::string& what) {
  if (t.dtype() != DataType::Int64 && t.dtype() != DataType::Int32)
    fail(what + " must be int64 or int32, got " + t.description());
  return to_int64s(t);
}

// The value of a scalar or one-element int32/int64 input.
inline int64_t read_scalar_index(const Tensor& t, const std::string& what) {
  if (t.size() != 1 || t.rank() > 1) fail(what + " must be a scalar or a 1-element tensor, got " + t.description());
  return read_indices(t, what)[0];
}

// Maps i in [-n, n) to [0, n); anything else fails, naming `what`.
inline int64_t wrap_index(int64_t i, int64_t n, const char* what) {
  if (i < -n || i >= n)
    fail(std::string(what) + " " + std::to_string(i) + " is out of range [" + std::to_string(-n) + ", " +
         std::to_string(n) + ")");
  return i < 0 ? i + n : i;
}

// a * b for non-negative dimension arithmetic, failing instead of overflowing.
inline int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a)
    fail(std::string(what) + ": " + std::to_string(a) + " * " + std::to_string(b) + " overflows int64");
  return a * b;
}

// A shape seen as outer × n × inner around one axis.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
inline AxisSplit split_at(const Shape& shape, size_t axis) {
  AxisSplit s;
  for (size_t d = 0; d < axis; ++d) s.outer *= shape[d];
  s.n = axis < shape.size() ? shape[axis] : 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) s.inner *= shape[d];
  return s;
}

// dst (row-major over out_shape) [i] = src[offset + Σ_d i_d * strides[d]].
// Strides may be 0 (broadcast) or negative (reversal); the caller guarantees
// every address is inside src. Used for Slice, Expand, Tile, Transpose and
// the depth/space rearrangements, which are all such views.
//
// Dims of size 1 are dropped, and a dim is merged into the next when it
// steps over exactly the next one's span (strides[d] == strides[d + 1] *
// out_shape[d + 1]), so the loop runs over the fewest, longest rows: Silero
// VAD's STFT slices a [1,258,4] tensor into [1,129,4] halves, 129 rows of 4
// elements one at a time, where the view is one contiguous run of 516.
template <typename T>
void strided_copy(const T* src, int64_t offset, const Shape& out_shape, const std::vector<int64_t>& strides, T* dst) {
  const int64_t n = shape_size(out_shape);
  if (n == 0) return;
  // The coalesced dims, innermost first, in a fixed buffer for the usual ranks.
  constexpr size_t kInline = 8;
  int64_t dims_inline[kInline], strides_inline[kInline], idx_inline[kInline];
  std::vector<int64_t> spill;
  int64_t *dims = dims_inline, *st = strides_inline, *idx = idx_inline;
  if (out_shape.size() > kInline) {
    spill.resize(3 * out_shape.size());
    dims = spill.data(), st = dims + out_shape.size(), idx = st + out_shape.size();
  }
  size_t r = 0;
  for (size_t d = out_shape.size(); d-- > 0;) {
    if (out_shape[d] == 1) continue;
    if (r > 0 && strides[d] == st[r - 1] * dims[r - 1]) {
      dims[r - 1] *= out_shape[d];
      continue;
    }
    dims[r] = out_shape[d], st[r] = strides[d], idx[r] = 0;
    ++r;
  }
  if (r == 0) {
    dst[0] = src[offset];
    return;
  }
  const int64_t inner = dims[0], inner_stride = st[0];
  int64_t off = offset;
  for (int64_t base = 0; base < n; base += inner) {
    // A contiguous run long enough for a copy call to pay (for a few
    // elements, the call cost more than the loop).
    if (inner_stride == 1 && inner >= 16) {
      std::copy_n(src + off, inner, dst + base);
    } else {
      for (int64_t j = 0; j < inner; ++j) dst[base + j] = src[off + j * inner_stride];
    }
    for (size_t d = 1; d < r; ++d) {  // odometer over the outer dims
      off += st[d];
      if (++idx[d] < dims[d]) break;
      off -= st[d] * dims[d];
      idx[d] = 0;
    }
  }
}

// A new tensor of x's type holding the strided view of x described above
// (uninitialised first: strided_copy writes every element).
inline Tensor strided_view(const Tensor& x, int64_t offset, const Shape& out_shape,
                           const std::vector<int64_t>& strides) {
  Tensor out = Tensor::uninitialized(x.dtype(), out_shape);
  dispatch_any(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    strided_copy(x.data<T>(), offset, out_shape, strides, out.mutable_data<T>());
  });
  return out;
}

// A strict weak order on compute values in which NaN is greater than every
// number and equal to itself, so sorting and max/min searches never see an
// inconsistent comparison.
template <typename C>
bool nan_last_less(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// Wrapping integer arithmetic (no signed-overflow UB; the small types are
// widened to unsigned int so that their product cannot overflow int).
template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

// v as a T, failing (naming `what`) when an integer or bool target cannot
// represent it exactly enough: NaN, infinities and out-of-range values.
template <typename T>
T cast_checked(double v, const char* what) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    // T holds exactly the integers in [lo, 2^digits), and 2^digits is a double.
    const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits);
    const double lo = std::is_signed_v<T> ? -hi : 0.0;
    if (!(v >= lo && v < hi)) fail(std::string(what) + " " + std::to_string(v) + " does not fit the tensor's integer type");
    return static_cast<T>(v);
  } else if constexpr (is_half_v<T>) {
    return T::from_float(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Whether a value is non-zero (NonZero, Compress-style truth); -0.0 is zero.
template <typename T>
bool is_nonzero(T v) {
  if constexpr (is_half_v<T>) return v.to_float() != 0.0f;
  else return v != T(0);
}

}  // namespace epprof::rt::kernels
