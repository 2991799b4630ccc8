// Indexing ops: Slice; the gather and scatter families (GatherElements,
// GatherND, ScatterElements, Scatter, ScatterND); TopK, ArgMax, ArgMin,
// Hardmax; Compress, NonZero, OneHot and Unique.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/common.h"
#include "kernels/indexing_util.h"

namespace epprof::rt::kernels {

namespace {

// ---- Slice ----------------------------------------------------------------

// Opset 1..9: starts/ends/axes are attributes; 10+: inputs, with optional
// axes and steps, read once when they are constants of the session
// (prepare): Silero VAD's STFT slices a frame five times a run, and reading
// four index tensors into vectors on every call cost as much as the copy.
class SliceKernel final : public Kernel {
 public:
  explicit SliceKernel(const Node& node) : from_inputs_(node.opset >= 10) {
    if (from_inputs_) return;
    if (!node.has_attr("starts") || !node.has_attr("ends"))
      fail(node.describe() + ": attributes 'starts' and 'ends' are required");
    fixed_ = {node.attr_ints("starts"), node.attr_ints("ends"), node.attr_ints("axes"), {}};
  }

  void prepare(const std::vector<const Tensor*>& constants) noexcept override {
    if (!from_inputs_) return;
    try {
      Params p;
      for (size_t i = 1; i < kIndexInputs; ++i) {
        const Tensor* t = i < constants.size() ? constants[i] : nullptr;
        if (!t && i < 3) return;  // starts and ends are read per call
        if (t) {
          p.of(i) = read_indices(*t, kWhat[i]);
          prepared_from_[i] = *t;
        }
      }
      fixed_ = std::move(p);
      prepared_ = true;
    } catch (...) {  // not index tensors (compute names the error), or no memory: read per call
      for (Tensor& t : prepared_from_) t = Tensor();
    }
  }

  void compute(KernelContext& ctx) const override {
    Params read;
    const Params& p = from_inputs_ && !prepared_for(ctx) ? read_from(ctx, read) : fixed_;
    const Tensor& x = ctx.input(0);
    const size_t m = p.starts.size();
    const size_t r = x.rank();
    if (p.ends.size() != m || (!p.axes.empty() && p.axes.size() != m) || (!p.steps.empty() && p.steps.size() != m))
      fail("starts, ends, axes and steps have " + std::to_string(m) + ", " + std::to_string(p.ends.size()) + ", " +
           std::to_string(p.axes.empty() ? m : p.axes.size()) + " and " +
           std::to_string(p.steps.empty() ? m : p.steps.size()) + " values; they must match");
    // The view: X's strides scaled by each dim's step, from the first
    // element taken; axes given twice are an error.
    Shape os = x.shape();
    std::vector<int64_t> view_stride = strides_of(os);
    int64_t offset = 0;
    std::vector<bool> seen(r, false);
    for (size_t j = 0; j < m; ++j) {
      const int64_t axis = p.axes.empty() ? static_cast<int64_t>(j) : p.axes[j];
      const size_t a = static_cast<size_t>(normalize_axis(axis, static_cast<int64_t>(r)));
      if (seen[a]) fail("Slice axis " + std::to_string(axis) + " is given twice");
      seen[a] = true;
      const int64_t d = x.dim(a), step = p.steps.empty() ? 1 : p.steps[j];
      if (step == 0) fail("Slice step for axis " + std::to_string(axis) + " is 0");
      // A step of magnitude >= d takes at most one element, like d itself does;
      // clamping keeps the arithmetic below far from overflow.
      const int64_t st = std::clamp<int64_t>(step, -std::max<int64_t>(d, 1), std::max<int64_t>(d, 1));
      int64_t s = p.starts[j] < 0 ? p.starts[j] + d : p.starts[j];  // negative + d >= 0 cannot overflow
      int64_t e = p.ends[j] < 0 ? p.ends[j] + d : p.ends[j];
      int64_t len = 0;
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, d);
        e = std::clamp<int64_t>(e, 0, d);
        len = e > s ? (e - s - 1) / st + 1 : 0;
      } else if (d > 0) {
        s = std::clamp<int64_t>(s, 0, d - 1);
        e = std::clamp<int64_t>(e, -1, d - 1);
        len = s > e ? (s - e - 1) / -st + 1 : 0;
      }
      os[a] = len;
      if (len) offset += s * view_stride[a];
      view_stride[a] *= st;
    }
    ctx.outputs[0] = strided_view(x, offset, os, view_stride);
  }

 private:
  static constexpr size_t kIndexInputs = 5;  // data, starts, ends, axes, steps
  static constexpr const char* kWhat[kIndexInputs] = {"", "input 'starts'", "input 'ends'", "input 'axes'",
                                                      "input 'steps'"};
  struct Params {
    std::vector<int64_t> starts, ends, axes, steps;  // axes, steps: empty when not given
    std::vector<int64_t>& of(size_t input) { return input == 1 ? starts : input == 2 ? ends : input == 3 ? axes : steps; }
  };

  // Whether the run feeds the very index tensors prepare() read.
  bool prepared_for(const KernelContext& ctx) const {
    if (!prepared_) return false;
    for (size_t i = 1; i < kIndexInputs; ++i) {
      const Tensor* t = i < ctx.inputs.size() ? ctx.inputs[i] : nullptr;
      if ((t != nullptr) != !prepared_from_[i].empty() || (t && !t->shares_buffer(prepared_from_[i]))) return false;
    }
    return true;
  }

  static const Params& read_from(const KernelContext& ctx, Params& p) {
    p.starts = read_indices(ctx.input(1), kWhat[1]);
    p.ends = read_indices(ctx.input(2), kWhat[2]);
    if (const Tensor* t = ctx.optional_input(3)) p.axes = read_indices(*t, kWhat[3]);
    if (const Tensor* t = ctx.optional_input(4)) p.steps = read_indices(*t, kWhat[4]);
    return p;
  }

  const bool from_inputs_;
  Params fixed_;           // the attributes (opset < 10), or the prepared inputs
  bool prepared_ = false;  // fixed_ holds the constant inputs, read from prepared_from_
  Tensor prepared_from_[kIndexInputs];
};

std::unique_ptr<Kernel> make_slice(const Node& node) { return std::make_unique<SliceKernel>(node); }

// ---- element-wise gather / scatter ------------------------------------------

enum class Reduction { None, Add, Mul };

Reduction reduction_of(const Node& node) {
  const std::string r = node.attr_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  fail(node.describe() + ": attribute 'reduction' must be 'none', 'add' or 'mul', got '" + r + "'");
}

template <typename T>
void reduce_into(T& dst, T src, Reduction r) {
  if constexpr (std::is_same_v<T, bool>) {
    dst = r == Reduction::None ? src : r == Reduction::Add ? (dst || src) : (dst && src);
  } else {
    if (r == Reduction::None) dst = src;
    else if (r == Reduction::Add) dst = from_compute<T>(wrap_add(to_compute(dst), to_compute(src)));
    else dst = from_compute<T>(wrap_mul(to_compute(dst), to_compute(src)));
  }
}

// Checks GatherElements/ScatterElements operands: indices of data's rank, no
// larger than data on the other axes.
void check_element_indices(const Tensor& data, const Tensor& indices, size_t axis) {
  if (indices.rank() != data.rank())
    fail("indices " + indices.description() + " must have the rank of data " + data.description());
  for (size_t d = 0; d < data.rank(); ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      fail("indices " + indices.description() + " exceed data " + data.description() + " on axis " + std::to_string(d));
}

// Calls f(p, base) for each position p of `shape` (row-major), where base is
// the offset in data of the same coordinates with the `axis` coordinate at 0.
template <typename F>
void for_each_element(const Shape& shape, const std::vector<int64_t>& data_stride, size_t axis, F f) {
  const int64_t n = shape_size(shape);
  const size_t r = shape.size();
  std::vector<int64_t> idx(r, 0);
  int64_t base = 0;
  for (int64_t p = 0; p < n; ++p) {
    f(p, base);
    for (size_t d = r; d-- > 0;) {
      const int64_t s = d == axis ? 0 : data_stride[d];
      base += s;
      if (++idx[d] < shape[d]) break;
      base -= s * shape[d];
      idx[d] = 0;
    }
  }
}

std::unique_ptr<Kernel> make_gather_elements(const Node& node) {
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([axis_attr](KernelContext& ctx) {
    const Tensor& data = ctx.input(0);
    const Tensor& it = ctx.input(1);
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(data.rank())));
    check_element_indices(data, it, axis);
    const std::vector<int64_t> idx = read_indices(it, "input 'indices'");
    const std::vector<int64_t> ds = strides_of(data.shape());
    const int64_t n = data.dim(axis);
    Tensor out(data.dtype(), it.shape());
    dispatch_any(data.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = data.data<T>();
      T* o = out.mutable_data<T>();
      for_each_element(it.shape(), ds, axis, [&](int64_t p, int64_t base) {
        o[p] = in[base + wrap_index(idx[static_cast<size_t>(p)], n, "GatherElements index") * ds[axis]];
      });
    });
    ctx.outputs[0] = std::move(out);
  });
}

// ScatterElements (11+, reduction from 16) and its deprecated alias Scatter (9..10).
std::unique_ptr<Kernel> make_scatter_elements(const Node& node) {
  const int64_t axis_attr = node.attr_int("axis", 0);
  const Reduction red = node.op_type == "ScatterElements" && node.opset >= 16 ? reduction_of(node) : Reduction::None;
  return make_kernel([axis_attr, red](KernelContext& ctx) {
    const Tensor& data = ctx.input(0);
    const Tensor& it = ctx.input(1);
    const Tensor& updates = ctx.input(2);
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(data.rank())));
    check_element_indices(data, it, axis);
    if (updates.shape() != it.shape() || updates.dtype() != data.dtype())
      fail("updates " + updates.description() + " must have the shape of indices " + it.description() +
           " and the type of data " + data.description());
    const std::vector<int64_t> idx = read_indices(it, "input 'indices'");
    const std::vector<int64_t> ds = strides_of(data.shape());
    const int64_t n = data.dim(axis);
    Tensor out = data.clone();
    dispatch_any(data.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* u = updates.data<T>();
      T* o = out.mutable_data<T>();
      for_each_element(it.shape(), ds, axis, [&](int64_t p, int64_t base) {
        T& dst = o[base + wrap_index(idx[static_cast<size_t>(p)], n, "ScatterElements index") * ds[axis]];
        reduce_into(dst, u[p], red);
      });
    });
    ctx.outputs[0] = std::move(out);
  });
}

// ---- GatherND / ScatterND ---------------------------------------------------

// Offset in data of the slice addressed by one index tuple idx[0..m) over data dims [first, first + m).
int64_t tuple_offset(const int64_t* idx, int64_t m, const Tensor& data, size_t first, const std::vector<int64_t>& ds,
                     const char* what) {
  int64_t off = 0;
  for (int64_t j = 0; j < m; ++j) {
    const size_t d = first + static_cast<size_t>(j);
    off += wrap_index(idx[j], data.dim(d), what) * ds[d];
  }
  return off;
}

std::unique_ptr<Kernel> make_gather_nd(const Node& node) {
  const int64_t b = node.opset >= 12 ? node.attr_int("batch_dims", 0) : 0;
  if (b < 0) fail(node.describe() + ": attribute 'batch_dims' must be >= 0, got " + std::to_string(b));
  return make_kernel([b](KernelContext& ctx) {
    const Tensor& data = ctx.input(0);
    const Tensor& it = ctx.input(1);
    const int64_t r = static_cast<int64_t>(data.rank()), q = static_cast<int64_t>(it.rank());
    if (q < 1 || b >= std::min(q, r))
      fail("batch_dims " + std::to_string(b) + " must be below the ranks of data " + data.description() +
           " and indices " + it.description());
    const int64_t m = it.dim(static_cast<size_t>(q - 1));
    if (m < 1 || m > r - b)
      fail("the last dimension of indices " + it.description() + " must be in [1, " + std::to_string(r - b) +
           "] for data " + data.description());
    for (size_t d = 0; d < static_cast<size_t>(b); ++d)
      if (data.dim(d) != it.dim(d))
        fail("batch dimensions of data " + data.description() + " and indices " + it.description() + " differ");
    const std::vector<int64_t> idx = read_indices(it, "input 'indices'");
    Shape os(it.shape().begin(), it.shape().end() - 1);
    os.insert(os.end(), data.shape().begin() + b + m, data.shape().end());
    Tensor out(data.dtype(), os);
    const std::vector<int64_t> ds = strides_of(data.shape());
    const int64_t batches = split_at(data.shape(), static_cast<size_t>(b)).outer;
    const int64_t batch_size = b ? ds[static_cast<size_t>(b) - 1] : data.size();
    const int64_t tuples = batches ? static_cast<int64_t>(idx.size()) / m / batches : 0;
    const size_t es = element_size(data.dtype());
    const int64_t slice = b + m < r ? ds[static_cast<size_t>(b + m) - 1] : 1;  // elements per gathered slice
    const char* src = static_cast<const char*>(data.raw());
    char* dst = static_cast<char*>(out.raw_mutable());
    for (int64_t bi = 0; bi < batches; ++bi)
      for (int64_t g = 0; g < tuples; ++g) {
        const int64_t t = bi * tuples + g;
        const int64_t off = bi * batch_size + tuple_offset(&idx[static_cast<size_t>(t * m)], m, data,
                                                           static_cast<size_t>(b), ds, "GatherND index");
        std::memcpy(dst + static_cast<size_t>(t * slice) * es, src + static_cast<size_t>(off) * es, static_cast<size_t>(slice) * es);
      }
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> make_scatter_nd(const Node& node) {
  const Reduction red = node.opset >= 16 ? reduction_of(node) : Reduction::None;
  return make_kernel([red](KernelContext& ctx) {
    const Tensor& data = ctx.input(0);
    const Tensor& it = ctx.input(1);
    const Tensor& updates = ctx.input(2);
    const int64_t r = static_cast<int64_t>(data.rank()), q = static_cast<int64_t>(it.rank());
    if (q < 1) fail("indices must have rank >= 1, got " + it.description());
    const int64_t m = it.dim(static_cast<size_t>(q - 1));
    if (m < 1 || m > r)
      fail("the last dimension of indices " + it.description() + " must be in [1, " + std::to_string(r) +
           "] for data " + data.description());
    Shape us(it.shape().begin(), it.shape().end() - 1);
    us.insert(us.end(), data.shape().begin() + m, data.shape().end());
    if (updates.shape() != us || updates.dtype() != data.dtype())
      fail("updates " + updates.description() + " must be " + std::string(type_name(data.dtype())) +
           shape_to_string(us) + " for data " + data.description() + " and indices " + it.description());
    const std::vector<int64_t> idx = read_indices(it, "input 'indices'");
    const std::vector<int64_t> ds = strides_of(data.shape());
    const int64_t chunk = m < r ? ds[static_cast<size_t>(m) - 1] : 1;
    const int64_t tuples = static_cast<int64_t>(idx.size()) / m;
    Tensor out = data.clone();
    dispatch_any(data.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* u = updates.data<T>();
      T* o = out.mutable_data<T>();
      for (int64_t t = 0; t < tuples; ++t) {
        T* dst = o + tuple_offset(&idx[static_cast<size_t>(t * m)], m, data, 0, ds, "ScatterND index");
        const T* src = u + t * chunk;
        for (int64_t i = 0; i < chunk; ++i) reduce_into(dst[i], src[i], red);
      }
    });
    ctx.outputs[0] = std::move(out);
  });
}

// ---- TopK, ArgMax/ArgMin, Hardmax ------------------------------------------

// Opset 1..9: k is an attribute; 10+: input K; 11+: largest and sorted. Ties
// keep the lower index first; the result is always sorted (allowed for sorted=0).
std::unique_ptr<Kernel> make_topk(const Node& node) {
  const int64_t axis_attr = node.attr_int("axis", -1);
  const bool k_from_input = node.opset >= 10;
  if (!k_from_input && !node.has_attr("k")) fail(node.describe() + ": attribute 'k' is required");
  const int64_t k_attr = node.attr_int("k", 0);
  const bool largest = node.opset < 11 || node.attr_int("largest", 1) != 0;
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(x.rank())));
    const int64_t k = k_from_input ? read_scalar_index(ctx.input(1), "input 'K'") : k_attr;
    const AxisSplit s = split_at(x.shape(), axis);
    if (k < 0 || k > s.n) fail("k = " + std::to_string(k) + " is out of range [0, " + std::to_string(s.n) + "] for " + x.description());
    Shape os = x.shape();
    os[axis] = k;
    Tensor values(x.dtype(), os), indices(DataType::Int64, os);
    dispatch_real(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* in = x.data<T>();
      T* ov = values.mutable_data<T>();
      int64_t* oi = indices.mutable_data<int64_t>();
      std::vector<std::pair<C, int64_t>> line(static_cast<size_t>(s.n));
      auto before = [largest](const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
        if (nan_last_less(a.first, b.first)) return !largest;
        if (nan_last_less(b.first, a.first)) return largest;
        return a.second < b.second;
      };
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          const T* src = in + o * s.n * s.inner + i;
          for (int64_t j = 0; j < s.n; ++j) line[static_cast<size_t>(j)] = {to_compute(src[j * s.inner]), j};
          std::partial_sort(line.begin(), line.begin() + k, line.end(), before);
          const int64_t dst = o * k * s.inner + i;
          for (int64_t j = 0; j < k; ++j) {
            ov[dst + j * s.inner] = from_compute<T>(line[static_cast<size_t>(j)].first);
            oi[dst + j * s.inner] = line[static_cast<size_t>(j)].second;
          }
        }
    });
    ctx.outputs[0] = std::move(values);
    if (ctx.outputs.size() > 1) ctx.outputs[1] = std::move(indices);
  });
}

// Index along the axis of the maximum (or minimum) of each outer × inner line,
// first occurrence unless `last`. NaN counts as greater than every number.
template <typename T>
void arg_best(const T* in, const AxisSplit& s, bool max, bool last, int64_t* out) {
  using C = compute_t<T>;
  std::vector<C> best(static_cast<size_t>(s.inner));
  for (int64_t o = 0; o < s.outer; ++o) {
    const T* base = in + o * s.n * s.inner;
    int64_t* res = out + o * s.inner;
    for (int64_t i = 0; i < s.inner; ++i) {
      best[static_cast<size_t>(i)] = to_compute(base[i]);
      res[i] = 0;
    }
    for (int64_t k = 1; k < s.n; ++k)  // row by row: contiguous over the inner dims
      for (int64_t i = 0; i < s.inner; ++i) {
        const C v = to_compute(base[k * s.inner + i]);
        C& b = best[static_cast<size_t>(i)];
        const bool better = max ? nan_last_less(b, v) : nan_last_less(v, b);
        const bool tie = !nan_last_less(b, v) && !nan_last_less(v, b);
        if (better || (last && tie)) {
          b = v;
          res[i] = k;
        }
      }
  }
}

std::unique_ptr<Kernel> make_arg_reduce(const Node& node) {
  const bool max = node.op_type == "ArgMax";
  const int64_t axis_attr = node.attr_int("axis", 0);
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool last = node.opset >= 12 && node.attr_int("select_last_index", 0) != 0;
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(x.rank())));
    const AxisSplit s = split_at(x.shape(), axis);
    if (s.n == 0) fail(std::string(max ? "ArgMax" : "ArgMin") + " over the empty axis " + std::to_string(axis) + " of " + x.description());
    Shape os = x.shape();
    if (keepdims) os[axis] = 1;
    else os.erase(os.begin() + static_cast<std::ptrdiff_t>(axis));
    Tensor out(DataType::Int64, os);
    dispatch_real(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      arg_best(x.data<T>(), s, max, last, out.mutable_data<int64_t>());
    });
    ctx.outputs[0] = std::move(out);
  });
}

// Opset 1..12: the input is seen as 2-D, [prod(dims < axis), prod(dims >= axis)],
// default axis 1; 13+: along one axis, default -1.
std::unique_ptr<Kernel> make_hardmax(const Node& node) {
  const bool flatten = node.opset < 13;
  const int64_t axis_attr = node.attr_int("axis", flatten ? 1 : -1);
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const int64_t r = static_cast<int64_t>(x.rank());
    AxisSplit s;
    if (flatten) {
      // Like Flatten, axis may equal the rank here (all dims in the outer part).
      const size_t axis = static_cast<size_t>(axis_attr == r ? r : normalize_axis(axis_attr, r));
      s = split_at(x.shape(), axis);
      s.n = axis < x.rank() ? s.n * s.inner : 1;
      s.inner = 1;
    } else {
      s = split_at(x.shape(), static_cast<size_t>(normalize_axis(axis_attr, r)));
    }
    Tensor out(x.dtype(), x.shape());
    if (s.n == 0 || out.size() == 0) {
      ctx.outputs[0] = std::move(out);
      return;
    }
    std::vector<int64_t> best(static_cast<size_t>(s.outer * s.inner));
    auto run = [&](auto tag) {
      using T = decltype(tag);
      arg_best(x.data<T>(), s, true, false, best.data());
      T* o = out.mutable_data<T>();
      const T one = from_compute<T>(1.0f);
      for (int64_t b = 0; b < s.outer; ++b)
        for (int64_t i = 0; i < s.inner; ++i)
          o[(b * s.n + best[static_cast<size_t>(b * s.inner + i)]) * s.inner + i] = one;
    };
    switch (x.dtype()) {
      case DataType::Float: run(float{}); break;
      case DataType::Double: run(double{}); break;
      case DataType::Float16: run(Float16{}); break;
      case DataType::BFloat16: run(BFloat16{}); break;
      default: fail(std::string("Hardmax is defined for float types, got ") + x.description());
    }
    ctx.outputs[0] = std::move(out);
  });
}

// ---- Compress, NonZero, OneHot, Unique ---------------------------------------

std::unique_ptr<Kernel> make_compress(const Node& node) {
  const bool has_axis = node.has_attr("axis");
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& cond = ctx.input(1);
    if (cond.dtype() != DataType::Bool || cond.rank() != 1)
      fail("condition must be a 1-D bool tensor, got " + cond.description());
    // Without an axis the input is flattened.
    const Shape shape = has_axis ? x.shape() : Shape{x.size()};
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(shape.size())));
    const AxisSplit s = split_at(shape, axis);
    if (cond.size() > s.n)
      fail("condition " + cond.description() + " is longer than axis " + std::to_string(axis) + " of " + x.description());
    const bool* c = cond.data<bool>();
    std::vector<int64_t> keep;
    for (int64_t k = 0; k < cond.size(); ++k)
      if (c[k]) keep.push_back(k);
    Shape os = shape;
    os[axis] = static_cast<int64_t>(keep.size());
    Tensor out(x.dtype(), os);
    const size_t chunk = static_cast<size_t>(s.inner) * element_size(x.dtype());
    const char* src = static_cast<const char*>(x.raw());
    char* dst = static_cast<char*>(out.raw_mutable());
    if (chunk)
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k : keep) {
          std::memcpy(dst, src + static_cast<size_t>(o * s.n + k) * chunk, chunk);
          dst += chunk;
        }
    ctx.outputs[0] = std::move(out);
  });
}

// Output int64[rank, count] of the coordinates of the non-zero elements in
// row-major order. A scalar is treated as a 1-element vector (numpy's and
// ONNX Runtime's behaviour), giving [1, count].
std::unique_ptr<Kernel> make_nonzero(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Shape shape = x.rank() ? x.shape() : Shape{1};
    const size_t r = shape.size();
    std::vector<int64_t> flat;  // flat indices of the non-zero elements
    dispatch_any(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      for (int64_t i = 0; i < x.size(); ++i)
        if (is_nonzero(in[i])) flat.push_back(i);
    });
    const int64_t count = static_cast<int64_t>(flat.size());
    Tensor out(DataType::Int64, {static_cast<int64_t>(r), count});
    int64_t* o = out.mutable_data<int64_t>();
    const std::vector<int64_t> st = strides_of(shape);
    for (int64_t j = 0; j < count; ++j) {
      int64_t rem = flat[static_cast<size_t>(j)];
      for (size_t d = 0; d < r; ++d) {
        o[static_cast<int64_t>(d) * count + j] = rem / st[d];
        rem %= st[d];
      }
    }
    ctx.outputs[0] = std::move(out);
  });
}

// Reads an index of any numeric type as int64; `ok` is false when it is not a
// finite value that fits int64 (for OneHot such an index selects nothing).
template <typename T>
int64_t index_as_int64(T v, bool& ok) {
  const compute_t<T> c = to_compute(v);
  if constexpr (std::is_floating_point_v<compute_t<T>>) {
    ok = c >= -9.2e18 && c <= 9.2e18;  // also false for NaN
    return ok ? static_cast<int64_t>(c) : 0;
  } else if constexpr (std::is_unsigned_v<T>) {
    ok = static_cast<uint64_t>(c) <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    return ok ? static_cast<int64_t>(c) : 0;
  } else {
    ok = true;
    return static_cast<int64_t>(c);
  }
}

// Opset 9..10 leave negative indices undefined; 11+ count them from the end.
// Indices outside [-depth, depth) give an all-off row, as the spec says.
std::unique_ptr<Kernel> make_onehot(const Node& node) {
  const int64_t axis_attr = node.attr_int("axis", -1);
  return make_kernel([axis_attr](KernelContext& ctx) {
    const Tensor& ind = ctx.input(0);
    const Tensor& dt = ctx.input(1);
    const Tensor& values = ctx.input(2);
    if (dt.size() != 1 || dt.rank() > 1) fail("depth must be a scalar or a 1-element tensor, got " + dt.description());
    if (values.rank() != 1 || values.size() != 2) fail("values must be a 1-D tensor [off, on], got " + values.description());
    int64_t depth = 0;
    bool ok = false;
    dispatch_real(dt.dtype(), [&](auto tag) { depth = index_as_int64(dt.data<decltype(tag)>()[0], ok); });
    if (!ok || depth < 1) fail("depth must be a positive integer, got " + dt.description());
    const int64_t out_rank = static_cast<int64_t>(ind.rank()) + 1;
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, out_rank));
    Shape os = ind.shape();
    os.insert(os.begin() + static_cast<std::ptrdiff_t>(axis), depth);
    std::vector<int64_t> hot(static_cast<size_t>(ind.size()));  // -1: no hot position
    dispatch_real(ind.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = ind.data<T>();
      for (size_t i = 0; i < hot.size(); ++i) {
        bool valid = false;
        int64_t v = index_as_int64(in[i], valid);
        if (valid && v < 0 && v >= -depth) v += depth;
        hot[i] = valid && v >= 0 && v < depth ? v : -1;
      }
    });
    Tensor out(values.dtype(), os);
    const AxisSplit s = split_at(ind.shape(), axis);  // outer: index dims before the new axis
    const int64_t inner = axis < ind.rank() ? s.n * s.inner : 1;
    dispatch_any(values.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T off = values.data<T>()[0], on = values.data<T>()[1];
      T* o = out.mutable_data<T>();
      std::fill(o, o + out.size(), off);
      for (int64_t b = 0; b < s.outer; ++b)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t h = hot[static_cast<size_t>(b * inner + i)];
          if (h >= 0) o[(b * depth + h) * inner + i] = on;
        }
    });
    ctx.outputs[0] = std::move(out);
  });
}

// Unique elements (no axis: of the flattened input) or unique slices along an
// axis. Outputs: Y, the first index of each unique value in the input, the
// index in Y of each input element/slice, and the counts. sorted=1 orders Y
// ascending (slices lexicographically, NaN last); sorted=0 keeps first-occurrence order.
std::unique_ptr<Kernel> make_unique(const Node& node) {
  const bool sorted = node.attr_int("sorted", 1) != 0;
  const bool has_axis = node.has_attr("axis");
  const int64_t axis_attr = node.attr_int("axis", 0);
  return make_kernel([=](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Shape shape = has_axis ? x.shape() : Shape{x.size()};
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(shape.size())));
    const AxisSplit s = split_at(shape, axis);
    // order: slice numbers sorted by value, stable so equal slices keep input order.
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    std::iota(order.begin(), order.end(), 0);
    std::vector<char> same(order.size(), 0);  // same[j]: slice order[j] equals order[j - 1]
    dispatch_any(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      auto compare = [&](int64_t a, int64_t b) {
        for (int64_t o = 0; o < s.outer; ++o)
          for (int64_t i = 0; i < s.inner; ++i) {
            const auto va = to_compute(in[(o * s.n + a) * s.inner + i]), vb = to_compute(in[(o * s.n + b) * s.inner + i]);
            if (nan_last_less(va, vb)) return -1;
            if (nan_last_less(vb, va)) return 1;
          }
        return 0;
      };
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
      for (size_t j = 1; j < order.size(); ++j) same[j] = compare(order[j - 1], order[j]) == 0;
    });
    // Groups of equal slices; a group's first member has the lowest slice number.
    std::vector<int64_t> first, counts, inverse(order.size());
    for (size_t j = 0; j < order.size(); ++j) {
      if (j == 0 || !same[j]) {
        first.push_back(order[j]);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[static_cast<size_t>(order[j])] = static_cast<int64_t>(first.size()) - 1;
    }
    if (!sorted) {  // renumber groups by first occurrence
      std::vector<int64_t> by_first(first.size()), rank_of(first.size());
      std::iota(by_first.begin(), by_first.end(), 0);
      std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
      std::vector<int64_t> f2(first.size()), c2(first.size());
      for (size_t g = 0; g < by_first.size(); ++g) {
        const size_t old = static_cast<size_t>(by_first[g]);
        rank_of[old] = static_cast<int64_t>(g);
        f2[g] = first[old];
        c2[g] = counts[old];
      }
      first.swap(f2);
      counts.swap(c2);
      for (int64_t& v : inverse) v = rank_of[static_cast<size_t>(v)];
    }
    const int64_t groups = static_cast<int64_t>(first.size());
    Shape ys = shape;
    ys[axis] = groups;
    Tensor y(x.dtype(), ys);
    const size_t chunk = static_cast<size_t>(s.inner) * element_size(x.dtype());
    const char* src = static_cast<const char*>(x.raw());
    char* dst = static_cast<char*>(y.raw_mutable());
    if (chunk)
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t g = 0; g < groups; ++g)
          std::memcpy(dst + static_cast<size_t>(o * groups + g) * chunk,
                      src + static_cast<size_t>(o * s.n + first[static_cast<size_t>(g)]) * chunk, chunk);
    auto vec = [](const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); };
    Tensor outs[] = {std::move(y), vec(first), vec(inverse), vec(counts)};
    for (size_t k = 0; k < ctx.outputs.size() && k < 4; ++k) ctx.outputs[k] = std::move(outs[k]);
  });
}

}  // namespace

void register_indexing(std::vector<KernelDef>& t) {
  t.push_back({"Slice", 1, 17, make_slice});
  t.push_back({"GatherElements", 11, 17, make_gather_elements});
  t.push_back({"GatherND", 11, 17, make_gather_nd});
  t.push_back({"ScatterElements", 11, 17, make_scatter_elements});
  t.push_back({"Scatter", 9, 10, make_scatter_elements});
  t.push_back({"ScatterND", 11, 17, make_scatter_nd});
  t.push_back({"TopK", 1, 17, make_topk});
  t.push_back({"ArgMax", 1, 17, make_arg_reduce});
  t.push_back({"ArgMin", 1, 17, make_arg_reduce});
  t.push_back({"Hardmax", 1, 17, make_hardmax});
  t.push_back({"Compress", 9, 17, make_compress});
  t.push_back({"NonZero", 9, 17, make_nonzero});
  t.push_back({"OneHot", 9, 17, make_onehot});
  t.push_back({"Unique", 11, 17, make_unique});
}

}  // namespace epprof::rt::kernels
