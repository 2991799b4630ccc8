// The runtime's sgemm (runtime/src/kernels/sgemm.h), on each kernel this CPU
// can run, against a product in double: edge tiles, transposes, strides,
// depths past one packing block, alpha and beta, and C left unread when
// beta is 0.
#include "kernels/sgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using epprof::rt::kernels::sgemm_kernel;
using epprof::rt::kernels::sgemm_on;

struct Case {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  int64_t pad;  // extra elements per row of A, B and C (row strides above the minimum)
};

std::string describe(const Case& c) {
  return std::string(c.trans_a ? "A^T" : "A") + (c.trans_b ? " B^T" : " B") + " m=" + std::to_string(c.m) +
         " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + " pad=" + std::to_string(c.pad);
}

// Runs one case on `kernel` and compares every element of C, padding
// included (which must be untouched), with the double-precision product.
void check(const char* kernel, const Case& c) {
  SCOPED_TRACE(std::string(kernel) + ": " + describe(c));
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.n * 17 + c.k));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t a_rows = c.trans_a ? c.k : c.m, a_cols = c.trans_a ? c.m : c.k;
  const int64_t b_rows = c.trans_b ? c.n : c.k, b_cols = c.trans_b ? c.k : c.n;
  const int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.n + c.pad;
  std::vector<float> a(size_t(a_rows * lda)), b(size_t(b_rows * ldb)), out(size_t(c.m * ldc));
  for (float& v : a) v = dist(rng);
  for (float& v : b) v = dist(rng);
  // With beta == 0 C must not be read: NaN there would poison the result.
  for (float& v : out) v = c.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : dist(rng);
  const std::vector<float> before = out;
  ASSERT_TRUE(sgemm_on(kernel, c.trans_a, c.trans_b, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta,
                       out.data(), ldc));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = out[size_t(i * ldc + j)];
      if (j >= c.n) {  // padding: untouched (NaN compares unequal, so compare bits)
        ASSERT_EQ(std::memcmp(&got, &before[size_t(i * ldc + j)], sizeof got), 0) << "padding written at " << i;
        continue;
      }
      double want = 0, magnitude = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double av = a[size_t(c.trans_a ? p * lda + i : i * lda + p)];
        const double bv = b[size_t(c.trans_b ? j * ldb + p : p * ldb + j)];
        want += av * bv;
        magnitude += std::fabs(av * bv);
      }
      want *= c.alpha;
      if (c.beta != 0.0f) want += double(c.beta) * before[size_t(i * ldc + j)];
      // Float summation of k products: error grows with k and their magnitudes.
      const double tolerance = 1e-6 * (double(c.k) + 1) * (std::fabs(c.alpha) * magnitude + 1);
      ASSERT_NEAR(got, want, tolerance) << "at (" << i << ", " << j << ")";
    }
}

std::vector<const char*> runnable_kernels() {
  std::vector<const char*> kernels;
  const std::vector<float> one{1.0f};
  std::vector<float> out{0.0f};
  for (const char* k : {"avx512", "avx2"})
    if (sgemm_on(k, false, false, 1, 1, 1, 1.0f, one.data(), 1, one.data(), 1, 0.0f, out.data(), 1))
      kernels.push_back(k);
  return kernels;
}

TEST(Sgemm, MatchesADoublePrecisionProductOnEveryKernelHere) {
  const auto kernels = runnable_kernels();
  if (kernels.empty()) GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2 with FMA: OpenBLAS runs every gemm";
  std::printf("[ info ] kernels here: %zu (best: %s)\n", kernels.size(), sgemm_kernel());
  const Case cases[] = {
      {false, false, 1, 1, 1, 1.0f, 0.0f, 0},
      {false, false, 8, 32, 16, 1.0f, 0.0f, 0},     // one whole avx512 tile
      {false, false, 6, 16, 16, 1.0f, 0.0f, 0},     // one whole avx2 tile
      {false, false, 13, 37, 29, 1.0f, 0.0f, 0},    // edge tiles both ways
      {false, true, 32, 1024, 784, 1.0f, 0.0f, 0},  // the mlp's first Gemm (computed as C^T = B A^T)
      {false, true, 20, 300, 70, 0.5f, 1.5f, 3},    // the same, with beta and strides
      {false, true, 70, 90, 33, 1.0f, 0.0f, 0},     // rows past the transposed range: the plain path
      {false, false, 40, 30, 600, 1.0f, 2.0f, 1},   // A read in place (n within two column panels)
      {true, false, 19, 45, 300, 0.5f, 1.0f, 3},    // A^T, depth past one block (256), strides
      {true, true, 100, 70, 513, -2.0f, 0.25f, 5},  // rows past one block (96), two depth blocks and a bit
      {false, false, 7, 1100, 40, 1.0f, 1.0f, 1},   // columns past one block (1024)
      {false, true, 3, 5, 0, 1.0f, 0.5f, 2},        // k = 0: C = beta C
      {false, false, 4, 4, 4, 0.0f, 0.0f, 0},       // alpha = 0, beta = 0: zeros, C unread
      // 16 columns or fewer (AVX-512's 16 x 16 kernel): a 1x1 Conv on a 3x4
      // map, A in place; rows not a multiple of 16 with A packed (A^T), a
      // second depth block and beta; 2 columns, the fewest it takes.
      {false, false, 384, 12, 384, 1.0f, 0.0f, 0},
      {true, false, 37, 16, 300, 0.5f, 1.0f, 2},
      {false, true, 100, 7, 513, -2.0f, 0.25f, 1},
      {false, false, 257, 2, 64, 1.0f, 0.0f, 0},
  };
  for (const char* kernel : kernels)
    for (const Case& c : cases) check(kernel, c);
}

TEST(Sgemm, AnUnknownKernelIsDeclined) {
  float x = 1.0f, y = 7.0f;
  EXPECT_FALSE(sgemm_on("sse9", false, false, 1, 1, 1, 1.0f, &x, 1, &x, 1, 0.0f, &y, 1));
  EXPECT_EQ(y, 7.0f);
}

}  // namespace
