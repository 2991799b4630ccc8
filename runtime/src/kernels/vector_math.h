// Element functions built from arithmetic and bit operations only, so that
// GCC vectorises the loops that call them: a libm call keeps a loop scalar
// (expf alone costs about 1.7 ns an element here, a sigmoid with a branch on
// the sign over 6 ns). Float only; measured against libm in
// tests/runtime/vector_math_test.cpp.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace epprof::rt::kernels {

// e^x within 2 ulp, from Cephes' expf: x = n ln2 + r with |r| <= ln2 / 2,
// e^r by a degree-7 polynomial, times 2^n built in the exponent bits.
// Results below 2^-125 (about 2.4e-38) are 0, above FLT_MAX +inf; NaN stays
// NaN. Every step is a select or arithmetic, none a branch or a call.
inline float exp_f32(float x) {
  constexpr float kHi = 88.7228394f;   // ln(FLT_MAX)
  constexpr float kLo = -86.6433640f;  // -125 ln 2: 2^(n-1) below stays a normal float
  const bool nan = x != x, over = x > kHi, under = x < kLo;
  const float c = nan ? 0.0f : over ? kHi : under ? kLo : x;
  // n = round(c / ln 2): adding 1.5 * 2^23 rounds to an integer, to nearest.
  constexpr float kRound = 12582912.0f;
  const float fn = (c * 1.44269504088896341f + kRound) - kRound;
  // r = c - n ln 2, with ln 2 in two parts so that r keeps its low bits.
  const float r = (c - fn * 0.693359375f) - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  // 2^n as 2^(n-1) * 2: n runs from -125 to 128, and 2^128 is no float.
  const int32_t bits = (static_cast<int32_t>(fn) + 126) << 23;
  float half_scale;
  std::memcpy(&half_scale, &bits, sizeof half_scale);
  const float y = er * half_scale * 2.0f;
  return nan ? x : over ? std::numeric_limits<float>::infinity() : under ? 0.0f : y;
}

// e^x in the kernels' compute types: exp_f32 for float, libm for double.
inline float exp_of(float x) { return exp_f32(x); }
inline double exp_of(double x) { return std::exp(x); }

// erf(x) within 2.5e-7 absolute (a few ulp): below |x| = 1 its Maclaurin
// series to x^21, whose next term is under 2e-8; above it 1 - erfc, with
// erfc(a) = t P(t) e^-a^2, t = 1 / (1 + p a), the five-term fit of
// Abramowitz and Stegun 7.1.26 (error 1.5e-7). Past |x| = 4 erfc is below
// half an ulp of 1. NaN stays NaN. Both branches are computed and one
// selected, so loops over it vectorise (std::erf kept the transformer's GELU
// scalar: 7 ns an element).
inline float erf_f32(float x) {
  const float a0 = std::fabs(x);
  const float a = a0 > 4.0f ? 4.0f : a0;  // NaN fails the test and stays NaN
  const float a2 = a * a;
  // 2/sqrt(pi) * sum (-1)^n a^(2n) / (n! (2n + 1)), n = 0..10, by Horner in a^2.
  float s = 1.0f / 76204800.0f;
  s = s * a2 - 1.0f / 6894720.0f;
  s = s * a2 + 1.0f / 685440.0f;
  s = s * a2 - 1.0f / 75600.0f;
  s = s * a2 + 1.0f / 9360.0f;
  s = s * a2 - 1.0f / 1320.0f;
  s = s * a2 + 1.0f / 216.0f;
  s = s * a2 - 1.0f / 42.0f;
  s = s * a2 + 1.0f / 10.0f;
  s = s * a2 - 1.0f / 3.0f;
  s = s * a2 + 1.0f;
  const float small = 1.12837916709551257f * a * s;
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  const float large = 1.0f - q * t * exp_f32(-a2);
  return std::copysign(a < 1.0f ? small : large, x);
}

// erf in the kernels' compute types: erf_f32 for float, libm for double.
inline float erf_of(float x) { return erf_f32(x); }
inline double erf_of(double x) { return std::erf(x); }

// ln x within 2 ulp, from Cephes' logf: x = m 2^e with m in [sqrt(1/2),
// sqrt(2)), ln m = ln(1 + f) by a degree-9 polynomial in f, plus e ln 2 in
// two parts. Subnormals are scaled by 2^25 first. 0 gives -inf, a negative
// NaN, +inf +inf, NaN NaN. Selects and arithmetic only, as exp_f32.
inline float log_f32(float x) {
  constexpr float kTiny = std::numeric_limits<float>::min();  // below: subnormal
  const bool sub = x < kTiny;
  const float v = sub ? x * 33554432.0f : x;  // * 2^25, exact
  int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  // v = m 2^e, m in [0.5, 1): e from the exponent bits, m with exponent -1.
  int32_t e = ((bits >> 23) & 0xff) - 126 - (sub ? 25 : 0);
  const int32_t mbits = (bits & 0x007fffff) | 0x3f000000;
  float m;
  std::memcpy(&m, &mbits, sizeof m);
  // m below sqrt(1/2): 2m - 1 and one less e, so f = m' - 1 lies in
  // [sqrt(1/2) - 1, sqrt(2) - 1).
  const bool low = m < 0.707106781186547524f;
  e -= low ? 1 : 0;
  const float f = low ? m + m - 1.0f : m - 1.0f;
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  const float fe = static_cast<float>(e);
  // ln 2 = 0.693359375 - 2.12194440e-4, the first part exact in a float.
  const float y = ((p * f * z + fe * -2.12194440e-4f) - 0.5f * z + f) + fe * 0.693359375f;
  // The special values, one select each (one nested select kept GCC from
  // vectorising the loop).
  constexpr float kInf = std::numeric_limits<float>::infinity();
  float r = x == kInf ? kInf : y;
  r = x == 0.0f ? -kInf : r;
  r = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : r;
  return x != x ? x : r;
}

// ln x in the kernels' compute types: log_f32 for float, libm for double.
inline float log_of(float x) { return log_f32(x); }
inline double log_of(double x) { return std::log(x); }

// 1 / (1 + e^-x), stable in both directions: e = e^-|x|, then 1 / (1 + e)
// for x >= 0 and e / (1 + e) below.
inline float sigmoid_f32(float x) {
  const float e = exp_f32(-std::fabs(x)), d = 1.0f + e;
  return x >= 0.0f ? 1.0f / d : e / d;
}

// tanh x within 4 ulp: below |x| = 0.25 its odd Maclaurin series to x^9
// (the next term is under 1e-8 of the result there), above it
// (1 - e) / (1 + e) with e = e^(-2|x|) (e <= 0.61, so the difference loses
// no more than two bits), the sign put back. From |x| = 10 on the result
// rounds to +-1; NaN stays NaN. Selects and arithmetic only, as exp_f32.
inline float tanh_f32(float x) {
  const float a = std::fabs(x), a2 = a * a;
  const float small = a + a * a2 * (-1.0f / 3 + a2 * (2.0f / 15 + a2 * (-17.0f / 315 + a2 * (62.0f / 2835))));
  const float e = exp_f32(-2.0f * a);
  const float large = (1.0f - e) / (1.0f + e);
  return std::copysign(a < 0.25f ? small : large, x);
}

// tanh in the kernels' compute types: tanh_f32 for float, libm for double.
inline float tanh_of(float x) { return tanh_f32(x); }
inline double tanh_of(double x) { return std::tanh(x); }

}  // namespace epprof::rt::kernels
