#include "shape_epochs.h"

#include <atomic>

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

}  // namespace

bool shapes_follow_input_shapes(const ExecPlan& plan) {
  // fixed[s]: slot s's contents are fixed once the graph inputs' shapes are
  // (initializers, Constant outputs, Shape outputs and what is computed
  // from those only). Graph inputs' contents are not.
  std::vector<bool> fixed(plan.num_slots, false);
  for (size_t s = 0; s < plan.num_slots; ++s) fixed[s] = !plan.constants[s].empty();
  for (const NodePlan& np : plan.nodes) {  // topological order
    const Node& node = *np.node;
    if (!node.domain.empty() && node.domain != "ai.onnx") return false;
    const ValueInputs* values = value_inputs(node.op_type);
    if (!values && !is_shape_only(node.op_type)) return false;
    for (size_t i = 0; values && i < np.in_slots.size() && i < 32; ++i)
      if ((values->inputs >> i & 1u) && np.in_slots[i] >= 0 && !fixed[static_cast<size_t>(np.in_slots[i])])
        return false;
    bool outputs_fixed = node.op_type == "Shape" || node.op_type == "Size";  // values from shapes only
    if (!outputs_fixed) {
      outputs_fixed = true;
      for (int s : np.in_slots) outputs_fixed = outputs_fixed && (s < 0 || fixed[static_cast<size_t>(s)]);
    }
    for (int s : np.out_slots)
      if (s >= 0) fixed[static_cast<size_t>(s)] = outputs_fixed;
  }
  return true;
}

uint64_t ShapeEpochs::epoch_for(const Tensor* const* inputs, size_t count) {
  if (!enabled_) return 0;
  // A sequence's or an optional's shape says nothing of its items: no epoch.
  for (size_t i = 0; i < count; ++i)
    if (!inputs[i]->is_dense()) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  bool same = last_epoch_ != 0 && last_.size() == count;
  for (size_t i = 0; same && i < count; ++i)
    same = last_[i].first == inputs[i]->dtype() && last_[i].second == inputs[i]->shape();
  if (same) return last_epoch_;
  last_.clear();
  for (size_t i = 0; i < count; ++i) last_.emplace_back(inputs[i]->dtype(), inputs[i]->shape());
  last_epoch_ = g_next_epoch.fetch_add(1, std::memory_order_relaxed);
  return last_epoch_;
}

}  // namespace epprof::rt::detail
