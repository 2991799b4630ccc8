// Element-type helpers shared by the element-wise kernels (elementwise.cpp,
// unary.cpp, logical.cpp, Cast): type dispatch over every real type, the
// 16-bit floats computed in float, saturating conversions and wrapping
// integer arithmetic (signed overflow is undefined behaviour in C++; ONNX
// integer ops wrap like numpy and ONNX Runtime).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/common.h"

namespace epprof::rt::kernels {

// double -> float rounding to odd: an inexact result gets an odd last bit.
// Rounding that float to a 16-bit float then gives the correctly rounded
// (nearest-even) result of the double; rounding to nearest twice could not.
inline float to_float_round_to_odd(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(v) || static_cast<double>(f) == v) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 1u) == 0) f = std::nextafter(f, v > f ? std::numeric_limits<float>::infinity()
                                                     : -std::numeric_limits<float>::infinity());
  return f;
}

// Value conversion between any two storable types. Float to integer
// saturates and maps NaN to 0 (an out-of-range float->int cast is undefined).
template <typename To, typename From>
To convert(From v) {
  if constexpr (is_half_v<From>) {
    return convert<To>(v.to_float());
  } else if constexpr (is_half_v<To>) {
    if constexpr (std::is_same_v<From, float>) return To::from_float(v);
    else return To::from_float(to_float_round_to_odd(static_cast<double>(v)));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return To(0);
    if (v <= static_cast<From>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Unsigned type at least as wide as unsigned int that holds T's bits: integer
// promotion would otherwise turn uint16 * uint16 into a signed int product.
template <typename T>
using wrap_t = std::make_unsigned_t<std::common_type_t<T, unsigned>>;

// Two's-complement wrapping add/sub/mul/neg for integers; plain ops otherwise.
template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<wrap_t<T>>(a) + static_cast<wrap_t<T>>(b));
  else return a + b;
}
template <typename T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<wrap_t<T>>(a) - static_cast<wrap_t<T>>(b));
  else return a - b;
}
template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<wrap_t<T>>(a) * static_cast<wrap_t<T>>(b));
  else return a * b;
}
template <typename T>
T wrap_neg(T a) {
  if constexpr (std::is_integral_v<T>) return wrap_sub(T(0), a);
  else return -a;  // not 0 - a, which turns +0 into +0 instead of -0
}

// Which element types an element-wise op accepts.
enum class Accept {
  Float,    // float, double, float16, bfloat16
  Signed,   // the float types and the signed integers
  Numeric,  // every real type
};

template <Accept K, typename T>
constexpr bool accepts() {
  if constexpr (std::is_same_v<T, bool>) return false;
  else if constexpr (K == Accept::Float) return std::is_floating_point_v<T> || is_half_v<T>;
  else if constexpr (K == Accept::Signed) return !std::is_unsigned_v<T>;
  else return true;
}

inline const char* accept_name(Accept k) {
  switch (k) {
    case Accept::Float: return "a floating-point type (float, double, float16, bfloat16)";
    case Accept::Signed: return "a floating-point or signed integer type";
    default: return "a numeric type";
  }
}

[[noreturn]] inline void fail_type(const std::string& who, const char* what, const Tensor& t, Accept k) {
  fail(who + ": " + what + " must be " + accept_name(k) + ", got " + t.description());
}

}  // namespace epprof::rt::kernels
