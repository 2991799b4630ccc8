#include "session/session_trace.h"

#include <cstdio>
#include <new>
#include <utility>

#include "core/args.h"
#include "core/intern.h"
#include "core/recording.h"
#include "plugin/event.h"
#include "scope/annotations.h"
#include "scope/device_events.h"
#include "scope/write_trace.h"
#include "tracedb/schema.h"

namespace epprof::session {

// The device records of one EP, as that EP's profiler would hand its
// events over at end_profiling: times on the trace's timeline (since the
// recording's T0), one device track per EP.
class RecordedDeviceWork final : public core::EpHooks {
 public:
  explicit RecordedDeviceWork(std::string ep) : name_(std::move(ep)) {}

  void add(const epprof_record& r, const std::string& name, int64_t t0_ns) {
    epprof_event& e = events_.emplace_back();
    e.category = epprof_category(r.category);
    e.ts_ns = r.ts_ns - t0_ns;
    e.dur_ns = r.dur_ns < 0 ? 0 : r.dur_ns;
    e.correlation_id = r.correlation_id;
    e.name = name;
  }

  const std::string& name() const override { return name_; }
  bool wants_events() const override { return false; }
  bool wants_stop_event() const override { return false; }
  void start_profiling(int64_t) override {}
  void start_event(uint64_t) override {}
  void stop_event(const core::EndedEvent&) override {}
  void end_profiling(epprof_event_sink* sink) override {
    sink->events = std::move(events_);
    sink->track_names[0] = name_;
    sink->metadata["source"] = "session records";
  }
  std::vector<core::EpError> errors() const override { return {}; }
  uint64_t error_count() const override { return 0; }

 private:
  std::string name_;
  std::vector<epprof_event> events_;
};

namespace {

const std::string& name_or_unknown(uint32_t id) {
  static const std::string kUnknown = "?";
  const std::string* s = id ? core::interned(id) : nullptr;
  return s ? *s : kUnknown;
}

}  // namespace

SessionTrace::SessionTrace(const std::string& path) {
  core::ScopeConfig config;
  config.trace_path = path;
  config.scope_name = "session";
  config.sqlite = tracedb::is_database_path(path);  // as epprof_profiler's AUTO format
  recording_ = std::make_unique<core::Recording>(std::move(config));
  recording_->start();
}

SessionTrace::~SessionTrace() { (void)scope::take_annotations(recording_.get()); }

void SessionTrace::add(const epprof_record* records, size_t count) noexcept {
  for (size_t i = 0; i < count; ++i) {
    const epprof_record& r = records[i];
    if (r.kind == EPPROF_RECORD_COUNTER)
      add_counter(r);
    else if (r.category >= EPPROF_CATEGORY_COUNT_)
      continue;  // a category this library does not know
    else if (r.kind == EPPROF_RECORD_DEVICE_EVENT && scope::is_device_category(epprof_category(r.category)))
      add_device(r);
    else
      add_host(r);
  }
}

// On the host event with the same id, and as a counter track.
void SessionTrace::add_counter(const epprof_record& r) noexcept {
  const std::string* name = core::interned(r.name);
  if (!name || !(r.counter_flags & EPPROF_COUNTER_VALUE_VALID)) return;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", r.value);
  try {
    scope::annotate(recording_.get(), r.correlation_id, {exporter::ExtraArg{*name, buf, true}});
  } catch (const std::bad_alloc&) {
    ++dropped_;
  }
}

void SessionTrace::add_device(const epprof_record& r) noexcept {
  try {
    auto it = by_ep_.find(r.ep);
    if (it == by_ep_.end()) {
      auto work = std::make_unique<RecordedDeviceWork>(r.ep ? name_or_unknown(r.ep) : "device");
      it = by_ep_.emplace(r.ep, work.get()).first;
      device_work_.push_back(std::move(work));
    }
    it->second->add(r, name_or_unknown(r.name), recording_->start_pair().ns);
  } catch (const std::bad_alloc&) {
    ++dropped_;
  }
}

void SessionTrace::add_host(const epprof_record& r) noexcept {
  static const uint32_t kOp = core::intern("op_name"), kProvider = core::intern("provider"),
                        kIndex = core::intern("node_index"), kKernel = core::intern("kernel"),
                        kRun = core::intern("run_id"), kUnknown = core::intern("?");
  core::ThreadStream* stream;
  try {
    auto it = streams_.find(r.tid);
    if (it == streams_.end()) it = streams_.emplace(r.tid, recording_->add_thread(int64_t(r.tid))).first;
    stream = it->second;
  } catch (const std::bad_alloc&) {
    ++dropped_;
    return;
  }
  epprof_arg args[6];
  size_t n = 0;
  auto name_arg = [&](uint32_t key, uint32_t value) {
    args[n].key = key;
    args[n].type = EPPROF_ARG_NAME;
    args[n++].value.name = value;
  };
  auto int_arg = [&](uint32_t key, int64_t value) {
    args[n].key = key;
    args[n].type = EPPROF_ARG_INT64;
    args[n++].value.i64 = value;
  };
  if (r.op_type && core::interned(r.op_type)) name_arg(kOp, r.op_type);
  if (r.ep && core::interned(r.ep)) name_arg(kProvider, r.ep);
  if (r.node_index != EPPROF_RECORD_NO_NODE) int_arg(kIndex, int64_t(r.node_index));
  if (r.kernel && core::interned(r.kernel)) name_arg(kKernel, r.kernel);
  if (r.run_id) int_arg(kRun, int64_t(r.run_id));
  // A node's record declares its node, so the trace attributes its device
  // work to it (scope/attribution).
  if (r.kind == EPPROF_RECORD_HOST_EVENT && r.category == EPPROF_CATEGORY_NODE && r.node && core::interned(r.node) &&
      r.op_type && core::interned(r.op_type) && r.node_index != EPPROF_RECORD_NO_NODE) {
    const core::NodeIdentity node{r.node, r.op_type, r.node_index, r.ep && core::interned(r.ep) ? r.ep : 0};
    uint32_t set = 0;
    if (epprof_status* st = core::intern_arg_set("epprof_session_write_trace", nullptr, 0, &node, &set))
      epprof_status_release(st);  // the set table is full: the node's device work shows unattributed
    if (set) {
      args[n].key = 0;
      args[n].type = EPPROF_ARG_SET;
      args[n++].value.set = set;
    }
  }
  const uint32_t name = r.name && core::interned(r.name) ? r.name : kUnknown;
  if (epprof_status* st = recording_->record(*stream, uint8_t(r.category), name, r.correlation_id, r.ts_ns,
                                             r.dur_ns < 0 ? 0 : r.dur_ns, args, n))
    epprof_status_release(st);
}

std::string SessionTrace::write() {
  if (dropped_) recording_->set_metadata("session_records_not_kept", std::to_string(dropped_));
  recording_->stop();
  return scope::write_trace(*recording_, device_work_, nullptr);
}

}  // namespace epprof::session
