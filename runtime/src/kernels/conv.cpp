// Conv, float and double, by one of two lowerings:
// - depthwise (group == C, each output channel reads one input channel) over
//   1 or 2 spatial dims: a direct loop over output rows, no im2col, no
//   per-channel 1 x P x K gemm;
// - everything else: im2col (skipped for 1x1 stride-1 unpadded kernels) and an
//   OpenBLAS gemm per image, group and tile of output rows.
// The bias is written into Y first and accumulated onto, so it costs no pass
// of its own (OpenBLAS's beta = 0 pass over C is replaced by the bias fill).
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/common.h"
#include "kernels/conv_geometry.h"

namespace epprof::rt::kernels {

namespace {

// Row-major C[m,n] += A[m,k] * B[k,n], with B's and C's row strides.
void gemm_acc(int64_t m, int64_t n, int64_t k, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(k), b, static_cast<blasint>(ldb), 1.0f, c,
              static_cast<blasint>(ldc));
}
void gemm_acc(int64_t m, int64_t n, int64_t k, const double* a, const double* b, int64_t ldb, double* c,
              int64_t ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0, a, static_cast<blasint>(k), b, static_cast<blasint>(ldb), 1.0, c,
              static_cast<blasint>(ldc));
}

// 16 bytes of T as a GCC/Clang vector type: the compiler lowers its
// arithmetic to the target's SIMD (SSE2 at the baseline x86-64 flags, so it
// stays in a register), without the loop vectoriser, which -O2 runs only for
// loops whose trip count is a multiple of the vector width.
template <typename T>
struct Simd;
template <>
struct Simd<float> {
  typedef float V __attribute__((vector_size(16)));
};
template <>
struct Simd<double> {
  typedef double V __attribute__((vector_size(16)));
};

// p[0, n) = v, a vector at a time (std::fill of a non-zero value stays a
// scalar loop at -O2).
template <typename T>
void fill_value(T* p, int64_t n, T v) {
  using V = typename Simd<T>::V;
  constexpr int64_t L = sizeof(V) / sizeof(T);
  V vv;
  for (int64_t i = 0; i < L; ++i) vv[i] = v;
  int64_t i = 0;
  for (; i + L <= n; i += L) std::memcpy(p + i, &vv, sizeof vv);
  for (; i < n; ++i) p[i] = v;
}

// Y[n, m] = bias[m] everywhere.
template <typename T>
void fill_bias(const T* bias, const ConvShape& cs, T* y) {
  for (int64_t n = 0; n < cs.N; ++n)
    for (int64_t m = 0; m < cs.M; ++m) fill_value(y + (n * cs.M + m) * cs.P, cs.P, bias[m]);
}

// True when the direct depthwise loop applies: one input channel per group,
// at most 2 spatial dims (the window's leading slot is then the unused size-1
// one), and few output channels per input channel. With many (Mg > 4, as in
// a first layer from one input channel to 24, or a 1-D filterbank from one to
// hundreds) the gemm amortises im2col over Mg rows and beats the direct loop:
// oww_melspectrogram's 1 -> 257-channel convs ran 10x slower direct.
bool is_depthwise_2d(const ConvShape& cs) {
  return cs.Cg == 1 && cs.group == cs.C && cs.Mg <= 4 && cs.w.spatial <= 2;
}

// One kernel tap over output columns [from, to) of a row: y[o] += wv * x[o * s + off].
template <typename T>
void tap_pass(T* yr, const T* xr, T wv, int64_t off, int64_t s, int64_t from, int64_t to) {
  if (s == 1)
    for (int64_t o = from; o < to; ++o) yr[o] += wv * xr[o + off];
  else
    for (int64_t o = from; o < to; ++o) yr[o] += wv * xr[o * s + off];
}

// One kernel tap of an output row's interior: its weight, and the input
// element it reads for the interior's first column; the next columns read the
// next elements (the input is contiguous along the row, or a phase row).
template <typename T>
struct Tap {
  const T* x;
  T w;
};

// Output columns [from, to) where every tap is inside the input:
// y[from + i] += sum over the taps of w * x[i], accumulated in registers, two
// vectors at a time (two independent chains).
template <typename T>
void taps_interior(T* yr, const Tap<T>* taps, size_t ntaps, int64_t from, int64_t to) {
  using V = typename Simd<T>::V;
  constexpr int64_t L = sizeof(V) / sizeof(T);
  T* y = yr + from;
  const int64_t n = to - from;
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    V a0, a1;
    std::memcpy(&a0, y + i, sizeof a0);
    std::memcpy(&a1, y + i + L, sizeof a1);
    for (size_t t = 0; t < ntaps; ++t) {
      V x0, x1;
      std::memcpy(&x0, taps[t].x + i, sizeof x0);
      std::memcpy(&x1, taps[t].x + i + L, sizeof x1);
      a0 += taps[t].w * x0;
      a1 += taps[t].w * x1;
    }
    std::memcpy(y + i, &a0, sizeof a0);
    std::memcpy(y + i + L, &a1, sizeof a1);
  }
  for (; i < n; ++i) {
    T acc = y[i];
    for (size_t t = 0; t < ntaps; ++t) acc += taps[t].w * taps[t].x[i];
    y[i] = acc;
  }
}

// The depthwise convolution plus bias (null: none), one output row at a time
// (filled with the bias, then accumulated onto while it is in L1) over the
// kernel rows inside the input. Kernel column kw reads the input for output
// columns [lo[kw], hi[kw]) only (precomputed), so padding costs no
// per-element test. The interior columns, which every tap reads, sum all taps
// in SIMD registers; the border columns take one scalar pass per tap. With a
// column stride s > 1 the interior reads each input plane split into s phase
// rows per row (phase r holds columns r, r + s, ...), built once per plane,
// where every tap's reads are contiguous again.
template <typename T>
void conv_depthwise_2d(const T* x, const T* wt, const T* bias, const ConvShape& cs, T* y) {
  const Window& w = cs.w;
  const int64_t H = w.in[1], W = w.in[2], OH = w.out[1], OW = w.out[2], KH = w.k[1], KW = w.k[2];
  const int64_t sw = w.s[2];
  const int64_t Wp = (W + sw - 1) / sw;  // phase row length
  std::vector<int64_t> off(static_cast<size_t>(KW)), lo(off.size()), hi(off.size());
  int64_t in_lo = 0, in_hi = OW;  // the interior: columns inside for every kw
  for (size_t kw = 0; kw < off.size(); ++kw) {
    off[kw] = static_cast<int64_t>(kw) * w.d[2] - w.pb[2];
    taps_inside(off[kw], sw, W, OW, lo[kw], hi[kw]);
    in_lo = std::max(in_lo, lo[kw]);
    in_hi = std::min(in_hi, hi[kw]);
  }
  const bool interior = in_lo < in_hi;
  // Where tap kw's interior reads start within an input row (stride 1) or a
  // plane's phase rows (row ih, phase r at (ih * sw + r) * Wp): off = q*sw + r
  // with 0 <= r < sw, and column in_lo reads (in_lo + q) of phase r.
  std::vector<int64_t> start(off.size());
  for (size_t kw = 0; kw < off.size(); ++kw) {
    const int64_t r = ((off[kw] % sw) + sw) % sw, q = (off[kw] - r) / sw;
    start[kw] = sw == 1 ? in_lo + off[kw] : r * Wp + in_lo + q;
  }
  std::vector<T> phases(sw > 1 && interior ? static_cast<size_t>(H * sw * Wp) : 0);
  std::vector<const T*> xrows(static_cast<size_t>(KH)), wrows(xrows.size());
  std::vector<Tap<T>> taps(static_cast<size_t>(KH * KW));
  for (int64_t n = 0; n < cs.N; ++n)
    for (int64_t m = 0; m < cs.M; ++m) {
      const T* xc = x + (n * cs.C + m / cs.Mg) * H * W;
      if (!phases.empty() && m % cs.Mg == 0)  // a new input plane
        for (int64_t ih = 0; ih < H; ++ih)
          for (int64_t r = 0; r < sw; ++r) {
            T* ph = phases.data() + (ih * sw + r) * Wp;
            for (int64_t j = 0; j * sw + r < W; ++j) ph[j] = xc[ih * W + j * sw + r];
          }
      const T* wm = wt + m * KH * KW;
      T* ym = y + (n * cs.M + m) * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        T* yr = ym + oh * OW;
        if (bias) fill_value(yr, OW, bias[m]);  // else the row stays as Tensor made it: zeros
        size_t nrows = 0, ntaps = 0;
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = oh * w.s[1] - w.pb[1] + kh * w.d[1];
          if (ih < 0 || ih >= H) continue;
          xrows[nrows] = xc + ih * W;
          wrows[nrows++] = wm + kh * KW;
          if (!interior) continue;
          const T* base = sw == 1 ? xc + ih * W : phases.data() + ih * sw * Wp;
          for (size_t kw = 0; kw < off.size(); ++kw) taps[ntaps++] = {base + start[kw], wm[kh * KW + int64_t(kw)]};
        }
        if (interior) taps_interior(yr, taps.data(), ntaps, in_lo, in_hi);
        for (size_t r = 0; r < nrows; ++r)
          for (size_t kw = 0; kw < off.size(); ++kw) {
            const T wv = wrows[r][kw];
            if (!interior) {
              tap_pass(yr, xrows[r], wv, off[kw], sw, lo[kw], hi[kw]);
              continue;
            }
            tap_pass(yr, xrows[r], wv, off[kw], sw, lo[kw], std::min(hi[kw], in_lo));
            tap_pass(yr, xrows[r], wv, off[kw], sw, std::max(lo[kw], in_hi), hi[kw]);
          }
      }
    }
}

// Bytes of im2col columns per tile: small enough to still be in L2 when the
// gemm reads them, large enough for the gemm to run at speed.
constexpr int64_t kColTileBytes = 512 << 10;

// The gemm lowering, accumulating onto Y (which holds the bias): per image
// and group, im2col a tile of output rows at a time and gemm it onto Y's
// matching columns. A whole-image im2col buffer can be many times the input
// (9x for 3x3) and falls out of cache before the gemm reads it. A 1x1
// stride-1 unpadded kernel reads X itself as the gemm's B, in one gemm.
template <typename T>
void conv_im2col_gemm(const T* x, const T* wt, const ConvShape& cs, T* y) {
  const Window& w = cs.w;
  if (cs.P == 0 || cs.Mg == 0 || cs.K == 0) return;  // nothing to add to the bias
  const bool pointwise = is_pointwise(w);
  const int64_t rows = w.out[0] * w.out[1], OW = w.out[2];
  const int64_t tile_rows =
      pointwise ? rows : std::clamp<int64_t>(kColTileBytes / int64_t(sizeof(T) * cs.K * OW), 1, rows);
  // Uninitialised: im2col_rows writes every element of a tile.
  const std::unique_ptr<T[]> col(pointwise ? nullptr : new T[static_cast<size_t>(cs.K * tile_rows * OW)]);
  for (int64_t n = 0; n < cs.N; ++n)
    for (int64_t g = 0; g < cs.group; ++g) {
      const T* xg = x + (n * cs.C + g * cs.Cg) * w.in_size();
      const T* wg = wt + g * cs.Mg * cs.K;
      T* yg = y + (n * cs.M + g * cs.Mg) * cs.P;
      if (pointwise) {
        gemm_acc(cs.Mg, cs.P, cs.K, wg, xg, cs.P, yg, cs.P);
        continue;
      }
      for (int64_t r0 = 0; r0 < rows; r0 += tile_rows) {
        const int64_t r1 = std::min(rows, r0 + tile_rows), cols = (r1 - r0) * OW;
        im2col_rows(xg, cs.Cg, w, r0, r1, col.get());
        gemm_acc(cs.Mg, cols, cs.K, wg, col.get(), cols, yg + r0 * OW, cs.P);
      }
    }
}

template <typename T>
Tensor conv(const Tensor& x, const Tensor& wt, const Tensor* bias, const WindowAttrs& attrs, int64_t group) {
  const ConvShape cs = resolve_conv(attrs, group, x.shape(), wt.shape(), "Conv");
  if (bias && (bias->dtype() != x.dtype() || bias->rank() != 1 || bias->size() != cs.M))
    fail("Conv bias B must be " + std::string(type_name(x.dtype())) + "[" + std::to_string(cs.M) + "], got " +
         bias->description());
  Tensor out(x.dtype(), cs.out_shape);
  T* y = out.mutable_data<T>();
  const T* b = bias ? bias->data<T>() : nullptr;
  if (is_depthwise_2d(cs)) {
    conv_depthwise_2d(x.data<T>(), wt.data<T>(), b, cs, y);
    return out;
  }
  if (b) fill_bias(b, cs, y);  // else Y stays as Tensor made it: zeros
  conv_im2col_gemm(x.data<T>(), wt.data<T>(), cs, y);
  return out;
}

std::unique_ptr<Kernel> make_conv(const Node& node) {
  const WindowAttrs attrs = WindowAttrs::from_node(node);
  const int64_t group = node.attr_int("group", 1);
  if (group <= 0) fail(node.describe() + ": group must be positive, got " + std::to_string(group));
  return make_kernel([attrs, group](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& wt = ctx.input(1);
    if (wt.dtype() != x.dtype()) fail("Conv weight W " + wt.description() + " must have the type of X " + x.description());
    if (x.dtype() == DataType::Float)
      ctx.outputs[0] = conv<float>(x, wt, ctx.optional_input(2), attrs, group);
    else if (x.dtype() == DataType::Double)
      ctx.outputs[0] = conv<double>(x, wt, ctx.optional_input(2), attrs, group);
    else
      fail("Conv input X must be float or double, got " + x.description());
  });
}

}  // namespace

void register_conv(std::vector<KernelDef>& t) { t.push_back({"Conv", 1, 17, make_conv}); }

}  // namespace epprof::rt::kernels
