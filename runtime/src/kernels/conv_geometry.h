// Window geometry shared by Conv, ConvTranspose, the quantized convolutions
// and the pooling ops: kernel, strides, pads, dilations and auto_pad, resolved
// against an input's spatial dims; plus the im2col lowering they share.
#pragma once
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "memory_hooks.h"

namespace epprof::rt::kernels {

struct WindowAttrs {
  std::vector<int64_t> kernel;     // may be empty for Conv (taken from W)
  std::vector<int64_t> strides, pads, dilations;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
  static WindowAttrs from_node(const Node& node);
};

// Resolved geometry, always padded to 3 spatial dims (leading dims of size 1).
struct Window {
  size_t spatial = 0;              // original number of spatial dims
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
  Shape out_spatial() const;       // the `spatial` real output dims
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

// `input` is N x C x spatial...; `kernel` the spatial kernel dims.
Window resolve_window(const WindowAttrs& attrs, const Shape& input, const std::vector<int64_t>& kernel);
// The per-dim parts every window shares: the input's n spatial dims right-
// aligned in the 3 slots (unused leading ones size 1, stride 1, no padding),
// the input's and kernel's sizes, strides and dilations (default 1). Output
// sizes and padding are the caller's; `kernel` has n values.
Window window_dims(const WindowAttrs& attrs, const Shape& input, const std::vector<int64_t>& kernel);

// A grouped convolution's shapes: X is N x C x spatial, W is M x C/group x kernel.
struct ConvShape {
  Window w;
  int64_t N = 0, C = 0, M = 0, group = 1, Cg = 0, Mg = 0;
  int64_t K = 0;                   // Cg * kernel size: the reduction length
  int64_t P = 0;                   // output spatial size
  Shape out_shape;                 // N x M x out spatial

  int64_t macs() const { return N * M * P * K; }
  // X's and Y's elements together: what the conv reads and writes besides W.
  int64_t data_elements() const { return N * (C * w.in_size() + M * P); }
};

// How many ranges every Conv lowering (the implicit GEMM's tiles, the gemm
// path's and the depthwise loop's output rows: `units` of them in order)
// splits into across the intra-op threads, X and Y having elements of
// `element_bytes`: one per thread, when the arithmetic or the data is
// enough (detail::intra_op_ranges), else 1. One each, so that the calling
// thread, which takes the first task, computes the first rows as the Conv
// before it did and reads them in its own core's cache
// (detail::kMinSplitBytes). More cost more: each range copies its halo rows
// of every channel, and on the CNN's 32x32 convs at 2 threads 4 ranges
// spent 8% more cycles per job than 2, 8 ranges 25% more; and the rows then
// went to whichever thread came first (the CNN ran 3.5% slower at 2 ranges
// a thread than at 1, measured alternately).
int64_t conv_row_ranges(const ConvShape& cs, int64_t units, int64_t element_bytes);

// Checks X, W (and the kernel_shape attribute, if given) against each other;
// `op` names the operator in messages.
ConvShape resolve_conv(const WindowAttrs& attrs, int64_t group, const Shape& x, const Shape& w, const char* op);

// The output positions o in [0, out) whose input position o * stride + off
// lies in [0, in): [lo, hi), empty (lo == hi) when there are none. `off` is
// a kernel tap's offset, k * dilation - pad_begin.
inline void taps_inside(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : std::min(out, (-off + stride - 1) / stride);
  hi = in - off <= 0 ? 0 : std::min(out, (in - off + stride - 1) / stride);
  hi = std::max(hi, lo);
}

// The input row that output row (od, oh) reads at kernel tap (kd, kh) of the
// channel plane xc, or null where that tap falls in the padding.
template <typename T>
const T* tap_row(const T* xc, const Window& w, int64_t od, int64_t oh, int64_t kd, int64_t kh) {
  const int64_t id = od * w.s[0] - w.pb[0] + kd * w.d[0];
  const int64_t ih = oh * w.s[1] - w.pb[1] + kh * w.d[1];
  if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1]) return nullptr;
  return xc + (id * w.in[1] + ih) * w.in[2];
}

// Output columns [from, to) of one im2col row into out[0, to - from):
// column o reads src[o * stride + off] where its tap lies inside the input
// ([lo, hi), from taps_inside), and is zero elsewhere, and everywhere when
// src is null (a padding row). A zero run, a copy (contiguous for stride
// 1) and a zero run.
template <typename T>
void im2col_run(T* out, const T* src, int64_t from, int64_t to, int64_t lo, int64_t hi, int64_t stride,
                int64_t off) {
  if (!src) return zero_short(out, to - from);
  const int64_t a = std::clamp(lo, from, to), b = std::clamp(hi, a, to);
  zero_short(out, a - from);
  if (stride == 1)
    copy_short(out + (a - from), src + (a + off), b - a);
  else if (stride == 2)  // a constant stride: the loads vectorise as deinterleaving shuffles
    for (int64_t o = a; o < b; ++o) out[o - from] = src[o * 2 + off];
  else
    for (int64_t o = a; o < b; ++o) out[o - from] = src[o * stride + off];
  zero_short(out + (b - from), to - b);
}

// im2col for the output rows [r0, r1), rows numbered od * out[1] + oh:
// col[(c*K + kk) * n + (r - r0) * out[2] + ow] for `channels` channels of one
// image (K = kernel size, n = (r1 - r0) * out[2]): the input patch under
// every such output position, with zeros for padding, an im2col_run per
// output row. (od, oh) is stepped from row to row, not divided out per
// run: on maps of 2 and 4 columns a run copies only a few floats.
template <typename T>
void im2col_rows(const T* x, int64_t channels, const Window& w, int64_t r0, int64_t r1, T* col) {
  const int64_t OW = w.out[2], n = (r1 - r0) * OW;
  const int64_t od0 = r0 / w.out[1], oh0 = r0 % w.out[1];
  T* dst = col;
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * w.in_size();
    for (int64_t kd = 0; kd < w.k[0]; ++kd)
      for (int64_t kh = 0; kh < w.k[1]; ++kh)
        for (int64_t kw = 0; kw < w.k[2]; ++kw) {
          const int64_t off = kw * w.d[2] - w.pb[2];
          int64_t lo, hi;
          taps_inside(off, w.s[2], w.in[2], OW, lo, hi);
          int64_t od = od0, oh = oh0;
          for (int64_t r = r0; r < r1; ++r) {
            im2col_run(dst + (r - r0) * OW, tap_row(xc, w, od, oh, kd, kh), 0, OW, lo, hi, w.s[2], off);
            if (++oh == w.out[1]) oh = 0, ++od;
          }
          dst += n;
        }
  }
}

// col[(c*K + kk) * P + p] for all P output positions: im2col_rows over every row.
template <typename T>
void im2col(const T* x, int64_t channels, const Window& w, T* col) {
  im2col_rows(x, channels, w, 0, w.out[0] * w.out[1], col);
}

// True when im2col would be the identity (1x1 kernel, stride 1, no padding).
inline bool is_pointwise(const Window& w) {
  for (int i = 0; i < 3; ++i)
    if (w.k[i] != 1 || w.s[i] != 1 || w.pb[i] != 0 || w.pe[i] != 0) return false;
  return true;
}

// Y[n, g*Mg + m, p] = sum_k W[g*Mg + m, k] * col_g[k, p] for every image and
// group, where `gemm(m, n, k, a, b, c)` computes the row-major C = A * B.
template <typename T, typename Gemm>
void conv_by_gemm(const T* x, const T* wt, const ConvShape& cs, T* y, Gemm gemm) {
  const bool pointwise = is_pointwise(cs.w);
  // Left uninitialised (im2col writes every element): zeroing it would be a
  // pass over a buffer that can be many times the output's size.
  const memory::Scratch<T> col(pointwise ? 0 : static_cast<size_t>(cs.K * cs.P));
  for (int64_t n = 0; n < cs.N; ++n)
    for (int64_t g = 0; g < cs.group; ++g) {
      T* yg = y + (n * cs.M + g * cs.Mg) * cs.P;
      if (cs.P == 0 || cs.Mg == 0) continue;
      if (cs.K == 0) {
        std::fill(yg, yg + cs.Mg * cs.P, T{});
        continue;
      }
      const T* xg = x + (n * cs.C + g * cs.Cg) * cs.w.in_size();
      if (!pointwise) im2col(xg, cs.Cg, cs.w, col.get());
      gemm(cs.Mg, cs.P, cs.K, wt + g * cs.Mg * cs.K, pointwise ? xg : col.get(), yg);
    }
}

}  // namespace epprof::rt::kernels
