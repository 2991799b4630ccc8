// MatMul and Gemm on OpenBLAS sgemm.
#include <cblas.h>

#include <algorithm>

#include "kernels/broadcast.h"
#include "kernels/common.h"

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
  if (a.rank() == 0 || b.rank() == 0) fail("MatMul inputs must have rank >= 1");
  Shape sa = a.shape(), sb = b.shape();
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k)
    fail("MatMul inner dimensions differ: " + a.description() + " x " + b.description());
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const Shape batch = broadcast_shapes(batch_a, batch_b);
  Shape out_shape = batch;
  if (!a_vec) out_shape.push_back(m);
  if (!b_vec) out_shape.push_back(n);
  Tensor out(DataType::Float, out_shape);
  const int64_t nb = shape_size(batch);
  const auto stra = broadcast_strides(batch_a, batch), strb = broadcast_strides(batch_b, batch);
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t oa = 0, ob = 0, rem = bi;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t i = rem % batch[d];
      rem /= batch[d];
      oa += i * stra[d];
      ob += i * strb[d];
    }
    sgemm_nn(m, n, k, a.data<float>() + oa * m * k, b.data<float>() + ob * k * n,
             out.mutable_data<float>() + bi * m * n);
  }
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
