// The ProfilingObserver's event blocks (ProfilingOptions::event_blocks): a
// run of a shape epoch seen whole records its node events by position, and
// the trace says exactly what it says without them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "epprof/rt/error.h"
#include "epprof/rt/profiling.h"
#include "epprof/rt/session.h"
#include "support/test_util.h"
#include "test_models.h"

namespace {

using namespace epprof::rt;
using namespace epprof::rt::testing;
using epprof::testing::TraceEvent;

// x[N,3] -> Relu -> Sigmoid -> Add(., x) -> y: node events of several ops,
// with shapes that follow the input's.
std::string chain_model() {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {1, 3});
  auto* dims = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("N");
  add_node(m, "Relu", "relu", {"x"}, {"r"});
  add_node(m, "Sigmoid", "sigmoid", {"r"}, {"s"});
  add_node(m, "Add", "add", {"s", "x"}, {"y"});
  add_io(m, false, "y", {1, 3});
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
      ->set_dim_param("N");
  return bytes(m);
}

// y = Gather(table[5,3], i[2]): the indices' values are the caller's, their
// shape fixes every shape, so runs share an epoch whatever the values.
std::string gather_model() {
  onnx::ModelProto m = make_model();
  add_float_init(m, "table", {5, 3}, std::vector<float>(15, 1.0f));
  add_io(m, true, "i", {2}, onnx::TensorProto::INT64);
  add_node(m, "Gather", "gather", {"table", "i"}, {"y"});
  add_io(m, false, "y", {2, 3});
  return bytes(m);
}

Tensor rows(int64_t n) {
  Tensor t(DataType::Float, {n, 3});
  for (int64_t k = 0; k < t.size(); ++k) t.mutable_data<float>()[k] = float(k % 7) - 3;
  return t;
}

ProfilingOptions options(const std::string& path, bool event_blocks) {
  ProfilingOptions po;
  po.trace_path = path;
  po.event_blocks = event_blocks;
  return po;
}

// A session of `model` with session-level profiling into `path`.
struct ProfiledSession {
  ProfiledSession(const std::string& path, const std::string& model, bool event_blocks = true)
      : prof(options(path, event_blocks)), session(Session::from_bytes(model, observed_by(&prof))) {}
  static SessionOptions observed_by(RunObserver* o) {
    SessionOptions so;
    so.observer = o;
    return so;
  }
  // Writes the trace and reads it back, by start time.
  std::vector<TraceEvent> finish() {
    prof.finish();
    auto events = epprof::testing::read_trace(prof.trace_path());
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
    return events;
  }
  ProfilingObserver prof;
  Session session;
};

struct Profiled {
  std::vector<TraceEvent> events;  // by start time
  uint64_t block_runs;
};

Profiled profile(const std::string& path, const std::string& model, const std::vector<int64_t>& row_counts,
                 bool event_blocks) {
  ProfiledSession p(path, model, event_blocks);
  for (int64_t n : row_counts) p.session.run({{"x", rows(n)}});
  const uint64_t block_runs = p.prof.runs_in_event_blocks();
  return {p.finish(), block_runs};
}

// What a node event says, but for its correlation id (a new one each run).
std::vector<std::string> node_events(const std::vector<TraceEvent>& events) {
  static const std::regex id("\"correlation_id\":\"[0-9]+\",?");
  std::vector<std::string> out;
  for (const auto& e : events)
    if (e.cat == "Node") out.push_back(e.name + " " + std::regex_replace(e.args_json, id, ""));
  return out;
}

TEST(ProfilingBlocks, TheTraceSaysTheSameWithAndWithoutThem) {
  epprof::testing::TempDir dir;
  const std::vector<int64_t> runs = {2, 2, 2, 4, 4, 2, 2};
  const Profiled with = profile(dir.file("with.json"), chain_model(), runs, true);
  const Profiled without = profile(dir.file("without.json"), chain_model(), runs, false);
  // Epochs: 2 (collected, then 2 runs in the block), 4 (collected, block), 2 (a new epoch: collected, block).
  EXPECT_EQ(with.block_runs, 4u);
  EXPECT_EQ(without.block_runs, 0u);
  const auto a = node_events(with.events), b = node_events(without.events);
  ASSERT_EQ(a.size(), runs.size() * 3);
  EXPECT_EQ(a, b);
  EXPECT_NE(a[9].find("\"output_type_shape\":[{\"float\":[4,3]}]"), std::string::npos) << a[9];
  // Each run's node events: consecutive ids in plan order, inside its model_run, on its thread.
  const TraceEvent* run = nullptr;
  uint64_t last_id = 0;
  size_t in_run = 0;
  for (const auto& e : with.events) {
    if (e.name == "model_run") {
      run = &e;
      in_run = 0;
      continue;
    }
    if (e.cat != "Node") continue;
    ASSERT_NE(run, nullptr);
    EXPECT_GE(e.ts, run->ts);
    EXPECT_LE(e.ts + e.dur, run->ts + run->dur + 1e-3);
    EXPECT_EQ(e.tid, run->tid);
    const uint64_t id = std::stoull(e.arg("correlation_id"));
    if (in_run++) {
      EXPECT_EQ(id, last_id + 1) << e.name;
    }
    last_id = id;
  }
}

TEST(ProfilingBlocks, AKernelThatThrowsInABlockIsRecordedWithItsError) {
  epprof::testing::TempDir dir;
  ProfiledSession p(dir.file("gather.json"), gather_model());
  Session& s = p.session;
  s.run({{"i", Tensor::from_vector<int64_t>({2}, {0, 4})}});  // collects the epoch's descriptions
  s.run({{"i", Tensor::from_vector<int64_t>({2}, {1, 2})}});  // in the block
  EXPECT_THROW(s.run({{"i", Tensor::from_vector<int64_t>({2}, {1, 9})}}), Error);  // in the block, throws
  s.run({{"i", Tensor::from_vector<int64_t>({2}, {3, 3})}});  // the block is usable again
  EXPECT_EQ(p.prof.runs_in_event_blocks(), 3u);
  const auto events = p.finish();
  int ok = 0, failed = 0;
  for (const auto& e : events) {
    if (e.name != "gather_kernel_time") continue;
    EXPECT_EQ(e.arg("op_name"), "Gather");
    if (e.has_arg("error")) {
      ++failed;
      EXPECT_NE(e.arg("error").find("out of range"), std::string::npos) << e.arg("error");
    } else {
      ++ok;
      EXPECT_NE(e.args_json.find("\"output_type_shape\":[{\"float\":[2,3]}]"), std::string::npos) << e.args_json;
    }
  }
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(failed, 1);
}

// Forwards a run's hooks to a ProfilingObserver and counts the node hooks
// the executor calls; hands the executor the profiler's event block
// (RunObserver::node_event_block) when `hand_block`, as the profiler does.
class CountingObserver final : public RunObserver {
 public:
  CountingObserver(ProfilingObserver& inner, bool hand_block) : inner_(inner), hand_block_(hand_block) {}
  void run_begin(const RunInfo& i) override { inner_.run_begin(i); }
  void run_end(const RunInfo& i) override { inner_.run_end(i); }
  void node_begin(const NodeInfo& i) override {
    ++node_begins;
    inner_.node_begin(i);
  }
  void node_end(const NodeInfo& i, const NodeIo& io) override {
    ++node_ends;
    inner_.node_end(i, io);
  }
  void node_failed(const NodeInfo& i, const char* what) override { inner_.node_failed(i, what); }
  epprof_event_block* node_event_block(const RunInfo& i) override {
    return hand_block_ ? inner_.node_event_block(i) : nullptr;
  }
  int node_begins = 0, node_ends = 0;

 private:
  ProfilingObserver& inner_;
  const bool hand_block_;
};

struct Counted {
  std::vector<std::string> node_events;
  int node_begins, node_ends;
  uint64_t block_runs;
};

// Three runs of one epoch with a per-run profiler behind a CountingObserver,
// and, when `session_too`, a session-level profiler as a second observer.
Counted count_hooks(epprof::testing::TempDir& dir, const std::string& name, bool hand_block, bool session_too) {
  ProfilingObserver run_profiler(options(dir.file(name + ".json"), true));
  ProfilingObserver session_profiler(options(dir.file(name + "_session.json"), true));
  CountingObserver counting(run_profiler, hand_block);
  SessionOptions so;
  if (session_too) so.observer = &session_profiler;
  Session s = Session::from_bytes(chain_model(), so);
  RunOptions ro;
  ro.observer = &counting;
  for (int run = 0; run < 3; ++run) s.run({{"x", rows(2)}}, ro);
  const uint64_t block_runs = run_profiler.runs_in_event_blocks();
  run_profiler.finish();
  session_profiler.finish();
  auto events = epprof::testing::read_trace(run_profiler.trace_path());
  std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
  return {node_events(events), counting.node_begins, counting.node_ends, block_runs};
}

// A run whose only observer hands over its block skips the node hooks of
// every node the block records (the epoch's first run collects, through
// them), and its trace says what the hooks would have recorded.
TEST(ProfilingBlocks, TheExecutorRecordsStraightIntoTheBlockOfARunsOnlyObserver) {
  epprof::testing::TempDir dir;
  const Counted direct = count_hooks(dir, "direct", true, false);
  const Counted hooks = count_hooks(dir, "hooks", false, false);
  EXPECT_EQ(direct.block_runs, 2u);
  EXPECT_EQ(hooks.block_runs, 2u);
  EXPECT_EQ(direct.node_begins, 3);  // the first run's three nodes
  EXPECT_EQ(direct.node_ends, 3);
  EXPECT_EQ(hooks.node_begins, 9);
  ASSERT_EQ(direct.node_events.size(), 9u);
  EXPECT_EQ(direct.node_events, hooks.node_events);
  // A second observer (a session-level profiler): every node gets the hooks.
  const Counted two = count_hooks(dir, "two", true, true);
  EXPECT_EQ(two.node_begins, 9);
  EXPECT_EQ(two.node_events, hooks.node_events);
}

// What the block's calls return goes back to the observer, and the run
// goes on: here the block handed over was never opened.
TEST(ProfilingBlocks, ARejectedBlockCallIsHandedToTheObserver) {
  class ClosedBlock final : public RunObserver {
   public:
    epprof_event_block* node_event_block(const RunInfo&) override { return &block_; }
    void node_block_rejected(epprof_status* status) override {
      codes.push_back(epprof_status_get_code(status));
      epprof_status_release(status);
    }
    void node_begin(const NodeInfo&) override { ++node_begins; }
    std::vector<epprof_status_code> codes;
    int node_begins = 0;

   private:
    epprof_event_block block_{};
  } observer;
  Session s = Session::from_bytes(chain_model());
  RunOptions ro;
  ro.observer = &observer;
  const Tensor x = rows(2);
  const auto out = s.run({{"x", x}}, ro);
  EXPECT_EQ(observer.node_begins, 0);
  ASSERT_EQ(observer.codes.size(), 6u);  // each node's begin and end
  for (epprof_status_code c : observer.codes) EXPECT_EQ(c, EPPROF_INVALID_ARGUMENT);
  const float* y = out.at(0).data<float>();
  for (int64_t k = 0; k < x.size(); ++k) {
    const float v = x.data<float>()[k];
    EXPECT_FLOAT_EQ(y[k], 1.0f / (1.0f + std::exp(-std::max(v, 0.0f))) + v) << k;
  }
}

// Runs on two threads share one observer: one run at a time holds the
// block, the others take the general path, and every event is kept.
TEST(ProfilingBlocks, ParallelCallersShareOneObserver) {
  epprof::testing::TempDir dir;
  ProfiledSession p(dir.file("threads.json"), chain_model());
  constexpr int kRuns = 40;
  auto caller = [&] {
    for (int i = 0; i < kRuns; ++i) p.session.run({{"x", rows(2)}});
  };
  std::thread t1(caller), t2(caller);
  t1.join();
  t2.join();
  EXPECT_GE(p.prof.runs_in_event_blocks(), 1u);
  const auto events = p.finish();
  std::map<int64_t, int> nodes_by_thread, runs_by_thread;
  for (const auto& e : events) {
    if (e.cat == "Node") ++nodes_by_thread[e.tid];
    if (e.name == "model_run") ++runs_by_thread[e.tid];
  }
  ASSERT_EQ(runs_by_thread.size(), 2u);
  for (const auto& [tid, n] : runs_by_thread) {
    EXPECT_EQ(n, kRuns);
    EXPECT_EQ(nodes_by_thread[tid], 3 * kRuns) << "thread " << tid;
  }
}

}  // namespace
