#include "model_checks.h"

#include <set>
#include <vector>

#include "epprof/rt/error.h"
#include "onnx/defs/schema.h"

namespace epprof::rt::detail {

namespace {

// Declared ranks of the values a graph can see (graph inputs, outputs,
// value_info and initializers, its own over its enclosing scopes').
class Ranks {
 public:
  Ranks(const onnx::GraphProto& g, const Ranks* outer) : outer_(outer) {
    auto add = [&](const onnx::ValueInfoProto& v) {
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
        ranks_[v.name()] = v.type().tensor_type().shape().dim_size();
    };
    for (const auto& v : g.input()) add(v);
    for (const auto& v : g.output()) add(v);
    for (const auto& v : g.value_info()) add(v);
    for (const auto& t : g.initializer()) {
      ranks_[t.name()] = t.dims_size();
      initializers_[t.name()] = &t;
    }
  }
  // -1 when not declared.
  int rank(const std::string& name) const {
    if (auto it = ranks_.find(name); it != ranks_.end()) return it->second;
    return outer_ ? outer_->rank(name) : -1;
  }
  const onnx::TensorProto* initializer(const std::string& name) const {
    if (auto it = initializers_.find(name); it != initializers_.end()) return it->second;
    return outer_ ? outer_->initializer(name) : nullptr;
  }

 private:
  const Ranks* outer_;
  std::map<std::string, int> ranks_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
};

// As the loader names nodes: "<op_type>_<position>" when the model gives none.
std::string describe(const onnx::NodeProto& n, int position) {
  const std::string name = n.name().empty() ? n.op_type() + "_" + std::to_string(position) : n.name();
  return "node '" + name + "' (" + n.op_type() + ")";
}

[[noreturn]] void invalid(const std::string& who, const std::string& what) {
  throw Error(ErrorKind::InvalidModel, who + ": " + what);
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::string ints_to_string(const google::protobuf::RepeatedField<int64_t>& v) {
  std::string s = "[";
  for (int i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v.Get(i));
  return s + "]";
}

// The index of a convolution's weight input, or -1 for ops without one.
int weight_input(const std::string& op) {
  if (op == "Conv" || op == "ConvTranspose" || op == "ConvInteger") return 1;
  if (op == "QLinearConv") return 3;
  return -1;
}

bool is_pool(const std::string& op) {
  return op == "MaxPool" || op == "AveragePool" || op == "LpPool" || op == "MaxUnpool";
}

// Convolution and pooling: every per-dimension attribute positive (pads
// non-negative) and of one spatial rank, which the weight and the input's
// declared rank agree with.
void check_conv_pool(const onnx::NodeProto& n, const std::string& who, const Ranks& ranks) {
  int spatial = -1;  // the number of spatial dims, once known
  std::string spatial_from;
  auto agree = [&](int k, const std::string& from) {
    if (spatial < 0) {
      spatial = k;
      spatial_from = from;
    } else if (k != spatial) {
      invalid(who, from + " gives " + std::to_string(k) + " spatial dims, but " + spatial_from + " gives " +
                     std::to_string(spatial));
    }
  };
  for (const char* name : {"kernel_shape", "strides", "dilations", "pads", "output_padding"}) {
    const onnx::AttributeProto* a = find_attr(n, name);
    if (!a) continue;
    const bool pads = std::string(name) == "pads" || std::string(name) == "output_padding";
    for (int64_t v : a->ints())
      if (pads ? v < 0 : v <= 0)
        invalid(who, "attribute '" + std::string(name) + "' " + ints_to_string(a->ints()) + " must be " +
                       (pads ? "non-negative" : "positive"));
    if (std::string(name) == "pads") {
      if (a->ints_size() % 2) invalid(who, "attribute 'pads' " + ints_to_string(a->ints()) + " has an odd length");
      agree(a->ints_size() / 2, "attribute 'pads' (begin and end per dim)");
    } else {
      agree(a->ints_size(), "attribute '" + std::string(name) + "'");
    }
  }
  if (const onnx::AttributeProto* g = find_attr(n, "group"); g && g->i() <= 0)
    invalid(who, "attribute 'group' must be positive, got " + std::to_string(g->i()));
  const int w = weight_input(n.op_type());
  if (w >= 0 && n.input_size() > w) {
    const int r = ranks.rank(n.input(w));
    if (r >= 0 && r < 3) invalid(who, "weight '" + n.input(w) + "' has rank " + std::to_string(r) + ", expected at least 3");
    if (r >= 3) agree(r - 2, "weight '" + n.input(w) + "' (rank " + std::to_string(r) + ")");
  }
  if (n.input_size() > 0) {
    const int r = ranks.rank(n.input(0));
    if (r >= 0 && r < 3)
      invalid(who, "input '" + n.input(0) + "' has rank " + std::to_string(r) + ", expected at least 3 (N, C, spatial dims)");
    if (r >= 3) agree(r - 2, "input '" + n.input(0) + "' (rank " + std::to_string(r) + ")");
  }
}

// Transpose's perm: a permutation of the input's dims.
void check_perm(const onnx::NodeProto& n, const std::string& who, const Ranks& ranks) {
  const onnx::AttributeProto* a = find_attr(n, "perm");
  if (!a) return;
  std::vector<bool> seen(static_cast<size_t>(a->ints_size()), false);
  for (int64_t p : a->ints()) {
    if (p < 0 || p >= a->ints_size() || seen[static_cast<size_t>(p)])
      invalid(who, "attribute 'perm' " + ints_to_string(a->ints()) + " is not a permutation");
    seen[static_cast<size_t>(p)] = true;
  }
  const int r = n.input_size() > 0 ? ranks.rank(n.input(0)) : -1;
  if (r >= 0 && r != a->ints_size())
    invalid(who, "attribute 'perm' " + ints_to_string(a->ints()) + " has " + std::to_string(a->ints_size()) +
                   " entries for input '" + n.input(0) + "' of rank " + std::to_string(r));
}

// An axes attribute: in range for the declared rank (Unsqueeze's axes refer
// to the output's), without repeats.
void check_axes(const onnx::NodeProto& n, const std::string& who, const Ranks& ranks) {
  const onnx::AttributeProto* a = find_attr(n, "axes");
  if (!a || n.input_size() == 0 || n.op_type() == "Slice") return;  // Slice clamps
  int r = ranks.rank(n.input(0));
  if (r < 0) return;
  if (n.op_type() == "Unsqueeze") r += a->ints_size();
  std::set<int64_t> seen;
  for (int64_t axis : a->ints()) {
    if (axis < -r || axis >= r)
      invalid(who, "attribute 'axes' " + ints_to_string(a->ints()) + " is out of range for rank " + std::to_string(r));
    if (!seen.insert(axis < 0 ? axis + r : axis).second)
      invalid(who, "attribute 'axes' " + ints_to_string(a->ints()) + " repeats an axis");
  }
}

// Input and output counts within the op's schema, as ONNX's checker has them.
void check_arity(const onnx::NodeProto& n, const std::string& who, int opset) {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), opset, "");
  if (!schema) return;  // unknown here: the unsupported-op listing names it
  if (n.input_size() < schema->min_input() || n.input_size() > schema->max_input())
    invalid(who, "has " + std::to_string(n.input_size()) + " inputs; " + n.op_type() + "-" +
                   std::to_string(schema->SinceVersion()) + " takes " + std::to_string(schema->min_input()) +
                   (schema->max_input() == schema->min_input() ? "" :
                    " to " + (schema->max_input() == std::numeric_limits<int>::max()
                                  ? std::string("any number")
                                  : std::to_string(schema->max_input()))));
  if (n.output_size() < schema->min_output() || n.output_size() > schema->max_output())
    invalid(who, "has " + std::to_string(n.output_size()) + " outputs; " + n.op_type() + "-" +
                   std::to_string(schema->SinceVersion()) + " gives " + std::to_string(schema->min_output()) +
                   (schema->max_output() == schema->min_output() ? "" :
                    " to " + (schema->max_output() == std::numeric_limits<int>::max()
                                  ? std::string("any number")
                                  : std::to_string(schema->max_output()))));
}

void check_graph(const onnx::GraphProto& g, const std::map<std::string, int>& opsets, const Ranks* outer) {
  const Ranks ranks(g, outer);
  const auto def = opsets.find("");
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    const std::string who = describe(n, i);
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (default_domain) {
      if (def != opsets.end()) check_arity(n, who, def->second);
      if (weight_input(n.op_type()) >= 0 || is_pool(n.op_type())) check_conv_pool(n, who, ranks);
      if (n.op_type() == "Transpose") check_perm(n, who, ranks);
      check_axes(n, who, ranks);
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) check_graph(a.g(), opsets, &ranks);
      for (const auto& sub : a.graphs()) check_graph(sub, opsets, &ranks);
    }
  }
}

bool prepare_graph(onnx::GraphProto& g, const Ranks* outer) {
  const Ranks ranks(g, outer);
  bool ok = true;
  for (auto& n : *g.mutable_node()) {
    const int w = weight_input(n.op_type());
    if (w >= 0 && !find_attr(n, "kernel_shape")) {
      const onnx::TensorProto* weight = n.input_size() > w ? ranks.initializer(n.input(w)) : nullptr;
      if (!weight || weight->dims_size() < 3) {
        ok = false;
      } else {
        auto* a = n.add_attribute();
        a->set_name("kernel_shape");
        a->set_type(onnx::AttributeProto::INTS);
        for (int d = 2; d < weight->dims_size(); ++d) a->add_ints(weight->dims(d));
      }
    }
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) ok = prepare_graph(*a.mutable_g(), &ranks) && ok;
      for (auto& sub : *a.mutable_graphs()) ok = prepare_graph(sub, &ranks) && ok;
    }
  }
  return ok;
}

}  // namespace

void check_graph_attributes(const onnx::GraphProto& graph, const std::map<std::string, int>& opsets) {
  check_graph(graph, opsets, nullptr);
}

bool prepare_for_shape_inference(onnx::ModelProto& model) { return prepare_graph(*model.mutable_graph(), nullptr); }

}  // namespace epprof::rt::detail
