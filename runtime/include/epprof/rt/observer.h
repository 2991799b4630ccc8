// Hooks for profilers. The executor calls them on the thread that does the work;
// with no observer set the cost is one null-pointer check per node.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "epprof/profiler.h"
#include "epprof/rt/tensor.h"

namespace epprof::rt {

struct Node;

enum class SessionPhase { ModelLoading, SessionInitialization };

struct SessionPhaseInfo {
  SessionPhase phase;
  const std::string& model_path;
  uint64_t correlation_id;    // from epprof_correlation_id_next(); 0 when no observer is set
};

struct RunInfo {
  uint64_t run_id;            // increasing per session, starts at 1
  const char* executor_name;  // "SequentialExecutor" or "ParallelExecutor"
  size_t num_nodes;
  // Process-unique ids (epprof_correlation_id_next) of the run and of the
  // executor's pass inside it, shared by every observer so that a session
  // and a run profiler report one event under one id.
  uint64_t correlation_id;
  uint64_t execute_correlation_id;
  // The node executions' correlation ids are first_node_correlation_id +
  // position in the executor's plan, for num_nodes positions (0 when no
  // observer is set): an observer can keep per-run state by position.
  uint64_t first_node_correlation_id = 0;
  // The run's shape epoch (0: none): NodeInfo::shape_epoch of every node
  // execution it covers; the nodes it does not cover get 0.
  uint64_t shape_epoch = 0;
  // True when every node_begin / node_end / node_failed of this run is
  // called on the thread that calls run_begin and run_end (the sequential
  // executor), so per-run state needs no synchronisation.
  bool nodes_on_calling_thread = false;
};

struct NodeInfo {
  const Node& node;           // name, op_type, index, attributes, ...
  const std::string& provider;  // EP name, e.g. "CPUExecutionProvider"
  uint64_t run_id;
  uint64_t correlation_id;    // process-unique id of this node execution, shared by all observers
  // Nonzero when the session proved that this node's shapes follow from
  // the graph inputs' shapes (and the contents of a few small inputs):
  // executions of a node with the same epoch have the same input and output
  // types and shapes, so what an observer derived from them once still
  // holds. 0: no such promise (the node follows a data-dependent If, say);
  // read the tensors. Within one run the nonzero values are all the run's.
  uint64_t shape_epoch = 0;
  // A key unique to the node in its session, dense from 0, carried here so
  // an observer that keys its state by node need not load the Node (a cold
  // cache line after a long kernel): node.index for the main graph's nodes;
  // the nodes of subgraphs (If, Loop, Scan bodies), whose node.index values
  // repeat the main graph's, get the keys after the main graph's. Traces
  // report node.index.
  size_t node_index = 0;
};

// One execution of a subgraph (an If branch, a Loop or Scan body) by the
// node that holds it (RunObserver::subgraph_event_block). Its nodes'
// correlation ids are first_node_correlation_id + position in the
// subgraph's plan. Pointers valid only during the call.
struct SubgraphRunInfo {
  uint64_t run_id;
  const void* subgraph;        // the subgraph's plan, unique while its session lives
  size_t num_nodes;            // positions of the plan, >= 1
  uint64_t first_node_correlation_id;
  uint64_t shape_epoch;        // the execution's epoch, nonzero: NodeInfo::shape_epoch of the nodes it covers
  const Node* const* nodes;    // the node at each position
  const size_t* node_indices;  // NodeInfo::node_index at each position
  // At each position: 1 where the executor records the node into the block
  // subgraph_event_block returns (its shapes follow the epoch, it holds no
  // subgraph), 0 where the node gets the hooks.
  const uint8_t* in_block;
};

// One kernel replay of a node (RunObserver::kernel_replays).
struct ReplayInfo {
  uint32_t pass;            // 1..passes
  uint32_t passes;          // the replays asked for this execution
  uint64_t correlation_id;  // process-unique id of this replay, shared by all observers
};

// Inputs/outputs of one finished node execution. Pointers valid only during the call.
struct NodeIo {
  const std::vector<const Tensor*>& inputs;   // nullptr for omitted optional inputs
  const std::vector<bool>& input_is_initializer;
  const std::vector<Tensor>& outputs;

  size_t activation_bytes() const;  // non-initializer inputs (ONNX Runtime's activation_size)
  size_t parameter_bytes() const;   // initializer inputs (parameter_size)
  size_t output_bytes() const;      // outputs (output_size)
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void session_phase_begin(const SessionPhaseInfo&) {}
  virtual void session_phase_end(const SessionPhaseInfo&) {}
  virtual void run_begin(const RunInfo&) {}
  virtual void run_end(const RunInfo&) {}
  virtual void node_begin(const NodeInfo&) {}
  virtual void node_end(const NodeInfo&, const NodeIo&) {}
  // The node's kernel threw: called instead of node_end, before the error
  // propagates, so that every node_begin is closed.
  virtual void node_failed(const NodeInfo&, const char* /*what*/) {}
  // Kernel replay (a counter set that needs several passes; see
  // ProfilingOptions::sessions in epprof/rt/profiling.h). Called after
  // node_end on the same thread; returning n > 0 asks the executor to run
  // the node's kernel n more times on the same inputs, discarding their
  // outputs (the run's results stay the first execution's). Replays are not part of the
  // node's event: node_end has already been called. Each replay is an
  // execution of its own, with its own correlation id (ReplayInfo), and
  // every observer of the run gets replay_begin/replay_end around it, so a
  // profiler can open an event for it and its device work is attributed
  // to the replay, not to the node's first execution or to nothing.
  // `error` is NULL, or what the replay threw.
  virtual uint32_t kernel_replays(const NodeInfo&) { return 0; }
  // Whether kernel_replays may ever return n > 0. Asked once per run: an
  // observer that says no is not asked per node.
  virtual bool may_replay_kernels() const { return false; }
  virtual void replay_begin(const NodeInfo&, const ReplayInfo&) {}
  virtual void replay_end(const NodeInfo&, const ReplayInfo&, const char* /*error*/) {}

  // An observer that records a run's node events in a libepprof event
  // block (epprof_event_block_* in epprof/profiler.h, one event per
  // position of the run's plan, correlation ids from
  // RunInfo::first_node_correlation_id) may let the executor record into
  // it directly. Asked once per run, right after run_begin, and only when
  // this observer is the run's only one, may_replay_kernels() is false,
  // the run has a shape epoch and its nodes run on the calling thread
  // (RunInfo::nodes_on_calling_thread). Returning a block (open, on the
  // calling thread, until run_end) means: for each node of the run's plan
  // whose NodeInfo::shape_epoch would be nonzero and that runs no subgraph,
  // the executor calls epprof_event_block_begin and _end with the node's
  // position around its kernel instead of node_begin and node_end. Every
  // other node gets node_begin / node_end, and a node whose kernel throws
  // gets node_failed, as always. A status either call returns is handed to
  // node_block_rejected. nullptr (the default): every node gets the hooks.
  // What this saves is the hooks' calls and the NodeInfo and NodeIo built
  // for them: on a model of tiny kernels (25 nodes in 9 µs), 2.5 % of a
  // run (bench/README.md).
  virtual epprof_event_block* node_event_block(const RunInfo&) { return nullptr; }
  // The same for one execution of a subgraph, asked on the thread that
  // runs it, in a run whose observer is asked for node_event_block (whether
  // the run has an epoch or not), when the execution has one. The executor
  // records the subgraph's nodes into the returned block by their
  // positions in the subgraph's plan, as above; the block stays open until
  // subgraph_run_end, which every execution that was asked gets, after its
  // last node, also when one of them threw. Executions of one subgraph can
  // nest in other subgraphs' (a Loop inside an If branch), each with its
  // own call pair.
  virtual epprof_event_block* subgraph_event_block(const SubgraphRunInfo&) { return nullptr; }
  virtual void subgraph_run_end(const SubgraphRunInfo&) {}
  // Takes `status` (owned), returned by epprof_event_block_begin or _end on
  // the block from node_event_block; the node's event is then not recorded.
  // The default releases it.
  virtual void node_block_rejected(epprof_status* status) { epprof_status_release(status); }
};

}  // namespace epprof::rt
