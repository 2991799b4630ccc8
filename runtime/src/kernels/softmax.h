// (Log-)softmax along one axis of a row-major tensor viewed as
// [outer, n, inner]; shared by Softmax, LogSoftmax and SoftmaxCrossEntropyLoss.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/simd.h"
#include "kernels/vector_math.h"

namespace epprof::rt::kernels {

// One exp per element, in T (exp_f32 for float: within an ulp, vectorised),
// kept in y and summed in double; then a division (softmax) or a shift
// (log-softmax).
template <typename T>
EPPROF_SIMD_CLONES void softmax_along(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) noexcept {
  if (n <= 0) return;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* xr = x + o * n * inner + i;
      T* yr = y + o * n * inner + i;
      // Shift by the maximum so that exp cannot overflow.
      T mx = xr[0];
      for (int64_t k = 1; k < n; ++k) mx = std::max(mx, xr[k * inner]);
      T* e = yr;  // the exps, in y: overwritten by the results below
      for (int64_t k = 0; k < n; ++k) e[k * inner] = exp_of(xr[k * inner] - mx);
      double sum = 0.0;
      for (int64_t k = 0; k < n; ++k) sum += static_cast<double>(e[k * inner]);
      if (log) {
        const T shift = static_cast<T>(static_cast<double>(mx) + std::log(sum));
        for (int64_t k = 0; k < n; ++k) yr[k * inner] = xr[k * inner] - shift;
      } else {
        const T total = static_cast<T>(sum);
        for (int64_t k = 0; k < n; ++k) yr[k * inner] /= total;
      }
    }
}

}  // namespace epprof::rt::kernels
