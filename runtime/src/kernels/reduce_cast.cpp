// ReduceMean and Cast.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/broadcast.h"
#include "kernels/common.h"

namespace epprof::rt::kernels {

namespace {

template <typename T>
constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <typename To, typename From>
To convert(From v) {
  if constexpr (is_half_v<From>) {
    return convert<To>(v.to_float());
  } else if constexpr (is_half_v<To>) {
    return To::from_float(convert<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // Out-of-range float→int is undefined in C++; saturate and map NaN to 0.
    if (std::isnan(v)) return To(0);
    if (v <= static_cast<From>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

std::unique_ptr<Kernel> make_cast(const Node& node) {
  const int64_t to = node.attr_int("to", 0);
  if (!is_supported_type(static_cast<int>(to))) fail(node.describe() + ": cannot cast to element type " + std::to_string(to));
  const auto target = static_cast<DataType>(to);
  return make_kernel([target](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.dtype() == target) {
      ctx.outputs[0] = x;
      return;
    }
    Tensor out(target, x.shape());
    dispatch_any(x.dtype(), [&](auto from_tag) {
      using From = decltype(from_tag);
      dispatch_any(target, [&](auto to_tag) {
        using To = decltype(to_tag);
        const From* in = x.data<From>();
        To* o = out.mutable_data<To>();
        for (int64_t i = 0, n = x.size(); i < n; ++i) o[i] = convert<To>(in[i]);
      });
    });
    ctx.outputs[0] = std::move(out);
  });
}

}  // namespace

void register_reduce(std::vector<KernelDef>& t) {
  t.push_back({"Cast", 6, 17, make_cast});
}

}  // namespace epprof::rt::kernels
