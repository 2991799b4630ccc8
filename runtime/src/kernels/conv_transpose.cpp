// ConvTranspose (1-D to 3-D spatial, groups, dilations, output_padding,
// output_shape, auto_pad): gemm into columns, then col2im.
#include <vector>

#include "kernels/common.h"
#include "kernels/conv_geometry.h"
#include "kernels/matmul_util.h"

namespace epprof::rt::kernels {

namespace {

struct TransposeAttrs {
  WindowAttrs win;
  std::vector<int64_t> output_padding, output_shape;
  int64_t group = 1;
};

// Output geometry: `w.in` is X's spatial size, `w.out` Y's, and `w.pb` the
// leading padding cropped off the full ("VALID") transposed convolution.
Window resolve_transpose(const TransposeAttrs& a, const Shape& x, const Shape& wt) {
  const size_t n = x.size() - 2;
  auto check_len = [&](const std::vector<int64_t>& v, size_t len, const char* what) {
    if (!v.empty() && v.size() != len)
      fail(std::string("ConvTranspose ") + what + " has " + std::to_string(v.size()) + " values, expected " +
           std::to_string(len));
  };
  check_len(a.win.strides, n, "strides");
  check_len(a.win.dilations, n, "dilations");
  check_len(a.win.pads, 2 * n, "pads");
  check_len(a.output_padding, n, "output_padding");
  // output_shape may also be given in full (N x C x spatial)
  std::vector<int64_t> out_shape = a.output_shape;
  if (out_shape.size() == n + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  check_len(out_shape, n, "output_shape");
  Window w = window_dims(a.win, x, std::vector<int64_t>(wt.begin() + 2, wt.end()));
  for (size_t j = 0; j < n; ++j) {
    const size_t i = 3 - n + j;
    if (w.s[i] <= 0 || w.d[i] <= 0) fail("ConvTranspose strides and dilations must be positive");
    const int64_t adj = a.output_padding.empty() ? 0 : a.output_padding[j];
    if (adj < 0) fail("ConvTranspose output_padding must be non-negative, got " + std::to_string(adj));
    const int64_t full = (w.in[i] - 1) * w.s[i] + adj + (w.k[i] - 1) * w.d[i] + 1;
    if (!out_shape.empty()) {
      // Pad (crop) the full output down to the requested size; a larger
      // request leaves zeros (bias) at the end, like output_padding.
      w.out[i] = out_shape[j];
      if (w.out[i] < 0) fail("ConvTranspose output_shape must be non-negative");
      const int64_t total = std::max<int64_t>(0, full - w.out[i]);
      w.pb[i] = a.win.auto_pad == "SAME_UPPER" ? total - total / 2 : total / 2;
      continue;
    }
    if (a.win.auto_pad == "SAME_UPPER" || a.win.auto_pad == "SAME_LOWER") {
      // pad until the output is in * stride
      const int64_t total = std::max<int64_t>(0, full - w.in[i] * w.s[i]);
      w.pb[i] = a.win.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pe[i] = total - w.pb[i];
    } else if (a.win.auto_pad == "NOTSET" && !a.win.pads.empty()) {
      w.pb[i] = a.win.pads[j];
      w.pe[i] = a.win.pads[j + n];
      if (w.pb[i] < 0 || w.pe[i] < 0) fail("ConvTranspose pads must be non-negative");
    }
    w.out[i] = full - w.pb[i] - w.pe[i];
    if (w.out[i] < 0) fail("ConvTranspose pads are larger than the output of input " + shape_to_string(x));
  }
  return w;
}

// y[m, o] += col[(m*K + kk), p] for the output position o that input position
// p and kernel offset kk reach (K = kernel size, P = input size).
void col2im(const float* col, int64_t channels, const Window& w, float* y) {
  const float* src = col;
  for (int64_t m = 0; m < channels; ++m) {
    float* ym = y + m * w.out_size();
    for (int64_t kd = 0; kd < w.k[0]; ++kd)
      for (int64_t kh = 0; kh < w.k[1]; ++kh)
        for (int64_t kw = 0; kw < w.k[2]; ++kw)
          for (int64_t id = 0; id < w.in[0]; ++id) {
            const int64_t od = id * w.s[0] - w.pb[0] + kd * w.d[0];
            for (int64_t ih = 0; ih < w.in[1]; ++ih, src += w.in[2]) {
              const int64_t oh = ih * w.s[1] - w.pb[1] + kh * w.d[1];
              if (od < 0 || od >= w.out[0] || oh < 0 || oh >= w.out[1]) continue;
              float* row = ym + (od * w.out[1] + oh) * w.out[2];
              for (int64_t iw = 0; iw < w.in[2]; ++iw) {
                const int64_t ow = iw * w.s[2] - w.pb[2] + kw * w.d[2];
                if (ow >= 0 && ow < w.out[2]) row[ow] += src[iw];
              }
            }
          }
  }
}

std::unique_ptr<Kernel> make_conv_transpose(const Node& node) {
  TransposeAttrs a;
  a.win = WindowAttrs::from_node(node);
  a.output_padding = node.attr_ints("output_padding");
  a.output_shape = node.attr_ints("output_shape");
  a.group = node.attr_int("group", 1);
  if (a.group <= 0) fail(node.describe() + ": group must be positive, got " + std::to_string(a.group));
  return make_kernel([a](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& wt = ctx.input(1);
    const Tensor* bias = ctx.optional_input(2);
    require_float(x, "ConvTranspose input X");
    require_float(wt, "ConvTranspose weight W");
    if (x.rank() < 3 || x.rank() > 5 || wt.rank() != x.rank())
      fail("ConvTranspose expects X N x C x D1 [x D2 [x D3]] and W of the same rank, got " + x.description() +
           " and " + wt.description());
    const Shape kernel(wt.shape().begin() + 2, wt.shape().end());
    if (!a.win.kernel.empty() && a.win.kernel != kernel)
      fail("ConvTranspose kernel_shape " + shape_to_string(a.win.kernel) + " disagrees with weight " +
           wt.description());
    const int64_t N = x.dim(0), C = x.dim(1), group = a.group;
    if (C % group || wt.dim(0) != C)
      fail("ConvTranspose weight " + wt.description() + " must be C x M/group x kernel for input " + x.description() +
           " and group " + std::to_string(group));
    const int64_t Cg = C / group, Mg = wt.dim(1), M = Mg * group;
    if (bias && (bias->dtype() != DataType::Float || bias->rank() != 1 || bias->size() != M))
      fail("ConvTranspose bias B must be float[" + std::to_string(M) + "], got " + bias->description());
    const Window w = resolve_transpose(a, x.shape(), wt.shape());
    Shape out_shape{N, M};
    for (int64_t d : w.out_spatial()) out_shape.push_back(d);
    Tensor out(DataType::Float, out_shape);
    float* y = out.mutable_data<float>();
    const int64_t P = w.in_size(), Kc = Mg * w.k_size(), Q = w.out_size();
    const memory::Scratch<float> col(static_cast<size_t>(Kc * P));  // each gemm writes it whole
    if (P > 0 && Kc > 0 && Cg > 0)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t g = 0; g < group; ++g) {
          // col[Mg*K, P] = W_g^T * X_g, W_g being Cg x (Mg*K)
          blas_gemm(true, false, Kc, P, Cg, 1.0f, wt.data<float>() + g * Cg * Kc, Kc,
                    x.data<float>() + (n * C + g * Cg) * P, P, 0.0f, col.get(), P);
          col2im(col.get(), Mg, w, y + (n * M + g * Mg) * Q);
        }
    if (bias)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t m = 0; m < M; ++m) {
          float* row = y + (n * M + m) * Q;
          const float b = bias->data<float>()[m];
          for (int64_t q = 0; q < Q; ++q) row[q] += b;
        }
    ctx.outputs[0] = std::move(out);
  });
}

}  // namespace

void register_conv_transpose(std::vector<KernelDef>& t) { t.push_back({"ConvTranspose", 1, 17, make_conv_transpose}); }

}  // namespace epprof::rt::kernels
