// Profiling the runtime with libepprof, the way ONNX Runtime reports to its
// profiler: session events (model_loading_uri, session_initialization,
// model_run, <Executor>::Execute) and one NODE event per node execution
// named "<node name>_kernel_time" with ONNX Runtime's args.
//
// One ProfilingObserver is one profiling scope (one libepprof profiler).
// Session-level profiling: create one before the Session and pass it as
// SessionOptions::observer. Per-run profiling: create one per run and pass
// it as RunOptions::observer. Both may be active at once; each writes its
// own trace, and a node execution carries the same correlation id in both.
//
// It is also the runtime's side of libepprof's sessions
// (ProfilingOptions::sessions; epprof/session.h): it reports each session
// phase, run and node execution to every active session as a HOST_EVENT
// record (a node's carries node name, op type, EP, kernel name "<EP>:<op
// type>", node index and run id), and serves the dispatch counting
// service: before each node it asks the sessions for counters
// (epprof_session_query_dispatch), counts the node's kernel on the
// executing thread for each session that returns a counter configuration,
// and delivers the values (epprof_session_deliver_counters) with the cost
// model's flops and bytes as host measures. By replay mode:
//   KERNEL       pass 0 around the node; passes 1..P-1 around replays of the
//                kernel that the executor runs after node_end on the same
//                inputs (RunObserver::kernel_replays), outputs discarded;
//   NONE         every pass at once, multiplexed: scaled estimates;
//   APPLICATION,
//   USER         the pass the tool opened (epprof_session_begin_pass).
// The node event encloses only the first execution and its counting; with
// a trace, each dispatch's counter values are attached to its node event
// (epprof_event_annotate) and so appear in the trace as node args and
// counter tracks. With no session active, a hook costs one relaxed atomic
// load more. One observer thus feeds the profiler and the sessions, from
// one set of per-node names.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "epprof/profiler.h"
#include "epprof/rt/observer.h"

namespace epprof::rt {

class DispatchService;

struct ProfilingOptions {
  std::string trace_path;                // empty: no trace (sessions only)
  std::string scope_name = "session";    // written in the trace metadata
  std::vector<epprof_plugin_t> plugins;  // EP profilers for this scope (one instance each)
  bool integer_timestamps = false;       // ONNX Runtime-style integer µs (JSON traces)
  // JSON or SQLite; AUTO picks by trace_path's extension (.db, .sqlite, .sqlite3).
  epprof_trace_format trace_format = EPPROF_TRACE_FORMAT_AUTO;
  uint64_t memory_budget_bytes = 0;      // 0: libepprof's default
  std::vector<std::pair<std::string, std::string>> metadata;  // extra metadata fields
  // Record node events through a libepprof event block (epprof_event_block_*)
  // when it can: a run of the sequential executor whose shape epoch an
  // earlier run of this observer saw whole has its node events described in
  // advance, and its node hooks record each one by index, looking nothing
  // up. The trace is the same. Not for scopes with EP profilers (they see
  // start_event / stop_event through epprof_event_begin / _end), the
  // parallel executor, graphs of 65,536 nodes or more, or a run that starts
  // while another run of this observer holds the block.
  bool event_blocks = true;
  // Report the tensors the runtime allocates and frees on the thread that
  // runs this observer's session phases and runs, while they last
  // (epprof_memory_alloc / _free on device "cpu"): tagged initializer
  // during model loading and session initialization, output during a run.
  // Nodes the parallel executor runs on its pool threads report as the
  // run's thread does. Other sessions of the process are not reported.
  bool memory = false;
  // Feed libepprof's sessions and serve the dispatch counting service
  // (see above). Node events then take the general path, not event blocks.
  bool sessions = false;
  std::string counter_device = "cpu";  // the counter device the runtime's kernels run on
  // What the trace leaves out (epprof/profiler.h: epprof_trace_filter);
  // borrowed until the observer's constructor returns. nullptr: nothing.
  const epprof_trace_filter* filter = nullptr;
};

class alignas(64) ProfilingObserver final : public RunObserver {
 public:
  // Creates and starts the profiler (with a trace_path). Throws
  // Error(ErrorKind::Io) with libepprof's message when it cannot (e.g. an
  // unwritable trace path), Error(ErrorKind::BadInput) for options that
  // ask for nothing (no trace_path, no sessions).
  explicit ProfilingObserver(const ProfilingOptions& options);
  // Destroys the profiler; if finish() was not called, no trace is written.
  ~ProfilingObserver() override;
  ProfilingObserver(const ProfilingObserver&) = delete;
  ProfilingObserver& operator=(const ProfilingObserver&) = delete;

  // Stops and writes the trace. Call once, after every run it observes has
  // returned. Throws Error(ErrorKind::Io) on failure. Without a trace it
  // returns empty stats.
  epprof_trace_stats finish();
  const std::string& trace_path() const { return path_; }
  // Runs so far whose node events went through the event block
  // (ProfilingOptions::event_blocks). Thread-safe.
  uint64_t runs_in_event_blocks() const { return block_runs_.load(std::memory_order_relaxed); }
  epprof_profiler_t profiler() const { return profiler_; }  // {0}: no trace
  // With sessions: libepprof calls that failed (counting contexts,
  // deliveries; the first is printed to stderr, the rest only counted,
  // inference goes on), and the dispatches whose counters were delivered
  // to at least one session.
  uint64_t session_errors() const;
  uint64_t dispatches_counted() const;

  void session_phase_begin(const SessionPhaseInfo& info) override;
  void session_phase_end(const SessionPhaseInfo& info) override;
  void run_begin(const RunInfo& info) override;
  void run_end(const RunInfo& info) override;
  void node_begin(const NodeInfo& info) override;
  void node_end(const NodeInfo& info, const NodeIo& io) override;
  void node_failed(const NodeInfo& info, const char* what) override;
  uint32_t kernel_replays(const NodeInfo& info) override;
  bool may_replay_kernels() const override { return dispatch_ != nullptr; }
  void replay_begin(const NodeInfo& info, const ReplayInfo& replay) override;
  void replay_end(const NodeInfo& info, const ReplayInfo& replay, const char* error) override;
  // The event block of a run that holds it (ProfilingOptions::event_blocks).
  epprof_event_block* node_event_block(const RunInfo& info) override;
  void node_block_rejected(epprof_status* status) override;
  // A block per subgraph plan, held by one execution at a time; an epoch's
  // descriptions come from an execution through the hooks.
  epprof_event_block* subgraph_event_block(const SubgraphRunInfo& info) override;
  void subgraph_run_end(const SubgraphRunInfo& info) override;

 private:
  struct HotNode;
  struct NodeCache;
  struct Block;
  struct Spilled;
  struct Runs;
  struct SubgraphRuns;
  class MemoryTracking;
  SubgraphRuns* subgraph_runs(const void* subgraph);
  void describe_epoch(SubgraphRuns& sr, const SubgraphRunInfo& info);
  // The subgraph blocks this thread's executions hold, innermost first
  // (SubgraphRuns::outer), whichever observer holds them.
  static thread_local SubgraphRuns* open_subgraphs_;
  // The run that holds the event block, or collects its epoch's event
  // descriptions for it: its first node correlation id, whether the block
  // is open, and its node count, in one word so that a hook of another run
  // tells in one load that it is not that run.
  static constexpr unsigned kCountBits = 16;
  static constexpr uint64_t kInBlock = uint64_t(1) << kCountBits;
  static constexpr unsigned kFirstShift = kCountBits + 1;
  static constexpr size_t kNotHeld = SIZE_MAX;
  // The position of a node of the run that holds the block; kNotHeld for
  // other runs. `in_block`: whether the block is open.
  [[gnu::always_inline]] inline size_t held_position(const NodeInfo& info, bool* in_block) const {
    const uint64_t held = held_run_.load(std::memory_order_relaxed);
    const uint64_t position = info.correlation_id - (held >> kFirstShift);
    *in_block = held & kInBlock;
    return position < (held & (kInBlock - 1)) ? size_t(position) : kNotHeld;
  }
  void hold_run(const RunInfo& info);
  void release_run(const RunInfo& info);
  void collect(size_t position, epprof_name_id event, epprof_arg_set_id args);
  struct NodeState {
    HotNode& hot;
    NodeCache& cold;
  };
  [[gnu::always_inline]] inline NodeState node_state(size_t node_index);
  [[gnu::noinline]] NodeState node_state_slow(size_t node_index);
  // The node hooks with sessions to feed (ProfilingOptions::sessions):
  // the profiler's event (with a trace) around the dispatch service's part.
  [[gnu::noinline]] void node_begin_with_sessions(const NodeInfo& info);
  [[gnu::noinline]] void node_end_with_sessions(const NodeInfo& info, const NodeIo& io);
  // The node event outside event blocks; `position` as for node_end_slow.
  [[gnu::always_inline]] inline void trace_node_begin(const NodeInfo& info);
  [[gnu::always_inline]] inline void trace_node_end(const NodeInfo& info, const NodeIo& io, size_t position);
  size_t node_args(const NodeInfo& info, epprof_arg* out);
  [[gnu::noinline]] void node_end_slow(const NodeInfo& info, const NodeIo& io, const NodeState& n,
                                       size_t position);
  [[gnu::noinline]] void block_end_outside_epoch(const NodeInfo& info, const NodeIo& io, size_t position);
  // Warns once about a rejected event; a null status costs one branch.
  void report(epprof_status* status) noexcept {
    if (__builtin_expect(status != nullptr, 0)) report_rejected(status);
  }
  [[gnu::cold, gnu::noinline]] void report_rejected(epprof_status* status) noexcept;

  // The nodes' state, by node index, in blocks of kBlockNodes allocated
  // under mu_ and read lock-free: a node's HotNode is two loads away, the
  // first from the line that also holds profiler_.
  static constexpr size_t kBlockNodes = 256;
  static constexpr size_t kBlocks = 4096;  // node indices below 2^20

  // What the node hooks of a run in the block read: the held run and the
  // block's first 48 bytes, in the object's first line with the vtable
  // pointer. The profiler comes next, for every other event.
  std::atomic<uint64_t> held_run_{0};  // 0: no run holds the block
  epprof_event_block block_{};
  epprof_profiler_t profiler_{};
  std::unique_ptr<DispatchService> dispatch_;  // ProfilingOptions::sessions; beside profiler_, read as often
  const bool use_blocks_;
  std::unique_ptr<Runs> runs_;  // the block's holder, epoch descriptions
  std::atomic<uint64_t> block_runs_{0};

  std::atomic<Block*> blocks_[kBlocks] = {};
  std::string path_;
  bool finished_ = false;
  std::unique_ptr<MemoryTracking> memory_;  // ProfilingOptions::memory
  std::mutex mu_;
  std::map<size_t, std::unique_ptr<Spilled>> overflow_;  // node indices past the blocks
  std::mutex subgraphs_mu_;
  std::map<const void*, std::unique_ptr<SubgraphRuns>> subgraphs_;  // by SubgraphRunInfo::subgraph
  std::atomic<bool> warned_{false};
};

// "[{"float":[1,3,224,224]},{"int64":[2]}]": ONNX Runtime's encoding of
// input_type_shape / output_type_shape (omitted tensors are skipped).
std::string type_shape_json(const std::vector<const class Tensor*>& tensors);
std::string type_shape_json(const std::vector<class Tensor>& tensors);

}  // namespace epprof::rt
