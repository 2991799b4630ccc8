#include "executor.h"

#include "intra_op.h"
#include "memory_hooks.h"
#include "shape_epochs.h"

#include <algorithm>
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

// Per-execution reference counts: a slot is released when its last reader
// finishes. Count is int for an execution on one thread (a subgraph's, the
// sequential executor's), std::atomic<int> for the parallel executor's.
template <class Count>
class Releaser {
 public:
  // `remaining` has plan.num_slots counts (atomics cannot be resized: the
  // parallel executor sizes its own).
  Releaser(const ExecPlan& plan, std::vector<Count>& remaining) : remaining_(remaining) {
    for (size_t i = 0; i < plan.num_slots; ++i) set(remaining_[i], plan.use_count[i]);
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
    if (last_reader(remaining_[static_cast<size_t>(s)])) values[static_cast<size_t>(s)] = Tensor();
  }
  static void set(int& c, int n) { c = n; }
  static void set(std::atomic<int>& c, int n) { c.store(n, std::memory_order_relaxed); }
  static bool last_reader(int& c) { return --c == 0; }
  static bool last_reader(std::atomic<int>& c) { return c.fetch_sub(1, std::memory_order_acq_rel) == 1; }

  std::vector<Count>& remaining_;
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
    std::vector<int> remaining(plan.num_slots);
    Releaser<int> rel(plan, remaining);
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
        : plan(p), values(v), obs(o), run(r), remaining(p.num_slots), rel(p, remaining), pending(p.nodes.size()) {
      for (size_t i = 0; i < p.nodes.size(); ++i) pending[i].store(p.nodes[i].num_producers);
    }
    const ExecPlan& plan;
    std::vector<Tensor>& values;
    const Observers& obs;
    RunContext run;
    const memory::Listeners listeners = memory::current();  // the run's thread's, lent to the pool
    IntraOpPool* const intra_op = current_intra_op_pool();   // likewise
    std::vector<std::atomic<int>> remaining;
    Releaser<std::atomic<int>> rel;
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

void clear(KernelContext& ctx) {
  ctx.inputs.clear();
  ctx.outputs.clear();
  ctx.subgraphs = nullptr;
}

// What one execution of a subgraph's plan holds: its own values, the
// enclosing scopes' values it reads (ExecPlan::value), its counts.
struct SubgraphStorage {
  std::vector<Tensor> values;
  std::vector<const Tensor*> outer;
  std::vector<int> remaining;
};

void clear(SubgraphStorage& s) { s.values.clear(); }  // releases the tensors; the rest is plain data

// An object of this thread's, reused: one per nesting level of its user
// (an If's branch runs its nodes, and may run a branch of its own, inside
// the If's execution), so that its vectors keep their capacity from one use
// to the next. clear(T&) empties it after each use, however the use ends.
// Silero VAD runs 76 nodes and a dozen If branches of one or two nodes a
// run, most of them a few hundred nanoseconds long: a fresh KernelContext
// per node, and fresh values and counts per branch, cost more allocations
// and frees than its small kernels made.
template <class T>
class PerDepth {
 public:
  PerDepth() {
    if (depth_ == items_.size()) items_.push_back(std::make_unique<T>());
    item_ = items_[depth_++].get();
  }
  ~PerDepth() {
    clear(*item_);
    --depth_;
  }
  PerDepth(const PerDepth&) = delete;
  PerDepth& operator=(const PerDepth&) = delete;
  T& get() { return *item_; }

 private:
  T* item_;
  static thread_local std::vector<std::unique_ptr<T>> items_;  // by depth; stable addresses
  static thread_local size_t depth_;
};
template <class T>
thread_local std::vector<std::unique_ptr<T>> PerDepth<T>::items_;
template <class T>
thread_local size_t PerDepth<T>::depth_ = 0;

// The SubgraphRunner of one execution of a node with GRAPH attributes:
// runs a subgraph's plan sequentially on the calling thread, its values
// from enclosing scopes read where they lie, through the node's implicit
// inputs.
class NodeSubgraphs final : public SubgraphRunner {
 public:
  NodeSubgraphs(const ExecPlan& plan, const NodePlan& np, const std::vector<Tensor>& values, const Observers& obs,
                const RunContext& run)
      : outer_(plan), np_(np), values_(values), outer_outer_(run.outer), obs_(obs), run_{run.run_id, 0, 0} {
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
    PerDepth<SubgraphStorage> storage;
    std::vector<Tensor>& values = storage.get().values;
    values.resize(plan.num_slots);
    std::vector<const Tensor*>& outer = storage.get().outer;
    outer.resize(plan.outer_slots.size());
    for (size_t i = 0; i < outer.size(); ++i)
      outer[i] = &outer_.value(values_, np_.implicit_slots[sp->outer_from[i]], outer_outer_);
    for (size_t i = 0; i < inputs.size(); ++i) values[static_cast<size_t>(plan.input_slots[i])] = std::move(inputs[i]);
    RunContext run = run_;
    run.outer = outer.data();
    // The run reserved correlation ids for the top-level plan's positions
    // only: each execution of a subgraph takes a block for its nodes.
    if (obs_.count) {
      run.shape_epoch = sp->epochs->epoch_for(plan, values, run.outer, plan.input_slots, sp->epoch_outer_slots);
      run.epochs = sp->epochs.get();
      if (!plan.nodes.empty()) run.first_node_id = epprof_correlation_id_block(plan.nodes.size());
    }
    std::optional<SubgraphBlock> block;
    if (run.ask_for_blocks && run.shape_epoch && run.first_node_id) block.emplace(*obs_.list[0], *sp, run);
    storage.get().remaining.resize(plan.num_slots);
    Releaser<int> rel(plan, storage.get().remaining);
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      run_node(plan, i, values, obs_, run);
      rel.after_node(plan, plan.nodes[i], values);
    }
    return plan.take_outputs(values, run.outer);
  }

 private:
  const ExecPlan& outer_;  // the plan np_ is in, whose values values_ are
  const NodePlan& np_;
  const std::vector<Tensor>& values_;
  const Tensor* const* outer_outer_;  // the values outer_'s execution reads from its enclosing scopes
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

}  // namespace

void run_node(const ExecPlan& plan, size_t position, std::vector<Tensor>& values, const Observers& obs,
              const RunContext& run) {
  const NodePlan& np = plan.nodes[position];
  PerDepth<KernelContext> reused;
  KernelContext& ctx = reused.get();
  ctx.inputs.resize(np.in_slots.size(), nullptr);
  for (size_t i = 0; i < np.in_slots.size(); ++i)
    if (np.in_slots[i] >= 0) ctx.inputs[i] = &plan.value(values, np.in_slots[i], run.outer);
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

std::vector<Tensor> ExecPlan::take_outputs(std::vector<Tensor>& values, const Tensor* const* outer) const {
  std::vector<Tensor> outputs;
  outputs.reserve(output_slots.size());
  for (auto it = output_slots.begin(); it != output_slots.end(); ++it) {
    const auto s = static_cast<size_t>(*it);
    const bool owned = constants[s].empty() && !(outer && outer_index[s] >= 0);
    if (owned && std::find(it + 1, output_slots.end(), *it) == output_slots.end())
      outputs.push_back(std::move(values[s]));
    else
      outputs.push_back(value(values, *it, outer));
  }
  return outputs;
}

std::unique_ptr<Executor> make_sequential_executor() { return std::make_unique<SequentialExecutor>(); }
std::unique_ptr<Executor> make_parallel_executor(int threads) { return std::make_unique<ParallelExecutor>(threads); }

}  // namespace epprof::rt::detail
