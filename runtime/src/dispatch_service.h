// The runtime's side of libepprof's sessions (epprof/session.h, host.h),
// for ProfilingObserver (epprof/rt/profiling.h) when ProfilingOptions::
// sessions is set: a HOST_EVENT record per session phase, run and node
// execution to every active session, and the dispatch counting service.
//
// What it reports and how each replay mode counts is documented once, for
// users, in epprof/rt/profiling.h. With no session active, each hook costs
// one relaxed atomic load.
//
// The observer calls it inside its own profiler events: node_begin after
// the node event began, node_counted before it ends, node_recorded after;
// so the node event encloses the counting, and the values are attached to
// it (epprof_event_annotate) when the observer has a trace.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "epprof/profiler.h"
#include "epprof/rt/observer.h"

namespace epprof::rt {

// A node as sessions see it: interned once per node by the observer.
struct DispatchNode {
  const char* kernel_name = "";  // "<EP>:<op type>", interned (epprof_name)
  epprof_name_id node = 0, op_type = 0, ep = 0, kernel = 0;
  // If, Loop, Scan...: its subgraphs' nodes are dispatches of their own,
  // nested in its; it requests no counters, which they would share.
  bool has_subgraphs = false;
};

class DispatchService {
 public:
  // `trace_profiler` ({0}: none) gets each dispatch's counter values on
  // its node event; `device` is the counter device the kernels run on.
  DispatchService(epprof_profiler_t trace_profiler, std::string device);
  ~DispatchService();
  DispatchService(const DispatchService&) = delete;
  DispatchService& operator=(const DispatchService&) = delete;

  // libepprof calls that failed (counting contexts, deliveries); the first
  // failure is printed to stderr, the rest only counted. Inference goes on.
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  uint64_t dispatches_counted() const { return counted_.load(std::memory_order_relaxed); }

  // Session phases and runs: one record each, at the end.
  void open_span(uint64_t correlation_id);
  void close_span(uint64_t correlation_id, epprof_name_id name, uint64_t run_id);

  // Queries the sessions and starts counting.
  void node_begin(const NodeInfo& info, const DispatchNode& node);
  // Stops counting and reads the values; true when the dispatch is this
  // service's (node_recorded must follow).
  bool node_counted(const NodeInfo& info, const NodeIo& io);
  // Emits the node's record and, unless replays follow, delivers its values.
  void node_recorded(const NodeInfo& info);
  void node_failed(const NodeInfo& info);
  uint32_t kernel_replays(const NodeInfo& info);
  void replay_begin(const NodeInfo& info, const ReplayInfo& replay);
  void replay_end(const NodeInfo& info, const ReplayInfo& replay, const char* error);

 private:
  void report(const char* what, struct epprof_status* status) noexcept;
  void finish_dispatch(const NodeInfo& info) noexcept;

  const epprof_profiler_t trace_profiler_;
  const std::string device_;
  const uint32_t* active_;  // epprof_session_active_word()
  std::mutex mu_;
  std::unordered_map<uint64_t, int64_t> open_ts_;  // phase/run correlation id → start
  std::atomic<uint64_t> errors_{0}, counted_{0};
};

}  // namespace epprof::rt
