// Execution plan and the two executors (sequential, parallel).
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "epprof/rt/execution_provider.h"
#include "epprof/rt/observer.h"
#include "thread_pool.h"

namespace epprof::rt::detail {

struct ExecPlan;

// A GRAPH attribute of a node, compiled like the top-level graph.
class ShapeEpochs;

struct SubgraphPlan {
  const Graph* graph = nullptr;
  std::shared_ptr<const ExecPlan> plan;
  // The subgraph's own shape epochs, over its inputs and the outer values it
  // reads: executions with the same shapes there (a Loop's iterations, an
  // If taken again) share an epoch when the subgraph's shapes follow them.
  std::shared_ptr<ShapeEpochs> epochs;
  // For each of plan->outer_slots: the position of its value in the
  // node's implicit_slots.
  std::vector<size_t> outer_from;
  // The plan->outer_slots whose shapes `epochs` compares: those whose
  // values may change between executions (not an enclosing constant).
  std::vector<int> epoch_outer_slots;
  // The plan's nodes and their NodeInfo::node_index, by position
  // (SubgraphRunInfo).
  std::vector<const Node*> nodes;
  std::vector<size_t> node_indices;
  std::vector<uint8_t> in_block;  // run_node records it into a block (no subgraphs, in every epoch)
};

struct NodePlan {
  const Node* node = nullptr;
  size_t node_index = 0;  // node->index
  const Kernel* kernel = nullptr;
  const std::string* provider = nullptr;
  std::vector<int> in_slots;    // -1: omitted optional input
  std::vector<int> out_slots;   // -1: omitted optional output
  std::vector<bool> input_is_initializer;
  std::vector<size_t> consumers;  // distinct nodes reading an output of this one
  int num_producers = 0;          // distinct nodes this one waits for
  std::vector<int> implicit_slots;       // node->implicit_inputs: values its subgraphs read
  std::vector<SubgraphPlan> subgraphs;   // one per GRAPH attribute
};

struct ExecPlan {
  size_t num_slots = 0;
  std::vector<Tensor> constants;      // per slot; non-empty for initializers and folded values
  std::vector<int> input_slots;       // graph inputs, in Session::inputs() order
  std::vector<int> output_slots;      // graph outputs, in Session::outputs() order
  std::vector<int> use_count;         // node-input references per slot
  std::vector<bool> keep;             // graph outputs and constants: never released
  std::vector<NodePlan> nodes;        // topological order
  // A subgraph's plan: the slots of the values it reads from enclosing
  // scopes (Graph::outer_inputs order) and the kernels of its nodes.
  std::vector<int> outer_slots;
  std::vector<int> outer_index;  // per slot: its position in outer_slots, or -1
  std::vector<std::unique_ptr<Kernel>> kernels;

  // The value of `slot` in an execution whose own values are `values`: the
  // slot's constant, where it has one; in a subgraph's execution, for a
  // value of an enclosing scope, the tensor there (`outer`, by position in
  // outer_slots); else values[slot]. An execution's values leave the
  // constants' and the outer values' slots empty: copied into them, every
  // run and every execution of a subgraph paid an allocation per value for
  // its shape, and Silero VAD runs a dozen small If branches a run, whose
  // values are its weights and its enclosing scopes' tensors.
  const Tensor& value(const std::vector<Tensor>& values, int slot, const Tensor* const* outer = nullptr) const {
    const auto s = static_cast<size_t>(slot);
    const Tensor& c = constants[s];
    if (!c.empty()) return c;
    if (outer && outer_index[s] >= 0) return *outer[outer_index[s]];
    return values[s];
  }

  // The plan's outputs at the end of an execution: moved out of `values`
  // where the execution owns them (and no later output is the same value),
  // copied from the constants and the enclosing scopes.
  std::vector<Tensor> take_outputs(std::vector<Tensor>& values, const Tensor* const* outer = nullptr) const;
};

// What one run tells its nodes' observers (see NodeInfo).
struct RunContext {
  uint64_t run_id = 0;
  uint64_t shape_epoch = 0;
  // The plan's epochs, which say which nodes the run's epoch covers; set
  // when shape_epoch is.
  const ShapeEpochs* epochs = nullptr;
  // The correlation id of plan.nodes[i]'s execution is first_node_id + i
  // (ids reserved for the run in one call); 0 without observers.
  uint64_t first_node_id = 0;
  // The event block the run's only observer records node events in, for
  // the executor to record into directly (RunObserver::node_event_block);
  // nullptr: none. A subgraph's execution has a block of its own
  // (RunObserver::subgraph_event_block).
  epprof_event_block* node_block = nullptr;
  // Whether the run's observer is asked for blocks: it is the only one, it
  // replays no kernels, and the nodes run on the calling thread.
  bool ask_for_blocks = false;
  // In a subgraph's execution: the enclosing scopes' values its plan reads,
  // by position in ExecPlan::outer_slots (ExecPlan::value); null at the top level.
  const Tensor* const* outer = nullptr;
};

// Up to two observers (session-wide and per-run); empty means no profiling cost.
struct Observers {
  RunObserver* list[2] = {nullptr, nullptr};
  int count = 0;
  bool replays = false;  // some observer may ask for kernel replays
  void add(RunObserver* o) {
    if (!o) return;
    list[count++] = o;
    replays = replays || o->may_replay_kernels();
  }
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* name() const = 0;
  // Whether every node runs on the thread that calls execute().
  virtual bool nodes_on_calling_thread() const = 0;
  // The size of its thread pool; 0 when it has none (nodes run on the caller).
  virtual int threads() const = 0;
  // `values` (plan.num_slots of them) holds the inputs on entry, every kept
  // slot but the constants' on return; the nodes read the constants from
  // the plan (ExecPlan::value).
  virtual void execute(const ExecPlan& plan, std::vector<Tensor>& values, const Observers& obs,
                       const RunContext& run) = 0;
};

std::unique_ptr<Executor> make_sequential_executor();
std::unique_ptr<Executor> make_parallel_executor(int threads);

// Runs plan.nodes[position]: gathers inputs, computes, stores outputs, and
// calls the observers with the execution's correlation id and shape epoch.
// Errors are rethrown as Error naming the node.
void run_node(const ExecPlan& plan, size_t position, std::vector<Tensor>& values, const Observers& obs,
              const RunContext& run);

}  // namespace epprof::rt::detail
