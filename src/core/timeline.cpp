// Profiler::write_trace: the end of a scope. Collects the EP profilers'
// events, merges the host streams by time, attributes every device event to
// the host event whose correlation id it carries, and feeds one TraceSink.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/intern.h"
#include "core/merge.h"
#include "core/profiler.h"
#include "core/threads.h"
#include "epprof/session.h"
#include "export/atomic_file.h"
#include "export/chrome_trace.h"
#include "session/annotations.h"

namespace epprof::core {
namespace {

using exporter::Attribution;
using exporter::MetaValue;

// Device tracks get thread ids of their own, far above kernel tids
// (pid_max is at most 2^22), one block per plugin.
constexpr int64_t kDeviceTidBase = int64_t(1) << 30;
constexpr int64_t kDeviceTidsPerPlugin = int64_t(1) << 20;

bool is_device_category(epprof_category c) {
  return c == EPPROF_CATEGORY_KERNEL || c == EPPROF_CATEGORY_MEMCPY;
}

struct DeviceEvent {
  const epprof_event* event;
  uint32_t plugin;
  int64_t tid;  // after mapping
};

void fill_attribution(Attribution& a, const Record* r, std::string_view name, int64_t tid,
                      int64_t ts_ns) {
  a.resolved = true;
  a.is_node = r->category == EPPROF_CATEGORY_NODE;
  a.parent_name.assign(name);
  a.host_tid = tid;
  a.host_ts_ns = ts_ns;
  if (!a.is_node) return;
  static const uint32_t kOpName = intern("op_name");
  static const uint32_t kNodeIndex = intern("node_index");
  ArgIterator it(r);
  ArgView v;
  while (it.next(v)) {
    std::string* dst = v.key == kOpName ? &a.op_name : v.key == kNodeIndex ? &a.node_index : nullptr;
    if (!dst) continue;
    if (v.is_int)
      *dst = std::to_string(v.i64);
    else
      dst->assign(v.str);
  }
}

// A device event as a session record (epprof/session.h), with the
// attribution the host resolved; `t0` turns the trace's relative time back
// into host-clock time.
epprof_record device_record(const epprof_event& e, const Attribution* a, uint32_t ep, int64_t t0) {
  epprof_record r{};
  r.kind = EPPROF_RECORD_DEVICE_EVENT;
  r.category = uint32_t(e.category);
  r.correlation_id = e.correlation_id;
  r.ts_ns = t0 + e.ts_ns;
  r.dur_ns = e.dur_ns;
  r.name = intern(e.name);
  if (e.category == EPPROF_CATEGORY_KERNEL) r.kernel = r.name;
  r.ep = ep;
  r.node_index = EPPROF_RECORD_NO_NODE;
  if (a && a->is_node) {
    std::string_view node = a->parent_name;
    constexpr std::string_view kSuffix = "_kernel_time";  // ONNX Runtime's node event names
    if (node.size() > kSuffix.size() && node.substr(node.size() - kSuffix.size()) == kSuffix)
      node.remove_suffix(kSuffix.size());
    r.node = intern(node);
    r.op_type = intern(a->op_name);
    char* end = nullptr;
    const unsigned long index = std::strtoul(a->node_index.c_str(), &end, 10);
    if (end && *end == '\0' && !a->node_index.empty()) r.node_index = uint32_t(index);
  }
  return r;
}

}  // namespace

std::string Profiler::write_trace(epprof_trace_stats* stats) {
  const TickConverter conv(start_pair_, stop_pair_);
  const int64_t t0 = start_pair_.ns;
  const int64_t pid = int64_t(getpid());

  // 1. Every EP profiler's events. A failing end_profiling keeps what it
  //    appended before failing.
  std::vector<epprof_event_sink> sinks(eps_.size());
  for (size_t i = 0; i < eps_.size(); ++i) eps_[i]->end_profiling(&sinks[i]);

  std::vector<DeviceEvent> device;
  std::unordered_map<uint64_t, Attribution> attribution;  // only ids device events name
  std::vector<exporter::TrackName> tracks;
  for (uint32_t p = 0; p < sinks.size(); ++p) {
    std::unordered_map<int64_t, int64_t> tid_map;  // plugin track → trace tid
    for (const epprof_event& e : sinks[p].events) {
      int64_t tid = e.tid;
      if (is_device_category(e.category)) {
        auto [it, fresh] = tid_map.emplace(e.tid, 0);
        if (fresh) {
          it->second = kDeviceTidBase + int64_t(p) * kDeviceTidsPerPlugin + int64_t(tid_map.size() - 1);
          auto named = sinks[p].track_names.find(e.tid);
          tracks.push_back({pid, it->second,
                            named != sinks[p].track_names.end()
                                ? named->second
                                : eps_[p]->name() + " track " + std::to_string(e.tid)});
        }
        tid = it->second;
      }
      device.push_back(DeviceEvent{&e, p, tid});
      if (e.correlation_id) attribution.emplace(e.correlation_id, Attribution{e.correlation_id, false, false, {}, {}, {}, 0, 0});
    }
  }
  std::stable_sort(device.begin(), device.end(), [](const DeviceEvent& a, const DeviceEvent& b) {
    return a.event->ts_ns < b.event->ts_ns;
  });

  // 2. Host events, merged by time from every stream and spilled run.
  exporter::ChromeTraceSink sink(file_->fd(), config_.integer_timestamps);
  // Args attached after the fact (counter values): on the first host event
  // with the id, and for a NODE event also as counter tracks.
  session::Annotations notes = session::take_annotations(this);
  Merger merger(recorder_.finish());
  const auto& streams = recorder_.streams();
  uint64_t host_events = 0;
  uint32_t stream = 0;
  while (const Record* r = merger.next(&stream)) {
    const std::string* name = interned(r->name);
    const std::string_view name_view = name ? std::string_view(*name) : std::string_view("?");
    const int64_t tid = streams[stream]->tid;
    const int64_t ts = conv.to_ns(r->ts) - t0;
    const int64_t dur = (r->flags & kRecordDurationNs) ? int64_t(r->dur) : conv.duration_ns(r->dur);
    const std::vector<exporter::ExtraArg>* extra = nullptr;
    if (!notes.empty()) {
      auto note = notes.find(r->correlation_id);
      if (note != notes.end() && !note->second.empty()) extra = &note->second;
    }
    sink.host_event({r->category, name_view, pid, tid, ts, dur, r->correlation_id, r, extra});
    if (extra) {
      if (r->category == EPPROF_CATEGORY_NODE)
        for (const auto& x : *extra)
          if (x.number) sink.counter(pid, tid, ts, x.key, x.value);
      notes.erase(r->correlation_id);
    }
    ++host_events;
    if (!attribution.empty()) {
      auto it = attribution.find(r->correlation_id);
      // The first (outermost) host event with the id wins.
      if (it != attribution.end() && !it->second.resolved)
        fill_attribution(it->second, r, name_view, tid, ts);
    }
  }

  // 3. Device events with their attribution, and a flow from each node.
  // Device work with no id, or an id no host event of this scope has, is
  // kept, marked unattributed and counted.
  uint64_t unattributed = 0, flow_id = 0;
  static const Attribution kNoId{};
  const bool sessions_active = epprof_session_any_active(epprof_session_active_word());
  std::vector<epprof_record> session_records;
  std::vector<uint32_t> ep_names;
  if (sessions_active)
    for (const auto& ep : eps_) ep_names.push_back(intern(ep->name()));
  for (const DeviceEvent& d : device) {
    const epprof_event& e = *d.event;
    const Attribution* a = nullptr;
    if (e.correlation_id) {
      a = &attribution.at(e.correlation_id);
      if (!a->resolved) ++unattributed;
    } else if (is_device_category(e.category)) {
      a = &kNoId;
      ++unattributed;
    }
    sink.device_event({uint8_t(e.category), e.name, is_device_category(e.category) ? pid : e.pid,
                       d.tid, e.ts_ns, e.dur_ns, &e.keys, &e.values, a});
    if (a && a->resolved && is_device_category(e.category))
      sink.flow(++flow_id, pid, a->host_tid, a->host_ts_ns, d.tid, e.ts_ns);
    if (sessions_active && is_device_category(e.category))
      session_records.push_back(device_record(e, a, ep_names[d.plugin], t0));
  }
  // Sessions see device work when its scope ends: that is when plugins hand
  // it over (end_profiling). A session's filters (kernel names, EPs, ...)
  // apply as to any record.
  if (!session_records.empty()) epprof_session_emit(session_records.data(), session_records.size());

  // 4. Track names and the metadata record.
  sink.track_name({pid, -1, "epprof host (" + config_.scope_name + ")"});
  auto names = thread_names();
  for (const auto& s : streams) {
    auto it = names.find(s->tid);
    sink.track_name({pid, s->tid, it != names.end() ? it->second : "thread " + std::to_string(s->tid)});
  }
  for (const auto& t : tracks) sink.track_name(t);

  const RecorderStats rs = recorder_.stats();
  uint64_t plugin_errors = 0;
  exporter::MetadataFields meta;
  meta.emplace_back("epprof_version", MetaValue::string(epprof_version()));
  meta.emplace_back("scope", MetaValue::string(config_.scope_name));
  meta.emplace_back("t0_epoch_ns", MetaValue::string(std::to_string(t0_epoch_ns_)));
  meta.emplace_back("t0_monotonic_ns", MetaValue::string(std::to_string(t0)));
  MetaValue clock = MetaValue::object();
  clock.add("source", MetaValue::string(ticks_are_tsc() ? "tsc" : "clock_monotonic"));
  clock.add("ns_per_tick", MetaValue::string(std::to_string(conv.ns_per_tick())));
  clock.add("fit", MetaValue::string("two-point: profiler start and stop"));
  meta.emplace_back("host_clock", std::move(clock));
  meta.emplace_back("host_events", MetaValue::string(std::to_string(host_events)));
  meta.emplace_back("device_events", MetaValue::string(std::to_string(device.size())));
  meta.emplace_back("dropped_events", MetaValue::string(std::to_string(rs.dropped_events)));
  meta.emplace_back("unattributed_device_events", MetaValue::string(std::to_string(unattributed)));
  meta.emplace_back("spilled_bytes", MetaValue::string(std::to_string(rs.spilled_bytes)));
  if (std::string err = recorder_.spill_error(); !err.empty())
    meta.emplace_back("spill_error", MetaValue::string(err));
  MetaValue plugins = MetaValue::object();
  MetaValue errors = MetaValue::array();
  for (size_t p = 0; p < eps_.size(); ++p) {
    MetaValue info = MetaValue::object();
    for (const auto& kv : sinks[p].metadata) info.add(kv.first, MetaValue::string(kv.second));
    plugins.add(eps_[p]->name(), std::move(info));
    plugin_errors += eps_[p]->error_count();
    for (const auto& err : eps_[p]->errors()) {
      MetaValue e = MetaValue::object();
      e.add("plugin", MetaValue::string(err.plugin));
      e.add("slot", MetaValue::string(err.slot));
      e.add("count", MetaValue::string(std::to_string(err.count)));
      e.add("first_message", MetaValue::string(err.first_message));
      errors.items.push_back(std::move(e));
    }
  }
  meta.emplace_back("plugins", std::move(plugins));
  meta.emplace_back("plugin_errors", std::move(errors));
  {
    std::lock_guard<std::mutex> lock(meta_mu_);
    for (const auto& kv : metadata_) meta.emplace_back(kv.first, MetaValue::string(kv.second));
  }
  sink.metadata(pid, meta);

  std::string error;
  if (!sink.finish(&error) || !file_->commit(&error))
    return "cannot write trace '" + config_.trace_path + "': " + error;

  if (stats) {
    epprof_trace_stats out{};
    out.size = sizeof out;
    out.host_events = host_events;
    out.device_events = device.size();
    out.dropped_events = rs.dropped_events;
    out.unattributed_device_events = unattributed;
    out.spilled_bytes = rs.spilled_bytes;
    out.plugin_errors = plugin_errors;
    std::memcpy(stats, &out, std::min(stats->size, sizeof out));
    stats->size = std::min(stats->size, sizeof out);
  }
  return {};
}

}  // namespace epprof::core
