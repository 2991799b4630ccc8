// MaxPool, AveragePool over 1-D to 3-D spatial dims; the global pools over any.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/common.h"
#include "kernels/conv_geometry.h"
#include "kernels/reduce_util.h"
#include "kernels/simd.h"
#include "intra_op.h"

namespace epprof::rt::kernels {

namespace {

Shape pooled_shape(const Tensor& x, const Window& w) {
  Shape s{x.dim(0), x.dim(1)};
  for (int64_t d : w.out_spatial()) s.push_back(d);
  return s;
}

template <typename T>
void max_pool(const Tensor& x, const Window& w, bool column_major, Tensor& out, Tensor* indices) {
  const int64_t planes = x.dim(0) * x.dim(1);
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x.data<T>() + pl * w.in_size();
    T* yp = out.mutable_data<T>() + pl * w.out_size();
    int64_t* ip = indices ? indices->mutable_data<int64_t>() + pl * w.out_size() : nullptr;
    for (int64_t od = 0; od < w.out[0]; ++od)
      for (int64_t oh = 0; oh < w.out[1]; ++oh)
        for (int64_t ow = 0; ow < w.out[2]; ++ow) {
          T best = std::numeric_limits<T>::lowest();
          int64_t best_i = -1;
          for (int64_t kd = 0; kd < w.k[0]; ++kd) {
            const int64_t id = od * w.s[0] - w.pb[0] + kd * w.d[0];
            if (id < 0 || id >= w.in[0]) continue;
            for (int64_t kh = 0; kh < w.k[1]; ++kh) {
              const int64_t ih = oh * w.s[1] - w.pb[1] + kh * w.d[1];
              if (ih < 0 || ih >= w.in[1]) continue;
              for (int64_t kw = 0; kw < w.k[2]; ++kw) {
                const int64_t iw = ow * w.s[2] - w.pb[2] + kw * w.d[2];
                if (iw < 0 || iw >= w.in[2]) continue;
                const int64_t i = (id * w.in[1] + ih) * w.in[2] + iw;
                if (best_i < 0 || xp[i] > best) {
                  best = xp[i];
                  best_i = i;
                }
              }
            }
          }
          const int64_t o = (od * w.out[1] + oh) * w.out[2] + ow;
          yp[o] = best;
          if (ip) {
            int64_t i = best_i;
            if (column_major && i >= 0) {
              const int64_t iw = i % w.in[2], ih = (i / w.in[2]) % w.in[1], id = i / (w.in[2] * w.in[1]);
              // column-major over the spatial dims (padding dims have size 1)
              i = iw * w.in[1] * w.in[0] + ih * w.in[0] + id;
            }
            ip[o] = i < 0 ? -1 : pl * w.in_size() + i;
          }
        }
  }
}

// Per output coordinate of one window dim, the kernel taps that land inside
// the input: [lo, hi).
struct TapRanges {
  std::vector<int64_t> lo, hi;
};
TapRanges tap_ranges(const Window& w, int dim) {
  TapRanges r;
  r.lo.resize(static_cast<size_t>(w.out[dim]));
  r.hi.resize(r.lo.size());
  for (int64_t o = 0; o < w.out[dim]; ++o) {
    const int64_t start = o * w.s[dim] - w.pb[dim];  // input coordinate of tap 0
    int64_t lo = 0, hi = w.k[dim];
    while (lo < hi && start + lo * w.d[dim] < 0) ++lo;
    while (hi > lo && start + (hi - 1) * w.d[dim] >= w.in[dim]) --hi;
    r.lo[static_cast<size_t>(o)] = lo;
    r.hi[static_cast<size_t>(o)] = hi;
  }
  return r;
}

// MaxPool without the Indices output: max_pool's result, without a bounds
// check per tap or index bookkeeping. Each window's in-input taps are found
// once per output coordinate; along the last dim, the outputs whose taps
// all lie inside the input take one tap at a time across the whole run of
// outputs (a loop the compiler vectorises). Taps are visited in max_pool's
// order and the first one seeds the maximum, so NaNs come out the same.
struct MaxPoolPlan {
  TapRanges r[3];
  // [inner_lo, inner_hi): the outputs of the last dim with every tap inside.
  int64_t inner_lo = 0, inner_hi = 0;

  explicit MaxPoolPlan(const Window& w) : r{tap_ranges(w, 0), tap_ranges(w, 1), tap_ranges(w, 2)} {
    inner_hi = w.out[2];
    while (inner_lo < inner_hi && r[2].lo[static_cast<size_t>(inner_lo)] != 0) ++inner_lo;
    while (inner_hi > inner_lo && r[2].hi[static_cast<size_t>(inner_hi - 1)] != w.k[2]) --inner_hi;
  }
};

// One tap over a run of n outputs, output i reading in[i * s]: the first
// tap of their windows seeds y, a later one keeps the larger (max_pool's
// order, so NaNs come out the same).
template <typename T, typename Stride>
[[gnu::always_inline]] inline void fold_tap(T* y, const T* in, int64_t n, Stride s, bool first) {
  if (first) {
    for (int64_t i = 0; i < n; ++i) y[i] = in[i * s];
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const T v = in[i * s];
    y[i] = v > y[i] ? v : y[i];
  }
}

using Stride1 = std::integral_constant<int64_t, 1>;
using Stride2 = std::integral_constant<int64_t, 2>;

// The inner run of a float row one vector V of outputs at a time, every
// tap of a window folded into one register before the store: tap by tap
// over the whole row (the loop below it), a row of 32 outputs spent more
// time starting and ending its loops than in them. V is the widest vector
// the CPU's registers hold (kernels/simd.h): 16 floats on AVX-512, 8 on
// AVX2. Rows of fewer inner outputs than V's lanes take the loop below.
#if defined(__GNUC__) && !defined(__clang__)
// Stride 2: the even-numbered elements of a span of 2n floats, in the
// order one in-lane shuffle gives (vshufps): per group of 4 lanes g, span
// elements 4g and 4g + 2 from a (the span's [0, n)), then n + 4g and
// n + 4g + 2 from b (its [n - 1, 2n - 1), so that nothing past the last
// even element is read). Every tap of a window lands in the same order, so
// the taps fold in it and restore_order() puts the outputs in place once.
template <typename V, size_t... L>
[[gnu::always_inline]] inline void even_in_lanes(const V& a, const V& b, V& v, std::index_sequence<L...>) {
  constexpr int n = sizeof...(L);
  typedef int Index __attribute__((vector_size(sizeof(V))));
  v = __builtin_shuffle(a, b, Index{(int(L) % 4 < 2 ? 4 * (int(L) / 4) + 2 * (int(L) % 4)
                                                    : n + 4 * (int(L) / 4) + 2 * (int(L) % 4 - 2) + 1)...});
}

// Lane j of v gets the output even_in_lanes put at lane 4(j/2) + j%2 (the
// first half's outputs) or 4(j'/2) + 2 + j'%2, j' = j - n/2 (the second's).
template <typename V, size_t... J>
[[gnu::always_inline]] inline void restore_order(V& v, std::index_sequence<J...>) {
  constexpr int n = sizeof...(J), h = n / 2;
  typedef int Index __attribute__((vector_size(sizeof(V))));
  v = __builtin_shuffle(v, Index{(int(J) < h ? 4 * (int(J) / 2) + int(J) % 2
                                             : 4 * ((int(J) - h) / 2) + 2 + (int(J) - h) % 2)...});
}

// Lane l of v: in[(o + l) * s]; with stride 2, in even_in_lanes' order.
// Reads nothing past the last lane's element. (An out-parameter: a returned
// 64-byte vector warns of an ABI that, inlined, it never has.)
template <typename V, typename Stride>
[[gnu::always_inline]] inline void tap_vector(const float* in, int64_t o, Stride s, V& v) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  if constexpr (std::is_same_v<Stride, Stride1>) {
    std::memcpy(&v, in + o, sizeof v);
  } else if constexpr (std::is_same_v<Stride, Stride2>) {
    V a, b;  // the span's elements [0, kLanes) and [kLanes - 1, 2 kLanes - 1)
    std::memcpy(&a, in + 2 * o, sizeof a);
    std::memcpy(&b, in + 2 * o + kLanes - 1, sizeof b);
    even_in_lanes(a, b, v, std::make_index_sequence<kLanes>());
  } else {
    for (int l = 0; l < kLanes; ++l) v[l] = in[(o + l) * s];
  }
}

// Returns false, writing nothing, for a row this does not take.
template <typename V, typename T, typename InputRow, typename Stride>
[[gnu::always_inline]] inline bool vector_run(T* row, const InputRow& input_row, const Window& w,
                                              const MaxPoolPlan& plan, int64_t kd0, int64_t kd1, int64_t kh0,
                                              int64_t kh1, Stride s2) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  const int64_t lo = plan.inner_lo, hi = plan.inner_hi;
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    if (hi - lo < kLanes) return false;
    // The window's input rows, (kd, kh) in max_pool's order, each at its
    // first tap of output 0: found once for the whole output row.
    constexpr int64_t kMaxRows = 16;
    const float* rows[kMaxRows];
    int64_t n = 0;
    for (int64_t kd = kd0; kd < kd1; ++kd)
      for (int64_t kh = kh0; kh < kh1; ++kh) {
        if (n == kMaxRows) return false;
        rows[n++] = input_row(kd, kh) - w.pb[2];
      }
    const int64_t taps = w.k[2], d2 = w.d[2];
    for (int64_t o = lo;; o += kLanes) {
      o = std::min(o, hi - kLanes);  // the last vector may overlap the one before: same values
      V best = V{} + std::numeric_limits<float>::lowest();  // a window with no tap
      if (n > 0) {
        tap_vector(rows[0], o, s2, best);  // max_pool's order: the first tap seeds
        for (int64_t r = 0; r < n; ++r)
          for (int64_t kw = r == 0 ? 1 : 0; kw < taps; ++kw) {
            V v;
            tap_vector(rows[r] + kw * d2, o, s2, v);
            best = v > best ? v : best;
          }
      }
      if constexpr (std::is_same_v<Stride, Stride2>) restore_order(best, std::make_index_sequence<kLanes>());
      std::memcpy(row + o, &best, sizeof best);
      if (o + kLanes >= hi) return true;
    }
  }
}
#else
template <typename V, typename T, typename InputRow, typename Stride>
bool vector_run(T*, const InputRow&, const Window&, const MaxPoolPlan&, int64_t, int64_t, int64_t, int64_t, Stride) {
  return false;
}
#endif

// Output rows [row0, row1) of one plane, a row being one (od, oh). `s2`,
// the last dim's stride, is a compile-time constant for the common strides
// 1 and 2, so that the inner run's loads vectorise as contiguous or
// deinterleaved ones rather than one element at a time. Inlined into
// max_pool_rows, so it is built for the CPU it runs on.
template <typename V, typename T, typename Stride>
[[gnu::always_inline]] inline void max_pool_plane(const T* xp, T* yp, const Window& w, const MaxPoolPlan& plan,
                                                  int64_t row0, int64_t row1, Stride s2) {
  const TapRanges* r = plan.r;
  const int64_t inner_lo = plan.inner_lo, inner_hi = plan.inner_hi, d2 = w.d[2];
  // (od, oh) of row i, stepped rather than divided out per row: a narrow
  // row (oww_embedding's pools have 8, 4, 2 and 1 outputs) cost more in its
  // two 64-bit divisions than in its taps.
  int64_t od = row0 / w.out[1], oh = row0 % w.out[1];
  for (int64_t i = row0; i < row1; ++i, ++oh) {
    if (oh == w.out[1]) oh = 0, ++od;
    const size_t d = static_cast<size_t>(od), h = static_cast<size_t>(oh);
    const int64_t d0 = od * w.s[0] - w.pb[0], h0 = oh * w.s[1] - w.pb[1];
    T* row = yp + i * w.out[2];
    auto input_row = [&](int64_t kd, int64_t kh) {  // tap (kd, kh)'s input row, at input column 0
      return xp + ((d0 + kd * w.d[0]) * w.in[1] + h0 + kh * w.d[1]) * w.in[2];
    };
    if (!vector_run<V>(row, input_row, w, plan, r[0].lo[d], r[0].hi[d], r[1].lo[h], r[1].hi[h], s2)) {
      // The inner run, tap by tap.
      std::fill(row + inner_lo, row + inner_hi, std::numeric_limits<T>::lowest());  // windows with no tap
      bool first = true;
      for (int64_t kd = r[0].lo[d]; kd < r[0].hi[d]; ++kd)
        for (int64_t kh = r[1].lo[h]; kh < r[1].hi[h]; ++kh)
          for (int64_t kw = 0; kw < w.k[2]; ++kw) {
            const T* in = input_row(kd, kh) + kw * d2 - w.pb[2];  // + ow * s2: inside the row for the inner run
            fold_tap(row + inner_lo, in + inner_lo * s2, inner_hi - inner_lo, s2, first);
            first = false;
          }
    }
    // The edges, output by output.
    for (int64_t ow = 0; ow < w.out[2]; ++ow) {
      if (ow == inner_lo) ow = std::max(inner_hi, ow);
      if (ow >= w.out[2]) break;
      const size_t c = static_cast<size_t>(ow);
      bool seeded = false;
      T best = std::numeric_limits<T>::lowest();
      for (int64_t kd = r[0].lo[d]; kd < r[0].hi[d]; ++kd)
        for (int64_t kh = r[1].lo[h]; kh < r[1].hi[h]; ++kh) {
          const T* in = input_row(kd, kh);
          for (int64_t kw = r[2].lo[c]; kw < r[2].hi[c]; ++kw) {
            const T v = in[ow * s2 - w.pb[2] + kw * d2];
            best = !seeded || v > best ? v : best;
            seeded = true;
          }
        }
      row[ow] = best;
    }
  }
}

// Whether output i of X flattened reads the taps at s * i + kw * d of X
// flattened (s, d: the last dim's stride and dilation), every one inside:
// windows one row high (or 1-D), side by side without overlap or padding,
// on rows the outputs cover exactly. oww_embedding's 1x2 stride-2 pools
// of 8- and 2-column rows cost 34 and 16 us row by row.
bool flat_windows(const Window& w) {
  for (int i = 0; i < 2; ++i)
    if (w.k[i] != 1 || w.s[i] != 1 || w.pb[i] != 0 || w.pe[i] != 0) return false;
  return w.pb[2] == 0 && w.in[2] == w.s[2] * w.out[2] && (w.k[2] - 1) * w.d[2] < w.s[2];
}

// Outputs [0, n) of a flat run (flat_windows): x is output 0's first tap.
// Taps in max_pool's order, the first seeding the maximum.
template <typename T, typename Stride>
[[gnu::always_inline]] inline void max_pool_flat(const T* x, T* y, int64_t n, int64_t taps, int64_t d, Stride s) {
  for (int64_t k = 0; k < taps; ++k) fold_tap(y, x + k * d, n, s, k == 0);
}

// Output rows [row0, row1) of every plane, built for the CPU it runs on
// (kernels/simd.h): as baseline SSE2, the stride-2 loads went one element
// at a time.
template <typename T>
void max_pool_rows(const T* x, T* y, int64_t planes, int64_t row0, int64_t row1, const Window& w,
                   const MaxPoolPlan& plan) noexcept {
  at_widest_vector<float>([&](auto vec) __attribute__((always_inline)) {
    using V = typename decltype(vec)::type;
    if (flat_windows(w)) {
      // Rows of every plane: one run a plane, or one in all when whole planes.
      const bool whole = row0 == 0 && row1 == w.out[0] * w.out[1];
      const int64_t runs = whole ? 1 : planes, n = (whole ? planes : 1) * (row1 - row0) * w.out[2];
      for (int64_t r = 0; r < runs; ++r) {
        const T* xr = x + r * w.in_size() + row0 * w.in[2];
        T* yr = y + r * w.out_size() + row0 * w.out[2];
        if (w.s[2] == 2)
          max_pool_flat(xr, yr, n, w.k[2], w.d[2], Stride2());
        else
          max_pool_flat(xr, yr, n, w.k[2], w.d[2], w.s[2]);
      }
      return;
    }
    for (int64_t pl = 0; pl < planes; ++pl) {
      const T* xp = x + pl * w.in_size();
      T* yp = y + pl * w.out_size();
      if (w.s[2] == 1)
        max_pool_plane<V>(xp, yp, w, plan, row0, row1, Stride1());
      else if (w.s[2] == 2)
        max_pool_plane<V>(xp, yp, w, plan, row0, row1, Stride2());
      else
        max_pool_plane<V>(xp, yp, w, plan, row0, row1, w.s[2]);
    }
  });
}

// Split across the intra-op threads, when there are taps or data enough,
// as the Conv before it split X (detail::split_by_planes, X's planes): by
// output rows of every plane, or by planes when they are small.
template <typename T>
void max_pool_values(const Tensor& x, const Window& w, Tensor& out) {
  const MaxPoolPlan plan(w);
  const int64_t planes = x.dim(0) * x.dim(1), rows = w.out[0] * w.out[1];
  const int64_t macs = planes * w.out_size() * w.k_size(), bytes = int64_t(sizeof(T)) * (x.size() + out.size());
  const T* xd = x.data<T>();
  T* yd = out.mutable_data<T>();
  if (detail::split_by_planes(planes, int64_t(sizeof(T)) * w.in_size())) {
    const int64_t in_plane = w.in_size(), out_plane = w.out_size();
    detail::parallel_for_ranges(planes, detail::intra_op_ranges(planes, 1, macs, bytes),
                                [&](int64_t, int64_t p0, int64_t p1) {
                                  max_pool_rows<T>(xd + p0 * in_plane, yd + p0 * out_plane, p1 - p0, 0, rows, w, plan);
                                });
    return;
  }
  detail::parallel_for_ranges(rows, detail::intra_op_ranges(rows, 1, macs, bytes), [&](int64_t, int64_t r0, int64_t r1) {
    max_pool_rows<T>(xd, yd, planes, r0, r1, w, plan);
  });
}

std::unique_ptr<Kernel> make_max_pool(const Node& node) {
  const WindowAttrs attrs = WindowAttrs::from_node(node);
  if (attrs.kernel.empty()) fail(node.describe() + ": kernel_shape is required");
  const int64_t storage_order = node.attr_int("storage_order", 0);  // only affects Indices
  if (storage_order != 0 && storage_order != 1)
    fail(node.describe() + ": storage_order must be 0 or 1, got " + std::to_string(storage_order));
  return make_kernel([attrs, storage_order](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Window w = resolve_window(attrs, x.shape(), attrs.kernel);
    const Shape os = pooled_shape(x, w);
    const bool want_indices = ctx.outputs.size() > 1;
    if (!want_indices && x.dtype() == DataType::Float) {
      Tensor out = Tensor::uninitialized(x.dtype(), os);  // every row is filled, then maxed onto
      max_pool_values<float>(x, w, out);
      ctx.outputs[0] = std::move(out);
      return;
    }
    Tensor out(x.dtype(), os);
    Tensor indices = want_indices ? Tensor(DataType::Int64, os) : Tensor();
    Tensor* ip = want_indices ? &indices : nullptr;
    switch (x.dtype()) {
      case DataType::Float: max_pool<float>(x, w, storage_order, out, ip); break;
      case DataType::Double: max_pool<double>(x, w, storage_order, out, ip); break;
      case DataType::Int8: max_pool<int8_t>(x, w, storage_order, out, ip); break;
      case DataType::Uint8: max_pool<uint8_t>(x, w, storage_order, out, ip); break;
      default: fail("MaxPool input must be float, double, int8 or uint8, got " + x.description());
    }
    ctx.outputs[0] = std::move(out);
    if (want_indices) ctx.outputs[1] = std::move(indices);
  });
}

// AveragePool (p == 0) and LpPool (p > 0): a sum over the window's real
// elements (padding adds nothing), then the mean or the p-th root.
template <typename T>
void window_sum_pool(const Tensor& x, const Window& w, bool include_pad, int64_t p, Tensor& out) {
  const int64_t planes = x.dim(0) * x.dim(1);
  int64_t start[3], end[3], lo[3], hi[3];
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x.data<T>() + pl * w.in_size();
    T* yp = out.mutable_data<T>() + pl * w.out_size();
    for (int64_t od = 0; od < w.out[0]; ++od)
      for (int64_t oh = 0; oh < w.out[1]; ++oh)
        for (int64_t ow = 0; ow < w.out[2]; ++ow) {
          const int64_t o3[3] = {od, oh, ow};
          int64_t count = 1;
          for (int i = 0; i < 3; ++i) {
            start[i] = o3[i] * w.s[i] - w.pb[i];
            end[i] = std::min(start[i] + w.k[i], w.in[i] + w.pe[i]);  // clipped to the padded input
            lo[i] = std::max<int64_t>(start[i], 0);
            hi[i] = std::min(end[i], w.in[i]);
            count *= include_pad ? end[i] - start[i] : std::max<int64_t>(hi[i] - lo[i], 0);
          }
          T sum = 0;
          for (int64_t id = lo[0]; id < hi[0]; ++id)
            for (int64_t ih = lo[1]; ih < hi[1]; ++ih)
              for (int64_t iw = lo[2]; iw < hi[2]; ++iw) {
                const T v = xp[(id * w.in[1] + ih) * w.in[2] + iw];
                sum += p == 0 ? v : p == 1 ? std::fabs(v) : p == 2 ? v * v : std::pow(std::fabs(v), static_cast<T>(p));
              }
          T& y = yp[(od * w.out[1] + oh) * w.out[2] + ow];
          if (p == 0)
            y = count > 0 ? sum / static_cast<T>(count) : T{0};
          else
            y = p == 1 ? sum : p == 2 ? std::sqrt(sum) : std::pow(sum, T{1} / static_cast<T>(p));
        }
  }
}

std::unique_ptr<Kernel> make_window_sum_pool(const Node& node, bool lp) {
  const WindowAttrs attrs = WindowAttrs::from_node(node);
  if (attrs.kernel.empty()) fail(node.describe() + ": kernel_shape is required");
  if (!attrs.dilations.empty())
    for (int64_t d : attrs.dilations)
      if (d != 1) fail(node.describe() + ": dilations are not supported for " + node.op_type + " before opset 18");
  const bool include_pad = !lp && node.attr_int("count_include_pad", 0) != 0;
  const int64_t p = lp ? node.attr_int("p", 2) : 0;
  if (lp && p <= 0) fail(node.describe() + ": p must be positive, got " + std::to_string(p));
  const std::string op = node.op_type;
  return make_kernel([attrs, include_pad, p, op](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Window w = resolve_window(attrs, x.shape(), attrs.kernel);
    Tensor out(x.dtype(), pooled_shape(x, w));
    if (x.dtype() == DataType::Float)
      window_sum_pool<float>(x, w, include_pad, p, out);
    else if (x.dtype() == DataType::Double)
      window_sum_pool<double>(x, w, include_pad, p, out);
    else
      fail(op + " input must be float or double, got " + x.description());
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> make_average_pool(const Node& n) { return make_window_sum_pool(n, false); }
std::unique_ptr<Kernel> make_lp_pool(const Node& n) { return make_window_sum_pool(n, true); }

// GlobalAveragePool, GlobalMaxPool and GlobalLpPool: one reduction per (n, c) plane.
enum class GlobalKind { Average, Max, Lp };

// A plane's sum (in double: sum_in_lanes) or maximum, over 8 independent
// lanes as the sum is, so that both loops vectorise. The maximum ignores
// NaN, as std::max(acc, v) does.
template <typename T, bool Max>
EPPROF_SIMD_CLONES double plane_reduce(const T* x, int64_t n) noexcept {
  if constexpr (!Max) {
    return sum_in_lanes(n, [x](int64_t s) { return static_cast<double>(x[s]); });
  } else {
    constexpr int kLanes = 8;
    double lanes[kLanes];
    for (double& l : lanes) l = -std::numeric_limits<double>::infinity();
    int64_t s = 0;
    for (; s + kLanes <= n; s += kLanes)
      for (int l = 0; l < kLanes; ++l) lanes[l] = std::max(lanes[l], static_cast<double>(x[s + l]));
    double acc = -std::numeric_limits<double>::infinity();
    for (double l : lanes) acc = std::max(acc, l);
    for (; s < n; ++s) acc = std::max(acc, static_cast<double>(x[s]));
    return acc;
  }
}

// Split by ranges of planes when the kernel before it split X so
// (detail::split_by_planes) and X is kMinSplitPlanesBytes or more: each
// thread then reduces the planes it wrote. Unsplit, the CNN's
// GlobalAveragePool ([1,64,16,16], 64 KB) took 3.0 us in a 1-thread session
// and 5.9-6.1 us in a 2-thread one, reading half of X from the other core's
// cache; split, 2.9-3.4 us. (The threshold is below kMinSplitBytes: a
// reduction writes one value a plane, so the split costs it little beyond
// the join.)
constexpr int64_t kMinSplitPlanesBytes = int64_t(32) << 10;

template <typename T>
void global_pool(const Tensor& x, GlobalKind kind, double p, Tensor& out) {
  const int64_t planes = x.dim(0) * x.dim(1), S = planes ? x.size() / planes : 0;
  const bool split = detail::split_by_planes(planes, S * int64_t(sizeof(T))) &&
                     x.size() * int64_t(sizeof(T)) >= kMinSplitPlanesBytes;
  const int64_t ranges = split ? detail::intra_op_ranges(planes, 1) : 1;
  detail::parallel_for_ranges(planes, ranges, [&](int64_t, int64_t p0, int64_t p1) {
    for (int64_t pl = p0; pl < p1; ++pl) {
      const T* xp = x.data<T>() + pl * S;
      double acc = 0.0;
      if (kind == GlobalKind::Max)
        acc = plane_reduce<T, true>(xp, S);
      else if (kind == GlobalKind::Average)
        acc = plane_reduce<T, false>(xp, S);
      else
        for (int64_t s = 0; s < S; ++s) acc += std::pow(std::fabs(static_cast<double>(xp[s])), p);
      if (kind == GlobalKind::Average) acc = S ? acc / static_cast<double>(S) : 0.0;
      if (kind == GlobalKind::Lp) acc = std::pow(acc, 1.0 / p);
      out.mutable_data<T>()[pl] = static_cast<T>(acc);
    }
  });
}

std::unique_ptr<Kernel> make_global_pool(const Node& node, GlobalKind kind) {
  const int64_t p = kind == GlobalKind::Lp ? node.attr_int("p", 2) : 1;
  if (p <= 0) fail(node.describe() + ": p must be positive, got " + std::to_string(p));
  const std::string op = node.op_type;
  return make_kernel([kind, p, op](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 3) fail(op + " input must be N x C x D1 ..., got " + x.description());
    Shape os{x.dim(0), x.dim(1)};
    os.resize(x.rank(), 1);
    Tensor out(x.dtype(), os);
    if (x.dtype() == DataType::Float)
      global_pool<float>(x, kind, static_cast<double>(p), out);
    else if (x.dtype() == DataType::Double)
      global_pool<double>(x, kind, static_cast<double>(p), out);
    else
      fail(op + " input must be float or double, got " + x.description());
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> make_global_average_pool(const Node& n) { return make_global_pool(n, GlobalKind::Average); }
std::unique_ptr<Kernel> make_global_max_pool(const Node& n) { return make_global_pool(n, GlobalKind::Max); }
std::unique_ptr<Kernel> make_global_lp_pool(const Node& n) { return make_global_pool(n, GlobalKind::Lp); }

}  // namespace

void register_pool(std::vector<KernelDef>& t) {
  t.push_back({"MaxPool", 1, 17, make_max_pool});
  t.push_back({"AveragePool", 1, 17, make_average_pool});
  t.push_back({"LpPool", 2, 17, make_lp_pool});
  t.push_back({"GlobalAveragePool", 1, 17, make_global_average_pool});
  t.push_back({"GlobalMaxPool", 1, 17, make_global_max_pool});
  t.push_back({"GlobalLpPool", 2, 17, make_global_lp_pool});
}

}  // namespace epprof::rt::kernels
