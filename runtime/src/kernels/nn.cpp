// Normalisation and activation ops over an axis: BatchNormalization,
// LayerNormalization, Softmax and LogSoftmax.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/common.h"
#include "kernels/reduce_util.h"
#include "kernels/simd.h"
#include "kernels/softmax.h"

namespace epprof::rt::kernels {

namespace {

// y = x * a[c] + b[c] over an [N, C, S] tensor, in double like the
// statistics.
template <typename T>
EPPROF_SIMD_CLONES void scale_shift_channels(const T* x, T* y, int64_t N, int64_t C, int64_t S, const double* a,
                                             const double* b) noexcept {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const T* xp = x + (n * C + c) * S;
      T* yp = y + (n * C + c) * S;
      for (int64_t s = 0; s < S; ++s) yp[s] = static_cast<T>(xp[s] * a[c] + b[c]);
    }
}

// Layer normalisation of `outer` rows of `inner` elements: mean and variance
// in double, then (x - mean) * inv * scale + bias. `bias` may be null.
template <typename T>
EPPROF_SIMD_CLONES void layer_norm_rows(const T* x, T* y, int64_t outer, int64_t inner, const T* scale,
                                        const T* bias, double eps, float* means, float* invs) noexcept {
  for (int64_t o = 0; o < outer; ++o) {
    const T* xr = x + o * inner;
    T* yr = y + o * inner;
    // Both sums over 8 lanes (sum_in_lanes), so that they vectorise: in one
    // chain each, the bundled transformer's LayerNormalizations ([1,128,256])
    // took four times ONNX Runtime's time.
    const double mean =
        sum_in_lanes(inner, [xr](int64_t k) { return static_cast<double>(xr[k]); }) / static_cast<double>(inner);
    const double sq = sum_in_lanes(inner, [xr, mean](int64_t k) { return (xr[k] - mean) * (xr[k] - mean); });
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
    if (bias)
      for (int64_t i = 0; i < inner; ++i) yr[i] = static_cast<T>((xr[i] - mean) * inv * scale[i] + bias[i]);
    else
      for (int64_t i = 0; i < inner; ++i) yr[i] = static_cast<T>((xr[i] - mean) * inv * scale[i] + T(0));
    means[o] = static_cast<float>(mean);
    invs[o] = static_cast<float>(inv);
  }
}

// BatchNormalization, opsets 6..17. Inference: y = scale * (x - mean) /
// sqrt(var + epsilon) + B per channel. Training (training_mode=1, opset 14+):
// normalise with the batch's own mean and (population) variance and output
// the updated running statistics, as ONNX's reference does.
std::unique_ptr<Kernel> make_batch_norm(const Node& node) {
  const float eps = node.attr_float("epsilon", 1e-5f);
  const float momentum = node.attr_float("momentum", 0.9f);
  const bool training = node.opset >= 14 && node.attr_int("training_mode", 0) != 0;
  if (node.opset < 9 && node.attr_int("spatial", 1) != 1) fail(node.describe() + ": spatial=0 is not supported");
  for (size_t k = 1; k < node.outputs.size(); ++k)
    if (node.has_output(k) && !training)
      fail(node.describe() + (node.opset < 14 ? ": the training outputs of opsets before 14 are not supported"
                                              : ": outputs running_mean/running_var need training_mode=1"));
  const std::string what = node.describe();
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const ChannelShape cs = channel_shape(x, what, "input X");
    const int64_t N = cs.N, C = cs.C, S = cs.S;
    dispatch_float(x, what, [&](auto tag) {
      using T = decltype(tag);
      const char* names[] = {"scale", "B", "input_mean", "input_var"};
      const T* p[4];
      for (size_t i = 0; i < 4; ++i) p[i] = channel_param<T>(ctx, i + 1, x, C, what, names[i]);
      const T* xd = x.data<T>();
      std::vector<double> mean(p[2], p[2] + C), var(p[3], p[3] + C);
      if (training) {
        const double count = static_cast<double>(N * S);
        for (int64_t c = 0; c < C; ++c) {
          double sum = 0, sq = 0;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t s = 0; s < S; ++s) sum += static_cast<double>(xd[(n * C + c) * S + s]);
          const double m = count > 0 ? sum / count : 0.0;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t s = 0; s < S; ++s) sq += (xd[(n * C + c) * S + s] - m) * (xd[(n * C + c) * S + s] - m);
          mean[static_cast<size_t>(c)] = m;
          var[static_cast<size_t>(c)] = count > 0 ? sq / count : 0.0;
        }
      }
      Tensor out = Tensor::uninitialized(x.dtype(), x.shape());  // scale_shift_channels writes it all
      std::vector<double> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) {
        const size_t ci = static_cast<size_t>(c);
        a[ci] = static_cast<double>(p[0][c]) / std::sqrt(var[ci] + eps);
        b[ci] = static_cast<double>(p[1][c]) - mean[ci] * a[ci];
      }
      scale_shift_channels(xd, out.mutable_data<T>(), N, C, S, a.data(), b.data());
      ctx.outputs[0] = std::move(out);
      if (training) {
        for (size_t k = 1; k < 3 && k < ctx.outputs.size(); ++k) {
          const T* running = p[k + 1];
          const std::vector<double>& cur = k == 1 ? mean : var;
          Tensor r(x.dtype(), {C});
          for (int64_t c = 0; c < C; ++c)
            r.mutable_data<T>()[c] = static_cast<T>(running[c] * momentum + cur[static_cast<size_t>(c)] * (1.0 - momentum));
          ctx.outputs[k] = std::move(r);
        }
      }
    });
  });
}

// Broadcast `t` (unidirectionally) to `shape` and return the values.
template <typename T>
std::vector<T> expand_to(const std::string& what, const Tensor& t, DataType type, const Shape& shape) {
  if (t.dtype() != type) fail(what + " must be " + type_name(type) + ", got " + t.description());
  if (broadcast_shapes(t.shape(), shape) != shape)
    fail(what + " " + t.description() + " does not broadcast to " + shape_to_string(shape));
  std::vector<T> out(static_cast<size_t>(shape_size(shape)));
  const T zero = T(0);
  broadcast_binary(t.data<T>(), t.shape(), &zero, Shape{}, out.data(), shape, [](T v, T) { return v; });
  return out;
}

// LayerNormalization (17): normalise over the dims from `axis` on. The
// optional Mean and InvStdDev outputs have the stash type (float), with the
// input's leading dims and 1 for the normalised ones.
std::unique_ptr<Kernel> make_layer_norm(const Node& node) {
  const int64_t axis_attr = node.attr_int("axis", -1);
  const float eps = node.attr_float("epsilon", 1e-5f);
  const int64_t stash = node.attr_int("stash_type", 1);
  if (stash != static_cast<int64_t>(DataType::Float))
    fail(node.describe() + ": stash_type must be 1 (float), got " + std::to_string(stash));
  const std::string what = node.describe();
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(axis_attr, rank);
    const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
    const int64_t inner = shape_size(norm_shape), outer = inner ? x.size() / inner : 0;
    Shape stat_shape(x.shape().begin(), x.shape().begin() + axis);
    stat_shape.resize(static_cast<size_t>(rank), 1);
    Tensor mean_t(DataType::Float, stat_shape), inv_t(DataType::Float, stat_shape);
    dispatch_float(x, what, [&](auto tag) {
      using T = decltype(tag);
      const std::vector<T> scale = expand_to<T>(what + ": input Scale", ctx.input(1), x.dtype(), norm_shape);
      std::vector<T> bias;
      if (const Tensor* b = ctx.optional_input(2)) bias = expand_to<T>(what + ": input B", *b, x.dtype(), norm_shape);
      Tensor out = Tensor::uninitialized(x.dtype(), x.shape());  // every row is written
      layer_norm_rows(x.data<T>(), out.mutable_data<T>(), outer, inner, scale.data(),
                      bias.empty() ? nullptr : bias.data(), static_cast<double>(eps), mean_t.mutable_data<float>(),
                      inv_t.mutable_data<float>());
      ctx.outputs[0] = std::move(out);
    });
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
    // softmax_along writes every element (none when the axis is empty).
    Tensor out = Tensor::uninitialized(x.dtype(), x.shape());
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
