// The vectorisable element functions (runtime/src/kernels/vector_math.h)
// against libm in double, over their whole range and at the edges.
#include "kernels/vector_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace {

using epprof::rt::kernels::exp_f32;
using epprof::rt::kernels::sigmoid_f32;

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

}  // namespace
