// Shape epochs: when a session can prove that every node's shapes follow
// from the graph inputs' shapes, runs whose inputs have the same shapes get
// the same epoch (NodeInfo::shape_epoch), so an observer that derives data
// from a node's shapes can reuse it without reading the tensors again.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "epprof/rt/tensor.h"
#include "executor.h"

namespace epprof::rt::detail {

// Whether the shapes of every value in `plan` are a function of the graph
// inputs' shapes: false when an op takes a shape, or axes, from a value
// that depends on a graph input's contents (a Reshape whose shape is fed by
// the caller, say), or runs an op this analysis does not know.
bool shapes_follow_input_shapes(const ExecPlan& plan);

class ShapeEpochs {
 public:
  explicit ShapeEpochs(bool enabled) : enabled_(enabled) {}
  // The epoch of a run with these graph inputs (in the plan's input order):
  // the last run's when their types and shapes are the same, otherwise a
  // new one, unique in the process. 0 when disabled, or when an input is a
  // sequence or an optional (their shapes do not describe their items).
  // Thread-safe.
  uint64_t epoch_for(const Tensor* const* inputs, size_t count);

 private:
  const bool enabled_;
  std::mutex mu_;
  std::vector<std::pair<DataType, Shape>> last_;
  uint64_t last_epoch_ = 0;
};

}  // namespace epprof::rt::detail
