// Tensor construction and rearrangement: Pad, ConstantOfShape, Expand, Range,
// Tile, Split, Size, EyeLike, Trilu, DepthToSpace, SpaceToDepth, CumSum,
// ReverseSequence.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/broadcast.h"
#include "kernels/common.h"
#include "kernels/indexing_util.h"

namespace epprof::rt::kernels {

namespace {

// ---- Pad ------------------------------------------------------------------

enum class PadMode { Constant, Reflect, Edge };

PadMode pad_mode_of(const Node& node) {
  const std::string m = node.attr_string("mode", "constant");
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "edge") return PadMode::Edge;
  fail(node.describe() + ": attribute 'mode' must be 'constant', 'reflect' or 'edge', got '" + m + "'");
}

// Source index along one dim for output position o, or -1 for the constant.
// Reflection repeats with period 2(n-1), as numpy's "reflect" does when the
// pad exceeds the dimension.
int64_t pad_source(int64_t o, int64_t pad_begin, int64_t n, PadMode mode) {
  int64_t i = o - pad_begin;
  if (i >= 0 && i < n) return i;
  if (mode == PadMode::Constant) return -1;
  if (mode == PadMode::Edge || n == 1) return i < 0 ? 0 : n - 1;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

// The output positions [lo, hi) of a dim of n elements padded to len, with
// `begin` padded before it, whose source is position - begin: inside X.
struct Interior {
  int64_t lo, hi;
};
Interior interior(int64_t begin, int64_t n, int64_t len) {
  const int64_t lo = std::clamp<int64_t>(begin, 0, len);
  return {lo, std::clamp<int64_t>(begin + n, lo, len)};
}

// out (of shape os) from in: src[d][o] is output position o's source index
// along dim d (pad_source; along the last dim, outside its interior only),
// `last_begin` the last dim's begin pad. Every element of out is written.
template <typename T>
void pad_copy(const T* in, const Shape& in_shape, const std::vector<std::vector<int64_t>>& src, const Shape& os,
              int64_t last_begin, T value, T* out) {
  const int64_t total = shape_size(os);
  if (total == 0) return;
  const size_t r = os.size();
  if (r == 0) {
    out[0] = in[0];
    return;
  }
  const std::vector<int64_t> stride = strides_of(in_shape);
  const std::vector<int64_t>& last = src[r - 1];
  const int64_t inner = os[r - 1];
  // A row's outputs [lo, hi) read its source elements j - last_begin in
  // order, one copy; only the padded ends look their sources up. (The
  // lookup per element took Silero VAD's reflect pad of a 512-sample row
  // 1.3 us.)
  const auto [lo, hi] = interior(last_begin, in_shape[r - 1], inner);
  std::vector<int64_t> idx(r, 0);
  for (int64_t base = 0; base < total; base += inner) {
    // The row's source offset from the outer dims, or padding if any of them pads.
    int64_t off = 0;
    bool padding = false;
    for (size_t d = 0; d + 1 < r; ++d) {
      const int64_t s = src[d][static_cast<size_t>(idx[d])];
      padding |= s < 0;
      off += s * stride[d];
    }
    if (padding) {
      std::fill(out + base, out + base + inner, value);
    } else {
      const auto looked_up = [&](int64_t j) {
        const int64_t s = last[static_cast<size_t>(j)];
        out[base + j] = s < 0 ? value : in[off + s];
      };
      for (int64_t j = 0; j < lo; ++j) looked_up(j);
      std::copy_n(in + off + (lo - last_begin), hi - lo, out + base + lo);
      for (int64_t j = hi; j < inner; ++j) looked_up(j);
    }
    for (size_t d = r - 1; d-- > 0;) {
      if (++idx[d] < os[d]) break;
      idx[d] = 0;
    }
  }
}

// Opset 2..10: pads and value are attributes; 11+: inputs pads and optional constant_value.
std::unique_ptr<Kernel> make_pad(const Node& node) {
  const PadMode mode = pad_mode_of(node);
  const bool from_inputs = node.opset >= 11;
  std::vector<int64_t> pads_attr;
  float value_attr = 0.0f;
  if (!from_inputs) {
    if (!node.has_attr("pads")) fail(node.describe() + ": attribute 'pads' is required");
    pads_attr = node.attr_ints("pads");
    value_attr = node.attr_float("value", 0.0f);
  }
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t> pads = from_inputs ? read_indices(ctx.input(1), "input 'pads'") : pads_attr;
    const size_t r = x.rank();
    if (pads.size() != 2 * r)
      fail("pads has " + std::to_string(pads.size()) + " values, expected 2 * rank = " + std::to_string(2 * r) +
           " for " + x.description());
    const Tensor* cv = from_inputs ? ctx.optional_input(2) : nullptr;
    if (cv && (cv->dtype() != x.dtype() || cv->size() != 1))
      fail("constant_value must be one " + std::string(type_name(x.dtype())) + ", got " + cv->description());
    Shape os(r);
    std::vector<std::vector<int64_t>> src(r);
    for (size_t d = 0; d < r; ++d) {
      const int64_t n = x.dim(d);
      // A negative pad crops; cropping more than the whole dim is an error (and
      // bounding it keeps o - pad_begin in pad_source from overflowing).
      int64_t len = 0;
      if (pads[d] < -n || pads[d + r] < -n || __builtin_add_overflow(n, pads[d], &len) ||
          __builtin_add_overflow(len, pads[d + r], &len) || len < 0)
        fail("pads " + std::to_string(pads[d]) + ", " + std::to_string(pads[d + r]) + " on dimension " +
             std::to_string(d) + " of " + x.description() + " give an invalid size");
      if (n == 0 && len > 0 && mode != PadMode::Constant)
        fail("cannot pad the empty dimension " + std::to_string(d) + " of " + x.description() + " in " +
             (mode == PadMode::Edge ? "edge" : "reflect") + " mode");
      os[d] = len;
    }
    // Allocated before the index maps, so a huge shape fails first;
    // pad_copy writes every element.
    Tensor out = Tensor::uninitialized(x.dtype(), os);
    for (size_t d = 0; d < r; ++d) {
      src[d].resize(static_cast<size_t>(os[d]));
      auto map = [&](int64_t o) { src[d][static_cast<size_t>(o)] = pad_source(o, pads[d], x.dim(d), mode); };
      // Along the last dim, pad_copy looks up the padded ends only.
      const Interior in = d + 1 == r ? interior(pads[d], x.dim(d), os[d]) : Interior{os[d], os[d]};
      for (int64_t o = 0; o < in.lo; ++o) map(o);
      for (int64_t o = in.hi; o < os[d]; ++o) map(o);
    }
    dispatch_any(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T value = cv ? cv->data<T>()[0] : cast_checked<T>(value_attr, "Pad value");
      pad_copy(x.data<T>(), x.shape(), src, os, r ? pads[r - 1] : 0, value, out.mutable_data<T>());
    });
    ctx.outputs[0] = std::move(out);
  });
}

// ---- construction ---------------------------------------------------------

// A 1-D int64 shape input with non-negative entries.
Shape read_shape(const Tensor& t, const char* what) {
  if (t.rank() != 1) fail(std::string(what) + " must be a 1-D tensor, got " + t.description());
  Shape s = read_indices(t, what);
  for (int64_t d : s)
    if (d < 0) fail(std::string(what) + " has a negative dimension in " + shape_to_string(s));
  return s;
}

std::unique_ptr<Kernel> make_constant_of_shape(const Node& node) {
  Tensor value = Tensor::scalar(0.0f);
  if (node.has_attr("value")) {
    const Attribute* a = node.attr("value");
    if (a->kind != Attribute::Kind::Tensor || a->t.size() != 1)
      fail(node.describe() + ": attribute 'value' must be a one-element tensor");
    value = a->t;
  }
  return make_kernel([value](KernelContext& ctx) {
    Tensor out(value.dtype(), read_shape(ctx.input(0), "input 'input' (the shape)"));
    dispatch_any(value.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* p = out.mutable_data<T>();
      std::fill(p, p + out.size(), value.data<T>()[0]);
    });
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> make_expand(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Shape os = broadcast_shapes(x.shape(), read_shape(ctx.input(1), "input 'shape'"));
    ctx.outputs[0] = strided_view(x, 0, os, broadcast_strides(x.shape(), os));
  });
}

// Number of elements of Range(start, limit, delta) for integers. Distances
// are taken in uint64, where the difference of two int64 always fits.
int64_t range_count(int64_t start, int64_t limit, int64_t delta) {
  if ((delta > 0) != (limit > start) || limit == start) return 0;
  const uint64_t dist = limit > start ? uint64_t(limit) - uint64_t(start) : uint64_t(start) - uint64_t(limit);
  const uint64_t step = delta > 0 ? uint64_t(delta) : uint64_t{0} - uint64_t(delta);
  const uint64_t n = (dist - 1) / step + 1;
  if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail("Range: too many elements");
  return static_cast<int64_t>(n);
}

template <typename T>
Tensor range_impl(T start, T limit, T delta) {
  if (delta == T(0)) fail("Range: delta must not be 0");
  int64_t n = 0;
  if constexpr (std::is_floating_point_v<T>) {
    const double count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
    if (std::isnan(count) || count > 1e15)  // the tensor allocation limit is far below 1e15
      fail("Range: start " + std::to_string(start) + ", limit " + std::to_string(limit) + ", delta " +
           std::to_string(delta) + " give no finite element count");
    n = count > 0 ? static_cast<int64_t>(count) : 0;
  } else {
    n = range_count(start, limit, delta);
  }
  Tensor out(data_type_of<T>(), {n});
  T* p = out.mutable_data<T>();
  if constexpr (std::is_floating_point_v<T>) {
    for (int64_t i = 0; i < n; ++i) p[i] = start + static_cast<T>(i) * delta;
  } else {
    // Each value lies between start and limit, so uint64 arithmetic modulo 2^64 gives it exactly.
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<T>(static_cast<int64_t>(uint64_t(int64_t{start}) + uint64_t(i) * uint64_t(int64_t{delta})));
  }
  return out;
}

std::unique_ptr<Kernel> make_range(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const Tensor& s = ctx.input(0);
    const Tensor& l = ctx.input(1);
    const Tensor& d = ctx.input(2);
    const char* names[] = {"start", "limit", "delta"};
    const Tensor* in[] = {&s, &l, &d};
    for (int i = 0; i < 3; ++i) {
      if (in[i]->size() != 1 || in[i]->rank() > 1)
        fail(std::string("input '") + names[i] + "' must be a scalar, got " + in[i]->description());
      if (in[i]->dtype() != s.dtype())
        fail("inputs start, limit and delta must share one type, got " + s.description() + ", " +
             l.description() + ", " + d.description());
    }
    auto run = [&](auto tag) {
      using T = decltype(tag);
      ctx.outputs[0] = range_impl<T>(s.data<T>()[0], l.data<T>()[0], d.data<T>()[0]);
    };
    switch (s.dtype()) {
      case DataType::Float: run(float{}); break;
      case DataType::Double: run(double{}); break;
      case DataType::Int16: run(int16_t{}); break;
      case DataType::Int32: run(int32_t{}); break;
      case DataType::Int64: run(int64_t{}); break;
      default: fail(std::string("Range is defined for float, double, int16, int32 and int64, got ") + type_name(s.dtype()));
    }
  });
}

// Tile as a strided view: dims [r0, d0, r1, d1, ...] with stride 0 on the repeats.
std::unique_ptr<Kernel> make_tile(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Shape reps = read_shape(ctx.input(1), "input 'repeats'");
    if (reps.size() != x.rank())
      fail("repeats has " + std::to_string(reps.size()) + " values for " + x.description());
    const std::vector<int64_t> st = strides_of(x.shape());
    Shape view, os;
    std::vector<int64_t> vst;
    for (size_t d = 0; d < x.rank(); ++d) {
      view.insert(view.end(), {reps[d], x.dim(d)});
      vst.insert(vst.end(), {0, st[d]});
      os.push_back(checked_mul(reps[d], x.dim(d), "Tile output dimension"));
    }
    ctx.outputs[0] = strided_view(x, 0, view, vst).reshaped(std::move(os));
  });
}

// Opset 2..12: split sizes in the attribute 'split'; 13+: in the optional input.
std::unique_ptr<Kernel> make_split(const Node& node) {
  const int64_t axis_attr = node.attr_int("axis", 0);
  const bool from_input = node.opset >= 13;
  const std::vector<int64_t> split_attr = node.attr_ints("split");
  for (int64_t v : split_attr)
    if (v < 0) fail(node.describe() + ": attribute 'split' has a negative size " + std::to_string(v));
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(x.rank())));
    const int64_t dim = x.dim(axis);
    const size_t parts = ctx.outputs.size();
    std::vector<int64_t> sizes = split_attr;
    if (from_input) {
      const Tensor* t = ctx.optional_input(1);
      sizes = t ? read_indices(*t, "input 'split'") : std::vector<int64_t>{};
    }
    if (sizes.empty()) {
      if (dim % static_cast<int64_t>(parts))
        fail("dimension " + std::to_string(axis) + " of " + x.description() + " does not split into " +
             std::to_string(parts) + " equal parts");
      sizes.assign(parts, dim / static_cast<int64_t>(parts));
    }
    int64_t sum = 0;
    bool fits = true;
    for (int64_t v : sizes) {
      if (v < 0) fail("split has a negative size " + std::to_string(v));
      fits = fits && v <= dim - sum;  // sum <= dim throughout: no overflow
      if (fits) sum += v;
    }
    if (!fits || sizes.size() != parts || sum != dim)
      fail("split sizes " + shape_to_string(sizes) + " do not split dimension " + std::to_string(axis) + " of " +
           x.description() + " into " + std::to_string(parts) + " outputs");
    const AxisSplit s = split_at(x.shape(), axis);
    const size_t es = element_size(x.dtype()), row = static_cast<size_t>(dim * s.inner) * es;
    const char* src = static_cast<const char*>(x.raw());
    size_t col = 0;
    for (size_t k = 0; k < parts; ++k) {
      Shape os = x.shape();
      os[axis] = sizes[k];
      Tensor out(x.dtype(), os);
      const size_t chunk = static_cast<size_t>(sizes[k] * s.inner) * es;
      char* dst = static_cast<char*>(out.raw_mutable());
      if (chunk)
        for (int64_t o = 0; o < s.outer; ++o)
          std::memcpy(dst + static_cast<size_t>(o) * chunk, src + static_cast<size_t>(o) * row + col, chunk);
      col += chunk;
      ctx.outputs[k] = std::move(out);
    }
  });
}

std::unique_ptr<Kernel> make_size(const Node&) {
  return make_kernel([](KernelContext& ctx) { ctx.outputs[0] = Tensor::scalar<int64_t>(ctx.input(0).size()); });
}

std::unique_ptr<Kernel> make_eye_like(const Node& node) {
  const int64_t k_attr = node.attr_int("k", 0);
  const bool has_dtype = node.has_attr("dtype");
  const int64_t dtype = node.attr_int("dtype", 0);
  if (has_dtype && (dtype < 1 || dtype > 16 || !is_supported_type(static_cast<int>(dtype))))
    fail(node.describe() + ": attribute 'dtype' " + std::to_string(dtype) + " is not a supported element type");
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 2) fail("EyeLike input must be 2-D, got " + x.description());
    Tensor out(has_dtype ? static_cast<DataType>(dtype) : x.dtype(), x.shape());
    const int64_t rows = x.dim(0), cols = x.dim(1);
    const int64_t k = std::clamp(k_attr, -rows, cols);  // beyond these the matrix is all zero anyway
    dispatch_any(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* p = out.mutable_data<T>();
      const T one = cast_checked<T>(1.0, "one");
      for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i) p[i * cols + i + k] = one;
    });
    ctx.outputs[0] = std::move(out);
  });
}

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each trailing matrix.
std::unique_ptr<Kernel> make_trilu(const Node& node) {
  const bool upper = node.attr_int("upper", 1) != 0;
  return make_kernel([upper](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) fail("Trilu input must have rank >= 2, got " + x.description());
    const Tensor* kt = ctx.optional_input(1);
    const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    const int64_t k = std::clamp(kt ? read_scalar_index(*kt, "input 'k'") : 0, -rows - 1, cols + 1);
    Tensor out(x.dtype(), x.shape());
    const size_t es = element_size(x.dtype());
    const char* src = static_cast<const char*>(x.raw());
    char* dst = static_cast<char*>(out.raw_mutable());
    const int64_t mats = rows != 0 && cols != 0 ? x.size() / (rows * cols) : 0;
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t b = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
        const int64_t e = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
        const size_t off = static_cast<size_t>((m * rows + i) * cols + b) * es;
        if (e > b) std::memcpy(dst + off, src + off, static_cast<size_t>(e - b) * es);
      }
    ctx.outputs[0] = std::move(out);
  });
}

// ---- depth <-> space --------------------------------------------------------

int64_t blocksize_of(const Node& node) {
  if (!node.has_attr("blocksize")) fail(node.describe() + ": attribute 'blocksize' is required");
  const int64_t b = node.attr_int("blocksize", 0);
  if (b < 1) fail(node.describe() + ": attribute 'blocksize' must be positive, got " + std::to_string(b));
  return b;
}

// Both are one reshape-transpose-reshape, i.e. a strided view of the input.
std::unique_ptr<Kernel> make_depth_to_space(const Node& node) {
  const int64_t b = blocksize_of(node);
  const std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    fail(node.describe() + ": attribute 'mode' must be 'DCR' or 'CRD', got '" + mode + "'");
  const bool dcr = mode == "DCR";
  return make_kernel([b, dcr](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 4) fail("DepthToSpace input must be 4-D (N, C, H, W), got " + x.description());
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    const int64_t bb = checked_mul(b, b, "DepthToSpace blocksize^2");
    if (c % bb) fail("channels of " + x.description() + " are not divisible by blocksize^2 = " + std::to_string(bb));
    const int64_t oc = c / bb, hw = h * w;
    // Input channel = b1*b*oc + b2*oc + c' (DCR) or c'*b*b + b1*b + b2 (CRD).
    const int64_t sc = dcr ? hw : b * b * hw, sb1 = dcr ? b * oc * hw : b * hw, sb2 = dcr ? oc * hw : hw;
    const Tensor v = strided_view(x, 0, {n, oc, h, b, w, b}, {c * hw, sc, w, sb1, 1, sb2});
    ctx.outputs[0] = v.reshaped({n, oc, checked_mul(h, b, "DepthToSpace height"), checked_mul(w, b, "DepthToSpace width")});
  });
}

std::unique_ptr<Kernel> make_space_to_depth(const Node& node) {
  const int64_t b = blocksize_of(node);
  return make_kernel([b](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 4) fail("SpaceToDepth input must be 4-D (N, C, H, W), got " + x.description());
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (h % b || w % b) fail("height and width of " + x.description() + " are not divisible by blocksize " + std::to_string(b));
    // Output channel = b1*b*C + b2*C + c, from x[n][c][h'*b + b1][w'*b + b2].
    const Tensor v = strided_view(x, 0, {n, b, b, c, h / b, w / b}, {c * h * w, w, 1, h * w, b * w, b});
    ctx.outputs[0] = v.reshaped({n, checked_mul(c, checked_mul(b, b, "SpaceToDepth"), "SpaceToDepth channels"), h / b, w / b});
  });
}

// ---- CumSum, ReverseSequence ----------------------------------------------

std::unique_ptr<Kernel> make_cumsum(const Node& node) {
  const bool exclusive = node.attr_int("exclusive", 0) != 0;
  const bool reverse = node.attr_int("reverse", 0) != 0;
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const int64_t axis = normalize_axis(read_scalar_index(ctx.input(1), "input 'axis'"), static_cast<int64_t>(x.rank()));
    const AxisSplit s = split_at(x.shape(), static_cast<size_t>(axis));
    Tensor out(x.dtype(), x.shape());
    dispatch_real(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* in = x.data<T>();
      T* o = out.mutable_data<T>();
      std::vector<C> acc(static_cast<size_t>(s.inner));
      for (int64_t b = 0; b < s.outer; ++b) {
        std::fill(acc.begin(), acc.end(), C(0));
        // Rows along the axis, each row contiguous over the inner dims.
        for (int64_t step = 0; step < s.n; ++step) {
          const int64_t k = reverse ? s.n - 1 - step : step;
          const int64_t row = (b * s.n + k) * s.inner;
          for (int64_t i = 0; i < s.inner; ++i) {
            C& a = acc[static_cast<size_t>(i)];
            const C v = to_compute(in[row + i]);
            if (exclusive) {
              o[row + i] = from_compute<T>(a);
              a = wrap_add(a, v);
            } else {
              a = wrap_add(a, v);
              o[row + i] = from_compute<T>(a);
            }
          }
        }
      }
    });
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> make_reverse_sequence(const Node& node) {
  const int64_t time_axis = node.attr_int("time_axis", 0), batch_axis = node.attr_int("batch_axis", 1);
  if ((time_axis != 0 && time_axis != 1) || (batch_axis != 0 && batch_axis != 1) || time_axis == batch_axis)
    fail(node.describe() + ": attributes 'time_axis' and 'batch_axis' must be 0 and 1 in some order, got " +
         std::to_string(time_axis) + " and " + std::to_string(batch_axis));
  return make_kernel([time_axis, batch_axis](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) fail("ReverseSequence input must have rank >= 2, got " + x.description());
    const std::vector<int64_t> lens = read_indices(ctx.input(1), "input 'sequence_lens'");
    const int64_t steps = x.dim(static_cast<size_t>(time_axis)), batch = x.dim(static_cast<size_t>(batch_axis));
    if (ctx.input(1).rank() != 1 || static_cast<int64_t>(lens.size()) != batch)
      fail("sequence_lens must be 1-D with " + std::to_string(batch) + " entries, got " + ctx.input(1).description());
    for (int64_t l : lens)
      if (l < 0 || l > steps)
        fail("sequence length " + std::to_string(l) + " is out of range [0, " + std::to_string(steps) + "]");
    Tensor out = x.clone();
    const size_t chunk = static_cast<size_t>(split_at(x.shape(), 1).inner) * element_size(x.dtype());
    auto offset = [&](int64_t t, int64_t bi) {
      return static_cast<size_t>(time_axis == 0 ? t * batch + bi : bi * steps + t) * chunk;
    };
    const char* src = static_cast<const char*>(x.raw());
    char* dst = static_cast<char*>(out.raw_mutable());
    if (chunk)
      for (int64_t bi = 0; bi < batch; ++bi)
        for (int64_t t = 0; t < lens[static_cast<size_t>(bi)]; ++t)
          std::memcpy(dst + offset(t, bi), src + offset(lens[static_cast<size_t>(bi)] - 1 - t, bi), chunk);
    ctx.outputs[0] = std::move(out);
  });
}

}  // namespace

void register_tensor_ops(std::vector<KernelDef>& t) {
  t.push_back({"Pad", 2, 17, make_pad});
  t.push_back({"ConstantOfShape", 9, 17, make_constant_of_shape});
  t.push_back({"Expand", 8, 17, make_expand});
  t.push_back({"Range", 11, 17, make_range});
  t.push_back({"Tile", 6, 17, make_tile});
  t.push_back({"Split", 2, 17, make_split});
  t.push_back({"Size", 1, 17, make_size});
  t.push_back({"EyeLike", 9, 17, make_eye_like});
  t.push_back({"Trilu", 14, 17, make_trilu});
  t.push_back({"DepthToSpace", 1, 17, make_depth_to_space});
  t.push_back({"SpaceToDepth", 1, 17, make_space_to_depth});
  t.push_back({"CumSum", 11, 17, make_cumsum});
  t.push_back({"ReverseSequence", 10, 17, make_reverse_sequence});
}

}  // namespace epprof::rt::kernels
