// (Log-)softmax along one axis of a row-major tensor viewed as
// [outer, n, inner]; shared by Softmax, LogSoftmax and SoftmaxCrossEntropyLoss.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/reduce_util.h"
#include "kernels/simd.h"
#include "kernels/vector_math.h"

namespace epprof::rt::kernels {

// The maximum of x[0, n), n >= 1, over 16 lanes, as sum_in_lanes sums
// (reduce_util.h). A NaN
// may or may not win; softmax_along's sum is NaN either way.
template <typename T>
inline T max_in_lanes(const T* x, int64_t n) {
  constexpr int kLanes = 16;
  if (n < kLanes) {
    T mx = x[0];
    for (int64_t k = 1; k < n; ++k) mx = std::max(mx, x[k]);
    return mx;
  }
  T lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) lanes[l] = x[l];
  int64_t k = kLanes;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] = std::max(lanes[l], x[k + l]);
  T mx = lanes[0];
  for (int l = 1; l < kLanes; ++l) mx = std::max(mx, lanes[l]);
  for (; k < n; ++k) mx = std::max(mx, x[k]);
  return mx;
}

// One exp per element, in T (exp_f32 for float: within an ulp, vectorised),
// kept in y and summed in double; then a division (softmax) or a shift
// (log-softmax). Rows along the last axis (inner == 1, the usual case: an
// attention's scores) run contiguous, their maximum and sum in lanes; the
// strided loops took ten times ONNX Runtime's time on the bundled
// transformer's [1,4,128,128] Softmax.
template <typename T>
EPPROF_SIMD_CLONES void softmax_along(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) noexcept {
  if (n <= 0) return;
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const T* xr = x + o * n;
      T* yr = y + o * n;
      const T mx = max_in_lanes(xr, n);  // exp cannot overflow below it
      for (int64_t k = 0; k < n; ++k) yr[k] = exp_of(xr[k] - mx);
      const double sum = sum_in_lanes(n, [yr](int64_t k) { return static_cast<double>(yr[k]); });
      if (log) {
        const T shift = static_cast<T>(static_cast<double>(mx) + std::log(sum));
        for (int64_t k = 0; k < n; ++k) yr[k] = xr[k] - shift;
      } else {
        const T total = static_cast<T>(sum);
        for (int64_t k = 0; k < n; ++k) yr[k] /= total;
      }
    }
    return;
  }
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
