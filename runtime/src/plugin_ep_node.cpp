#include "plugin_ep_node.h"

namespace epprof::rt::detail {

namespace {

int32_t attr_type(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::Float: return EPPROF_EP_ATTR_FLOAT;
    case Attribute::Kind::Int: return EPPROF_EP_ATTR_INT;
    case Attribute::Kind::String: return EPPROF_EP_ATTR_STRING;
    case Attribute::Kind::Tensor: return EPPROF_EP_ATTR_TENSOR;
    case Attribute::Kind::Floats: return EPPROF_EP_ATTR_FLOATS;
    case Attribute::Kind::Ints: return EPPROF_EP_ATTR_INTS;
    case Attribute::Kind::Strings: return EPPROF_EP_ATTR_STRINGS;
    case Attribute::Kind::Graph:  // subgraphs and types are not passed to plugin EPs
    case Attribute::Kind::TypeProto:
    case Attribute::Kind::Other: break;
  }
  return EPPROF_EP_ATTR_UNDEFINED;
}

}  // namespace

epprof_ep_tensor tensor_view(const Tensor* t) {
  epprof_ep_tensor v{};
  v.size = sizeof v;
  if (t == nullptr || t->empty()) return v;  // omitted input: UNDEFINED, rank 0
  v.dtype = static_cast<int32_t>(t->dtype());
  v.rank = static_cast<int32_t>(t->rank());
  v.dims = t->shape().empty() ? nullptr : t->shape().data();
  v.data = t->raw();
  v.byte_size = t->byte_size();
  return v;
}

PluginNodeDesc::PluginNodeDesc(const Node& node) {
  inputs_.resize(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    epprof_ep_tensor& t = inputs_[i];
    t.size = sizeof t;
    if (!node.has_input(i) || i >= node.input_info.size()) {
      t.rank = node.has_input(i) ? -1 : 0;  // unknown, or omitted
      continue;
    }
    const ValueInfo& vi = node.input_info[i];
    t.dtype = static_cast<int32_t>(vi.type);
    t.rank = vi.has_shape ? static_cast<int32_t>(vi.shape.size()) : -1;
    t.dims = vi.has_shape && !vi.shape.empty() ? vi.shape.data() : nullptr;
  }
  attrs_.reserve(node.attributes.size());
  for (const auto& [name, a] : node.attributes) {
    epprof_ep_attribute c{};
    c.name = name.c_str();
    c.type = attr_type(a.kind);
    c.f = a.f;
    c.i = a.i;
    switch (a.kind) {
      case Attribute::Kind::String: c.s = a.s.c_str(); break;
      case Attribute::Kind::Tensor:
        attr_tensors_.push_back(std::make_unique<epprof_ep_tensor>(tensor_view(&a.t)));
        c.t = attr_tensors_.back().get();
        break;
      case Attribute::Kind::Floats: c.count = a.floats.size(); c.floats = a.floats.data(); break;
      case Attribute::Kind::Ints: c.count = a.ints.size(); c.ints = a.ints.data(); break;
      case Attribute::Kind::Strings: {
        auto list = std::make_unique<std::vector<const char*>>();
        for (const auto& s : a.strings) list->push_back(s.c_str());
        c.count = list->size();
        c.strings = list->data();
        string_lists_.push_back(std::move(list));
        break;
      }
      default: break;
    }
    attrs_.push_back(c);
  }
  node_.size = sizeof node_;
  node_.name = node.name.c_str();
  node_.op_type = node.op_type.c_str();
  node_.domain = node.domain.c_str();
  node_.opset = node.opset;
  node_.index = node.index;
  node_.inputs = inputs_.empty() ? nullptr : inputs_.data();
  node_.num_inputs = inputs_.size();
  node_.num_outputs = node.outputs.size();
  node_.attributes = attrs_.empty() ? nullptr : attrs_.data();
  node_.num_attributes = attrs_.size();
}

}  // namespace epprof::rt::detail
