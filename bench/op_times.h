// Where a session's run time goes, op by op, without a trace: epprof_ort_bench
// sets the 1- and 2-thread sessions' op times side by side for a conv model
// whose 2-thread speed-up is below ONNX Runtime's.
#pragma once
#include <x86intrin.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench_models.h"
#include "epprof/rt/graph.h"
#include "epprof/rt/observer.h"

namespace epprof::bench {

// Each op type's time in the runs it observed, exclusive: a node that
// holds a subgraph (If, Loop, Scan) is charged for its own time, its body's
// nodes for theirs. Two TSC reads per node execution, as FloorObserver: it
// costs the runs it times the floor of a per-node timeline, on both
// sessions compared alike. Medians over the runs, so that a run the
// machine preempted does not move them. For the sequential executor (nodes
// on the calling thread, nested by the stack).
class OpTimes final : public rt::RunObserver {
 public:
  void run_begin(const rt::RunInfo&) override { run_start_ = __rdtsc(); }
  void run_end(const rt::RunInfo&) override {
    run_ticks_.push_back(__rdtsc() - run_start_);
    for (Slot& s : slots_) {
      s.runs.resize(run_ticks_.size());  // 0 for the runs it did not execute in
      s.runs.back() = s.ticks;
      s.ticks = 0;
    }
  }
  void node_begin(const rt::NodeInfo&) override { open_.push_back({__rdtsc(), 0}); }
  void node_end(const rt::NodeInfo& info, const rt::NodeIo&) override { close(info); }
  void node_failed(const rt::NodeInfo& info, const char*) override { close(info); }

  // Medians over the runs, in microseconds (`ns_per_tick`: floor_observer.h's):
  // of the run (run_begin to run_end), of each op's time in it, and of the
  // time between its nodes.
  struct Medians {
    double run = 0, between = 0;
    std::map<std::string, double> ops;
  };
  Medians medians(double ns_per_tick) const {
    Medians m;
    if (run_ticks_.empty()) return m;
    std::map<std::string, std::vector<double>> per_op;  // each op's ticks in each run
    std::vector<double> nodes(run_ticks_.size(), 0.0);
    for (const Slot& s : slots_) {
      if (!s.op) continue;
      auto& v = per_op[*s.op];
      v.resize(run_ticks_.size(), 0.0);
      for (size_t r = 0; r < s.runs.size(); ++r) v[r] += double(s.runs[r]), nodes[r] += double(s.runs[r]);
    }
    auto median_us = [&](std::vector<double> v) { return median(std::move(v)) * ns_per_tick / 1e3; };
    for (auto& [op, v] : per_op) m.ops[op] = median_us(std::move(v));
    std::vector<double> run(run_ticks_.begin(), run_ticks_.end()), between(run.size());
    for (size_t r = 0; r < run.size(); ++r) between[r] = run[r] - nodes[r];
    m.run = median_us(std::move(run));
    m.between = median_us(std::move(between));
    return m;
  }

 private:
  struct Open {
    uint64_t start, nested;  // nested: ticks of the nodes that ran inside this one
  };
  struct Slot {
    const std::string* op = nullptr;  // the node's op_type, alive with its session
    uint64_t ticks = 0;               // in the run under way
    std::vector<uint64_t> runs;       // in each finished run
  };
  void close(const rt::NodeInfo& info) {
    if (open_.empty()) return;
    const uint64_t ticks = __rdtsc() - open_.back().start, own = ticks - std::min(ticks, open_.back().nested);
    open_.pop_back();
    if (!open_.empty()) open_.back().nested += ticks;
    if (info.node_index >= slots_.size()) slots_.resize(info.node_index + 1);
    Slot& s = slots_[info.node_index];
    s.op = &info.node.op_type;
    s.ticks += own;
  }
  std::vector<Open> open_;
  std::vector<Slot> slots_;  // by NodeInfo::node_index
  std::vector<uint64_t> run_ticks_;
  uint64_t run_start_ = 0;
};

}  // namespace epprof::bench
