// epprof_gemm_bench: the runtime's sgemm (runtime/src/kernels/sgemm.h)
// against OpenBLAS's cblas_sgemm on one thread, side by side in one run, on
// the GEMM shapes of the bundled and real models (each Conv as its im2col
// product). Each row alternates the two in blocks and reports both medians,
// their ratio and the maximum relative difference of the results.
//
// Run:  build/bin/epprof_gemm_bench [--quick]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/sgemm.h"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename(void);

namespace {

struct Shape {
  const char* what;
  bool trans_b;
  int64_t m, n, k;
};

// Gemm/MatMul: A [m,k] x B; Conv: weights [Cout, Cin*kh*kw] x im2col [.., H*W].
const Shape kShapes[] = {
    {"mlp fc1 (Gemm, transB)", true, 32, 1024, 784},
    {"mlp fc2 (Gemm, transB)", true, 32, 1024, 1024},
    {"transformer q/k/v (MatMul)", false, 128, 256, 256},
    {"transformer ffn up (MatMul)", false, 128, 1024, 256},
    {"transformer ffn down (MatMul)", false, 128, 256, 1024},
    {"transformer scores (MatMul)", false, 128, 128, 64},
    {"cnn stem 3x3 (Conv)", false, 32, 4096, 27},
    {"cnn block 3x3 32ch (Conv)", false, 32, 1024, 288},
    {"cnn block 3x3 64ch (Conv)", false, 64, 256, 576},
    {"cnn 1x1 (Conv)", false, 64, 256, 32},
    {"ppocr_v4_rec head (MatMul)", false, 20, 6625, 120},
    {"ppocr_v4_det 1x1 on 3x4 (Conv)", false, 384, 12, 384},
    {"ppocr_v4_det 1x1 on 3x4, 192 in (Conv)", false, 384, 12, 192},
    {"ppocr_v4_det 1x1 on 6x8 (Conv)", false, 192, 48, 192},
    {"oww_melspectrogram filterbank (Conv)", false, 257, 8, 512},
    {"silero_vad_v5 stft (Conv)", false, 258, 3, 256},
    {"silero_vad_v5 encoder (Conv)", false, 128, 3, 387},
    {"silero_vad_v5 encoder/1 (Conv)", false, 64, 2, 384},
    {"silero_vad_v5 encoder/3 (Conv)", false, 128, 1, 192},
    {"4 columns, transB", true, 200, 4, 300},
    {"5 columns", false, 256, 5, 256},
    {"6 columns", false, 256, 6, 256},
    {"8 columns", false, 256, 8, 256},
    {"12 columns", false, 256, 12, 256},
};

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (argc > 1 && !quick) {
    std::fprintf(stderr, "usage: epprof_gemm_bench [--quick]\n");
    return 2;
  }
  openblas_set_num_threads(1);
  const char* kernel = epprof::rt::kernels::sgemm_kernel();
  std::printf("epprof_gemm_bench: runtime sgemm (%s) vs OpenBLAS cblas_sgemm (%s), one thread, row-major\n",
              *kernel ? kernel : "none: OpenBLAS runs every gemm", openblas_get_corename());
  if (!*kernel) return 0;
  std::printf("\n%-38s %5s %5s %5s %11s %11s %7s %9s %9s\n", "shape", "m", "n", "k", "epprof us", "OpenBLAS us",
              "ratio", "GFLOP/s", "max rel");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  double log_sum = 0;
  int rows = 0;
  for (const Shape& s : kShapes) {
    std::vector<float> a(size_t(s.m * s.k)), b(size_t(s.k * s.n)), c0(size_t(s.m * s.n)), c1(c0.size());
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    const int64_t ldb = s.trans_b ? s.k : s.n;
    // The kernel itself, also on the shapes sgemm() leaves to OpenBLAS (marked).
    const bool declined = !epprof::rt::kernels::sgemm(false, s.trans_b, s.m, s.n, s.k, 1.0f, a.data(), s.k,
                                                      b.data(), ldb, 0.0f, c0.data(), s.n);
    const auto ours = [&] {
      epprof::rt::kernels::sgemm_on(kernel, false, s.trans_b, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), ldb,
                                    0.0f, c0.data(), s.n);
    };
    const auto openblas = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, s.trans_b ? CblasTrans : CblasNoTrans, int(s.m), int(s.n), int(s.k),
                  1.0f, a.data(), int(s.k), b.data(), int(ldb), 0.0f, c1.data(), int(s.n));
    };
    const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
    const int reps = std::max(3, int(std::min(200.0, 2e9 / flops)) / (quick ? 20 : 1));
    std::vector<double> t0, t1;
    for (int block = 0; block < (quick ? 3 : 15); ++block) {
      for (int pass = 0; pass < 2; ++pass) {
        const bool first_ours = (block + pass) % 2 == 0;
        const double start = now_us();
        for (int r = 0; r < reps; ++r) first_ours ? ours() : openblas();
        (first_ours ? t0 : t1).push_back((now_us() - start) / reps);
      }
    }
    double worst = 0;
    for (size_t i = 0; i < c0.size(); ++i)
      worst = std::max(worst, double(std::fabs(c0[i] - c1[i]) / (std::fabs(c1[i]) + 1e-3f)));
    const double ours_us = median(t0), blas_us = median(t1);
    if (!declined) {
      log_sum += std::log(ours_us / blas_us);
      ++rows;
    }
    std::printf("%-38s %5lld %5lld %5lld %11.2f %11.2f %7.3f %9.1f %9.2e%s\n", s.what, (long long)s.m,
                (long long)s.n, (long long)s.k, ours_us, blas_us, ours_us / blas_us, flops / ours_us / 1e3, worst,
                declined ? "  (sgemm declines: OpenBLAS runs it)" : "");
  }
  std::printf("\ngeometric mean of the ratio (epprof / OpenBLAS), shapes sgemm runs: %.3f\n",
              std::exp(log_sum / rows));
  std::printf("ratio < 1: the runtime's sgemm is faster. Each row: medians of %s blocks, alternating.\n",
              quick ? "3" : "15");
  return 0;
}
