// Execution providers and kernels. A session holds EPs in priority order; each
// node goes to the first EP whose claims() returns true.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "epprof/rt/graph.h"
#include "epprof/rt/tensor.h"

namespace epprof::rt {

// Runs the subgraphs (GRAPH attributes) of the node being computed.
class SubgraphRunner {
 public:
  // Runs `graph`, one of the node's GRAPH attributes (Node::attr_graph), on
  // `inputs` (one per graph input, in order) and returns its outputs in
  // order. Values the graph reads from enclosing scopes are the ones the
  // node sees. Its nodes run one after another on the calling thread,
  // through the kernels the session created for them and with the run's
  // observers (each node execution a node_begin / node_end of its own).
  // Throws Error on a wrong input count or a failing node.
  virtual std::vector<Tensor> run(const Graph& graph, std::vector<Tensor> inputs) const = 0;

 protected:
  ~SubgraphRunner() = default;
};

struct KernelContext {
  std::vector<const Tensor*> inputs;  // nullptr for an omitted optional input
  std::vector<Tensor> outputs;        // sized to the node's output count; kernels fill them
  // Set for a node with GRAPH attributes (If, Loop, Scan, SequenceMap), null otherwise.
  const SubgraphRunner* subgraphs = nullptr;

  const Tensor& input(size_t i) const;  // throws Error if missing
  const Tensor* optional_input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  size_t num_inputs() const { return inputs.size(); }
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Must be deterministic and thread-safe for concurrent calls on distinct contexts
  // (the same kernel may run in two concurrent Session::run calls).
  virtual void compute(KernelContext& ctx) const = 0;
  // Called at most once, when the session is created and before any
  // compute(), with the node's inputs that are constants of the session
  // (its initializers and the values folded from them; graph inputs, which
  // a run may feed, never are) and null for the others. A kernel may keep
  // data derived from them (a weight packed for its gemm); compute() still
  // gets every input, and must use that data only for the very buffer it
  // came from (Tensor::shares_buffer). Must not throw: a kernel that cannot
  // prepare computes as it would have. The default does nothing.
  virtual void prepare(const std::vector<const Tensor*>& constants) noexcept { (void)constants; }
};

class ExecutionProvider {
 public:
  virtual ~ExecutionProvider() = default;
  virtual std::string name() const = 0;
  virtual bool claims(const Node& node) const = 0;
  virtual std::unique_ptr<Kernel> create_kernel(const Node& node) const = 0;
};

// The built-in CPU EP (name "CPUExecutionProvider").
std::shared_ptr<ExecutionProvider> make_cpu_execution_provider();

// The op types the CPU EP supports and their opset range.
struct OpSupport {
  std::string op_type;
  int since_version;  // lowest opset of `domain` the kernel implements
  int max_version;    // highest opset of `domain` the kernel implements
  std::string domain;  // "" : the default ONNX domain; else e.g. "com.microsoft"
};
std::vector<OpSupport> cpu_supported_ops();

}  // namespace epprof::rt
