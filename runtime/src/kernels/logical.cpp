// Comparisons, logic, Where and bit shifts (all with multidirectional broadcasting).
#include <string>
#include <type_traits>

#include "kernels/broadcast.h"
#include "kernels/common.h"
#include "kernels/elementwise_util.h"

namespace epprof::rt::kernels {

namespace {

// bool out = cmp(a, b) over two inputs of one type: every real type, and bool
// when `with_bool` (Equal). 16-bit floats compare as float.
template <typename Cmp>
std::unique_ptr<Kernel> comparison(const Node& node, bool with_bool, Cmp cmp) {
  return make_kernel([with_bool, who = node.op_type, cmp](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != b.dtype()) fail(who + ": input types differ: " + a.description() + " and " + b.description());
    if (a.dtype() == DataType::Bool && !with_bool) fail(who + ": bool inputs are not supported, got " + a.description());
    const Shape so = broadcast_shapes(a.shape(), b.shape());
    Tensor out(DataType::Bool, so);
    dispatch_any(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      broadcast_binary(a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.mutable_data<bool>(), so,
                       [&](T x, T y) { return cmp(to_compute(x), to_compute(y)); });
    });
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> make_equal(const Node& n) {
  return comparison(n, true, [](auto x, auto y) { return x == y; });
}
std::unique_ptr<Kernel> make_greater(const Node& n) {
  return comparison(n, false, [](auto x, auto y) { return x > y; });
}
std::unique_ptr<Kernel> make_less(const Node& n) {
  return comparison(n, false, [](auto x, auto y) { return x < y; });
}
std::unique_ptr<Kernel> make_greater_or_equal(const Node& n) {
  return comparison(n, false, [](auto x, auto y) { return x >= y; });
}
std::unique_ptr<Kernel> make_less_or_equal(const Node& n) {
  return comparison(n, false, [](auto x, auto y) { return x <= y; });
}

// bool out = f(a, b) over two bool inputs.
template <typename F>
std::unique_ptr<Kernel> logic(const Node& node, F f) {
  return make_kernel([who = node.op_type, f](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != DataType::Bool || b.dtype() != DataType::Bool)
      fail(who + ": inputs must be bool, got " + a.description() + " and " + b.description());
    const Shape so = broadcast_shapes(a.shape(), b.shape());
    Tensor out(DataType::Bool, so);
    broadcast_binary(a.data<bool>(), a.shape(), b.data<bool>(), b.shape(), out.mutable_data<bool>(), so, f);
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> make_and(const Node& n) {
  return logic(n, [](bool x, bool y) { return x && y; });
}
std::unique_ptr<Kernel> make_or(const Node& n) {
  return logic(n, [](bool x, bool y) { return x || y; });
}
std::unique_ptr<Kernel> make_xor(const Node& n) {
  return logic(n, [](bool x, bool y) { return x != y; });
}

std::unique_ptr<Kernel> make_not(const Node& node) {
  return make_kernel([who = node.op_type](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DataType::Bool) fail(who + ": input must be bool, got " + x.description());
    Tensor out(DataType::Bool, x.shape());
    const bool* in = x.data<bool>();
    bool* o = out.mutable_data<bool>();
    for (int64_t i = 0, n = x.size(); i < n; ++i) o[i] = !in[i];
    ctx.outputs[0] = std::move(out);
  });
}

// BitShift on unsigned integers. A shift by the type's width or more gives 0
// (a C++ shift that far is undefined).
std::unique_ptr<Kernel> make_bitshift(const Node& node) {
  const std::string direction = node.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    fail(node.op_type + ": attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"" + direction + "\"");
  const bool left = direction == "LEFT";
  return make_kernel([left, who = node.op_type](KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != b.dtype()) fail(who + ": input types differ: " + a.description() + " and " + b.description());
    const Shape so = broadcast_shapes(a.shape(), b.shape());
    dispatch_arith(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_unsigned_v<T>) {
        fail(who + ": inputs must be an unsigned integer type, got " + a.description());
      } else {
        Tensor out(a.dtype(), so);
        broadcast_binary(a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.mutable_data<T>(), so, [left](T x, T s) {
          if (static_cast<size_t>(s) >= sizeof(T) * 8) return T(0);
          const auto w = static_cast<wrap_t<T>>(x);  // no promotion to signed int
          return static_cast<T>(left ? w << s : w >> s);
        });
        ctx.outputs[0] = std::move(out);
      }
    });
  });
}

// Where: out = cond ? x : y, all three broadcast together; x and y of any one type.
std::unique_ptr<Kernel> make_where(const Node& node) {
  return make_kernel([who = node.op_type](KernelContext& ctx) {
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    if (c.dtype() != DataType::Bool) fail(who + ": condition must be bool, got " + c.description());
    if (x.dtype() != y.dtype()) fail(who + ": X and Y types differ: " + x.description() + " and " + y.description());
    const Shape so = broadcast_shapes(broadcast_shapes(c.shape(), x.shape()), y.shape());
    Tensor out(x.dtype(), so);
    dispatch_any(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      broadcast_ternary(c.data<bool>(), c.shape(), x.data<T>(), x.shape(), y.data<T>(), y.shape(),
                        out.mutable_data<T>(), so, [](bool cv, T xv, T yv) { return cv ? xv : yv; });
    });
    ctx.outputs[0] = std::move(out);
  });
}

}  // namespace

void register_logical(std::vector<KernelDef>& t) {
  t.push_back({"Equal", 7, 17, make_equal});
  t.push_back({"Greater", 7, 17, make_greater});
  t.push_back({"Less", 7, 17, make_less});
  t.push_back({"GreaterOrEqual", 12, 17, make_greater_or_equal});
  t.push_back({"LessOrEqual", 12, 17, make_less_or_equal});
  t.push_back({"And", 7, 17, make_and});
  t.push_back({"Or", 7, 17, make_or});
  t.push_back({"Xor", 7, 17, make_xor});
  t.push_back({"Not", 1, 17, make_not});
  t.push_back({"BitShift", 11, 17, make_bitshift});
  t.push_back({"Where", 9, 17, make_where});
}

}  // namespace epprof::rt::kernels
