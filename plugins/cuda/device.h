// The CUDA device the EP runs on (device 0, its primary context), the
// kernels compiled for it, and a pool of workers (a stream and a cuBLAS
// handle each) so concurrent computes do not share a stream. Dispatch is one
// compute call: device buffers, explicit host→device copies, kernels,
// device→host copies, all on the worker's stream, then one synchronize.
// Everything goes through the CUDA runtime, which loads the driver
// (libcuda.so.1) at run time: the plugin loads without one and reports
// cudaErrorInsufficientDriver / cudaErrorNoDevice.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels.h"

namespace epprof::cuda {

// "cudaErrorNoDevice (no CUDA-capable device is detected)"
std::string cuda_error_text(cudaError_t err);
const char* cublas_status_name(cublasStatus_t s);

struct Worker {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
};

class Device {
 public:
  // Opens device 0 and loads the kernels. Returns null with `error` set
  // (the CUDA call and its error) when there is no usable device.
  static std::unique_ptr<Device> open(std::string* error);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int ordinal() const { return ordinal_; }
  const std::string& description() const { return description_; }  // "NVIDIA H100 (sm_90)"
  cudaKernel_t kernel(KernelId k) const { return kernels_[static_cast<size_t>(k)]; }

  // A worker for one compute call; give it back with release. Null with
  // `error` set when a stream or cuBLAS handle cannot be created.
  Worker* acquire(std::string* error);
  void release(Worker* w);

  // A clock probe (profiler.h's ClockProbeFn): `now()` into *before, a
  // 4-byte memset on a worker's stream, a synchronize, `now()` into *after.
  // False with `error` naming the failed call.
  bool clock_probe(int64_t (*now)(), int64_t* before, int64_t* after, std::string* error);

 private:
  Device() = default;
  int ordinal_ = 0;
  std::string description_;
  cudaLibrary_t library_ = nullptr;
  std::array<cudaKernel_t, static_cast<size_t>(KernelId::Count_)> kernels_{};
  std::mutex mu_;
  std::vector<std::unique_ptr<Worker>> all_;
  std::vector<Worker*> idle_;
  void* probe_buffer_ = nullptr;  // 4 bytes, for clock probes; under mu_
};

class Dispatch {
 public:
  // `alloc_limit` caps one buffer (0: none); bigger requests fail as out of
  // device memory (fault tests).
  Dispatch(Device& device, Worker& worker, uint64_t alloc_limit);
  ~Dispatch();  // synchronizes the stream, frees the buffers
  Dispatch(const Dispatch&) = delete;
  Dispatch& operator=(const Dispatch&) = delete;

  // Each returns false with error() set.
  bool alloc(size_t bytes, float** out);
  bool upload(const void* data, size_t bytes, float** out);  // alloc + copy HtoD
  bool launch(KernelId k, int64_t threads, void** args);       // 1-D grid-stride launch
  bool blas(cublasStatus_t s, const char* what);               // check a cuBLAS call made on blas_handle()
  bool download(const float* device, void* host, size_t bytes);
  bool finish();  // waits for everything issued

  cublasHandle_t blas_handle() const { return worker_.blas; }
  const std::string& error() const { return error_; }
  bool out_of_memory() const { return oom_; }

 private:
  bool fail(cudaError_t err, const std::string& what);

  Device& device_;
  Worker& worker_;
  uint64_t limit_;
  std::vector<void*> buffers_;
  std::string error_;
  bool oom_ = false;
};

}  // namespace epprof::cuda
