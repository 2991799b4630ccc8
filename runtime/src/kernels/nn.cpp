// Normalisation and activation ops over an axis: BatchNormalization,
// LayerNormalization, Softmax and LogSoftmax.
#include <cmath>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/common.h"
#include "kernels/softmax.h"

namespace epprof::rt::kernels {

namespace {

std::unique_ptr<Kernel> make_batch_norm(const Node& node) {
  const float eps = node.attr_float("epsilon", 1e-5f);
  const float momentum = node.attr_float("momentum", 0.9f);
  const bool training = node.attr_int("training_mode", 0) != 0;
  if (node.opset < 9 && node.attr_int("spatial", 1) != 1) fail(node.describe() + ": spatial=0 is not supported");
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    require_float(x, "BatchNormalization input X");
    if (x.rank() < 2) fail("BatchNormalization input must have rank >= 2, got " + x.description());
    const int64_t N = x.dim(0), C = x.dim(1), S = x.size() / std::max<int64_t>(1, N * C);
    std::vector<const float*> p(4);
    for (size_t i = 0; i < 4; ++i) {
      const Tensor& t = ctx.input(i + 1);
      if (t.dtype() != DataType::Float || t.size() != C)
        fail("BatchNormalization parameter " + std::to_string(i + 1) + " must be float[" + std::to_string(C) +
             "], got " + t.description());
      p[i] = t.data<float>();
    }
    std::vector<float> mean(p[2], p[2] + C), var(p[3], p[3] + C);
    if (training) {
      const double count = static_cast<double>(N * S);
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0, sq = 0;
        for (int64_t n = 0; n < N; ++n) {
          const float* xc = x.data<float>() + (n * C + c) * S;
          for (int64_t s = 0; s < S; ++s) sum += xc[s];
        }
        const double m = count > 0 ? sum / count : 0.0;
        for (int64_t n = 0; n < N; ++n) {
          const float* xc = x.data<float>() + (n * C + c) * S;
          for (int64_t s = 0; s < S; ++s) sq += (xc[s] - m) * (xc[s] - m);
        }
        mean[static_cast<size_t>(c)] = static_cast<float>(m);
        var[static_cast<size_t>(c)] = static_cast<float>(count > 0 ? sq / count : 0.0);
      }
    }
    Tensor out(DataType::Float, x.shape());
    float* y = out.mutable_data<float>();
    for (int64_t c = 0; c < C; ++c) {
      const size_t ci = static_cast<size_t>(c);
      const float a = p[0][c] / std::sqrt(var[ci] + eps);
      const float b = p[1][c] - mean[ci] * a;
      for (int64_t n = 0; n < N; ++n) {
        const float* xc = x.data<float>() + (n * C + c) * S;
        float* yc = y + (n * C + c) * S;
        for (int64_t s = 0; s < S; ++s) yc[s] = xc[s] * a + b;
      }
    }
    ctx.outputs[0] = std::move(out);
    if (training) {
      for (size_t k = 1; k < 3 && k < ctx.outputs.size(); ++k) {
        const float* running = p[k + 1];
        const std::vector<float>& cur = k == 1 ? mean : var;
        Tensor r(DataType::Float, {C});
        for (int64_t c = 0; c < C; ++c)
          r.mutable_data<float>()[c] = running[c] * momentum + cur[static_cast<size_t>(c)] * (1.0f - momentum);
        ctx.outputs[k] = std::move(r);
      }
    }
  });
}

// Broadcast `t` (unidirectionally) to `shape` and return the values.
std::vector<float> expand_to(const Tensor& t, const Shape& shape, const char* what) {
  require_float(t, what);
  if (broadcast_shapes(t.shape(), shape) != shape)
    fail(std::string(what) + " " + t.description() + " does not broadcast to " + shape_to_string(shape));
  std::vector<float> out(static_cast<size_t>(shape_size(shape)));
  const float zero = 0.0f;
  broadcast_binary(t.data<float>(), t.shape(), &zero, Shape{}, out.data(), shape, [](float v, float) { return v; });
  return out;
}

std::unique_ptr<Kernel> make_layer_norm(const Node& node) {
  const int64_t axis_attr = node.attr_int("axis", -1);
  const float eps = node.attr_float("epsilon", 1e-5f);
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    require_float(x, "LayerNormalization input X");
    const int64_t rank = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(axis_attr, rank);
    const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
    const int64_t inner = shape_size(norm_shape), outer = inner ? x.size() / inner : 0;
    const std::vector<float> scale = expand_to(ctx.input(1), norm_shape, "LayerNormalization scale");
    std::vector<float> bias;
    if (const Tensor* b = ctx.optional_input(2)) bias = expand_to(*b, norm_shape, "LayerNormalization bias");
    Shape stat_shape(x.shape().begin(), x.shape().begin() + axis);
    stat_shape.resize(static_cast<size_t>(rank), 1);
    Tensor out(DataType::Float, x.shape()), mean_t(DataType::Float, stat_shape), inv_t(DataType::Float, stat_shape);
    for (int64_t o = 0; o < outer; ++o) {
      const float* xr = x.data<float>() + o * inner;
      float* yr = out.mutable_data<float>() + o * inner;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < inner; ++i) sum += xr[i];
      const float mean = static_cast<float>(sum / static_cast<double>(inner));
      for (int64_t i = 0; i < inner; ++i) sq += static_cast<double>(xr[i] - mean) * (xr[i] - mean);
      const float inv = 1.0f / std::sqrt(static_cast<float>(sq / static_cast<double>(inner)) + eps);
      for (int64_t i = 0; i < inner; ++i) {
        const size_t si = static_cast<size_t>(i);
        yr[i] = (xr[i] - mean) * inv * scale[si] + (bias.empty() ? 0.0f : bias[si]);
      }
      mean_t.mutable_data<float>()[o] = mean;
      inv_t.mutable_data<float>()[o] = inv;
    }
    ctx.outputs[0] = std::move(out);
    if (ctx.outputs.size() > 1) ctx.outputs[1] = std::move(mean_t);
    if (ctx.outputs.size() > 2) ctx.outputs[2] = std::move(inv_t);
  });
}

// Softmax and LogSoftmax. Before opset 13 the input is coerced to 2-D at
// `axis` (default 1) and normalised over the flattened trailing dims; from 13
// it is normalised along `axis` alone (default -1).
template <bool Log>
std::unique_ptr<Kernel> make_softmax(const Node& node) {
  const bool legacy = node.opset < 13;
  const int64_t axis_attr = node.attr_int("axis", legacy ? 1 : -1);
  const std::string what = node.describe();
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DataType::Float && x.dtype() != DataType::Double)
      fail(what + ": input must be float or double, got " + x.description());
    Tensor out(x.dtype(), x.shape());
    const int64_t rank = static_cast<int64_t>(x.rank());
    // A scalar is treated as [1]: its only element normalises to 1 (log: 0).
    const int64_t axis = normalize_axis(axis_attr, std::max<int64_t>(rank, 1));
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t v = x.dim(static_cast<size_t>(d));
      if (d < axis) outer *= v;
      else if (d == axis || legacy) n *= v;
      else inner *= v;
    }
    if (x.dtype() == DataType::Float)
      softmax_along(x.data<float>(), out.mutable_data<float>(), outer, n, inner, Log);
    else
      softmax_along(x.data<double>(), out.mutable_data<double>(), outer, n, inner, Log);
    ctx.outputs[0] = std::move(out);
  });
}

}  // namespace

void register_nn(std::vector<KernelDef>& t) {
  t.push_back({"BatchNormalization", 6, 17, make_batch_norm});
  t.push_back({"LayerNormalization", 17, 17, make_layer_norm});
  t.push_back({"Softmax", 1, 17, make_softmax<false>});
  t.push_back({"LogSoftmax", 1, 17, make_softmax<true>});
}

}  // namespace epprof::rt::kernels
