// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12..17):
// both gather -input[n, target[n, d...], d...] * weight[target], then reduce
// (none, sum, or the weighted mean).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/softmax.h"

namespace epprof::rt::kernels {

namespace {

enum class Reduction { None, Sum, Mean };

struct LossAttrs {
  Reduction reduction = Reduction::Mean;
  std::optional<int64_t> ignore_index;
  std::string what;
};

LossAttrs loss_attrs(const Node& node) {
  LossAttrs a;
  a.what = node.describe();
  const std::string r = node.attr_string("reduction", "mean");
  if (r == "none") a.reduction = Reduction::None;
  else if (r == "sum") a.reduction = Reduction::Sum;
  else if (r == "mean") a.reduction = Reduction::Mean;
  else fail(a.what + ": reduction must be 'none', 'sum' or 'mean', got '" + r + "'");
  if (node.has_attr("ignore_index")) a.ignore_index = node.attr_int("ignore_index", 0);
  return a;
}

// Checks input [N, C, d1..dk] against target [N, d1..dk] and weight [C];
// returns C.
int64_t check_loss_shapes(const LossAttrs& a, const Tensor& input, const Tensor& target, const Tensor* weight) {
  if (input.rank() < 2) fail(a.what + ": input must have rank >= 2 ([N, C, ...]), got " + input.description());
  if (target.dtype() != DataType::Int64 && target.dtype() != DataType::Int32)
    fail(a.what + ": target must be int32 or int64, got " + target.description());
  Shape expected = input.shape();
  expected.erase(expected.begin() + 1);
  if (target.shape() != expected)
    fail(a.what + ": target " + target.description() + " does not match input " + input.description() +
         " (expected shape " + shape_to_string(expected) + ")");
  const int64_t C = input.dim(1);
  if (weight && (weight->dtype() != input.dtype() || weight->shape() != Shape{C}))
    fail(a.what + ": weight must be " + type_name(input.dtype()) + "[" + std::to_string(C) + "], got " +
         weight->description());
  return C;
}

// The loss of log-probabilities `logp` ([N, C, D] flattened) against `target`.
template <typename T>
Tensor nll(const LossAttrs& a, const T* logp, const Shape& input_shape, const Tensor& target, const Tensor* weight) {
  const int64_t N = input_shape[0], C = input_shape[1];
  const int64_t D = N * C != 0 ? shape_size(input_shape) / (N * C) : 0;
  const std::vector<int64_t> t = to_int64s(target);
  const T* w = weight ? weight->data<T>() : nullptr;
  Shape out_shape = input_shape;
  out_shape.erase(out_shape.begin() + 1);
  Tensor loss(data_type_of<T>(), out_shape);
  T* l = loss.mutable_data<T>();
  double weight_sum = 0.0, loss_sum = 0.0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t k = n * D + d, c = t[static_cast<size_t>(k)];
      if (a.ignore_index && c == *a.ignore_index) continue;  // loss 0, weight 0
      if (c < 0 || c >= C)
        fail(a.what + ": target value " + std::to_string(c) + " is outside [0, " + std::to_string(C) + ")");
      const T wc = w ? w[c] : T(1);
      l[k] = -logp[(n * C + c) * D + d] * wc;
      weight_sum += static_cast<double>(wc);
      loss_sum += static_cast<double>(l[k]);
    }
  if (a.reduction == Reduction::None) return loss;
  // Mean divides by the total weight of the counted elements (numpy: 0/0 = NaN when all are ignored).
  const double v = a.reduction == Reduction::Sum ? loss_sum : loss_sum / weight_sum;
  return Tensor::from_vector<T>({}, {static_cast<T>(v)});
}

template <typename F>
void dispatch_loss_type(const LossAttrs& a, const Tensor& input, F&& f) {
  if (input.dtype() == DataType::Float) f(float{});
  else if (input.dtype() == DataType::Double) f(double{});
  else fail(a.what + ": input must be float or double, got " + input.description());
}

std::unique_ptr<Kernel> make_nll_loss(const Node& node) {
  const LossAttrs a = loss_attrs(node);
  return make_kernel([a](KernelContext& ctx) {
    const Tensor& input = ctx.input(0);
    const Tensor& target = ctx.input(1);
    const Tensor* weight = ctx.optional_input(2);
    check_loss_shapes(a, input, target, weight);
    dispatch_loss_type(a, input, [&](auto tag) {
      using T = decltype(tag);
      ctx.outputs[0] = nll<T>(a, input.data<T>(), input.shape(), target, weight);
    });
  });
}

std::unique_ptr<Kernel> make_softmax_cross_entropy(const Node& node) {
  const LossAttrs a = loss_attrs(node);
  return make_kernel([a](KernelContext& ctx) {
    const Tensor& scores = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    const Tensor* weight = ctx.optional_input(2);
    const int64_t C = check_loss_shapes(a, scores, labels, weight);
    dispatch_loss_type(a, scores, [&](auto tag) {
      using T = decltype(tag);
      // log_softmax over the class axis (1), then the NLL of that.
      Tensor log_prob(scores.dtype(), scores.shape());
      const int64_t N = scores.dim(0);
      const int64_t inner = N * C != 0 ? scores.size() / (N * C) : 0;
      softmax_along(scores.data<T>(), log_prob.mutable_data<T>(), N, C, inner, true);
      ctx.outputs[0] = nll<T>(a, log_prob.data<T>(), scores.shape(), labels, weight);
      if (ctx.outputs.size() > 1) ctx.outputs[1] = std::move(log_prob);
    });
  });
}

}  // namespace

void register_loss(std::vector<KernelDef>& t) {
  t.push_back({"NegativeLogLikelihoodLoss", 12, 17, make_nll_loss});
  t.push_back({"SoftmaxCrossEntropyLoss", 12, 17, make_softmax_cross_entropy});
}

}  // namespace epprof::rt::kernels
