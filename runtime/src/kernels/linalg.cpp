// MatMul and Gemm on OpenBLAS sgemm.
#include <cblas.h>

#include <algorithm>

#include "kernels/broadcast.h"
#include "kernels/common.h"
#include "kernels/matmul_util.h"

namespace epprof::rt::kernels {

namespace {

// C[M,N] = A[M,K] * B[K,N] (row-major, contiguous), overwriting C.
void sgemm_nn(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(k), b, static_cast<blasint>(n), 0.0f, c,
              static_cast<blasint>(n));
}

void matmul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_float(a, "MatMul input A");
  require_float(b, "MatMul input B");
  const MatMulShape ms = resolve_matmul(a.shape(), b.shape(), "MatMul");
  Tensor out(DataType::Float, ms.out_shape);
  const int64_t mk = ms.m * ms.k, kn = ms.k * ms.n, mn = ms.m * ms.n;
  for (size_t bi = 0; bi < ms.a_index.size(); ++bi)
    sgemm_nn(ms.m, ms.n, ms.k, a.data<float>() + ms.a_index[bi] * mk, b.data<float>() + ms.b_index[bi] * kn,
             out.mutable_data<float>() + static_cast<int64_t>(bi) * mn);
  ctx.outputs[0] = std::move(out);
}

std::unique_ptr<Kernel> make_matmul(const Node&) { return make_kernel(matmul); }

std::unique_ptr<Kernel> make_gemm(const Node& node) {
  const float alpha = node.attr_float("alpha", 1.0f);
  const float beta = node.attr_float("beta", 1.0f);
  const bool trans_a = node.attr_int("transA", 0) != 0;
  const bool trans_b = node.attr_int("transB", 0) != 0;
  // Before opset 7, C broadcasts only when the `broadcast` attribute says so.
  const bool exact_c = node.opset < 7 && node.attr_int("broadcast", 0) == 0;
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* c = ctx.optional_input(2);
    require_float(a, "Gemm input A");
    require_float(b, "Gemm input B");
    if (a.rank() != 2 || b.rank() != 2) fail("Gemm inputs must be 2-D: " + a.description() + ", " + b.description());
    const int64_t m = trans_a ? a.dim(1) : a.dim(0), k = trans_a ? a.dim(0) : a.dim(1);
    const int64_t kb = trans_b ? b.dim(1) : b.dim(0), n = trans_b ? b.dim(0) : b.dim(1);
    if (k != kb) fail("Gemm inner dimensions differ: " + a.description() + " x " + b.description());
    Tensor out(DataType::Float, {m, n});
    float* y = out.mutable_data<float>();
    float gemm_beta = 0.0f;
    if (c && beta != 0.0f) {
      require_float(*c, "Gemm input C");
      const Shape so{m, n};
      if (exact_c ? c->shape() != so : broadcast_shapes(c->shape(), so) != so)
        fail("Gemm input C " + c->description() + (exact_c ? " is not" : " does not broadcast to") + " [M,N] = " +
             shape_to_string(so));
      const float zero = 0.0f;
      broadcast_binary(c->data<float>(), c->shape(), &zero, Shape{}, y, so, [beta](float cv, float) { return beta * cv; });
      gemm_beta = 1.0f;
    }
    if (m == 0 || n == 0 || k == 0) {
      ctx.outputs[0] = std::move(out);
      return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a.data<float>(),
                static_cast<blasint>(a.dim(1)), b.data<float>(), static_cast<blasint>(b.dim(1)), gemm_beta, y,
                static_cast<blasint>(n));
    ctx.outputs[0] = std::move(out);
  });
}

}  // namespace

void register_linalg(std::vector<KernelDef>& t) {
  t.push_back({"MatMul", 1, 17, make_matmul});
  t.push_back({"Gemm", 1, 17, make_gemm});
}

}  // namespace epprof::rt::kernels
