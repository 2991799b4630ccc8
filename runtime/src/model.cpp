#include "model.h"

#include <fstream>
#include <limits>
#include <queue>
#include <set>
#include <sstream>

#include "epprof/rt/error.h"
#include "onnx/shape_inference/implementation.h"
#include "proto_convert.h"

namespace epprof::rt::detail {

namespace {

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

IoInfo io_info_from_proto(const onnx::ValueInfoProto& v, bool strict) {
  IoInfo info;
  info.name = v.name();
  if (!v.has_type() || !v.type().has_tensor_type()) {
    if (strict) throw Error(ErrorKind::InvalidModel, "graph value '" + v.name() + "' is not a tensor");
    return info;
  }
  const auto& tt = v.type().tensor_type();
  if (!is_supported_type(tt.elem_type())) {
    if (strict)
      throw Error(ErrorKind::InvalidModel, "graph value '" + v.name() + "' has unsupported element type " +
                                               std::to_string(tt.elem_type()));
    return info;
  }
  info.type = static_cast<DataType>(tt.elem_type());
  if (tt.has_shape()) {
    info.has_shape = true;
    for (const auto& d : tt.shape().dim()) info.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return info;
}

Node node_from_proto(const onnx::NodeProto& p, size_t original_index, const std::map<std::string, int>& opsets) {
  Node n;
  n.op_type = p.op_type();
  n.name = p.name().empty() ? p.op_type() + "_" + std::to_string(original_index) : p.name();
  n.domain = is_default_domain(p.domain()) ? std::string() : p.domain();
  if (n.op_type.empty()) throw Error(ErrorKind::InvalidModel, "node #" + std::to_string(original_index) + " has no op_type");
  auto it = opsets.find(n.domain);
  if (it == opsets.end())
    throw Error(ErrorKind::InvalidModel, n.describe() + " uses domain '" + n.domain + "' which the model does not import");
  n.opset = it->second;
  n.inputs.assign(p.input().begin(), p.input().end());
  n.outputs.assign(p.output().begin(), p.output().end());
  for (const auto& a : p.attribute()) {
    if (a.name().empty()) throw Error(ErrorKind::InvalidModel, n.describe() + " has an attribute with no name");
    n.attributes[a.name()] = attribute_from_proto(a, n.describe());
  }
  return n;
}

// Kahn's algorithm; ties broken by original position so the order is stable.
std::vector<Node> topological_sort(std::vector<Node> nodes, const std::set<std::string>& available) {
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& o : nodes[i].outputs) {
      if (o.empty()) continue;
      if (available.count(o) || !producer.emplace(o, i).second)
        throw Error(ErrorKind::InvalidModel, "value '" + o + "' is produced more than once (again by " +
                                                 nodes[i].describe() + ")");
    }
  std::vector<size_t> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> consumers(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& in : nodes[i].inputs) {
      if (in.empty() || available.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        throw Error(ErrorKind::DanglingInput, nodes[i].describe() + " reads '" + in +
                                                  "', which is no graph input, initializer or node output");
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<Node> order;
  order.reserve(nodes.size());
  std::vector<bool> done(nodes.size(), false);
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    done[i] = true;
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.push(c);
    order.push_back(std::move(nodes[i]));
    order.back().index = order.size() - 1;
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!done[i])
        throw Error(ErrorKind::Cycle, "the graph has a cycle through " + nodes[i].describe() + " (" +
                                          std::to_string(nodes.size() - order.size()) + " nodes never become ready)");
  }
  return order;
}

Model build(onnx::ModelProto& proto, const std::string& name, const LoadOptions& options) {
  if (proto.ir_version() <= 0 || !proto.has_graph())
    throw Error(ErrorKind::InvalidModel, "'" + name + "' is not an ONNX model (no ir_version or no graph)");
  Model m;
  m.path = name;
  m.ir_version = proto.ir_version();
  for (const auto& op : proto.opset_import()) {
    const std::string domain = is_default_domain(op.domain()) ? std::string() : op.domain();
    if (op.version() <= 0 || op.version() > std::numeric_limits<int>::max())
      throw Error(ErrorKind::InvalidModel, "opset import for domain '" + domain + "' has invalid version " +
                                               std::to_string(op.version()));
    if (domain.empty() && op.version() > kMaxSupportedOpset)
      throw Error(ErrorKind::UnsupportedOpset, "model '" + name + "' imports opset " + std::to_string(op.version()) +
                                                   " of the default domain; the runtime supports opsets 1 to " +
                                                   std::to_string(kMaxSupportedOpset));
    m.opsets[domain] = static_cast<int>(op.version());
  }
  if (!m.opsets.count("")) m.opsets[""] = 1;  // IR < 3 models have no opset_import
  m.opset = m.opsets[""];

  const auto& g = proto.graph();
  if (g.sparse_initializer_size() > 0)
    throw Error(ErrorKind::BadInitializer, "sparse initializers are not supported");
  for (const auto& init : g.initializer()) {
    if (init.name().empty()) throw Error(ErrorKind::BadInitializer, "an initializer has no name");
    Tensor t = tensor_from_proto(init, "initializer '" + init.name() + "'", ErrorKind::BadInitializer);
    if (!m.initializers.emplace(init.name(), std::move(t)).second)
      throw Error(ErrorKind::InvalidModel, "initializer '" + init.name() + "' is defined twice");
  }
  std::set<std::string> available;
  for (const auto& kv : m.initializers) available.insert(kv.first);
  for (const auto& in : g.input()) {
    if (in.name().empty()) throw Error(ErrorKind::InvalidModel, "a graph input has no name");
    if (m.initializers.count(in.name())) continue;  // has a default: not a required input
    if (!available.insert(in.name()).second)
      throw Error(ErrorKind::InvalidModel, "graph input '" + in.name() + "' is declared twice");
    m.inputs.push_back(io_info_from_proto(in, true));
  }
  std::vector<Node> nodes;
  nodes.reserve(static_cast<size_t>(g.node_size()));
  for (int i = 0; i < g.node_size(); ++i) nodes.push_back(node_from_proto(g.node(i), static_cast<size_t>(i), m.opsets));
  m.nodes = topological_sort(std::move(nodes), available);

  std::set<std::string> produced = available;
  for (const auto& n : m.nodes)
    for (const auto& o : n.outputs) produced.insert(o);
  if (g.output_size() == 0) throw Error(ErrorKind::InvalidModel, "the graph has no outputs");
  for (const auto& out : g.output()) {
    if (!produced.count(out.name()))
      throw Error(ErrorKind::DanglingInput, "graph output '" + out.name() + "' is produced by no node");
    m.outputs.push_back(io_info_from_proto(out, true));
  }

  if (options.shape_inference) {
    try {
      onnx::shape_inference::InferShapes(proto);
    } catch (const std::exception&) {
      // Shape inference is advisory: shapes are checked again at run time.
    }
  }
  for (const auto& v : proto.graph().value_info()) m.value_info[v.name()] = io_info_from_proto(v, false);
  for (const auto& v : m.inputs) m.value_info[v.name] = v;
  for (const auto& v : m.outputs) m.value_info[v.name] = v;
  for (auto& n : m.nodes) {
    n.input_info.assign(n.inputs.size(), ValueInfo{});
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      ValueInfo& vi = n.input_info[i];
      if (auto init = m.initializers.find(n.inputs[i]); init != m.initializers.end()) {
        vi = ValueInfo{init->second.dtype(), init->second.shape(), true};
      } else if (auto it = m.value_info.find(n.inputs[i]); it != m.value_info.end()) {
        vi = ValueInfo{it->second.type, it->second.shape, it->second.has_shape};
      }
    }
  }
  return m;
}

}  // namespace

Model load_model_bytes(const std::string& bytes, const std::string& name, const LoadOptions& options) {
  onnx::ModelProto proto;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorKind::InvalidModel, "'" + name + "' is not an ONNX model or is truncated (protobuf parse failed)");
  return build(proto, name, options);
}

Model load_model_file(const std::string& path, const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot open model file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(ErrorKind::Io, "cannot read model file '" + path + "'");
  return load_model_bytes(ss.str(), path, options);
}

}  // namespace epprof::rt::detail
