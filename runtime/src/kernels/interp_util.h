// Interpolation weights shared by Resize and GridSample.
#pragma once

namespace epprof::rt::kernels {

// Keys cubic convolution weights for the four taps floor(x) - 1 .. floor(x) + 2,
// where t = x - floor(x) and a is the kernel's free coefficient (-0.75 in
// GridSample and Resize's default, -0.5 in some resamplers).
template <typename T>
inline void cubic_coeffs(T t, T a, T out[4]) {
  auto near = [a](T d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };          // |d| <= 1
  auto far = [a](T d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };     // 1 < |d| < 2
  out[0] = far(t + 1);
  out[1] = near(t);
  out[2] = near(1 - t);
  out[3] = far(2 - t);
}

}  // namespace epprof::rt::kernels
