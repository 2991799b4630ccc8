// The runtime's view of a graph node: what execution providers look at to
// claim a node and build its kernel. Independent of the ONNX protobuf classes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "epprof/rt/tensor.h"

namespace epprof::rt {

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Other };
  Kind kind = Kind::Other;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  rt::Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
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

  bool has_attr(const std::string& key) const { return attributes.count(key) != 0; }
  // Typed getters: return `fallback` when absent, throw Error when present with another kind.
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key, const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> attr_floats(const std::string& key) const;
  const Attribute* attr(const std::string& key) const;

  size_t num_present_inputs() const;
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  bool has_output(size_t i) const { return i < outputs.size() && !outputs[i].empty(); }
  std::string describe() const;  // "node 'conv1' (Conv)"
};

}  // namespace epprof::rt
