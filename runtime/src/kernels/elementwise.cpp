// Element-wise ops: binary arithmetic with broadcasting and unary math.
#include <cmath>
#include <type_traits>

#include "kernels/broadcast.h"
#include "kernels/common.h"

namespace epprof::rt::kernels {

namespace {

template <typename F>
void binary_same_type(KernelContext& ctx, F f) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype()) fail("input types differ: " + a.description() + " and " + b.description());
  const Shape out_shape = broadcast_shapes(a.shape(), b.shape());
  dispatch_numeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor out(a.dtype(), out_shape);
    broadcast_binary(a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.mutable_data<T>(), out_shape,
                     [&](T x, T y) { return static_cast<T>(f(x, y)); });
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> make_add(const Node&) {
  return make_kernel([](KernelContext& c) { binary_same_type(c, [](auto x, auto y) { return x + y; }); });
}
std::unique_ptr<Kernel> make_sub(const Node&) {
  return make_kernel([](KernelContext& c) { binary_same_type(c, [](auto x, auto y) { return x - y; }); });
}
std::unique_ptr<Kernel> make_mul(const Node&) {
  return make_kernel([](KernelContext& c) { binary_same_type(c, [](auto x, auto y) { return x * y; }); });
}
std::unique_ptr<Kernel> make_div(const Node&) {
  return make_kernel([](KernelContext& c) {
    binary_same_type(c, [](auto x, auto y) {
      using T = decltype(x);
      if constexpr (std::is_integral_v<T>) {
        if (y == 0) fail("integer division by zero");
        if (std::is_signed_v<T> && y == T(-1)) return static_cast<T>(T(0) - x);  // avoids INT_MIN / -1
      }
      return static_cast<T>(x / y);
    });
  });
}

// Pow: base and exponent types may differ; the output has the base's type.
std::unique_ptr<Kernel> make_pow(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Shape out_shape = broadcast_shapes(a.shape(), b.shape());
    dispatch_numeric(a.dtype(), [&](auto ta) {
      using TA = decltype(ta);
      dispatch_numeric(b.dtype(), [&](auto tb) {
        using TB = decltype(tb);
        Tensor out(a.dtype(), out_shape);
        broadcast_binary(a.data<TA>(), a.shape(), b.data<TB>(), b.shape(), out.mutable_data<TA>(), out_shape,
                         [](TA x, TB y) {
                           if constexpr (std::is_same_v<TA, float> && std::is_same_v<TB, float>)
                             return std::pow(x, y);
                           else
                             return static_cast<TA>(std::pow(static_cast<double>(x), static_cast<double>(y)));
                         });
        ctx.outputs[0] = std::move(out);
      });
    });
  });
}

template <typename F>
std::unique_ptr<Kernel> unary_float(F f) {
  return make_kernel([f](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.dtype() == DataType::Float) {
      Tensor out(DataType::Float, x.shape());
      const float* in = x.data<float>();
      float* o = out.mutable_data<float>();
      for (int64_t i = 0, n = x.size(); i < n; ++i) o[i] = f(in[i]);
      ctx.outputs[0] = std::move(out);
    } else if (x.dtype() == DataType::Double) {
      Tensor out(DataType::Double, x.shape());
      const double* in = x.data<double>();
      double* o = out.mutable_data<double>();
      for (int64_t i = 0, n = x.size(); i < n; ++i) o[i] = f(in[i]);
      ctx.outputs[0] = std::move(out);
    } else {
      fail("expected a float input, got " + x.description());
    }
  });
}

std::unique_ptr<Kernel> make_sqrt(const Node&) { return unary_float([](auto x) { return std::sqrt(x); }); }
std::unique_ptr<Kernel> make_exp(const Node&) { return unary_float([](auto x) { return std::exp(x); }); }
std::unique_ptr<Kernel> make_log(const Node&) { return unary_float([](auto x) { return std::log(x); }); }
std::unique_ptr<Kernel> make_erf(const Node&) { return unary_float([](auto x) { return std::erf(x); }); }
std::unique_ptr<Kernel> make_tanh(const Node&) { return unary_float([](auto x) { return std::tanh(x); }); }
std::unique_ptr<Kernel> make_sigmoid(const Node&) {
  return unary_float([](auto x) {
    using T = decltype(x);
    // Numerically stable in both directions.
    if (x >= 0) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  });
}
std::unique_ptr<Kernel> make_relu(const Node&) {
  return unary_float([](auto x) { return x > 0 ? x : decltype(x)(0); });
}
std::unique_ptr<Kernel> make_leaky_relu(const Node& node) {
  const float alpha = node.attr_float("alpha", 0.01f);
  return unary_float([alpha](auto x) { return x >= 0 ? x : x * static_cast<decltype(x)>(alpha); });
}

}  // namespace

void register_elementwise(std::vector<KernelDef>& t) {
  t.push_back({"Add", 7, 17, make_add});
  t.push_back({"Sub", 7, 17, make_sub});
  t.push_back({"Mul", 7, 17, make_mul});
  t.push_back({"Div", 7, 17, make_div});
  t.push_back({"Pow", 7, 17, make_pow});
  t.push_back({"Sqrt", 6, 17, make_sqrt});
  t.push_back({"Exp", 6, 17, make_exp});
  t.push_back({"Log", 6, 17, make_log});
  t.push_back({"Erf", 9, 17, make_erf});
  t.push_back({"Tanh", 6, 17, make_tanh});
  t.push_back({"Sigmoid", 6, 17, make_sigmoid});
  t.push_back({"Relu", 6, 17, make_relu});
  t.push_back({"LeakyRelu", 6, 17, make_leaky_relu});
}

}  // namespace epprof::rt::kernels
