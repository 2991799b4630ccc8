#include "epprof/rt/profiling.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "dispatch_service.h"
#include "epprof/rt/error.h"
#include "epprof/rt/graph.h"
#include "epprof/rt/tensor.h"
#include "memory_hooks.h"

namespace epprof::rt {
namespace {

// Names are byte strings: a node name may hold NUL bytes, and keeps them.
epprof_name_id intern(const std::string& s) {
  epprof_name_id id = 0;
  epprof_status_release(epprof_intern_n(s.data(), s.size(), &id));
  return id;
}

// Arg keys, interned once per process.
struct Keys {
  epprof_name_id op_name = intern("op_name");
  epprof_name_id provider = intern("provider");
  epprof_name_id node_index = intern("node_index");
  epprof_name_id activation_size = intern("activation_size");
  epprof_name_id parameter_size = intern("parameter_size");
  epprof_name_id output_size = intern("output_size");
  epprof_name_id input_type_shape = intern("input_type_shape");
  epprof_name_id output_type_shape = intern("output_type_shape");
  epprof_name_id error = intern("error");
  epprof_name_id replay_pass = intern("replay_pass");
  epprof_name_id replay_of = intern("replay_of");
  epprof_name_id run_id = intern("run_id");
  epprof_name_id model_loading = intern("model_loading_uri");
  epprof_name_id session_init = intern("session_initialization");
  epprof_name_id model_run = intern("model_run");
  epprof_name_id sequential = intern("SequentialExecutor::Execute");
  epprof_name_id parallel = intern("ParallelExecutor::Execute");
};
const Keys& keys() {
  static const Keys k;
  return k;
}

epprof_arg str_arg(epprof_name_id key, const char* value) {
  epprof_arg a{key, EPPROF_ARG_STRING, {}};
  a.value.str = value;
  return a;
}
epprof_arg int_arg(epprof_name_id key, int64_t value) {
  epprof_arg a{key, EPPROF_ARG_INT64, {}};
  a.value.i64 = value;
  return a;
}
// Interned values: the event stores the id and copies no text.
epprof_arg name_arg(epprof_name_id key, epprof_name_id value) {
  epprof_arg a{key, EPPROF_ARG_NAME, {}};
  a.value.name = value;
  return a;
}
epprof_arg json_name_arg(epprof_name_id key, epprof_name_id value) {
  epprof_arg a{key, EPPROF_ARG_JSON_NAME, {}};
  a.value.name = value;
  return a;
}
epprof_arg json_arg(epprof_name_id key, const std::string& value) {
  epprof_arg a{key, EPPROF_ARG_JSON, {}};
  a.value.str = value.c_str();
  return a;
}

void append_type_shape(std::string& out, const Tensor& t) {
  out += "{\"";
  out += type_name(t.dtype());
  out += "\":[";
  for (size_t d = 0; d < t.rank(); ++d) {
    if (d) out += ',';
    out += std::to_string(t.dim(d));
  }
  out += "]}";
}

}  // namespace

std::string type_shape_json(const std::vector<const Tensor*>& tensors) {
  std::string out = "[";
  for (const Tensor* t : tensors) {
    if (!t) continue;
    if (out.size() > 1) out += ',';
    append_type_shape(out, *t);
  }
  return out + "]";
}

std::string type_shape_json(const std::vector<Tensor>& tensors) {
  std::string out = "[";
  for (const Tensor& t : tensors) {
    if (t.empty()) continue;
    if (out.size() > 1) out += ',';
    append_type_shape(out, t);
  }
  return out + "]";
}

// What node_begin and node_end read, packed two to a cache line in node
// order. They run right after kernels that have usually evicted the caches;
// in a sequential run the next node's entry is often in the line the last
// one brought in, and the rest of what a node needs is in NodeCache.
struct alignas(32) ProfilingObserver::HotNode {
  std::atomic<const Node*> owner{nullptr};  // set once; `event` is its event name
  epprof_name_id event = 0;
  // The owner's arg set for a shape epoch, epoch << kSetBits | set: an
  // execution in that epoch reads nothing else. 0: none.
  static constexpr unsigned kSetBits = 20;  // arg set ids are below 2^20
  std::atomic<uint64_t> epoch_args{0};

  // The args for `info` from epoch_args, or 0.
  epprof_arg_set_id args_in_epoch(const NodeInfo& info) const {
    // Acquire: the set id was published by libepprof before it was stored here.
    const uint64_t e = epoch_args.load(std::memory_order_acquire);
    if (!info.shape_epoch || e >> kSetBits != info.shape_epoch || owner.load(std::memory_order_relaxed) != &info.node)
      return 0;
    return epprof_arg_set_id(e & ((uint64_t(1) << kSetBits) - 1));
  }
  void remember(const NodeInfo& info, epprof_arg_set_id args) {
    if (info.shape_epoch && info.shape_epoch < (uint64_t(1) << (64 - kSetBits)) && args && args < (1u << kSetBits) &&
        owner.load(std::memory_order_relaxed) == &info.node)
      epoch_args.store(info.shape_epoch << kSetBits | args, std::memory_order_release);
  }
};

// What is constant per node, computed on its first execution: the interned
// event name, op type and provider, and for the last shapes seen the
// interned type/shape JSON and byte sizes. Nodes usually see the same shapes
// every run, so node_end builds no strings and copies no text: its args are
// one interned arg set. The HotNode's owner is the node these names belong
// to; the other nodes at the same index (a subgraph's, which count from 0
// as the main graph's do, or another session's) take a slower, locked path
// that finds what their first execution built.
struct ProfilingObserver::NodeCache {
  struct Names {
    const Node* node;
    epprof_name_id event, op_type, provider;
    epprof_name_id name;          // the node's own
    epprof_arg_set_id declared;   // a set of no args that declares the node; 0 if the table was full
    DispatchNode dispatch;        // the node as sessions see it

    epprof_node_desc desc() const {
      epprof_node_desc d{};
      d.size = sizeof d;
      d.name = name;
      d.op_type = op_type;
      d.index = uint32_t(node->index);
      d.ep = provider;
      return d;
    }
  };
  struct Shapes {
    static constexpr size_t kInline = 24;
    const Node* node = nullptr;
    uint32_t signature_size = 0;
    epprof_arg_set_id args = 0;  // the node event's args; 0 if a table was full
    int64_t inline_signature[kInline];  // dtype, rank, dims of each input, then each output
    std::vector<int64_t> big_signature;  // when it does not fit inline
    epprof_name_id inputs_id = 0, outputs_id = 0;  // 0 if the string table is full
    int64_t activation_bytes = 0, parameter_bytes = 0, output_bytes = 0;
    std::string inputs_json, outputs_json;
    const int64_t* signature() const { return signature_size <= kInline ? inline_signature : big_signature.data(); }
  };

  // The args of a node event, ONNX Runtime's, in its order, then (when its
  // set was interned) the set that declares the node, for attribution; `n`
  // says how many.
  struct EventArgs {
    std::array<epprof_arg, 9> a;
    size_t n;
  };
  static EventArgs event_args(const Names& names, const Node& node, const Shapes& s) {
    EventArgs args{};
    const auto shaped = shape_args(names, node, s);
    std::copy(shaped.begin(), shaped.end(), args.a.begin());
    args.n = shaped.size();
    if (names.declared) {
      args.a[8] = {0, EPPROF_ARG_SET, {}};
      args.a[8].value.set = names.declared;
      args.n = 9;
    }
    return args;
  }

  // The args ONNX Runtime writes, which the set of a node's shapes holds.
  static std::array<epprof_arg, 8> shape_args(const Names& names, const Node& node, const Shapes& s) {
    const Keys& k = keys();
    return {
        name_arg(k.op_name, names.op_type),
        name_arg(k.provider, names.provider),
        int_arg(k.node_index, int64_t(node.index)),
        int_arg(k.activation_size, s.activation_bytes),
        int_arg(k.parameter_size, s.parameter_bytes),
        int_arg(k.output_size, s.output_bytes),
        s.inputs_id ? json_name_arg(k.input_type_shape, s.inputs_id) : json_arg(k.input_type_shape, s.inputs_json),
        s.outputs_id ? json_name_arg(k.output_type_shape, s.outputs_id)
                     : json_arg(k.output_type_shape, s.outputs_json),
    };
  }

  Names names{};  // the HotNode owner's, written before it is published
  std::atomic<const Shapes*> shapes{nullptr};  // the owner's last
  std::mutex mu;  // guards the lists below and the first `names`
  std::vector<std::unique_ptr<Names>> other_names;  // nodes of other sessions sharing this index
  std::vector<std::unique_ptr<Shapes>> all_shapes;  // every (node, shapes) seen, each once

  const Names& names_for(HotNode& hot, const NodeInfo& info) {
    if (hot.owner.load(std::memory_order_acquire) == &info.node) return names;
    return names_slow(hot, info);
  }

  // A node that is not the HotNode's owner (a subgraph's node at the same
  // index, another session's) finds its names under the lock; they are
  // built once, on its first execution.
  [[gnu::noinline]] const Names& names_slow(HotNode& hot, const NodeInfo& info) {
    std::lock_guard<std::mutex> lock(mu);
    const Node* owner = hot.owner.load(std::memory_order_relaxed);
    if (owner == &info.node) return names;
    if (owner)
      for (const auto& n : other_names)
        if (n->node == &info.node) return *n;
    Names fresh{&info.node, intern(info.node.name + "_kernel_time"), intern(info.node.op_type),
                intern(info.provider), intern(info.node.name), 0, {}};
    DispatchNode& d = fresh.dispatch;
    d.node = fresh.name;
    d.op_type = fresh.op_type;
    d.ep = fresh.provider;
    d.kernel = intern(info.provider + ":" + info.node.op_type);
    const char* kernel_name = epprof_name(d.kernel);
    d.kernel_name = kernel_name ? kernel_name : "";
    for (const auto& kv : info.node.attributes) d.has_subgraphs |= kv.second.kind == Attribute::Kind::Graph;
    const epprof_node_desc desc = fresh.desc();
    if (epprof_status* st = epprof_node_args_intern(&desc, nullptr, 0, &fresh.declared)) {
      epprof_status_release(st);  // the table is full: the node's device work goes unattributed to it
      fresh.declared = 0;
    }
    if (!owner) {
      names = fresh;
      hot.event = fresh.event;
      hot.owner.store(&info.node, std::memory_order_release);
      return names;
    }
    other_names.push_back(std::make_unique<Names>(fresh));
    return *other_names.back();
  }

  static bool matches(const Shapes& s, const Node& node, const NodeIo& io) {
    if (s.node != &node) return false;
    const int64_t* sig = s.signature();
    size_t i = 0;
    auto same = [&](const Tensor& t) {
      if (i + 2 + t.rank() > s.signature_size) return false;
      if (sig[i++] != int64_t(t.dtype()) || sig[i++] != int64_t(t.rank())) return false;
      for (size_t d = 0; d < t.rank(); ++d)
        if (sig[i++] != t.dim(d)) return false;
      return true;
    };
    for (const Tensor* t : io.inputs)
      if (t && !same(*t)) return false;
    for (const Tensor& t : io.outputs)
      if (!t.empty() && !same(t)) return false;
    return i == s.signature_size;
  }

  // The owner's last shapes are one load away; any other (node, shapes)
  // seen before is found under the lock, and each is built only once, so a
  // node whose shapes alternate, or that shares its index, neither rebuilds
  // its strings nor grows the list on every execution.
  const Shapes& shapes_for(HotNode& hot, const NodeInfo& info, const NodeIo& io) {
    const Shapes* s = shapes.load(std::memory_order_acquire);
    if (s && matches(*s, info.node, io)) return *s;
    return shapes_slow(hot, info, io);
  }

  [[gnu::noinline]] const Shapes& shapes_slow(HotNode& hot, const NodeInfo& info, const NodeIo& io) {
    const Names& node_names = names_for(hot, info);  // before the lock: it takes it too
    const Node& node = info.node;
    const bool owner = hot.owner.load(std::memory_order_acquire) == &node;
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& seen : all_shapes)
      if (matches(*seen, node, io)) {
        if (owner) shapes.store(seen.get(), std::memory_order_release);
        return *seen;
      }
    auto fresh = std::make_unique<Shapes>();
    fresh->node = &node;
    std::vector<int64_t> sig;
    auto sign = [&](const Tensor& t) {
      sig.push_back(int64_t(t.dtype()));
      sig.push_back(int64_t(t.rank()));
      for (size_t d = 0; d < t.rank(); ++d) sig.push_back(t.dim(d));
    };
    for (const Tensor* t : io.inputs)
      if (t) sign(*t);
    for (const Tensor& t : io.outputs)
      if (!t.empty()) sign(t);
    fresh->signature_size = uint32_t(sig.size());
    if (sig.size() <= Shapes::kInline)
      std::copy(sig.begin(), sig.end(), fresh->inline_signature);
    else
      fresh->big_signature = std::move(sig);
    fresh->inputs_json = type_shape_json(io.inputs);
    fresh->outputs_json = type_shape_json(io.outputs);
    fresh->inputs_id = intern(fresh->inputs_json.c_str());
    fresh->outputs_id = intern(fresh->outputs_json.c_str());
    fresh->activation_bytes = int64_t(io.activation_bytes());
    fresh->parameter_bytes = int64_t(io.parameter_bytes());
    fresh->output_bytes = int64_t(io.output_bytes());
    const auto args = shape_args(node_names, node, *fresh);
    const epprof_node_desc desc = node_names.desc();
    if (epprof_status* st = epprof_node_args_intern(&desc, args.data(), args.size(), &fresh->args)) {
      epprof_status_release(st);  // node_end passes the args one by one instead
      fresh->args = 0;
    }
    all_shapes.push_back(std::move(fresh));
    if (owner) shapes.store(all_shapes.back().get(), std::memory_order_release);
    return *all_shapes.back();
  }
};

// kBlockNodes nodes' state: the hot entries together, then the rest.
struct ProfilingObserver::Block {
  static_assert(sizeof(HotNode) == 32, "two HotNodes to a cache line");
  HotNode hot[kBlockNodes];
  NodeCache cold[kBlockNodes];
};

// A node whose index is past the blocks.
struct ProfilingObserver::Spilled {
  HotNode hot;
  NodeCache cold;
};

// Which run holds the event block, and what the block needs: the event
// descriptions (name, arg set) of each shape epoch's node executions, by
// position in the plan. A run of an epoch not seen whole yet collects them
// while its node events take the general path; the epoch's later runs open
// the block with them. Epochs are unique in the process, so an epoch also
// names its session and plan. `held` says whether a run holds the block;
// the rest is touched only by the thread of the run that holds it.
struct ProfilingObserver::Runs {
  struct Epoch {
    uint64_t epoch;
    std::vector<epprof_event_desc> descs;
  };
  static constexpr size_t kMaxEpochs = 16;  // the newest are kept

  std::atomic<bool> held{false};
  std::vector<epprof_event_desc> collecting;  // by position; {0, 0}: not yet
  std::vector<std::unique_ptr<Epoch>> epochs;  // oldest first

  const Epoch* find(uint64_t epoch, size_t nodes) const {
    for (const auto& e : epochs)
      if (e->epoch == epoch && e->descs.size() == nodes) return e.get();
    return nullptr;
  }
};

// A subgraph plan's event block (subgraph_event_block). The execution that
// holds it (holder: its first correlation id) either records into it or,
// for an epoch without descriptions yet, runs through the hooks and then
// describes the epoch from the args each node left for it.
struct ProfilingObserver::SubgraphRuns {
  Runs runs;  // held, and the epochs' descriptions (not `collecting`)
  epprof_event_block block{};
  std::atomic<uint64_t> holder{0};  // 0: not held
  // The holder's, on its thread:
  size_t count = 0;
  bool open = false;
  SubgraphRuns* outer = nullptr;  // open_subgraphs_ below this one
};

thread_local ProfilingObserver::SubgraphRuns* ProfilingObserver::open_subgraphs_ = nullptr;

ProfilingObserver::ProfilingObserver(const ProfilingOptions& options)
    : use_blocks_(options.event_blocks && options.plugins.empty() && !options.sessions &&
                  !options.trace_path.empty()),
      runs_(use_blocks_ ? std::make_unique<Runs>() : nullptr),
      path_(options.trace_path) {
  if (options.trace_path.empty()) {
    if (!options.sessions)
      throw Error(ErrorKind::BadInput, "profiling: neither a trace_path nor sessions: nothing to observe");
    dispatch_ = std::make_unique<DispatchService>(epprof_profiler_t{}, options.counter_device);
    return;
  }
  epprof_profiler_config c{};
  c.size = sizeof c;
  c.trace_path = options.trace_path.c_str();
  c.scope_name = options.scope_name.c_str();
  c.memory_budget_bytes = options.memory_budget_bytes;
  c.timestamp_format = options.integer_timestamps ? EPPROF_TIMESTAMPS_INTEGER_US : EPPROF_TIMESTAMPS_FRACTIONAL_US;
  c.trace_format = options.trace_format;
  c.filter = options.filter;
  auto check = [&](epprof_status* st) {
    if (!st) return;
    std::string msg = epprof_status_get_message(st);
    epprof_status_release(st);
    if (profiler_.handle) epprof_status_release(epprof_profiler_destroy(profiler_));
    profiler_ = {};
    throw Error(ErrorKind::Io, "profiling: " + msg);
  };
  check(epprof_profiler_create(&c, &profiler_));
  for (epprof_plugin_t p : options.plugins) check(epprof_profiler_add_plugin(profiler_, p));
  for (const auto& kv : options.metadata)
    check(epprof_profiler_set_metadata(profiler_, kv.first.c_str(), kv.second.c_str()));
  (void)keys();  // intern before the first event
  check(epprof_profiler_start(profiler_));
  if (options.memory) memory_ = std::make_unique<MemoryTracking>(profiler_);
  if (options.sessions) dispatch_ = std::make_unique<DispatchService>(profiler_, options.counter_device);
}

// Tensor allocations to the profiler, tagged by what the session is doing:
// it listens on the thread that runs a session phase (initializers) or a
// run (outputs) while it lasts, and the pool threads listen as that thread
// for the nodes they run; their frees reach it on any thread.
class ProfilingObserver::MemoryTracking {
 public:
  explicit MemoryTracking(epprof_profiler_t p) : profiler_(p) {
    epprof_status_release(epprof_intern("cpu", &device_));
    memory::report_pool_chunks({profiler_, device_, &tag_});  // what the runtime's arena holds already
  }
  ~MemoryTracking() { memory::forget_pool_listener(profiler_); }
  MemoryTracking(const MemoryTracking&) = delete;
  MemoryTracking& operator=(const MemoryTracking&) = delete;
  // Listens on the calling thread until leave(), tagging as `tag`.
  void enter(epprof_memory_tag tag) noexcept {
    tag_.store(tag, std::memory_order_relaxed);
    memory::listen({profiler_, device_, &tag_});
  }
  void leave() noexcept { memory::unlisten(profiler_); }

 private:
  epprof_profiler_t profiler_;
  epprof_name_id device_ = 0;
  std::atomic<epprof_memory_tag> tag_{EPPROF_MEMORY_OTHER};  // of the phase or run in progress
};

ProfilingObserver::~ProfilingObserver() {
  if (held_run_.load(std::memory_order_relaxed) & kInBlock)  // destroyed during a run
    epprof_status_release(epprof_event_block_close(&block_));
  if (profiler_.handle) epprof_status_release(epprof_profiler_destroy(profiler_));
  for (auto& b : blocks_) delete b.load();
}

epprof_trace_stats ProfilingObserver::finish() {
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  if (finished_) throw Error(ErrorKind::Io, "profiling: finish() called twice");
  finished_ = true;
  if (!profiler_.handle) return stats;  // sessions only
  epprof_status* st = epprof_profiler_stop(profiler_, &stats);
  if (st) {
    std::string msg = epprof_status_get_message(st);
    epprof_status_release(st);
    throw Error(ErrorKind::Io, "profiling: " + msg);
  }
  return stats;
}

uint64_t ProfilingObserver::session_errors() const { return dispatch_ ? dispatch_->errors() : 0; }
uint64_t ProfilingObserver::dispatches_counted() const { return dispatch_ ? dispatch_->dispatches_counted() : 0; }

void ProfilingObserver::report_rejected(epprof_status* status) noexcept {
  if (!warned_.exchange(true))
    std::fprintf(stderr, "epprof runtime: profiling event rejected: %s (further rejections not shown)\n",
                 epprof_status_get_message(status));
  epprof_status_release(status);
}

ProfilingObserver::NodeState ProfilingObserver::node_state(size_t index) {
  const size_t b = index / kBlockNodes;
  if (__builtin_expect(b < kBlocks, 1))
    if (Block* block = blocks_[b].load(std::memory_order_acquire))
      return {block->hot[index % kBlockNodes], block->cold[index % kBlockNodes]};
  return node_state_slow(index);
}

ProfilingObserver::NodeState ProfilingObserver::node_state_slow(size_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t b = index / kBlockNodes;
  if (b >= kBlocks) {  // a graph of over a million nodes
    auto& spilled = overflow_[index];
    if (!spilled) spilled = std::make_unique<Spilled>();
    return {spilled->hot, spilled->cold};
  }
  Block* block = blocks_[b].load(std::memory_order_relaxed);
  if (!block) {
    block = new Block;
    blocks_[b].store(block, std::memory_order_release);
  }
  return {block->hot[index % kBlockNodes], block->cold[index % kBlockNodes]};
}

void ProfilingObserver::session_phase_begin(const SessionPhaseInfo& info) {
  if (memory_) memory_->enter(EPPROF_MEMORY_INITIALIZER);
  const Keys& k = keys();
  report(epprof_event_begin(profiler_, EPPROF_CATEGORY_SESSION,
                            info.phase == SessionPhase::ModelLoading ? k.model_loading : k.session_init,
                            info.correlation_id));
  if (dispatch_) dispatch_->open_span(info.correlation_id);
}

void ProfilingObserver::session_phase_end(const SessionPhaseInfo& info) {
  if (dispatch_) {
    const Keys& k = keys();
    dispatch_->close_span(info.correlation_id,
                          info.phase == SessionPhase::ModelLoading ? k.model_loading : k.session_init, 0);
  }
  report(epprof_event_end(profiler_, info.correlation_id, nullptr, 0));
  if (memory_) memory_->leave();
}

void ProfilingObserver::run_begin(const RunInfo& info) {
  if (memory_) memory_->enter(EPPROF_MEMORY_OUTPUT);
  const Keys& k = keys();
  report(epprof_event_begin(profiler_, EPPROF_CATEGORY_SESSION, k.model_run, info.correlation_id));
  const bool parallel = info.executor_name[0] == 'P';
  report(epprof_event_begin(profiler_, EPPROF_CATEGORY_SESSION, parallel ? k.parallel : k.sequential,
                            info.execute_correlation_id));
  if (use_blocks_ && info.nodes_on_calling_thread && info.shape_epoch) hold_run(info);
  if (dispatch_) dispatch_->open_span(info.correlation_id);
}

void ProfilingObserver::run_end(const RunInfo& info) {
  if (dispatch_) dispatch_->close_span(info.correlation_id, keys().model_run, info.run_id);
  const uint64_t held = held_run_.load(std::memory_order_relaxed);
  if (held && held >> kFirstShift == info.first_node_correlation_id) release_run(info);
  report(epprof_event_end(profiler_, info.execute_correlation_id, nullptr, 0));
  const epprof_arg run_id = int_arg(keys().run_id, int64_t(info.run_id));
  report(epprof_event_end(profiler_, info.correlation_id, &run_id, 1));
  if (memory_) memory_->leave();
}

epprof_event_block* ProfilingObserver::node_event_block(const RunInfo& info) {
  const uint64_t held = held_run_.load(std::memory_order_relaxed);
  return held & kInBlock && held >> kFirstShift == info.first_node_correlation_id ? &block_ : nullptr;
}

void ProfilingObserver::node_block_rejected(epprof_status* status) { report(status); }

ProfilingObserver::SubgraphRuns* ProfilingObserver::subgraph_runs(const void* subgraph) {
  std::lock_guard<std::mutex> lock(subgraphs_mu_);
  try {
    auto& sr = subgraphs_[subgraph];
    if (!sr) sr = std::make_unique<SubgraphRuns>();
    return sr.get();
  } catch (const std::bad_alloc&) {
    return nullptr;  // this execution takes the hooks
  }
}

epprof_event_block* ProfilingObserver::subgraph_event_block(const SubgraphRunInfo& info) {
  if (!use_blocks_ || info.num_nodes == 0 || info.num_nodes >= (uint64_t(1) << kCountBits) || !info.shape_epoch)
    return nullptr;
  SubgraphRuns* sr = subgraph_runs(info.subgraph);
  if (!sr || sr->runs.held.exchange(true, std::memory_order_acquire)) return nullptr;  // another execution has it
  sr->holder.store(info.first_node_correlation_id, std::memory_order_relaxed);
  sr->count = info.num_nodes;
  sr->open = false;
  sr->outer = open_subgraphs_;
  open_subgraphs_ = sr;
  if (const Runs::Epoch* e = sr->runs.find(info.shape_epoch, info.num_nodes)) {
    epprof_status* st = epprof_event_block_open(profiler_, EPPROF_CATEGORY_NODE, info.first_node_correlation_id,
                                                info.num_nodes, e->descs.data(), &sr->block);
    if (!st) {
      sr->open = true;
      return &sr->block;
    }
    report(st);
  }
  return nullptr;  // through the hooks; subgraph_run_end describes the epoch
}

void ProfilingObserver::subgraph_run_end(const SubgraphRunInfo& info) {
  SubgraphRuns* sr = open_subgraphs_;
  if (!sr || sr->holder.load(std::memory_order_relaxed) != info.first_node_correlation_id) return;  // not held
  open_subgraphs_ = sr->outer;
  if (sr->open) {
    report(epprof_event_block_close(&sr->block));
    sr->open = false;
  } else {
    describe_epoch(*sr, info);
  }
  sr->holder.store(0, std::memory_order_relaxed);
  sr->runs.held.store(false, std::memory_order_release);
}

// After an execution through the hooks: the epoch's descriptions, when
// every node the executor will record into the block left its event name
// and its args for the epoch. The others (they hold subgraphs, or their
// shapes vary) get the hooks, never the block: their name alone.
void ProfilingObserver::describe_epoch(SubgraphRuns& sr, const SubgraphRunInfo& info) {
  if (sr.runs.find(info.shape_epoch, info.num_nodes)) return;  // described; its block did not open
  try {
    auto e = std::make_unique<Runs::Epoch>(Runs::Epoch{info.shape_epoch, {}});
    e->descs.reserve(info.num_nodes);
    for (size_t pos = 0; pos < info.num_nodes; ++pos) {
      const NodeState n = node_state(info.node_indices[pos]);
      if (n.hot.owner.load(std::memory_order_acquire) != info.nodes[pos]) return;  // not executed yet
      const uint64_t args = n.hot.epoch_args.load(std::memory_order_acquire);
      epprof_event_desc d{n.hot.event, 0};
      if (info.in_block[pos]) {
        if (args >> HotNode::kSetBits != info.shape_epoch) return;
        d.args = epprof_arg_set_id(args & ((uint64_t(1) << HotNode::kSetBits) - 1));
      }
      e->descs.push_back(d);
    }
    std::vector<std::unique_ptr<Runs::Epoch>>& epochs = sr.runs.epochs;
    if (epochs.size() == Runs::kMaxEpochs) epochs.erase(epochs.begin());
    epochs.push_back(std::move(e));
  } catch (const std::bad_alloc&) {
    // A later execution of the epoch describes it.
  }
}

// Takes the event block for this run, if no other run holds it: opens it
// when the run's epoch has its descriptions, else collects them.
void ProfilingObserver::hold_run(const RunInfo& info) {
  const uint64_t n = info.num_nodes, first = info.first_node_correlation_id;
  if (n == 0 || n >= (uint64_t(1) << kCountBits) || first == 0 || first >> (64 - kFirstShift)) return;
  if (runs_->held.exchange(true, std::memory_order_acquire)) return;  // another run has it
  Runs& r = *runs_;
  uint64_t in_block = 0;
  if (const Runs::Epoch* e = r.find(info.shape_epoch, n)) {
    epprof_status* st = epprof_event_block_open(profiler_, EPPROF_CATEGORY_NODE, first, n, e->descs.data(), &block_);
    if (st) {  // the run's events take the general path
      report(st);
      r.held.store(false, std::memory_order_release);
      return;
    }
    in_block = kInBlock;
  } else {
    try {
      r.collecting.assign(n, epprof_event_desc{0, 0});
    } catch (const std::bad_alloc&) {
      r.held.store(false, std::memory_order_release);
      return;
    }
  }
  held_run_.store(first << kFirstShift | in_block | n, std::memory_order_relaxed);
}

// Closes the block, or keeps the descriptions the run collected when it
// found every one.
void ProfilingObserver::release_run(const RunInfo& info) {
  Runs& r = *runs_;
  const bool in_block = held_run_.load(std::memory_order_relaxed) & kInBlock;
  held_run_.store(0, std::memory_order_relaxed);
  if (in_block) {
    report(epprof_event_block_close(&block_));
    // Only the run that holds the block counts: no read-modify-write needed.
    block_runs_.store(block_runs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } else if (std::all_of(r.collecting.begin(), r.collecting.end(),
                         [](const epprof_event_desc& d) { return d.name != 0 && d.args != 0; })) {
    try {
      auto e = std::make_unique<Runs::Epoch>(Runs::Epoch{info.shape_epoch, r.collecting});
      if (r.epochs.size() == Runs::kMaxEpochs) r.epochs.erase(r.epochs.begin());
      r.epochs.push_back(std::move(e));
    } catch (const std::bad_alloc&) {
      // A later run of the epoch collects them again.
    }
  }
  r.held.store(false, std::memory_order_release);
}

void ProfilingObserver::collect(size_t position, epprof_name_id event, epprof_arg_set_id args) {
  runs_->collecting[position] = epprof_event_desc{event, args};
}

// node_begin and node_end are `hot`: the linker places them side by side.
// A run in the event block records its node events by position and reads
// nothing else of the observer.
[[gnu::hot]] void ProfilingObserver::node_begin(const NodeInfo& info) {
  bool in_block;
  const size_t position = held_position(info, &in_block);
  if (position != kNotHeld && in_block) {  // never with sessions: they turn blocks off
    report(epprof_event_block_begin(&block_, position));
    return;
  }
  if (__builtin_expect(dispatch_ != nullptr, 0)) {
    node_begin_with_sessions(info);
    return;
  }
  trace_node_begin(info);
}

void ProfilingObserver::trace_node_begin(const NodeInfo& info) {
  const NodeState n = node_state(info.node_index);
  const epprof_name_id event = __builtin_expect(n.hot.owner.load(std::memory_order_acquire) == &info.node, 1)
                                   ? n.hot.event
                                   : n.cold.names_slow(n.hot, info).event;
  report(epprof_event_begin(profiler_, EPPROF_CATEGORY_NODE, event, info.correlation_id));
}

[[gnu::hot]] void ProfilingObserver::node_end(const NodeInfo& info, const NodeIo& io) {
  bool in_block;
  const size_t position = held_position(info, &in_block);
  if (position != kNotHeld && in_block) {
    if (__builtin_expect(info.shape_epoch != 0, 1))
      report(epprof_event_block_end(&block_, position));
    else
      block_end_outside_epoch(info, io, position);
    return;
  }
  if (__builtin_expect(dispatch_ != nullptr, 0)) {
    node_end_with_sessions(info, io);
    return;
  }
  trace_node_end(info, io, position);
}

void ProfilingObserver::trace_node_end(const NodeInfo& info, const NodeIo& io, size_t position) {
  const NodeState n = node_state(info.node_index);
  epprof_arg set{0, EPPROF_ARG_SET, {}};
  set.value.set = n.hot.args_in_epoch(info);
  if (__builtin_expect(set.value.set != 0 && position == kNotHeld, 1)) {
    report(epprof_event_end(profiler_, info.correlation_id, &set, 1));
    return;
  }
  node_end_slow(info, io, n, position);
}

// The profiler's node event encloses the dispatch service's counting.
void ProfilingObserver::node_begin_with_sessions(const NodeInfo& info) {
  if (profiler_.handle) trace_node_begin(info);
  const NodeState n = node_state(info.node_index);
  dispatch_->node_begin(info, n.cold.names_for(n.hot, info).dispatch);
}

void ProfilingObserver::node_end_with_sessions(const NodeInfo& info, const NodeIo& io) {
  const bool dispatched = dispatch_->node_counted(info, io);
  if (profiler_.handle) trace_node_end(info, io, kNotHeld);
  if (dispatched) dispatch_->node_recorded(info);
}

// `position`: the node's in the run that collects its epoch's descriptions,
// or kNotHeld.
void ProfilingObserver::node_end_slow(const NodeInfo& info, const NodeIo& io, const NodeState& n,
                                      size_t position) {
  const NodeCache::Shapes& shapes = n.cold.shapes_for(n.hot, info, io);
  n.hot.remember(info, shapes.args);
  if (position != kNotHeld) collect(position, n.cold.names_for(n.hot, info).event, shapes.args);
  epprof_arg set{0, EPPROF_ARG_SET, {}};
  if (shapes.args) {
    set.value.set = shapes.args;
    report(epprof_event_end(profiler_, info.correlation_id, &set, 1));
    return;
  }
  const auto args = NodeCache::event_args(n.cold.names_for(n.hot, info), info.node, shapes);
  report(epprof_event_end(profiler_, info.correlation_id, args.a.data(), args.n));
}

// A node outside the run's shape epoch (downstream of an If on a computed
// condition, say) may have other shapes than when its block description was
// collected: it ends with the args of its own shapes.
void ProfilingObserver::block_end_outside_epoch(const NodeInfo& info, const NodeIo& io, size_t position) {
  const NodeState n = node_state(info.node_index);
  const NodeCache::Shapes& shapes = n.cold.shapes_for(n.hot, info, io);
  if (shapes.args) {
    epprof_arg set{0, EPPROF_ARG_SET, {}};
    set.value.set = shapes.args;
    report(epprof_event_block_end_with_args(&block_, position, &set, 1));
    return;
  }
  const auto args = NodeCache::event_args(n.cold.names_for(n.hot, info), info.node, shapes);
  report(epprof_event_block_end_with_args(&block_, position, args.a.data(), args.n));
}

// The args of a node event outside the node cache's fast paths: the node's
// op, provider and index, then the set that declares the node (so its
// device work is attributed to it), if the table had room for one. Returns
// how many of `out`'s 4 it filled.
size_t ProfilingObserver::node_args(const NodeInfo& info, epprof_arg* out) {
  const Keys& k = keys();
  const NodeState n = node_state(info.node_index);
  out[0] = str_arg(k.op_name, info.node.op_type.c_str());
  out[1] = str_arg(k.provider, info.provider.c_str());
  out[2] = int_arg(k.node_index, int64_t(info.node.index));
  out[3] = epprof_arg{0, EPPROF_ARG_SET, {}};
  out[3].value.set = n.cold.names_for(n.hot, info).declared;
  return out[3].value.set ? 4 : 3;
}

void ProfilingObserver::node_failed(const NodeInfo& info, const char* what) {
  if (dispatch_) dispatch_->node_failed(info);
  if (!profiler_.handle) return;
  epprof_arg args[5];
  size_t num_args = node_args(info, args);
  args[num_args++] = str_arg(keys().error, what);
  bool in_block;
  const size_t position = held_position(info, &in_block);
  if (position != kNotHeld && in_block) {
    report(epprof_event_block_end_with_args(&block_, position, args, num_args));
    return;
  }
  // A node the executor recorded into a subgraph's block. One of that
  // execution that took the hooks (it has subgraphs of its own) is not
  // begun in the block, which says so, and ends below.
  for (SubgraphRuns* sr = open_subgraphs_; sr; sr = sr->outer) {
    const uint64_t at = info.correlation_id - sr->holder.load(std::memory_order_relaxed);
    if (!sr->open || at >= sr->count) continue;
    if (epprof_status* st = epprof_event_block_end_with_args(&sr->block, at, args, num_args))
      epprof_status_release(st);
    else
      return;
    break;
  }
  report(epprof_event_end(profiler_, info.correlation_id, args, num_args));
}

// Whether the dispatch service wants the node's kernel run again (KERNEL
// replay of a multi-pass counter set).
uint32_t ProfilingObserver::kernel_replays(const NodeInfo& info) {
  return dispatch_ ? dispatch_->kernel_replays(info) : 0;
}

// A kernel replay is an execution of its own: a node event named
// "<node>_replay" under the replay's correlation id, which the EP profilers
// get in start_event/stop_event, so the device work the replay issues is
// attributed to it. Its args say which pass it was and which execution it
// replays (replay_of: that execution's correlation id). Not in an event
// block: replays come after the node's own event has ended.
void ProfilingObserver::replay_begin(const NodeInfo& info, const ReplayInfo& replay) {
  if (profiler_.handle)
    report(epprof_event_begin(profiler_, EPPROF_CATEGORY_NODE, intern(info.node.name + "_replay"),
                              replay.correlation_id));
  if (dispatch_) dispatch_->replay_begin(info, replay);
}

void ProfilingObserver::replay_end(const NodeInfo& info, const ReplayInfo& replay, const char* error) {
  if (dispatch_) dispatch_->replay_end(info, replay, error);
  if (!profiler_.handle) return;
  const Keys& k = keys();
  epprof_arg args[7];
  size_t num_args = node_args(info, args);
  args[num_args++] = int_arg(k.replay_pass, int64_t(replay.pass));
  args[num_args++] = int_arg(k.replay_of, int64_t(info.correlation_id));
  if (error) args[num_args++] = str_arg(k.error, error);
  report(epprof_event_end(profiler_, replay.correlation_id, args, num_args));
}

}  // namespace epprof::rt
