// numpy.matmul shape rules, shared by MatMul, MatMulInteger and QLinearMatMul,
// and the row-major GEMM that MatMul, Gemm and Conv share: the runtime's
// sgemm (sgemm.h) for float where the CPU has a kernel for it, else OpenBLAS.
#pragma once
#include <cblas.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/broadcast.h"
#include "intra_op.h"
#include "kernels/common.h"
#include "kernels/sgemm.h"

namespace epprof::rt::kernels {

// Row-major C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C on one
// thread (see blas_gemm), op() transposing when asked; lda/ldb/ldc are row
// strides. Float runs on the runtime's sgemm where it has a kernel (0.55-0.75x
// OpenBLAS's time on the models' shapes: bench/gemm_bench.cpp), the rest on
// OpenBLAS. One row or one column is the few-column sgemm where it runs
// (AVX-512) and its operands allow, else an OpenBLAS gemv: a packing gemm
// would pack all of B (or A) for it, which costs more than the product (a
// [1,3264] x [3264,128] Gemm: 114 us as gemm).
template <typename T>
void blas_gemm_serial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  const auto bi = [](int64_t v) { return static_cast<blasint>(v); };
  const auto gemv = [](CBLAS_TRANSPOSE t, blasint rows, blasint cols, T al, const T* mat, blasint ld, const T* x,
                       blasint incx, T be, T* y, blasint incy) {
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemv(CblasRowMajor, t, rows, cols, al, mat, ld, x, incx, be, y, incy);
    else
      cblas_dgemv(CblasRowMajor, t, rows, cols, al, mat, ld, x, incx, be, y, incy);
  };
  if constexpr (std::is_same_v<T, float>) {
    // A row against B [n,k] is B · a^T, a column from a contiguous b is
    // A · b: products of one column, which the runtime's sgemm runs (AVX-512)
    // with the large operand's rows read in place, and without OpenBLAS's
    // per-call cost (Silero VAD's LSTM step, two [1,128] x [128,512]^T
    // products, as a one-node session: 7.9 -> 7.1 us).
    if (m == 1 && trans_b && (!trans_a || lda == 1) && sgemm(false, true, n, 1, k, alpha, b, ldb, a, k, beta, c, 1))
      return;
    if (n == 1 && !trans_a && (trans_b || ldb == 1) && sgemm(false, true, m, 1, k, alpha, a, lda, b, k, beta, c, ldc))
      return;
  }
  if (m == 1) {  // c[1,n] = op(B)^T · a
    const blasint inc_a = trans_a ? bi(lda) : 1;
    if (trans_b)  // B is [n,k]
      return gemv(CblasNoTrans, bi(n), bi(k), alpha, b, bi(ldb), a, inc_a, beta, c, 1);
    return gemv(CblasTrans, bi(k), bi(n), alpha, b, bi(ldb), a, inc_a, beta, c, 1);  // B is [k,n]
  }
  if (n == 1) {  // c[m,1] = op(A) · b
    const blasint inc_b = trans_b ? 1 : bi(ldb);
    if (trans_a)  // A is [k,m]
      return gemv(CblasTrans, bi(k), bi(m), alpha, a, bi(lda), b, inc_b, beta, c, bi(ldc));
    return gemv(CblasNoTrans, bi(m), bi(k), alpha, a, bi(lda), b, inc_b, beta, c, bi(ldc));
  }
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    if (sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
    cblas_sgemm(CblasRowMajor, ta, tb, bi(m), bi(n), bi(k), alpha, a, bi(lda), b, bi(ldb), beta, c, bi(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, bi(m), bi(n), bi(k), alpha, a, bi(lda), b, bi(ldb), beta, c, bi(ldc));
  }
}

// Parts of a split gemm start at multiples of this many rows or columns,
// so that the register tiles stay whole (sgemm's are 8 x 32 or 6 x 16,
// OpenBLAS's up to 16 wide).
constexpr int64_t kSplitGemmAlign = 32;

// Operand bytes from which a product splits even when its arithmetic would
// not pay for the join: it then streams from beyond one core's L2, and each
// thread reads half. openWakeWord's timer head, a [1,3264] x [128,3264]^T
// Gemm (1.7 MB of weight), took 18 us whole on either thread count and ran
// 2.1x faster split. An LSTM step's gemvs on 256 KB weights, which stay in
// L2, took longer split on two threads (6.1-6.6 us) than whole on one (5.9).
constexpr int64_t kMinSplitOperandBytes = int64_t(1) << 20;

// part(r0, r1, c0, c1) over an m x n product of depth k, of elements of
// `element_bytes`: once for all of C, or, when it is large (kMinSplitMacs
// multiply-adds, or kMinSplitOperandBytes of A and B), once per intra-op
// thread for a contiguous range of the larger of C's rows and columns
// (whole multiples of kSplitGemmAlign), each part single-threaded onto its
// own part of C.
template <typename Part>
void split_gemm(int64_t m, int64_t n, int64_t k, int64_t element_bytes, const Part& part) {
  const bool by_rows = m >= n;
  const int64_t blocks = ((by_rows ? m : n) + kSplitGemmAlign - 1) / kSplitGemmAlign;
  const bool large = m * n * k >= detail::kMinSplitMacs || (m * k + k * n) * element_bytes >= kMinSplitOperandBytes;
  if (blocks < 2 || !large || detail::intra_op_threads() == 1) return part(0, m, 0, n);
  detail::parallel_for_ranges(blocks, detail::intra_op_ranges(blocks, 1), [&](int64_t, int64_t b0, int64_t b1) {
    const int64_t lo = b0 * kSplitGemmAlign, hi = std::min(by_rows ? m : n, b1 * kSplitGemmAlign);
    if (by_rows)
      part(lo, hi, int64_t(0), n);
    else
      part(int64_t(0), m, lo, hi);
  });
}

// blas_gemm_serial, split across the intra-op threads (intra_op.h) when it
// is large (split_gemm), each part a single-threaded call onto its own part
// of C. OpenBLAS itself runs on one thread (Session::run sets it): its own
// threading costs more than it gains on the runtime's small gemms.
template <typename T>
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  // Rows r0.. of op(A) are A's rows, or its columns when transposed; columns c0.. of op(B) likewise.
  split_gemm(m, n, k, int64_t(sizeof(T)), [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    blas_gemm_serial(trans_a, trans_b, r1 - r0, c1 - c0, k, alpha, a + (trans_a ? r0 : r0 * lda), lda,
                     b + (trans_b ? c0 * ldb : c0), ldb, beta, c + r0 * ldc + c0, ldc);
  });
}

// A constant weight B of MatMul or Gemm, packed once, when the session is
// created (Kernel::prepare), into the runtime's sgemm panels: sgemm packs B
// again on every call otherwise, which was most of the difference from ONNX
// Runtime on the bundled transformer's [128,256] x [256,1024] products, and
// with 2 threads each part packed all of B. The packed panels are a tensor
// of the session, reported as such to memory profiling.
class PackedWeight {
 public:
  PackedWeight() = default;
  // op(b) packed, b float [k, n] (transposed: [n, k]); empty() where the
  // runtime's sgemm has no kernel here, or b is not a 2-D float tensor.
  // Throws std::bad_alloc.
  PackedWeight(const Tensor& b, bool trans_b) {
    if (b.dtype() != DataType::Float || b.rank() != 2) return;
    k_ = trans_b ? b.dim(1) : b.dim(0);
    n_ = trans_b ? b.dim(0) : b.dim(1);
    const int64_t floats = sgemm_packed_size(k_, n_);
    if (floats == 0 || n_ < 2) return;
    panels_ = Tensor::uninitialized(DataType::Float, {floats});
    sgemm_pack_b(trans_b, k_, n_, b.data<float>(), b.dim(1), panels_.mutable_data<float>());
    source_ = b;
  }
  bool empty() const { return source_.empty(); }
  // Whether this was packed from b's very buffer (and is not empty).
  bool packed_from(const Tensor& b) const { return !empty() && source_.shares_buffer(b); }
  // Whether gemm() runs a product of m rows (see there).
  bool takes(int64_t m) const { return m >= 2 && sgemm_runs(m, n_); }

  // C[m, n] = alpha * op(A)[m, k] * B + beta * C, split across the intra-op
  // threads as blas_gemm splits. False, having done nothing, where the
  // caller's blas_gemm should run it: a single row (OpenBLAS's gemv reads B
  // once, unpacked) or a shape sgemm declines.
  bool gemm(bool trans_a, int64_t m, float alpha, const float* a, int64_t lda, float beta, float* c,
            int64_t ldc) const {
    if (!takes(m)) return false;
    const float* packed = panels_.data<float>();
    split_gemm(m, n_, k_, int64_t(sizeof(float)), [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      sgemm_packed(trans_a, r1 - r0, n_, c0, c1, k_, alpha, a + (trans_a ? r0 : r0 * lda), lda, packed, beta,
                   c + r0 * ldc + c0, ldc);
    });
    return true;
  }

 private:
  Tensor source_;  // b itself: its buffer stays this weight's while we hold it
  Tensor panels_;
  int64_t k_ = 0, n_ = 0;
};

// Row-major C[m,n] = A[m,k] * B[k,n] (contiguous), overwriting C.
inline void gemm_nn(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  blas_gemm(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}
inline void gemm_nn(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c) {
  blas_gemm(false, false, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
}

// A [..., M, K] x B [..., K, N]: 1-D operands are promoted (and the added dim
// dropped from the result), batch dims broadcast.
struct MatMulShape {
  int64_t m = 0, k = 0, n = 0;
  Shape out_shape;
  std::vector<int64_t> a_index, b_index;  // per output batch: which A and B matrix
};

inline MatMulShape resolve_matmul(const Shape& a, const Shape& b, const char* op) {
  if (a.empty() || b.empty())
    fail(std::string(op) + " inputs must have rank >= 1, got " + shape_to_string(a) + " and " + shape_to_string(b));
  Shape sa = a, sb = b;
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  MatMulShape r;
  r.m = sa[sa.size() - 2];
  r.k = sa.back();
  r.n = sb.back();
  if (sb[sb.size() - 2] != r.k)
    fail(std::string(op) + " inner dimensions differ: " + shape_to_string(a) + " x " + shape_to_string(b));
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const Shape batch = broadcast_shapes(batch_a, batch_b);
  r.out_shape = batch;
  if (!a_vec) r.out_shape.push_back(r.m);
  if (!b_vec) r.out_shape.push_back(r.n);
  const int64_t nb = shape_size(batch);
  const auto stra = broadcast_strides(batch_a, batch), strb = broadcast_strides(batch_b, batch);
  r.a_index.resize(static_cast<size_t>(nb));
  r.b_index.resize(static_cast<size_t>(nb));
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t oa = 0, ob = 0, rem = bi;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t i = rem % batch[d];
      rem /= batch[d];
      oa += i * stra[d];
      ob += i * strb[d];
    }
    r.a_index[static_cast<size_t>(bi)] = oa;
    r.b_index[static_cast<size_t>(bi)] = ob;
  }
  return r;
}

}  // namespace epprof::rt::kernels
