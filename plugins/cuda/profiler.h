// The CUDA EP's profiler (epprof/ep_profiler.h). One per profiling scope:
// start_event/stop_event keep a per-thread stack of the scope's ids and
// push/pop the node's id as CUPTI's external correlation id on the issuing
// thread; the activity source delivers CUPTI's records to the scope's
// RecordConverter; end_profiling flushes, joins records to node ids and
// appends KERNEL / MEMCPY events, track names and metadata (record counts,
// CUPTI's dropped records, unattributed records, the clock).
//
// Without device tracing (no CUPTI, or another CUPTI client holds the
// activity API) the profiler still works: the scope's trace has no device
// events and its metadata says why (device_tracing).
//
// The clock: at the scope's start and at its end the profiler runs three
// clock probes (ClockProbe in records.h), each under an external id of its
// own; the tightest of each group bounds the clock error there, and the
// metadata gives the looser of the two, with each probe's bound and the
// device records that start before their API call (none, on a correct
// clock). The first probe of a scope also pays for first use, so it is
// the loosest (about 0.4 ms against 4-6 µs on an H100).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "activity_source.h"
#include "epprof/ep_profiler.h"

namespace epprof::cuda {

// Reads the host clock into *before, issues one small device operation on
// the calling thread, waits for it, and reads the clock into *after. False
// with `error` set when the device operation fails.
using ClockProbeFn = std::function<bool(int64_t* before, int64_t* after, std::string* error)>;

struct ProfilerEnv {
  const epprof_host_api* host = nullptr;
  ActivitySource* source = nullptr;  // outlives the profiler; null: no device tracing
  std::string device;           // "NVIDIA H100 (sm_90)", for the metadata
  std::string no_tracing_why;   // when source is null: why
  ClockProbeFn probe;           // null: no clock probes (bound unknown)
  bool export_api = false;      // also write the CUDA API records (EPPROF_CUDA_API_RECORDS)
};

// A new profiler, released through its release slot.
epprof_ep_profiler* create_profiler(const ProfilerEnv& env);

}  // namespace epprof::cuda
