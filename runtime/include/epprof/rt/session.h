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

// Thread settings, as ONNX Runtime splits them (SessionOptions
// intra_op_num_threads / inter_op_num_threads):
//
// - intra_op_threads: the threads one node's computation may use: the
//   session's own pool of intra_op_threads - 1 workers plus the thread that
//   runs the node. Conv (by tiles of output rows, channels or columns), the
//   large gemms of MatMul, Gemm, ConvTranspose, the RNNs and the quantized
//   matmuls (by blocks of rows or columns) and batched MatMul (by batches)
//   split their work across it; each part's gemm is a single-threaded
//   OpenBLAS call (every run() keeps OpenBLAS's process-global count at 1).
//   1 runs each node on the thread that runs it. 0 →
//   default_intra_op_threads(), ONNX Runtime's default.
// - inter_op_threads: the parallel executor's pool (nodes that run at
//   once); 0 → hardware concurrency. The sequential executor has no pool
//   and ignores it. Nodes running at once share the session's one intra-op
//   pool (as ONNX Runtime's parallel executor shares its intra-op pool): a
//   node that finds it busy runs its parts on its own thread, so a run keeps
//   at most inter_op_threads + intra_op_threads - 1 threads busy rather
//   than their product.
struct SessionOptions {
  std::vector<std::shared_ptr<ExecutionProvider>> providers;  // priority order; empty → CPU EP
  ExecutorKind executor = ExecutorKind::Sequential;
  int intra_op_threads = 0;        // 0..kMaxThreads; 0 → default_intra_op_threads()
  int inter_op_threads = 0;        // 0..kMaxThreads; parallel executor only; 0 → hardware concurrency
  RunObserver* observer = nullptr;  // session-wide observer (not owned); also sees load/init phases
  bool shape_inference = true;     // run ONNX shape inference at load (failures are ignored)
  // Compute once, when the session is created, every CPU EP node whose
  // inputs are all initializers or such nodes' outputs (no subgraphs, no
  // random ops), as ONNX Runtime's constant folding does at its default
  // optimisation level: they then never run, so they never show in a
  // profile, as in ONNX Runtime's. false: every node runs on every run.
  // Constant nodes are folded either way.
  bool fold_constants = true;
  // Fuse, when the session is created, what ONNX Runtime fuses in a CNN at
  // its default optimisation level: a BatchNormalization after a Conv is
  // folded into the Conv's weights and bias, and a Conv with the Add and
  // the activation after it (Relu, Clip with constant bounds, LeakyRelu,
  // Sigmoid, Tanh, HardSigmoid) becomes one com.microsoft FusedConv where the
  // CPU EP runs them all (an EP that claims one of them keeps them). The
  // fused node keeps the Conv's name; the nodes it absorbed are not in
  // nodes() and never run, as in ONNX Runtime's profile. Float Constant
  // nodes (not graph outputs) become initializers first, as ONNX Runtime
  // makes them when it loads a graph, so weights a converter wrote as
  // Constant nodes (paddle2onnx does) fold too; they are not in nodes()
  // either. false: the graph runs as written.
  bool fuse_nodes = true;

  static constexpr int kMaxThreads = 1024;  // larger values are refused (ErrorKind::BadOption)
};

// ONNX Runtime's intra-op default (intra_op_num_threads = 0): one thread
// per physical core. ORT's CreateThreadPoolHelper (core/util/thread_utils.cc)
// sizes the default pool from Env::GetDefaultThreadAffinities(), which on
// Linux (core/platform/posix/env.cc) is one entry per core counted by
// cpuinfo_get_cores_count(), else std::thread::hardware_concurrency() / 2;
// the calling thread counts as one of them. Here: distinct (package, core)
// pairs of the online CPUs in /sys/devices/system/cpu, else the same
// fallback; at least 1. Like ORT, it ignores the process's CPU affinity
// mask and cgroup quota.
int default_intra_op_threads();

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
  const std::vector<Node>& nodes() const;      // topological order, after fusion (fuse_nodes)
  // What SessionOptions::fuse_nodes did: BatchNormalization nodes folded
  // into a Conv; Convs made FusedConvs, and the Add, Relu and Clip nodes
  // they absorbed. All 0 with fuse_nodes false.
  struct Fusions {
    int batch_norms = 0, fused_convs = 0, absorbed = 0;
  };
  Fusions fusions() const;
  const std::string& provider_of(size_t node_index) const;
  // Whether top-level node `node_index` runs in a run: false for the nodes
  // computed once at creation (Constant nodes; SessionOptions::fold_constants).
  bool node_runs(size_t node_index) const;
  const char* executor_name() const;
  int intra_op_threads() const;                 // resolved: options' value, or the default for 0
  int inter_op_threads() const;                 // the parallel executor's pool size; 0 for the sequential one
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
