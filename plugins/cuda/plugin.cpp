// The CUDA EP plugin: what is CUDA's own behind the shared plugin shell
// (plugins/common/plugin_shell.h), which owns the C slots and the entry.
//
// At entry the EP needs a CUDA device (its kernels compiled and loaded);
// without one it is refused with UNSUPPORTED and a message naming the
// failed call, and the host runs the model on the next EP. CUPTI is opened
// at run time and is optional: without it (libcupti missing, or another
// CUPTI client holding the activity API) the EP runs without device
// tracing, and each trace's metadata says why (device_tracing).
//
// Environment, for users and fault tests:
//   EPPROF_CUDA_API_RECORDS      1: also write the CUDA runtime and driver
//                                API calls (category API, a track per thread)
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

// EPPROF_CUDA_API_RECORDS (see above).
bool api_records_wanted() {
  const char* api = std::getenv("EPPROF_CUDA_API_RECORDS");
  return api && *api && *api != '0';
}

class CudaEp {
 public:
  static constexpr ep_common::EpIdentity kIdentity{"cuda", "CUDAExecutionProvider"};  // ONNX Runtime's naming

  static std::unique_ptr<CudaEp> open(const epprof_host_api* host, uint64_t alloc_limit, std::string* why) {
    std::unique_ptr<Device> device = Device::open(why);
    if (!device) return nullptr;
    std::string no_tracing;
    ActivitySource* source = cupti_source(host, &no_tracing);
    if (!source) no_tracing = "CUPTI initialisation failed: " + no_tracing;
    return std::make_unique<CudaEp>(host, std::move(device), source, std::move(no_tracing), alloc_limit,
                                    api_records_wanted());
  }

  CudaEp(const epprof_host_api* host, std::unique_ptr<Device> device, ActivitySource* source, std::string no_tracing,
         uint64_t alloc_limit, bool export_api)
      : host_(host),
        device_(std::move(device)),
        source_(source),
        no_tracing_(std::move(no_tracing)),
        alloc_limit_(alloc_limit),
        export_api_(export_api) {}

  ep_common::OpSet ops() const { return ep_common::kBasicOps; }
  bool prepare(const OpKernel&, std::string*) { return true; }  // the kernels were loaded at open

  // Device work issued here carries the node's id: the profilers pushed it
  // as CUPTI's external correlation id in start_event, on this thread.
  ComputeResult compute(const OpKernel& k, const epprof_ep_tensor* inputs, size_t num_inputs,
                        epprof_ep_outputs* outputs) {
    return cuda::compute(*device_, alloc_limit_, k, inputs, num_inputs, outputs);
  }

  epprof_ep_profiler* create_profiler() {
    ProfilerEnv env{host_, source_, device_->description(), no_tracing_, nullptr, export_api_};
    Device* device = device_.get();
    int64_t (*now)() = host_->clock_now_ns;
    env.probe = [device, now](int64_t* before, int64_t* after, std::string* error) {
      return device->clock_probe(now, before, after, error);
    };
    return cuda::create_profiler(env);
  }

 private:
  const epprof_host_api* host_;
  std::unique_ptr<Device> device_;
  ActivitySource* source_;  // process-wide, never freed; null: no device tracing
  std::string no_tracing_;  // why, when source_ is null
  uint64_t alloc_limit_;  // 0: none
  bool export_api_;  // the CUDA API records go into the trace too
};

}  // namespace
}  // namespace epprof::cuda

extern "C" __attribute__((visibility("default"))) epprof_status* epprof_ep_plugin_entry(
    const epprof_host_api* host, uint32_t host_abi_version, epprof_ep_plugin** out) {
  return epprof::ep_common::plugin_entry<epprof::cuda::CudaEp>(host, host_abi_version, out);
}
