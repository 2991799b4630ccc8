// Cast and CastLike.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/common.h"
#include "kernels/elementwise_util.h"

namespace epprof::rt::kernels {

namespace {

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

void register_cast(std::vector<KernelDef>& t) {
  t.push_back({"Cast", 6, 17, make_cast});
  t.push_back({"CastLike", 15, 17, make_cast_like});
}

}  // namespace epprof::rt::kernels
