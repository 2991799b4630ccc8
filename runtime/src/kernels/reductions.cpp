// The Reduce* family: ReduceSum, ReduceMean, ReduceMax, ReduceMin,
// ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp and
// ReduceSumSquare, all one engine parameterised by the kind of reduction.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.h"
#include "kernels/reduce_util.h"

namespace epprof::rt::kernels {

namespace {

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// Float results → an integer element type: saturate, NaN → 0 (a plain cast
// of an out-of-range value is UB).
template <typename T>
T from_double(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

// Value of an empty reduction and the step that folds one element in. Max and
// Min start from the identity of the type (-inf/+inf for the float types), so
// an empty set gives that identity, as ONNX defines it.
template <Kind K, typename T>
acc_t<T> identity() {
  using A = acc_t<T>;
  constexpr bool has_inf = std::numeric_limits<T>::has_infinity;
  if constexpr (K == Kind::Max)
    return has_inf ? -A(std::numeric_limits<T>::infinity()) : A(std::numeric_limits<T>::lowest());
  else if constexpr (K == Kind::Min)
    return has_inf ? A(std::numeric_limits<T>::infinity()) : A(std::numeric_limits<T>::max());
  else if constexpr (K == Kind::Prod)
    return A(1);
  else
    return A(0);
}

template <Kind K, typename T>
void fold(acc_t<T>& a, T x) {
  using A = acc_t<T>;
  const A v = static_cast<A>(x);
  if constexpr (K == Kind::Max || K == Kind::Min) {
    if (K == Kind::Max ? v > a : v < a) a = v;
    if constexpr (std::is_floating_point_v<A>)
      if (std::isnan(v)) a = v;  // NaN propagates
  } else if constexpr (K == Kind::Prod) {
    a = acc_mul(a, v);
  } else if constexpr (K == Kind::L1) {
    if constexpr (std::is_signed_v<T>)
      a = acc_add(a, v < 0 ? acc_mul(v, A(-1)) : v);
    else
      a = acc_add(a, v);
  } else if constexpr (K == Kind::SumSquare || K == Kind::L2) {
    a = acc_add(a, acc_mul(v, v));
  } else {  // Sum, Mean, LogSum
    a = acc_add(a, v);
  }
}

template <Kind K, typename T>
T finish(acc_t<T> a, int64_t count) {
  if constexpr (K == Kind::Mean) {
    if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(a / static_cast<double>(count));  // empty: 0/0 = NaN, as numpy's mean
    else
      return count ? static_cast<T>(a / static_cast<acc_t<T>>(count)) : T(0);
  } else if constexpr (K == Kind::L2) {
    return from_double<T>(std::sqrt(static_cast<double>(a)));
  } else if constexpr (K == Kind::LogSum) {
    return from_double<T>(std::log(static_cast<double>(a)));
  } else {
    return static_cast<T>(a);
  }
}

template <Kind K, typename T>
void reduce_into(const ReduceGeometry& g, const T* in, T* out) {
  using A = acc_t<T>;
  if constexpr (K == Kind::LogSumExp) {
    // log(sum(exp(x - m))) + m with m the slot's maximum, so exp cannot overflow.
    std::vector<A> mx(static_cast<size_t>(g.slots()), identity<Kind::Max, T>());
    g.for_each_run([&](int64_t i, int64_t s, int64_t len, int64_t step) {
      for (int64_t j = 0; j < len; ++j) fold<Kind::Max, T>(mx[static_cast<size_t>(s + j * step)], in[i + j]);
    });
    std::vector<double> sum(mx.size(), 0.0);
    g.for_each_run([&](int64_t i, int64_t s, int64_t len, int64_t step) {
      for (int64_t j = 0; j < len; ++j) {
        const size_t k = static_cast<size_t>(s + j * step);
        const double m = std::isfinite(static_cast<double>(mx[k])) ? static_cast<double>(mx[k]) : 0.0;
        sum[k] += std::exp(static_cast<double>(in[i + j]) - m);
      }
    });
    for (size_t k = 0; k < sum.size(); ++k) {
      const double m = std::isfinite(static_cast<double>(mx[k])) ? static_cast<double>(mx[k]) : 0.0;
      out[k] = from_double<T>(std::log(sum[k]) + m);
    }
  } else {
    std::vector<A> acc(static_cast<size_t>(g.slots()), identity<K, T>());
    g.for_each_run([&](int64_t i, int64_t s, int64_t len, int64_t step) {
      if (step == 0) {
        A& a = acc[static_cast<size_t>(s)];
        for (int64_t j = 0; j < len; ++j) fold<K, T>(a, in[i + j]);
      } else {
        for (int64_t j = 0; j < len; ++j) fold<K, T>(acc[static_cast<size_t>(s + j)], in[i + j]);
      }
    });
    for (size_t k = 0; k < acc.size(); ++k) out[k] = finish<K, T>(acc[k], g.count());
  }
}

template <typename T>
void reduce_dispatch(Kind kind, const ReduceGeometry& g, const T* in, T* out) {
  switch (kind) {
    case Kind::Sum: return reduce_into<Kind::Sum>(g, in, out);
    case Kind::Mean: return reduce_into<Kind::Mean>(g, in, out);
    case Kind::Max: return reduce_into<Kind::Max>(g, in, out);
    case Kind::Min: return reduce_into<Kind::Min>(g, in, out);
    case Kind::Prod: return reduce_into<Kind::Prod>(g, in, out);
    case Kind::L1: return reduce_into<Kind::L1>(g, in, out);
    case Kind::L2: return reduce_into<Kind::L2>(g, in, out);
    case Kind::LogSum: return reduce_into<Kind::LogSum>(g, in, out);
    case Kind::LogSumExp: return reduce_into<Kind::LogSumExp>(g, in, out);
    case Kind::SumSquare: return reduce_into<Kind::SumSquare>(g, in, out);
  }
}

// The element types a reduction is computed on: the float types and the
// integers that ONNX lists for the Reduce* ops.
template <typename F>
void dispatch_reduce_type(DataType type, F&& f) {
  switch (type) {
    case DataType::Float: f(float{}); break;
    case DataType::Double: f(double{}); break;
    case DataType::Int64: f(int64_t{}); break;
    case DataType::Int32: f(int32_t{}); break;
    case DataType::Uint64: f(uint64_t{}); break;
    case DataType::Uint32: f(uint32_t{}); break;
    case DataType::Int8: f(int8_t{}); break;
    case DataType::Uint8: f(uint8_t{}); break;
    default: fail(std::string("unsupported element type ") + type_name(type));
  }
}

template <Kind K>
std::unique_ptr<Kernel> make_reduce(const Node& node) {
  // Until opset 18, only ReduceSum (from 13) takes its axes as an input.
  const bool axes_input = K == Kind::Sum && node.opset >= 13;
  const std::vector<int64_t> axes_attr = node.attr_ints("axes");
  if (axes_input && node.has_attr("axes")) fail(node.describe() + ": the 'axes' attribute became an input in opset 13");
  const int64_t keepdims = node.attr_int("keepdims", 1);
  if (keepdims != 0 && keepdims != 1) fail(node.describe() + ": keepdims must be 0 or 1, got " + std::to_string(keepdims));
  const int64_t noop = axes_input ? node.attr_int("noop_with_empty_axes", 0) : 0;
  if (noop != 0 && noop != 1)
    fail(node.describe() + ": noop_with_empty_axes must be 0 or 1, got " + std::to_string(noop));
  const std::string what = node.describe();
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> axes = axes_attr;
    if (const Tensor* a = axes_input ? ctx.optional_input(1) : nullptr) {
      if (a->rank() != 1) fail(what + ": input 'axes' must be 1-D, got " + a->description());
      axes = to_int64s(*a);
    }
    if (axes.empty() && noop) {
      ctx.outputs[0] = x;
      return;
    }
    const size_t r = x.rank();
    std::vector<bool> reduced = axes.empty() ? std::vector<bool>(r, true) : reduced_axes(axes, r, what.c_str());
    Shape out_shape;
    for (size_t d = 0; d < r; ++d)
      if (!reduced[d] || keepdims) out_shape.push_back(reduced[d] ? 1 : x.dim(d));
    const ReduceGeometry g(x.shape(), reduced);
    Tensor out(x.dtype(), out_shape);
    dispatch_reduce_type(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      reduce_dispatch<T>(K, g, x.data<T>(), out.mutable_data<T>());
    });
    ctx.outputs[0] = std::move(out);
  });
}

}  // namespace

void register_reductions(std::vector<KernelDef>& t) {
  t.push_back({"ReduceSum", 1, 17, make_reduce<Kind::Sum>});
  t.push_back({"ReduceMean", 1, 17, make_reduce<Kind::Mean>});
  t.push_back({"ReduceMax", 1, 17, make_reduce<Kind::Max>});
  t.push_back({"ReduceMin", 1, 17, make_reduce<Kind::Min>});
  t.push_back({"ReduceProd", 1, 17, make_reduce<Kind::Prod>});
  t.push_back({"ReduceL1", 1, 17, make_reduce<Kind::L1>});
  t.push_back({"ReduceL2", 1, 17, make_reduce<Kind::L2>});
  t.push_back({"ReduceLogSum", 1, 17, make_reduce<Kind::LogSum>});
  t.push_back({"ReduceLogSumExp", 1, 17, make_reduce<Kind::LogSumExp>});
  t.push_back({"ReduceSumSquare", 1, 17, make_reduce<Kind::SumSquare>});
}

}  // namespace epprof::rt::kernels
