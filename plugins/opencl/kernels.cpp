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
BINARY(binary_pow, pow(a, b))

// Unary ops take two float parameters a and b, which most ignore.
#define UNARY(NAME, EXPR)                                                           \
__kernel void NAME(__global const float* X, __global float* Y, long n, float a, float b) { \
  long i = get_global_id(0);                                                         \
  if (i >= n) return;                                                                \
  float x = X[i];                                                                    \
  Y[i] = (EXPR);                                                                     \
}
UNARY(unary_relu, x > 0.0f ? x : 0.0f)
UNARY(unary_sigmoid, x >= 0.0f ? 1.0f / (1.0f + exp(-x)) : exp(x) / (1.0f + exp(x)))
UNARY(unary_tanh, tanh(x))
UNARY(unary_exp, exp(x))
UNARY(unary_log, log(x))
UNARY(unary_sqrt, sqrt(x))
UNARY(unary_neg, -x)
UNARY(unary_abs, fabs(x))
UNARY(unary_erf, erf(x))
UNARY(unary_reciprocal, 1.0f / x)
UNARY(unary_softplus, x > 0.0f ? x + log1p(exp(-x)) : log1p(exp(x)))
UNARY(unary_leaky_relu, x < 0.0f ? a * x : x)
UNARY(unary_hard_sigmoid, fmax(0.0f, fmin(1.0f, a * x + b)))
UNARY(unary_elu, x < 0.0f ? a * (exp(x) - 1.0f) : x)
// Clip: a = min, b = max; min > max gives max, as ONNX says; NaN stays NaN.
UNARY(clip, b < (x < a ? a : x) ? b : (x < a ? a : x))
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

// A CNN's ops, NCHW. Window geometry as the CPU EP resolves it: input
// coordinate = output * stride - begin pad + tap * dilation; taps outside
// the input are skipped (zero padding for conv, ignored by the pools).
const char* const kCnn = R"CLC(
typedef struct {
  long n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, pad_top, pad_left, pad_bottom, pad_right;
  long group, has_bias, count_include_pad;
} win_t;
typedef struct { long planes, c, spatial; float epsilon; } plane_t;

// Grouped convolution (depthwise when group == c), optional bias.
__kernel void conv2d(__global const float* X, __global const float* W, __global const float* B,
                     __global float* Y, win_t p) {
  long ox = get_global_id(0), oy = get_global_id(1), nm = get_global_id(2);
  if (ox >= p.ow || oy >= p.oh || nm >= p.n * p.m) return;
  long n = nm / p.m, m = nm % p.m;
  long cg = p.c / p.group, g = m / (p.m / p.group);
  long y0 = oy * p.sh - p.pad_top, x0 = ox * p.sw - p.pad_left;
  float acc = p.has_bias ? B[m] : 0.0f;
  for (long ci = 0; ci < cg; ++ci) {
    __global const float* x = X + (n * p.c + g * cg + ci) * p.h * p.w;
    __global const float* k = W + (m * cg + ci) * p.kh * p.kw;
    for (long ky = 0; ky < p.kh; ++ky) {
      long iy = y0 + ky * p.dh;
      if (iy < 0 || iy >= p.h) continue;
      for (long kx = 0; kx < p.kw; ++kx) {
        long ix = x0 + kx * p.dw;
        if (ix >= 0 && ix < p.w) acc += x[iy * p.w + ix] * k[ky * p.kw + kx];
      }
    }
  }
  Y[(nm * p.oh + oy) * p.ow + ox] = acc;
}

// A pool's work-item: the output element it writes (one per (plane, oy,
// ox)), where that element's plane starts in the input, and its window's
// first input row and column (negative in the padding).
typedef struct { bool in_range; long out, in, y0, x0; } pool_site_t;
pool_site_t pool_site(win_t p) {
  pool_site_t s;
  long ox = get_global_id(0), oy = get_global_id(1), plane = get_global_id(2);
  s.in_range = ox < p.ow && oy < p.oh && plane < p.n * p.c;
  s.out = (plane * p.oh + oy) * p.ow + ox;
  s.in = plane * p.h * p.w;
  s.y0 = oy * p.sh - p.pad_top;
  s.x0 = ox * p.sw - p.pad_left;
  return s;
}

__kernel void maxpool2d(__global const float* X, __global float* Y, win_t p) {
  pool_site_t s = pool_site(p);
  if (!s.in_range) return;
  __global const float* x = X + s.in;
  long y0 = s.y0, x0 = s.x0;
  float best = -FLT_MAX;
  for (long ky = 0; ky < p.kh; ++ky) {
    long iy = y0 + ky * p.dh;
    if (iy < 0 || iy >= p.h) continue;
    for (long kx = 0; kx < p.kw; ++kx) {
      long ix = x0 + kx * p.dw;
      if (ix >= 0 && ix < p.w) best = fmax(best, x[iy * p.w + ix]);
    }
  }
  Y[s.out] = best;
}

// The mean of the window's input elements; with count_include_pad, the
// divisor counts the window's positions up to the end of the padding.
__kernel void avgpool2d(__global const float* X, __global float* Y, win_t p) {
  pool_site_t s = pool_site(p);
  if (!s.in_range) return;
  __global const float* x = X + s.in;
  long ys = s.y0, xs = s.x0;
  long ye = min(ys + p.kh, p.h + p.pad_bottom), xe = min(xs + p.kw, p.w + p.pad_right);
  long ylo = max(ys, 0L), yhi = min(ye, p.h), xlo = max(xs, 0L), xhi = min(xe, p.w);
  float sum = 0.0f;
  for (long iy = ylo; iy < yhi; ++iy)
    for (long ix = xlo; ix < xhi; ++ix) sum += x[iy * p.w + ix];
  long count = p.count_include_pad ? (ye - ys) * (xe - xs) : max(yhi - ylo, 0L) * max(xhi - xlo, 0L);
  Y[s.out] = count > 0 ? sum / (float)count : 0.0f;
}

// One work-item per (n, c) plane.
__kernel void global_avgpool(__global const float* X, __global float* Y, plane_t p) {
  long plane = get_global_id(0);
  if (plane >= p.planes) return;
  __global const float* x = X + plane * p.spatial;
  float sum = 0.0f;
  for (long i = 0; i < p.spatial; ++i) sum += x[i];
  Y[plane] = sum / (float)p.spatial;
}

// Separable interpolation from tap tables: output (oy, ox) is the sum over
// row taps a and column taps b of yw * xw * X[yi, xi] (1 tap: nearest).
typedef struct { long planes, ih, iw, oh, ow, taps; } resize_t;
__kernel void resize2d(__global const float* X, __global const long* yi, __global const float* yw,
                       __global const long* xi, __global const float* xw, __global float* Y, resize_t p) {
  long ox = get_global_id(0), oy = get_global_id(1), plane = get_global_id(2);
  if (ox >= p.ow || oy >= p.oh || plane >= p.planes) return;
  __global const float* x = X + plane * p.ih * p.iw;
  float acc = 0.0f;
  for (long a = 0; a < p.taps; ++a) {
    __global const float* row = x + yi[oy * p.taps + a] * p.iw;
    float r = 0.0f;
    for (long b = 0; b < p.taps; ++b) r += xw[ox * p.taps + b] * row[xi[ox * p.taps + b]];
    acc += yw[oy * p.taps + a] * r;
  }
  Y[(plane * p.oh + oy) * p.ow + ox] = acc;
}

// Inference: y = scale * (x - mean) / sqrt(var + epsilon) + bias, per channel.
__kernel void batchnorm(__global const float* X, __global const float* scale, __global const float* bias,
                        __global const float* mean, __global const float* var, __global float* Y, plane_t p) {
  long i = get_global_id(0);
  if (i >= p.planes * p.spatial) return;
  long ch = (i / p.spatial) % p.c;
  float inv = scale[ch] / sqrt(var[ch] + p.epsilon);
  Y[i] = (X[i] - mean[ch]) * inv + bias[ch];
}
)CLC";

}  // namespace

const char* program_name(Program p) {
  switch (p) {
    case Program::Elementwise: return "elementwise";
    case Program::Softmax: return "softmax";
    case Program::MatMul: return "matmul";
    case Program::Gemm: return "gemm";
    case Program::Cnn: return "cnn";
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
    case Program::Cnn: return kCnn;
    case Program::Count_: break;
  }
  return "";
}

}  // namespace epprof::opencl
