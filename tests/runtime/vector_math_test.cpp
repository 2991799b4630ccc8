// The vectorisable element functions (runtime/src/kernels/vector_math.h)
// against libm in double, over their whole range and at the edges.
#include "kernels/vector_math.h"

#include "kernels/broadcast.h"
#include "kernels/simd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace {

using epprof::rt::kernels::erf_f32;
using epprof::rt::kernels::exp_f32;
using epprof::rt::kernels::log_f32;
using epprof::rt::kernels::sigmoid_f32;
using epprof::rt::kernels::tanh_f32;

// Distance in units in the last place between a float and an exact value.
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  const float ulp = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / static_cast<double>(ulp);
}

TEST(VectorMath, ExpIsWithinTwoUlpOverItsRange) {
  double worst = 0, at = 0;
  const int n = 1 << 20;
  for (int i = 0; i <= n; ++i) {
    const float x = -86.6f + (88.72f + 86.6f) * static_cast<float>(i) / n;
    const double e = ulps(exp_f32(x), std::exp(static_cast<double>(x)));
    if (e > worst) worst = e, at = x;
  }
  EXPECT_LE(worst, 2.0) << "at x = " << at;
  std::printf("[ info ] exp_f32: worst %.2f ulp (at %g) over [-86.6, 88.72]\n", worst, at);
}

TEST(VectorMath, ExpEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(89.0f), inf);
  EXPECT_EQ(exp_f32(inf), inf);
  EXPECT_EQ(exp_f32(-inf), 0.0f);
  EXPECT_EQ(exp_f32(-90.0f), 0.0f);  // below 2^-125: flushed
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isfinite(exp_f32(88.72f)));
  EXPECT_LE(ulps(exp_f32(88.72f), std::exp(static_cast<double>(88.72f))), 2.0);
  EXPECT_LE(ulps(exp_f32(-86.64f), std::exp(static_cast<double>(-86.64f))), 2.0);
}

// Every float binade from the smallest subnormal to FLT_MAX, 4,096 values
// in each, against libm in double.
TEST(VectorMath, LogIsWithinTwoUlpOverEveryBinade) {
  double worst = 0, at = 0;
  for (int b = -149; b < 128; ++b) {
    const float lo = std::ldexp(1.0f, b);
    for (int i = 0; i < 4096; ++i) {
      const float x = lo + lo * static_cast<float>(i) / 4096.0f;
      if (!std::isfinite(x)) break;
      const double want = std::log(static_cast<double>(x));
      // Near x = 1 ln x is near 0: measure against the ulp of the result
      // or, where that is below float's resolution of x - 1, of 2^-24.
      const double e = want == 0.0 ? std::fabs(log_f32(x)) : ulps(log_f32(x), want);
      if (e > worst) worst = e, at = x;
    }
  }
  EXPECT_LE(worst, 2.0) << "at x = " << at;
  std::printf("[ info ] log_f32: worst %.2f ulp (at %g) over every binade\n", worst, at);
}

TEST(VectorMath, LogEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(log_f32(1.0f), 0.0f);
  EXPECT_EQ(log_f32(0.0f), -inf);
  EXPECT_EQ(log_f32(-0.0f), -inf);
  EXPECT_EQ(log_f32(inf), inf);
  EXPECT_TRUE(std::isnan(log_f32(-1.0f)));
  EXPECT_TRUE(std::isnan(log_f32(-inf)));
  EXPECT_TRUE(std::isnan(log_f32(std::numeric_limits<float>::quiet_NaN())));
  const float denorm = std::numeric_limits<float>::denorm_min();
  EXPECT_LE(ulps(log_f32(denorm), std::log(static_cast<double>(denorm))), 2.0);
  EXPECT_LE(ulps(log_f32(std::numeric_limits<float>::max()),
                 std::log(static_cast<double>(std::numeric_limits<float>::max()))),
            2.0);
}

TEST(VectorMath, SigmoidIsWithinThreeUlp) {
  double worst = 0, at = 0;
  const int n = 1 << 20;
  for (int i = 0; i <= n; ++i) {
    const float x = -30.0f + 60.0f * static_cast<float>(i) / n;
    const double want = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    const double e = ulps(sigmoid_f32(x), want);
    if (e > worst) worst = e, at = x;
  }
  EXPECT_LE(worst, 3.0) << "at x = " << at;
  EXPECT_EQ(sigmoid_f32(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(sigmoid_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(sigmoid_f32(std::numeric_limits<float>::quiet_NaN())));
}

// tanh_f32 is within 4 ulp of tanh across the series' range, the switch
// to the exponential form at |x| = 0.25, and out to where tanh is 1.
TEST(VectorMath, TanhIsWithinFourUlp) {
  double worst = 0, at = 0;
  const int n = 1 << 21;
  for (int i = 0; i <= n; ++i) {
    const float x = -12.0f + 24.0f * static_cast<float>(i) / n;
    const double e = ulps(tanh_f32(x), std::tanh(static_cast<double>(x)));
    if (e > worst) worst = e, at = x;
  }
  for (float x = 1e-30f; x < 1.0f; x *= 1.01f) {  // small inputs keep their precision
    const double e = ulps(tanh_f32(-x), std::tanh(-static_cast<double>(x)));
    if (e > worst) worst = e, at = -x;
  }
  std::printf("[ info ] tanh_f32: worst %.2f ulp (at %g)\n", worst, at);
  EXPECT_LE(worst, 4.0) << "at x = " << at;
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(tanh_f32(inf), 1.0f);
  EXPECT_EQ(tanh_f32(-inf), -1.0f);
  EXPECT_EQ(tanh_f32(50.0f), 1.0f);
  EXPECT_TRUE(std::signbit(tanh_f32(-0.0f)));
  EXPECT_TRUE(std::isnan(tanh_f32(std::numeric_limits<float>::quiet_NaN())));
}

// erf_f32 is within 2.5e-7 of erf everywhere (a few ulp where erf nears 1),
// and within a few ulp relative below |x| = 1, where results shrink with x.
TEST(VectorMath, ErfIsWithinItsBound) {
  double worst_abs = 0, worst_small = 0, at_abs = 0, at_small = 0;
  const int n = 1 << 21;
  for (int i = 0; i <= n; ++i) {
    const float x = -8.0f + 16.0f * static_cast<float>(i) / n;
    const double want = std::erf(static_cast<double>(x)), got = erf_f32(x);
    if (std::fabs(got - want) > worst_abs) worst_abs = std::fabs(got - want), at_abs = x;
    if (std::fabs(x) < 1.0f && x != 0.0f && ulps(erf_f32(x), want) > worst_small)
      worst_small = ulps(erf_f32(x), want), at_small = x;
  }
  std::printf("[ info ] erf_f32: worst %.3g absolute (at %g), %.2f ulp below |x| = 1 (at %g)\n", worst_abs, at_abs,
              worst_small, at_small);
  EXPECT_LE(worst_abs, 2.5e-7) << "at x = " << at_abs;
  EXPECT_LE(worst_small, 4.0) << "at x = " << at_small;
}

TEST(VectorMath, ErfEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(erf_f32(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(erf_f32(-0.0f)));
  EXPECT_EQ(erf_f32(inf), 1.0f);
  EXPECT_EQ(erf_f32(-inf), -1.0f);
  EXPECT_EQ(erf_f32(1e30f), 1.0f);
  EXPECT_LE(ulps(erf_f32(1e-30f), std::erf(1e-30)), 1.0);  // tiny inputs keep their precision
  EXPECT_LE(ulps(erf_f32(-1e-40f), std::erf(static_cast<double>(-1e-40f))), 2.0);  // subnormal
  EXPECT_TRUE(std::isnan(erf_f32(std::numeric_limits<float>::quiet_NaN())));
}

// The element loops run in SIMD clones (simd.h), which GCC 12 compiles as
// functions that cannot throw: an element function's exception must still
// reach the caller, with the elements before it written.
TEST(SimdClones, AnElementFunctionsExceptionReachesTheCaller) {
  using epprof::rt::kernels::transform_elements;
  const std::vector<float> in{1, 2, -1, 4};
  std::vector<float> out(4, 0.0f);
  const auto reject_negative = [](float v) {
    if (v < 0) throw std::domain_error("negative");
    return v * 2;
  };
  EXPECT_THROW(transform_elements(in.data(), out.data(), 4, reject_negative), std::domain_error);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[1], 4.0f);
  transform_elements(in.data(), out.data(), 2, reject_negative);  // and the clone still runs after it

  using epprof::rt::kernels::broadcast_binary;
  const epprof::rt::Shape row{4}, col{2, 1}, both{2, 4};
  std::vector<float> grid(8);
  EXPECT_THROW(broadcast_binary(in.data(), row, in.data(), col, grid.data(), both,
                                [&](float a, float b) { return reject_negative(a) + b; }),
               std::domain_error);
  broadcast_binary(in.data(), row, in.data(), col, grid.data(), both, [](float a, float b) { return a + 10 * b; });
  EXPECT_EQ(grid, (std::vector<float>{11, 12, 9, 14, 21, 22, 19, 24}));
}

}  // namespace
