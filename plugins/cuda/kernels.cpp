#include "kernels.h"

#include <nvrtc.h>

namespace epprof::cuda {

namespace {

const char* const kSource = R"CUDA(
struct BParams {
  long long rank, n;
  long long dims[6];
  long long sa[6], sb[6];
};

__device__ __forceinline__ void offsets(const BParams& p, long long i, long long* ia, long long* ib) {
  long long a = 0, b = 0;
  for (int d = (int)p.rank - 1; d >= 0; --d) {
    const long long c = i % p.dims[d];
    i /= p.dims[d];
    a += c * p.sa[d];
    b += c * p.sb[d];
  }
  *ia = a;
  *ib = b;
}

#define EPPROF_BINARY(NAME, EXPR)                                                               \
  extern "C" __global__ void NAME(const float* __restrict__ A, const float* __restrict__ B,   \
                                  float* __restrict__ Y, BParams p) {                        \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < p.n;            \
         i += (long long)gridDim.x * blockDim.x) {                                           \
      long long ia, ib;                                                                      \
      offsets(p, i, &ia, &ib);                                                               \
      const float a = A[ia], b = B[ib];                                                      \
      Y[i] = (EXPR);                                                                         \
    }                                                                                        \
  }
EPPROF_BINARY(binary_add, a + b)
EPPROF_BINARY(binary_sub, a - b)
EPPROF_BINARY(binary_mul, a * b)
EPPROF_BINARY(binary_div, a / b)

#define EPPROF_UNARY(NAME, EXPR)                                                                \
  extern "C" __global__ void NAME(const float* __restrict__ X, float* __restrict__ Y, long long n) { \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;              \
         i += (long long)gridDim.x * blockDim.x) {                                           \
      const float x = X[i];                                                                  \
      Y[i] = (EXPR);                                                                         \
    }                                                                                        \
  }
EPPROF_UNARY(unary_relu, x > 0.0f ? x : 0.0f)
EPPROF_UNARY(unary_sigmoid, 1.0f / (1.0f + expf(-x)))
EPPROF_UNARY(unary_tanh, tanhf(x))

// Y (dims of p) = X broadcast with strides p.sa: Gemm's C into Y.
extern "C" __global__ void broadcast_copy(const float* __restrict__ X, float* __restrict__ Y, BParams p) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < p.n;
       i += (long long)gridDim.x * blockDim.x) {
    long long ia, ib;
    offsets(p, i, &ia, &ib);
    Y[i] = X[ia];
  }
}

// One thread per (outer, inner) row of n elements, `inner` apart.
extern "C" __global__ void softmax(const float* __restrict__ X, float* __restrict__ Y, long long outer,
                                   long long n, long long inner) {
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < outer * inner;
       r += (long long)gridDim.x * blockDim.x) {
    const long long base = (r / inner) * n * inner + r % inner;
    float m = X[base];
    for (long long j = 1; j < n; ++j) m = fmaxf(m, X[base + j * inner]);
    float sum = 0.0f;
    for (long long j = 0; j < n; ++j) {
      const float e = expf(X[base + j * inner] - m);
      Y[base + j * inner] = e;
      sum += e;
    }
    for (long long j = 0; j < n; ++j) Y[base + j * inner] /= sum;
  }
}
)CUDA";

std::string nvrtc_error(const char* call, nvrtcResult r) {
  return std::string(call) + " failed: " + nvrtcGetErrorString(r);
}

}  // namespace

const char* kernel_symbol(KernelId k) {
  static const char* const kNames[] = {"binary_add",    "binary_sub", "binary_mul", "binary_div",    "unary_relu",
                                       "unary_sigmoid", "unary_tanh", "softmax",    "broadcast_copy"};
  static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(KernelId::Count_), "one name per kernel");
  return kNames[static_cast<size_t>(k)];
}

bool compile_kernels(const std::string& arch, bool break_source, std::vector<char>* cubin, std::string* log) {
  const std::string source = std::string(kSource) + (break_source ? "\n#error EPPROF_CUDA_BREAK_KERNELS is set\n" : "");
  nvrtcProgram prog = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&prog, source.c_str(), "epprof_cuda_kernels.cu", 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    *log = nvrtc_error("nvrtcCreateProgram", r);
    return false;
  }
  const std::string arch_opt = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_opt.c_str(), "--std=c++17"};
  r = nvrtcCompileProgram(prog, 2, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    std::string text;
    if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
      text.resize(n);
      nvrtcGetProgramLog(prog, &text[0]);
      text.resize(n - 1);
    }
    *log = nvrtc_error("nvrtcCompileProgram", r) + " for " + arch + (text.empty() ? "" : ":\n" + text);
    nvrtcDestroyProgram(&prog);
    return false;
  }
  size_t size = 0;
  r = nvrtcGetCUBINSize(prog, &size);
  if (r == NVRTC_SUCCESS) {
    cubin->resize(size);
    r = nvrtcGetCUBIN(prog, cubin->data());
  }
  nvrtcDestroyProgram(&prog);
  if (r != NVRTC_SUCCESS) {
    *log = nvrtc_error("nvrtcGetCUBIN", r) + " for " + arch;
    return false;
  }
  return true;
}

}  // namespace epprof::cuda
