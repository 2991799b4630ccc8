#include "epprof/rt/cost_model.h"

#include <set>
#include <string>

namespace epprof::rt {
namespace {

double numel(const Tensor& t) { return double(t.size()); }

const Tensor* input(const std::vector<const Tensor*>& in, size_t i) {
  return i < in.size() ? in[i] : nullptr;
}

bool is_one_flop_per_element(const std::string& op) {
  static const std::set<std::string> kOps = {"Add",  "Sub",       "Mul",     "Div",  "Pow",
                                             "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Exp",
                                             "Log",  "Sqrt",      "Erf"};
  return kOps.count(op) != 0;
}

bool is_data_movement(const std::string& op) {
  static const std::set<std::string> kOps = {"Reshape", "Flatten",   "Squeeze", "Unsqueeze",
                                             "Identity", "Transpose", "Concat",  "Gather",
                                             "Shape",    "Cast",      "Constant"};
  return kOps.count(op) != 0;
}

}  // namespace

NodeCost node_cost(const Node& node, const std::vector<const Tensor*>& inputs,
                   const std::vector<Tensor>& outputs) {
  NodeCost cost;
  double in_elements = 0;
  for (const Tensor* t : inputs)
    if (t) {
      cost.bytes += double(t->byte_size());
      in_elements += numel(*t);
    }
  for (const Tensor& t : outputs) cost.bytes += double(t.byte_size());

  const std::string& op = node.op_type;
  const Tensor* a = input(inputs, 0);
  const Tensor* b = input(inputs, 1);
  const Tensor* y = outputs.empty() ? nullptr : &outputs[0];
  if (node.domain.empty() && y) {
    if (op == "MatMul" && a && a->rank() >= 1) {
      cost.flops = 2.0 * double(a->shape().back()) * numel(*y);
      cost.flops_exact = true;
      return cost;
    }
    if (op == "Gemm" && a && b && a->rank() == 2 && y->rank() == 2) {
      const double k = double(node.attr_int("transA", 0) ? a->dim(0) : a->dim(1));
      const double mn = numel(*y);
      const float alpha = node.attr_float("alpha", 1.0f);
      const float beta = node.attr_float("beta", 1.0f);
      cost.flops = 2.0 * mn * k;
      if (alpha != 1.0f) cost.flops += mn;
      if (input(inputs, 2) && beta != 0.0f) cost.flops += beta != 1.0f ? 2.0 * mn : mn;
      cost.flops_exact = true;
      return cost;
    }
    if (op == "Conv" && b && b->rank() >= 3) {
      double per_output = double(b->dim(1));  // C / group
      for (size_t i = 2; i < b->rank(); ++i) per_output *= double(b->dim(i));
      cost.flops = 2.0 * numel(*y) * per_output + (input(inputs, 2) ? numel(*y) : 0.0);
      cost.flops_exact = true;
      return cost;
    }
    if (is_one_flop_per_element(op)) {
      cost.flops = numel(*y);
      cost.flops_exact = true;
      return cost;
    }
    if (is_data_movement(op)) {
      cost.flops_exact = true;
      return cost;
    }
  }
  cost.flops = in_elements;  // an estimate: one operation per input element
  return cost;
}

NodeCost node_cost(const Node& node, const NodeIo& io) { return node_cost(node, io.inputs, io.outputs); }

}  // namespace epprof::rt
