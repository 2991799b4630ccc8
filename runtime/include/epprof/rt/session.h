// Public entry point of the reference runtime.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "epprof/rt/error.h"
#include "epprof/rt/execution_provider.h"
#include "epprof/rt/graph.h"
#include "epprof/rt/observer.h"
#include "epprof/rt/tensor.h"

namespace epprof::rt {

enum class ExecutorKind { Sequential, Parallel };

struct SessionOptions {
  std::vector<std::shared_ptr<ExecutionProvider>> providers;  // priority order; empty → CPU EP
  ExecutorKind executor = ExecutorKind::Sequential;
  int threads = 0;                 // parallel executor pool size; 0 → hardware concurrency
  RunObserver* observer = nullptr;  // session-wide observer (not owned); also sees load/init phases
  bool shape_inference = true;     // run ONNX shape inference at load (failures are ignored)
};

struct RunOptions {
  RunObserver* observer = nullptr;  // per-run observer, called in addition to the session one
};

class Session {
 public:
  explicit Session(const std::string& model_path, SessionOptions options = {});
  static Session from_bytes(const std::string& bytes, SessionOptions options = {},
                            const std::string& name = "<memory>");
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const std::vector<IoInfo>& inputs() const;   // required inputs (initializers excluded)
  const std::vector<IoInfo>& outputs() const;
  const std::vector<Node>& nodes() const;      // topological order
  const std::string& provider_of(size_t node_index) const;
  const char* executor_name() const;
  int opset() const;                            // default-domain opset of the model

  // Inputs by name; outputs in outputs() order. Throws Error(BadInput) on a missing,
  // unknown, mistyped or misshapen input. Thread-safe: concurrent runs are allowed.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, const RunOptions& options = {});

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace epprof::rt
