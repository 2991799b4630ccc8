// The runtime's single-precision GEMM (sgemm.h): Goto's blocking, as in BLIS
// and OpenBLAS. B is packed a block of kKc x kNc at a time into panels of NR
// columns, A a block of kMc x kKc into panels of MR rows, and a register-tile
// micro-kernel multiplies one A panel by one B panel into an MR x NR tile of
// C. Panels are zero-padded to whole tiles; the edge tiles of C are written
// through masks (AVX-512) or a scratch tile (AVX2). Products of 8 columns
// or fewer run on AVX-512 as dot products instead (skinny_avx512), A
// unpacked.
#include "kernels/sgemm.h"

#include "kernels/common.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define EPPROF_SGEMM_X86 1
#endif

namespace epprof::rt::kernels {

namespace {

// A B panel of kKc x NR floats (32 KiB at NR = 32; 40 KiB at most, see
// depth_block) stays in L1 while the A panels stream past it; the packed A
// block (kMc x kKc, 96 KiB) stays in L2, and the packed B block
// (kKc x kNc, 1 MiB) in L2 or L3.
constexpr int64_t kKc = 256;
// Depth blocks are of equal size, each at most kKc * 5 / 4: a remainder
// block of a few depths (288 = 256 + 32, a 3x3 Conv over 32 channels) costs
// a pass over C for little work.
constexpr int64_t depth_block(int64_t k) {
  const int64_t blocks = (k + kKc * 5 / 4 - 1) / (kKc * 5 / 4);
  return (k + blocks - 1) / blocks;
}
constexpr int64_t kMc = 96;  // a multiple of every kernel's MR (8, 16, 6)
constexpr int64_t kNc = 1024;

// One thread's packing buffer: 64-byte aligned, grown on demand, kept.
class PackBuffer {
 public:
  PackBuffer() = default;
  PackBuffer(const PackBuffer&) = delete;
  PackBuffer& operator=(const PackBuffer&) = delete;
  ~PackBuffer() { std::free(data_); }

  float* get(int64_t floats) {
    const size_t need = static_cast<size_t>(floats);
    if (need > size_) {
      const size_t bytes = (need * sizeof(float) + 63) / 64 * 64;
      void* p = std::aligned_alloc(64, bytes);
      if (!p) throw std::bad_alloc();
      std::free(data_);
      data_ = static_cast<float*>(p);
      size_ = need;
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  size_t size_ = 0;
};

// C tile = alpha * (A rows x B panel) + beta * C tile, for the top-left
// mr x nr of an MR x NR tile; with beta == 0, C is not read. The tile's MR
// rows of A are a packed panel (element (r, p) at a[p * MR + r]; `lda`
// unused), or, for the in-place kernels, row-major rows of A itself (at
// a[r * lda + p]), of which those at or past mr are read from row 0, so
// that the reads stay inside A, and their results dropped.
using MicroKernel = void (*)(int64_t kc, const float* a, int64_t lda, const float* bp, float* c, int64_t ldc,
                             int64_t mr, int64_t nr, float alpha, float beta);

struct Kernel {
  const char* name;
  int64_t mr, nr;
  MicroKernel packed, in_place;
};

#ifdef EPPROF_SGEMM_X86

// Rows x (16 * Vecs), Rows * Vecs = 16 zmm accumulators; per k, Vecs B
// loads, Rows A broadcasts and 16 FMAs. 8 x 32 for most products; 16 x 16
// for products of few columns (a 1x1 Conv over a map of a few pixels: 12
// columns waste 20 of the 8 x 32 tile's 32 lanes, 4 of the 16 x 16's).
template <int Rows, int Vecs, bool InPlace>
__attribute__((target("avx512f,fma"))) void micro_avx512(int64_t kc, const float* a, int64_t lda, const float* bp,
                                                         float* c, int64_t ldc, int64_t mr, int64_t nr,
                                                         float alpha, float beta) {
  static_assert(Rows * Vecs == 16, "16 accumulators of the 32 zmm registers");
  __m512 acc[Rows][Vecs];
  const float* ar[Rows];
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < Vecs; ++v) acc[r][v] = _mm512_setzero_ps();
    ar[r] = InPlace ? a + (r < mr ? r : 0) * lda : a + r;
  }
  constexpr int64_t kStep = InPlace ? 1 : Rows;
  for (int64_t p = 0, off = 0; p < kc; ++p, off += kStep, bp += 16 * Vecs) {
    __m512 b[Vecs];
#pragma GCC unroll 2
    for (int v = 0; v < Vecs; ++v) b[v] = _mm512_load_ps(bp + 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      const __m512 av = _mm512_set1_ps(ar[r][off]);
#pragma GCC unroll 2
      for (int v = 0; v < Vecs; ++v) acc[r][v] = _mm512_fmadd_ps(av, b[v], acc[r][v]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __mmask16 mask[Vecs];  // each vector's lanes inside the tile's nr columns
#pragma GCC unroll 2
  for (int v = 0; v < Vecs; ++v) {
    const int64_t left = nr - 16 * v;
    mask[v] = left >= 16 ? __mmask16(0xffff) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
  }
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r) {
    if (r >= mr) break;
    float* cr = c + r * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < Vecs; ++v) {
      __m512 out = _mm512_mul_ps(acc[r][v], va);
      if (beta != 0.0f) out = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], cr + 16 * v), out);
      _mm512_mask_storeu_ps(cr + 16 * v, mask[v], out);
    }
  }
}

// 6 x 16: 12 ymm accumulators; per k, two B loads, six A broadcasts and 12
// FMAs.
template <bool InPlace>
__attribute__((target("avx2,fma"))) void micro_avx2(int64_t kc, const float* a, int64_t lda, const float* bp,
                                                    float* c, int64_t ldc, int64_t mr, int64_t nr, float alpha,
                                                    float beta) {
  __m256 acc[6][2];
  const float* ar[6];
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r) {
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    ar[r] = InPlace ? a + (r < mr ? r : 0) * lda : a + r;
  }
  constexpr int64_t kStep = InPlace ? 1 : 6;
  for (int64_t p = 0, off = 0; p < kc; ++p, off += kStep, bp += 16) {
    const __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
#pragma GCC unroll 6
    for (int r = 0; r < 6; ++r) {
      const __m256 av = _mm256_broadcast_ss(ar[r] + off);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  if (mr == 6 && nr == 16) {
#pragma GCC unroll 6
    for (int r = 0; r < 6; ++r) {
      float* cr = c + r * ldc;
      __m256 v0 = _mm256_mul_ps(acc[r][0], va), v1 = _mm256_mul_ps(acc[r][1], va);
      if (beta != 0.0f) {
        v0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr), v0);
        v1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8), v1);
      }
      _mm256_storeu_ps(cr, v0);
      _mm256_storeu_ps(cr + 8, v1);
    }
    return;
  }
  alignas(32) float tile[6][16];
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r) {
    _mm256_store_ps(tile[r], _mm256_mul_ps(acc[r][0], va));
    _mm256_store_ps(tile[r] + 8, _mm256_mul_ps(acc[r][1], va));
  }
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j) c[r * ldc + j] = tile[r][j] + (beta != 0.0f ? beta * c[r * ldc + j] : 0.0f);
}

constexpr Kernel kAvx512{"avx512", 8, 32, micro_avx512<8, 2, false>, micro_avx512<8, 2, true>};
constexpr Kernel kAvx512Narrow{"avx512", 16, 16, micro_avx512<16, 1, false>, micro_avx512<16, 1, true>};
constexpr Kernel kAvx2{"avx2", 6, 16, micro_avx2<false>, micro_avx2<true>};

// Products of kSkinnyColumns columns or fewer, on AVX-512: each element of
// C is the dot product of a row of A, read in place, and a column of B,
// copied once into a row of `bt` (N rows of k floats, ldbt apart). The
// register-tile kernels compute whole 16-column tiles for them, and pay for
// every column in A broadcasts: Silero VAD's STFT, [258, 256] x [256, 3],
// took 19.5 us there against OpenBLAS's 6.7 (epprof_gemm_bench). Here A is
// read once, 16 depths per load, and each load feeds N FMAs.
constexpr int64_t kSkinnyColumns = 8;

// v's 16 lanes folded to 8: the low half plus the high. (As a vector
// shuffle: GCC 12's intrinsics for it warn of an uninitialised value.)
__attribute__((target("avx512f,fma"))) inline __m256 fold(__m512 v) {
  const __m256 lo = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 hi = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  return _mm256_add_ps(lo, hi);
}

// The sums of the lanes of v[0..8), in order, as one vector.
__attribute__((target("avx512f,fma"))) inline __m256 sums8(const __m256* v) {
  const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
  const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
  // t0: the sums of v[0..4)'s low lanes, then of their high lanes; t1: v[4..8)'s.
  return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

// C[m, N] = alpha * A[m, k] * B + beta * C (with beta == 0, C is not read),
// Rows rows of A at a time against all N columns: 16 to 24 accumulators,
// with N B vectors and an A vector within the 32 registers (8 rows at 3
// columns ran Silero VAD's STFT 10% faster than 4; 12 or 16 rows at 1 and
// 2 columns ran slower than 8). Rows past m read row 0 (as the in-place
// micro-kernels do) and are not stored.
template <int N>
__attribute__((target("avx512f,fma"))) void skinny_avx512(int64_t m, int64_t k, float alpha, const float* a,
                                                          int64_t lda, const float* bt, int64_t ldbt, float beta,
                                                          float* c, int64_t ldc) {
  constexpr int Rows = N <= 3 ? 8 : N == 4 ? 6 : N <= 6 ? 4 : N == 7 ? 3 : 2;
  constexpr int kSums = Rows * N;
  const int64_t full = k / 16 * 16;
  const __mmask16 tail = __mmask16((1u << (k % 16)) - 1);
  for (int64_t i0 = 0; i0 < m; i0 += Rows) {
    const int64_t rows = std::min<int64_t>(Rows, m - i0);
    const float* ar[Rows];
    __m512 acc[Rows][N];
#pragma GCC unroll 8
    for (int r = 0; r < Rows; ++r) {
      ar[r] = a + (i0 + (r < rows ? r : 0)) * lda;
#pragma GCC unroll 8
      for (int j = 0; j < N; ++j) acc[r][j] = _mm512_setzero_ps();
    }
    for (int64_t p = 0; p < k; p += 16) {  // the last 16 depths or fewer through a mask
      const __mmask16 mask = p < full ? __mmask16(0xffff) : tail;
      __m512 b[N];
#pragma GCC unroll 8
      for (int j = 0; j < N; ++j) b[j] = _mm512_maskz_loadu_ps(mask, bt + j * ldbt + p);
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r) {
        const __m512 av = _mm512_maskz_loadu_ps(mask, ar[r] + p);
#pragma GCC unroll 8
        for (int j = 0; j < N; ++j) acc[r][j] = _mm512_fmadd_ps(av, b[j], acc[r][j]);
      }
    }
    // Each accumulator's lanes summed, 8 accumulators per vector of sums.
    alignas(32) float sums[(kSums + 7) / 8 * 8];
#pragma GCC unroll 4
    for (int g = 0; g < kSums; g += 8) {
      __m256 folded[8];
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q)
        folded[q] = g + q < kSums ? fold(acc[(g + q) / N][(g + q) % N]) : _mm256_setzero_ps();
      _mm256_store_ps(sums + g, sums8(folded));
    }
    for (int64_t r = 0; r < rows; ++r) {
      float* cr = c + (i0 + r) * ldc;
      for (int j = 0; j < N; ++j) cr[j] = alpha * sums[r * N + j] + (beta != 0.0f ? beta * cr[j] : 0.0f);
    }
  }
}

using SkinnyKernel = void (*)(int64_t m, int64_t k, float alpha, const float* a, int64_t lda, const float* bt,
                              int64_t ldbt, float beta, float* c, int64_t ldc);
constexpr SkinnyKernel kSkinny[kSkinnyColumns] = {skinny_avx512<1>, skinny_avx512<2>, skinny_avx512<3>,
                                                  skinny_avx512<4>, skinny_avx512<5>, skinny_avx512<6>,
                                                  skinny_avx512<7>, skinny_avx512<8>};

// The kernel of kern's instruction set for a product of n columns: AVX-512's
// narrow one below 17 columns.
const Kernel* for_columns(const Kernel* kern, int64_t n) {
  return kern == &kAvx512 && n <= kAvx512Narrow.nr ? &kAvx512Narrow : kern;
}

// The named kernel if this CPU runs it (libgcc's check includes the OS's
// saving of the vector state, XGETBV), else null.
const Kernel* runnable(const char* name) {
  __builtin_cpu_init();
  if (std::strcmp(name, kAvx512.name) == 0) return __builtin_cpu_supports("avx512f") ? &kAvx512 : nullptr;
  if (std::strcmp(name, kAvx2.name) == 0)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? &kAvx2 : nullptr;
  return nullptr;
}

const Kernel* detect() {
  const Kernel* k = runnable(kAvx512.name);
  return k ? k : runnable(kAvx2.name);
}

#else

const Kernel* runnable(const char*) { return nullptr; }
const Kernel* detect() { return nullptr; }
const Kernel* for_columns(const Kernel* kern, int64_t) { return kern; }

#endif

const Kernel* kernel() {
  static const Kernel* const k = detect();
  return k;
}

// Rows [i0, i0 + mc) and depths [p0, p0 + kc) of op(A) into panels of mr
// rows, depth-major within a panel; rows past m are zeros.
void pack_a(bool trans, const float* a, int64_t lda, int64_t m, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            int64_t mr, float* dst) {
  for (int64_t i = 0; i < mc; i += mr, dst += kc * mr) {
    const int64_t rows = std::min(mr, m - i0 - i);
    for (int64_t r = 0; r < mr; ++r) {
      float* d = dst + r;
      if (r >= rows) {
        for (int64_t p = 0; p < kc; ++p) d[p * mr] = 0.0f;
      } else if (!trans) {
        const float* src = a + (i0 + i + r) * lda + p0;
        for (int64_t p = 0; p < kc; ++p) d[p * mr] = src[p];
      } else {
        const float* src = a + p0 * lda + i0 + i + r;
        for (int64_t p = 0; p < kc; ++p) d[p * mr] = src[p * lda];
      }
    }
  }
}

// Depths [p0, p0 + kc) and columns [j0, j0 + nc) of op(B) into panels of nr
// columns, depth-major within a panel; columns past n are zeros.
void pack_b(bool trans, const float* b, int64_t ldb, int64_t n, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
            int64_t nr, float* dst) {
  for (int64_t j = 0; j < nc; j += nr, dst += kc * nr) {
    const int64_t cols = std::min(nr, n - j0 - j);
    if (!trans) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b + (p0 + p) * ldb + j0 + j;
        float* d = dst + p * nr;
        copy_short(d, src, cols);
        zero_short(d + cols, nr - cols);
      }
    } else {  // a transpose, 8 columns at a time: 8 source rows read in step, 8 floats written together
      for (int64_t q0 = 0; q0 < nr; q0 += 8) {
        const float* src[8];
        for (int64_t q = 0; q < 8; ++q) src[q] = q0 + q < cols ? b + (j0 + j + q0 + q) * ldb + p0 : nullptr;
        for (int64_t p = 0; p < kc; ++p) {
          float* d = dst + p * nr + q0;
          for (int64_t q = 0; q < 8; ++q) d[q] = src[q] ? src[q][p] : 0.0f;
        }
      }
    }
  }
}

thread_local PackBuffer tl_pack_a, tl_pack_b, tl_transposed;

// Whether `kern`'s instruction set runs a product of n columns on the
// few-column kernel (skinny_avx512): AVX-512's, for 1 to kSkinnyColumns.
bool skinny(const Kernel* kern, int64_t n) {
#ifdef EPPROF_SGEMM_X86
  return kern == &kAvx512 && n >= 1 && n <= kSkinnyColumns;
#else
  (void)kern, (void)n;
  return false;
#endif
}

// sgemm() on the few-column kernel, where skinny() holds, for A row-major,
// k > 0 and alpha != 0: B's columns as rows, written by `packer` when it is
// given (BPacker::columns; then b, ldb and trans_b are unused), else copied
// from B (a transposed B is read in place).
void run_skinny(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const BPacker* packer = nullptr) {
#ifdef EPPROF_SGEMM_X86
  const float* bt = b;
  int64_t ldbt = ldb;
  if (packer || !trans_b) {
    float* t = tl_transposed.get(n * k);
    if (packer)
      packer->columns(packer->context, 0, n, k, t);
    else
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p) t[j * k + p] = b[p * ldb + j];
    bt = t, ldbt = k;
  }
  kSkinny[n - 1](m, k, alpha, a, lda, bt, ldbt, beta, c, ldc);
#else
  (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta,
      (void)c, (void)ldc, (void)packer;
#endif
}

// One packed block of B (depths [p0, p0 + kc), nc columns in panels of the
// kernel's nr at bp, panel j at bp + j * kc) times rows [0, m) of op(A),
// onto C (the block's column 0 at c). A is packed into `ap` a block of rows
// at a time, or read in place when `ap` is null.
void block_product(const Kernel* kern, bool trans_a, int64_t m, int64_t nc, int64_t p0, int64_t kc, float alpha,
                   const float* a, int64_t lda, const float* bp, float* ap, float beta, float* c, int64_t ldc) {
  const int64_t mr = kern->mr, nr = kern->nr;
  for (int64_t i0 = 0; i0 < m; i0 += kMc) {
    const int64_t mc = std::min(kMc, m - i0), mc_padded = (mc + mr - 1) / mr * mr;
    if (ap) pack_a(trans_a, a, lda, m, i0, mc_padded, p0, kc, mr, ap);
    for (int64_t j = 0; j < nc; j += nr)
      for (int64_t i = 0; i < mc; i += mr) {
        float* tile = c + (i0 + i) * ldc + j;
        const int64_t rows = std::min(mr, mc - i), cols = std::min(nr, nc - j);
        if (!ap)
          kern->in_place(kc, a + (i0 + i) * lda + p0, lda, bp + j * kc, tile, ldc, rows, cols, alpha, beta);
        else
          kern->packed(kc, ap + i * kc, 0, bp + j * kc, tile, ldc, rows, cols, alpha, beta);
      }
  }
}

// C = beta * C, where a product adds nothing (k == 0 or alpha == 0).
void scale_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

// A is packed when its panels are read many times (many column panels of
// B; contiguous panels stream from L2 faster than rows read in place) or
// when it is transposed; a row-major A against at most two column panels
// is read in place: packing it would cost as much as using it. Returns
// the packing buffer, or null for in place.
float* a_buffer(const Kernel* kern, bool trans_a, int64_t m, int64_t n, int64_t k) {
  if (!trans_a && n <= 2 * kern->nr) return nullptr;
  const int64_t kc_max = std::min(depth_block(k), k), mc_max = std::min(kMc, (m + kern->mr - 1) / kern->mr * kern->mr);
  return tl_pack_a.get(kc_max * mc_max);
}

// sgemm() on `kern`, with B's panels from `packer` when it is given (then
// b, ldb and trans_b are unused).
void run(const Kernel* kern, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
         int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
         const BPacker* packer = nullptr) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) return scale_c(m, n, beta, c, ldc);
  const int64_t nr = kern->nr;
  const int64_t kc_step = depth_block(k);
  const int64_t nc_max = std::min(kNc, (n + nr - 1) / nr * nr), kc_max = std::min(kc_step, k);
  float* bp = tl_pack_b.get(kc_max * nc_max);
  float* ap = a_buffer(kern, trans_a, m, n, k);
  for (int64_t j0 = 0; j0 < n; j0 += kNc) {
    const int64_t nc = std::min(kNc, n - j0), nc_padded = (nc + nr - 1) / nr * nr;
    for (int64_t p0 = 0; p0 < k; p0 += kc_step) {
      const int64_t kc = std::min(kc_step, k - p0);
      if (packer)
        packer->pack(packer->context, p0, kc, j0, nc_padded, nr, bp);
      else
        pack_b(trans_b, b, ldb, n, p0, kc, j0, nc_padded, nr, bp);
      // Later depth blocks add onto C.
      block_product(kern, trans_a, m, nc, p0, kc, alpha, a, lda, bp, ap, p0 == 0 ? beta : 1.0f, c + j0, ldc);
    }
  }
}

// C = alpha * A * B^T + beta * C with A [m,k] row-major and B [n,k] (a Gemm
// with transB against its weights), computed as C^T = B * A^T: B, the large
// operand, is then read in place, row by row, instead of packed (a
// transpose) on every call, and only A, the small one, is packed. C^T goes
// to a scratch matrix and is transposed into C. For m within the in-place
// range (see run), m >= nr / 2 (so that C^T's tiles are mostly columns of
// work) and m < n.
bool transposed_worthwhile(const Kernel* kern, bool trans_a, bool trans_b, int64_t m, int64_t n) {
  return trans_b && !trans_a && m >= kern->nr / 2 && m <= 2 * kern->nr && m < n;
}

void run_transposed(const Kernel* kern, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  float* t = tl_transposed.get(n * m);  // C^T [n, m]
  run(kern, false, true, n, m, k, alpha, b, ldb, a, lda, 0.0f, t, m);
  constexpr int64_t kBlock = 16;  // a 16 x 16 block of C^T is read while in L1
  for (int64_t j0 = 0; j0 < n; j0 += kBlock)
    for (int64_t i = 0; i < m; ++i) {
      float* cr = c + i * ldc;
      const int64_t j1 = std::min(n, j0 + kBlock);
      if (beta == 0.0f)
        for (int64_t j = j0; j < j1; ++j) cr[j] = t[j * m + i];
      else
        for (int64_t j = j0; j < j1; ++j) cr[j] = t[j * m + i] + beta * cr[j];
    }
}

// sgemm() on `kern`: the transposed product where it pays, else run() on
// the kernel for n columns.
void multiply(const Kernel* kern, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (k > 0 && alpha != 0.0f && !trans_a && skinny(kern, n))
    run_skinny(trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else if (k > 0 && alpha != 0.0f && transposed_worthwhile(kern, trans_a, trans_b, m, n))
    run_transposed(kern, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    run(for_columns(kern, n), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

const char* sgemm_kernel() {
  const Kernel* k = kernel();
  return k ? k->name : "";
}

bool sgemm_runs(int64_t m, int64_t n) {
  const Kernel* kern = kernel();
  if (!kern) return false;
  // The few-column kernel runs 1 to 8 columns, the narrow one the rest up
  // to 16; the others below half their width, on tall products, do not
  // beat OpenBLAS.
  if (skinny(kern, n)) return true;
  const Kernel* used = for_columns(kern, n);
  return used != kern ? n >= 2 : !(n < kern->nr / 2 && m > n);
}

bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (!sgemm_runs(m, n)) return false;
  multiply(kernel(), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return true;
}

bool sgemm_packing(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const BPacker& b,
                   float beta, float* c, int64_t ldc) {
  if (!sgemm_runs(m, n)) return false;
  if (k > 0 && alpha != 0.0f && skinny(kernel(), n) && b.columns)
    run_skinny(false, m, n, k, alpha, a, lda, nullptr, 0, beta, c, ldc, &b);
  else
    run(for_columns(kernel(), n), false, false, m, n, k, alpha, a, lda, nullptr, 0, beta, c, ldc, &b);
  return true;
}

int64_t sgemm_packed_size(int64_t k, int64_t n) {
  const Kernel* kern = kernel();
  if (!kern || k <= 0 || n <= 0 || skinny(kern, n)) return 0;
  const int64_t nr = for_columns(kern, n)->nr;
  return k * ((n + nr - 1) / nr * nr);
}

// Column block [jb, jb + kNc) of B starts at jb * k: every block before it
// is k x kNc floats (kNc is a multiple of every nr). Within a block of ncp
// padded columns, depth block p0 starts at p0 * ncp, as run() packs it.
void sgemm_pack_b(bool trans_b, int64_t k, int64_t n, const float* b, int64_t ldb, float* dst) {
  const Kernel* kern = for_columns(kernel(), n);
  const int64_t nr = kern->nr, kc_step = depth_block(k);
  for (int64_t jb = 0; jb < n; jb += kNc) {
    const int64_t ncp = (std::min(kNc, n - jb) + nr - 1) / nr * nr;
    for (int64_t p0 = 0; p0 < k; p0 += kc_step)
      pack_b(trans_b, b, ldb, n, p0, std::min(kc_step, k - p0), jb, ncp, nr, dst + jb * k + p0 * ncp);
  }
}

bool sgemm_packed(bool trans_a, int64_t m, int64_t n, int64_t j0, int64_t j1, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* packed, float beta, float* c, int64_t ldc) {
  if (!sgemm_runs(m, n)) return false;
  if (m <= 0 || j1 <= j0) return true;
  if (k <= 0 || alpha == 0.0f) {
    scale_c(m, j1 - j0, beta, c, ldc);
    return true;
  }
  const Kernel* kern = for_columns(kernel(), n);
  const int64_t nr = kern->nr, kc_step = depth_block(k);
  float* ap = a_buffer(kern, trans_a, m, j1 - j0, k);
  for (int64_t jb = j0 / kNc * kNc; jb < j1; jb += kNc) {  // the column blocks [j0, j1) overlaps
    const int64_t ncb = std::min(kNc, n - jb), ncp = (ncb + nr - 1) / nr * nr;
    const int64_t lo = std::max(j0, jb), hi = std::min(j1, jb + ncb);  // a multiple of nr from jb
    for (int64_t p0 = 0; p0 < k; p0 += kc_step) {
      const int64_t kc = std::min(kc_step, k - p0);
      const float* bp = packed + jb * k + p0 * ncp + (lo - jb) * kc;
      block_product(kern, trans_a, m, hi - lo, p0, kc, alpha, a, lda, bp, ap, p0 == 0 ? beta : 1.0f, c + (lo - j0),
                    ldc);
    }
  }
  return true;
}

bool sgemm_on(const char* name, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const Kernel* kern = runnable(name);
  if (!kern) return false;
  multiply(kern, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return true;
}

}  // namespace epprof::rt::kernels
