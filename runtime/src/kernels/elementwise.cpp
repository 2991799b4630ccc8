// Binary and variadic arithmetic with broadcasting: Add, Sub, Mul, Div, Pow,
// Mod, PRelu, Max, Min, Sum, Mean.
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/common.h"
#include "kernels/elementwise_util.h"

namespace epprof::rt::kernels {

namespace {

// Before opset 7, binary ops broadcast only B onto A, and only when the
// `broadcast` attribute is 1: B's dims match a contiguous run of A's dims
// starting at `axis` (default: A's trailing dims), each equal or 1.
struct LegacyBroadcast {
  bool legacy = false;   // opset < 7
  bool enabled = false;  // broadcast = 1
  bool has_axis = false;
  int64_t axis = 0;
};

LegacyBroadcast legacy_broadcast(const Node& node) {
  LegacyBroadcast lb;
  if (node.opset >= 7) return lb;
  lb.legacy = true;
  const int64_t broadcast = node.attr_int("broadcast", 0);
  if (broadcast != 0 && broadcast != 1)
    fail(node.op_type + ": attribute 'broadcast' must be 0 or 1, got " + std::to_string(broadcast));
  lb.enabled = broadcast == 1;
  lb.has_axis = node.has_attr("axis");
  lb.axis = node.attr_int("axis", 0);
  return lb;
}

struct BinaryShapes {
  Shape a, b, out;  // b laid out in the output's rank for legacy broadcasting
};

BinaryShapes binary_shapes(const LegacyBroadcast& lb, const Shape& a, const Shape& b, const std::string& who) {
  if (!lb.legacy) return {a, b, broadcast_shapes(a, b)};
  if (!lb.enabled) {
    if (a != b)
      fail(who + ": input shapes " + shape_to_string(a) + " and " + shape_to_string(b) +
           " differ and attribute 'broadcast' is not set (opset < 7)");
    return {a, b, a};
  }
  const auto ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (rb > ra) fail(who + ": B " + shape_to_string(b) + " has a higher rank than A " + shape_to_string(a));
  const int64_t axis = lb.has_axis ? (lb.axis < 0 ? lb.axis + ra : lb.axis) : ra - rb;
  if (axis < 0 || axis + rb > ra)
    fail(who + ": attribute 'axis' = " + std::to_string(lb.axis) + " does not place B " + shape_to_string(b) +
         " inside A " + shape_to_string(a));
  Shape bb(a.size(), 1);
  for (int64_t i = 0; i < rb; ++i) {
    const int64_t d = b[static_cast<size_t>(i)];
    if (d != 1 && d != a[static_cast<size_t>(axis + i)])
      fail(who + ": B " + shape_to_string(b) + " cannot be broadcast onto A " + shape_to_string(a) + " at axis " +
           std::to_string(axis));
    bb[static_cast<size_t>(axis + i)] = d;
  }
  return {a, bb, a};
}

void require_same_type(const Tensor& a, const Tensor& b, const std::string& who) {
  if (a.dtype() != b.dtype()) fail(who + ": input types differ: " + a.description() + " and " + b.description());
}

// Same-type binary op; f takes and returns the compute type (float for 16-bit floats).
template <Accept K, typename F>
std::unique_ptr<Kernel> binary_arith(const Node& node, F f) {
  const LegacyBroadcast lb = legacy_broadcast(node);
  return make_kernel([lb, who = node.op_type, f](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    require_same_type(a, b, who);
    const BinaryShapes s = binary_shapes(lb, a.shape(), b.shape(), who);
    dispatch_real(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!accepts<K, T>()) {
        fail_type(who, "input A", a, K);
      } else {
        Tensor out = Tensor::uninitialized(a.dtype(), s.out);
        broadcast_binary(a.data<T>(), s.a, b.data<T>(), s.b, out.mutable_data<T>(), s.out,
                         [&](T x, T y) { return from_compute<T>(f(to_compute(x), to_compute(y))); });
        ctx.outputs[0] = std::move(out);
      }
    });
  });
}

std::unique_ptr<Kernel> make_add(const Node& n) {
  return binary_arith<Accept::Numeric>(n, [](auto x, auto y) { return wrap_add(x, y); });
}
std::unique_ptr<Kernel> make_sub(const Node& n) {
  return binary_arith<Accept::Numeric>(n, [](auto x, auto y) { return wrap_sub(x, y); });
}
std::unique_ptr<Kernel> make_mul(const Node& n) {
  return binary_arith<Accept::Numeric>(n, [](auto x, auto y) { return wrap_mul(x, y); });
}
std::unique_ptr<Kernel> make_div(const Node& n) {
  return binary_arith<Accept::Numeric>(n, [](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      if (y == 0) fail("Div: integer division by zero");
      if (std::is_signed_v<T> && y == T(-1)) return wrap_neg(x);  // INT_MIN / -1 overflows
    }
    return static_cast<T>(x / y);  // integers truncate toward zero, as in C and ONNX Runtime
  });
}

// Mod: fmod = 1 takes the dividend's sign (C fmod / %); fmod = 0 (integers
// only) takes the divisor's sign (Python's %).
std::unique_ptr<Kernel> make_mod(const Node& node) {
  const int64_t fmod_attr = node.attr_int("fmod", 0);
  if (fmod_attr != 0 && fmod_attr != 1)
    fail(node.op_type + ": attribute 'fmod' must be 0 or 1, got " + std::to_string(fmod_attr));
  const bool c_fmod = fmod_attr == 1;
  const std::string who = node.op_type;
  return binary_arith<Accept::Numeric>(node, [c_fmod, who](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_floating_point_v<T>) {
      if (!c_fmod) fail(who + ": attribute 'fmod' must be 1 for floating-point inputs");
      return static_cast<T>(std::fmod(x, y));
    } else {
      if (y == 0) fail(who + ": integer modulo by zero");
      if (std::is_signed_v<T> && y == T(-1)) return T(0);  // INT_MIN % -1 overflows
      T r = static_cast<T>(x % y);
      if (!c_fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
      return r;
    }
  });
}

// PRelu: y = x < 0 ? slope * x : x, slope broadcast onto x (unidirectionally).
std::unique_ptr<Kernel> make_prelu(const Node& node) {
  const bool opset6 = node.opset < 7;
  return make_kernel([opset6, who = node.op_type](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& slope = ctx.input(1);
    require_same_type(x, slope, who);
    Shape ss = slope.shape();
    // Opset 6 (PyTorch's exporter) gives one slope per channel as a 1-D tensor
    // of X's dim 1; lay it out along that axis.
    if (opset6 && x.rank() >= 2 && ss.size() == 1 && ss[0] == x.dim(1) && ss[0] != 1) {
      ss.assign(x.rank() - 1, 1);
      ss[0] = x.dim(1);
    }
    if (broadcast_shapes(x.shape(), ss) != x.shape())
      fail(who + ": slope " + slope.description() + " cannot be broadcast to X " + x.description());
    dispatch_real(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!accepts<Accept::Signed, T>()) {
        fail_type(who, "X", x, Accept::Signed);
      } else {
        Tensor out = Tensor::uninitialized(x.dtype(), x.shape());
        broadcast_binary(x.data<T>(), x.shape(), slope.data<T>(), ss, out.mutable_data<T>(), x.shape(), [](T xv, T sv) {
          const auto v = to_compute(xv);
          return v < 0 ? from_compute<T>(wrap_mul(v, to_compute(sv))) : xv;
        });
        ctx.outputs[0] = std::move(out);
      }
    });
  });
}

// Integer power by squaring, wrapping on overflow. A negative exponent gives
// the truncated reciprocal: only |x| = 1 survives.
template <typename X, typename Y>
X int_pow(X x, Y y) {
  if constexpr (std::is_signed_v<Y>) {
    if (y < 0) {
      if (x == 0) fail("Pow: integer 0 raised to a negative power");
      if (x == 1) return 1;
      if (std::is_signed_v<X> && x == X(-1)) return (y % 2) ? X(-1) : X(1);
      return 0;
    }
  }
  using U = wrap_t<X>;
  U result = 1, base = static_cast<U>(x);
  for (auto e = static_cast<std::make_unsigned_t<Y>>(y); e; e >>= 1) {
    if (e & 1) result *= base;
    base *= base;
  }
  return static_cast<X>(result);
}

// Pow: base and exponent types may differ; the output has the base's type.
template <typename X, typename Y>
X pow_value(X x, Y y) {
  if constexpr (std::is_integral_v<X> && std::is_integral_v<Y>)
    return int_pow(x, y);
  else if constexpr (std::is_same_v<X, float> && std::is_same_v<Y, float>)
    return std::pow(x, y);
  else
    return convert<X>(std::pow(static_cast<double>(x), static_cast<double>(y)));
}

// The exponent type Pow computes with, for exponents of type Y: pow_value
// reads an exponent only as a signed or unsigned integer, a float or a
// double, so every Y widens, exactly, to one of four: 6 base types then
// build 24 loops, not one per pair of types (72), which made Pow most of
// this file's compile time.
template <typename Y>
using pow_exponent_t =
    std::conditional_t<std::is_integral_v<Y>, std::conditional_t<std::is_signed_v<Y>, int64_t, uint64_t>, compute_t<Y>>;

// out = x ^ y, y already in the type Pow computes with: one instance per
// (base, exponent) type pair, whatever type the exponent was stored in.
template <typename TA, typename E>
void pow_elements(const Tensor& x, const Shape& sx, const E* y, const Shape& sy, Tensor& out, const Shape& so) {
  broadcast_binary(x.data<TA>(), sx, y, sy, out.mutable_data<TA>(), so,
                   [](TA v, E e) { return from_compute<TA>(pow_value(to_compute(v), e)); });
}

std::unique_ptr<Kernel> make_pow(const Node& node) {
  const LegacyBroadcast lb = legacy_broadcast(node);
  return make_kernel([lb, who = node.op_type](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const BinaryShapes s = binary_shapes(lb, a.shape(), b.shape(), who);
    dispatch_real(a.dtype(), [&](auto ta) {
      using TA = decltype(ta);
      // Base types per the spec: int32, int64 and the float types.
      if constexpr (std::is_same_v<TA, int32_t> || std::is_same_v<TA, int64_t> || accepts<Accept::Float, TA>()) {
        Tensor out = Tensor::uninitialized(a.dtype(), s.out);
        dispatch_real(b.dtype(), [&](auto tb) {
          using TB = decltype(tb);
          // x^2, the common case (a power spectrum, a variance), is x * x:
          // the same correctly rounded value as pow, and a loop that
          // vectorises (oww_melspectrogram's Pow ran 2.7x ONNX Runtime's time).
          // The lambda is generic so that clang does not check x * x for the
          // half types, which have no operator*, in this discarded branch.
          if constexpr (std::is_same_v<TA, float> && std::is_floating_point_v<TB>) {
            if (b.size() == 1 && b.data<TB>()[0] == TB(2)) {
              broadcast_binary(a.data<TA>(), s.a, b.data<TB>(), s.b, out.mutable_data<TA>(), s.out,
                               [](auto x, auto) { return x * x; });
              return;
            }
          }
          using E = pow_exponent_t<TB>;
          std::vector<E> widened;
          const E* exponent;
          if constexpr (std::is_same_v<TB, E>) {
            exponent = b.data<TB>();
          } else {
            const TB* y = b.data<TB>();
            widened.resize(size_t(b.size()));
            for (size_t i = 0; i < widened.size(); ++i) widened[i] = E(to_compute(y[i]));
            exponent = widened.data();
          }
          pow_elements<TA>(a, s.a, exponent, s.b, out, s.out);
        });
        ctx.outputs[0] = std::move(out);
      } else {
        fail(who + ": base X must be int32, int64 or a floating-point type, got " + a.description());
      }
    });
  });
}

// Max and Min propagate NaN, like numpy's maximum/minimum.
template <typename T>
T max_value(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) ? x : y;
  }
  return x < y ? y : x;
}
template <typename T>
T min_value(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) ? x : y;
  }
  return y < x ? y : x;
}

// Variadic op folding f over its inputs left to right; before opset 8 the
// inputs must all have the same shape, from 8 they broadcast. Mean divides
// the sum by the input count.
template <Accept K, typename F>
std::unique_ptr<Kernel> variadic(const Node& node, F f, bool mean = false) {
  const bool broadcast = node.opset >= 8;
  if (node.inputs.empty()) fail(node.op_type + ": needs at least one input");
  return make_kernel([broadcast, mean, who = node.op_type, f](KernelContext& ctx) {
    const size_t n = ctx.num_inputs();
    const Tensor& first = ctx.input(0);
    Shape so = first.shape();
    for (size_t i = 1; i < n; ++i) {
      const Tensor& t = ctx.input(i);
      require_same_type(first, t, who);
      if (broadcast) so = broadcast_shapes(so, t.shape());
      else if (t.shape() != so)
        fail(who + ": input " + std::to_string(i) + " " + t.description() + " differs in shape from input 0 " +
             first.description() + " (no broadcasting before opset 8)");
    }
    dispatch_real(first.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!accepts<K, T>()) {
        fail_type(who, "inputs", first, K);
      } else {
        if (n == 1) {
          ctx.outputs[0] = first;
          return;
        }
        Tensor out = Tensor::uninitialized(first.dtype(), so);
        T* o = out.mutable_data<T>();
        const auto step = [&](auto x, auto y) { return from_compute<T>(f(to_compute(x), to_compute(y))); };
        const Tensor& second = ctx.input(1);
        broadcast_binary(first.data<T>(), first.shape(), second.data<T>(), second.shape(), o, so, step);
        for (size_t i = 2; i < n; ++i) {
          const Tensor& t = ctx.input(i);
          broadcast_binary(static_cast<const T*>(o), so, t.data<T>(), t.shape(), o, so, step);
        }
        if (mean) {
          const auto count = static_cast<compute_t<T>>(n);
          for (int64_t i = 0, m = out.size(); i < m; ++i) o[i] = from_compute<T>(to_compute(o[i]) / count);
        }
        ctx.outputs[0] = std::move(out);
      }
    });
  });
}

std::unique_ptr<Kernel> make_max(const Node& n) {
  return variadic<Accept::Numeric>(n, [](auto x, auto y) { return max_value(x, y); });
}
std::unique_ptr<Kernel> make_min(const Node& n) {
  return variadic<Accept::Numeric>(n, [](auto x, auto y) { return min_value(x, y); });
}
std::unique_ptr<Kernel> make_sum(const Node& n) {
  return variadic<Accept::Float>(n, [](auto x, auto y) { return x + y; });
}
std::unique_ptr<Kernel> make_mean(const Node& n) {
  return variadic<Accept::Float>(n, [](auto x, auto y) { return x + y; }, true);
}

}  // namespace

void register_elementwise(std::vector<KernelDef>& t) {
  // Opset 6 is the legacy `broadcast`/`axis` form (handled in binary_shapes).
  t.push_back({"Add", 6, 17, make_add});
  t.push_back({"Sub", 6, 17, make_sub});
  t.push_back({"Mul", 6, 17, make_mul});
  t.push_back({"Div", 6, 17, make_div});
  t.push_back({"Pow", 1, 17, make_pow});
  t.push_back({"Mod", 10, 17, make_mod});
  t.push_back({"PRelu", 6, 17, make_prelu});
  t.push_back({"Max", 6, 17, make_max});
  t.push_back({"Min", 6, 17, make_min});
  t.push_back({"Sum", 6, 17, make_sum});
  t.push_back({"Mean", 6, 17, make_mean});
}

}  // namespace epprof::rt::kernels
