#include "profiler.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "calibration.h"
#include "profiler_shell.h"

namespace epprof::opencl {

namespace {

constexpr int64_t kQueueTrack = 0;  // the EP's one queue

struct Tagged {
  uint64_t correlation_id;
  CommandRecord command;
};

// A command's place on the host clock.
struct Placement {
  int64_t start_ns = 0, dur_ns = 0, latency_ns = 0;  // host clock; latency: QUEUED to START
  int64_t error_ns = 0;                              // bound on start_ns's error
};

// Every command placed on the host clock, with what the anchoring found.
struct Placed {
  std::vector<Placement> events;  // parallel to the tagged commands
  uint64_t anchored = 0;          // placed by the enqueue brackets
  uint64_t corrected = 0, inconsistent = 0;
  int64_t max_correction_ns = 0;
  int64_t max_error_ns = 0;

  Placed(const ClockModel& model, const std::vector<Tagged>& tagged) {
    std::vector<AnchoredClock::Sample> samples;
    for (const Tagged& t : tagged)
      if (t.command.enqueue_end > 0)
        samples.push_back({static_cast<int64_t>(t.command.queued), t.command.enqueue_begin, t.command.enqueue_end});
    const AnchoredClock clock(model, samples);
    anchored = samples.size();
    corrected = clock.corrected();
    inconsistent = clock.inconsistent();
    max_correction_ns = clock.max_correction_ns();
    events.reserve(tagged.size());
    for (const Tagged& t : tagged) {
      const CommandRecord& r = t.command;
      const auto start = static_cast<int64_t>(r.start), end = static_cast<int64_t>(r.end);
      Placement p;
      if (r.enqueue_end > 0) {
        p.start_ns = clock.to_host(start);
        p.dur_ns = std::max<int64_t>(0, clock.to_host(end) - p.start_ns);
        p.error_ns = clock.error_ns({static_cast<int64_t>(r.queued), r.enqueue_begin, r.enqueue_end}, start);
      } else {  // enqueued while no profiler was active: the model alone
        p.start_ns = model.to_host(start);
        p.dur_ns = std::max<int64_t>(0, model.duration(end - start));
        p.error_ns = model.error_bound_ns();
      }
      p.latency_ns = model.duration(start - static_cast<int64_t>(r.queued));
      max_error_ns = std::max(max_error_ns, p.error_ns);
      events.push_back(p);
    }
  }

  int64_t median_error_ns() const {
    if (events.empty()) return 0;
    std::vector<int64_t> e;
    e.reserve(events.size());
    for (const Placement& p : events) e.push_back(p.error_ns);
    std::nth_element(e.begin(), e.begin() + static_cast<ptrdiff_t>(e.size() / 2), e.end());
    return e[e.size() / 2];
  }
};

}  // namespace

class Profiler final : public ep_common::ProfilerShell<Profiler> {
 public:
  static constexpr const char* kPrefix = "opencl EP profiler: ";

  explicit Profiler(const ProfilerEnv& env) : ProfilerShell(env.host), env_(env) {}
  ~Profiler() { env_.registry->remove(this); }

  // Under the registry's lock, on the thread that issued the commands.
  void append(const std::vector<CommandRecord>& records, const std::vector<MemoryRecord>& memory) {
    const uint64_t id = innermost();
    if (id == 0) {
      // Issued outside every event of this scope (another scope's run on
      // another thread): not ours to trace, but counted in the metadata.
      outside_scope_ += records.size();
      return;
    }
    for (const auto& r : records) tagged_.push_back(Tagged{id, r});
    for (const auto& m : memory) memory_.emplace_back(id, m);
  }

 private:
  friend class ep_common::ProfilerShell<Profiler>;

  // Device times are put on the host clock here, so the host's start on it
  // makes them exact trace times (ep_profiler.h). Hosts before version 2
  // give only start_profiling's offset.
  void on_host_start(int64_t host_start_ns) { trace_t0_ns_ = host_start_ns; }

  void on_start(int64_t start_offset_ns) {
    if (trace_t0_ns_ < 0) trace_t0_ns_ = env_.host->clock_now_ns() - start_offset_ns;
    cal_start_ = env_.clock->sample(env_.host->clock_now_ns);
    env_.registry->add(this);
  }

  epprof_status* on_event_start(uint64_t) { return nullptr; }
  epprof_status* on_event_stop(uint64_t) { return nullptr; }

  epprof_status* flush(epprof_event_sink* sink) {
    env_.registry->remove(this);  // no compute records into us from here on
    const epprof_host_api* host = env_.host;
    const ClockSample cal_end = env_.clock->sample(host->clock_now_ns);
    const ClockModel model = cal_end.error_ns > 0 || cal_end.device_ns > 0 ? ClockModel(cal_start_, cal_end)
                                                                           : ClockModel(cal_start_);
    const Placed placed(model, tagged_);
    // Metadata first, so it is there even if appending fails below.
    const std::pair<std::string, std::string> meta[] = {
        {"device", env_.clock->description()},
        {"clock_calibration", cal_start_.method},
        {"clock_model", model.describe()},
        {"clock_offset_ns", std::to_string(model.offset_ns())},
        {"clock_drift_ppm", std::to_string(model.drift_ppm())},
        {"clock_anchoring", "the model plus a correction that puts each command's QUEUED time inside the host "
                            "clock's bracket of its enqueue call and changes by at most 1000 ppm, so the device's "
                            "order stays; each event's clock_error_ns is its own bound"},
        {"clock_anchored_commands", std::to_string(placed.anchored)},
        {"clock_model_corrections", std::to_string(placed.corrected)},
        {"clock_model_max_correction_ns", std::to_string(placed.max_correction_ns)},
        {"clock_inconsistent_brackets", std::to_string(placed.inconsistent)},
        {"clock_error_bound_ns", std::to_string(placed.max_error_ns)},
        {"clock_error_median_ns", std::to_string(placed.median_error_ns())},
        {"clock_error_model_ns", std::to_string(model.error_bound_ns())},
        {"clock_error_start_ns", std::to_string(cal_start_.error_ns)},
        {"clock_error_end_ns", std::to_string(cal_end.error_ns)},
        {"device_commands", std::to_string(tagged_.size())},
        {"device_commands_outside_scope", std::to_string(outside_scope_)},
    };
    for (const auto& kv : meta)
      if (epprof_status* st = host->sink_set_metadata(sink, kv.first.c_str(), kv.second.c_str())) return st;
    const std::string track = "OpenCL queue 0: " + env_.clock->description();
    if (epprof_status* st = host->sink_set_track_name(sink, kQueueTrack, track.c_str())) return st;

    ep_common::SinkBatch out(host, sink);
    for (size_t i = 0; i < tagged_.size(); ++i)
      if (epprof_status* st = out.add([&](epprof_event** e) { return make_event(tagged_[i], placed.events[i], e); }))
        return st;
    // The device buffers, as memory events on the host clock.
    // (C++17 lets no lambda capture a structured binding: the pair instead.)
    for (const auto& entry : memory_)
      if (epprof_status* st =
              out.add([&](epprof_event** e) { return make_memory_event(entry.first, entry.second, e); }))
        return st;
    return out.flush();
  }

  epprof_status* make_memory_event(uint64_t correlation_id, const MemoryRecord& m, epprof_event** out) const {
    const std::string id = std::to_string(m.id), bytes = std::to_string(m.bytes);
    const char* keys[] = {"kind", "allocation_id", "bytes", "tag"};
    const char* values[] = {m.alloc ? "alloc" : "free", id.c_str(), bytes.c_str(), "temporary"};
    return env_.host->event_create(EPPROF_CATEGORY_MEMORY, "opencl:0", 0, kQueueTrack, m.host_ns - trace_t0_ns_, 0,
                                   correlation_id, keys, values, m.alloc ? 4 : 2, out);
  }

  epprof_status* make_event(const Tagged& t, const Placement& at, epprof_event** out) const {
    const CommandRecord& r = t.command;
    const int64_t ts = at.start_ns - trace_t0_ns_;
    std::vector<std::string> keys{"queue", "queued_to_start_ns", "clock_error_ns"};
    std::vector<std::string> values{"0", std::to_string(at.latency_ns), std::to_string(at.error_ns)};
    if (r.kind == CommandRecord::Kind::Kernel) {
      std::string global = "[";
      for (cl_uint i = 0; i < r.work_dim; ++i) global += (i ? "," : "") + std::to_string(r.global[i]);
      keys.insert(keys.end(), {"global_work_size", "local_work_size"});
      values.insert(values.end(), {global + "]", "auto"});  // NULL local size: the driver picks
    } else {
      keys.insert(keys.end(), {"bytes", "direction"});
      values.insert(values.end(), {std::to_string(r.bytes), r.kind == CommandRecord::Kind::CopyToDevice ? "HtoD" : "DtoH"});
    }
    std::vector<const char*> k, v;
    for (size_t i = 0; i < keys.size(); ++i) {
      k.push_back(keys[i].c_str());
      v.push_back(values[i].c_str());
    }
    const epprof_category cat = r.kind == CommandRecord::Kind::Kernel ? EPPROF_CATEGORY_KERNEL : EPPROF_CATEGORY_MEMCPY;
    return env_.host->event_create(cat, r.name.c_str(), 0, kQueueTrack, ts, at.dur_ns, t.correlation_id, k.data(), v.data(),
                                   k.size(), out);
  }

  ProfilerEnv env_;
  int64_t trace_t0_ns_ = -1;  // the host's profiling start on the host clock; -1: not given yet
  ClockSample cal_start_;
  std::vector<Tagged> tagged_;  // appended under the registry's lock
  std::vector<std::pair<uint64_t, MemoryRecord>> memory_;  // (correlation id, buffer); under the lock
  uint64_t outside_scope_ = 0;  // commands of no event of this scope; under the registry's lock
};

void Registry::add(Profiler* p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::find(active_.begin(), active_.end(), p) != active_.end()) return;
  active_.push_back(p);
  active_count_.store(static_cast<int>(active_.size()), std::memory_order_release);
}

void Registry::remove(Profiler* p) {
  std::lock_guard<std::mutex> lock(mu_);
  active_.erase(std::remove(active_.begin(), active_.end(), p), active_.end());
  active_count_.store(static_cast<int>(active_.size()), std::memory_order_release);
}

void Registry::record(const std::vector<CommandRecord>& records, const std::vector<MemoryRecord>& memory) {
  if ((records.empty() && memory.empty()) || !any_active()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (Profiler* p : active_) p->append(records, memory);
}

epprof_ep_profiler* create_profiler(const ProfilerEnv& env) { return (new Profiler(env))->c(); }

}  // namespace epprof::opencl
