// The OpenCL EP plugin: entry point and the slots of epprof_ep_plugin.
// C++ inside, C at the boundary: every slot catches everything, so no
// exception reaches the host.
//
// Environment (read at entry or build time), for users and fault tests:
//   EPPROF_OPENCL_MAX_ALLOC_BYTES  cap on one device buffer; bigger ones
//                                  fail as device out-of-memory
//   EPPROF_OPENCL_BREAK_PROGRAM    elementwise|softmax|matmul|gemm|cnn: that
//                                  kernel program fails to build
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "device.h"
#include "epprof/ep_plugin.h"
#include "ops.h"
#include "profiler.h"

namespace epprof::opencl {
namespace {

struct State {
  const epprof_host_api* host = nullptr;
  std::unique_ptr<Device> device;
  Registry registry;
  uint64_t alloc_limit = 0;
};

struct Plugin {
  epprof_ep_plugin c{};  // first member of a standard-layout struct
  State* state = nullptr;
};

State& state(epprof_ep_plugin* p) { return *reinterpret_cast<Plugin*>(p)->state; }

epprof_status* make_status(const State& s, epprof_status_code code, const std::string& msg) {
  return s.host->status_create(code, ("opencl EP: " + msg).c_str());
}

epprof_status* claims(epprof_ep_plugin* self, const epprof_ep_node* node, int* out_claimed) {
  State& s = state(self);
  try {
    *out_claimed = 0;
    OpKernel k;
    std::string why_not;
    if (!parse_node(*node, kOpenClOps, &k, &why_not)) return nullptr;
    // Build the program now, so a build failure sends the node to the next
    // EP at session creation instead of failing a run.
    std::string build_error;
    if (!s.device->program(program_for(k.op), &build_error)) return make_status(s, EPPROF_PLUGIN_ERROR, build_error);
    *out_claimed = 1;
    return nullptr;
  } catch (const std::exception& e) {
    return make_status(s, EPPROF_PLUGIN_ERROR, std::string("claims: ") + e.what());
  }
}

epprof_status* create_kernel(epprof_ep_plugin* self, const epprof_ep_node* node, void** out_kernel) {
  return ep_common::create_kernel(state(self).host, "opencl EP: ", kOpenClOps, *node, out_kernel);
}

epprof_status* compute(epprof_ep_plugin* self, void* kernel, const epprof_ep_tensor* inputs, size_t num_inputs,
                       epprof_ep_outputs* outputs) {
  State& s = state(self);
  try {
    std::vector<CommandRecord> records;
    std::vector<MemoryRecord> memory;
    const ComputeResult r =
        opencl::compute(*s.device, s.alloc_limit, s.registry.any_active() ? s.host->clock_now_ns : nullptr,
                        *static_cast<const OpKernel*>(kernel), inputs,
                        num_inputs, outputs, &records, &memory);
    // Still on the node's thread: the profilers tag with its id.
    if (r.kind == ComputeResult::Kind::Ok) s.registry.record(records, memory);
    return ep_common::to_status(s.host, "opencl EP: ", r);
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
    *out = opencl::create_profiler(ProfilerEnv{s.host, s.device.get(), &s.registry});
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
}  // namespace epprof::opencl

extern "C" __attribute__((visibility("default"))) epprof_status* epprof_ep_plugin_entry(
    const epprof_host_api* host, uint32_t host_abi_version, epprof_ep_plugin** out) {
  using namespace epprof::opencl;
  if (host == nullptr || out == nullptr) return nullptr;
  if (host_abi_version < 1)
    return host->status_create(EPPROF_VERSION_MISMATCH, "opencl EP: needs a host speaking EP plugin ABI 1 or later");
  try {
    auto st = std::make_unique<State>();
    st->host = host;
    std::string error;
    st->device = Device::open(&error);
    if (!st->device)
      return host->status_create(EPPROF_UNSUPPORTED,
                                 ("opencl EP: " + error + "; the EP is refused, run the model on the CPU EP").c_str());
    if (const char* cap = std::getenv("EPPROF_OPENCL_MAX_ALLOC_BYTES")) st->alloc_limit = std::strtoull(cap, nullptr, 10);
    auto p = std::make_unique<Plugin>();
    p->c.abi_version = EPPROF_EP_PLUGIN_ABI_VERSION;
    p->c.name = "OpenCLExecutionProvider";  // ONNX Runtime's naming: the `provider` arg of node events
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
    return host->status_create(EPPROF_PLUGIN_ERROR, (std::string("opencl EP: entry: ") + e.what()).c_str());
  }
}
