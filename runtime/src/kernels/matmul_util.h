// numpy.matmul shape rules, shared by MatMul, MatMulInteger and QLinearMatMul,
// and the row-major GEMM on OpenBLAS that MatMul and Conv share.
#pragma once
#include <cblas.h>

#include <string>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/common.h"

namespace epprof::rt::kernels {

// Row-major C[m,n] = A[m,k] * B[k,n] (contiguous), overwriting C.
inline void gemm_nn(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(k), b, static_cast<blasint>(n), 0.0f, c,
              static_cast<blasint>(n));
}
inline void gemm_nn(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0, a, static_cast<blasint>(k), b, static_cast<blasint>(n), 0.0, c,
              static_cast<blasint>(n));
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
