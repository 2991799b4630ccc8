#include "device.h"

#include <algorithm>
#include <cstdlib>

namespace epprof::cuda {

std::string cuda_error_text(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
}

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

std::unique_ptr<Device> Device::open(std::string* error) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    *error = "no usable CUDA device: cudaGetDeviceCount failed with " + cuda_error_text(e);
    return nullptr;
  }
  if (count == 0) {
    *error = "no usable CUDA device: cudaGetDeviceCount found none";
    return nullptr;
  }
  std::unique_ptr<Device> d(new Device);
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, d->ordinal_); e != cudaSuccess) {
    *error = "cudaGetDeviceProperties(0) failed with " + cuda_error_text(e);
    return nullptr;
  }
  const std::string arch = "sm_" + std::to_string(prop.major * 10 + prop.minor);
  d->description_ = std::string(prop.name) + " (" + arch + ")";
  if (cudaError_t e = cudaSetDevice(d->ordinal_); e != cudaSuccess) {
    *error = "cudaSetDevice(0) failed with " + cuda_error_text(e);
    return nullptr;
  }
  std::vector<char> cubin;
  std::string log;
  const char* brk = std::getenv("EPPROF_CUDA_BREAK_KERNELS");
  if (!compile_kernels(arch, brk && *brk && *brk != '0', &cubin, &log)) {
    *error = "the EP's kernels do not compile for " + d->description_ + ": " + log;
    return nullptr;
  }
  if (cudaError_t e = cudaLibraryLoadData(&d->library_, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
      e != cudaSuccess) {
    *error = "cudaLibraryLoadData failed with " + cuda_error_text(e);
    return nullptr;
  }
  for (size_t i = 0; i < d->kernels_.size(); ++i) {
    const char* name = kernel_symbol(static_cast<KernelId>(i));
    if (cudaError_t e = cudaLibraryGetKernel(&d->kernels_[i], d->library_, name); e != cudaSuccess) {
      *error = std::string("cudaLibraryGetKernel(") + name + ") failed with " + cuda_error_text(e);
      return nullptr;
    }
  }
  return d;
}

Device::~Device() {
  for (auto& w : all_) {
    if (w->blas) cublasDestroy(w->blas);
    if (w->stream) cudaStreamDestroy(w->stream);
  }
  if (probe_buffer_) cudaFree(probe_buffer_);
  if (library_) cudaLibraryUnload(library_);
}

bool Device::clock_probe(int64_t (*now)(), int64_t* before, int64_t* after, std::string* error) {
  Worker* w = acquire(error);
  if (!w) return false;
  cudaSetDevice(ordinal_);
  cudaError_t e = cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!probe_buffer_) e = cudaMalloc(&probe_buffer_, 4);
  }
  const char* call = "cudaMalloc";
  if (e == cudaSuccess) {
    *before = now();
    call = "cudaMemsetAsync";
    e = cudaMemsetAsync(probe_buffer_, 0, 4, w->stream);
    if (e == cudaSuccess) {
      call = "cudaStreamSynchronize";
      e = cudaStreamSynchronize(w->stream);
    }
    *after = now();
  }
  release(w);
  if (e == cudaSuccess) return true;
  cudaGetLastError();
  *error = std::string(call) + " failed with " + cuda_error_text(e);
  return false;
}

Worker* Device::acquire(std::string* error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      Worker* w = idle_.back();
      idle_.pop_back();
      return w;
    }
  }
  auto w = std::make_unique<Worker>();
  cudaSetDevice(ordinal_);
  if (cudaError_t e = cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking); e != cudaSuccess) {
    *error = "cudaStreamCreate failed with " + cuda_error_text(e);
    return nullptr;
  }
  if (cublasStatus_t s = cublasCreate(&w->blas); s != CUBLAS_STATUS_SUCCESS) {
    cudaStreamDestroy(w->stream);
    *error = std::string("cublasCreate failed with ") + cublas_status_name(s);
    return nullptr;
  }
  cublasSetStream(w->blas, w->stream);
  std::lock_guard<std::mutex> lock(mu_);
  all_.push_back(std::move(w));
  return all_.back().get();
}

void Device::release(Worker* w) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(w);
}

Dispatch::Dispatch(Device& device, Worker& worker, uint64_t alloc_limit)
    : device_(device), worker_(worker), limit_(alloc_limit) {
  cudaSetDevice(device_.ordinal());  // the runtime's current device is per thread
}

Dispatch::~Dispatch() {
  // Copies into host buffers may still run after a failure: wait for them.
  cudaStreamSynchronize(worker_.stream);
  for (void* p : buffers_) cudaFreeAsync(p, worker_.stream);
  cudaStreamSynchronize(worker_.stream);
  cudaGetLastError();  // a failure here must not leak into the next compute on this thread
}

bool Dispatch::fail(cudaError_t err, const std::string& what) {
  oom_ = err == cudaErrorMemoryAllocation;
  error_ = what + " failed with " + cuda_error_text(err);
  return false;
}

bool Dispatch::alloc(size_t bytes, float** out) {
  if (limit_ > 0 && bytes > limit_)
    return fail(cudaErrorMemoryAllocation, "allocating " + std::to_string(bytes) + " bytes (over EPPROF_CUDA_MAX_ALLOC_BYTES=" +
                                               std::to_string(limit_) + ")");
  void* p = nullptr;
  if (cudaError_t e = cudaMallocAsync(&p, std::max<size_t>(bytes, 4), worker_.stream); e != cudaSuccess)
    return fail(e, "allocating " + std::to_string(bytes) + " bytes of device memory");
  buffers_.push_back(p);
  *out = static_cast<float*>(p);
  return true;
}

bool Dispatch::upload(const void* data, size_t bytes, float** out) {
  if (!alloc(bytes, out)) return false;
  if (bytes == 0) return true;
  if (cudaError_t e = cudaMemcpyAsync(*out, data, bytes, cudaMemcpyHostToDevice, worker_.stream); e != cudaSuccess)
    return fail(e, "copying " + std::to_string(bytes) + " bytes to the device");
  return true;
}

bool Dispatch::launch(KernelId k, int64_t threads, void** args) {
  constexpr int64_t kBlock = 256, kMaxBlocks = 1 << 20;
  const int64_t blocks = std::min<int64_t>(kMaxBlocks, std::max<int64_t>(1, (threads + kBlock - 1) / kBlock));
  if (cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(device_.kernel(k)),
                                       dim3(static_cast<unsigned>(blocks)), dim3(kBlock), args, 0, worker_.stream);
      e != cudaSuccess)
    return fail(e, std::string("launching ") + kernel_symbol(k));
  return true;
}

bool Dispatch::blas(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return true;
  oom_ = s == CUBLAS_STATUS_ALLOC_FAILED;
  error_ = std::string(what) + " failed with " + cublas_status_name(s);
  return false;
}

bool Dispatch::download(const float* device, void* host, size_t bytes) {
  if (bytes == 0) return true;
  if (cudaError_t e = cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, worker_.stream); e != cudaSuccess)
    return fail(e, "copying " + std::to_string(bytes) + " bytes from the device");
  return true;
}

bool Dispatch::finish() {
  if (cudaError_t e = cudaStreamSynchronize(worker_.stream); e != cudaSuccess) return fail(e, "cudaStreamSynchronize");
  return true;
}

}  // namespace epprof::cuda
