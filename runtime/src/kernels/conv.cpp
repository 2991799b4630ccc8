// Conv: im2col (1-D to 3-D spatial) + OpenBLAS sgemm, with groups.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "kernels/common.h"
#include "kernels/conv_geometry.h"

namespace epprof::rt::kernels {

namespace {

// col[(c*K + kk) * P + p] for one group's channels of one image.
void im2col(const float* x, int64_t channels, const Window& w, float* col) {
  const int64_t P = w.out_size();
  float* dst = col;
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * w.in_size();
    for (int64_t kd = 0; kd < w.k[0]; ++kd)
      for (int64_t kh = 0; kh < w.k[1]; ++kh)
        for (int64_t kw = 0; kw < w.k[2]; ++kw) {
          for (int64_t od = 0; od < w.out[0]; ++od) {
            const int64_t id = od * w.s[0] - w.pb[0] + kd * w.d[0];
            for (int64_t oh = 0; oh < w.out[1]; ++oh) {
              const int64_t ih = oh * w.s[1] - w.pb[1] + kh * w.d[1];
              float* row = dst + (od * w.out[1] + oh) * w.out[2];
              if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1]) {
                std::fill(row, row + w.out[2], 0.0f);
                continue;
              }
              const float* src = xc + (id * w.in[1] + ih) * w.in[2];
              for (int64_t ow = 0; ow < w.out[2]; ++ow) {
                const int64_t iw = ow * w.s[2] - w.pb[2] + kw * w.d[2];
                row[ow] = (iw >= 0 && iw < w.in[2]) ? src[iw] : 0.0f;
              }
            }
          }
          dst += P;
        }
  }
}

bool is_pointwise(const Window& w) {
  for (int i = 0; i < 3; ++i)
    if (w.k[i] != 1 || w.s[i] != 1 || w.pb[i] != 0 || w.pe[i] != 0) return false;
  return true;
}

std::unique_ptr<Kernel> make_conv(const Node& node) {
  const WindowAttrs attrs = WindowAttrs::from_node(node);
  const int64_t group = node.attr_int("group", 1);
  if (group <= 0) fail(node.describe() + ": group must be positive");
  return make_kernel([attrs, group](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& wt = ctx.input(1);
    const Tensor* bias = ctx.optional_input(2);
    require_float(x, "Conv input X");
    require_float(wt, "Conv weight W");
    if (wt.rank() != x.rank()) fail("Conv weight " + wt.description() + " does not match input " + x.description());
    const Shape kernel = attrs.kernel.empty() ? Shape(wt.shape().begin() + 2, wt.shape().end()) : attrs.kernel;
    const Window w = resolve_window(attrs, x.shape(), kernel);
    for (size_t j = 0; j < w.spatial; ++j)
      if (wt.dim(2 + j) != kernel[j]) fail("Conv kernel_shape disagrees with weight " + wt.description());
    const int64_t N = x.dim(0), C = x.dim(1), M = wt.dim(0);
    if (C % group || M % group || wt.dim(1) * group != C)
      fail("Conv channels do not match: input " + x.description() + ", weight " + wt.description() + ", group " +
           std::to_string(group));
    if (bias && (bias->dtype() != DataType::Float || bias->size() != M)) fail("Conv bias must be float[M]");
    const int64_t Cg = C / group, Mg = M / group, K = Cg * w.k_size(), P = w.out_size();
    Shape out_shape{N, M};
    for (int64_t d : w.out_spatial()) out_shape.push_back(d);
    Tensor out(DataType::Float, out_shape);
    float* y = out.mutable_data<float>();
    const bool pointwise = is_pointwise(w);
    std::vector<float> col(pointwise ? 0 : static_cast<size_t>(K * P));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < group; ++g) {
        const float* xg = x.data<float>() + (n * C + g * Cg) * w.in_size();
        const float* b = pointwise ? xg : col.data();
        if (!pointwise) im2col(xg, Cg, w, col.data());
        float* yg = y + (n * M + g * Mg) * P;
        if (P == 0 || Mg == 0) continue;
        if (K == 0) {
          std::fill(yg, yg + Mg * P, 0.0f);
          continue;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(Mg), static_cast<blasint>(P),
                    static_cast<blasint>(K), 1.0f, wt.data<float>() + g * Mg * K, static_cast<blasint>(K), b,
                    static_cast<blasint>(P), 0.0f, yg, static_cast<blasint>(P));
      }
    if (bias) {
      const float* bv = bias->data<float>();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t m = 0; m < M; ++m) {
          float* row = y + (n * M + m) * P;
          for (int64_t p = 0; p < P; ++p) row[p] += bv[m];
        }
    }
    ctx.outputs[0] = std::move(out);
  });
}

}  // namespace

void register_conv(std::vector<KernelDef>& t) { t.push_back({"Conv", 1, 17, make_conv}); }

}  // namespace epprof::rt::kernels
