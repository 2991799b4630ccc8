// The runtime's own single-precision GEMM, for the CPUs it has a kernel for
// (x86-64 with AVX-512 or with AVX2 and FMA). OpenBLAS runs the rest.
//
// Why not OpenBLAS everywhere: its kernel set is chosen once per process from
// the CPU or from OPENBLAS_CORETYPE, and a machine that pins an older set
// (these VMs set Haswell) runs AVX2 on an AVX-512 CPU. ONNX Runtime's own
// GEMM picks AVX-512 there; a profile of a runtime that is 2x slower in
// every MatMul and Conv has the wrong shape. Measured side by side in
// `epprof_gemm_bench` (bench/gemm_bench.cpp).
#pragma once
#include <cstdint>

namespace epprof::rt::kernels {

// The kernel sgemm() runs on this CPU: "avx512" (8x32 register tile),
// "avx2" (6x16), or "" when there is none and sgemm() declines.
const char* sgemm_kernel();

// Row-major C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, op()
// transposing when asked; lda, ldb and ldc are row strides. With beta == 0, C
// is written without being read. Single-threaded; safe to call from several
// threads at once (each has its own packing buffers). Returns false, having
// done nothing, when sgemm_kernel() is "", or for a product of few columns
// and more rows where no kernel of this CPU's set fits it: AVX-512 runs 8 or
// fewer columns as dot products of A's rows with B's columns, and up to 16
// on a 16 x 16 tile; AVX2 declines n < 8 with m > n, where its tiles would
// be mostly padding and OpenBLAS was measured faster (epprof_gemm_bench).
// The caller then uses OpenBLAS.
// Throws std::bad_alloc if its packing buffers cannot grow.
bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Whether sgemm() runs an m x n product here, rather than declining it.
bool sgemm_runs(int64_t m, int64_t n);

// A B that sgemm_packing() never sees whole: `pack` writes depths
// [p0, p0 + kc) of columns [j0, j0 + nc) of B straight into sgemm's panel
// layout at `dst`: nc / nr panels (nc is a multiple of nr), each kc rows of
// nr floats, the columns past B's n zeros. Conv's packer reads X itself, so
// the im2col matrix is never written out. `context` is passed through.
struct BPacker {
  void (*pack)(const void* context, int64_t p0, int64_t kc, int64_t j0, int64_t nc, int64_t nr, float* dst);
  const void* context;
  // Optional: columns [j0, j0 + nc) of B, each whole, its k depths in
  // order, column j0 + j at dst + j * k. The kernel for few columns
  // (AVX-512, 8 or fewer) reads B so; without it, such products run on
  // `pack`'s panels in the 16 x 16 kernel.
  void (*columns)(const void* context, int64_t j0, int64_t nc, int64_t k, float* dst) = nullptr;
};

// sgemm() with A row-major (not transposed) and B from a packer. Returns
// false, having done nothing, where sgemm() would (sgemm_runs); throws
// std::bad_alloc as sgemm() does, and what the packer throws.
bool sgemm_packing(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const BPacker& b,
                   float beta, float* c, int64_t ldc);

// B packed once for many products with it (a constant weight), instead of
// on every call as sgemm() packs it. sgemm_packed_size(k, n) is the floats
// op(B) [k, n] takes in this CPU's panels for products of n columns, or 0
// when there is no kernel here or none that reads B from panels at that n
// (AVX-512's for 8 columns or fewer reads B's columns as they are: sgemm()
// runs those). sgemm_pack_b writes them at `dst`, 64-byte aligned (op()
// transposes when trans_b).
int64_t sgemm_packed_size(int64_t k, int64_t n);
void sgemm_pack_b(bool trans_b, int64_t k, int64_t n, const float* b, int64_t ldb, float* dst);

// Columns [j0, j1) of C = alpha * op(A)[m,k] * B[k,n] + beta * C, with B
// packed by sgemm_pack_b for n columns and j0 a multiple of 32; c points at
// row 0, column j0 (a range of columns per thread, each onto its own part
// of C). Returns false, having done nothing, where sgemm_runs(m, n) does
// not hold. Single-threaded, reentrant; throws std::bad_alloc as sgemm().
bool sgemm_packed(bool trans_a, int64_t m, int64_t n, int64_t j0, int64_t j1, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* packed, float beta, float* c, int64_t ldc);

// sgemm() on the named kernel ("avx512" or "avx2") instead of this CPU's
// best, so that tests reach each kernel the CPU can run. Returns false,
// having done nothing, when the CPU cannot run it.
bool sgemm_on(const char* kernel, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace epprof::rt::kernels
