// The C description of a node (epprof_ep_node) built from the runtime's
// Node, with the storage its pointers point into.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "epprof/ep_plugin.h"
#include "epprof/rt/graph.h"

namespace epprof::rt::detail {

class PluginNodeDesc {
 public:
  explicit PluginNodeDesc(const Node& node);
  PluginNodeDesc(const PluginNodeDesc&) = delete;
  PluginNodeDesc& operator=(const PluginNodeDesc&) = delete;

  // Valid while this object lives; the Node must outlive it too.
  const epprof_ep_node* get() const { return &node_; }

 private:
  epprof_ep_node node_{};
  std::vector<epprof_ep_tensor> inputs_;
  std::vector<epprof_ep_attribute> attrs_;
  // Pointer arrays for STRINGS attributes and tensors for TENSOR ones.
  // Stored behind unique_ptr so growing the outer vectors never moves them.
  std::vector<std::unique_ptr<std::vector<const char*>>> string_lists_;
  std::vector<std::unique_ptr<epprof_ep_tensor>> attr_tensors_;
};

// A C tensor view of `t` (borrowed: valid while `t` lives unchanged).
epprof_ep_tensor tensor_view(const Tensor* t);

}  // namespace epprof::rt::detail
