// The runtime's view of a graph node: what execution providers look at to
// claim a node and build its kernel. Independent of the ONNX protobuf classes.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "epprof/rt/tensor.h"

namespace epprof::rt {

struct Graph;

struct Attribute {
  // TypeProto: a type (the Optional op's `type`), held in `t` as the empty
  // optional of that type (Tensor::none), i.e. its element type and
  // whether it is a sequence.
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Graph, TypeProto, Other };
  Kind kind = Kind::Other;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  rt::Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<const rt::Graph> graph;  // Kind::Graph: a subgraph (If branches, Loop/Scan bodies)
};

// A graph value's declared type: a tensor, a sequence of tensors or an
// optional tensor or sequence (see Tensor for how they are passed).
enum class ValueKind { Tensor, Sequence };

struct IoInfo {
  std::string name;
  DataType type = DataType::Undefined;  // the (sequence's) element type; Undefined: not known
  std::vector<int64_t> shape;  // -1 for a dynamic dim
  bool has_shape = false;      // false: rank unknown (always false for a sequence)
  ValueKind kind = ValueKind::Tensor;
  bool optional = false;       // an ONNX optional: may be an empty optional (Tensor::is_none())
};

// What is known about a node input before run time (from the model's
// value_info, shape inference, graph inputs and initializers), so that an
// EP can claim a node by dtype and shape.
struct ValueInfo {
  DataType type = DataType::Undefined;  // Undefined: not known
  Shape shape;                          // -1 for an unknown dim
  bool has_shape = false;               // false: rank not known
};

struct Node {
  size_t index = 0;          // position in topological order
  std::string name;          // never empty: "<op_type>_<index>" when the model has none
  std::string op_type;
  std::string domain;        // "" for the default ONNX domain
  int opset = 0;             // opset version imported for `domain`
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::map<std::string, Attribute> attributes;
  std::vector<ValueInfo> input_info;  // one per input, as known at load time
  // Values of enclosing scopes that the node's subgraphs read (sorted, no
  // duplicates): the node depends on them as on its inputs. Empty for
  // nodes without GRAPH attributes.
  std::vector<std::string> implicit_inputs;

  bool has_attr(const std::string& key) const { return attributes.count(key) != 0; }
  // Typed getters: return `fallback` when absent, throw Error when present with another kind.
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key, const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> attr_floats(const std::string& key) const;
  const Graph* attr_graph(const std::string& key) const;  // nullptr when absent
  const Attribute* attr(const std::string& key) const;

  size_t num_present_inputs() const;
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  bool has_output(size_t i) const { return i < outputs.size() && !outputs[i].empty(); }
  std::string describe() const;  // "node 'conv1' (Conv)"
};

// A subgraph: the value of a GRAPH attribute. Its nodes are named after
// where they sit: node "Add_3" of attribute "body" of node "loop_1" is
// "loop_1/body/Add_3" (nested subgraphs repeat the scheme), and their
// Node::index values follow the top-level nodes' and every earlier
// subgraph's, so a node index is unique in a session. Names not defined in
// the subgraph resolve against the enclosing scopes (checked at load).
struct Graph {
  std::string name;                 // "<node name>/<attribute name>"
  std::vector<Node> nodes;          // topological order
  std::map<std::string, Tensor> initializers;
  std::vector<IoInfo> inputs;       // positional: the op binds them by order
  std::vector<IoInfo> outputs;
  std::vector<std::string> outer_inputs;  // names read from enclosing scopes (sorted)
};

}  // namespace epprof::rt
