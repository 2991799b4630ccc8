#include "profiler.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "profiler_shell.h"

namespace epprof::cuda {

bool SharedIdStack::enter(uint64_t id) {
  if (!entries_.empty() && entries_.back().id == id) {
    ++entries_.back().holders;
    return false;
  }
  entries_.push_back(Entry{id, 1});
  return true;
}

SharedIdStack::Leave SharedIdStack::leave(uint64_t id) {
  if (entries_.empty() || entries_.back().id != id) return Leave::kMismatch;
  if (--entries_.back().holders > 0) return Leave::kStillHeld;
  entries_.pop_back();
  return Leave::kPop;
}

class Profiler final : public ep_common::ProfilerShell<Profiler> {
 public:
  static constexpr const char* kPrefix = "cuda EP profiler: ";

  explicit Profiler(ProfilerEnv env) : ProfilerShell(env.host), env_(std::move(env)) {}
  ~Profiler() {
    if (attached_) env_.source->detach(&converter_);
  }

 private:
  friend class ep_common::ProfilerShell<Profiler>;

  // CUPTI's records are on the host clock: the host's start on it makes
  // their trace times exact (ep_profiler.h).
  void on_host_start(int64_t host_start_ns) {
    time_ = TimeBase{0, host_start_ns};
    host_start_given_ = true;
  }

  void on_start(int64_t start_offset_ns) {
    if (!host_start_given_) time_ = TimeBase{start_offset_ns, env_.host->clock_now_ns()};
    dropped_at_start_ = env_.source->dropped_records();
    std::string error;
    attached_ = env_.source->attach(&converter_, &error);
    if (!attached_) {
      attach_error_ = error;
      throw std::runtime_error("no device tracing in this scope: " + error);
    }
  }

  // Device work issued inside the event carries its id, as CUPTI's
  // external correlation id.
  epprof_status* on_event_start(uint64_t id) {
    std::string error;
    if (!env_.source->push_external_id(id, &error))
      return status(EPPROF_PLUGIN_ERROR, "start_event(" + std::to_string(id) + "): " + error);
    return nullptr;
  }

  epprof_status* on_event_stop(uint64_t id) {
    std::string error;
    if (!env_.source->pop_external_id(id, &error))
      return status(EPPROF_PLUGIN_ERROR, "stop_event(" + std::to_string(id) + "): " + error);
    return nullptr;
  }

  epprof_status* flush(epprof_event_sink* sink) {
    const epprof_host_api* host = env_.host;
    const int64_t host_end_ns = host->clock_now_ns();
    if (attached_) {
      env_.source->detach(&converter_);  // flushes CUPTI first; no delivery into us after this
      attached_ = false;
    }
    const uint64_t dropped = env_.source->dropped_records() - dropped_at_start_;
    ConversionStats stats;
    const std::vector<DeviceEvent> events = converter_.convert(time_, time_.host_start_ns, host_end_ns, &stats);

    // Metadata first, so it is there even if appending fails below.
    std::vector<std::pair<std::string, std::string>> meta = {
        {"device", env_.device},
        {"clock", env_.source->clock_description()},
        {"cupti_dropped_records", std::to_string(dropped)},
        {"device_records", std::to_string(events.size())},
        {"kernel_records", std::to_string(stats.kernels)},
        {"memcpy_records", std::to_string(stats.memcpys)},
        {"memset_records", std::to_string(stats.memsets)},
        {"memory_records", std::to_string(stats.memory)},
        {"external_correlation_records", std::to_string(stats.external_correlations)},
        {"unattributed_device_records", std::to_string(stats.unattributed)},
        {"records_outside_scope", std::to_string(stats.outside_scope)},
        {"records_with_end_before_start", std::to_string(stats.clamped)},
    };
    if (!attach_error_.empty()) meta.emplace_back("tracing_error", attach_error_);
    for (const auto& kv : meta)
      if (epprof_status* st = host->sink_set_metadata(sink, kv.first.c_str(), kv.second.c_str())) return st;
    for (const auto& [device, stream] : converter_.streams())
      if (epprof_status* st = host->sink_set_track_name(sink, track_of(device, stream), track_name(device, stream).c_str()))
        return st;

    ep_common::SinkBatch out(host, sink);
    std::vector<const char*> keys, values;
    for (const DeviceEvent& d : events) {
      keys.clear();
      values.clear();
      for (const auto& kv : d.args) {
        keys.push_back(kv.first.c_str());
        values.push_back(kv.second.c_str());
      }
      if (epprof_status* st = out.add([&](epprof_event** e) {
            return host->event_create(d.category, d.name.c_str(), 0, d.track, d.ts_ns, d.dur_ns, d.correlation_id,
                                      keys.data(), values.data(), keys.size(), e);
          }))
        return st;
    }
    return out.flush();
  }

  ProfilerEnv env_;
  TimeBase time_;
  bool host_start_given_ = false;
  uint64_t dropped_at_start_ = 0;
  bool attached_ = false;
  std::string attach_error_;
  RecordConverter converter_;  // written by the source while attached
};

epprof_ep_profiler* create_profiler(const ProfilerEnv& env) { return (new Profiler(env))->c(); }

}  // namespace epprof::cuda
