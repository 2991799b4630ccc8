// An EP profiler attached to a scope, as recording and the way out see it.
// The plugin layer (src/plugin/, EpInstance) implements it over a loaded
// plugin; core calls it and knows nothing of plugins, their C structs or
// the objects behind epprof_event. Calls into a plugin never throw and
// never fail the caller: an error is counted and reported by errors().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "epprof/ep_profiler.h"

namespace epprof::core {

// A host event as it ends, lent to stop_event for the call.
struct EndedEvent {
  epprof_category category;
  const char* name;
  int64_t pid, tid;
  int64_t ts_ns, dur_ns;  // on the trace's timeline (since its T0)
  uint64_t correlation_id;
  const epprof_arg* args;  // arg sets already expanded
  size_t num_args;
};

// The errors of one plugin slot in a scope: how many, and the first.
struct EpError {
  std::string plugin;
  std::string slot;
  uint64_t count;
  std::string first_message;
};

class EpHooks {
 public:
  virtual ~EpHooks() = default;
  virtual const std::string& name() const = 0;
  virtual bool wants_events() const = 0;      // start_event or stop_event
  virtual bool wants_stop_event() const = 0;
  // At the scope's start; `host_start_ns` is its T0 on the host clock.
  virtual void start_profiling(int64_t host_start_ns) = 0;
  // On the event's thread, as it begins and as it ends.
  virtual void start_event(uint64_t id) = 0;
  virtual void stop_event(const EndedEvent& event) = 0;
  // At the way out: what the plugin recorded, into `sink`.
  virtual void end_profiling(epprof_event_sink* sink) = 0;
  virtual std::vector<EpError> errors() const = 0;
  virtual uint64_t error_count() const = 0;
};

}  // namespace epprof::core
