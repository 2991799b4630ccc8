// Float Conv as an implicit GEMM on AVX2 or AVX-512: the product of W and
// the im2col matrix, with that matrix neither written out nor packed. The
// micro-kernel reads each of its columns straight from a zero-padded copy
// of X.
//
// Why: on the bundled CNN's 3x3 convs (32 and 64 output channels), packing
// im2col panels for sgemm took 27% of the samples on AVX-512, next to the
// 35% of the multiply itself, and on AVX2 (an EPYC Zen 3) 39% against 37%.
// Each packed element was used only 4 to 8 times, once per 8 output
// channels.
#pragma once
#include <cstdint>

#include "kernels/conv_geometry.h"

namespace epprof::rt::kernels {

// The floats in the vectors conv_direct() computes in on this CPU: 16 with
// AVX-512, 8 with AVX2, 0 where it does not run (below AVX2, and in builds
// that do not build code per x86-64 level: kernels/simd.h).
int64_t conv_direct_lanes();

// Whether conv_direct() runs this convolution on this CPU. It needs
// conv_direct_lanes() > 0, at most 2 spatial dims, and an output map that
// fills most of the vectors it is cut into: by rows, or, with stride 1,
// rows laid end to end (the map's narrow rows and the kernel's k - 1
// extra columns per row in the vectors). 1x1 kernels are left to the gemm,
// which reads X in place when they are pointwise. False for every conv
// while set_conv_direct_allowed(false) holds. Thread-safe.
bool conv_direct_runs(const ConvShape& cs);

// Lets conv_direct_runs() say yes (true, the default) or makes it say no
// to every conv (false), for the whole process: tests use it to run the
// gemm lowering on the shapes the implicit GEMM would take. Thread-safe;
// a conv already deciding may see either value.
void set_conv_direct_allowed(bool allowed);

// What FusedConv adds to each output as the tile stores it, while the
// tile is in registers and on the thread that computed it: Z (of Y's
// shape; null: none), then Relu (v > 0 ? v : 0), the Clip op's clamp
// (below lo: lo; then above hi: hi; NaN stays NaN) or LeakyRelu (v < 0 ?
// alpha * v : v; NaN stays NaN), each as activations.h computes it.
struct DirectEpilogue {
  enum class Act { kNone, kRelu, kClip, kLeakyRelu } act = Act::kNone;
  const float* z = nullptr;
  float lo = 0.0f, hi = 0.0f;  // Clip's bounds
  float alpha = 0.0f;          // LeakyRelu's slope
};

// Y = conv(X, W) + bias (null: no bias), then `epilogue` (null: none), for
// every image and group: all of Y is written. Only where conv_direct_runs(cs)
// holds. Splits the work across the intra-op threads. Throws std::bad_alloc
// if its padded copy of X cannot be allocated.
void conv_direct(const float* x, const float* w, const float* bias, const ConvShape& cs, float* y,
                 const DirectEpilogue* epilogue = nullptr);

}  // namespace epprof::rt::kernels
