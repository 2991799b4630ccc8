// The way out of a scope, stage 1: the EP profilers' events. Each plugin
// hands over what it recorded (end_profiling); device tracks get trace
// thread ids of their own, and the events are ordered by start.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/ep_hooks.h"
#include "export/trace_sink.h"
#include "plugin/event.h"

namespace epprof::scope {

struct DeviceEvent {
  const epprof_event* event;  // in DeviceEvents::sinks
  uint32_t plugin;            // index into the profiler's EP instances
  int64_t tid;                // the trace thread id of its track
};

struct DeviceEvents {
  std::vector<epprof_event_sink> sinks;     // one per plugin; own the events
  std::vector<DeviceEvent> events;          // every plugin's, by start time (stable)
  std::vector<DeviceEvent> memory;          // plugins' memory events (EPPROF_CATEGORY_MEMORY), by time
  std::vector<exporter::TrackName> tracks;  // one per device track, in first-seen order
};

// Kernels and copies: the events that run on a device track.
inline bool is_device_category(epprof_category c) {
  return c == EPPROF_CATEGORY_KERNEL || c == EPPROF_CATEGORY_MEMCPY;
}

// Ends profiling in every EP instance and gathers its events. A failing
// end_profiling keeps what it appended before failing.
DeviceEvents collect_device_events(const std::vector<std::unique_ptr<core::EpHooks>>& eps, int64_t pid);

}  // namespace epprof::scope
