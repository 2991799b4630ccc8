// Shape epochs: when a session can prove that every node's shapes follow
// from the graph inputs' shapes (and the contents of a few small inputs),
// runs whose inputs have the same shapes (and contents there) get the same
// epoch (NodeInfo::shape_epoch), so an observer that derives data from a
// node's shapes can reuse it without reading the tensors again.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "epprof/rt/tensor.h"
#include "executor.h"

namespace epprof::rt::detail {

// What a plan's epochs key on, and which of its nodes they cover. A node is
// in the epoch when its input and output shapes are a function of the graph
// inputs' shapes and of the contents of the inputs marked in `value_keys`
// (one flag per plan.input_slots). It is not (node_varies) when its op takes
// a shape, axes or an If condition from a value that depends on another
// input's contents (a Reshape whose shape the caller feeds, say), runs a
// Loop or Scan (their trip counts), is an op this analysis does not know, or
// reads a value of a node that is not in the epoch.
struct EpochKey {
  bool enabled = false;          // some node is in the epoch
  std::vector<bool> value_keys;  // per graph input: its contents are part of the key
  std::vector<bool> node_varies;  // per plan.nodes: not in the epoch
};

// The key for `plan`, keying on the contents of as few of the inputs in
// `candidates` (per plan.input_slots; empty: none) as it needs to cover the
// most nodes: small integer or bool inputs, such as the sample rate a
// Silero VAD's If tests.
EpochKey prove_epochs(const ExecPlan& plan, const std::vector<bool>& candidates = {});

class ShapeEpochs {
 public:
  explicit ShapeEpochs(EpochKey key) : key_(std::move(key)) {}
  // The epoch of an execution of `plan` whose graph inputs are the values
  // of slots first[i] (in the plan's input order), then of slots then[j] (a
  // subgraph's outer values), as plan.value(values, slot, outer) reads them:
  // the last run's when their types and shapes, and the contents of the
  // key's value inputs, are the same, otherwise a new one, unique in the
  // process. 0 when disabled, or when an input is a sequence or an optional
  // (their shapes do not describe their items). Thread-safe.
  uint64_t epoch_for(const ExecPlan& plan, const std::vector<Tensor>& values, const Tensor* const* outer,
                     const std::vector<int>& first, const std::vector<int>& then = {});
  // The epoch of plan.nodes[position] in a run of epoch `run_epoch`: that
  // epoch, or 0 for a node outside it.
  uint64_t node_epoch(uint64_t run_epoch, size_t position) const {
    return run_epoch && !key_.node_varies[position] ? run_epoch : 0;
  }
  // Whether plan.nodes[position] is in every nonzero epoch.
  bool covers(size_t position) const { return !key_.node_varies[position]; }

 private:
  const EpochKey key_;
  std::mutex mu_;
  std::vector<std::pair<DataType, Shape>> last_;
  std::vector<std::string> last_values_;  // per value key, its bytes
  uint64_t last_epoch_ = 0;
};

}  // namespace epprof::rt::detail
