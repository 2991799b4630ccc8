#include "shape_epochs.h"

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

// Whether the shapes of every value in `plan` follow from what `fixed`
// holds on entry (per slot: its contents are fixed once the key is:
// constants, the key's inputs, and for a subgraph the enclosing scope's
// fixed values), and the graph inputs' shapes. On return `fixed` also holds
// what the plan computes from fixed values only (and Shape/Size outputs).
bool shapes_follow(const ExecPlan& plan, std::vector<bool>& fixed) {
  for (const NodePlan& np : plan.nodes) {  // topological order
    const Node& node = *np.node;
    if (!node.domain.empty() && node.domain != "ai.onnx") return false;
    auto is_fixed = [&](int s) { return s < 0 || fixed[static_cast<size_t>(s)]; };
    bool outputs_fixed = true;
    if (node.op_type == "If") {
      // The branch taken follows from a fixed condition; each branch's
      // shapes must follow from its enclosing values as this plan's do.
      if (np.in_slots.empty() || !is_fixed(np.in_slots[0])) return false;
      for (const SubgraphPlan& sp : np.subgraphs) {
        std::vector<bool> inner(sp.plan->num_slots, false);
        for (size_t s = 0; s < inner.size(); ++s) inner[s] = !sp.plan->constants[s].empty();
        for (size_t i = 0; i < sp.plan->outer_slots.size(); ++i)
          inner[static_cast<size_t>(sp.plan->outer_slots[i])] = is_fixed(np.implicit_slots[sp.outer_from[i]]);
        if (!shapes_follow(*sp.plan, inner)) return false;
        for (int s : sp.plan->output_slots) outputs_fixed = outputs_fixed && inner[static_cast<size_t>(s)];
      }
    } else {
      const ValueInputs* values = value_inputs(node.op_type);
      if (!values && !is_shape_only(node.op_type)) return false;
      for (size_t i = 0; values && i < np.in_slots.size() && i < 32; ++i)
        if ((values->inputs >> i & 1u) && !is_fixed(np.in_slots[i])) return false;
      outputs_fixed = node.op_type == "Shape" || node.op_type == "Size";  // values from shapes only
      if (!outputs_fixed) {
        outputs_fixed = true;
        for (int s : np.in_slots) outputs_fixed = outputs_fixed && is_fixed(s);
      }
    }
    for (int s : np.out_slots)
      if (s >= 0) fixed[static_cast<size_t>(s)] = outputs_fixed;
  }
  return true;
}

bool proves(const ExecPlan& plan, const std::vector<bool>& keys) {
  std::vector<bool> fixed(plan.num_slots, false);
  for (size_t s = 0; s < plan.num_slots; ++s) fixed[s] = !plan.constants[s].empty();
  for (size_t i = 0; i < keys.size() && i < plan.input_slots.size(); ++i)
    if (keys[i]) fixed[static_cast<size_t>(plan.input_slots[i])] = true;
  return shapes_follow(plan, fixed);
}

}  // namespace

EpochKey prove_epochs(const ExecPlan& plan, const std::vector<bool>& candidates) {
  EpochKey key;
  key.value_keys.assign(plan.input_slots.size(), false);
  if (proves(plan, key.value_keys)) {
    key.enabled = true;
    return key;
  }
  for (size_t i = 0; i < key.value_keys.size() && i < candidates.size(); ++i) key.value_keys[i] = candidates[i];
  if (!proves(plan, key.value_keys)) {
    key.value_keys.assign(plan.input_slots.size(), false);
    return key;
  }
  // Key on as few contents as the proof needs: an input whose contents
  // change every run (a step counter) would otherwise start an epoch per run.
  for (size_t i = 0; i < key.value_keys.size(); ++i) {
    if (!key.value_keys[i]) continue;
    key.value_keys[i] = false;
    if (!proves(plan, key.value_keys)) key.value_keys[i] = true;
  }
  key.enabled = true;
  return key;
}

uint64_t ShapeEpochs::epoch_for(const std::vector<Tensor>& values, const std::vector<int>& first,
                                const std::vector<int>& then) {
  if (!key_.enabled) return 0;
  const size_t count = first.size() + then.size();
  auto input = [&](size_t i) -> const Tensor& {
    return values[static_cast<size_t>(i < first.size() ? first[i] : then[i - first.size()])];
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
