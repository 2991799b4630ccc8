#include "scope/write_trace.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "core/intern.h"
#include "core/merge.h"
#include "core/threads.h"
#include "export/chrome_trace.h"
#include "export/sqlite_sink.h"
#include "io/atomic_file.h"
#include "scope/annotations.h"
#include "scope/attribution.h"
#include "scope/device_events.h"

namespace epprof::scope {
namespace {

using exporter::MetaValue;

std::atomic<const DeviceRecordSubscriber*> g_subscriber{nullptr};

// What the scope wrote, for the metadata record and the caller's stats.
struct Counts {
  uint64_t host_events = 0;
  uint64_t device_events = 0;
  uint64_t unattributed = 0;
  uint64_t plugin_errors = 0;
  core::RecorderStats recorder;  // once the host events are merged
};

// Stage 2: every host event, merged by time from every stream and spilled
// run, into the sink; each is offered to attribution. Args attached after
// the fact (counter values, epprof_event_annotate) go on the first host
// event with the id, and for a NODE event also become counter tracks.
uint64_t write_host_events(core::Profiler& p, const core::TickConverter& conv, int64_t pid,
                           exporter::TraceSink& sink, Attribution& attribution) {
  const int64_t t0 = p.start_pair().ns;
  Annotations notes = take_annotations(&p);
  core::Merger merger(p.recorder().finish());
  const auto& streams = p.recorder().streams();
  uint64_t host_events = 0;
  uint32_t stream = 0;
  while (const core::Record* r = merger.next(&stream)) {
    const std::string* name = core::interned(r->name);
    const std::string_view name_view = name ? std::string_view(*name) : std::string_view("?");
    const int64_t tid = streams[stream]->tid;
    const int64_t ts = conv.to_ns(r->ts) - t0;
    const int64_t dur = (r->flags & core::kRecordDurationNs) ? int64_t(r->dur) : conv.duration_ns(r->dur);
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
    attribution.host_event(*r, name_view, tid, ts);
  }
  return host_events;
}

// Stages 3 and 4: device events with their attribution, a flow from each
// attributed host event to its device work, and the device records for
// the sessions. Device work with no id, or an id no host event of this
// scope has, is kept, marked unattributed and counted.
void write_device_events(const core::Profiler& p, const DeviceEvents& device, int64_t pid,
                         exporter::TraceSink& sink, Attribution& attribution) {
  uint64_t flow_id = 0;
  const DeviceRecordSubscriber* subscriber = g_subscriber.load(std::memory_order_acquire);
  const bool sessions_active = subscriber && subscriber->wants();
  std::vector<epprof_record> session_records;
  std::vector<uint32_t> ep_names;
  if (sessions_active)
    for (const auto& ep : p.eps()) ep_names.push_back(core::intern(ep->name()));
  for (const DeviceEvent& d : device.events) {
    const epprof_event& e = *d.event;
    const exporter::Attribution* a = attribution.of(e);
    const bool on_device = is_device_category(e.category);
    sink.device_event({uint8_t(e.category), e.name, on_device ? pid : e.pid, d.tid, e.ts_ns, e.dur_ns, &e.keys,
                       &e.values, a});
    if (a && a->resolved && on_device) sink.flow(++flow_id, pid, a->host_tid, a->host_ts_ns, d.tid, e.ts_ns);
    if (sessions_active && on_device)
      session_records.push_back(session_record(e, a, ep_names[d.plugin], p.start_pair().ns));
  }
  // Sessions see device work when its scope ends: that is when plugins hand
  // it over (end_profiling). A session's filters (kernel names, EPs, ...)
  // apply as to any record.
  if (!session_records.empty()) subscriber->deliver(session_records.data(), session_records.size());
}

// Stage 5's last items: track names and the metadata record.
void write_tracks_and_metadata(core::Profiler& p, const core::TickConverter& conv, const DeviceEvents& device,
                               const Counts& counts, int64_t pid, exporter::TraceSink& sink) {
  sink.track_name({pid, -1, "epprof host (" + p.config().scope_name + ")"});
  auto names = core::thread_names();
  for (const auto& s : p.recorder().streams()) {
    auto it = names.find(s->tid);
    sink.track_name({pid, s->tid, it != names.end() ? it->second : "thread " + std::to_string(s->tid)});
  }
  for (const auto& t : device.tracks) sink.track_name(t);

  const core::RecorderStats& rs = counts.recorder;
  const int64_t t0 = p.start_pair().ns;
  exporter::MetadataFields meta;
  meta.emplace_back("epprof_version", MetaValue::string(epprof_version()));
  meta.emplace_back("scope", MetaValue::string(p.config().scope_name));
  meta.emplace_back("t0_epoch_ns", MetaValue::string(std::to_string(p.t0_epoch_ns())));
  meta.emplace_back("t0_monotonic_ns", MetaValue::string(std::to_string(t0)));
  MetaValue clock = MetaValue::object();
  clock.add("source", MetaValue::string(core::ticks_are_tsc() ? "tsc" : "clock_monotonic"));
  clock.add("ns_per_tick", MetaValue::string(std::to_string(conv.ns_per_tick())));
  clock.add("fit", MetaValue::string("two-point: profiler start and stop"));
  meta.emplace_back("host_clock", std::move(clock));
  meta.emplace_back("host_events", MetaValue::string(std::to_string(counts.host_events)));
  meta.emplace_back("device_events", MetaValue::string(std::to_string(counts.device_events)));
  meta.emplace_back("dropped_events", MetaValue::string(std::to_string(rs.dropped_events)));
  meta.emplace_back("unattributed_device_events", MetaValue::string(std::to_string(counts.unattributed)));
  meta.emplace_back("spilled_bytes", MetaValue::string(std::to_string(rs.spilled_bytes)));
  if (std::string err = p.recorder().spill_error(); !err.empty())
    meta.emplace_back("spill_error", MetaValue::string(err));
  MetaValue plugins = MetaValue::object();
  MetaValue errors = MetaValue::array();
  const auto& eps = p.eps();
  for (size_t i = 0; i < eps.size(); ++i) {
    MetaValue info = MetaValue::object();
    for (const auto& kv : device.sinks[i].metadata) info.add(kv.first, MetaValue::string(kv.second));
    plugins.add(eps[i]->name(), std::move(info));
    for (const auto& err : eps[i]->errors()) {
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
  for (auto& kv : p.metadata()) meta.emplace_back(std::move(kv.first), MetaValue::string(std::move(kv.second)));
  sink.metadata(pid, meta);
}

}  // namespace

void subscribe_device_records(const DeviceRecordSubscriber* subscriber) noexcept {
  g_subscriber.store(subscriber, std::memory_order_release);
}

std::string write_trace(core::Profiler& p, epprof_trace_stats* stats) {
  const core::TickConverter conv(p.start_pair(), p.stop_pair());
  const int64_t pid = int64_t(getpid());

  const DeviceEvents device = collect_device_events(p.eps(), pid);
  Attribution attribution(device);
  std::unique_ptr<exporter::TraceSink> sink_owner;
  if (p.config().sqlite)
    sink_owner = std::make_unique<exporter::SqliteTraceSink>(p.file());
  else
    sink_owner = std::make_unique<exporter::ChromeTraceSink>(p.file().fd(), p.config().integer_timestamps);
  exporter::TraceSink& sink = *sink_owner;
  Counts counts;
  counts.host_events = write_host_events(p, conv, pid, sink, attribution);
  write_device_events(p, device, pid, sink, attribution);
  counts.device_events = device.events.size();
  counts.unattributed = attribution.unattributed();
  counts.recorder = p.recorder().stats();
  for (const auto& ep : p.eps()) counts.plugin_errors += ep->error_count();
  write_tracks_and_metadata(p, conv, device, counts, pid, sink);

  std::string error;
  if (!sink.finish(&error) || !p.file().commit(&error))
    return "cannot write trace '" + p.config().trace_path + "': " + error;

  if (stats) {
    const core::RecorderStats& rs = counts.recorder;
    epprof_trace_stats out{};
    out.size = sizeof out;
    out.host_events = counts.host_events;
    out.device_events = counts.device_events;
    out.dropped_events = rs.dropped_events;
    out.unattributed_device_events = counts.unattributed;
    out.spilled_bytes = rs.spilled_bytes;
    out.plugin_errors = counts.plugin_errors;
    std::memcpy(stats, &out, std::min(stats->size, sizeof out));
    stats->size = std::min(stats->size, sizeof out);
  }
  return {};
}

}  // namespace epprof::scope
