#include "plugin/plugin.h"

#include <dlfcn.h>

#include <stdexcept>

#include "base/status.h"
#include "core/clock.h"
#include "core/log.h"
#include "epprof/profiler.h"
#include "plugin/event.h"

namespace epprof::plugin {

using base::make_status;
using base::null_argument;
namespace {

constexpr uint32_t kMaxPlugins = 64;

struct PluginSlot {
  uint64_t handle = 0;
  std::shared_ptr<LoadedPlugin> plugin;
};

struct PluginTable {
  std::mutex mu;
  PluginSlot slots[kMaxPlugins];
  uint64_t generation = 0;
};

PluginTable& table() {
  static PluginTable t;
  return t;
}

uint32_t index_of(uint64_t handle) { return uint32_t(handle & 0xff); }

}  // namespace

LoadedPlugin::LoadedPlugin(epprof_plugin* plugin, void* library, std::string path)
    : plugin_(plugin), library_(library), name_(plugin->name), path_(std::move(path)) {}

LoadedPlugin::~LoadedPlugin() {
  try {
    plugin_->release(plugin_);
  } catch (...) {
    core::log_warning(EPPROF_PLUGIN_ERROR, "epprof: plugin '" + name_ + "' threw from release");
  }
  if (library_) dlclose(library_);
}

std::string check_plugin(const epprof_plugin* plugin, const std::string& origin) {
  if (!plugin) return origin + ": the entry function returned no plugin";
  if (plugin->abi_version > EPPROF_EP_ABI_VERSION)
    return origin + ": plugin was built for epprof EP ABI version " +
           std::to_string(plugin->abi_version) + ", but this host supports up to version " +
           std::to_string(EPPROF_EP_ABI_VERSION);
  if (plugin->abi_version == 0) return origin + ": plugin declares EP ABI version 0";
  if (!plugin->name || !*plugin->name) return origin + ": plugin has no name";
  if (!plugin->create_profiler)
    return origin + ": plugin '" + plugin->name + "' lacks the required slot create_profiler";
  if (!plugin->release)
    return origin + ": plugin '" + plugin->name + "' lacks the required slot release";
  return {};
}

uint64_t plugin_table_add(std::shared_ptr<LoadedPlugin> plugin) {
  PluginTable& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (uint32_t i = 0; i < kMaxPlugins; ++i) {
    if (t.slots[i].plugin) continue;
    t.slots[i].handle = (++t.generation << 8) | i;
    t.slots[i].plugin = std::move(plugin);
    return t.slots[i].handle;
  }
  return 0;
}

std::shared_ptr<LoadedPlugin> plugin_table_get(uint64_t handle) {
  PluginTable& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  PluginSlot& s = t.slots[index_of(handle) % kMaxPlugins];
  if (handle == 0 || s.handle != handle) return nullptr;
  return s.plugin;
}

bool plugin_table_remove(uint64_t handle, bool* found) {
  std::shared_ptr<LoadedPlugin> doomed;
  {
    PluginTable& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    PluginSlot& s = t.slots[index_of(handle) % kMaxPlugins];
    *found = handle != 0 && s.handle == handle && s.plugin;
    if (!*found) return false;
    if (s.plugin.use_count() > 1) return false;
    doomed = std::move(s.plugin);
    s.handle = 0;
  }
  return true;  // `doomed` releases the plugin outside the lock
}

const char* slot_name(Slot s) noexcept {
  static const char* const kNames[] = {"start_profiling", "start_event", "stop_event",
                                       "end_profiling", "host_start"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(Slot::kCount), "names complete");
  return kNames[size_t(s)];
}

EpInstance::EpInstance(std::shared_ptr<LoadedPlugin> plugin, uint32_t index)
    : plugin_(std::move(plugin)), index_(index) {
  epprof_plugin* pl = plugin_->get();
  const std::string who = "plugin '" + plugin_->name() + "'";
  epprof_status* st = guarded([&] { return pl->create_profiler(pl, &p_); });
  if (st) {
    std::string msg = st == reinterpret_cast<epprof_status*>(1)
                          ? std::string("threw an exception")
                          : std::string(epprof_status_get_message(st));
    if (st != reinterpret_cast<epprof_status*>(1)) epprof_status_release(st);
    throw std::runtime_error(who + ": create_profiler failed: " + msg);
  }
  std::string problem;
  if (!p_) problem = "create_profiler returned no profiler";
  else if (p_->abi_version > EPPROF_EP_ABI_VERSION || p_->abi_version == 0)
    problem = "its profiler was built for EP ABI version " + std::to_string(p_->abi_version) +
              ", but this host supports versions 1 to " + std::to_string(EPPROF_EP_ABI_VERSION);
  else if (!p_->start_profiling) problem = "its profiler lacks the required slot start_profiling";
  else if (!p_->end_profiling) problem = "its profiler lacks the required slot end_profiling";
  else if (!p_->release) problem = "its profiler lacks the required slot release";
  if (!problem.empty()) {
    if (p_ && p_->release && p_->abi_version <= EPPROF_EP_ABI_VERSION) p_->release(p_);
    throw std::runtime_error(who + ": " + problem);
  }
}

EpInstance::~EpInstance() {
  try {
    p_->release(p_);
  } catch (...) {
    core::log_warning(EPPROF_PLUGIN_ERROR, "epprof: plugin '" + name() + "' threw from release");
  }
}

void EpInstance::start_profiling(int64_t host_start_ns) {
  if (p_->abi_version >= 2 && p_->host_start)
    check(Slot::kHostStart, guarded([&] { return p_->host_start(p_, host_start_ns); }));
  check(Slot::kStartProfiling,
        guarded([&] { return p_->start_profiling(p_, core::monotonic_ns() - host_start_ns); }));
}

void EpInstance::stop_event(const core::EndedEvent& e) {
  if (!p_->stop_event) return;
  epprof_event view;
  make_event_view(view, {e.category, e.pid, e.tid, e.ts_ns, e.dur_ns, e.correlation_id}, e.name, e.args, e.num_args);
  check(Slot::kStopEvent, guarded([&] { return p_->stop_event(p_, e.correlation_id, &view); }));
}

void EpInstance::end_profiling(epprof_event_sink* sink) {
  check(Slot::kEndProfiling, guarded([&] { return p_->end_profiling(p_, sink); }));
}

void EpInstance::record_error(Slot slot, epprof_status* status) {
  const bool threw = status == reinterpret_cast<epprof_status*>(1);
  std::string msg = threw ? std::string("threw a C++ exception") : epprof_status_get_message(status);
  if (!threw) epprof_status_release(status);
  if (counts_[size_t(slot)].fetch_add(1, std::memory_order_relaxed) != 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first_message_[size_t(slot)] = msg;
  }
  core::log_warning(EPPROF_PLUGIN_ERROR, "epprof: plugin '" + name() + "' " + slot_name(slot) +
                                             " failed: " + msg +
                                             " (further errors of this slot are counted, not "
                                             "logged; profiling continues)");
}

std::vector<core::EpError> EpInstance::errors() const {
  std::vector<core::EpError> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t s = 0; s < size_t(Slot::kCount); ++s) {
    uint64_t n = counts_[s].load(std::memory_order_relaxed);
    if (n) out.push_back({name(), slot_name(Slot(s)), n, first_message_[s]});
  }
  return out;
}

uint64_t EpInstance::error_count() const {
  uint64_t n = 0;
  for (auto& c : counts_) n += c.load(std::memory_order_relaxed);
  return n;
}

namespace {

// The entry points' statuses for a full plugin table and a stale handle.
epprof_status* table_full(const char* fn) {
  return make_status(EPPROF_RESOURCE_EXHAUSTED,
                     std::string(fn) + ": " + std::to_string(kMaxPlugins) + " plugins are already loaded");
}
epprof_status* stale_plugin(const char* fn) {
  return make_status(EPPROF_NOT_FOUND, std::string(fn) + ": unknown or unloaded plugin handle");
}

}  // namespace
}  // namespace epprof::plugin

using epprof::base::make_status;

extern "C" {

EPPROF_API epprof_status* epprof_plugin_register(epprof_plugin* plugin, epprof_plugin_t* out) {
  EPPROF_API_BEGIN
  if (!out) return epprof::base::null_argument(fn, "out");
  if (!plugin) return epprof::base::null_argument(fn, "plugin");
  std::string problem = epprof::plugin::check_plugin(plugin, fn);
  if (!problem.empty())
    return make_status(plugin->abi_version > EPPROF_EP_ABI_VERSION ? EPPROF_VERSION_MISMATCH
                                                                   : EPPROF_PLUGIN_ERROR,
                       problem);
  auto loaded = std::make_shared<epprof::plugin::LoadedPlugin>(plugin, nullptr, "<registered>");
  uint64_t h = epprof::plugin::plugin_table_add(loaded);
  if (!h) return epprof::plugin::table_full(fn);
  out->handle = h;
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_plugin_load(const char* path, epprof_plugin_t* out) {
  EPPROF_API_BEGIN
  if (!out) return epprof::base::null_argument(fn, "out");
  if (!path) return epprof::base::null_argument(fn, "path");
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    return make_status(EPPROF_NOT_FOUND, std::string("cannot load plugin '") + path +
                                             "': " + (err ? err : "unknown dlopen error"));
  }
  auto entry = reinterpret_cast<epprof_plugin_entry_fn>(dlsym(lib, EPPROF_PLUGIN_ENTRY_SYMBOL));
  if (!entry) {
    dlclose(lib);
    return make_status(EPPROF_NOT_FOUND, std::string("'") + path + "' is not an epprof plugin: it does not export " +
                                             EPPROF_PLUGIN_ENTRY_SYMBOL);
  }
  epprof_plugin* plugin = nullptr;
  epprof_status* st = nullptr;
  try {
    st = entry(epprof::plugin::host_api(), EPPROF_EP_ABI_VERSION, &plugin);
  } catch (...) {
    dlclose(lib);
    return make_status(EPPROF_PLUGIN_ERROR, std::string("plugin '") + path + "': the entry function threw");
  }
  if (st) {
    std::string msg = std::string("plugin '") + path + "': the entry function failed: " +
                      epprof_status_get_message(st);
    epprof_status_release(st);
    dlclose(lib);
    return make_status(EPPROF_PLUGIN_ERROR, msg);
  }
  std::string problem = epprof::plugin::check_plugin(plugin, std::string("plugin '") + path + "'");
  if (!problem.empty()) {
    epprof_status_code code = plugin && plugin->abi_version > EPPROF_EP_ABI_VERSION
                                  ? EPPROF_VERSION_MISMATCH
                                  : EPPROF_PLUGIN_ERROR;
    // A plugin from a newer ABI may lay out its struct differently: do not
    // call into it. Otherwise give it the chance to free itself.
    if (plugin && code != EPPROF_VERSION_MISMATCH && plugin->release) plugin->release(plugin);
    dlclose(lib);
    return make_status(code, problem);
  }
  auto loaded = std::make_shared<epprof::plugin::LoadedPlugin>(plugin, lib, path);
  uint64_t h = epprof::plugin::plugin_table_add(loaded);
  if (!h) return epprof::plugin::table_full(fn);
  out->handle = h;
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_plugin_get_name(epprof_plugin_t plugin, const char** out) {
  EPPROF_API_BEGIN
  if (!out) return epprof::base::null_argument(fn, "out");
  auto p = epprof::plugin::plugin_table_get(plugin.handle);
  if (!p) return epprof::plugin::stale_plugin(fn);
  *out = p->name().c_str();
  return nullptr;
  EPPROF_API_END
}

EPPROF_API epprof_status* epprof_plugin_unload(epprof_plugin_t plugin) {
  EPPROF_API_BEGIN
  bool found = false;
  if (epprof::plugin::plugin_table_remove(plugin.handle, &found)) return nullptr;
  if (!found) return epprof::plugin::stale_plugin(fn);
  return make_status(EPPROF_FAILED_PRECONDITION,
                     std::string(fn) + ": a profiler still uses this plugin; destroy it first");
  EPPROF_API_END
}

}  // extern "C"
