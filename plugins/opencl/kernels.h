// OpenCL C sources of the EP's kernels, one program per family, and the
// parameter structs passed to them by value. The structs hold only 8-byte
// fields (then floats at the end), so host and device layouts agree.
#pragma once
#include "ep_ops.h"
#include <CL/cl.h>

namespace epprof::opencl {

enum class Program { Elementwise, Softmax, MatMul, Gemm, Cnn, Count_ };

const char* program_name(Program p);    // "elementwise", ...
const char* program_source(Program p);  // OpenCL C

using ep_common::kMaxBroadcastRank;
using ep_common::kMaxBatchRank;

struct BroadcastParams {  // binary_* kernels
  cl_long rank, n;
  cl_long dims[kMaxBroadcastRank];  // output dims
  cl_long sa[kMaxBroadcastRank];    // A's element strides per output dim (0: broadcast)
  cl_long sb[kMaxBroadcastRank];
};

struct MatMulParams {
  cl_long m, n, k, batch, brank;
  cl_long bdims[kMaxBatchRank];  // output batch dims
  cl_long sa[kMaxBatchRank];     // A's batch strides in matrices (0: broadcast)
  cl_long sb[kMaxBatchRank];
};

struct GemmParams {
  cl_long m, n, k, trans_a, trans_b, has_c, csm, csn;  // C strides (0: broadcast)
  cl_float alpha, beta;
};

// conv2d, maxpool2d, avgpool2d: one work-item per output element.
struct WindowParams {
  cl_long n, c, h, w, m, oh, ow;  // X: n x c x h x w; Y: n x m x oh x ow
  cl_long kh, kw, sh, sw, dh, dw;
  cl_long pad_top, pad_left, pad_bottom, pad_right;
  cl_long group, has_bias, count_include_pad;
};

// global_avgpool, batchnorm: planes of `spatial` elements, channel = plane % c.
struct PlaneParams {
  cl_long planes, c, spatial;
  cl_float epsilon;
};

// resize2d: the last two axes, from per-output tap tables (ep_common::ResizePlan).
struct ResizeParams {
  cl_long planes, ih, iw, oh, ow, taps;
};

}  // namespace epprof::opencl
