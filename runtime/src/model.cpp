#include "model.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <queue>
#include <set>
#include <sstream>

#include "epprof/rt/error.h"
#include "onnx/shape_inference/implementation.h"
#include "external_data.h"
#include "model_checks.h"
#include "proto_convert.h"

namespace epprof::rt::detail {

namespace {

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Tensors, sequences of tensors and optionals of either; `strict`: throw for
// anything else (or an unsupported element type), otherwise leave it unknown.
IoInfo io_info_from_proto(const onnx::ValueInfoProto& v, bool strict) {
  IoInfo info;
  info.name = v.name();
  auto unknown = [&](const std::string& why) {
    if (strict) throw Error(ErrorKind::InvalidModel, "graph value '" + v.name() + "' " + why);
    IoInfo none;
    none.name = v.name();
    return none;
  };
  if (!v.has_type()) return unknown("has no type");
  const onnx::TypeProto* type = &v.type();
  if (type->has_optional_type()) {
    info.optional = true;
    type = &type->optional_type().elem_type();
  }
  if (type->has_sequence_type()) {
    info.kind = ValueKind::Sequence;
    type = &type->sequence_type().elem_type();
  }
  if (!type->has_tensor_type()) return unknown("is not a tensor, a sequence of tensors or an optional of either");
  const auto& tt = type->tensor_type();
  if (!is_supported_type(tt.elem_type()))
    return unknown("has unsupported element type " + std::to_string(tt.elem_type()));
  info.type = static_cast<DataType>(tt.elem_type());
  if (info.kind == ValueKind::Tensor && tt.has_shape()) {
    info.has_shape = true;
    for (const auto& d : tt.shape().dim()) {
      // -1 is how some exporters write an unknown dim; other negatives are errors.
      if (d.has_dim_value() && d.dim_value() < -1) {
        if (strict)
          throw Error(ErrorKind::InvalidModel, "graph value '" + v.name() + "' declares dimension " +
                                                   std::to_string(d.dim_value()) + " in its shape");
        return unknown("");
      }
      info.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
  }
  return info;
}

// What parsing a graph and its subgraphs shares.
struct LoadContext {
  const std::map<std::string, int>& opsets;
  size_t next_index;       // Node::index of the next subgraph's first node
  ExternalData& external;  // the model's external data files
};

std::shared_ptr<const Graph> subgraph_from_proto(const onnx::GraphProto& g, const std::string& name,
                                                 const std::set<std::string>& outer, LoadContext& ctx);

// `prefix`: "" for a top-level node, "<graph name>/" for a subgraph's.
// `visible`: every name a subgraph of this node may read from enclosing scopes.
Node node_from_proto(const onnx::NodeProto& p, size_t original_index, LoadContext& ctx, const std::string& prefix,
                     const std::set<std::string>& visible) {
  Node n;
  n.op_type = p.op_type();
  n.name = prefix + (p.name().empty() ? p.op_type() + "_" + std::to_string(original_index) : p.name());
  n.domain = is_default_domain(p.domain()) ? std::string() : p.domain();
  if (n.op_type.empty()) throw Error(ErrorKind::InvalidModel, "node #" + std::to_string(original_index) + " has no op_type");
  auto it = ctx.opsets.find(n.domain);
  if (it == ctx.opsets.end())
    throw Error(ErrorKind::InvalidModel, n.describe() + " uses domain '" + n.domain + "' which the model does not import");
  n.opset = it->second;
  n.inputs.assign(p.input().begin(), p.input().end());
  n.outputs.assign(p.output().begin(), p.output().end());
  std::set<std::string> implicit;
  for (const auto& a : p.attribute()) {
    if (a.name().empty()) throw Error(ErrorKind::InvalidModel, n.describe() + " has an attribute with no name");
    if (a.type() == onnx::AttributeProto::GRAPH || (a.type() == onnx::AttributeProto::UNDEFINED && a.has_g())) {
      Attribute attr;
      attr.kind = Attribute::Kind::Graph;
      attr.graph = subgraph_from_proto(a.g(), n.name + "/" + a.name(), visible, ctx);
      implicit.insert(attr.graph->outer_inputs.begin(), attr.graph->outer_inputs.end());
      n.attributes[a.name()] = std::move(attr);
    } else {
      n.attributes[a.name()] = attribute_from_proto(a, n.describe(), &ctx.external);
    }
  }
  n.implicit_inputs.assign(implicit.begin(), implicit.end());
  return n;
}

// Kahn's algorithm; ties broken by original position so the order is stable.
// A node depends on its inputs and on its subgraphs' implicit inputs.
// Node::index becomes `base` + position.
std::vector<Node> topological_sort(std::vector<Node> nodes, const std::set<std::string>& available, size_t base = 0) {
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
    std::vector<std::string> reads = nodes[i].inputs;
    reads.insert(reads.end(), nodes[i].implicit_inputs.begin(), nodes[i].implicit_inputs.end());
    for (const auto& in : reads) {
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
    order.back().index = base + order.size() - 1;
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!done[i])
        throw Error(ErrorKind::Cycle, "the graph has a cycle through " + nodes[i].describe() + " (" +
                                          std::to_string(nodes.size() - order.size()) + " nodes never become ready)");
  }
  return order;
}

// Sets each node's input_info from what is known of its inputs.
void set_input_info(std::vector<Node>& nodes, const std::map<std::string, Tensor>& initializers,
                    const std::map<std::string, IoInfo>& value_info) {
  for (auto& n : nodes) {
    n.input_info.assign(n.inputs.size(), ValueInfo{});
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      ValueInfo& vi = n.input_info[i];
      if (auto init = initializers.find(n.inputs[i]); init != initializers.end()) {
        vi = ValueInfo{init->second.dtype(), init->second.shape(), true};
      } else if (auto it = value_info.find(n.inputs[i]); it != value_info.end() && it->second.kind == ValueKind::Tensor &&
                                                          !it->second.optional) {
        vi = ValueInfo{it->second.type, it->second.shape, it->second.has_shape};
      }
    }
  }
}

std::map<std::string, Tensor> initializers_from_proto(const onnx::GraphProto& g, const std::string& where,
                                                      ExternalData& external) {
  if (g.sparse_initializer_size() > 0)
    throw Error(ErrorKind::BadInitializer, "sparse initializers are not supported" + where);
  std::map<std::string, Tensor> out;
  for (const auto& init : g.initializer()) {
    if (init.name().empty()) throw Error(ErrorKind::BadInitializer, "an initializer has no name" + where);
    Tensor t = tensor_from_proto(init, "initializer '" + init.name() + "'" + where, ErrorKind::BadInitializer,
                                 &external);
    if (!out.emplace(init.name(), std::move(t)).second)
      throw Error(ErrorKind::InvalidModel, "initializer '" + init.name() + "'" + where + " is defined twice");
  }
  return out;
}

// A GRAPH attribute: `outer` holds every name of the enclosing scopes.
std::shared_ptr<const Graph> subgraph_from_proto(const onnx::GraphProto& g, const std::string& name,
                                                 const std::set<std::string>& outer, LoadContext& ctx) {
  auto graph = std::make_shared<Graph>();
  graph->name = name;
  const std::string where = " of subgraph '" + name + "'";
  graph->initializers = initializers_from_proto(g, where, ctx.external);
  std::set<std::string> local;  // defined in this graph: initializers, inputs, node outputs
  for (const auto& kv : graph->initializers) local.insert(kv.first);
  for (const auto& in : g.input()) {
    if (in.name().empty()) throw Error(ErrorKind::InvalidModel, "an input" + where + " has no name");
    if (!local.insert(in.name()).second && !graph->initializers.count(in.name()))
      throw Error(ErrorKind::InvalidModel, "input '" + in.name() + "'" + where + " is declared twice");
    graph->inputs.push_back(io_info_from_proto(in, false));
  }
  std::set<std::string> inputs_and_inits = local;
  for (const auto& node : g.node())
    for (const auto& o : node.output())
      if (!o.empty()) local.insert(o);
  std::set<std::string> visible = outer;  // for this graph's own subgraphs
  visible.insert(local.begin(), local.end());

  // Reserve this graph's node indices before its subgraphs take theirs.
  const size_t base = ctx.next_index;
  ctx.next_index += static_cast<size_t>(g.node_size());
  std::vector<Node> nodes;
  nodes.reserve(static_cast<size_t>(g.node_size()));
  for (int i = 0; i < g.node_size(); ++i)
    nodes.push_back(node_from_proto(g.node(i), static_cast<size_t>(i), ctx, name + "/", visible));

  std::set<std::string> outer_reads;
  auto resolve = [&](const std::string& value, const std::string& reader) {
    if (value.empty() || local.count(value)) return;
    if (!outer.count(value))
      throw Error(ErrorKind::DanglingInput, reader + " reads '" + value + "', which is no input, initializer or node output" +
                                                where + " nor a value of an enclosing scope");
    outer_reads.insert(value);
  };
  for (const auto& n : nodes) {
    for (const auto& in : n.inputs) resolve(in, n.describe());
    for (const auto& in : n.implicit_inputs) resolve(in, n.describe());
  }
  for (const auto& out : g.output()) {
    resolve(out.name(), "output '" + out.name() + "'" + where);
    graph->outputs.push_back(io_info_from_proto(out, false));
  }
  std::set<std::string> available = inputs_and_inits;
  available.insert(outer_reads.begin(), outer_reads.end());
  graph->nodes = topological_sort(std::move(nodes), available, base);
  graph->outer_inputs.assign(outer_reads.begin(), outer_reads.end());

  return graph;
}

// The subgraphs of a graph proto by Graph::name ("<node name>/<attribute>",
// nested ones too), as node_from_proto names them; nullptr for a name two
// subgraphs share (duplicate node names), which stays unresolved.
void index_subgraph_protos(const onnx::GraphProto& g, const std::string& prefix,
                           std::map<std::string, const onnx::GraphProto*>& out) {
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& p = g.node(i);
    const std::string node = prefix + (p.name().empty() ? p.op_type() + "_" + std::to_string(i) : p.name());
    for (const auto& a : p.attribute()) {
      if (!a.has_g()) continue;
      const std::string name = node + "/" + a.name();
      auto [it, fresh] = out.emplace(name, &a.g());
      if (!fresh) it->second = nullptr;
      index_subgraph_protos(a.g(), name + "/", out);
    }
  }
}

// Adds what initializers are (their dtype and shape) to a scope's values.
void add_initializers(std::map<std::string, IoInfo>& scope, const std::map<std::string, Tensor>& initializers) {
  for (const auto& [name, t] : initializers) {
    IoInfo& info = scope[name];
    info = IoInfo{};
    info.name = name;
    info.type = t.dtype();
    info.shape = t.shape();
    info.has_shape = true;
  }
}

// Sets input_info of every subgraph node under `nodes`, from what its scope
// knows: the subgraph's initializers, inputs and value_info (from the model,
// and from shape inference, which infers inside subgraphs), then the
// enclosing scopes' (`outer`). Runs after shape inference, which needs the
// whole model; so it completes graphs built before it. An EP claims a
// subgraph node by the same dtypes and shapes as a top-level one.
void set_subgraph_input_info(const std::vector<Node>& nodes, const std::map<std::string, IoInfo>& outer,
                             const std::map<std::string, const onnx::GraphProto*>& protos) {
  for (const Node& n : nodes) {
    for (const auto& kv : n.attributes) {
      if (kv.second.kind != Attribute::Kind::Graph || !kv.second.graph) continue;
      // Built by subgraph_from_proto (make_shared<Graph>) and not yet shared
      // with any session: completing it here is the last step of building it.
      Graph& g = const_cast<Graph&>(*kv.second.graph);
      std::map<std::string, IoInfo> scope = outer;
      if (auto it = protos.find(g.name); it != protos.end() && it->second)
        for (const auto& v : it->second->value_info()) scope[v.name()] = io_info_from_proto(v, false);
      for (const auto& v : g.inputs) scope[v.name] = v;
      add_initializers(scope, g.initializers);
      set_input_info(g.nodes, g.initializers, scope);
      set_subgraph_input_info(g.nodes, scope, protos);
    }
  }
}

// libonnx's shape inference cannot read external tensors: it skips the
// nodes whose inference needs their values (Reshape's shape, Slice's
// starts, ...), which are small. So external tensors of at most 64 KiB, in
// the graph and in its subgraphs, become raw_data in the proto shape
// inference sees (read again; their files are open). Larger ones stay
// external, and so do those that cannot be read: the loader refused the
// tensors it reads already, the others (an attribute of a type it ignores)
// are none of shape inference's business either.
void inline_small_external_tensors(onnx::GraphProto& g, ExternalData& external) {
  constexpr size_t kMaxInlined = 64 * 1024;
  auto inline_one = [&](onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL || !is_supported_type(t.data_type())) return;
    std::string raw;
    try {
      const int64_t count = shape_size(Shape(t.dims().begin(), t.dims().end()));
      if (count > static_cast<int64_t>(kMaxInlined)) return;  // and bytes cannot overflow below
      const size_t bytes = static_cast<size_t>(count) * element_size(static_cast<DataType>(t.data_type()));
      if (bytes > kMaxInlined) return;
      raw.assign(bytes, '\0');
      const std::string what = "tensor '" + t.name() + "'";
      external.read(external.locate(t, what, bytes), what, raw.data());
    } catch (const Error&) {
      return;
    }
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
    t.set_raw_data(std::move(raw));
  };
  for (auto& t : *g.mutable_initializer()) inline_one(t);
  for (auto& n : *g.mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) inline_one(*a.mutable_t());
      if (a.has_g()) inline_small_external_tensors(*a.mutable_g(), external);
    }
}

Model build(onnx::ModelProto& proto, const std::string& name, const LoadOptions& options, ExternalData& external) {
  if (proto.ir_version() <= 0 || !proto.has_graph())
    throw Error(ErrorKind::InvalidModel, "'" + name + "' is not an ONNX model (no ir_version or no graph)");
  if (proto.ir_version() > kMaxIrVersion)
    throw Error(ErrorKind::InvalidModel, "'" + name + "' has IR version " + std::to_string(proto.ir_version()) +
                                             "; the runtime reads IR versions 1 to " + std::to_string(kMaxIrVersion));
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
  check_graph_attributes(g, m.opsets);
  m.initializers = initializers_from_proto(g, "", external);
  std::set<std::string> available;
  for (const auto& kv : m.initializers) available.insert(kv.first);
  for (const auto& in : g.input()) {
    if (in.name().empty()) throw Error(ErrorKind::InvalidModel, "a graph input has no name");
    if (m.initializers.count(in.name())) continue;  // has a default: not a required input
    if (!available.insert(in.name()).second)
      throw Error(ErrorKind::InvalidModel, "graph input '" + in.name() + "' is declared twice");
    m.inputs.push_back(io_info_from_proto(in, true));
  }
  std::set<std::string> visible = available;  // what subgraphs may read
  for (const auto& node : g.node())
    for (const auto& o : node.output())
      if (!o.empty()) visible.insert(o);
  LoadContext ctx{m.opsets, static_cast<size_t>(g.node_size()), external};
  std::vector<Node> nodes;
  nodes.reserve(static_cast<size_t>(g.node_size()));
  for (int i = 0; i < g.node_size(); ++i)
    nodes.push_back(node_from_proto(g.node(i), static_cast<size_t>(i), ctx, "", visible));
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

  if (options.shape_inference && external.used()) inline_small_external_tensors(*proto.mutable_graph(), external);
  if (options.shape_inference && prepare_for_shape_inference(proto)) {
    try {
      onnx::shape_inference::InferShapes(proto);
    } catch (const std::exception&) {
      // Shape inference is advisory: shapes are checked again at run time.
    }
  }
  for (const auto& v : proto.graph().value_info()) m.value_info[v.name()] = io_info_from_proto(v, false);
  for (const auto& v : m.inputs) m.value_info[v.name] = v;
  for (const auto& v : m.outputs) m.value_info[v.name] = v;
  set_input_info(m.nodes, m.initializers, m.value_info);
  std::map<std::string, const onnx::GraphProto*> subgraph_protos;
  index_subgraph_protos(proto.graph(), "", subgraph_protos);
  if (!subgraph_protos.empty()) {
    std::map<std::string, IoInfo> scope = m.value_info;
    add_initializers(scope, m.initializers);
    set_subgraph_input_info(m.nodes, scope, subgraph_protos);
  }
  return m;
}

onnx::ModelProto parse(const std::string& bytes, const std::string& name) {
  onnx::ModelProto proto;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorKind::InvalidModel, "'" + name + "' is not an ONNX model or is truncated (protobuf parse failed)");
  return proto;
}

}  // namespace

Model load_model_bytes(const std::string& bytes, const std::string& name, const LoadOptions& options) {
  onnx::ModelProto proto = parse(bytes, name);
  ExternalData none;  // no directory: external tensors are refused
  return build(proto, name, options, none);
}

Model load_model_file(const std::string& path, const LoadOptions& options) {
  // What is at the path decides how to read it: only a regular file has a
  // size to check before reading (a device or a FIFO may never end).
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ErrorKind::Io, "cannot open model file '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw Error(ErrorKind::Io, "'" + path + "' is a directory, not a model file");
  if (!S_ISREG(st.st_mode))
    throw Error(ErrorKind::Io, "'" + path + "' is not a regular file (a device, FIFO or socket); give a model file");
  constexpr off_t kMaxBytes = std::numeric_limits<int>::max();  // protobuf's limit on one message
  if (st.st_size > kMaxBytes)
    throw Error(ErrorKind::InvalidModel, "'" + path + "' is " + std::to_string(st.st_size) +
                                             " bytes; an ONNX model file holds at most 2 GiB (larger models keep "
                                             "their weights in external data files)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot open model file '" + path + "': " + std::strerror(errno));
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  in.read(bytes.data(), st.st_size);
  if (in.gcount() != st.st_size || in.bad()) throw Error(ErrorKind::Io, "cannot read model file '" + path + "'");
  onnx::ModelProto proto = parse(bytes, path);
  bytes = std::string();  // the parsed model holds what the load needs
  ExternalData external(path);
  return build(proto, path, options, external);
}

}  // namespace epprof::rt::detail
