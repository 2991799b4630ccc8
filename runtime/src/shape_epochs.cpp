#include "shape_epochs.h"

#include <atomic>

namespace epprof::rt::detail {
namespace {

// Ops (default domain) whose output shapes follow from their inputs' shapes
// and their attributes alone.
constexpr const char* kShapeOnlyOps[] = {
    "Add",     "Sub",        "Mul",           "Div",       "Pow",       "Sqrt",    "Exp",
    "Log",     "Erf",        "Tanh",          "Sigmoid",   "Relu",      "LeakyRelu", "Softmax",
    "MatMul",  "Gemm",       "Conv",          "MaxPool",   "AveragePool", "GlobalAveragePool",
    "BatchNormalization",    "LayerNormalization",        "Flatten",   "Transpose", "Concat",
    "Identity", "Constant",  "Shape",         "Gather",    "Cast",
};
// Ops whose output shape also reads the values of input 1 (a shape, or axes).
constexpr const char* kShapeFromInput1Ops[] = {"Reshape", "Squeeze", "Unsqueeze", "ReduceMean"};

template <size_t N>
bool is_one_of(const std::string& op, const char* const (&ops)[N]) {
  for (const char* o : ops)
    if (op == o) return true;
  return false;
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
    const bool reads_input1 = is_one_of(node.op_type, kShapeFromInput1Ops);
    if (!reads_input1 && !is_one_of(node.op_type, kShapeOnlyOps)) return false;
    if (reads_input1 && np.in_slots.size() > 1 && np.in_slots[1] >= 0 &&
        !fixed[static_cast<size_t>(np.in_slots[1])])
      return false;
    bool outputs_fixed = node.op_type == "Shape";
    if (!outputs_fixed) {
      outputs_fixed = true;
      for (int s : np.in_slots) outputs_fixed = outputs_fixed && (s < 0 || fixed[static_cast<size_t>(s)]);
    }
    for (int s : np.out_slots)
      if (s >= 0) fixed[static_cast<size_t>(s)] = outputs_fixed;
  }
  return true;
}

uint64_t ShapeEpochs::epoch_for(const std::vector<const Tensor*>& inputs) {
  if (!enabled_) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  bool same = last_epoch_ != 0 && last_.size() == inputs.size();
  for (size_t i = 0; same && i < inputs.size(); ++i)
    same = last_[i].first == inputs[i]->dtype() && last_[i].second == inputs[i]->shape();
  if (same) return last_epoch_;
  last_.clear();
  for (const Tensor* t : inputs) last_.emplace_back(t->dtype(), t->shape());
  last_epoch_ = g_next_epoch.fetch_add(1, std::memory_order_relaxed);
  return last_epoch_;
}

}  // namespace epprof::rt::detail
