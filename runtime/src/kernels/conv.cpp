// Conv, float and double, by one of two lowerings:
// - depthwise (group == C, each output channel reads one input channel) over
//   1 or 2 spatial dims: a direct loop over output rows, no im2col, no
//   per-channel 1 x P x K gemm;
// - everything else: im2col (skipped for 1x1 stride-1 unpadded kernels) and an
//   OpenBLAS gemm per image and group.
// The bias is written into Y first and accumulated onto, so it costs no pass
// of its own (OpenBLAS's beta = 0 pass over C is replaced by the bias fill).
#include <cblas.h>

#include <vector>

#include "kernels/common.h"
#include "kernels/conv_geometry.h"

namespace epprof::rt::kernels {

namespace {

// Row-major C[m,n] = A[m,k] * B[k,n] + beta * C.
void gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float beta, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(k), b, static_cast<blasint>(n), beta, c,
              static_cast<blasint>(n));
}
void gemm(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double beta, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0, a, static_cast<blasint>(k), b, static_cast<blasint>(n), beta, c,
              static_cast<blasint>(n));
}

// Y[n, m] = bias[m] everywhere (or 0 without a bias).
template <typename T>
void fill_bias(const T* bias, const ConvShape& cs, T* y) {
  for (int64_t n = 0; n < cs.N; ++n)
    for (int64_t m = 0; m < cs.M; ++m) {
      T* plane = y + (n * cs.M + m) * cs.P;
      std::fill(plane, plane + cs.P, bias ? bias[m] : T{});
    }
}

// True when the direct depthwise loop applies: one input channel per group
// (any channel multiplier M / C) and at most 2 spatial dims (the window's
// leading slot is then the unused size-1 one).
bool is_depthwise_2d(const ConvShape& cs) { return cs.Cg == 1 && cs.group == cs.C && cs.w.spatial <= 2; }

// Accumulates the depthwise convolution onto Y (which holds the bias). Per
// output row and kernel row, each kernel column is one pass over the output
// columns whose input column is inside the image ([lo, hi), precomputed), so
// the padding costs no per-element test and stride-1 passes are contiguous.
template <typename T>
void conv_depthwise_2d(const T* x, const T* wt, const ConvShape& cs, T* y) {
  const Window& w = cs.w;
  const int64_t H = w.in[1], W = w.in[2], OH = w.out[1], OW = w.out[2], KH = w.k[1], KW = w.k[2];
  const int64_t sw = w.s[2];
  std::vector<int64_t> off(static_cast<size_t>(KW)), lo(off.size()), hi(off.size());
  for (int64_t kw = 0; kw < KW; ++kw) {
    const size_t i = static_cast<size_t>(kw);
    off[i] = kw * w.d[2] - w.pb[2];
    taps_inside(off[i], sw, W, OW, lo[i], hi[i]);
  }
  for (int64_t n = 0; n < cs.N; ++n)
    for (int64_t m = 0; m < cs.M; ++m) {
      const T* xc = x + (n * cs.C + m / cs.Mg) * H * W;
      const T* wm = wt + m * KH * KW;
      T* ym = y + (n * cs.M + m) * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        T* yr = ym + oh * OW;
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = oh * w.s[1] - w.pb[1] + kh * w.d[1];
          if (ih < 0 || ih >= H) continue;
          const T* xr = xc + ih * W;
          for (size_t kw = 0; kw < off.size(); ++kw) {
            const T wv = wm[kh * KW + static_cast<int64_t>(kw)];
            const int64_t o = off[kw];
            if (sw == 1)
              for (int64_t ow = lo[kw]; ow < hi[kw]; ++ow) yr[ow] += wv * xr[ow + o];
            else
              for (int64_t ow = lo[kw]; ow < hi[kw]; ++ow) yr[ow] += wv * xr[ow * sw + o];
          }
        }
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
  fill_bias(bias ? bias->data<T>() : nullptr, cs, y);
  if (is_depthwise_2d(cs))
    conv_depthwise_2d(x.data<T>(), wt.data<T>(), cs, y);
  else
    conv_by_gemm(
        x.data<T>(), wt.data<T>(), cs, y,
        [](int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) { gemm(m, n, k, a, b, T{1}, c); },
        /*accumulate=*/true);
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
