// Linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// and the integer / quantized products MatMulInteger, QLinearMatMul,
// ConvInteger, QLinearConv (8-bit operands; per-tensor or per-row/column/
// channel zero points and scales where the operator defines them).
//
// Integer products are computed on zero-point-centred operands held as double
// and multiplied with OpenBLAS dgemm: exact while every sum stays below 2^53.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/conv_geometry.h"
#include "kernels/matmul_util.h"

namespace epprof::rt::kernels {

namespace {

bool is_8bit(DataType t) { return t == DataType::Uint8 || t == DataType::Int8; }

// Rounds half to even (the default FP environment), then saturates to Q's
// range; NaN maps to the range's low end rather than an undefined cast.
// Callers round before adding a zero point: with an odd zero point, rounding
// half to even afterwards would pick the other neighbour.
template <typename Q>
Q saturate_round(double v) {
  const double lo = static_cast<double>(std::numeric_limits<Q>::lowest());
  const double hi = static_cast<double>(std::numeric_limits<Q>::max());
  const double r = std::nearbyint(v);
  return static_cast<Q>(r > lo ? (r < hi ? r : hi) : lo);
}

// The values of an integer tensor of at most 32 bits, widened.
std::vector<int64_t> int_values(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.size()));
  switch (t.dtype()) {
    case DataType::Uint8: std::copy(t.data<uint8_t>(), t.data<uint8_t>() + t.size(), v.begin()); break;
    case DataType::Int8: std::copy(t.data<int8_t>(), t.data<int8_t>() + t.size(), v.begin()); break;
    case DataType::Int32: std::copy(t.data<int32_t>(), t.data<int32_t>() + t.size(), v.begin()); break;
    default: fail("expected a uint8, int8 or int32 tensor, got " + t.description());
  }
  return v;
}

// A scale or zero point: one value (a scalar or a 1-element tensor), or
// `count` values when `count` > 1 (per axis / row / column / channel).
void check_param(const Tensor& t, int64_t count, const std::string& what) {
  const bool scalar = t.size() == 1 && t.rank() <= 1;
  const bool per_axis = count > 1 && t.rank() == 1 && t.size() == count;
  if (!scalar && !per_axis)
    fail(what + " must be a scalar" + (count > 1 ? " or 1-D of size " + std::to_string(count) : std::string()) +
         ", got " + t.description());
}

std::vector<float> scales(const Tensor& t, int64_t count, const std::string& what) {
  require_float(t, what.c_str());
  check_param(t, count, what);
  for (int64_t i = 0; i < t.size(); ++i)
    if (!(t.data<float>()[i] > 0.0f) || !std::isfinite(t.data<float>()[i]))
      fail(what + " must be positive and finite, got " + std::to_string(t.data<float>()[i]));
  return t.to_vector<float>();
}

// Zero points default to 0 of `type`; a present one must have `type`.
std::vector<int64_t> zero_points(const Tensor* t, DataType type, int64_t count, const std::string& what) {
  if (!t) return {0};
  if (t->dtype() != type)
    fail(what + " must have type " + type_name(type) + ", got " + t->description());
  check_param(*t, count, what);
  return int_values(*t);
}

// Element i of a tensor viewed as [outer, count, inner] belongs to slice
// (i / inner) % count; parameters of size 1 apply to every slice.
template <typename P>
const P& slice_param(const std::vector<P>& v, int64_t i, int64_t inner, int64_t count) {
  return v.size() == 1 ? v[0] : v[static_cast<size_t>((i / inner) % count)];
}

// x - zero point, as double, for an 8-bit tensor.
std::vector<double> centered(const Tensor& x, const std::vector<int64_t>& zp, int64_t inner, int64_t count) {
  const std::vector<int64_t> v = int_values(x);
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = static_cast<double>(v[i] - slice_param(zp, static_cast<int64_t>(i), inner, count));
  return out;
}

void dgemm_nn(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, 0.0);
    return;
  }
  gemm_nn(m, n, k, a, b, c);  // split across the intra-op threads when large
}

// The axis along which QuantizeLinear / DequantizeLinear parameters vary:
// [outer, count, inner] for per-axis parameters, count 1 for per-tensor ones.
struct AxisView {
  int64_t inner = 1, count = 1;
};
AxisView axis_view(const Tensor& x, const Tensor& scale, int64_t axis) {
  AxisView v;
  if (scale.size() == 1 && scale.rank() <= 1) return v;
  if (x.rank() == 0) fail("per-axis quantization needs an input of rank >= 1, got " + x.description());
  const int64_t a = normalize_axis(axis, static_cast<int64_t>(x.rank()));
  v.count = x.dim(static_cast<size_t>(a));
  for (size_t d = static_cast<size_t>(a) + 1; d < x.rank(); ++d) v.inner *= x.dim(d);
  return v;
}

// --- QuantizeLinear / DequantizeLinear ---------------------------------------

template <typename Q>
void quantize(const Tensor& x, const std::vector<float>& scale, const std::vector<int64_t>& zp, AxisView av,
              Tensor& y) {
  Q* out = y.mutable_data<Q>();
  for (int64_t i = 0; i < x.size(); ++i) {
    const double v = x.dtype() == DataType::Float ? static_cast<double>(x.data<float>()[i])
                                                  : static_cast<double>(x.data<int32_t>()[i]);
    // x / scale is rounded in float, as the reference does
    const float q = static_cast<float>(v) / slice_param(scale, i, av.inner, av.count);
    out[i] = saturate_round<Q>(std::nearbyint(static_cast<double>(q)) +
                               static_cast<double>(slice_param(zp, i, av.inner, av.count)));
  }
}

std::unique_ptr<Kernel> make_quantize_linear(const Node& node) {
  const bool has_axis = node.opset >= 13;
  const int64_t axis = has_axis ? node.attr_int("axis", 1) : 0;
  return make_kernel([has_axis, axis](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DataType::Float && x.dtype() != DataType::Int32)
      fail("QuantizeLinear input x must be float or int32, got " + x.description());
    const Tensor& s = ctx.input(1);
    const AxisView av = has_axis ? axis_view(x, s, axis) : AxisView{};
    const std::vector<float> scale = scales(s, av.count, "QuantizeLinear y_scale");
    const Tensor* zt = ctx.optional_input(2);
    const DataType qt = zt ? zt->dtype() : DataType::Uint8;
    if (!is_8bit(qt)) fail("QuantizeLinear y_zero_point must be uint8 or int8, got " + zt->description());
    const std::vector<int64_t> zp = zero_points(zt, qt, av.count, "QuantizeLinear y_zero_point");
    Tensor y(qt, x.shape());
    if (qt == DataType::Uint8)
      quantize<uint8_t>(x, scale, zp, av, y);
    else
      quantize<int8_t>(x, scale, zp, av, y);
    ctx.outputs[0] = std::move(y);
  });
}

std::unique_ptr<Kernel> make_dequantize_linear(const Node& node) {
  const bool has_axis = node.opset >= 13;
  const int64_t axis = has_axis ? node.attr_int("axis", 1) : 0;
  return make_kernel([has_axis, axis](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (!is_8bit(x.dtype()) && x.dtype() != DataType::Int32)
      fail("DequantizeLinear input x must be uint8, int8 or int32, got " + x.description());
    const Tensor& s = ctx.input(1);
    const AxisView av = has_axis ? axis_view(x, s, axis) : AxisView{};
    const std::vector<float> scale = scales(s, av.count, "DequantizeLinear x_scale");
    const std::vector<int64_t> zp =
        zero_points(ctx.optional_input(2), x.dtype(), av.count, "DequantizeLinear x_zero_point");
    if (x.dtype() == DataType::Int32)
      for (int64_t z : zp)
        if (z != 0) fail("DequantizeLinear x_zero_point must be 0 for int32 input, got " + std::to_string(z));
    const std::vector<int64_t> xv = int_values(x);
    Tensor y(DataType::Float, x.shape());
    float* out = y.mutable_data<float>();
    for (int64_t i = 0; i < x.size(); ++i)
      out[i] = static_cast<float>(xv[static_cast<size_t>(i)] - slice_param(zp, i, av.inner, av.count)) *
               slice_param(scale, i, av.inner, av.count);
    ctx.outputs[0] = std::move(y);
  });
}

// y = saturate(round(x / scale) + zero_point), with the range [min(x, 0),
// max(x, 0)] mapped onto [0, 255].
std::unique_ptr<Kernel> make_dynamic_quantize_linear(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    require_float(x, "DynamicQuantizeLinear input x");
    const float* xv = x.data<float>();
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < x.size(); ++i) {
      if (std::isnan(xv[i])) fail("DynamicQuantizeLinear input x contains NaN");
      lo = std::min(lo, xv[i]);
      hi = std::max(hi, xv[i]);
    }
    if (!std::isfinite(lo) || !std::isfinite(hi)) fail("DynamicQuantizeLinear input x contains an infinity");
    const float scale = (hi - lo) / 255.0f;
    // An all-zero input has scale 0: every value quantizes to zero point 0.
    const uint8_t zp = scale > 0.0f ? saturate_round<uint8_t>(static_cast<double>(0.0f - lo / scale)) : 0;
    Tensor y(DataType::Uint8, x.shape());
    uint8_t* out = y.mutable_data<uint8_t>();
    for (int64_t i = 0; i < x.size(); ++i)
      out[i] = scale > 0.0f ? saturate_round<uint8_t>(std::nearbyint(static_cast<double>(xv[i] / scale)) + zp) : 0;
    ctx.outputs[0] = std::move(y);
    if (ctx.outputs.size() > 1) ctx.outputs[1] = Tensor::scalar<float>(scale);
    if (ctx.outputs.size() > 2) ctx.outputs[2] = Tensor::scalar<uint8_t>(zp);
  });
}

// --- MatMulInteger / QLinearMatMul ------------------------------------------

// The zero-point-centred product of two 8-bit matrices (batched as MatMul),
// accumulated exactly in double. A's zero point is per tensor or per row (M),
// B's per tensor or per column (N).
struct IntProduct {
  MatMulShape shape;
  std::vector<double> acc;  // out_shape elements
};
IntProduct int_matmul(const Tensor& a, const Tensor* a_zp, const Tensor& b, const Tensor* b_zp, const char* op) {
  const std::string name(op);
  if (!is_8bit(a.dtype()) || !is_8bit(b.dtype()))
    fail(name + " inputs must be uint8 or int8, got " + a.description() + " and " + b.description());
  IntProduct r;
  r.shape = resolve_matmul(a.shape(), b.shape(), op);
  const MatMulShape& ms = r.shape;
  const std::vector<double> ac =
      centered(a, zero_points(a_zp, a.dtype(), ms.m, name + " a_zero_point"), ms.k, ms.m);
  const std::vector<double> bc = centered(b, zero_points(b_zp, b.dtype(), ms.n, name + " b_zero_point"), 1, ms.n);
  r.acc.resize(static_cast<size_t>(shape_size(ms.out_shape)));
  const int64_t mk = ms.m * ms.k, kn = ms.k * ms.n, mn = ms.m * ms.n;
  for (size_t bi = 0; bi < ms.a_index.size(); ++bi)
    dgemm_nn(ms.m, ms.n, ms.k, ac.data() + ms.a_index[bi] * mk, bc.data() + ms.b_index[bi] * kn,
             r.acc.data() + static_cast<int64_t>(bi) * mn);
  return r;
}

// Saturates to int32 (the accumulator type ONNX specifies) instead of wrapping.
Tensor to_int32(const std::vector<double>& acc, const Shape& shape) {
  Tensor y(DataType::Int32, shape);
  int32_t* out = y.mutable_data<int32_t>();
  for (size_t i = 0; i < acc.size(); ++i) out[i] = saturate_round<int32_t>(acc[i]);
  return y;
}

std::unique_ptr<Kernel> make_matmul_integer(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const IntProduct p =
        int_matmul(ctx.input(0), ctx.optional_input(2), ctx.input(1), ctx.optional_input(3), "MatMulInteger");
    ctx.outputs[0] = to_int32(p.acc, p.shape.out_shape);
  });
}

// y = saturate(round(acc * a_scale * b_scale / y_scale) + y_zero_point), where
// `a_count`/`b_count` index the per-row/per-column (or per-channel) scales of
// element i: a_scale[(i / a_inner) % a_count], b_scale[(i / b_inner) % b_count].
template <typename Q>
void requantize(const std::vector<double>& acc, const std::vector<float>& a_scale, int64_t a_inner, int64_t a_count,
                const std::vector<float>& b_scale, int64_t b_inner, int64_t b_count, float y_scale, int64_t y_zp,
                Tensor& y) {
  Q* out = y.mutable_data<Q>();
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t ii = static_cast<int64_t>(i);
    const float multiplier =
        slice_param(a_scale, ii, a_inner, a_count) * slice_param(b_scale, ii, b_inner, b_count) / y_scale;
    out[i] = saturate_round<Q>(std::nearbyint(acc[i] * static_cast<double>(multiplier)) + static_cast<double>(y_zp));
  }
}

Tensor requantized(const std::vector<double>& acc, const Shape& shape, const std::vector<float>& a_scale,
                   int64_t a_inner, int64_t a_count, const std::vector<float>& b_scale, int64_t b_inner,
                   int64_t b_count, const Tensor& y_scale_t, const Tensor* y_zp_t, const std::string& op) {
  const float y_scale = scales(y_scale_t, 1, op + " y_scale")[0];
  const DataType qt = y_zp_t ? y_zp_t->dtype() : DataType::Uint8;
  if (!is_8bit(qt)) fail(op + " y_zero_point must be uint8 or int8, got " + y_zp_t->description());
  const int64_t y_zp = zero_points(y_zp_t, qt, 1, op + " y_zero_point")[0];
  Tensor y(qt, shape);
  if (qt == DataType::Uint8)
    requantize<uint8_t>(acc, a_scale, a_inner, a_count, b_scale, b_inner, b_count, y_scale, y_zp, y);
  else
    requantize<int8_t>(acc, a_scale, a_inner, a_count, b_scale, b_inner, b_count, y_scale, y_zp, y);
  return y;
}

std::unique_ptr<Kernel> make_qlinear_matmul(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const IntProduct p =
        int_matmul(ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5), "QLinearMatMul");
    const MatMulShape& ms = p.shape;
    // The output is [..., M, N]: rows are (i / N) % M, columns i % N.
    ctx.outputs[0] = requantized(p.acc, ms.out_shape, scales(ctx.input(1), ms.m, "QLinearMatMul a_scale"), ms.n, ms.m,
                                 scales(ctx.input(4), ms.n, "QLinearMatMul b_scale"), 1, ms.n, ctx.input(6),
                                 &ctx.input(7), "QLinearMatMul");
  });
}

// --- ConvInteger / QLinearConv ----------------------------------------------

struct ConvAttrs {
  WindowAttrs win;
  int64_t group = 1;
};

ConvAttrs conv_attrs(const Node& node) {
  ConvAttrs a;
  a.win = WindowAttrs::from_node(node);
  a.group = node.attr_int("group", 1);
  if (a.group <= 0) fail(node.describe() + ": group must be positive, got " + std::to_string(a.group));
  return a;
}

// The zero-point-centred convolution sums, exactly, as double. W's zero point
// is per tensor or per output channel (M).
std::vector<double> int_conv(const ConvAttrs& a, const Tensor& x, const Tensor* x_zp, const Tensor& w,
                             const Tensor* w_zp, const std::string& op, ConvShape& cs) {
  if (!is_8bit(x.dtype()) || !is_8bit(w.dtype()))
    fail(op + " inputs x and w must be uint8 or int8, got " + x.description() + " and " + w.description());
  cs = resolve_conv(a.win, a.group, x.shape(), w.shape(), op.c_str());
  const std::vector<double> xc = centered(x, zero_points(x_zp, x.dtype(), 1, op + " x_zero_point"), 1, 1);
  const std::vector<double> wc =
      centered(w, zero_points(w_zp, w.dtype(), cs.M, op + " w_zero_point"), cs.K, cs.M);
  std::vector<double> acc(static_cast<size_t>(shape_size(cs.out_shape)));
  conv_by_gemm(xc.data(), wc.data(), cs, acc.data(), dgemm_nn);
  return acc;
}

std::unique_ptr<Kernel> make_conv_integer(const Node& node) {
  const ConvAttrs a = conv_attrs(node);
  return make_kernel([a](KernelContext& ctx) {
    ConvShape cs;
    const std::vector<double> acc = int_conv(a, ctx.input(0), ctx.optional_input(2), ctx.input(1),
                                             ctx.optional_input(3), "ConvInteger", cs);
    ctx.outputs[0] = to_int32(acc, cs.out_shape);
  });
}

std::unique_ptr<Kernel> make_qlinear_conv(const Node& node) {
  const ConvAttrs a = conv_attrs(node);
  return make_kernel([a](KernelContext& ctx) {
    ConvShape cs;
    std::vector<double> acc =
        int_conv(a, ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5), "QLinearConv", cs);
    if (const Tensor* bias = ctx.optional_input(8)) {
      if (bias->dtype() != DataType::Int32 || bias->rank() != 1 || bias->size() != cs.M)
        fail("QLinearConv bias B must be int32[" + std::to_string(cs.M) + "], got " + bias->description());
      for (size_t i = 0; i < acc.size(); ++i)
        acc[i] += bias->data<int32_t>()[(static_cast<int64_t>(i) / cs.P) % cs.M];
    }
    // Output channel of element i: (i / P) % M.
    ctx.outputs[0] = requantized(acc, cs.out_shape, scales(ctx.input(1), 1, "QLinearConv x_scale"), 1, 1,
                                 scales(ctx.input(4), cs.M, "QLinearConv w_scale"), cs.P, cs.M, ctx.input(6),
                                 &ctx.input(7), "QLinearConv");
  });
}

}  // namespace

void register_quantized(std::vector<KernelDef>& t) {
  t.push_back({"QuantizeLinear", 10, 17, make_quantize_linear});
  t.push_back({"DequantizeLinear", 10, 17, make_dequantize_linear});
  t.push_back({"DynamicQuantizeLinear", 11, 17, make_dynamic_quantize_linear});
  t.push_back({"MatMulInteger", 10, 17, make_matmul_integer});
  t.push_back({"QLinearMatMul", 10, 17, make_qlinear_matmul});
  t.push_back({"ConvInteger", 10, 17, make_conv_integer});
  t.push_back({"QLinearConv", 10, 17, make_qlinear_conv});
}

}  // namespace epprof::rt::kernels
