// The CUDA EP plugin: what is CUDA's own behind the shared plugin shell
// (plugins/common/plugin_shell.h), which owns the C slots and the entry.
//
// At entry the EP needs a CUDA device (its kernels compiled and loaded)
// and CUPTI; without either it is refused with UNSUPPORTED and a message
// naming the failed call, and the host runs the model on the next EP.
//
// Environment, for users and fault tests:
//   EPPROF_CUDA_MAX_ALLOC_BYTES  cap on one device buffer; bigger ones fail
//                                as device out-of-memory (the node falls
//                                back to the CPU EP for that call)
//   EPPROF_CUDA_BREAK_KERNELS    the EP's kernels fail to compile
//   EPPROF_CUDA_BREAK_CUPTI      CUPTI initialisation fails
#include <cstdlib>
#include <memory>
#include <string>

#include "cupti_source.h"
#include "device.h"
#include "ops.h"
#include "plugin_shell.h"
#include "profiler.h"

namespace epprof::cuda {
namespace {

class CudaEp {
 public:
  static constexpr const char* kPrefix = "cuda EP: ";
  static constexpr const char* kName = "CUDAExecutionProvider";  // ONNX Runtime's naming

  static std::unique_ptr<CudaEp> open(const epprof_host_api* host, std::string* why) {
    std::unique_ptr<Device> device = Device::open(why);
    if (!device) return nullptr;
    ActivitySource* source = cupti_source(host, why);
    if (!source) {
      *why = "CUPTI initialisation failed: " + *why;
      return nullptr;
    }
    auto ep = std::make_unique<CudaEp>(host, std::move(device), source);
    if (const char* cap = std::getenv("EPPROF_CUDA_MAX_ALLOC_BYTES")) ep->alloc_limit_ = std::strtoull(cap, nullptr, 10);
    return ep;
  }

  CudaEp(const epprof_host_api* host, std::unique_ptr<Device> device, ActivitySource* source)
      : host_(host), device_(std::move(device)), source_(source) {}

  ep_common::OpSet ops() const { return ep_common::kBasicOps; }
  bool prepare(const OpKernel&, std::string*) { return true; }  // the kernels were loaded at open

  // Device work issued here carries the node's id: the profilers pushed it
  // as CUPTI's external correlation id in start_event, on this thread.
  ComputeResult compute(const OpKernel& k, const epprof_ep_tensor* inputs, size_t num_inputs,
                        epprof_ep_outputs* outputs) {
    return cuda::compute(*device_, alloc_limit_, k, inputs, num_inputs, outputs);
  }

  epprof_ep_profiler* create_profiler() {
    return cuda::create_profiler(ProfilerEnv{host_, source_, device_->description()});
  }

 private:
  const epprof_host_api* host_;
  std::unique_ptr<Device> device_;
  ActivitySource* source_;  // process-wide, never freed
  uint64_t alloc_limit_ = 0;
};

}  // namespace
}  // namespace epprof::cuda

extern "C" __attribute__((visibility("default"))) epprof_status* epprof_ep_plugin_entry(
    const epprof_host_api* host, uint32_t host_abi_version, epprof_ep_plugin** out) {
  return epprof::ep_common::plugin_entry<epprof::cuda::CudaEp>(host, host_abi_version, out);
}
