// (Log-)softmax along one axis of a row-major tensor viewed as
// [outer, n, inner]; shared by Softmax, LogSoftmax and SoftmaxCrossEntropyLoss.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace epprof::rt::kernels {

template <typename T>
void softmax_along(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (n <= 0) return;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* xr = x + o * n * inner + i;
      T* yr = y + o * n * inner + i;
      // Shift by the maximum so that exp cannot overflow.
      T mx = xr[0];
      for (int64_t k = 1; k < n; ++k) mx = std::max(mx, xr[k * inner]);
      double sum = 0.0;
      for (int64_t k = 0; k < n; ++k) sum += std::exp(static_cast<double>(xr[k * inner] - mx));
      if (log) {
        const T shift = static_cast<T>(mx + std::log(sum));
        for (int64_t k = 0; k < n; ++k) yr[k * inner] = xr[k * inner] - shift;
      } else {
        for (int64_t k = 0; k < n; ++k) yr[k * inner] = static_cast<T>(std::exp(static_cast<double>(xr[k * inner] - mx)) / sum);
      }
    }
}

}  // namespace epprof::rt::kernels
