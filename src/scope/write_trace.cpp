#include "scope/write_trace.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
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
#include "scope/memory.h"
#include "scope/trace_filter.h"

namespace epprof::scope {
namespace {

using exporter::MetaValue;

std::atomic<const DeviceRecordSubscriber*> g_subscriber{nullptr};

// Stages 2 to 4: every host event (merged by start from every stream and
// spilled run) and every device event, with their attribution and flows,
// written in the order ONNX Runtime writes events: by end time, a child
// before a parent that ends with it (ties: the later start first). Tools
// that find a run's events by position rely on it: a run's node events and
// device work come before its model_run.
//
// Host events are read in start order and each waits in a heap until the
// stream has passed its end (an event starting after that end was read), so
// only the events still open wait: nesting depth times threads, not the
// scope. Each is offered to attribution when read; device work starts after
// the host event that launched it, so when a device event's turn comes its
// host event is known. One whose id no host event read so far has (a device
// clock running early) waits until every host event was read.
class EndOrder {
 public:
  // `filter`: what the trace leaves out; nullptr: nothing.
  EndOrder(core::Recording& p, const EpList& eps, const core::TickConverter& conv, int64_t pid,
           const DeviceEvents& device, exporter::TraceSink& sink, Attribution& attribution, TraceFilter* filter)
      : p_(p), conv_(conv), pid_(pid), device_(device), sink_(sink), attribution_(attribution), filter_(filter),
        keep_memory_(!filter || filter->keeps(EPPROF_CATEGORY_MEMORY)),
        keep_counters_(!filter || filter->keeps(EPPROF_CATEGORY_COUNTER)),
        t0_(p.start_pair().ns), notes_(take_annotations(&p)) {
    const DeviceRecordSubscriber* subscriber = g_subscriber.load(std::memory_order_acquire);
    if (subscriber && subscriber->wants()) {
      subscriber_ = subscriber;
      for (const auto& ep : eps) ep_names_.push_back(core::intern(ep->name()));
    }
    device_order_.resize(device.events.size());
    for (uint32_t i = 0; i < device_order_.size(); ++i) device_order_[i] = i;
    std::stable_sort(device_order_.begin(), device_order_.end(), [&](uint32_t a, uint32_t b) {
      const epprof_event &x = *device.events[a].event, &y = *device.events[b].event;
      const int64_t xe = x.ts_ns + x.dur_ns, ye = y.ts_ns + y.dur_ns;
      return xe != ye ? xe < ye : x.ts_ns > y.ts_ns;
    });
  }

  // After run(): the scope's memory, or nullptr if it recorded none.
  const MemoryLedger* memory() const { return memory_.get(); }

  // Writes everything; returns the number of host events.
  uint64_t run() {
    core::Merger merger(p_.recorder().finish());
    // A ledger only for a scope that recorded memory events.
    if ((p_.recorder().record_flags() & core::kRecordMemory) || !device_.memory.empty())
      memory_ = std::make_unique<MemoryLedger>();
    const auto& streams = p_.recorder().streams();
    uint32_t stream = 0;
    bool stable = true;
    while (const core::Record* r = merger.next(&stream, &stable)) {
      Pending e;
      e.tid = streams[stream]->tid;
      e.ts = conv_.to_ns(r->ts) - t0_;
      plugin_memory_before(e.ts);
      if (r->flags & core::kRecordMemory) {  // a point in time, on its device's counter track
        write_ended_before(e.ts);
        const MemoryLedger::Sample sample = memory_->memory_event(*r, e.tid, e.ts);
        if (keep_memory_) sink_.counter(pid_, e.tid, e.ts, sample.track, sample.value);
        continue;
      }
      e.dur = (r->flags & core::kRecordDurationNs) ? int64_t(r->dur) : conv_.duration_ns(r->dur);
      e.seq = ++read_;
      // An event left out still owns its memory and resolves its device
      // work's attribution (which is then left out with it).
      const bool kept = !filter_ || filter_->keep_host(*r);
      attribution_.host_event(*r, e.tid, e.ts, kept);
      if (memory_) memory_->host_event(*r, e.tid, e.ts, e.end());
      write_ended_before(e.ts);
      if (!kept) continue;
      if (stable) {
        e.rec = r;
      } else {  // a spilled run's buffer: keep a copy
        e.copy = keep_copy(*r);
        e.rec = reinterpret_cast<const core::Record*>(copies_[e.copy].data());
      }
      open_.push(e);
    }
    plugin_memory_before(INT64_MAX);
    host_done_ = true;
    write_ended_before(INT64_MAX);
    // Sessions see device work when its scope ends: that is when plugins
    // hand it over (end_profiling). A session's filters (kernel names, EPs,
    // ...) apply as to any record.
    if (!session_records_.empty()) subscriber_->deliver(session_records_.data(), session_records_.size());
    return written_;
  }

 private:
  static constexpr uint32_t kNoCopy = UINT32_MAX;
  struct Pending {
    int64_t ts = 0, dur = 0, tid = 0;
    uint64_t seq = 0;  // read order
    const core::Record* rec = nullptr;
    uint32_t copy = kNoCopy;  // copies_[copy] holds rec's bytes, when the merger's could move
    int64_t end() const { return ts + dur; }
  };
  // Heap order: the top is the host event to write first. A type, not a
  // function: the heap's comparisons inline instead of calling through a
  // pointer (for every host event, at each level of its push and pop).
  struct Later {
    bool operator()(const Pending& a, const Pending& b) const {
      if (a.end() != b.end()) return a.end() > b.end();
      if (a.ts != b.ts) return a.ts < b.ts;
      return a.seq < b.seq;
    }
  };

  // A copy of a spilled record, in a buffer of copies_ that a written event
  // gave back: a stop that reads back millions of spilled events allocates
  // only as many buffers as events are ever open at once.
  uint32_t keep_copy(const core::Record& r) {
    uint32_t i;
    if (!free_copies_.empty()) {
      i = free_copies_.back();
      free_copies_.pop_back();
    } else {
      i = uint32_t(copies_.size());
      copies_.emplace_back();
    }
    const size_t bytes = (size_t(core::payload_slots(r)) + 1) * core::kSlotBytes;
    copies_[i].resize(bytes);  // within its capacity, once buffers are reused
    std::memcpy(copies_[i].data(), &r, bytes);
    return i;
  }

  static std::string_view name_of(const core::Record& r) {
    const std::string* name = core::interned(r.name);
    return name ? std::string_view(*name) : std::string_view("?");
  }

  // The plugins' memory events before `limit`, in time order, into the
  // ledger; each is a sample of its device's memory track.
  void plugin_memory_before(int64_t limit) {
    while (next_memory_ < device_.memory.size()) {
      const DeviceEvent& d = device_.memory[next_memory_];
      if (d.event->ts_ns >= limit) return;
      ++next_memory_;
      MemoryLedger::Sample sample;
      if (!memory_->plugin_event(*d.event, &sample) || !keep_memory_) continue;
      write_ended_before(d.event->ts_ns);
      sink_.counter(pid_, d.tid, d.event->ts_ns, sample.track, sample.value);
    }
  }

  // Writes, in end order, the host and device events that end before
  // `limit` (all of them at INT64_MAX). A device event whose host event has
  // not been read yet (it seems to end before its node starts: the clocks
  // disagree by a little) holds back the device events after it until that
  // host event is read, so every device track stays in end order.
  void write_ended_before(int64_t limit) {
    for (;;) {
      const bool host = !open_.empty() && (open_.first().end() < limit || limit == INT64_MAX);
      const epprof_event* dev =
          next_device_ < device_order_.size() ? device_.events[device_order_[next_device_]].event : nullptr;
      const bool device = dev && (dev->ts_ns + dev->dur_ns < limit || limit == INT64_MAX) &&
                          (host_done_ || !attribution_.waiting(*dev));
      if (!host && !device) return;
      // The earlier end first; at a tie the later start, and host first.
      bool take_device = device;
      if (host && device) {
        const Pending& h = open_.first();
        const int64_t de = dev->ts_ns + dev->dur_ns;
        take_device = de != h.end() ? de < h.end() : dev->ts_ns > h.ts;
      }
      if (take_device) {
        write_device(device_order_[next_device_++]);
      } else {
        const Pending h = open_.pop();
        write_host(h);
        if (h.copy != kNoCopy) free_copies_.push_back(h.copy);
      }
    }
  }

  // Args attached after the fact (counter values, epprof_event_annotate) go
  // on the first host event with the id, and for a NODE event also become
  // counter tracks.
  void write_host(const Pending& e) {
    const core::Record& r = *e.rec;
    const std::string_view name = name_of(r);
    const std::vector<exporter::ExtraArg>* extra = nullptr;
    if (!notes_.empty()) {
      auto note = notes_.find(r.correlation_id);
      if (note != notes_.end() && !note->second.empty()) extra = &note->second;
    }
    if (memory_ && keep_memory_ && r.category == EPPROF_CATEGORY_NODE) {
      with_memory_.clear();
      if (extra) with_memory_ = *extra;
      memory_->node_args(r.correlation_id, &with_memory_);
      if (!with_memory_.empty()) extra = &with_memory_;
    }
    sink_.host_event({r.category, name, pid_, e.tid, e.ts, e.dur, r.correlation_id, &r, extra});
    if (extra) {
      if (r.category == EPPROF_CATEGORY_NODE && keep_counters_)
        for (const auto& x : *extra)
          if (x.number) sink_.counter(pid_, e.tid, e.ts, x.key, x.value);
      notes_.erase(r.correlation_id);
    }
    ++written_;
  }

  // A device event with its attribution, a flow from the attributed host
  // event to it, and its session record. Device work with no id, or an id
  // no host event of this scope has, is kept, marked unattributed and
  // counted. Sessions get the record of every device event, whatever the
  // trace filter leaves out.
  void write_device(uint32_t index) {
    const DeviceEvent& d = device_.events[index];
    const epprof_event& e = *d.event;
    const exporter::Attribution* a = attribution_.of(e);
    const bool on_device = is_device_category(e.category);
    if (subscriber_ && on_device)
      session_records_.push_back(session_record(e, attribution_.node(e), ep_names_[d.plugin], p_.start_pair().ns));
    if (filter_ && !filter_->keep_plugin(e, !attribution_.host_left_out(e))) return;
    const uint64_t flow = a && a->resolved && on_device ? ++flow_id_ : 0;
    sink_.device_event({uint8_t(e.category), e.name, on_device ? pid_ : e.pid, d.tid, e.ts_ns, e.dur_ns, &e.keys,
                        &e.values, a, flow});
  }

  core::Recording& p_;
  const core::TickConverter& conv_;
  const int64_t pid_;
  const DeviceEvents& device_;
  exporter::TraceSink& sink_;
  Attribution& attribution_;
  TraceFilter* const filter_;
  const bool keep_memory_, keep_counters_;  // what the filter keeps besides events
  std::unique_ptr<MemoryLedger> memory_;  // nullptr: the scope recorded no memory event
  const int64_t t0_;
  Annotations notes_;
  std::vector<exporter::ExtraArg> with_memory_;  // a node's annotations and mem_* args

  // Host events read and not yet written, the first to write (Later) in
  // front. A heap, before which one slot holds the earliest event when it
  // is the last one read: a nested event's children, which on one thread
  // end in the order they start, pass through the slot one at a time while
  // their parent waits in the heap, so most events never touch the heap.
  class OpenEvents {
   public:
    bool empty() const { return !slot_used_ && heap_.empty(); }
    const Pending& first() const { return slot_used_ ? slot_ : heap_.front(); }
    void push(const Pending& e) {
      if (slot_used_ ? Later()(slot_, e) : heap_.empty() || !Later()(e, heap_.front())) {
        if (slot_used_) heap_push(slot_);
        slot_ = e;
        slot_used_ = true;
      } else {
        heap_push(e);
      }
    }
    Pending pop() {
      if (slot_used_) {
        slot_used_ = false;
        return slot_;
      }
      std::pop_heap(heap_.begin(), heap_.end(), Later());
      const Pending e = heap_.back();
      heap_.pop_back();
      return e;
    }

   private:
    void heap_push(const Pending& e) {
      heap_.push_back(e);
      std::push_heap(heap_.begin(), heap_.end(), Later());
    }
    Pending slot_;
    bool slot_used_ = false;  // then no event in heap_ comes before slot_
    std::vector<Pending> heap_;
  };
  OpenEvents open_;
  // Moving a buffer's vector (copies_ growing) keeps its data where it is.
  std::vector<std::vector<unsigned char>> copies_;
  std::vector<uint32_t> free_copies_;
  std::vector<uint32_t> device_order_;  // device events by end
  size_t next_device_ = 0;
  size_t next_memory_ = 0;  // into device_.memory
  bool host_done_ = false;
  uint64_t read_ = 0, written_ = 0, flow_id_ = 0;

  const DeviceRecordSubscriber* subscriber_ = nullptr;
  std::vector<uint32_t> ep_names_;
  std::vector<epprof_record> session_records_;
};

// Stage 5's last items: track names and the metadata record.
exporter::TraceTail trace_tail(core::Recording& p, const EpList& eps, const core::TickConverter& conv,
                               const DeviceEvents& device, const epprof_trace_stats& counts,
                               const MemoryLedger* memory, const TraceFilter* filter, int64_t pid) {
  exporter::TraceTail tail;
  tail.tracks.push_back({pid, -1, "epprof host (" + p.config().scope_name + ")"});
  auto names = core::thread_names();
  for (const auto& s : p.recorder().streams()) {
    auto it = names.find(s->tid);
    tail.tracks.push_back({pid, s->tid, it != names.end() ? it->second : "thread " + std::to_string(s->tid)});
  }
  tail.tracks.insert(tail.tracks.end(), device.tracks.begin(), device.tracks.end());

  const int64_t t0 = p.start_pair().ns;
  tail.pid = pid;
  exporter::MetadataFields& meta = tail.metadata;
  meta.emplace_back("epprof_version", MetaValue::string(epprof_version()));
  meta.emplace_back("scope", MetaValue::string(p.config().scope_name));
  meta.emplace_back("t0_epoch_ns", MetaValue::string(std::to_string(p.t0_epoch_ns())));
  meta.emplace_back("t0_monotonic_ns", MetaValue::string(std::to_string(t0)));
  MetaValue clock = MetaValue::object();
  clock.add("source", MetaValue::string(core::ticks_are_tsc() ? "tsc" : "clock_monotonic"));
  clock.add("ns_per_tick", MetaValue::string(std::to_string(conv.ns_per_tick())));
  clock.add("fit", MetaValue::string("two-point: profiler start and stop"));
  meta.emplace_back("host_clock", std::move(clock));
  // The order the events were written in (validate checks each track
  // against it; traces from before it have start order).
  meta.emplace_back("event_order", MetaValue::string("end"));
  meta.emplace_back("host_events", MetaValue::string(std::to_string(counts.host_events)));
  meta.emplace_back("device_events", MetaValue::string(std::to_string(counts.device_events)));
  meta.emplace_back("dropped_events", MetaValue::string(std::to_string(counts.dropped_events)));
  meta.emplace_back("unattributed_device_events", MetaValue::string(std::to_string(counts.unattributed_device_events)));
  meta.emplace_back("spilled_bytes", MetaValue::string(std::to_string(counts.spilled_bytes)));
  // A filtered trace says it is partial, and what it left out.
  if (filter) {
    meta.emplace_back("filtered_events", MetaValue::string(std::to_string(counts.filtered_events)));
    meta.emplace_back("filter", filter->metadata());
  }
  if (std::string err = p.recorder().spill_error(); !err.empty())
    meta.emplace_back("spill_error", MetaValue::string(err));
  MetaValue plugins = MetaValue::object();
  MetaValue errors = MetaValue::array();
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
  if (memory && !memory->empty()) meta.emplace_back("memory", memory->metadata());
  meta.emplace_back("plugin_errors", std::move(errors));
  for (auto& kv : p.metadata()) meta.emplace_back(std::move(kv.first), MetaValue::string(std::move(kv.second)));
  return tail;
}

}  // namespace

void subscribe_device_records(const DeviceRecordSubscriber* subscriber) noexcept {
  g_subscriber.store(subscriber, std::memory_order_release);
}

std::string write_trace(core::Recording& p, const EpList& eps, epprof_trace_stats* stats) {
  const core::TickConverter conv(p.start_pair(), p.stop_pair());
  const int64_t pid = int64_t(getpid());

  const DeviceEvents device = collect_device_events(eps, pid);
  Attribution attribution(device);
  std::unique_ptr<exporter::TraceSink> sink_owner;
  if (p.config().sqlite)
    sink_owner = std::make_unique<exporter::SqliteTraceSink>(p.file());
  else
    sink_owner = std::make_unique<exporter::ChromeTraceSink>(p.file().fd(), p.config().integer_timestamps);
  exporter::TraceSink& sink = *sink_owner;
  std::unique_ptr<TraceFilter> filter;
  if (p.config().filter) filter = std::make_unique<TraceFilter>(*p.config().filter);
  // What the scope wrote, for the metadata record and the caller's stats.
  epprof_trace_stats counts{};
  counts.size = sizeof counts;
  EndOrder order(p, eps, conv, pid, device, sink, attribution, filter.get());
  counts.host_events = order.run();
  counts.device_events = device.events.size();
  if (filter) {
    counts.device_events -= filter->plugin_left_out();
    counts.filtered_events = filter->host_left_out() + filter->plugin_left_out();
  }
  counts.unattributed_device_events = attribution.unattributed();
  const core::RecorderStats recorder = p.recorder().stats();  // once the host events are merged
  counts.dropped_events = recorder.dropped_events;
  counts.spilled_bytes = recorder.spilled_bytes;
  for (const auto& ep : eps) counts.plugin_errors += ep->error_count();
  const exporter::TraceTail tail = trace_tail(p, eps, conv, device, counts, order.memory(), filter.get(), pid);

  std::string error;
  if (!sink.finish(tail, &error) || !p.file().commit(&error))
    return "cannot write trace '" + p.config().trace_path + "': " + error;

  if (stats) {
    std::memcpy(stats, &counts, std::min(stats->size, sizeof counts));
    stats->size = std::min(stats->size, sizeof counts);
  }
  return {};
}

}  // namespace epprof::scope
