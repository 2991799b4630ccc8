// Loaded plugins and the EP profiler instances made from them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/ep_hooks.h"
#include "epprof/ep_profiler.h"

namespace epprof::plugin {

class LoadedPlugin {
 public:
  LoadedPlugin(epprof_plugin* plugin, void* library, std::string path);
  ~LoadedPlugin();
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  epprof_plugin* get() const { return plugin_; }
  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }

 private:
  epprof_plugin* plugin_;
  void* library_;  // dlopen handle, or nullptr for a registered plugin
  std::string name_;
  std::string path_;
};

// Checks a plugin struct returned by an entry function: version, name,
// required slots. Returns an empty string when acceptable, else the reason.
std::string check_plugin(const epprof_plugin* plugin, const std::string& origin);

// Handle table for loaded plugins.
struct PluginHandleResult {
  std::shared_ptr<LoadedPlugin> plugin;
  bool stale = false;
};
uint64_t plugin_table_add(std::shared_ptr<LoadedPlugin> plugin);  // 0 when full
std::shared_ptr<LoadedPlugin> plugin_table_get(uint64_t handle);
// Removes the entry if only the table holds it; returns false if in use,
// and sets *found to whether the handle was valid.
bool plugin_table_remove(uint64_t handle, bool* found);

// Why a plugin slot was called, for error accounting and messages.
enum class Slot : uint8_t { kStartProfiling, kStartEvent, kStopEvent, kEndProfiling, kHostStart, kCount };
const char* slot_name(Slot s) noexcept;

// One EP profiler instance for one scope. Calls into the plugin are guarded:
// an error status or exception is counted, logged once per slot kind, and
// never stops profiling.
class EpInstance final : public core::EpHooks {
 public:
  // Creates the instance through the plugin; throws std::runtime_error with
  // a message naming the plugin and problem when it cannot.
  EpInstance(std::shared_ptr<LoadedPlugin> plugin, uint32_t index);
  ~EpInstance();
  EpInstance(const EpInstance&) = delete;
  EpInstance& operator=(const EpInstance&) = delete;

  const std::string& name() const override { return plugin_->name(); }
  uint32_t index() const { return index_; }
  bool wants_events() const override { return p_->start_event || p_->stop_event; }
  bool wants_stop_event() const override { return p_->stop_event != nullptr; }

  // host_start (version 2 plugins that have it) with `host_start_ns`, then
  // start_profiling with the host clock's time since then.
  void start_profiling(int64_t host_start_ns) override;
  void start_event(uint64_t id) override {
    if (p_->start_event) check(Slot::kStartEvent, guarded([&] { return p_->start_event(p_, id); }));
  }
  // The plugin sees the event as a borrowed epprof_event (event.h).
  void stop_event(const core::EndedEvent& event) override;
  void end_profiling(epprof_event_sink* sink) override;

  std::vector<core::EpError> errors() const override;
  uint64_t error_count() const override;

 private:
  template <class F>
  static epprof_status* guarded(F&& f) noexcept {
    try {
      return f();
    } catch (...) {
      return reinterpret_cast<epprof_status*>(1);  // marker: threw
    }
  }
  void check(Slot slot, epprof_status* status) {
    if (__builtin_expect(status != nullptr, 0)) record_error(slot, status);
  }
  void record_error(Slot slot, epprof_status* status);

  std::shared_ptr<LoadedPlugin> plugin_;
  epprof_ep_profiler* p_ = nullptr;
  uint32_t index_;
  std::atomic<uint64_t> counts_[size_t(Slot::kCount)] = {};
  mutable std::mutex mu_;
  std::string first_message_[size_t(Slot::kCount)];
};

}  // namespace epprof::plugin
