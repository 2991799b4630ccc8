// The CUDA EP plugin: entry point and the slots of epprof_ep_plugin.
// C++ inside, C at the boundary: every slot catches everything, so no
// exception reaches the host.
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
#include <new>
#include <string>

#include "cupti_source.h"
#include "device.h"
#include "epprof/ep_plugin.h"
#include "ops.h"
#include "profiler.h"

namespace epprof::cuda {
namespace {

struct State {
  const epprof_host_api* host = nullptr;
  std::unique_ptr<Device> device;
  ActivitySource* source = nullptr;  // process-wide, never freed
  uint64_t alloc_limit = 0;
};

struct Plugin {
  epprof_ep_plugin c{};  // first member of a standard-layout struct
  State* state = nullptr;
};

State& state(epprof_ep_plugin* p) { return *reinterpret_cast<Plugin*>(p)->state; }

epprof_status* make_status(const State& s, epprof_status_code code, const std::string& msg) {
  return s.host->status_create(code, ("cuda EP: " + msg).c_str());
}

epprof_status* claims(epprof_ep_plugin* self, const epprof_ep_node* node, int* out_claimed) {
  State& s = state(self);
  try {
    *out_claimed = 0;
    OpKernel k;
    std::string why_not;
    if (parse_node(*node, ep_common::kBasicOps, &k, &why_not)) *out_claimed = 1;
    return nullptr;
  } catch (const std::exception& e) {
    return make_status(s, EPPROF_PLUGIN_ERROR, std::string("claims: ") + e.what());
  }
}

epprof_status* create_kernel(epprof_ep_plugin* self, const epprof_ep_node* node, void** out_kernel) {
  return ep_common::create_kernel(state(self).host, "cuda EP: ", ep_common::kBasicOps, *node, out_kernel);
}

epprof_status* compute(epprof_ep_plugin* self, void* kernel, const epprof_ep_tensor* inputs, size_t num_inputs,
                       epprof_ep_outputs* outputs) {
  State& s = state(self);
  try {
    // Device work issued here carries the node's id: the profilers pushed it
    // as CUPTI's external correlation id in start_event, on this thread.
    const ComputeResult r =
        cuda::compute(*s.device, s.alloc_limit, *static_cast<const OpKernel*>(kernel), inputs, num_inputs, outputs);
    return ep_common::to_status(s.host, "cuda EP: ", r);
  } catch (const std::bad_alloc&) {
    return make_status(s, EPPROF_OUT_OF_MEMORY, "compute: out of host memory");
  } catch (const std::exception& e) {
    return make_status(s, EPPROF_PLUGIN_ERROR, std::string("compute: ") + e.what());
  }
}

void release_kernel(epprof_ep_plugin*, void* kernel) { ep_common::release_kernel(kernel); }

epprof_status* create_profiler(epprof_ep_plugin* self, epprof_ep_profiler** out) {
  State& s = state(self);
  try {
    *out = cuda::create_profiler(ProfilerEnv{s.host, s.source, s.device->description()});
    return nullptr;
  } catch (const std::exception& e) {
    return make_status(s, EPPROF_OUT_OF_MEMORY, std::string("create_profiler: ") + e.what());
  }
}

void release(epprof_ep_plugin* self) {
  auto* p = reinterpret_cast<Plugin*>(self);
  delete p->state;
  delete p;
}

}  // namespace
}  // namespace epprof::cuda

extern "C" __attribute__((visibility("default"))) epprof_status* epprof_ep_plugin_entry(
    const epprof_host_api* host, uint32_t host_abi_version, epprof_ep_plugin** out) {
  using namespace epprof::cuda;
  if (host == nullptr || out == nullptr) return nullptr;
  if (host_abi_version < 1)
    return host->status_create(EPPROF_VERSION_MISMATCH, "cuda EP: needs a host speaking EP plugin ABI 1 or later");
  const std::string refused = "; the EP is refused at load: its nodes must run on another EP (the CPU EP)";
  try {
    auto st = std::make_unique<State>();
    st->host = host;
    std::string error;
    st->device = Device::open(&error);
    if (!st->device) return host->status_create(EPPROF_UNSUPPORTED, ("cuda EP: " + error + refused).c_str());
    st->source = cupti_source(host, &error);
    if (!st->source)
      return host->status_create(EPPROF_UNSUPPORTED,
                                 ("cuda EP: CUPTI initialisation failed: " + error + refused).c_str());
    if (const char* cap = std::getenv("EPPROF_CUDA_MAX_ALLOC_BYTES")) st->alloc_limit = std::strtoull(cap, nullptr, 10);
    auto p = std::make_unique<Plugin>();
    p->c.abi_version = EPPROF_EP_PLUGIN_ABI_VERSION;
    p->c.name = "CUDAExecutionProvider";  // ONNX Runtime's naming: the `provider` arg of node events
    p->c.claims = claims;
    p->c.create_kernel = create_kernel;
    p->c.compute = compute;
    p->c.release_kernel = release_kernel;
    p->c.create_profiler = create_profiler;
    p->c.release = release;
    p->state = st.release();
    *out = &p.release()->c;
    return nullptr;
  } catch (const std::exception& e) {
    return host->status_create(EPPROF_PLUGIN_ERROR, (std::string("cuda EP: entry: ") + e.what()).c_str());
  }
}
