// InstanceNormalization, LRN and MeanVarianceNormalization (float and double).
// Statistics are accumulated in double.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/reduce_util.h"

namespace epprof::rt::kernels {

namespace {

// y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c], statistics per (n, c).
std::unique_ptr<Kernel> make_instance_norm(const Node& node) {
  const float eps = node.attr_float("epsilon", 1e-5f);
  if (!(eps >= 0.0f)) fail(node.describe() + ": epsilon must be >= 0, got " + std::to_string(eps));
  const std::string what = node.describe();
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const ChannelShape cs = channel_shape(x, what);
    const int64_t N = cs.N, C = cs.C, S = cs.S;
    dispatch_float(x, what, [&](auto tag) {
      using T = decltype(tag);
      const T* scale = channel_param<T>(ctx, 1, x, C, what, "scale");
      const T* bias = channel_param<T>(ctx, 2, x, C, what, "B");
      Tensor out(x.dtype(), x.shape());
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const T* xc = x.data<T>() + (n * C + c) * S;
          T* yc = out.mutable_data<T>() + (n * C + c) * S;
          double sum = 0.0, sq = 0.0;
          for (int64_t s = 0; s < S; ++s) sum += static_cast<double>(xc[s]);
          const double mean = sum / static_cast<double>(S);
          for (int64_t s = 0; s < S; ++s) sq += (xc[s] - mean) * (xc[s] - mean);
          const double a = static_cast<double>(scale[c]) / std::sqrt(sq / static_cast<double>(S) + eps);
          const double b = static_cast<double>(bias[c]) - mean * a;
          for (int64_t s = 0; s < S; ++s) yc[s] = static_cast<T>(xc[s] * a + b);
        }
      ctx.outputs[0] = std::move(out);
    });
  });
}

// Local response normalisation across channels:
// y = x / (bias + alpha / size * sum of x^2 over the `size` channels around c)^beta.
std::unique_ptr<Kernel> make_lrn(const Node& node) {
  const int64_t size = node.attr_int("size", 0);
  if (size <= 0) fail(node.describe() + ": attribute 'size' must be a positive integer, got " + std::to_string(size));
  const double alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f);
  const double bias = node.attr_float("bias", 1.0f);
  const std::string what = node.describe();
  // The window spans [c - floor((size-1)/2), c + ceil((size-1)/2)].
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const ChannelShape cs = channel_shape(x, what);
    const int64_t N = cs.N, C = cs.C, S = cs.S;
    dispatch_float(x, what, [&](auto tag) {
      using T = decltype(tag);
      Tensor out(x.dtype(), x.shape());
      std::vector<double> sq(static_cast<size_t>(S));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          std::fill(sq.begin(), sq.end(), 0.0);
          for (int64_t k = std::max<int64_t>(0, c - before); k <= std::min(C - 1, c + after); ++k) {
            const T* xk = x.data<T>() + (n * C + k) * S;
            for (int64_t s = 0; s < S; ++s) sq[static_cast<size_t>(s)] += static_cast<double>(xk[s]) * xk[s];
          }
          const T* xc = x.data<T>() + (n * C + c) * S;
          T* yc = out.mutable_data<T>() + (n * C + c) * S;
          for (int64_t s = 0; s < S; ++s)
            yc[s] = static_cast<T>(xc[s] / std::pow(bias + alpha / static_cast<double>(size) * sq[static_cast<size_t>(s)], beta));
        }
      ctx.outputs[0] = std::move(out);
    });
  });
}

// y = (x - mean) / (std + 1e-9) with mean and (population) std over `axes`,
// as ONNX's function body for the op defines it.
std::unique_ptr<Kernel> make_mvn(const Node& node) {
  const std::vector<int64_t> axes = node.attr_ints("axes", {0, 2, 3});
  const std::string what = node.describe();
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const ReduceGeometry g(x.shape(), reduced_axes(axes, x.rank(), what.c_str()));
    dispatch_float(x, what, [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      const double count = static_cast<double>(g.count());
      std::vector<double> mean(static_cast<size_t>(g.slots()), 0.0), var(mean.size(), 0.0);
      g.for_each_run([&](int64_t i, int64_t s, int64_t len, int64_t step) {
        for (int64_t j = 0; j < len; ++j) mean[static_cast<size_t>(s + j * step)] += static_cast<double>(in[i + j]);
      });
      for (double& m : mean) m /= count;
      g.for_each_run([&](int64_t i, int64_t s, int64_t len, int64_t step) {
        for (int64_t j = 0; j < len; ++j) {
          const size_t k = static_cast<size_t>(s + j * step);
          var[k] += (in[i + j] - mean[k]) * (in[i + j] - mean[k]);
        }
      });
      std::vector<double> inv(var.size());
      for (size_t k = 0; k < var.size(); ++k) inv[k] = 1.0 / (std::sqrt(var[k] / count) + 1e-9);
      Tensor out(x.dtype(), x.shape());
      T* o = out.mutable_data<T>();
      g.for_each_run([&](int64_t i, int64_t s, int64_t len, int64_t step) {
        for (int64_t j = 0; j < len; ++j) {
          const size_t k = static_cast<size_t>(s + j * step);
          o[i + j] = static_cast<T>((in[i + j] - mean[k]) * inv[k]);
        }
      });
      ctx.outputs[0] = std::move(out);
    });
  });
}

}  // namespace

void register_normalization(std::vector<KernelDef>& t) {
  t.push_back({"InstanceNormalization", 6, 17, make_instance_norm});
  t.push_back({"LRN", 1, 17, make_lrn});
  t.push_back({"MeanVarianceNormalization", 9, 17, make_mvn});
}

}  // namespace epprof::rt::kernels
