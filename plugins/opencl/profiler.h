// The OpenCL EP's profiler (epprof/ep_profiler.h). Per profiling scope one
// Profiler: a per-thread correlation-id stack fed by start_event/stop_event;
// compute hands each finished command (device timestamps) to every active
// profiler whose stack on the computing thread is not empty, tagged with the
// id on top; end_profiling calibrates the device clock again, converts every
// timestamp to the host's profiling timeline and appends KERNEL / MEMCPY
// events, the clock model and its error bound, and the queue's track name.
#pragma once
#include <atomic>
#include <mutex>
#include <vector>

#include "epprof/ep_profiler.h"
#include "records.h"

namespace epprof::opencl {

class Profiler;

// The active profilers of one plugin.
class Registry {
 public:
  void add(Profiler* p);
  void remove(Profiler* p);
  // From compute, on the node's thread, after the commands completed.
  void record(const std::vector<CommandRecord>& records, const std::vector<MemoryRecord>& memory);
  bool any_active() const { return active_count_.load(std::memory_order_acquire) > 0; }

 private:
  std::mutex mu_;
  std::vector<Profiler*> active_;
  std::atomic<int> active_count_{0};
};

struct ProfilerEnv {
  const epprof_host_api* host;
  DeviceClock* clock;  // the device's (Device), or a test's
  Registry* registry;  // where compute's records arrive
};

// A new profiler, released through its release slot.
epprof_ep_profiler* create_profiler(const ProfilerEnv& env);

}  // namespace epprof::opencl
