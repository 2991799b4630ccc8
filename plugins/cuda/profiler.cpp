#include "profiler.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <vector>

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

namespace {

// Correlation stacks of the calling thread, one per profiler, keyed by the
// profiler's serial number (never reused, unlike its address).
thread_local std::unordered_map<uint64_t, std::vector<uint64_t>> t_stacks;
std::atomic<uint64_t> g_next_serial{1};

constexpr size_t kBatch = 64;

}  // namespace

class Profiler {
 public:
  explicit Profiler(ProfilerEnv env) : env_(std::move(env)), serial_(g_next_serial.fetch_add(1)) {
    handle_.self = this;
    epprof_ep_profiler& c = handle_.c;
    c.abi_version = EPPROF_EP_ABI_VERSION;
    c.start_profiling = &Profiler::start_profiling;
    c.start_event = &Profiler::start_event;
    c.stop_event = &Profiler::stop_event;
    c.end_profiling = &Profiler::end_profiling;
    c.release = &Profiler::release;
    c.host_start = &Profiler::host_start;
  }
  ~Profiler() {
    if (attached_) env_.source->detach(&converter_);
  }
  epprof_ep_profiler* c() { return &handle_.c; }

 private:
  // The host's pointer is &handle_.c, the first member of a standard-layout struct.
  struct Handle {
    epprof_ep_profiler c;
    Profiler* self;
  };
  static Profiler* self(epprof_ep_profiler* p) { return reinterpret_cast<Handle*>(p)->self; }

  epprof_status* status(epprof_status_code code, const std::string& msg) const {
    return env_.host->status_create(code, ("cuda EP profiler: " + msg).c_str());
  }

  // CUPTI's records are on the host clock: the host's start on it makes
  // their trace times exact (ep_profiler.h).
  static epprof_status* host_start(epprof_ep_profiler* p, int64_t host_start_ns) {
    self(p)->time_ = TimeBase{0, host_start_ns};
    self(p)->host_start_given_ = true;
    return nullptr;
  }

  static epprof_status* start_profiling(epprof_ep_profiler* p, int64_t start_offset_ns) {
    Profiler* s = self(p);
    try {
      if (!s->host_start_given_) s->time_ = TimeBase{start_offset_ns, s->env_.host->clock_now_ns()};
      s->dropped_at_start_ = s->env_.source->dropped_records();
      std::string error;
      s->attached_ = s->env_.source->attach(&s->converter_, &error);
      if (!s->attached_) {
        s->attach_error_ = error;
        return s->status(EPPROF_PLUGIN_ERROR, "start_profiling: no device tracing in this scope: " + error);
      }
      return nullptr;
    } catch (const std::exception& e) {
      return s->status(EPPROF_PLUGIN_ERROR, std::string("start_profiling: ") + e.what());
    }
  }

  static epprof_status* start_event(epprof_ep_profiler* p, uint64_t id) {
    Profiler* s = self(p);
    try {
      t_stacks[s->serial_].push_back(id);
      std::string error;
      if (!s->env_.source->push_external_id(id, &error))
        return s->status(EPPROF_PLUGIN_ERROR, "start_event(" + std::to_string(id) + "): " + error);
      return nullptr;
    } catch (const std::exception&) {
      return s->status(EPPROF_OUT_OF_MEMORY, "correlation stack");
    }
  }

  static epprof_status* stop_event(epprof_ep_profiler* p, uint64_t id, const epprof_event*) {
    Profiler* s = self(p);
    auto it = t_stacks.find(s->serial_);
    if (it == t_stacks.end() || it->second.empty() || it->second.back() != id)
      return s->status(EPPROF_FAILED_PRECONDITION,
                       "stop_event(" + std::to_string(id) + ") is not the innermost event of its thread");
    it->second.pop_back();
    if (it->second.empty()) t_stacks.erase(it);  // threads may outlive many profilers
    std::string error;
    if (!s->env_.source->pop_external_id(id, &error))
      return s->status(EPPROF_PLUGIN_ERROR, "stop_event(" + std::to_string(id) + "): " + error);
    return nullptr;
  }

  static epprof_status* end_profiling(epprof_ep_profiler* p, epprof_event_sink* sink) {
    Profiler* s = self(p);
    try {
      return s->flush(sink);
    } catch (const std::bad_alloc&) {
      return s->status(EPPROF_OUT_OF_MEMORY, "end_profiling");
    } catch (const std::exception& e) {
      return s->status(EPPROF_PLUGIN_ERROR, std::string("end_profiling: ") + e.what());
    }
  }

  static void release(epprof_ep_profiler* p) { delete self(p); }

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

    std::vector<epprof_event*> batch;
    auto append_batch = [&]() -> epprof_status* {
      epprof_status* st = batch.empty() ? nullptr
                                        : host->sink_append(sink, const_cast<const epprof_event* const*>(batch.data()),
                                                            batch.size());
      for (epprof_event* e : batch) host->event_release(e);
      batch.clear();
      return st;
    };
    std::vector<const char*> keys, values;
    for (const DeviceEvent& d : events) {
      keys.clear();
      values.clear();
      for (const auto& kv : d.args) {
        keys.push_back(kv.first.c_str());
        values.push_back(kv.second.c_str());
      }
      epprof_event* ev = nullptr;
      if (epprof_status* st = host->event_create(d.category, d.name.c_str(), 0, d.track, d.ts_ns, d.dur_ns,
                                                 d.correlation_id, keys.data(), values.data(), keys.size(), &ev)) {
        if (epprof_status* st2 = append_batch()) host->status_release(st2);
        return st;
      }
      batch.push_back(ev);
      if (batch.size() == kBatch)
        if (epprof_status* st = append_batch()) return st;
    }
    return append_batch();
  }

  Handle handle_{};
  ProfilerEnv env_;
  uint64_t serial_;
  TimeBase time_;
  bool host_start_given_ = false;
  uint64_t dropped_at_start_ = 0;
  bool attached_ = false;
  std::string attach_error_;
  RecordConverter converter_;  // written by the source while attached
};

epprof_ep_profiler* create_profiler(const ProfilerEnv& env) { return (new Profiler(env))->c(); }

}  // namespace epprof::cuda
