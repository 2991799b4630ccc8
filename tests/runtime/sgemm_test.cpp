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
#include <functional>
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

// C = alpha * op(A) * op(B) + beta * C, computed some way: false when it declined.
using Product = std::function<bool(const Case& c, const float* a, int64_t lda, const float* b, int64_t ldb, float* out,
                                   int64_t ldc)>;

// Runs one case through `product` and compares every element of C, padding
// included (which must be untouched), with the double-precision product.
void check_product(const std::string& how, const Case& c, const Product& product) {
  SCOPED_TRACE(how + ": " + describe(c));
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
  ASSERT_TRUE(product(c, a.data(), lda, b.data(), ldb, out.data(), ldc));
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

void check(const char* kernel, const Case& c) {
  check_product(kernel, c, [kernel](const Case& x, const float* a, int64_t lda, const float* b, int64_t ldb,
                                    float* out, int64_t ldc) {
    return sgemm_on(kernel, x.trans_a, x.trans_b, x.m, x.n, x.k, x.alpha, a, lda, b, ldb, x.beta, out, ldc);
  });
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
      // 8 columns or fewer (AVX-512's dot-product kernel, A in place, 8, 4
      // or 2 rows at a time): each width, rows short of a whole step,
      // depths short of a vector or with a tail, B transposed (read in
      // place) or not (copied), strides, alpha and beta; A^T goes to the
      // 16 x 16 kernel.
      {false, false, 258, 3, 256, 1.0f, 1.0f, 0},  // Silero VAD's STFT, onto its bias
      {false, false, 13, 1, 387, 1.0f, 0.0f, 0},
      {false, true, 9, 2, 5, 0.5f, 0.0f, 2},
      {false, false, 7, 4, 33, 1.0f, 0.5f, 1},
      {false, true, 3, 5, 48, -1.0f, 1.0f, 3},
      {false, false, 31, 6, 17, 2.0f, 0.0f, 0},
      {false, true, 5, 7, 300, 1.0f, 0.25f, 1},
      {false, false, 65, 8, 129, 1.0f, 0.0f, 4},
      {true, false, 21, 3, 40, 1.0f, 0.0f, 1},
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

// A weight packed once (sgemm_pack_b), then multiplied in ranges of columns,
// as a MatMul or Gemm with a constant B does across its threads: every
// range boundary a multiple of 32, some inside a column block (1024), one at
// a block's edge, one across it.
TEST(Sgemm, APackedWeightMatchesInAnyRangesOfColumns) {
  using epprof::rt::kernels::sgemm_pack_b;
  using epprof::rt::kernels::sgemm_packed;
  using epprof::rt::kernels::sgemm_packed_size;
  if (sgemm_packed_size(4, 32) == 0) GTEST_SKIP() << "no sgemm kernel on this CPU: B is never packed";
  const Case cases[] = {
      {false, false, 128, 256, 256, 1.0f, 0.0f, 0},   // the transformer's attention projections
      {false, true, 32, 1024, 784, 1.0f, 0.0f, 0},    // the mlp's first Gemm, B transposed
      {true, false, 19, 45, 300, 0.5f, 1.0f, 3},      // A^T, two depth blocks, strides, beta
      {false, false, 7, 1100, 40, 1.0f, 1.0f, 1},     // past one column block
      {false, true, 100, 2100, 513, -2.0f, 0.25f, 2}, // three column blocks, two depth blocks
      {false, false, 384, 12, 384, 1.0f, 0.0f, 0},    // few columns: AVX-512's narrow kernel
      {false, false, 40, 30, 600, 1.0f, 2.0f, 1},     // A read in place
  };
  for (const Case& c : cases)
    for (const int64_t split : {int64_t(0), int64_t(32), c.n / 64 * 32, int64_t(1024), int64_t(1056)}) {
      if (split >= c.n) continue;
      check_product("packed, columns split at " + std::to_string(split), c,
                    [split](const Case& x, const float* a, int64_t lda, const float* b, int64_t ldb, float* out,
                            int64_t ldc) {
                      const int64_t floats = sgemm_packed_size(x.k, x.n);
                      // 64-byte aligned, as the runtime's tensors are.
                      std::vector<float> storage(size_t(floats + 16));
                      float* packed = storage.data() + (16 - reinterpret_cast<uintptr_t>(storage.data()) / 4 % 16) % 16;
                      sgemm_pack_b(x.trans_b, x.k, x.n, b, ldb, packed);
                      bool ran = true;
                      for (int64_t j0 = 0, j1 = split; j0 < x.n; j0 = j1, j1 = x.n)
                        if (j1 > j0)
                          ran = ran && sgemm_packed(x.trans_a, x.m, x.n, j0, j1, x.k, x.alpha, a, lda, packed, x.beta,
                                                    out + j0, ldc);
                      return ran;
                    });
    }
}
