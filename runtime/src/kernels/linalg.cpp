// MatMul (float, double and 32/64-bit integers) and Gemm (float), on the
// runtime's sgemm or OpenBLAS (matmul_util.h), a constant float weight
// packed once when the session is created.
#include <cblas.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/common.h"
#include "kernels/matmul_util.h"

namespace epprof::rt::kernels {

namespace {

// C[M,N] = A[M,K] * B[K,N] (row-major, contiguous), overwriting C: OpenBLAS
// for the float types (matmul_util.h), a plain loop for the integer ones.
using kernels::gemm_nn;
// Integers wrap around on overflow (computed unsigned: no signed-overflow UB).
template <typename T>
void gemm_nn(int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  using U = std::make_unsigned_t<T>;
  std::vector<U> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), U{0});
    for (int64_t p = 0; p < k; ++p) {
      const U av = static_cast<U>(a[i * k + p]);
      const T* bp = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] += static_cast<U>(av * static_cast<U>(bp[j]));
    }
    for (int64_t j = 0; j < n; ++j) c[i * n + j] = static_cast<T>(row[static_cast<size_t>(j)]);
  }
}

template <typename T>
Tensor typed_matmul(const Tensor& a, const Tensor& b) {
  const MatMulShape ms = resolve_matmul(a.shape(), b.shape(), "MatMul");
  Tensor out(a.dtype(), ms.out_shape);
  if (ms.m == 0 || ms.n == 0 || ms.k == 0) return out;  // zeros
  const int64_t mk = ms.m * ms.k, kn = ms.k * ms.n, mn = ms.m * ms.n, batches = int64_t(ms.a_index.size());
  const auto products = [&](int64_t, int64_t b0, int64_t b1) {
    for (int64_t bi = b0; bi < b1; ++bi)
      gemm_nn(ms.m, ms.n, ms.k, a.data<T>() + ms.a_index[size_t(bi)] * mk, b.data<T>() + ms.b_index[size_t(bi)] * kn,
              out.mutable_data<T>() + bi * mn);
  };
  // Enough products for every intra-op thread: a range of them each (one
  // split product would re-pack its shared operand in every part); else one
  // after another, each large one split (blas_gemm).
  if (batches >= detail::intra_op_threads() && batches * mn * ms.k >= detail::kMinSplitMacs)
    detail::parallel_for_ranges(batches, detail::intra_op_ranges(batches, 1), products);
  else
    products(0, 0, batches);
  return out;
}

void matmul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype())
    fail("MatMul inputs must have one type, got " + a.description() + " and " + b.description());
  switch (a.dtype()) {
    case DataType::Float: ctx.outputs[0] = typed_matmul<float>(a, b); break;
    case DataType::Double: ctx.outputs[0] = typed_matmul<double>(a, b); break;
    case DataType::Int32: ctx.outputs[0] = typed_matmul<int32_t>(a, b); break;
    case DataType::Int64: ctx.outputs[0] = typed_matmul<int64_t>(a, b); break;
    case DataType::Uint32: ctx.outputs[0] = typed_matmul<uint32_t>(a, b); break;
    case DataType::Uint64: ctx.outputs[0] = typed_matmul<uint64_t>(a, b); break;
    default: fail("MatMul inputs must be float, double, int32, int64, uint32 or uint64, got " + a.description());
  }
}

// A constant weight B packed once (PackedWeight), or empty; what prepare()
// finds in the node's input 1.
PackedWeight pack_weight(const std::vector<const Tensor*>& constants, bool trans_b) noexcept {
  if (constants.size() < 2 || !constants[1]) return {};
  try {
    return PackedWeight(*constants[1], trans_b);
  } catch (...) {  // std::bad_alloc: B is packed on every call, as before
    return {};
  }
}

// MatMul; a float product with a constant 2-D B is one gemm of all of A's
// rows (every batch's) against B packed once.
class MatMulKernel final : public Kernel {
 public:
  void prepare(const std::vector<const Tensor*>& constants) noexcept override {
    weight_ = pack_weight(constants, false);
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() == DataType::Float && a.rank() >= 2 && weight_.packed_from(b)) {
      const MatMulShape ms = resolve_matmul(a.shape(), b.shape(), "MatMul");
      const int64_t rows = ms.k > 0 ? a.size() / ms.k : 0;
      if (ms.n > 0 && weight_.takes(rows)) {
        // Every element written: the gemm's beta is 0.
        Tensor out = Tensor::uninitialized(DataType::Float, ms.out_shape);
        weight_.gemm(false, rows, 1.0f, a.data<float>(), ms.k, 0.0f, out.mutable_data<float>(), ms.n);
        ctx.outputs[0] = std::move(out);
        return;
      }
    }
    matmul(ctx);
  }

 private:
  PackedWeight weight_;
};

std::unique_ptr<Kernel> make_matmul(const Node&) { return std::make_unique<MatMulKernel>(); }

// Gemm, float; a constant B is packed once.
class GemmKernel final : public Kernel {
 public:
  explicit GemmKernel(const Node& node)
      : alpha_(node.attr_float("alpha", 1.0f)),
        beta_(node.attr_float("beta", 1.0f)),
        trans_a_(node.attr_int("transA", 0) != 0),
        trans_b_(node.attr_int("transB", 0) != 0),
        // Before opset 7, C broadcasts only when the `broadcast` attribute says so.
        exact_c_(node.opset < 7 && node.attr_int("broadcast", 0) == 0) {}

  void prepare(const std::vector<const Tensor*>& constants) noexcept override {
    weight_ = pack_weight(constants, trans_b_);
  }
  void compute(KernelContext& ctx) const override;

 private:
  const float alpha_, beta_;
  const bool trans_a_, trans_b_, exact_c_;
  PackedWeight weight_;
};

void GemmKernel::compute(KernelContext& ctx) const {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor* c = ctx.optional_input(2);
  require_float(a, "Gemm input A");
  require_float(b, "Gemm input B");
  if (a.rank() != 2 || b.rank() != 2) fail("Gemm inputs must be 2-D: " + a.description() + ", " + b.description());
  const int64_t m = trans_a_ ? a.dim(1) : a.dim(0), k = trans_a_ ? a.dim(0) : a.dim(1);
  const int64_t kb = trans_b_ ? b.dim(1) : b.dim(0), n = trans_b_ ? b.dim(0) : b.dim(1);
  if (k != kb) fail("Gemm inner dimensions differ: " + a.description() + " x " + b.description());
  Tensor out(DataType::Float, {m, n});
  float* y = out.mutable_data<float>();
  float gemm_beta = 0.0f;
  if (c && beta_ != 0.0f) {
    require_float(*c, "Gemm input C");
    const Shape so{m, n};
    if (exact_c_ ? c->shape() != so : broadcast_shapes(c->shape(), so) != so)
      fail("Gemm input C " + c->description() + (exact_c_ ? " is not" : " does not broadcast to") + " [M,N] = " +
           shape_to_string(so));
    const float zero = 0.0f;
    broadcast_binary(c->data<float>(), c->shape(), &zero, Shape{}, y, so,
                     [beta = beta_](float cv, float) { return beta * cv; });
    gemm_beta = 1.0f;
  }
  if (m == 0 || n == 0 || k == 0) {
    ctx.outputs[0] = std::move(out);
    return;
  }
  if (!weight_.packed_from(b) || !weight_.gemm(trans_a_, m, alpha_, a.data<float>(), a.dim(1), gemm_beta, y, n))
    blas_gemm(trans_a_, trans_b_, m, n, k, alpha_, a.data<float>(), a.dim(1), b.data<float>(), b.dim(1), gemm_beta, y,
              n);
  ctx.outputs[0] = std::move(out);
}

std::unique_ptr<Kernel> make_gemm(const Node& node) { return std::make_unique<GemmKernel>(node); }

}  // namespace

void register_linalg(std::vector<KernelDef>& t) {
  t.push_back({"MatMul", 1, 17, make_matmul});
  t.push_back({"Gemm", 1, 17, make_gemm});
}

}  // namespace epprof::rt::kernels
