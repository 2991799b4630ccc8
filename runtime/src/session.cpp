#include "epprof/rt/session.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <tuple>
#include <thread>

#include "epprof/profiler.h"
#include "cpu_ep.h"
#include "executor.h"
#include "fusion.h"
#include "intra_op.h"
#include "shape_epochs.h"
#include "model.h"
#include "threading.h"

namespace epprof::rt {

struct Session::Impl {
  detail::Model model;
  SessionOptions options;
  std::vector<std::shared_ptr<ExecutionProvider>> providers;
  std::vector<std::string> provider_names;
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<size_t> node_provider;
  detail::ExecPlan plan;
  std::unique_ptr<detail::Executor> executor;
  std::atomic<uint64_t> next_run_id{1};
  std::unique_ptr<detail::ShapeEpochs> shape_epochs;
  int intra_op_threads = 1;  // options.intra_op_threads resolved (never 0)
  std::unique_ptr<detail::IntraOpPool> intra_op_pool;  // its workers; null with 1 thread
  Session::Fusions fusions;
};

namespace {

class PhaseScope {
 public:
  PhaseScope(RunObserver* obs, SessionPhase phase, const std::string& path)
      : obs_(obs), info_{phase, path, obs ? epprof_correlation_id_next() : 0} {
    if (obs_) obs_->session_phase_begin(info_);
  }
  ~PhaseScope() {
    if (obs_) obs_->session_phase_end(info_);
  }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  RunObserver* obs_;
  SessionPhaseInfo info_;
};

// What a model needs that no execution provider offers, grouped by (domain,
// op, opset): the whole gap in one error, not one op per failed attempt.
class UnclaimedOps {
 public:
  void add(const Node& node) {
    Entry& e = entries_[{node.domain, node.op_type, node.opset}];
    if (e.count++ == 0) e.first_node = node.name;
  }
  bool empty() const { return entries_.empty(); }

  std::string describe(const std::vector<std::string>& provider_names) const {
    std::string tried;
    for (const auto& n : provider_names) tried += (tried.empty() ? "" : ", ") + n;
    std::string msg = std::to_string(entries_.size()) + (entries_.size() == 1 ? " op" : " ops") +
                      " of the model have no kernel in any execution provider (tried: " + tried + "):";
    for (const auto& [key, e] : entries_) {
      const auto& [domain, op, opset] = key;
      msg += "\n  " + (domain.empty() ? op : domain + "." + op) + " (";
      msg += domain.empty() ? "opset " : "custom domain '" + domain + "', version ";
      msg += std::to_string(opset) + "): " + std::to_string(e.count) + (e.count == 1 ? " node" : " nodes") +
             ", first '" + e.first_node + "'";
    }
    return msg;
  }

 private:
  struct Entry {
    size_t count = 0;
    std::string first_node;
  };
  std::map<std::tuple<std::string, std::string, int>, Entry> entries_;
};

// The first provider that claims `node`, or providers.size() when none does.
size_t claiming_provider(const Session::Impl& s, const Node& node) {
  for (size_t p = 0; p < s.providers.size(); ++p)
    if (s.providers[p]->claims(node)) return p;
  return s.providers.size();
}

// Every node of `nodes` and of their subgraphs that no provider claims.
void collect_unclaimed(const Session::Impl& s, const std::vector<Node>& nodes, UnclaimedOps& unclaimed) {
  for (const Node& node : nodes) {
    if (claiming_provider(s, node) == s.providers.size()) unclaimed.add(node);
    for (const auto& kv : node.attributes)
      if (kv.second.kind == Attribute::Kind::Graph && kv.second.graph)
        collect_unclaimed(s, kv.second.graph->nodes, unclaimed);
  }
}

// Picks the first provider that claims `node` (its index in `provider`) and
// creates its kernel. Every node is known to be claimed (collect_unclaimed).
std::unique_ptr<Kernel> create_kernel(const Session::Impl& s, const Node& node, size_t& provider) {
  const size_t chosen = claiming_provider(s, node);
  if (chosen == s.providers.size()) {
    UnclaimedOps unclaimed;
    unclaimed.add(node);
    throw Error(ErrorKind::UnsupportedOp, unclaimed.describe(s.provider_names));
  }
  std::unique_ptr<Kernel> kernel;
  try {
    kernel = s.providers[chosen]->create_kernel(node);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Kernel) throw;
    throw Error(ErrorKind::InvalidModel, node.describe() + ": " + e.message());
  } catch (const std::exception& e) {
    throw Error(ErrorKind::InvalidModel, node.describe() + ": " + e.what());
  }
  if (!kernel) throw Error(ErrorKind::UnsupportedOp, s.provider_names[chosen] + " created no kernel for " + node.describe());
  provider = chosen;
  return kernel;
}

// Refuses a model with any unclaimed node, subgraphs included, naming them
// all at once; then creates the top-level kernels (subgraphs' come with
// their plans).
void assign_and_create_kernels(Session::Impl& s) {
  UnclaimedOps unclaimed;
  collect_unclaimed(s, s.model.nodes, unclaimed);
  if (!unclaimed.empty()) throw Error(ErrorKind::UnsupportedOp, unclaimed.describe(s.provider_names));
  for (const Node& node : s.model.nodes) {
    size_t provider = 0;
    s.kernels.push_back(create_kernel(s, node, provider));
    s.node_provider.push_back(provider);
  }
}

// What a graph (top-level or subgraph) brings to its plan.
struct GraphParts {
  const std::vector<Node>& nodes;
  const std::map<std::string, Tensor>& initializers;
  std::vector<std::string> outer;    // names read from enclosing scopes (subgraphs)
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<Kernel*> kernels;        // per node
  std::vector<size_t> providers;       // per node
  size_t key_base = 0;  // NodeInfo::node_index of the graph's node i is key_base + i
  // Values of enclosing scopes known when the plan is built (their
  // initializers and folded values), by name: a subgraph folds what reads
  // only these and its own initializers. Null for the top-level graph.
  const std::map<std::string, const Tensor*>* outer_known = nullptr;
};

void build_plan(const Session::Impl& s, const GraphParts& g, detail::ExecPlan& plan, size_t* next_key);

// A GRAPH attribute's plan: its nodes assigned to the session's providers
// like top-level nodes, their kernels created now and owned by the plan.
// Their NodeInfo::node_index keys are the next graph.nodes.size() of
// *next_key: a subgraph's node.index repeats the main graph's, and an
// observer keys its state per node by node_index.
std::shared_ptr<const detail::ExecPlan> compile_subgraph(const Session::Impl& s, const Graph& graph,
                                                         size_t* next_key,
                                                         const std::map<std::string, const Tensor*>* outer_known) {
  auto plan = std::make_shared<detail::ExecPlan>();
  GraphParts parts{graph.nodes, graph.initializers, graph.outer_inputs, {}, {}, {}, {}, *next_key, outer_known};
  *next_key += graph.nodes.size();
  for (const auto& in : graph.inputs) parts.inputs.push_back(in.name);
  for (const auto& out : graph.outputs) parts.outputs.push_back(out.name);
  for (const Node& node : graph.nodes) {
    size_t provider = 0;
    plan->kernels.push_back(create_kernel(s, node, provider));
    parts.kernels.push_back(plan->kernels.back().get());
    parts.providers.push_back(provider);
  }
  build_plan(s, parts, *plan, next_key);
  return plan;
}

// A Constant node's value, computed once by its kernel; nothing for any
// other node. ONNX Runtime turns Constant nodes into initializers when it
// loads a graph, so they never run and never show in its profile; the
// plans here do the same.
std::optional<Tensor> folded_constant(const Node& node, const Kernel& kernel) {
  if (node.op_type != "Constant" || !node.domain.empty() || !node.inputs.empty() || node.outputs.size() != 1 ||
      node.outputs[0].empty())
    return std::nullopt;
  KernelContext ctx;
  ctx.outputs.resize(1);
  kernel.compute(ctx);
  if (ctx.outputs[0].empty())
    throw Error(ErrorKind::Kernel, node.describe() + ": output 0 ('" + node.outputs[0] + "') was not produced");
  return std::move(ctx.outputs[0]);
}

// The outputs of a node whose inputs are all known now (`inputs`: each
// non-empty one's value), computed once by its kernel, when folding may
// replace running it: a CPU EP node in the default domain, with no
// subgraphs, not a random generator, whose kernel gives every named output.
// Nothing when it may not, or when the kernel fails: the node then runs
// (and fails) in the run, where the error names it as a run's errors do.
std::optional<std::vector<Tensor>> folded_outputs(const Node& node, const Kernel& kernel, const std::string& provider,
                                                  const std::vector<const Tensor*>& inputs) {
  static const char* const kRandom[] = {"RandomNormal", "RandomNormalLike", "RandomUniform",
                                        "RandomUniformLike", "Bernoulli", "Multinomial"};
  if (provider != "CPUExecutionProvider" || !node.domain.empty() || node.outputs.empty()) return std::nullopt;
  for (const auto& kv : node.attributes)
    if (kv.second.kind == Attribute::Kind::Graph) return std::nullopt;
  for (const char* op : kRandom)
    if (node.op_type == op) return std::nullopt;
  KernelContext ctx;
  ctx.inputs = inputs;
  ctx.outputs.resize(node.outputs.size());
  try {
    kernel.compute(ctx);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (size_t o = 0; o < node.outputs.size(); ++o)
    if (!node.outputs[o].empty() && ctx.outputs[o].empty()) return std::nullopt;
  return std::move(ctx.outputs);
}

// Kernel::prepare with the node's inputs known now (initializers and folded
// values), less the graph's inputs: a run may feed one that shadows an
// initializer.
void prepare_kernel(Kernel& kernel, const Node& node, const std::map<std::string, const Tensor*>& known,
                    const std::vector<std::string>& graph_inputs) {
  std::vector<const Tensor*> constants(node.inputs.size(), nullptr);
  bool any = false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const std::string& name = node.inputs[i];
    if (name.empty() || std::find(graph_inputs.begin(), graph_inputs.end(), name) != graph_inputs.end()) continue;
    if (auto it = known.find(name); it != known.end()) constants[i] = it->second, any = true;
  }
  if (any) kernel.prepare(constants);
}

void build_plan(const Session::Impl& s, const GraphParts& g, detail::ExecPlan& plan, size_t* next_key) {
  std::map<std::string, int> slot;
  std::vector<bool> is_init;
  auto slot_of = [&](const std::string& name) {
    auto it = slot.find(name);
    if (it != slot.end()) return it->second;
    const int id = static_cast<int>(slot.size());
    slot.emplace(name, id);
    is_init.push_back(false);
    return id;
  };
  for (const auto& name : g.outer) plan.outer_slots.push_back(slot_of(name));
  // The values known now, by name: the enclosing scopes' known values this
  // graph reads, its initializers, and the folded outputs as they come.
  // What folding reads, here and in this graph's subgraphs.
  std::map<std::string, const Tensor*> known;
  if (g.outer_known)
    for (const auto& name : g.outer)
      if (auto it = g.outer_known->find(name); it != g.outer_known->end()) known.emplace(name, it->second);
  for (const auto& kv : g.initializers) {
    is_init[static_cast<size_t>(slot_of(kv.first))] = true;
    known[kv.first] = &kv.second;
  }
  for (const auto& in : g.inputs) plan.input_slots.push_back(slot_of(in));
  std::map<int, Tensor> folded;  // folded nodes' outputs, by slot
  std::map<int, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    if (std::optional<Tensor> value = folded_constant(node, *g.kernels[i])) {
      const int id = slot_of(node.outputs[0]);
      is_init[static_cast<size_t>(id)] = true;  // read as an initializer from here on
      known[node.outputs[0]] = &folded.emplace(id, std::move(*value)).first->second;
      continue;
    }
    if (s.options.fold_constants && !node.inputs.empty() && node.implicit_inputs.empty()) {
      std::vector<const Tensor*> inputs;
      bool all_known = true;
      for (const auto& in : node.inputs) {
        auto it = in.empty() ? known.end() : known.find(in);
        all_known = all_known && (in.empty() || it != known.end());
        inputs.push_back(it != known.end() ? it->second : nullptr);
      }
      std::optional<std::vector<Tensor>> values;
      if (all_known) values = folded_outputs(node, *g.kernels[i], s.provider_names[g.providers[i]], inputs);
      if (values) {
        for (size_t o = 0; o < node.outputs.size(); ++o) {
          if (node.outputs[o].empty()) continue;
          const int id = slot_of(node.outputs[o]);
          is_init[static_cast<size_t>(id)] = true;
          known[node.outputs[o]] = &folded.emplace(id, std::move((*values)[o])).first->second;
        }
        continue;
      }
    }
    detail::NodePlan np;
    np.node = &node;
    np.node_index = g.key_base + i;  // the main graph's: node.index, its topological position
    np.kernel = g.kernels[i];
    prepare_kernel(*g.kernels[i], node, known, g.inputs);
    np.provider = &s.provider_names[g.providers[i]];
    for (const auto& in : node.inputs) {
      np.in_slots.push_back(in.empty() ? -1 : slot_of(in));
      np.input_is_initializer.push_back(!in.empty() && is_init[static_cast<size_t>(np.in_slots.back())]);
    }
    for (const auto& out : node.outputs) {
      np.out_slots.push_back(out.empty() ? -1 : slot_of(out));
      if (!out.empty()) producer[np.out_slots.back()] = plan.nodes.size();
    }
    for (const auto& name : node.implicit_inputs) np.implicit_slots.push_back(slot_of(name));
    for (const auto& kv : node.attributes) {
      if (kv.second.kind != Attribute::Kind::Graph) continue;
      detail::SubgraphPlan sp;
      sp.graph = kv.second.graph.get();
      sp.plan = compile_subgraph(s, *sp.graph, next_key, s.options.fold_constants ? &known : nullptr);
      sp.epochs = std::make_shared<detail::ShapeEpochs>(detail::prove_epochs(*sp.plan));
      for (size_t pos = 0; pos < sp.plan->nodes.size(); ++pos) {
        const detail::NodePlan& sub = sp.plan->nodes[pos];
        sp.nodes.push_back(sub.node);
        sp.node_indices.push_back(sub.node_index);
        sp.in_block.push_back(sub.subgraphs.empty() && sp.epochs->covers(pos));  // as run_node decides
      }
      for (const auto& name : sp.graph->outer_inputs)  // both sorted; a subset of the node's
        sp.outer_from.push_back(static_cast<size_t>(
            std::lower_bound(node.implicit_inputs.begin(), node.implicit_inputs.end(), name) -
            node.implicit_inputs.begin()));
      np.subgraphs.push_back(std::move(sp));
    }
    plan.nodes.push_back(std::move(np));
  }
  for (const auto& out : g.outputs) plan.output_slots.push_back(slot_of(out));
  plan.num_slots = slot.size();
  plan.outer_index.assign(plan.num_slots, -1);
  for (size_t i = 0; i < plan.outer_slots.size(); ++i)
    plan.outer_index[static_cast<size_t>(plan.outer_slots[i])] = static_cast<int>(i);
  plan.constants.resize(plan.num_slots);
  plan.use_count.assign(plan.num_slots, 0);
  plan.keep.assign(plan.num_slots, false);
  for (const auto& kv : g.initializers) {
    const size_t id = static_cast<size_t>(slot.at(kv.first));
    plan.constants[id] = kv.second;
    plan.keep[id] = true;
  }
  for (auto& [id, value] : folded) {
    plan.constants[static_cast<size_t>(id)] = std::move(value);
    plan.keep[static_cast<size_t>(id)] = true;
  }
  for (int id : plan.output_slots) plan.keep[static_cast<size_t>(id)] = true;
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    std::vector<size_t> deps;
    auto depend = [&](int id) {
      if (id < 0) return;
      ++plan.use_count[static_cast<size_t>(id)];
      auto it = producer.find(id);
      if (it != producer.end()) deps.push_back(it->second);
    };
    for (int id : plan.nodes[i].in_slots) depend(id);
    for (int id : plan.nodes[i].implicit_slots) depend(id);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    plan.nodes[i].num_producers = static_cast<int>(deps.size());
    for (size_t d : deps) plan.nodes[d].consumers.push_back(i);
  }
  // What a subgraph's epoch compares of its outer values: not those read
  // from this plan's constants (initializers and folded values; no run
  // feeds an initializer, the loader keeps them out of the inputs), whose
  // shapes are the session's. An If's branches read a model's weights that
  // way, dozens of them.
  for (detail::NodePlan& np : plan.nodes)
    for (detail::SubgraphPlan& sp : np.subgraphs)
      for (size_t i = 0; i < sp.plan->outer_slots.size(); ++i) {
        const auto outer = static_cast<size_t>(np.implicit_slots[sp.outer_from[i]]);
        if (plan.constants[outer].empty()) sp.epoch_outer_slots.push_back(sp.plan->outer_slots[i]);
      }
}

void build_top_level_plan(Session::Impl& s) {
  GraphParts parts{s.model.nodes, s.model.initializers, {}, {}, {}, {}, s.node_provider};
  for (const auto& in : s.model.inputs) parts.inputs.push_back(in.name);
  for (const auto& out : s.model.outputs) parts.outputs.push_back(out.name);
  for (const auto& k : s.kernels) parts.kernels.push_back(k.get());
  size_t next_key = s.model.nodes.size();  // subgraphs' nodes are keyed after the main graph's
  build_plan(s, parts, s.plan, &next_key);
}

void check_input(const IoInfo& info, const Tensor& t) {
  if (info.optional && t.is_none()) return;
  if (info.kind == ValueKind::Sequence) {
    if (!t.is_sequence() || t.element_type() != info.type)
      throw Error(ErrorKind::BadInput, "input '" + info.name + "' must be a sequence of " + type_name(info.type) +
                                           " tensors, got " + t.description());
    return;
  }
  if (t.dtype() != info.type)
    throw Error(ErrorKind::BadInput, "input '" + info.name + "' must be " + type_name(info.type) + ", got " + t.description());
  if (!info.has_shape) return;
  bool ok = t.rank() == info.shape.size();
  for (size_t i = 0; ok && i < info.shape.size(); ++i) ok = info.shape[i] < 0 || info.shape[i] == t.dim(i);
  if (!ok)
    throw Error(ErrorKind::BadInput, "input '" + info.name + "' must have shape " + shape_to_string(info.shape) +
                                         " (-1: any), got " + t.description());
}

// The graph inputs whose contents may join the shape epochs' key: integer
// or bool tensors of a declared static shape of at most 16 elements (a
// sample rate, a mode flag, a length), cheap to compare on every run.
std::vector<bool> epoch_key_candidates(const Session::Impl& s) {
  std::vector<bool> out;
  for (const IoInfo& in : s.model.inputs) {
    const DataType t = in.type;
    bool small = in.kind == ValueKind::Tensor && !in.optional && in.has_shape &&
                 (t == DataType::Int64 || t == DataType::Int32 || t == DataType::Bool);
    int64_t elements = 1;
    for (int64_t d : in.shape) {
      small = small && d >= 0 && d <= 16;
      if (small) elements *= d;
    }
    out.push_back(small && elements <= 16);
  }
  return out;
}

void check_thread_option(const char* name, int value) {
  if (value < 0 || value > SessionOptions::kMaxThreads)
    throw Error(ErrorKind::BadOption, std::string("SessionOptions::") + name + " must be in 0.." +
                                          std::to_string(SessionOptions::kMaxThreads) + " (0: the default), got " +
                                          std::to_string(value));
}

}  // namespace

int default_intra_op_threads() {
  static const int n = [] {
    const int cores = detail::physical_cores();
    return std::clamp(cores > 0 ? cores : static_cast<int>(std::thread::hardware_concurrency() / 2), 1,
                      SessionOptions::kMaxThreads);
  }();
  return n;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

static std::unique_ptr<Session::Impl> init_session(SessionOptions options, const std::string& name,
                                                   const std::string* bytes) {
  auto s = std::make_unique<Session::Impl>();
  s->options = std::move(options);
  check_thread_option("intra_op_threads", s->options.intra_op_threads);
  check_thread_option("inter_op_threads", s->options.inter_op_threads);
  s->intra_op_threads =
      s->options.intra_op_threads > 0 ? s->options.intra_op_threads : default_intra_op_threads();
  if (s->intra_op_threads > 1) s->intra_op_pool = std::make_unique<detail::IntraOpPool>(s->intra_op_threads);
  {
    PhaseScope phase(s->options.observer, SessionPhase::ModelLoading, name);
    detail::LoadOptions lo;
    lo.shape_inference = s->options.shape_inference;
    s->model = bytes ? detail::load_model_bytes(*bytes, name, lo) : detail::load_model_file(name, lo);
  }
  PhaseScope phase(s->options.observer, SessionPhase::SessionInitialization, name);
  s->providers = s->options.providers;
  if (s->providers.empty()) s->providers.push_back(make_cpu_execution_provider());
  for (const auto& p : s->providers) {
    if (!p) throw Error(ErrorKind::InvalidModel, "a null execution provider was given");
    s->provider_names.push_back(p->name());
  }
  if (s->options.fuse_nodes) {
    s->fusions = detail::fuse_nodes(s->model, [&](const Node& node) {
      const size_t p = claiming_provider(*s, node);
      return p < s->providers.size() && detail::is_cpu_execution_provider(*s->providers[p]);
    });
  }
  assign_and_create_kernels(*s);
  build_top_level_plan(*s);
  s->shape_epochs = std::make_unique<detail::ShapeEpochs>(detail::prove_epochs(s->plan, epoch_key_candidates(*s)));
  if (s->options.executor == ExecutorKind::Parallel) {
    int threads = s->options.inter_op_threads;
    if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    s->executor = detail::make_parallel_executor(threads);
  } else {
    s->executor = detail::make_sequential_executor();
  }
  return s;
}

Session::Session(const std::string& model_path, SessionOptions options)
    : impl_(init_session(std::move(options), model_path, nullptr)) {}

Session Session::from_bytes(const std::string& bytes, SessionOptions options, const std::string& name) {
  return Session(init_session(std::move(options), name, &bytes));
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const std::vector<IoInfo>& Session::inputs() const { return impl_->model.inputs; }
const std::vector<IoInfo>& Session::outputs() const { return impl_->model.outputs; }
const std::vector<Node>& Session::nodes() const { return impl_->model.nodes; }
const std::string& Session::provider_of(size_t i) const { return impl_->provider_names.at(impl_->node_provider.at(i)); }
const char* Session::executor_name() const { return impl_->executor->name(); }
bool Session::node_runs(size_t i) const {
  const auto& plan = impl_->plan.nodes;
  return std::any_of(plan.begin(), plan.end(), [i](const detail::NodePlan& np) { return np.node_index == i; });
}
int Session::intra_op_threads() const { return impl_->intra_op_threads; }
int Session::inter_op_threads() const { return impl_->executor->threads(); }
int Session::opset() const { return impl_->model.opset; }
Session::Fusions Session::fusions() const { return impl_->fusions; }

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs, const RunOptions& options) {
  const Impl& s = *impl_;
  std::vector<Tensor> values(s.plan.num_slots);  // the constants stay in the plan (ExecPlan::value)
  for (const auto& kv : inputs) {
    bool known = false;
    for (const auto& in : s.model.inputs) known = known || in.name == kv.first;
    if (!known) throw Error(ErrorKind::BadInput, "the model has no input named '" + kv.first + "'");
  }
  for (size_t i = 0; i < s.model.inputs.size(); ++i) {
    const IoInfo& info = s.model.inputs[i];
    auto it = inputs.find(info.name);
    if (it == inputs.end()) throw Error(ErrorKind::BadInput, "required input '" + info.name + "' is missing");
    check_input(info, it->second);
    values[static_cast<size_t>(s.plan.input_slots[i])] = it->second;
  }
  // The kernels split their work across the session's pool, each part a
  // single-threaded OpenBLAS call (threading.h).
  detail::set_blas_threads(1);
  const detail::IntraOpScope intra_op(s.intra_op_pool.get());
  detail::Observers obs;
  obs.add(s.options.observer);
  obs.add(options.observer);
  detail::RunContext run;
  run.run_id = impl_->next_run_id.fetch_add(1);
  // One block of correlation ids: the run's, its execution's, then one
  // per position of the plan.
  const uint64_t ids = obs.count ? epprof_correlation_id_block(2 + s.plan.nodes.size()) : 0;
  if (obs.count) {
    run.shape_epoch = s.shape_epochs->epoch_for(s.plan, values, nullptr, s.plan.input_slots);
    run.epochs = s.shape_epochs.get();
    if (ids && !s.plan.nodes.empty()) run.first_node_id = ids + 2;
  }
  const uint64_t run_id = run.run_id;
  const RunInfo info{run_id,
                     s.executor->name(),
                     s.plan.nodes.size(),
                     ids,
                     ids ? ids + 1 : 0,
                     run.first_node_id,
                     run.shape_epoch,
                     s.executor->nodes_on_calling_thread()};
  for (int k = 0; k < obs.count; ++k) obs.list[k]->run_begin(info);
  run.ask_for_blocks = obs.count == 1 && !obs.replays && info.nodes_on_calling_thread && run.first_node_id;
  if (run.ask_for_blocks && run.shape_epoch) run.node_block = obs.list[0]->node_event_block(info);
  try {
    s.executor->execute(s.plan, values, obs, run);
  } catch (...) {
    for (int k = obs.count; k-- > 0;) obs.list[k]->run_end(info);
    throw;
  }
  for (int k = obs.count; k-- > 0;) obs.list[k]->run_end(info);
  return s.plan.take_outputs(values);
}

}  // namespace epprof::rt
