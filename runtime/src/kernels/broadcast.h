// Numpy-style multidirectional broadcasting for binary element-wise ops.
#pragma once
#include <vector>

#include "kernels/common.h"

namespace epprof::rt::kernels {

Shape broadcast_shapes(const Shape& a, const Shape& b);  // throws Error if incompatible

// Strides of `in` laid out in the output's rank; 0 along broadcast dims.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// out[i] = f(a[ia], b[ib]) over the broadcast index space. `out` must already have
// the broadcast shape.
template <typename TA, typename TB, typename TO, typename F>
void broadcast_binary(const TA* a, const Shape& sa, const TB* b, const Shape& sb, TO* out, const Shape& so, F f) {
  const int64_t n = shape_size(so);
  if (n == 0) return;
  if (sa == so && sb == so) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
    return;
  }
  if (shape_size(sb) == 1 && sa == so) {
    const TB bv = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
    return;
  }
  if (shape_size(sa) == 1 && sb == so) {
    const TA av = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
    return;
  }
  const auto stra = broadcast_strides(sa, so);
  const auto strb = broadcast_strides(sb, so);
  const size_t r = so.size();
  const int64_t inner = so[r - 1], ia = stra[r - 1], ib = strb[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t offa = 0, offb = 0;
  for (int64_t base = 0; base < n; base += inner) {
    for (int64_t j = 0; j < inner; ++j) out[base + j] = f(a[offa + j * ia], b[offb + j * ib]);
    // advance the outer index (all dims but the last)
    for (size_t d = r - 1; d-- > 0;) {
      offa += stra[d];
      offb += strb[d];
      if (++idx[d] < so[d]) break;
      offa -= stra[d] * so[d];
      offb -= strb[d] * so[d];
      idx[d] = 0;
    }
  }
}

}  // namespace epprof::rt::kernels
