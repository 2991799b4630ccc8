// The OpenCL EP plugin: what is OpenCL's own behind the shared plugin shell
// (plugins/common/plugin_shell.h), which owns the C slots and the entry.
//
// Environment (read at entry or build time), for users and fault tests:
//   EPPROF_OPENCL_MAX_ALLOC_BYTES  cap on one device buffer; bigger ones
//                                  fail as device out-of-memory
//   EPPROF_OPENCL_BREAK_PROGRAM    elementwise|softmax|matmul|gemm|cnn: that
//                                  kernel program fails to build
#include <memory>
#include <string>
#include <vector>

#include "device.h"
#include "ops.h"
#include "plugin_shell.h"
#include "profiler.h"

namespace epprof::opencl {
namespace {

class OpenClEp {
 public:
  static constexpr ep_common::EpIdentity kIdentity{"opencl", "OpenCLExecutionProvider"};  // ONNX Runtime's naming

  static std::unique_ptr<OpenClEp> open(const epprof_host_api* host, uint64_t alloc_limit, std::string* why) {
    std::unique_ptr<Device> device = Device::open(why);
    return device ? std::make_unique<OpenClEp>(host, std::move(device), alloc_limit) : nullptr;
  }

  OpenClEp(const epprof_host_api* host, std::unique_ptr<Device> device, uint64_t alloc_limit)
      : host_(host), device_(std::move(device)), alloc_limit_(alloc_limit) {}

  ep_common::OpSet ops() const { return kOpenClOps; }

  // Builds the program now, so a build failure sends the node to the next
  // EP at session creation instead of failing a run.
  bool prepare(const OpKernel& k, std::string* error) { return device_->program(program_for(k.op), error) != nullptr; }

  ComputeResult compute(const OpKernel& k, const epprof_ep_tensor* inputs, size_t num_inputs,
                        epprof_ep_outputs* outputs) {
    std::vector<CommandRecord> records;
    std::vector<MemoryRecord> memory;
    const ComputeResult r = opencl::compute(*device_, alloc_limit_, registry_.any_active() ? host_->clock_now_ns : nullptr,
                                            k, inputs, num_inputs, outputs, &records, &memory);
    // Still on the node's thread: the profilers tag with its id.
    if (r.kind == ComputeResult::Kind::Ok) registry_.record(records, memory);
    return r;
  }

  epprof_ep_profiler* create_profiler() { return opencl::create_profiler(ProfilerEnv{host_, device_.get(), &registry_}); }

 private:
  const epprof_host_api* host_;
  std::unique_ptr<Device> device_;
  uint64_t alloc_limit_;  // 0: none
  Registry registry_;
};

}  // namespace
}  // namespace epprof::opencl

extern "C" __attribute__((visibility("default"))) epprof_status* epprof_ep_plugin_entry(
    const epprof_host_api* host, uint32_t host_abi_version, epprof_ep_plugin** out) {
  return epprof::ep_common::plugin_entry<epprof::opencl::OpenClEp>(host, host_abi_version, out);
}
