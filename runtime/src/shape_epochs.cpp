#include "shape_epochs.h"

#include <algorithm>
#include <atomic>
#include <string_view>

namespace epprof::rt::detail {
namespace {

// Ops (default domain) whose output shapes follow from their inputs' shapes
// and their attributes alone. Ops not listed here or below (data-dependent
// shapes: NonZero, Unique, NonMaxSuppression; control flow; sequences) end
// the proof.
constexpr const char* kShapeOnlyOps[] = {
    // element-wise, unary, activations, comparisons and logic
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "Max", "Min", "Sum", "Mean", "PRelu", "Sqrt", "Exp",
    "Log", "Erf", "Tanh", "Sigmoid", "Relu", "LeakyRelu", "Neg", "Abs", "Floor", "Ceil", "Round", "Sign",
    "Reciprocal", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "IsInf",
    "IsNaN", "HardSigmoid", "HardSwish", "Elu", "Selu", "Celu", "Softplus", "Softsign", "ThresholdedRelu",
    "Shrink", "Clip", "Dropout", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Not", "And", "Or",
    "Xor", "Where", "Cast", "CastLike", "Identity", "Constant", "Shape", "Size", "EyeLike",
    // linear algebra, convolution, pooling, normalisation
    "MatMul", "Gemm", "Einsum", "Det", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool",
    "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "BatchNormalization", "LayerNormalization",
    "InstanceNormalization", "LRN", "MeanVarianceNormalization", "Softmax", "LogSoftmax", "Hardmax",
    "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "QuantizeLinear", "DequantizeLinear",
    "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger", "GridSample",
    "RoiAlign", "RNN", "GRU", "LSTM", "TfIdfVectorizer",
    // rearrangement whose shape is in the attributes or the other inputs' shapes
    "Flatten", "Transpose", "Concat", "Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements",
    "ScatterND", "DepthToSpace", "SpaceToDepth", "CumSum", "Trilu", "ReverseSequence", "ArgMax", "ArgMin",
};

// Ops whose output shapes also read the values of some inputs (a shape, axes,
// sizes, scales, counts): bit i set for input i.
struct ValueInputs {
  const char* op;
  unsigned inputs;
};
constexpr ValueInputs kShapeFromValuesOps[] = {
    {"Reshape", 1u << 1},     {"Squeeze", 1u << 1},    {"Unsqueeze", 1u << 1},   {"Expand", 1u << 1},
    {"Tile", 1u << 1},        {"Split", 1u << 1},      {"TopK", 1u << 1},        {"OneHot", 1u << 1},
    {"Compress", 1u << 1},    {"Upsample", 1u << 1},   {"DFT", 1u << 1},         {"ConstantOfShape", 1u << 0},
    {"Pad", 1u << 1 | 1u << 3}, {"Slice", 0x1eu},      {"Resize", 0xeu},         {"Range", 0x7u},
    {"MaxUnpool", 1u << 2},   {"STFT", 1u << 1 | 1u << 3}, {"BlackmanWindow", 1u}, {"HammingWindow", 1u},
    {"HannWindow", 1u},       {"MelWeightMatrix", 0x1fu},
    {"ReduceSum", 1u << 1},   {"ReduceMean", 1u << 1}, {"ReduceMax", 1u << 1},   {"ReduceMin", 1u << 1},
    {"ReduceProd", 1u << 1},  {"ReduceL1", 1u << 1},   {"ReduceL2", 1u << 1},    {"ReduceLogSum", 1u << 1},
    {"ReduceLogSumExp", 1u << 1}, {"ReduceSumSquare", 1u << 1},
};

// Of the other domains' ops the CPU EP runs, those whose output shapes
// follow as a default-domain op's do: ONNX Runtime's FusedConv, a Conv
// (made by the runtime's fusions, fusion.h).
bool is_shape_only_custom(const Node& node) { return node.domain == "com.microsoft" && node.op_type == "FusedConv"; }

bool is_shape_only(const std::string& op) {
  for (const char* o : kShapeOnlyOps)
    if (op == o) return true;
  return false;
}

const ValueInputs* value_inputs(const std::string& op) {
  for (const ValueInputs& v : kShapeFromValuesOps)
    if (op == v.op) return &v;
  return nullptr;
}

std::atomic<uint64_t> g_next_epoch{1};

// What the analysis knows of each value slot of a plan.
struct Slots {
  std::vector<bool> fixed;   // its contents are fixed once the key is
  std::vector<bool> varies;  // its shape is not a function of the key
};

// Walks `plan` in topological order from what `slots` holds on entry
// (constants, the key's inputs, and for a subgraph the enclosing scope's
// values), marks in `node_varies` the nodes whose input or output shapes do
// not follow from the key (a node of an unknown op, an op that takes a
// shape from a value that is not fixed, a Loop or Scan, an If on a
// condition that is not fixed, and every node downstream of one), and
// returns how many. On return `slots` also describes what the plan computes.
size_t mark_varying(const ExecPlan& plan, Slots& slots, std::vector<bool>& node_varies) {
  node_varies.assign(plan.nodes.size(), false);
  size_t count = 0;
  auto is_fixed = [&](int s) { return s < 0 || slots.fixed[static_cast<size_t>(s)]; };
  auto varies = [&](int s) { return s >= 0 && slots.varies[static_cast<size_t>(s)]; };
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    const NodePlan& np = plan.nodes[n];
    const Node& node = *np.node;
    bool shapes_vary = std::any_of(np.in_slots.begin(), np.in_slots.end(), varies);
    bool outputs_fixed = std::all_of(np.in_slots.begin(), np.in_slots.end(), is_fixed);
    if (!node.domain.empty() && node.domain != "ai.onnx") {
      shapes_vary = shapes_vary || !is_shape_only_custom(node);
    } else if (node.op_type == "If") {
      // The branch taken follows from a fixed condition; its outputs' shapes
      // must then follow from the enclosing values.
      shapes_vary = shapes_vary || np.in_slots.empty() || !is_fixed(np.in_slots[0]);
      for (const SubgraphPlan& sp : np.subgraphs) {
        if (shapes_vary) break;
        Slots inner{std::vector<bool>(sp.plan->num_slots, false), std::vector<bool>(sp.plan->num_slots, false)};
        for (size_t s = 0; s < sp.plan->num_slots; ++s) inner.fixed[s] = !sp.plan->constants[s].empty();
        for (size_t i = 0; i < sp.plan->outer_slots.size(); ++i) {
          const auto s = static_cast<size_t>(sp.plan->outer_slots[i]);
          const int outer = np.implicit_slots[sp.outer_from[i]];
          inner.fixed[s] = is_fixed(outer);
          inner.varies[s] = varies(outer);
        }
        std::vector<bool> inner_nodes;
        mark_varying(*sp.plan, inner, inner_nodes);
        for (int s : sp.plan->output_slots) {
          shapes_vary = shapes_vary || inner.varies[static_cast<size_t>(s)];
          outputs_fixed = outputs_fixed && inner.fixed[static_cast<size_t>(s)];
        }
      }
    } else if (const ValueInputs* values = value_inputs(node.op_type)) {
      for (size_t i = 0; i < np.in_slots.size() && i < 32; ++i)
        if ((values->inputs >> i & 1u) && !is_fixed(np.in_slots[i])) shapes_vary = true;
    } else if (!is_shape_only(node.op_type)) {
      shapes_vary = true;  // Loop, Scan, sequences, data-dependent shapes, ops unknown here
    } else if (node.op_type == "Shape" || node.op_type == "Size") {
      outputs_fixed = !shapes_vary;  // values from shapes only
    }
    if (shapes_vary) {
      node_varies[n] = true;
      ++count;
    }
    for (int s : np.out_slots) {
      if (s < 0) continue;
      slots.fixed[static_cast<size_t>(s)] = outputs_fixed && !shapes_vary;
      slots.varies[static_cast<size_t>(s)] = shapes_vary;
    }
  }
  return count;
}

// How many of the nodes of `plan` vary when the key holds the contents of
// the inputs marked in `keys` (per plan.input_slots) and every input's shape.
size_t count_varying(const ExecPlan& plan, const std::vector<bool>& keys, std::vector<bool>& node_varies) {
  Slots slots{std::vector<bool>(plan.num_slots, false), std::vector<bool>(plan.num_slots, false)};
  for (size_t s = 0; s < plan.num_slots; ++s) slots.fixed[s] = !plan.constants[s].empty();
  for (size_t i = 0; i < keys.size() && i < plan.input_slots.size(); ++i)
    if (keys[i]) slots.fixed[static_cast<size_t>(plan.input_slots[i])] = true;
  return mark_varying(plan, slots, node_varies);
}

}  // namespace

EpochKey prove_epochs(const ExecPlan& plan, const std::vector<bool>& candidates) {
  EpochKey key;
  key.value_keys.assign(plan.input_slots.size(), false);
  size_t varying = count_varying(plan, key.value_keys, key.node_varies);
  if (varying > 0) {
    std::vector<bool> keys(plan.input_slots.size(), false), nodes;
    for (size_t i = 0; i < keys.size() && i < candidates.size(); ++i) keys[i] = candidates[i];
    const size_t with_all = count_varying(plan, keys, nodes);
    if (with_all < varying) {
      // Key on as few contents as that needs: an input whose contents
      // change every run (a step counter) would otherwise start an epoch
      // per run.
      for (size_t i = 0; i < keys.size(); ++i) {
        if (!keys[i]) continue;
        keys[i] = false;
        if (count_varying(plan, keys, nodes) > with_all) keys[i] = true;
      }
      key.value_keys = keys;
      varying = count_varying(plan, key.value_keys, key.node_varies);
    }
  }
  key.enabled = varying < plan.nodes.size();
  if (!key.enabled) key.value_keys.assign(plan.input_slots.size(), false);
  return key;
}

uint64_t ShapeEpochs::epoch_for(const ExecPlan& plan, const std::vector<Tensor>& values, const Tensor* const* outer,
                                const std::vector<int>& first, const std::vector<int>& then) {
  if (!key_.enabled) return 0;
  const size_t count = first.size() + then.size();
  auto input = [&](size_t i) -> const Tensor& {
    return plan.value(values, i < first.size() ? first[i] : then[i - first.size()], outer);
  };
  // A sequence's or an optional's shape says nothing of its items: no epoch.
  for (size_t i = 0; i < count; ++i)
    if (!input(i).is_dense()) return 0;
  auto bytes_of = [](const Tensor& t) { return std::string_view(static_cast<const char*>(t.raw()), t.byte_size()); };
  auto keyed = [&](size_t i) { return i < key_.value_keys.size() && key_.value_keys[i]; };
  std::lock_guard<std::mutex> lock(mu_);
  bool same = last_epoch_ != 0 && last_.size() == count;
  for (size_t i = 0, v = 0; same && i < count; ++i) {
    const Tensor& t = input(i);
    same = last_[i].first == t.dtype() && last_[i].second == t.shape();
    if (same && keyed(i)) same = last_values_[v++] == bytes_of(t);
  }
  if (same) return last_epoch_;
  last_.clear();
  last_values_.clear();
  for (size_t i = 0; i < count; ++i) {
    last_.emplace_back(input(i).dtype(), input(i).shape());
    if (keyed(i)) last_values_.emplace_back(bytes_of(input(i)));
  }
  last_epoch_ = g_next_epoch.fetch_add(1, std::memory_order_relaxed);
  return last_epoch_;
}

}  // namespace epprof::rt::detail
