// Small in-memory ONNX models for runtime unit tests.
#pragma once
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace epprof::rt::testing {

inline onnx::ModelProto make_model(int opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

inline void add_io(onnx::ModelProto& m, bool input, const std::string& name, const std::vector<int64_t>& dims,
                   int elem_type = onnx::TensorProto::FLOAT) {
  auto* v = input ? m.mutable_graph()->add_input() : m.mutable_graph()->add_output();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

inline onnx::NodeProto* add_node(onnx::ModelProto& m, const std::string& op, const std::string& name,
                                 const std::vector<std::string>& in, const std::vector<std::string>& out) {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

inline onnx::TensorProto* add_float_init(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims,
                                         const std::vector<float>& values) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
  return t;
}

inline onnx::TensorProto* add_int64_init(onnx::ModelProto& m, const std::string& name,
                                         const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return t;
}

// Attributes on a node (add_node's result).
inline onnx::AttributeProto* add_attr(onnx::NodeProto* n, const std::string& key,
                                      onnx::AttributeProto::AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(type);
  return a;
}
inline void set_int(onnx::NodeProto* n, const std::string& key, int64_t v) {
  add_attr(n, key, onnx::AttributeProto::INT)->set_i(v);
}
inline void set_float(onnx::NodeProto* n, const std::string& key, float v) {
  add_attr(n, key, onnx::AttributeProto::FLOAT)->set_f(v);
}
inline void set_string(onnx::NodeProto* n, const std::string& key, const std::string& v) {
  add_attr(n, key, onnx::AttributeProto::STRING)->set_s(v);
}
inline void set_ints(onnx::NodeProto* n, const std::string& key, const std::vector<int64_t>& v) {
  auto* a = add_attr(n, key, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void set_floats(onnx::NodeProto* n, const std::string& key, const std::vector<float>& v) {
  auto* a = add_attr(n, key, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
inline void set_strings(onnx::NodeProto* n, const std::string& key, const std::vector<std::string>& v) {
  auto* a = add_attr(n, key, onnx::AttributeProto::STRINGS);
  for (const auto& x : v) a->add_strings(x);
}

// A GRAPH attribute `name` of `n` (an If branch, a Loop or Scan body),
// its graph named `name` too.
inline onnx::GraphProto* graph_attr(onnx::NodeProto* n, const std::string& name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

// A subgraph's input or output; dims empty: a scalar.
inline void gio(onnx::GraphProto* g, bool input, const std::string& name, int elem = onnx::TensorProto::FLOAT,
                const std::vector<int64_t>& dims = {}) {
  auto* v = input ? g->add_input() : g->add_output();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

// A node of a subgraph.
inline onnx::NodeProto* gnode(onnx::GraphProto* g, const std::string& op, const std::string& name,
                              const std::vector<std::string>& in, const std::vector<std::string>& out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

// x[2,3] -> Relu -> y[2,3]
inline onnx::ModelProto relu_model() {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2, 3});
  add_node(m, "Relu", "relu", {"x"}, {"y"});
  add_io(m, false, "y", {2, 3});
  return m;
}

inline std::string bytes(const onnx::ModelProto& m) { return m.SerializeAsString(); }

}  // namespace epprof::rt::testing
