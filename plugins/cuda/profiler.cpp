#include "profiler.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <vector>

#include "profiler_shell.h"

namespace epprof::cuda {

bool SharedIdStack::enter(uint64_t id) {
  if (!entries_.empty() && entries_.back().id == id) {
    ++entries_.back().holders;
    return false;
  }
  entries_.push_back(Entry{id, 1, true});
  return true;
}

SharedIdStack::Leave SharedIdStack::leave(uint64_t id) {
  if (entries_.empty() || entries_.back().id != id) return Leave::kMismatch;
  if (--entries_.back().holders > 0) return Leave::kStillHeld;
  const bool pushed = entries_.back().pushed;
  entries_.pop_back();
  return pushed ? Leave::kPop : Leave::kStillHeld;
}

class Profiler final : public ep_common::ProfilerShell<Profiler> {
 public:
  static constexpr const char* kPrefix = "cuda EP profiler: ";

  explicit Profiler(ProfilerEnv env) : ProfilerShell(env.host), env_(std::move(env)) {
    converter_.set_export_api(env_.export_api);
    if (!env_.source) tracing_error_ = env_.no_tracing_why.empty() ? "no CUPTI source" : env_.no_tracing_why;
  }
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

  // A scope without device tracing still runs: its metadata says why.
  void on_start(int64_t start_offset_ns) {
    if (!host_start_given_) time_ = TimeBase{start_offset_ns, env_.host->clock_now_ns()};
    if (!env_.source) return;
    dropped_at_start_ = env_.source->dropped_records();
    std::string error;
    attached_ = env_.source->attach(&converter_, &error);
    if (!attached_) {
      tracing_error_ = error;
      return;
    }
    probe_group(0);
  }

  // Device work issued inside the event carries its id, as CUPTI's
  // external correlation id.
  epprof_status* on_event_start(uint64_t id) {
    if (!attached_) return nullptr;
    std::string error;
    if (!env_.source->push_external_id(id, &error))
      return status(EPPROF_PLUGIN_ERROR, "start_event(" + std::to_string(id) + "): " + error);
    return nullptr;
  }

  epprof_status* on_event_stop(uint64_t id) {
    if (!attached_) return nullptr;
    std::string error;
    if (!env_.source->pop_external_id(id, &error))
      return status(EPPROF_PLUGIN_ERROR, "stop_event(" + std::to_string(id) + "): " + error);
    return nullptr;
  }

  // Clock probes at one time; the tightest holds (ClockProbe). The first
  // of a scope also pays for CUPTI's and the stream's first use.
  void probe_group(uint32_t group) {
    constexpr int kProbesPerGroup = 3;
    for (int i = 0; i < kProbesPerGroup; ++i) probe(group);
  }

  // One clock probe under the next probe id; a failure leaves the bound
  // to the other probes, or unknown.
  void probe(uint32_t group) {
    if (!env_.probe) return;
    static std::atomic<uint64_t> next_probe{0};  // unique across scopes: every scope sees every record
    const uint64_t id = kProbeExternalIdBase + next_probe.fetch_add(1, std::memory_order_relaxed);
    std::string error;
    ClockProbe p;
    p.id = id;
    p.group = group;
    if (!env_.source->push_external_id(id, &error)) {
      probe_error_ = error;
      return;
    }
    const bool ok = env_.probe(&p.host_before_ns, &p.host_after_ns, &error);
    std::string pop_error;
    env_.source->pop_external_id(id, &pop_error);
    if (!ok) {
      probe_error_ = error;
      return;
    }
    probes_.push_back(p);
  }

  epprof_status* flush(epprof_event_sink* sink) {
    const epprof_host_api* host = env_.host;
    if (attached_) {
      probe_group(1);
      env_.source->detach(&converter_);  // flushes CUPTI first; no delivery into us after this
      attached_ = false;
      traced_ = true;
    }
    const int64_t host_end_ns = host->clock_now_ns();
    for (const ClockProbe& p : probes_) converter_.add(p);
    const uint64_t dropped = traced_ ? env_.source->dropped_records() - dropped_at_start_ : 0;
    ConversionStats stats;
    const std::vector<DeviceEvent> events = converter_.convert(time_, time_.host_start_ns, host_end_ns, &stats);

    // Metadata first, so it is there even if appending fails below.
    std::string bound = std::to_string(stats.clock_error_bound_ns);
    if (stats.clock_error_bound_ns < 0)
      bound = "unknown: " + (!traced_ ? std::string("no device tracing")
                             : !env_.probe ? std::string("no clock probe")
                             : !probe_error_.empty() ? "the clock probe failed: " + probe_error_
                                                     : std::string("no probe record arrived"));
    std::vector<std::pair<std::string, std::string>> meta = {
        {"device", env_.device},
        {"device_tracing", traced_                 ? std::string("on")
                           : tracing_error_.empty() ? std::string("off: the scope did not start")
                                                    : "off: " + tracing_error_},
        {"clock", env_.source ? env_.source->clock_description() : std::string("none: no device tracing")},
        {"clock_error_bound_ns", bound},
        {"clock_probes", std::to_string(stats.probes_matched) + " of " + std::to_string(probes_.size())},
        {"clock_probe_bounds_ns", stats.probe_bounds},
        {"cupti_dropped_records", std::to_string(dropped)},
        {"device_records", std::to_string(events.size())},
        {"kernel_records", std::to_string(stats.kernels)},
        {"memcpy_records", std::to_string(stats.memcpys)},
        {"memset_records", std::to_string(stats.memsets)},
        {"memory_records", std::to_string(stats.memory)},
        {"api_records", std::to_string(stats.api)},
        {"external_correlation_records", std::to_string(stats.external_correlations)},
        {"unattributed_device_records", std::to_string(stats.unattributed)},
        {"records_outside_scope", std::to_string(stats.outside_scope)},
        {"untimed_device_records", std::to_string(stats.untimed)},
        {"records_with_end_before_start", std::to_string(stats.clamped)},
        {"device_records_with_their_call", std::to_string(stats.with_call)},
        {"device_records_before_their_call", std::to_string(stats.before_call)},
        {"worst_start_before_call_ns", std::to_string(stats.worst_before_call_ns)},
    };
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
  bool traced_ = false;  // attached at some point: the scope has device tracing
  std::string tracing_error_;
  std::string probe_error_;
  std::vector<ClockProbe> probes_;
  RecordConverter converter_;  // written by the source while attached
};

epprof_ep_profiler* create_profiler(const ProfilerEnv& env) { return (new Profiler(env))->c(); }

}  // namespace epprof::cuda
