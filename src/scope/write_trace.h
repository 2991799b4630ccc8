// The way out of a scope: what happens when a profiler stops. Its stages
// run in this order, each in its own file:
//   1. collect   the EP profilers' events          (scope/device_events.*)
//   2. merge     the host streams, by time         (core/merge.*)
//   3. attribute device events to host events      (scope/attribution.*)
//      and filter: what the trace leaves out, judged as events are read
//      and written, so every sink gets the same events (scope/trace_filter.*)
//   4. flows     node → device work, and sessions, with every event
//                put in end-time order as ONNX Runtime writes it (here)
//   5. sinks     the trace writer                  (export/*, behind exporter::TraceSink)
// and the trace file is committed last.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/profiler.h"
#include "epprof/profiler.h"
#include "epprof/session.h"

namespace epprof::scope {

// Stage 4 also hands the scope's device records (epprof_record, with their
// attribution) to a subscriber: the tool-side sessions (src/session/)
// subscribe when the first one is created, so the way out knows nothing of
// them. `wants` is asked once per scope; records are built only if it says
// yes.
struct DeviceRecordSubscriber {
  bool (*wants)();
  void (*deliver)(const epprof_record* records, size_t count);
};
// `subscriber` has static storage; the last call wins. Thread-safe.
void subscribe_device_records(const DeviceRecordSubscriber* subscriber) noexcept;

using EpList = std::vector<std::unique_ptr<core::EpHooks>>;

// Writes `recording`, which has stopped, with the events of its EP
// profilers `eps` (ended here) and the args annotated to it
// (scope/annotations.h, keyed by the recording), into its file and commits
// it; fills `stats` when not null. Returns an empty string, or the reason
// the trace could not be written (naming the path).
std::string write_trace(core::Recording& recording, const EpList& eps, epprof_trace_stats* stats);

// A profiler's scope: its recording and its EP profilers.
inline std::string write_trace(core::Profiler& profiler, epprof_trace_stats* stats) {
  return write_trace(profiler.recording(), profiler.eps(), stats);
}

}  // namespace epprof::scope
