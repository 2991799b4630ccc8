// Numpy-style multidirectional broadcasting for element-wise ops.
#pragma once
#include <array>
#include <cstddef>
#include <exception>
#include <vector>

#include "kernels/common.h"
#include "kernels/element_split.h"
#include "kernels/simd.h"

namespace epprof::rt::kernels {

Shape broadcast_shapes(const Shape& a, const Shape& b);  // throws Error if incompatible

// Strides of `in` laid out in the output's rank; 0 along broadcast dims.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Walks the output (shape `so`, each in[k] broadcastable to it) one run of its
// innermost dimension at a time: row(base, off, step, len) covers output
// elements base .. base+len-1, whose input k element j is at off[k] + j*step[k].
// Always inlined, so that the row loop is compiled into the SIMD clones that
// call it (simd.h).
template <size_t K, typename Row>
[[gnu::always_inline]] inline void for_each_broadcast_row(const std::array<const Shape*, K>& in, const Shape& so,
                                                          Row&& row) {
  const int64_t n = shape_size(so);
  if (n == 0) return;
  std::array<int64_t, K> off{}, step{};
  if (so.empty()) {
    row(int64_t{0}, off, step, int64_t{1});
    return;
  }
  const size_t r = so.size();
  std::array<std::vector<int64_t>, K> str;
  for (size_t k = 0; k < K; ++k) {
    str[k] = broadcast_strides(*in[k], so);
    step[k] = str[k][r - 1];
  }
  const int64_t inner = so[r - 1];
  std::vector<int64_t> idx(r, 0);
  for (int64_t base = 0; base < n; base += inner) {
    row(base, off, step, inner);
    // advance the outer index (all dims but the last)
    for (size_t d = r - 1; d-- > 0;) {
      if (++idx[d] < so[d]) {
        for (size_t k = 0; k < K; ++k) off[k] += str[k][d];
        break;
      }
      for (size_t k = 0; k < K; ++k) off[k] -= str[k][d] * (so[d] - 1);
      idx[d] = 0;
    }
  }
}

namespace broadcast_detail {
// out[i] = f(a[i], b[i]) for i < n, where a scalar input (a_scalar,
// b_scalar) is read at [0] for every i; f is called once when both are.
template <typename TA, typename TB, typename TO, typename F>
[[gnu::always_inline]] inline void binary_flat(const TA* a, bool a_scalar, const TB* b, bool b_scalar, TO* out,
                                               int64_t n, F& f) {
  if (a_scalar && b_scalar) {  // a broadcast scalar (Gemm's scalar C)
    const TO v = f(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  } else if (b_scalar) {
    const TB bv = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
  } else if (a_scalar) {
    const TA av = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  }
}

// The general case: any broadcast, one row of the output at a time.
template <typename TA, typename TB, typename TO, typename F>
[[gnu::always_inline]] inline void binary_rows(const TA* a, const Shape& sa, const TB* b, const Shape& sb, TO* out,
                                               const Shape& so, F& f) {
  const auto row = [&](int64_t base, const auto& off, const auto& step, int64_t len) __attribute__((always_inline)) {
    const TA* pa = a + off[0];
    const TB* pb = b + off[1];
    TO* po = out + base;
    for (int64_t j = 0; j < len; ++j) po[j] = f(pa[j * step[0]], pb[j * step[1]]);
  };
  for_each_broadcast_row<2>({&sa, &sb}, so, row);
}

template <typename TA, typename TB, typename TC, typename TO, typename F>
[[gnu::always_inline]] inline void ternary_rows(const TA* a, const Shape& sa, const TB* b, const Shape& sb, const TC* c,
                                                const Shape& sc, TO* out, const Shape& so, F& f) {
  const auto row = [&](int64_t base, const auto& off, const auto& step, int64_t len) __attribute__((always_inline)) {
    const TA* pa = a + off[0];
    const TB* pb = b + off[1];
    const TC* pc = c + off[2];
    TO* po = out + base;
    for (int64_t j = 0; j < len; ++j) po[j] = f(pa[j * step[0]], pb[j * step[1]], pc[j * step[2]]);
  };
  for_each_broadcast_row<3>({&sa, &sb, &sc}, so, row);
}
}  // namespace broadcast_detail

// out[i] = f(a[ia], b[ib]) over the broadcast index space. `out` must already
// have the shape `so`, to which sa and sb broadcast. `out` may alias `a` when
// sa == so (each element is read before it is written). The loops run in
// the CPU's widest SIMD where simd_loop (simd.h) builds them so; what f
// throws propagates. When each input is the output's shape or a single
// element, the work splits across the intra-op threads as element_split.h
// says, so f must be safe to call from several threads at once.
template <typename TA, typename TB, typename TO, typename F>
void broadcast_binary(const TA* a, const Shape& sa, const TB* b, const Shape& sb, TO* out, const Shape& so, F f) {
  const bool a_full = sa == so, b_full = sb == so;
  if ((a_full || shape_size(sa) == 1) && (b_full || shape_size(sb) == 1)) {
    const int64_t bytes = shape_size(so) * int64_t(sizeof(TO) + (a_full ? sizeof(TA) : 0) + (b_full ? sizeof(TB) : 0));
    split_elements(so, int64_t(sizeof(TO)), bytes, [&](int64_t begin, int64_t count) {
      simd_loop<TA, TB, TO>([&]() __attribute__((always_inline)) {
        broadcast_detail::binary_flat(a_full ? a + begin : a, !a_full, b_full ? b + begin : b, !b_full, out + begin,
                                      count, f);
      });
    });
    return;
  }
  simd_loop<TA, TB, TO>(
      [&]() __attribute__((always_inline)) { broadcast_detail::binary_rows(a, sa, b, sb, out, so, f); });
}

// out[i] = f(a[ia], b[ib], c[ic]) over the broadcast index space of three inputs.
template <typename TA, typename TB, typename TC, typename TO, typename F>
void broadcast_ternary(const TA* a, const Shape& sa, const TB* b, const Shape& sb, const TC* c, const Shape& sc,
                       TO* out, const Shape& so, F f) {
  simd_loop<TA, TB, TC, TO>(
      [&]() __attribute__((always_inline)) { broadcast_detail::ternary_rows(a, sa, b, sb, c, sc, out, so, f); });
}

}  // namespace epprof::rt::kernels
