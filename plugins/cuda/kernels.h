// The CUDA C source of the EP's own kernels (elementwise with broadcasting,
// softmax), compiled at load time with NVRTC for the device's architecture,
// so the build needs no nvcc. MatMul and Gemm use cuBLAS.
#pragma once
#include "ep_ops.h"
#include <cstdint>
#include <string>
#include <vector>

namespace epprof::cuda {

using ep_common::kMaxBroadcastRank;
using ep_common::kMaxBatchRank;

// Passed by value to the broadcasting kernels; mirrors `struct BParams` in
// the kernel source.
struct BroadcastParams {
  int64_t rank, n;
  int64_t dims[kMaxBroadcastRank];
  int64_t sa[kMaxBroadcastRank], sb[kMaxBroadcastRank];  // element strides, 0 on broadcast dims
};

enum class KernelId { Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, Softmax, BroadcastCopy, Count_ };
// The kernel's name in the source ("binary_add", ...).
const char* kernel_symbol(KernelId k);

// Compiles the source with NVRTC for `arch` ("sm_90") into a CUBIN. No GPU
// or driver needed. False with `log` holding NVRTC's log or error. With
// `break_source` a syntax error is added (fault tests).
bool compile_kernels(const std::string& arch, bool break_source, std::vector<char>* cubin, std::string* log);

}  // namespace epprof::cuda
