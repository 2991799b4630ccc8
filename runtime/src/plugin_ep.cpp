// The runtime side of the EP plugin ABI (epprof/ep_plugin.h): loads a
// plugin and adapts its C slots to ExecutionProvider / Kernel. No exception
// crosses into the plugin: the allocate callback converts them to statuses;
// plugin statuses become Error with the plugin's message.
#include "epprof/rt/plugin_ep.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "epprof/ep_plugin.h"
#include "epprof/profiler.h"
#include "epprof/rt/error.h"
#include "plugin_ep_node.h"

namespace epprof::rt {

namespace {

using detail::PluginNodeDesc;

// Takes ownership of a status; "CODE: message".
std::string take_message(epprof_status* st) {
  std::string msg = std::string(epprof_status_code_name(epprof_status_get_code(st))) + ": " +
                    epprof_status_get_message(st);
  epprof_status_release(st);
  return msg;
}

// The loaded library and its plugin object, shared by the EP, its kernels
// and its profiler plugins: the last owner releases the plugin.
struct Library {
  std::string path;
  void* handle = nullptr;
  epprof_ep_plugin* plugin = nullptr;
  std::string name;

  ~Library() {
    if (plugin != nullptr && plugin->release != nullptr) plugin->release(plugin);
    if (handle != nullptr) dlclose(handle);
  }
};

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw Error(ErrorKind::Io, "cannot load EP plugin '" + path + "': " + why);
}

epprof_status* allocate_output(epprof_ep_outputs* self, size_t index, int32_t dtype, const int64_t* dims,
                               int32_t rank, void** out_data) {
  const epprof_host_api* host = epprof_get_host_api();
  // host_data is the kernel context whose outputs the plugin allocates.
  auto* ctx = self != nullptr ? static_cast<KernelContext*>(self->host_data) : nullptr;
  if (ctx == nullptr || out_data == nullptr || rank < 0 || (rank > 0 && dims == nullptr))
    return host->status_create(EPPROF_INVALID_ARGUMENT, "allocate: NULL argument or negative rank");
  if (index >= ctx->outputs.size())
    return host->status_create(EPPROF_INVALID_ARGUMENT,
                               ("allocate: output index " + std::to_string(index) + " out of range").c_str());
  if (!is_supported_type(dtype))
    return host->status_create(EPPROF_INVALID_ARGUMENT, ("allocate: unsupported dtype " + std::to_string(dtype)).c_str());
  Shape shape(dims, dims + rank);
  for (int64_t d : shape)
    if (d < 0) return host->status_create(EPPROF_INVALID_ARGUMENT, "allocate: negative dim");
  try {
    Tensor t(static_cast<DataType>(dtype), std::move(shape));
    *out_data = t.size() == 0 ? nullptr : t.raw_mutable();
    ctx->outputs[index] = std::move(t);
    return nullptr;
  } catch (const std::bad_alloc&) {
    return host->status_create(EPPROF_OUT_OF_MEMORY, "allocate: out of host memory");
  } catch (const std::exception& e) {
    return host->status_create(EPPROF_INVALID_ARGUMENT, (std::string("allocate: ") + e.what()).c_str());
  }
}

class PluginKernel final : public Kernel {
 public:
  PluginKernel(std::shared_ptr<Library> lib, void* kernel, std::unique_ptr<Kernel> fallback, const Node& node)
      : lib_(std::move(lib)), kernel_(kernel), fallback_(std::move(fallback)), node_(node.describe()) {}
  ~PluginKernel() override {
    if (lib_->plugin->release_kernel != nullptr) lib_->plugin->release_kernel(lib_->plugin, kernel_);
  }

  void compute(KernelContext& ctx) const override {
    std::vector<epprof_ep_tensor> inputs(ctx.inputs.size());
    for (size_t i = 0; i < ctx.inputs.size(); ++i) inputs[i] = detail::tensor_view(ctx.inputs[i]);
    epprof_ep_outputs out{};
    out.size = sizeof out;
    out.num_outputs = ctx.outputs.size();
    out.allocate = allocate_output;
    out.host_data = &ctx;
    epprof_ep_plugin* p = lib_->plugin;
    epprof_status* st = p->compute(p, kernel_, inputs.empty() ? nullptr : inputs.data(), inputs.size(), &out);
    if (st == nullptr) return;
    const epprof_status_code code = epprof_status_get_code(st);
    const std::string msg = take_message(st);
    const bool may_fall_back = code == EPPROF_OUT_OF_MEMORY || code == EPPROF_UNSUPPORTED;
    if (!may_fall_back || !fallback_)
      throw Error(ErrorKind::Kernel, "EP plugin '" + lib_->name + "' failed to compute: " + msg);
    // Results must not change: run this call on the CPU EP, and say so once.
    if (!warned_.exchange(true))
      std::fprintf(stderr, "epprof: EP plugin '%s' cannot run %s (%s); it falls back to the CPU EP\n",
                   lib_->name.c_str(), node_.c_str(), msg.c_str());
    for (auto& t : ctx.outputs) t = Tensor();
    fallback_->compute(ctx);
  }

 private:
  std::shared_ptr<Library> lib_;
  void* kernel_;
  std::unique_ptr<Kernel> fallback_;  // the CPU EP's kernel, or null
  std::string node_;
  mutable std::atomic<bool> warned_{false};
};

// The epprof_plugin handed to libepprof: create_profiler forwards to the
// EP's slot. It owns a reference to the library, so the EP plugin outlives
// every profiler it created.
struct ProfilerPlugin {
  epprof_plugin c;                    // first member of a standard-layout struct:
  std::shared_ptr<Library>* lib;      // the host's pointer converts back

  static epprof_status* create_profiler(epprof_plugin* self, epprof_ep_profiler** out) {
    epprof_ep_plugin* p = (*reinterpret_cast<ProfilerPlugin*>(self)->lib)->plugin;
    return p->create_profiler(p, out);
  }
  static void release(epprof_plugin* self) {
    auto* pp = reinterpret_cast<ProfilerPlugin*>(self);
    delete pp->lib;
    delete pp;
  }
};

class PluginEp final : public PluginExecutionProvider {
 public:
  explicit PluginEp(std::shared_ptr<Library> lib) : lib_(std::move(lib)), cpu_(make_cpu_execution_provider()) {}

  std::string name() const override { return lib_->name; }
  const std::string& path() const override { return lib_->path; }
  bool has_profiler() const override { return lib_->plugin->create_profiler != nullptr; }

  bool claims(const Node& node) const override {
    PluginNodeDesc desc(node);
    int claimed = 0;
    epprof_status* st = lib_->plugin->claims(lib_->plugin, desc.get(), &claimed);
    if (st == nullptr) return claimed != 0;
    // A failed claim is "not claimed": the node goes to the next EP.
    std::fprintf(stderr, "epprof: EP plugin '%s' does not take %s (%s); it goes to the next EP\n",
                 lib_->name.c_str(), node.describe().c_str(), take_message(st).c_str());
    return false;
  }

  std::unique_ptr<Kernel> create_kernel(const Node& node) const override {
    std::unique_ptr<Kernel> fallback;
    try {
      if (cpu_->claims(node)) fallback = cpu_->create_kernel(node);
    } catch (const std::exception&) {
      // No fallback: the plugin's kernel is the only one.
    }
    PluginNodeDesc desc(node);
    void* kernel = nullptr;
    epprof_status* st = lib_->plugin->create_kernel(lib_->plugin, desc.get(), &kernel);
    if (st == nullptr && kernel != nullptr)
      return std::make_unique<PluginKernel>(lib_, kernel, std::move(fallback), node);
    const epprof_status_code code = st ? epprof_status_get_code(st) : EPPROF_PLUGIN_ERROR;
    const std::string msg = st ? take_message(st) : "create_kernel returned no kernel";
    if ((code == EPPROF_UNSUPPORTED || code == EPPROF_OUT_OF_MEMORY) && fallback) {
      std::fprintf(stderr, "epprof: EP plugin '%s' cannot create a kernel for %s (%s); it runs on the CPU EP\n",
                   lib_->name.c_str(), node.describe().c_str(), msg.c_str());
      return fallback;
    }
    throw Error(ErrorKind::Kernel, "EP plugin '" + lib_->name + "' failed to create a kernel: " + msg);
  }

  epprof_plugin* make_profiler_plugin() const override {
    if (!has_profiler()) return nullptr;
    auto* pp = new ProfilerPlugin{};
    pp->lib = new std::shared_ptr<Library>(lib_);
    pp->c.abi_version = EPPROF_EP_ABI_VERSION;
    pp->c.name = lib_->name.c_str();
    pp->c.create_profiler = &ProfilerPlugin::create_profiler;
    pp->c.release = &ProfilerPlugin::release;
    return &pp->c;
  }

 private:
  std::shared_ptr<Library> lib_;
  std::shared_ptr<ExecutionProvider> cpu_;  // fallback kernels
};

}  // namespace

std::shared_ptr<PluginExecutionProvider> load_plugin_ep(const std::string& path) {
  auto lib = std::make_shared<Library>();
  lib->path = path;
  // RTLD_NODELETE: device runtimes loaded by a plugin (an OpenCL ICD, its
  // LLVM) keep thread-local state and exit handlers that must not be
  // unmapped under them; the plugin's code stays mapped after release.
  lib->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (lib->handle == nullptr) {
    const char* err = dlerror();
    refuse(path, err ? err : "dlopen failed");
  }
  void* sym = dlsym(lib->handle, EPPROF_EP_PLUGIN_ENTRY_SYMBOL);
  if (sym == nullptr) refuse(path, "it does not export " EPPROF_EP_PLUGIN_ENTRY_SYMBOL " (not an EP plugin?)");
  auto entry = reinterpret_cast<epprof_ep_plugin_entry_fn>(sym);
  epprof_ep_plugin* plugin = nullptr;
  epprof_status* st = entry(epprof_get_host_api(), EPPROF_EP_PLUGIN_ABI_VERSION, &plugin);
  if (st != nullptr) refuse(path, "its entry function failed, the EP is refused: " + take_message(st));
  if (plugin == nullptr) refuse(path, "its entry function returned no plugin");
  if (plugin->abi_version > EPPROF_EP_PLUGIN_ABI_VERSION || plugin->abi_version == 0) {
    const std::string v = std::to_string(plugin->abi_version);
    // Only the release slot of a plugin we cannot speak to is trusted.
    if (plugin->abi_version != 0 && plugin->release != nullptr) plugin->release(plugin);
    refuse(path, "built for EP plugin ABI version " + v + ", this host speaks version " +
                     std::to_string(EPPROF_EP_PLUGIN_ABI_VERSION));
  }
  lib->plugin = plugin;  // released by ~Library from here on
  std::string missing;
  auto need = [&](bool present, const char* slot) {
    if (!present) missing += std::string(missing.empty() ? "" : ", ") + slot;
  };
  need(plugin->name != nullptr && plugin->name[0] != '\0', "name");
  need(plugin->claims != nullptr, "claims");
  need(plugin->create_kernel != nullptr, "create_kernel");
  need(plugin->compute != nullptr, "compute");
  need(plugin->release != nullptr, "release");
  if (!missing.empty()) refuse(path, "the plugin lacks required slots: " + missing);
  lib->name = plugin->name;
  return std::make_shared<PluginEp>(std::move(lib));
}

}  // namespace epprof::rt
