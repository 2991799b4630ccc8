#include "fusion.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace epprof::rt::detail {

namespace {

// The model's value names, for the checks every fusion makes: who reads a
// value, and which values leave the graph.
class Uses {
 public:
  explicit Uses(const Model& m) {
    for (const Node& n : m.nodes) {
      for (const auto& in : n.inputs)
        if (!in.empty()) ++count_[in];
      for (const auto& in : n.implicit_inputs) ++count_[in];  // read inside a subgraph
    }
    for (const auto& out : m.outputs) outputs_.insert(out.name);
  }
  // `name` is read by exactly one node input, and is no graph output.
  bool only_one_reader(const std::string& name) const {
    auto it = count_.find(name);
    return it != count_.end() && it->second == 1 && !outputs_.count(name);
  }
  // `name` is read by some node, or is a graph output.
  bool read(const std::string& name) const { return count_.count(name) || outputs_.count(name); }

 private:
  std::map<std::string, int> count_;
  std::set<std::string> outputs_;
};

// The reader of each value that a node reads (the last one, when several).
std::map<std::string, size_t> readers(const std::vector<Node>& nodes) {
  std::map<std::string, size_t> r;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& in : nodes[i].inputs)
      if (!in.empty()) r[in] = i;
  return r;
}

// The nodes not marked in `removed`, in their order.
void drop_nodes(std::vector<Node>& nodes, const std::vector<bool>& removed) {
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(nodes[i]));
  nodes = std::move(kept);
}

const Tensor* float_initializer(const Model& m, const std::string& name) {
  auto it = m.initializers.find(name);
  return it != m.initializers.end() && it->second.dtype() == DataType::Float ? &it->second : nullptr;
}

// `base`, or base with a numeric suffix, naming no initializer yet.
std::string fresh_initializer_name(const Model& m, const std::string& base) {
  std::string name = base;
  for (int i = 2; m.initializers.count(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

// A float Conv of one output whose weight (and bias, if any) are
// initializers: what either fusion starts from.
bool foldable_conv(const Model& m, const Node& n) {
  if (n.op_type != "Conv" || !n.domain.empty() || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  if (n.inputs.size() < 2 || n.inputs.size() > 3 || n.inputs[0].empty()) return false;
  const Tensor* w = float_initializer(m, n.inputs[1]);
  if (!w || w->rank() < 3 || w->dim(0) == 0) return false;
  if (n.has_input(2)) {
    const Tensor* b = float_initializer(m, n.inputs[2]);
    if (!b || b->rank() != 1 || b->dim(0) != w->dim(0)) return false;
  }
  return true;
}

// Folds `bn` (which reads conv's only output, and nothing else does) into
// `conv`'s weight and bias, as ONNX Runtime's ConvBNFusion computes them:
// s = scale / sqrt(var + epsilon); W' = W * s per output channel;
// B' = (B - mean) * s + bias. False, changing nothing, when it cannot.
bool fold_batch_norm(Model& m, Node& conv, const Node& bn, std::set<std::string>* replaced) {
  if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() != 5 ||
      bn.inputs[0] != conv.outputs[0])
    return false;
  // Inference only: one output, not training mode; before opset 7, spatial.
  for (size_t o = 1; o < bn.outputs.size(); ++o)
    if (!bn.outputs[o].empty()) return false;
  if (bn.outputs.empty() || bn.outputs[0].empty()) return false;
  if (bn.attr_int("training_mode", 0) != 0 || bn.attr_int("spatial", 1) != 1) return false;
  const Tensor* w = float_initializer(m, conv.inputs[1]);
  const int64_t M = w->dim(0);
  const Tensor* p[4];  // scale, bias, mean, var
  for (size_t i = 0; i < 4; ++i) {
    p[i] = float_initializer(m, bn.inputs[i + 1]);
    if (!p[i] || p[i]->rank() != 1 || p[i]->dim(0) != M) return false;
  }
  const float eps = bn.attr_float("epsilon", 1e-5f);
  const float *scale = p[0]->data<float>(), *shift = p[1]->data<float>(), *mean = p[2]->data<float>(),
              *var = p[3]->data<float>();
  const float* bias = conv.has_input(2) ? m.initializers.at(conv.inputs[2]).data<float>() : nullptr;
  Tensor w2 = Tensor::uninitialized(DataType::Float, w->shape());
  Tensor b2 = Tensor::uninitialized(DataType::Float, {M});
  const int64_t per_channel = w->size() / M;
  const float* wd = w->data<float>();
  float *w2d = w2.mutable_data<float>(), *b2d = b2.mutable_data<float>();
  for (int64_t c = 0; c < M; ++c) {
    const float s = scale[c] / std::sqrt(var[c] + eps);
    for (int64_t k = 0; k < per_channel; ++k) w2d[c * per_channel + k] = wd[c * per_channel + k] * s;
    b2d[c] = ((bias ? bias[c] : 0.0f) - mean[c]) * s + shift[c];
  }
  replaced->insert(conv.inputs.begin() + 1, conv.inputs.end());
  replaced->insert(bn.inputs.begin() + 1, bn.inputs.end());
  const std::string wname = fresh_initializer_name(m, conv.name + "/W_bn_folded");
  m.initializers.emplace(wname, std::move(w2));
  const std::string bname = fresh_initializer_name(m, conv.name + "/B_bn_folded");
  m.initializers.emplace(bname, std::move(b2));
  conv.inputs = {conv.inputs[0], wname, bname};
  conv.input_info.resize(3);
  conv.input_info[1].type = conv.input_info[2].type = DataType::Float;
  conv.input_info[1].shape = m.initializers.at(wname).shape();
  conv.input_info[2].shape = {M};
  conv.input_info[1].has_shape = conv.input_info[2].has_shape = true;
  conv.outputs = bn.outputs;
  conv.outputs.resize(1);
  return true;
}

// The value's static shape, when shape inference knows every dim.
bool static_shape(const Model& m, const std::string& name, Shape* out) {
  auto it = m.value_info.find(name);
  if (it == m.value_info.end() || !it->second.has_shape || it->second.type != DataType::Float) return false;
  for (int64_t d : it->second.shape)
    if (d < 0) return false;
  *out = it->second.shape;
  return true;
}

// An activation FusedConv takes, the ones ONNX Runtime's CPU EP fuses into
// a Conv: Relu, Sigmoid, Tanh, LeakyRelu and HardSigmoid (from opset 6, the
// versions without consumed_inputs; HardSigmoid only as version 6, as ONNX
// Runtime matches it), or Clip with constant bounds (its attributes before
// opset 11, initializer inputs from then on).
bool activation_of(const Model& m, const Node& n, std::string* name, std::vector<float>* params) {
  if (!n.domain.empty() || n.outputs.size() != 1 || n.inputs.empty()) return false;
  params->clear();
  if (n.op_type == "Relu" || ((n.op_type == "Sigmoid" || n.op_type == "Tanh") && n.opset >= 6)) {
    *name = n.op_type;
    return true;
  }
  if (n.op_type == "LeakyRelu" && n.opset >= 6) {
    *name = n.op_type;
    *params = {n.attr_float("alpha", 0.01f)};
    return true;
  }
  if (n.op_type == "HardSigmoid" && n.opset >= 6 && n.opset < 22) {
    *name = n.op_type;
    *params = {n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
    return true;
  }
  if (n.op_type != "Clip") return false;
  float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();  // as the Clip op
  if (n.opset < 11) {
    lo = n.attr_float("min", lo);
    hi = n.attr_float("max", hi);
  } else {
    for (size_t i = 1; i < 3; ++i) {
      if (!n.has_input(i)) continue;
      const Tensor* t = float_initializer(m, n.inputs[i]);
      if (!t || t->size() != 1) return false;
      (i == 1 ? lo : hi) = t->data<float>()[0];
    }
  }
  *name = "Clip";
  *params = {lo, hi};
  return true;
}

// Conv [+ Add] [+ activation] from `conv` on, every node the CPU EP's and
// each reading its predecessor's only output: conv becomes a FusedConv.
// Returns the indices of the nodes it absorbed (empty: nothing fused).
std::vector<size_t> fuse_conv(Model& m, size_t ci, const Uses& uses, const std::map<std::string, size_t>& reader,
                              const std::function<bool(const Node&)>& cpu_runs) {
  Node& conv = m.nodes[ci];
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.outputs[0].empty() ||
      !cpu_runs(conv))
    return {};
  // FusedConv is float only: a double Conv, or one of a type shape inference
  // did not tell, stays a Conv.
  if (auto y = m.value_info.find(conv.outputs[0]); y == m.value_info.end() || y->second.type != DataType::Float)
    return {};
  auto next = [&](const std::string& value) -> Node* {
    if (!uses.only_one_reader(value)) return nullptr;
    auto it = reader.find(value);
    return it == reader.end() ? nullptr : &m.nodes[it->second];
  };
  std::vector<size_t> absorbed;
  std::string z, out = conv.outputs[0];
  Node* n = next(out);
  Shape y_shape, z_shape;
  if (n && n->op_type == "Add" && n->domain.empty() && n->opset >= 7 && n->inputs.size() == 2 &&
      n->outputs.size() == 1 && cpu_runs(*n) && static_shape(m, out, &y_shape)) {
    // Z is the Add's other input, of Y's very shape (no broadcasting).
    const std::string& other = n->inputs[0] == out ? n->inputs[1] : n->inputs[0];
    if (!other.empty() && other != out && static_shape(m, other, &z_shape) && z_shape == y_shape) {
      z = other;
      out = n->outputs[0];
      absorbed.push_back(static_cast<size_t>(n - m.nodes.data()));
      n = next(out);
    }
  }
  std::string activation;
  std::vector<float> params;
  if (n && n->inputs[0] == out && cpu_runs(*n) && activation_of(m, *n, &activation, &params)) {
    out = n->outputs[0];
    absorbed.push_back(static_cast<size_t>(n - m.nodes.data()));
  }
  if (absorbed.empty()) return {};
  // Every absorbed node runs after the Conv; Z must be ready at the Conv:
  // computed before it (the nodes are in topological order), or a graph
  // value. Else the fused node would read it too early.
  if (!z.empty())
    for (size_t j = ci + 1; j < m.nodes.size(); ++j)
      for (const auto& o : m.nodes[j].outputs)
        if (o == z) return {};
  conv.op_type = "FusedConv";
  conv.domain = "com.microsoft";
  conv.opset = 1;
  conv.inputs.resize(3);  // B may be absent: ""
  conv.input_info.resize(3);
  if (!z.empty()) {
    conv.inputs.push_back(z);
    ValueInfo zi;
    zi.type = DataType::Float;
    zi.shape = z_shape;
    zi.has_shape = true;
    conv.input_info.push_back(zi);
  }
  if (!activation.empty()) {
    Attribute a;
    a.kind = Attribute::Kind::String;
    a.s = activation;
    conv.attributes["activation"] = a;
    if (!params.empty()) {
      Attribute p;
      p.kind = Attribute::Kind::Floats;
      p.floats = params;
      conv.attributes["activation_params"] = p;
    }
  }
  conv.outputs = {out};
  return absorbed;
}

// Turns the graph's float Constant nodes (a `value` tensor, output not a
// graph output) into initializers, as ONNX Runtime does when it loads a
// graph, and returns how many: paddle2onnx writes every weight and
// normalisation parameter as a Constant node (the OCR models), and the
// fusions read theirs from initializers. A Constant never runs either way:
// a plan folds it (session.cpp).
void promote_float_constants(Model& m) {
  std::set<std::string> graph_outputs;
  for (const auto& out : m.outputs) graph_outputs.insert(out.name);
  std::vector<bool> removed(m.nodes.size(), false);
  int promoted = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    Node& n = m.nodes[i];
    if (n.op_type != "Constant" || !n.domain.empty() || !n.inputs.empty() || n.outputs.size() != 1 ||
        n.outputs[0].empty() || n.attributes.size() != 1 || graph_outputs.count(n.outputs[0]) ||
        m.initializers.count(n.outputs[0]))
      continue;
    auto value = n.attributes.find("value");
    if (value == n.attributes.end() || value->second.kind != Attribute::Kind::Tensor ||
        value->second.t.dtype() != DataType::Float)
      continue;
    m.initializers.emplace(n.outputs[0], std::move(value->second.t));
    removed[i] = true;
    ++promoted;
  }
  if (promoted) drop_nodes(m.nodes, removed);
}

}  // namespace

Session::Fusions fuse_nodes(Model& m, const std::function<bool(const Node&)>& cpu_runs) {
  Session::Fusions counts;
  promote_float_constants(m);  // the nodes are renumbered below, with the fused ones gone
  std::vector<bool> removed(m.nodes.size(), false);
  std::set<std::string> replaced;  // initializers a fold stopped reading
  {
    const Uses uses(m);
    const auto reader = readers(m.nodes);
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      Node& conv = m.nodes[i];
      if (!foldable_conv(m, conv) || !uses.only_one_reader(conv.outputs[0])) continue;
      auto bn = reader.find(conv.outputs[0]);  // none: its reader is in a subgraph
      if (bn != reader.end() && fold_batch_norm(m, conv, m.nodes[bn->second], &replaced)) {
        removed[bn->second] = true;
        ++counts.batch_norms;
      }
    }
  }
  // Readers again: the folded Convs now write their BatchNormalization's output.
  drop_nodes(m.nodes, removed);
  removed.assign(m.nodes.size(), false);
  {
    const Uses uses(m);
    const auto reader = readers(m.nodes);
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      if (removed[i]) continue;
      const std::vector<size_t> absorbed = fuse_conv(m, i, uses, reader, cpu_runs);
      if (absorbed.empty()) continue;
      ++counts.fused_convs;
      for (size_t a : absorbed) removed[a] = true;
      counts.absorbed += static_cast<int>(absorbed.size());
    }
  }
  drop_nodes(m.nodes, removed);
  for (size_t i = 0; i < m.nodes.size(); ++i) m.nodes[i].index = i;
  // The initializers a fold replaced (weights, biases, the normalisation's
  // parameters) that no node reads any more are dropped.
  if (!replaced.empty()) {
    const Uses now(m);
    for (const auto& name : replaced)
      if (!now.read(name)) m.initializers.erase(name);
  }
  return counts;
}

}  // namespace epprof::rt::detail
