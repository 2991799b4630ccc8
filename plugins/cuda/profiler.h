// The CUDA EP's profiler (epprof/ep_profiler.h). One per profiling scope:
// start_event/stop_event keep a per-thread stack of the scope's ids and
// push/pop the node's id as CUPTI's external correlation id on the issuing
// thread; the activity source delivers CUPTI's records to the scope's
// RecordConverter; end_profiling flushes, joins records to node ids and
// appends KERNEL / MEMCPY events, track names and metadata (record counts,
// CUPTI's dropped records, unattributed records, the clock).
#pragma once
#include <string>

#include "activity_source.h"
#include "epprof/ep_profiler.h"

namespace epprof::cuda {

struct ProfilerEnv {
  const epprof_host_api* host;
  ActivitySource* source;  // outlives the profiler
  std::string device;      // "NVIDIA H100 (sm_90)", for the metadata
};

// A new profiler, released through its release slot.
epprof_ep_profiler* create_profiler(const ProfilerEnv& env);

}  // namespace epprof::cuda
