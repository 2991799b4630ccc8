// Feeding libepprof sessions (epprof/session.h) from the runtime, and the
// runtime's side of the dispatch counting service.
//
// A SessionObserver reports to every active session: a HOST_EVENT record
// per session phase, per run and per node execution (its NODE record
// carries node name, op type, EP, kernel name "<EP>:<op type>", node index
// and run id). Before each node it asks the sessions for counters
// (epprof_session_query_dispatch); for each session that returns a counter
// configuration it opens a counting context on the executing thread (cached
// per thread and configuration), counts the node's kernel, and delivers the
// values (epprof_session_deliver_counters), with the cost model's flops and
// bytes as host measures. By replay mode:
//   KERNEL       pass 0 around the node; passes 1..P-1 around replays of the
//                kernel that the executor runs after node_end on the same
//                inputs (RunObserver::kernel_replays), outputs discarded;
//   NONE         every pass at once, multiplexed: scaled estimates;
//   APPLICATION,
//   USER         the pass the tool opened (epprof_session_begin_pass).
// With no session active, each hook costs one relaxed atomic load (plus
// the decorated observer's own cost).
//
// It decorates another observer (`inner`, e.g. a ProfilingObserver): the
// inner observer's node event encloses only the first execution, and when
// `trace_profiler` is set each dispatch's counter values are attached to
// that profiler's node event (epprof_event_annotate) and so appear in its
// trace as node args and counter tracks.
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

struct SessionObserverOptions {
  RunObserver* inner = nullptr;          // decorated observer (not owned), may be null
  epprof_profiler_t trace_profiler{};    // counters onto its node events; {0}: none
  std::string device = "cpu";            // counter device the runtime's kernels run on
};

class SessionObserver final : public RunObserver {
 public:
  explicit SessionObserver(SessionObserverOptions options = {});
  ~SessionObserver() override;
  SessionObserver(const SessionObserver&) = delete;
  SessionObserver& operator=(const SessionObserver&) = delete;

  // libepprof calls that failed (counting contexts, deliveries); the first
  // failure is printed to stderr, the rest only counted. Inference goes on.
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  // Dispatches whose counters were delivered to at least one session.
  uint64_t dispatches_counted() const { return counted_.load(std::memory_order_relaxed); }

  void session_phase_begin(const SessionPhaseInfo& info) override;
  void session_phase_end(const SessionPhaseInfo& info) override;
  void run_begin(const RunInfo& info) override;
  void run_end(const RunInfo& info) override;
  void node_begin(const NodeInfo& info) override;
  void node_end(const NodeInfo& info, const NodeIo& io) override;
  void node_failed(const NodeInfo& info, const char* what) override;
  uint32_t kernel_replays(const NodeInfo& info) override;
  bool may_replay_kernels() const override { return true; }
  void replay_begin(const NodeInfo& info, const ReplayInfo& replay) override;
  void replay_end(const NodeInfo& info, const ReplayInfo& replay, const char* error) override;

  struct NodeIds;  // interned names of a node, cached

 private:
  const NodeIds& ids_for(const NodeInfo& info);
  void open_span(uint64_t correlation_id);
  void close_span(uint64_t correlation_id, epprof_name_id name, uint64_t run_id);
  void report(const char* what, struct epprof_status* status) noexcept;
  void finish_dispatch(const NodeInfo& info) noexcept;
  void replay_end_counting(const NodeInfo& info, uint32_t pass, const char* error);

  SessionObserverOptions options_;
  const uint32_t* active_;  // epprof_session_active_word()
  std::mutex mu_;
  std::unordered_map<const Node*, std::unique_ptr<NodeIds>> ids_;
  std::unordered_map<uint64_t, int64_t> open_ts_;  // phase/run correlation id → start
  std::atomic<uint64_t> errors_{0}, counted_{0};
};

}  // namespace epprof::rt
