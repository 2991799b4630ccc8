// Conv: im2col (1-D to 3-D spatial) + OpenBLAS gemm, with groups; float and double.
#include <cblas.h>

#include <vector>

#include "kernels/common.h"
#include "kernels/conv_geometry.h"
#include "kernels/matmul_util.h"

namespace epprof::rt::kernels {

namespace {

template <typename T>
Tensor conv(const Tensor& x, const Tensor& wt, const Tensor* bias, const WindowAttrs& attrs, int64_t group) {
  const ConvShape cs = resolve_conv(attrs, group, x.shape(), wt.shape(), "Conv");
  if (bias && (bias->dtype() != x.dtype() || bias->rank() != 1 || bias->size() != cs.M))
    fail("Conv bias B must be " + std::string(type_name(x.dtype())) + "[" + std::to_string(cs.M) + "], got " +
         bias->description());
  Tensor out(x.dtype(), cs.out_shape);
  T* y = out.mutable_data<T>();
  conv_by_gemm(x.data<T>(), wt.data<T>(), cs, y,
               [](int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) { gemm_nn(m, n, k, a, b, c); });
  if (bias) {
    const T* bv = bias->data<T>();
    for (int64_t n = 0; n < cs.N; ++n)
      for (int64_t m = 0; m < cs.M; ++m) {
        T* row = y + (n * cs.M + m) * cs.P;
        for (int64_t p = 0; p < cs.P; ++p) row[p] += bv[m];
      }
  }
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
