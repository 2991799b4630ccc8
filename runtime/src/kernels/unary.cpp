// Unary math and activation functions, Clip and (inference) Dropout.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>

#include "kernels/activations.h"
#include "kernels/common.h"
#include "kernels/element_split.h"
#include "kernels/elementwise_util.h"
#include "kernels/simd.h"
#include "kernels/vector_math.h"

namespace epprof::rt::kernels {

namespace {

// y = f(x) element-wise, same type and shape; f takes and returns the compute
// type (float for the 16-bit floats).
template <Accept K, typename F>
std::unique_ptr<Kernel> unary(const Node& node, F f) {
  return make_kernel([who = node.op_type, f](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    dispatch_real(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!accepts<K, T>()) {
        fail_type(who, "input", x, K);
      } else {
        Tensor out = Tensor::uninitialized(x.dtype(), x.shape());
        const T* in = x.data<T>();
        T* o = out.mutable_data<T>();
        transform_split(in, o, x.shape(), [&f](T v) { return from_compute<T>(f(to_compute(v))); });
        ctx.outputs[0] = std::move(out);
      }
    });
  });
}

// A float-typed function of the float types (the usual math functions).
template <typename F>
std::unique_ptr<Kernel> unary_float(const Node& node, F f) {
  return unary<Accept::Float>(node, f);
}

// bool y = pred(x) for the float types (IsNaN, IsInf).
template <typename F>
std::unique_ptr<Kernel> float_predicate(const Node& node, F pred) {
  return make_kernel([who = node.op_type, pred](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    dispatch_real(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!accepts<Accept::Float, T>()) {
        fail_type(who, "input", x, Accept::Float);
      } else {
        Tensor out(DataType::Bool, x.shape());
        const T* in = x.data<T>();
        bool* o = out.mutable_data<bool>();
        for (int64_t i = 0, n = x.size(); i < n; ++i) o[i] = pred(to_compute(in[i]));
        ctx.outputs[0] = std::move(out);
      }
    });
  });
}

float positive_attr(const Node& node, const char* name, float fallback) {
  const float v = node.attr_float(name, fallback);
  if (!(v > 0)) fail(node.op_type + ": attribute '" + name + "' must be positive, got " + std::to_string(v));
  return v;
}

// --- math -------------------------------------------------------------------

#define EPPROF_FLOAT_UNARY(NAME, EXPR) \
  std::unique_ptr<Kernel> make_##NAME(const Node& n) { return unary_float(n, [](auto x) { return EXPR; }); }

EPPROF_FLOAT_UNARY(sqrt, std::sqrt(x))
// exp and sigmoid in float from vector_math.h: no libm call, so the loop
// vectorises (within 1 ulp of exp; 30x faster on 56k elements).
std::unique_ptr<Kernel> make_exp(const Node& n) {
  return unary_float(n, [](auto x) { return exp_of(x); });
}
// log in float from vector_math.h, vectorised (within 2 ulp; std::log kept
// the loop scalar: Silero VAD's Log of its spectrum, 1,032 elements, 3.4 us).
std::unique_ptr<Kernel> make_log(const Node& n) {
  return unary_float(n, [](auto x) { return log_of(x); });
}
// erf in float from vector_math.h, vectorised (within 2.5e-7; std::erf kept
// the loop scalar, 25% of the transformer's run in its GELU).
std::unique_ptr<Kernel> make_erf(const Node& n) {
  return unary_float(n, [](auto x) { return erf_of(x); });
}
EPPROF_FLOAT_UNARY(tanh, activation::tanh(x))
EPPROF_FLOAT_UNARY(sin, std::sin(x))
EPPROF_FLOAT_UNARY(cos, std::cos(x))
EPPROF_FLOAT_UNARY(tan, std::tan(x))
EPPROF_FLOAT_UNARY(asin, std::asin(x))
EPPROF_FLOAT_UNARY(acos, std::acos(x))
EPPROF_FLOAT_UNARY(atan, std::atan(x))
EPPROF_FLOAT_UNARY(sinh, std::sinh(x))
EPPROF_FLOAT_UNARY(cosh, std::cosh(x))
EPPROF_FLOAT_UNARY(asinh, std::asinh(x))
EPPROF_FLOAT_UNARY(acosh, std::acosh(x))
EPPROF_FLOAT_UNARY(atanh, std::atanh(x))
EPPROF_FLOAT_UNARY(floor, std::floor(x))
EPPROF_FLOAT_UNARY(ceil, std::ceil(x))
EPPROF_FLOAT_UNARY(round, std::nearbyint(x))  // default rounding mode: half to even
EPPROF_FLOAT_UNARY(reciprocal, decltype(x)(1) / x)
EPPROF_FLOAT_UNARY(softsign, x / (decltype(x)(1) + std::abs(x)))
#undef EPPROF_FLOAT_UNARY

std::unique_ptr<Kernel> make_neg(const Node& n) {
  return unary<Accept::Signed>(n, [](auto x) { return wrap_neg(x); });
}
std::unique_ptr<Kernel> make_abs(const Node& n) {
  return unary<Accept::Numeric>(n, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T>) return x;
    else if constexpr (std::is_floating_point_v<T>) return std::abs(x);
    else return x < 0 ? wrap_neg(x) : x;  // wraps for INT_MIN, like numpy
  });
}
std::unique_ptr<Kernel> make_sign(const Node& n) {
  return unary<Accept::Numeric>(n, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(x != 0);
    } else {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x)) return x;
      }
      return static_cast<T>(static_cast<int>(T(0) < x) - static_cast<int>(x < T(0)));
    }
  });
}

std::unique_ptr<Kernel> make_isnan(const Node& n) {
  return float_predicate(n, [](auto x) { return std::isnan(x); });
}
std::unique_ptr<Kernel> make_isinf(const Node& node) {
  const bool pos = node.attr_int("detect_positive", 1) != 0;
  const bool neg = node.attr_int("detect_negative", 1) != 0;
  return float_predicate(node, [pos, neg](auto x) { return std::isinf(x) && (x > 0 ? pos : neg); });
}

// --- activations ------------------------------------------------------------

// The activations FusedConv also applies: activations.h.
std::unique_ptr<Kernel> make_sigmoid(const Node& n) {
  return unary_float(n, [](auto x) { return activation::sigmoid(x); });
}
std::unique_ptr<Kernel> make_relu(const Node& n) {
  return unary<Accept::Signed>(n, [](auto x) { return activation::relu(x); });
}
std::unique_ptr<Kernel> make_leaky_relu(const Node& node) {
  const float alpha = node.attr_float("alpha", 0.01f);
  return unary_float(node, [alpha](auto x) { return activation::leaky_relu(x, static_cast<decltype(x)>(alpha)); });
}
std::unique_ptr<Kernel> make_thresholded_relu(const Node& node) {
  const float alpha = node.attr_float("alpha", 1.0f);
  return unary_float(node, [alpha](auto x) { return x > alpha ? x : decltype(x)(0); });
}
std::unique_ptr<Kernel> make_hard_sigmoid(const Node& node) {
  const float alpha = node.attr_float("alpha", 0.2f);
  const float beta = node.attr_float("beta", 0.5f);
  return unary_float(node, [alpha, beta](auto x) {
    using T = decltype(x);
    return activation::hard_sigmoid(x, static_cast<T>(alpha), static_cast<T>(beta));
  });
}
std::unique_ptr<Kernel> make_hard_swish(const Node& n) {
  return unary_float(n, [](auto x) {
    using T = decltype(x);
    return x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5)));  // as in HardSigmoid
  });
}
std::unique_ptr<Kernel> make_elu(const Node& node) {
  const float alpha = node.attr_float("alpha", 1.0f);
  return unary_float(node, [alpha](auto x) {
    using T = decltype(x);
    return x < 0 ? static_cast<T>(alpha) * std::expm1(x) : x;
  });
}
std::unique_ptr<Kernel> make_selu(const Node& node) {
  const float alpha = node.attr_float("alpha", 1.67326319217681884765625f);
  const float gamma = node.attr_float("gamma", 1.05070102214813232421875f);
  return unary_float(node, [alpha, gamma](auto x) {
    using T = decltype(x);
    return static_cast<T>(gamma) * (x > 0 ? x : static_cast<T>(alpha) * std::expm1(x));
  });
}
std::unique_ptr<Kernel> make_celu(const Node& node) {
  const float alpha = positive_attr(node, "alpha", 1.0f);
  return unary_float(node, [alpha](auto x) {
    using T = decltype(x);
    const T a = static_cast<T>(alpha);
    return x > 0 ? x : a * std::expm1(x / a);
  });
}
std::unique_ptr<Kernel> make_softplus(const Node& n) {
  return unary_float(n, [](auto x) {
    // log(1 + e^x) without overflow for large x.
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  });
}
// Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0, on every numeric
// type (integers compute in double and convert back, saturating).
std::unique_ptr<Kernel> make_shrink(const Node& node) {
  const float lambd = node.attr_float("lambd", 0.5f);
  const float bias = node.attr_float("bias", 0.0f);
  if (lambd < 0) fail(node.op_type + ": attribute 'lambd' must not be negative, got " + std::to_string(lambd));
  return unary<Accept::Numeric>(node, [lambd, bias](auto x) {
    using T = decltype(x);
    using C = std::conditional_t<std::is_integral_v<T>, double, T>;
    const C v = static_cast<C>(x), l = static_cast<C>(lambd), b = static_cast<C>(bias);
    const C r = v < -l ? v + b : v > l ? v - b : C(0);
    return convert<T>(r);
  });
}

// Clip: before opset 11 the bounds are float attributes; from 11 they are
// optional scalar inputs of X's type (integer types from opset 12).
std::unique_ptr<Kernel> make_clip(const Node& node) {
  const bool attrs = node.opset < 11;
  const float min_attr = node.attr_float("min", std::numeric_limits<float>::lowest());
  const float max_attr = node.attr_float("max", std::numeric_limits<float>::max());
  return make_kernel([attrs, min_attr, max_attr, who = node.op_type](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    dispatch_real(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      if constexpr (!accepts<Accept::Numeric, T>()) {
        fail_type(who, "input", x, Accept::Numeric);
      } else {
        C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
        if (attrs) {
          if constexpr (std::is_floating_point_v<C>) {
            lo = static_cast<C>(min_attr);
            hi = static_cast<C>(max_attr);
          } else {
            fail_type(who, "input (opset < 11)", x, Accept::Float);
          }
        } else {
          const auto bound = [&](size_t i, const char* name, C& v) {
            const Tensor* t = ctx.optional_input(i);
            if (!t) return;
            if (t->dtype() != x.dtype() || t->size() != 1)
              fail(who + ": input '" + name + "' must be a scalar of X's type " + type_name(x.dtype()) + ", got " +
                   t->description());
            v = to_compute(t->data<T>()[0]);
          };
          bound(1, "min", lo);
          bound(2, "max", hi);
        }
        Tensor out = Tensor::uninitialized(x.dtype(), x.shape());
        const T* in = x.data<T>();
        T* o = out.mutable_data<T>();
        // In the CPU's widest SIMD (simd.h): as a plain loop it was built for
        // baseline SSE2.
        transform_split(in, o, x.shape(),
                        [lo, hi](T v) { return from_compute<T>(activation::clip(to_compute(v), lo, hi)); });
        ctx.outputs[0] = std::move(out);
      }
    });
  });
}

// Uniform double in [0, 1) from two 32-bit draws, as numpy's random_sample
// builds it: with std::mt19937 seeded like numpy's legacy RandomState.seed,
// training-mode Dropout reproduces the ONNX reference (np.random.seed(seed);
// np.random.uniform(0, 1, shape) >= ratio).
double numpy_uniform(std::mt19937& gen) {
  const uint32_t a = gen() >> 5, b = gen() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

// Dropout at inference is the identity and the optional mask all true (of X's
// type before opset 10). From opset 12, training_mode = true keeps each
// element with probability 1 - ratio and scales it by 1 / (1 - ratio); the
// mask is drawn from the `seed` attribute (0 when absent, so every run draws
// the same mask: kernels are deterministic).
std::unique_ptr<Kernel> make_dropout(const Node& node) {
  const int opset = node.opset;
  const float ratio_attr = node.attr_float("ratio", 0.5f);
  if (opset < 12 && !(ratio_attr >= 0 && ratio_attr < 1))
    fail(node.op_type + ": attribute 'ratio' must be in [0, 1), got " + std::to_string(ratio_attr));
  // numpy takes the seed as an unsigned 32-bit value.
  const auto seed = static_cast<uint32_t>(node.attr_int("seed", 0));
  const bool want_mask = node.has_output(1);
  return make_kernel([opset, seed, want_mask, who = node.op_type](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    bool training = false;
    double ratio = 0.5;
    if (opset >= 12) {
      if (const Tensor* t = ctx.optional_input(2)) {
        if (t->dtype() != DataType::Bool || t->size() != 1)
          fail(who + ": input 'training_mode' must be a bool scalar, got " + t->description());
        training = t->data<bool>()[0];
      }
      if (const Tensor* r = ctx.optional_input(1)) {
        if (r->size() != 1) fail(who + ": input 'ratio' must be a scalar, got " + r->description());
        dispatch_real(r->dtype(), [&](auto tag) { ratio = convert<double>(r->data<decltype(tag)>()[0]); });
        if (!(ratio >= 0 && ratio < 1)) fail(who + ": input 'ratio' must be in [0, 1), got " + std::to_string(ratio));
      }
    }
    if (!training || ratio == 0) {
      ctx.outputs[0] = x;
      if (!want_mask) return;
      if (opset >= 10) {
        Tensor mask(DataType::Bool, x.shape());
        bool* m = mask.mutable_data<bool>();
        for (int64_t i = 0, n = x.size(); i < n; ++i) m[i] = true;
        ctx.outputs[1] = std::move(mask);
      } else {
        Tensor mask(x.dtype(), x.shape());
        dispatch_real(x.dtype(), [&](auto tag) {
          using T = decltype(tag);
          T* m = mask.mutable_data<T>();
          for (int64_t i = 0, n = x.size(); i < n; ++i) m[i] = convert<T>(1.0f);
        });
        ctx.outputs[1] = std::move(mask);
      }
      return;
    }
    dispatch_real(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!accepts<Accept::Float, T>()) {
        fail_type(who, "input (training mode)", x, Accept::Float);
      } else {
        using C = compute_t<T>;
        const C scale = static_cast<C>(1.0 / (1.0 - ratio));
        std::mt19937 gen(seed);
        Tensor y(x.dtype(), x.shape()), mask(DataType::Bool, x.shape());
        const T* in = x.data<T>();
        T* o = y.mutable_data<T>();
        bool* m = mask.mutable_data<bool>();
        for (int64_t i = 0, n = x.size(); i < n; ++i) {
          m[i] = numpy_uniform(gen) >= ratio;
          o[i] = from_compute<T>(m[i] ? to_compute(in[i]) * scale : C(0));
        }
        ctx.outputs[0] = std::move(y);
        if (want_mask) ctx.outputs[1] = std::move(mask);
      }
    });
  });
}

}  // namespace

void register_unary(std::vector<KernelDef>& t) {
  t.push_back({"Sqrt", 6, 17, make_sqrt});
  t.push_back({"Exp", 6, 17, make_exp});
  t.push_back({"Log", 6, 17, make_log});
  t.push_back({"Erf", 9, 17, make_erf});
  t.push_back({"Tanh", 6, 17, make_tanh});
  t.push_back({"Sin", 7, 17, make_sin});
  t.push_back({"Cos", 7, 17, make_cos});
  t.push_back({"Tan", 7, 17, make_tan});
  t.push_back({"Asin", 7, 17, make_asin});
  t.push_back({"Acos", 7, 17, make_acos});
  t.push_back({"Atan", 7, 17, make_atan});
  t.push_back({"Sinh", 9, 17, make_sinh});
  t.push_back({"Cosh", 9, 17, make_cosh});
  t.push_back({"Asinh", 9, 17, make_asinh});
  t.push_back({"Acosh", 9, 17, make_acosh});
  t.push_back({"Atanh", 9, 17, make_atanh});
  t.push_back({"Floor", 6, 17, make_floor});
  t.push_back({"Ceil", 6, 17, make_ceil});
  t.push_back({"Round", 11, 17, make_round});
  t.push_back({"Reciprocal", 6, 17, make_reciprocal});
  t.push_back({"Neg", 6, 17, make_neg});
  t.push_back({"Abs", 6, 17, make_abs});
  t.push_back({"Sign", 9, 17, make_sign});
  t.push_back({"IsNaN", 9, 17, make_isnan});
  t.push_back({"IsInf", 10, 17, make_isinf});
  t.push_back({"Sigmoid", 6, 17, make_sigmoid});
  t.push_back({"Relu", 6, 17, make_relu});
  t.push_back({"LeakyRelu", 6, 17, make_leaky_relu});
  t.push_back({"ThresholdedRelu", 10, 17, make_thresholded_relu});
  t.push_back({"HardSigmoid", 6, 17, make_hard_sigmoid});
  t.push_back({"HardSwish", 14, 17, make_hard_swish});
  t.push_back({"Elu", 6, 17, make_elu});
  t.push_back({"Selu", 6, 17, make_selu});
  t.push_back({"Celu", 12, 17, make_celu});
  t.push_back({"Softplus", 1, 17, make_softplus});
  t.push_back({"Softsign", 1, 17, make_softsign});
  t.push_back({"Shrink", 9, 17, make_shrink});
  t.push_back({"Clip", 6, 17, make_clip});
  t.push_back({"Dropout", 7, 17, make_dropout});
}

}  // namespace epprof::rt::kernels
