#include "executor.h"

#include "intra_op.h"
#include "memory_hooks.h"
#include "shape_epochs.h"

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "epprof/profiler.h"
#include "epprof/rt/error.h"

namespace epprof::rt::detail {

namespace {

// Per-run reference counts: a slot is released when its last reader finishes.
class Releaser {
 public:
  explicit Releaser(const ExecPlan& plan) : remaining_(plan.num_slots) {
    for (size_t i = 0; i < plan.num_slots; ++i) remaining_[i].store(plan.use_count[i], std::memory_order_relaxed);
  }
  void after_node(const ExecPlan& plan, const NodePlan& np, std::vector<Tensor>& values) {
    for (int s : np.out_slots)
      if (s >= 0 && !plan.keep[static_cast<size_t>(s)] && plan.use_count[static_cast<size_t>(s)] == 0)
        values[static_cast<size_t>(s)] = Tensor();
    for (int s : np.in_slots) release(plan, s, values);
    for (int s : np.implicit_slots) release(plan, s, values);
  }

 private:
  void release(const ExecPlan& plan, int s, std::vector<Tensor>& values) {
    if (s < 0 || plan.keep[static_cast<size_t>(s)]) return;
    if (remaining_[static_cast<size_t>(s)].fetch_sub(1, std::memory_order_acq_rel) == 1)
      values[static_cast<size_t>(s)] = Tensor();
  }

  std::vector<std::atomic<int>> remaining_;
};

// Kernel replay for an observer that asked for it: `n` more executions on
// the same inputs into scratch outputs, so the run's results are untouched.
// Every observer sees each replay, under a correlation id of its own.
void replay_kernel(const NodePlan& np, const KernelContext& ctx, const Observers& obs, const NodeInfo& info,
                   uint32_t n) {
  for (uint32_t pass = 1; pass <= n; ++pass) {
    KernelContext rc;
    rc.inputs = ctx.inputs;
    rc.subgraphs = ctx.subgraphs;
    rc.outputs.resize(np.out_slots.size());
    const ReplayInfo replay{pass, n, epprof_correlation_id_next()};
    std::string what;
    for (int k = 0; k < obs.count; ++k) obs.list[k]->replay_begin(info, replay);
    try {
      np.kernel->compute(rc);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "unknown error";
    }
    for (int k = obs.count; k-- > 0;) obs.list[k]->replay_end(info, replay, what.empty() ? nullptr : what.c_str());
  }
}

// Tells the observers about the exception in flight (without consuming it).
void notify_failed(const Observers& obs, const NodeInfo& info) {
  std::string what = "unknown error";
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  for (int k = obs.count; k-- > 0;) obs.list[k]->node_failed(info, what.c_str());
}

[[noreturn]] void rethrow_for_node(const Node& node) {
  try {
    throw;
  } catch (const Error& e) {
    throw Error(e.kind() == ErrorKind::BadInput ? ErrorKind::BadInput : ErrorKind::Kernel,
                node.describe() + ": " + e.message());
  } catch (const std::exception& e) {
    throw Error(ErrorKind::Kernel, node.describe() + ": " + e.what());
  }
}

class SequentialExecutor final : public Executor {
 public:
  const char* name() const override { return "SequentialExecutor"; }
  bool nodes_on_calling_thread() const override { return true; }
  int threads() const override { return 0; }
  void execute(const ExecPlan& plan, std::vector<Tensor>& values, const Observers& obs,
               const RunContext& run) override {
    Releaser rel(plan);
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      run_node(plan, i, values, obs, run);
      rel.after_node(plan, plan.nodes[i], values);
    }
  }
};

class ParallelExecutor final : public Executor {
 public:
  explicit ParallelExecutor(int threads) : pool_(threads) {}
  const char* name() const override { return "ParallelExecutor"; }
  bool nodes_on_calling_thread() const override { return false; }
  int threads() const override { return pool_.size(); }

  void execute(const ExecPlan& plan, std::vector<Tensor>& values, const Observers& obs,
               const RunContext& run) override {
    if (plan.nodes.empty()) return;
    auto st = std::make_shared<RunState>(plan, values, obs, run);
    for (size_t i = 0; i < plan.nodes.size(); ++i)
      if (plan.nodes[i].num_producers == 0) schedule(st, i);
    std::unique_lock<std::mutex> lock(st->mu);
    st->cv.wait(lock, [&] { return st->done == plan.nodes.size(); });
    if (st->error) std::rethrow_exception(st->error);
  }

 private:
  struct RunState {
    RunState(const ExecPlan& p, std::vector<Tensor>& v, const Observers& o, const RunContext& r)
        : plan(p), values(v), obs(o), run(r), rel(p), pending(p.nodes.size()) {
      for (size_t i = 0; i < p.nodes.size(); ++i) pending[i].store(p.nodes[i].num_producers);
    }
    const ExecPlan& plan;
    std::vector<Tensor>& values;
    const Observers& obs;
    RunContext run;
    const memory::Listeners listeners = memory::current();  // the run's thread's, lent to the pool
    IntraOpPool* const intra_op = current_intra_op_pool();   // likewise
    Releaser rel;
    std::vector<std::atomic<int>> pending;
    std::atomic<bool> failed{false};
    std::mutex mu;
    std::condition_variable cv;
    size_t done = 0;
    std::exception_ptr error;
  };

  void schedule(const std::shared_ptr<RunState>& st, size_t i) {
    pool_.submit([this, st, i] { run_one(st, i); });
  }

  void run_one(const std::shared_ptr<RunState>& st, size_t i) {
    const NodePlan& np = st->plan.nodes[i];
    const memory::Borrow as_the_run(st->listeners);
    const IntraOpScope with_the_runs_pool(st->intra_op);
    if (!st->failed.load(std::memory_order_acquire)) {
      try {
        run_node(st->plan, i, st->values, st->obs, st->run);
      } catch (...) {
        std::lock_guard<std::mutex> lock(st->mu);
        if (!st->error) st->error = std::current_exception();
        st->failed.store(true, std::memory_order_release);
      }
    }
    st->rel.after_node(st->plan, np, st->values);
    // Successors run even after a failure (they skip compute) so that `done` reaches the total.
    for (size_t c : np.consumers)
      if (st->pending[c].fetch_sub(1, std::memory_order_acq_rel) == 1) schedule(st, c);
    std::lock_guard<std::mutex> lock(st->mu);
    if (++st->done == st->plan.nodes.size()) st->cv.notify_all();
  }

  ThreadPool pool_;
};

// The SubgraphRunner of one execution of a node with GRAPH attributes:
// runs a subgraph's plan sequentially on the calling thread, its values
// from enclosing scopes taken from the node's implicit inputs.
class NodeSubgraphs final : public SubgraphRunner {
 public:
  NodeSubgraphs(const ExecPlan& plan, const NodePlan& np, const std::vector<Tensor>& values, const Observers& obs,
                const RunContext& run)
      : outer_(plan), np_(np), values_(values), obs_(obs), run_{run.run_id, 0, 0} {
    run_.ask_for_blocks = run.ask_for_blocks;
  }

  std::vector<Tensor> run(const Graph& graph, std::vector<Tensor> inputs) const override {
    const SubgraphPlan* sp = nullptr;
    for (const SubgraphPlan& s : np_.subgraphs)
      if (s.graph == &graph) sp = &s;
    if (!sp) throw Error(ErrorKind::Kernel, "graph '" + graph.name + "' is not a subgraph of " + np_.node->describe());
    const ExecPlan& plan = *sp->plan;
    if (inputs.size() != plan.input_slots.size())
      throw Error(ErrorKind::Kernel, "subgraph '" + graph.name + "' takes " + std::to_string(plan.input_slots.size()) +
                                         " inputs, got " + std::to_string(inputs.size()));
    std::vector<Tensor> values(plan.num_slots);
    for (size_t i = 0; i < plan.outer_slots.size(); ++i)
      values[static_cast<size_t>(plan.outer_slots[i])] = outer_.value(values_, np_.implicit_slots[sp->outer_from[i]]);
    for (size_t i = 0; i < inputs.size(); ++i) values[static_cast<size_t>(plan.input_slots[i])] = std::move(inputs[i]);
    RunContext run = run_;
    // The run reserved correlation ids for the top-level plan's positions
    // only: each execution of a subgraph takes a block for its nodes.
    if (obs_.count) {
      run.shape_epoch = subgraph_epoch(*sp, values);
      run.epochs = sp->epochs.get();
      if (!plan.nodes.empty()) run.first_node_id = epprof_correlation_id_block(plan.nodes.size());
    }
    std::optional<SubgraphBlock> block;
    if (run.ask_for_blocks && run.shape_epoch && run.first_node_id) block.emplace(*obs_.list[0], *sp, run);
    Releaser rel(plan);
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      run_node(plan, i, values, obs_, run);
      rel.after_node(plan, plan.nodes[i], values);
    }
    std::vector<Tensor> outputs;
    outputs.reserve(plan.output_slots.size());
    for (int id : plan.output_slots) outputs.push_back(plan.value(values, id));
    return outputs;
  }

 private:
  const ExecPlan& outer_;  // the plan np_ is in, whose values values_ are
  const NodePlan& np_;
  const std::vector<Tensor>& values_;
  const Observers& obs_;
  RunContext run_;  // the top-level epoch does not hold inside: subgraphs have their own

  // The event block of one execution of a subgraph, from the run's only
  // observer (RunObserver::subgraph_event_block), into run.node_block;
  // subgraph_run_end when the execution ends, however it ends.
  class SubgraphBlock {
   public:
    SubgraphBlock(RunObserver& observer, const SubgraphPlan& sp, RunContext& run)
        : observer_(observer),
          info_{run.run_id,      sp.plan.get(),    sp.nodes.size(),        run.first_node_id,
                run.shape_epoch, sp.nodes.data(), sp.node_indices.data(), sp.in_block.data()} {
      run.node_block = observer_.subgraph_event_block(info_);
    }
    ~SubgraphBlock() { observer_.subgraph_run_end(info_); }
    SubgraphBlock(const SubgraphBlock&) = delete;
    SubgraphBlock& operator=(const SubgraphBlock&) = delete;

   private:
    RunObserver& observer_;
    const SubgraphRunInfo info_;
  };

  // The epoch of this execution of the subgraph (0: none), from the shapes
  // of its inputs and of the outer values it reads that may change
  // (SubgraphPlan::epoch_outer_slots).
  static uint64_t subgraph_epoch(const SubgraphPlan& sp, const std::vector<Tensor>& values) {
    return sp.epochs->epoch_for(values, sp.plan->input_slots, sp.epoch_outer_slots);
  }
};

// What the observers are told about plan.nodes[position]'s execution.
NodeInfo node_info(const NodePlan& np, size_t position, const RunContext& run) {
  return NodeInfo{*np.node,
                  *np.provider,
                  run.run_id,
                  run.first_node_id ? run.first_node_id + position : 0,
                  run.shape_epoch ? run.epochs->node_epoch(run.shape_epoch, position) : 0,
                  np.node_index};
}

// Runs the node's kernel. A kernel that throws, or leaves an output empty,
// becomes an Error naming the node, after the observers' node_failed with
// info() (built only then).
template <class Info>
void compute(const NodePlan& np, KernelContext& ctx, const Observers& obs, const Info& info) {
  try {
    np.kernel->compute(ctx);
    for (size_t o = 0; o < np.out_slots.size(); ++o)
      if (np.out_slots[o] >= 0 && ctx.outputs[o].empty())
        throw Error(ErrorKind::Kernel,
                    "output " + std::to_string(o) + " ('" + np.node->outputs[o] + "') was not produced");
  } catch (...) {
    if (obs.count) notify_failed(obs, info());
    rethrow_for_node(*np.node);
  }
}

// A KernelContext of this thread's, reused: one per nesting level of
// run_node (an If's branch runs its nodes inside the If's), whose vectors
// keep their capacity from node to node. A fresh context per node cost two
// allocations and two frees, and Silero VAD runs 76 nodes a run, most of
// them a few hundred nanoseconds long.
class ReusedContext {
 public:
  ReusedContext() {
    if (depth_ == contexts_.size()) contexts_.push_back(std::make_unique<KernelContext>());
    ctx_ = contexts_[depth_++].get();
  }
  ~ReusedContext() {
    ctx_->inputs.clear();
    ctx_->outputs.clear();
    ctx_->subgraphs = nullptr;
    --depth_;
  }
  ReusedContext(const ReusedContext&) = delete;
  ReusedContext& operator=(const ReusedContext&) = delete;
  KernelContext& get() { return *ctx_; }

 private:
  KernelContext* ctx_;
  static thread_local std::vector<std::unique_ptr<KernelContext>> contexts_;  // by depth; stable addresses
  static thread_local size_t depth_;
};
thread_local std::vector<std::unique_ptr<KernelContext>> ReusedContext::contexts_;
thread_local size_t ReusedContext::depth_ = 0;

}  // namespace

void run_node(const ExecPlan& plan, size_t position, std::vector<Tensor>& values, const Observers& obs,
              const RunContext& run) {
  const NodePlan& np = plan.nodes[position];
  ReusedContext reused;
  KernelContext& ctx = reused.get();
  ctx.inputs.resize(np.in_slots.size(), nullptr);
  for (size_t i = 0; i < np.in_slots.size(); ++i)
    if (np.in_slots[i] >= 0) ctx.inputs[i] = &plan.value(values, np.in_slots[i]);
  ctx.outputs.resize(np.out_slots.size());
  const auto store_outputs = [&] {
    for (size_t o = 0; o < np.out_slots.size(); ++o)
      if (np.out_slots[o] >= 0) values[static_cast<size_t>(np.out_slots[o])] = std::move(ctx.outputs[o]);
  };
  // The run's only observer lets the executor record this node's event in
  // its event block: no hooks, no NodeInfo (RunObserver::node_event_block).
  if (run.node_block && np.subgraphs.empty() && run.epochs->node_epoch(run.shape_epoch, position)) {
    RunObserver& observer = *obs.list[0];
    if (epprof_status* st = epprof_event_block_begin(run.node_block, position)) observer.node_block_rejected(st);
    compute(np, ctx, obs, [&] { return node_info(np, position, run); });
    if (epprof_status* st = epprof_event_block_end(run.node_block, position)) observer.node_block_rejected(st);
    store_outputs();
    return;
  }
  std::optional<NodeSubgraphs> subgraphs;
  if (__builtin_expect(!np.subgraphs.empty(), 0)) ctx.subgraphs = &subgraphs.emplace(plan, np, values, obs, run);
  const NodeInfo info = node_info(np, position, run);
  for (int k = 0; k < obs.count; ++k) obs.list[k]->node_begin(info);
  compute(np, ctx, obs, [&] { return info; });
  for (int k = obs.count; k-- > 0;) {
    const NodeIo io{ctx.inputs, np.input_is_initializer, ctx.outputs};
    obs.list[k]->node_end(info, io);
  }
  store_outputs();
  if (__builtin_expect(obs.replays, 0))
    for (int k = 0; k < obs.count; ++k)
      if (const uint32_t n = obs.list[k]->kernel_replays(info)) replay_kernel(np, ctx, obs, info, n);
}

std::unique_ptr<Executor> make_sequential_executor() { return std::make_unique<SequentialExecutor>(); }
std::unique_ptr<Executor> make_parallel_executor(int threads) { return std::make_unique<ParallelExecutor>(threads); }

}  // namespace epprof::rt::detail
