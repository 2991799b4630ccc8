// Memory profiling (ProfilingOptions::memory) on the bundled models, checked
// against what this test computes from the graph and the tensor shapes:
// each node allocates its outputs, sized as Tensor allocates them (the
// bytes rounded up to 64, plus 64), except ops whose output is a view of
// their input; a buffer is freed once the last value that shares it has
// had its last reader; graph outputs and initializers stay. From that
// liveness the test derives what is in use after every node, and the run's
// peak, and compares them with the node events' ONNX Runtime args and the
// "mem_in_use cpu" track. The parallel executor runs nodes on its pool
// threads: their allocations are reported and attributed the same way.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "epprof/rt/profiling.h"
#include "epprof/rt/session.h"
#include "random_inputs.h"
#include "support/test_util.h"

namespace {

using namespace epprof::rt;
using nlohmann::json;
using epprof::rt::testing::random_inputs;

std::string model_path(const std::string& name) { return std::string(EPPROF_MODELS_DIR) + "/" + name + ".onnx"; }

int64_t as_int(const json& v) { return v.is_string() ? std::stoll(v.get<std::string>()) : v.get<int64_t>(); }

// What Tensor allocates for one output of the node event's output_type_shape.
int64_t allocation_bytes(const std::string& type, const json& dims) {
  static const std::map<std::string, int64_t> element = {{"float", 4}, {"int64", 8}, {"int32", 4},
                                                         {"bool", 1},  {"uint8", 1}, {"double", 8}};
  int64_t n = 1;
  for (const json& d : dims) n *= d.get<int64_t>();
  return (n * element.at(type) + 63) / 64 * 64 + 64;
}

bool is_view(const std::string& op) {
  static const std::set<std::string> views = {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity"};
  return views.count(op) != 0;
}

struct Profiled {
  json events;
  std::vector<Node> nodes;
  std::set<std::string> graph_outputs;
};

// Loads `model` with memory tracking on, runs it twice, writes the trace.
Profiled profile(const std::string& model, ExecutorKind executor, const std::string& trace) {
  ProfilingOptions po;
  po.trace_path = trace;
  po.memory = true;
  ProfilingObserver prof(po);
  SessionOptions so;
  so.executor = executor;
  so.inter_op_threads = executor == ExecutorKind::Parallel ? 3 : 0;
  so.observer = &prof;
  Profiled p;
  {
    Session s(model_path(model), so);
    const auto inputs = random_inputs(s, 7);
    for (int r = 0; r < 2; ++r) s.run(inputs);  // each run's outputs are dropped before the next
    p.nodes = s.nodes();
    for (const auto& o : s.outputs()) p.graph_outputs.insert(o.name);
  }
  prof.finish();
  std::ifstream in(trace);
  p.events = json::parse(in);
  return p;
}

// One run's node events, by node name, and its window.
struct RunWindow {
  double begin = 0, end = 0;
  std::map<std::string, json> nodes;
};

std::vector<RunWindow> runs_of(const json& events) {
  std::vector<RunWindow> runs;
  for (const json& e : events)
    if (e["ph"] == "X" && e["name"] == "model_run") runs.push_back({e["ts"], e["ts"].get<double>() + e["dur"].get<double>(), {}});
  std::sort(runs.begin(), runs.end(), [](const RunWindow& a, const RunWindow& b) { return a.begin < b.begin; });
  for (const json& e : events) {
    if (e["cat"] != "Node") continue;
    const double ts = e["ts"];
    for (RunWindow& r : runs)
      if (ts >= r.begin && ts <= r.end) {
        std::string name = e["name"];
        r.nodes[name.substr(0, name.size() - std::string("_kernel_time").size())] = e;
      }
  }
  return runs;
}

// The "mem_in_use cpu" samples, in time order.
std::vector<std::pair<double, int64_t>> in_use_track(const json& events) {
  std::vector<std::pair<double, int64_t>> track;
  for (const json& e : events)
    if (e["ph"] == "C" && e["name"] == "mem_in_use cpu") track.push_back({e["ts"], as_int(e["args"]["mem_in_use cpu"])});
  std::stable_sort(track.begin(), track.end(), [](auto& a, auto& b) { return a.first < b.first; });
  return track;
}

class MemoryOnBundledModels : public ::testing::TestWithParam<const char*> {};

// Sequential: the nodes run in topological order, so what is in use after
// each node and the run's peak follow from liveness.
TEST_P(MemoryOnBundledModels, InUseAndPeakFollowFromLiveness) {
  epprof::testing::TempDir dir;
  const Profiled p = profile(GetParam(), ExecutorKind::Sequential, dir.file("seq.json"));
  const std::vector<RunWindow> runs = runs_of(p.events);
  ASSERT_EQ(runs.size(), 2u);
  const RunWindow& run = runs[1];  // the first has the load's peak behind it
  ASSERT_EQ(run.nodes.size(), p.nodes.size());
  const auto track = in_use_track(p.events);
  // In use when the run began: initializers and whatever the session
  // prepared at load; the previous run's outputs were freed before.
  int64_t baseline = 0, track_peak = 0;
  for (const auto& [ts, v] : track) {
    if (ts < run.begin) baseline = v;
    if (ts >= run.begin && ts <= run.end) track_peak = std::max(track_peak, v);
  }
  ASSERT_GT(baseline, 0) << "initializers are reported at load";

  // Buffers: each value names the buffer it lives in; a view shares its
  // input's. A value's readers are the nodes that take it as an input.
  std::map<std::string, int> buffer_of;
  std::map<int, int64_t> buffer_bytes;
  std::map<std::string, size_t> last_reader;
  for (const Node& n : p.nodes)
    for (const std::string& in : n.inputs)
      if (!in.empty()) last_reader[in] = n.index;
  std::map<int, int> values_alive;  // per buffer
  int64_t live = 0, peak = 0;
  for (const Node& n : p.nodes) {
    const json& e = run.nodes.at(n.name);
    const std::string op = e["args"]["op_name"];
    const json& shapes = e["args"]["output_type_shape"];
    ASSERT_EQ(shapes.size(), n.outputs.size()) << n.name;
    int64_t outputs = 0;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const int b = is_view(op) ? buffer_of.at(n.inputs[0]) : int(buffer_bytes.size());
      if (!is_view(op)) {
        ASSERT_EQ(shapes[i].size(), 1u) << n.name;  // {"type": [dims]}
        const auto one = shapes[i].begin();
        buffer_bytes[b] = allocation_bytes(one.key(), one.value());
        outputs += buffer_bytes[b];
      }
      buffer_of[n.outputs[i]] = b;
      ++values_alive[b];
    }
    // A Conv's im2col columns live while its output does, and are gone when
    // it ends: they are what it freed.
    const int64_t temporaries = as_int(e["args"]["mem_freed_bytes"]);
    EXPECT_EQ(as_int(e["args"]["mem_allocated_bytes"]), outputs + temporaries) << n.name;
    peak = std::max(peak, baseline + live + outputs + temporaries);
    live += outputs;
    // The node event ends before the executor releases its inputs.
    EXPECT_EQ(as_int(e["args"]["mem_bytes_in_use"]), baseline + live) << n.name;
    // Release what this node read last, and outputs no one reads.
    auto release = [&](const std::string& v) {
      if (!buffer_of.count(v) || p.graph_outputs.count(v)) return;  // an input or initializer, or kept
      const int b = buffer_of.at(v);
      if (--values_alive[b] == 0) live -= buffer_bytes.count(b) ? buffer_bytes[b] : 0;
    };
    for (const std::string& out : n.outputs)
      if (!last_reader.count(out)) release(out);
    std::set<std::string> read(n.inputs.begin(), n.inputs.end());
    for (const std::string& in : read)
      if (!in.empty() && last_reader.at(in) == n.index) release(in);
  }
  EXPECT_EQ(track_peak, peak) << "the run's peak";
  // Buffers of 64 KiB or more come from the runtime's pool, whose chunks
  // are reported as arena chunks (those it held already when the profiler
  // started, too): a node that allocated such a buffer ends with its chunk
  // held, on the node's mem_arena_held and on a track of its own.
  int64_t largest_pooled = 0, held_at_node_end = 0, held_on_track = 0;
  for (const auto& [b, bytes] : buffer_bytes)
    if (bytes >= int64_t(64 << 10)) largest_pooled = std::max(largest_pooled, bytes);
  for (const auto& [name, e] : run.nodes) held_at_node_end = std::max(held_at_node_end, as_int(e["args"]["mem_arena_held"]));
  for (const json& e : p.events)
    if (e["ph"] == "C" && e["name"] == "mem_arena_held cpu")
      held_on_track = std::max(held_on_track, as_int(e["args"]["mem_arena_held cpu"]));
  EXPECT_GE(held_at_node_end, largest_pooled);
  EXPECT_GE(held_on_track, held_at_node_end);
  EXPECT_GE(as_int(run.nodes.at(p.nodes.back().name)["args"]["mem_in_use_peak"]), peak);
}

// Parallel: the pool threads' allocations are reported and attributed to
// the node that made them, with the same bytes as the sequential run.
TEST_P(MemoryOnBundledModels, ParallelExecutorReportsWhatItsPoolThreadsAllocate) {
  epprof::testing::TempDir dir;
  const Profiled seq = profile(GetParam(), ExecutorKind::Sequential, dir.file("seq.json"));
  const Profiled par = profile(GetParam(), ExecutorKind::Parallel, dir.file("par.json"));
  const std::vector<RunWindow> a = runs_of(seq.events), b = runs_of(par.events);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(b[r].nodes.size(), a[r].nodes.size());
    for (const auto& [name, e] : a[r].nodes) {
      const json& pe = b[r].nodes.at(name);
      for (const char* k : {"mem_allocated_bytes", "mem_freed_bytes", "mem_in_use_delta"})
        EXPECT_EQ(as_int(pe["args"][k]), as_int(e["args"][k])) << name << " " << k;
    }
  }
  // Every allocation of a run was freed or is one of its outputs: the
  // track ends where the sequential one does.
  const auto ta = in_use_track(seq.events), tb = in_use_track(par.events);
  ASSERT_FALSE(tb.empty());
  EXPECT_EQ(tb.back().second, ta.back().second);
}

INSTANTIATE_TEST_SUITE_P(Bundled, MemoryOnBundledModels, ::testing::Values("mlp", "cnn", "transformer"));

}  // namespace
