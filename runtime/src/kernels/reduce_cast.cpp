// ReduceMean and Cast.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/broadcast.h"
#include "kernels/common.h"
#include "kernels/elementwise_util.h"

namespace epprof::rt::kernels {

namespace {

std::unique_ptr<Kernel> make_reduce_mean(const Node& node) {
  const std::vector<int64_t> axes_attr = node.attr_ints("axes");
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const size_t r = x.rank();
    std::vector<bool> reduced(r, axes_attr.empty());
    for (int64_t a : axes_attr) reduced[static_cast<size_t>(normalize_axis(a, static_cast<int64_t>(r)))] = true;
    Shape kept_shape(r), out_shape;
    int64_t count = 1;
    for (size_t d = 0; d < r; ++d) {
      kept_shape[d] = reduced[d] ? 1 : x.dim(d);
      if (reduced[d]) count *= x.dim(d);
      if (!reduced[d]) out_shape.push_back(x.dim(d));
      else if (keepdims) out_shape.push_back(1);
    }
    dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::vector<double> acc(static_cast<size_t>(shape_size(kept_shape)), 0.0);
      // Accumulate every input element into its reduced slot, in input order.
      const auto ostr = broadcast_strides(kept_shape, x.shape());
      const T* in = x.data<T>();
      const int64_t n = x.size();
      std::vector<int64_t> idx(r, 0);
      int64_t off = 0;
      for (int64_t i = 0; i < n; ++i) {
        acc[static_cast<size_t>(off)] += static_cast<double>(in[i]);
        for (size_t d = r; d-- > 0;) {
          off += ostr[d];
          if (++idx[d] < x.dim(d)) break;
          off -= ostr[d] * x.dim(d);
          idx[d] = 0;
        }
      }
      Tensor out(x.dtype(), out_shape);
      T* o = out.mutable_data<T>();
      for (size_t i = 0; i < acc.size(); ++i)
        o[i] = count ? static_cast<T>(acc[i] / static_cast<double>(count)) : T(0);
      ctx.outputs[0] = std::move(out);
    });
  });
}

// Cast to `target`: every pair of supported types (string tensors are not
// supported by the runtime). Float to integer saturates, NaN gives 0.
Tensor cast_tensor(const Tensor& x, DataType target) {
  if (x.dtype() == target) return x;
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
  return out;
}

std::unique_ptr<Kernel> make_cast(const Node& node) {
  if (!node.has_attr("to")) fail(node.op_type + ": missing required attribute 'to'");
  const int64_t to = node.attr_int("to", 0);
  if (to == 8) fail(node.op_type + ": cannot cast to string: string tensors are not supported");
  if (!is_supported_type(static_cast<int>(to)))
    fail(node.op_type + ": attribute 'to' = " + std::to_string(to) + " is not a supported element type");
  const auto target = static_cast<DataType>(to);
  return make_kernel([target](KernelContext& ctx) { ctx.outputs[0] = cast_tensor(ctx.input(0), target); });
}

// CastLike: Cast to the element type of the second input.
std::unique_ptr<Kernel> make_cast_like(const Node&) {
  return make_kernel([](KernelContext& ctx) { ctx.outputs[0] = cast_tensor(ctx.input(0), ctx.input(1).dtype()); });
}

}  // namespace

void register_reduce(std::vector<KernelDef>& t) {
  t.push_back({"ReduceMean", 1, 17, make_reduce_mean});
  t.push_back({"Cast", 6, 17, make_cast});
  t.push_back({"CastLike", 15, 17, make_cast_like});
}

}  // namespace epprof::rt::kernels
