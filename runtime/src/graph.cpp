#include "epprof/rt/graph.h"

#include "epprof/rt/error.h"
#include "epprof/rt/execution_provider.h"

namespace epprof::rt {

namespace {
const char* kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::Float: return "float";
    case Attribute::Kind::Int: return "int";
    case Attribute::Kind::String: return "string";
    case Attribute::Kind::Tensor: return "tensor";
    case Attribute::Kind::Floats: return "floats";
    case Attribute::Kind::Ints: return "ints";
    case Attribute::Kind::Strings: return "strings";
    case Attribute::Kind::Graph: return "graph";
    case Attribute::Kind::TypeProto: return "type";
    case Attribute::Kind::Other: break;
  }
  return "other";
}

const Attribute* get(const Node& n, const std::string& key, Attribute::Kind want) {
  const Attribute* a = n.attr(key);
  if (a && a->kind != want)
    throw Error(ErrorKind::InvalidModel, n.describe() + ": attribute '" + key + "' is " + kind_name(a->kind) +
                                             ", expected " + kind_name(want));
  return a;
}
}  // namespace

const Attribute* Node::attr(const std::string& key) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? nullptr : &it->second;
}

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  const Attribute* a = get(*this, key, Attribute::Kind::Int);
  return a ? a->i : fallback;
}

float Node::attr_float(const std::string& key, float fallback) const {
  const Attribute* a = get(*this, key, Attribute::Kind::Float);
  return a ? a->f : fallback;
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const Attribute* a = get(*this, key, Attribute::Kind::String);
  return a ? a->s : fallback;
}

std::vector<int64_t> Node::attr_ints(const std::string& key, const std::vector<int64_t>& fallback) const {
  const Attribute* a = get(*this, key, Attribute::Kind::Ints);
  return a ? a->ints : fallback;
}

std::vector<float> Node::attr_floats(const std::string& key) const {
  const Attribute* a = get(*this, key, Attribute::Kind::Floats);
  return a ? a->floats : std::vector<float>{};
}

const Graph* Node::attr_graph(const std::string& key) const {
  const Attribute* a = get(*this, key, Attribute::Kind::Graph);
  return a ? a->graph.get() : nullptr;
}

size_t Node::num_present_inputs() const {
  size_t n = 0;
  for (const auto& i : inputs) n += !i.empty();
  return n;
}

std::string Node::describe() const { return "node '" + name + "' (" + op_type + ")"; }

const Tensor& KernelContext::input(size_t i) const {
  if (i >= inputs.size() || !inputs[i])
    throw Error(ErrorKind::Kernel, "required input " + std::to_string(i) + " is missing");
  return *inputs[i];
}

}  // namespace epprof::rt
