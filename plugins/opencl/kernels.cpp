#include "kernels.h"

namespace epprof::opencl {

namespace {

// Binary ops broadcast like numpy: each work-item maps its output index to
// the two input indices through per-dim strides (0 on broadcast dims).
const char* const kElementwise = R"CLC(
typedef struct { long rank, n; long dims[6]; long sa[6]; long sb[6]; } bcast_t;
#define BINARY(NAME, EXPR)                                                          \
__kernel void NAME(__global const float* A, __global const float* B,               \
                   __global float* Y, bcast_t p) {                                   \
  long i = get_global_id(0);                                                         \
  if (i >= p.n) return;                                                              \
  long rem = i, ia = 0, ib = 0;                                                      \
  for (int d = (int)p.rank - 1; d >= 0; --d) {                                       \
    long k = rem % p.dims[d];                                                        \
    rem /= p.dims[d];                                                                \
    ia += k * p.sa[d];                                                               \
    ib += k * p.sb[d];                                                               \
  }                                                                                  \
  float a = A[ia], b = B[ib];                                                        \
  Y[i] = (EXPR);                                                                     \
}
BINARY(binary_add, a + b)
BINARY(binary_sub, a - b)
BINARY(binary_mul, a * b)
BINARY(binary_div, a / b)

#define UNARY(NAME, EXPR)                                                           \
__kernel void NAME(__global const float* X, __global float* Y, long n) {             \
  long i = get_global_id(0);                                                         \
  if (i >= n) return;                                                                \
  float x = X[i];                                                                    \
  Y[i] = (EXPR);                                                                     \
}
UNARY(unary_relu, x > 0.0f ? x : 0.0f)
UNARY(unary_sigmoid, x >= 0.0f ? 1.0f / (1.0f + exp(-x)) : exp(x) / (1.0f + exp(x)))
UNARY(unary_tanh, tanh(x))
)CLC";

// One work-item per (outer, inner) row: max, exp and sum, normalise.
const char* const kSoftmax = R"CLC(
__kernel void softmax(__global const float* X, __global float* Y, long outer, long n, long inner) {
  long g = get_global_id(0);
  if (g >= outer * inner) return;
  long base = (g / inner) * n * inner + g % inner;
  float mx = X[base];
  for (long k = 1; k < n; ++k) mx = fmax(mx, X[base + k * inner]);
  float sum = 0.0f;
  for (long k = 0; k < n; ++k) {
    float e = exp(X[base + k * inner] - mx);
    Y[base + k * inner] = e;
    sum += e;
  }
  for (long k = 0; k < n; ++k) Y[base + k * inner] /= sum;
}
)CLC";

// One work-item per output element (column j, row i, batch b).
const char* const kMatMul = R"CLC(
typedef struct { long m, n, k, batch, brank; long bdims[4]; long sa[4]; long sb[4]; } mm_t;
__kernel void matmul(__global const float* A, __global const float* B, __global float* Y, mm_t p) {
  long j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
  if (j >= p.n || i >= p.m || b >= p.batch) return;
  long rem = b, oa = 0, ob = 0;
  for (int d = (int)p.brank - 1; d >= 0; --d) {
    long x = rem % p.bdims[d];
    rem /= p.bdims[d];
    oa += x * p.sa[d];
    ob += x * p.sb[d];
  }
  __global const float* a = A + oa * p.m * p.k + i * p.k;
  __global const float* bp = B + ob * p.k * p.n + j;
  float acc = 0.0f;
  for (long t = 0; t < p.k; ++t) acc += a[t] * bp[t * p.n];
  Y[b * p.m * p.n + i * p.n + j] = acc;
}
)CLC";

const char* const kGemm = R"CLC(
typedef struct { long m, n, k, trans_a, trans_b, has_c, csm, csn; float alpha, beta; } gemm_t;
__kernel void gemm(__global const float* A, __global const float* B, __global const float* C,
                   __global float* Y, gemm_t p) {
  long j = get_global_id(0), i = get_global_id(1);
  if (j >= p.n || i >= p.m) return;
  float acc = 0.0f;
  for (long t = 0; t < p.k; ++t) {
    float a = p.trans_a ? A[t * p.m + i] : A[i * p.k + t];
    float b = p.trans_b ? B[j * p.k + t] : B[t * p.n + j];
    acc += a * b;
  }
  float y = p.alpha * acc;
  if (p.has_c) y += p.beta * C[i * p.csm + j * p.csn];
  Y[i * p.n + j] = y;
}
)CLC";

}  // namespace

const char* program_name(Program p) {
  switch (p) {
    case Program::Elementwise: return "elementwise";
    case Program::Softmax: return "softmax";
    case Program::MatMul: return "matmul";
    case Program::Gemm: return "gemm";
    case Program::Count_: break;
  }
  return "?";
}

const char* program_source(Program p) {
  switch (p) {
    case Program::Elementwise: return kElementwise;
    case Program::Softmax: return kSoftmax;
    case Program::MatMul: return kMatMul;
    case Program::Gemm: return kGemm;
    case Program::Count_: break;
  }
  return "";
}

}  // namespace epprof::opencl
