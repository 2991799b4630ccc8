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

// Loop M times over acc[2], the body's If on its (always true) condition
// adding x (then) or subtracting it (else): executions of a subgraph inside
// another's, many to a run, both reading the outer x.
std::string loop_model() {
  onnx::ModelProto m = make_model(16);
  add_io(m, true, "M", {}, onnx::TensorProto::INT64);
  add_io(m, true, "x", {2});
  add_float_init(m, "acc0", {2}, {0, 0});
  auto* loop = add_node(m, "Loop", "loop", {"M", "", "acc0"}, {"acc"});
  auto* body = graph_attr(loop, "body");
  gio(body, true, "i", onnx::TensorProto::INT64);
  gio(body, true, "cond_in", onnx::TensorProto::BOOL);
  gio(body, true, "acc_in", onnx::TensorProto::FLOAT, {2});
  gnode(body, "Identity", "keep_going", {"cond_in"}, {"cond_out"});
  auto* pick = gnode(body, "If", "pick", {"cond_in"}, {"acc_out"});
  auto* then_g = graph_attr(pick, "then_branch");
  gnode(then_g, "Add", "add_x", {"acc_in", "x"}, {"plus"});
  gio(then_g, false, "plus", onnx::TensorProto::FLOAT, {2});
  auto* else_g = graph_attr(pick, "else_branch");
  gnode(else_g, "Sub", "sub_x", {"acc_in", "x"}, {"minus"});
  gio(else_g, false, "minus", onnx::TensorProto::FLOAT, {2});
  gio(body, false, "cond_out", onnx::TensorProto::BOOL);
  gio(body, false, "acc_out", onnx::TensorProto::FLOAT, {2});
  add_io(m, false, "acc", {2});
  return bytes(m);
}

// If(c): then Gather(table[5,3], i[2]) -> Relu, else the table's first two
// rows: a subgraph node that throws on the caller's indices.
std::string if_gather_model() {
  onnx::ModelProto m = make_model(16);
  add_float_init(m, "table", {5, 3}, std::vector<float>(15, 1.0f));
  add_int64_init(m, "first_two", {2}, {0, 1});
  add_io(m, true, "c", {}, onnx::TensorProto::BOOL);
  add_io(m, true, "i", {2}, onnx::TensorProto::INT64);
  auto* iff = add_node(m, "If", "if", {"c"}, {"y"});
  auto* then_g = graph_attr(iff, "then_branch");
  gnode(then_g, "Gather", "gather", {"table", "i"}, {"g"});
  gnode(then_g, "Relu", "relu", {"g"}, {"r"});
  gio(then_g, false, "r", onnx::TensorProto::FLOAT, {2, 3});
  auto* else_g = graph_attr(iff, "else_branch");
  gnode(else_g, "Gather", "head", {"table", "first_two"}, {"h"});
  gio(else_g, false, "h", onnx::TensorProto::FLOAT, {2, 3});
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
// the executor calls; hands the executor the profiler's event blocks
// (RunObserver::node_event_block, subgraph_event_block) when `hand_block`,
// as the profiler does.
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
  epprof_event_block* subgraph_event_block(const SubgraphRunInfo& i) override {
    return hand_block_ ? inner_.subgraph_event_block(i) : nullptr;
  }
  void subgraph_run_end(const SubgraphRunInfo& i) override { inner_.subgraph_run_end(i); }
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

// The executions of subgraphs in a run that records into its block
// record into blocks of their own: in a run whose epochs are all
// described, only the nodes that hold subgraphs (the Loop, its body's If)
// take the hooks, and the trace says what the hooks would have recorded.
TEST(ProfilingBlocks, SubgraphExecutionsRecordIntoBlocksOfTheirOwn) {
  epprof::testing::TempDir dir;
  constexpr int64_t kIterations = 4;
  const std::map<std::string, Tensor> inputs = {{"M", Tensor::scalar<int64_t>(kIterations)},
                                                {"x", Tensor::from_vector<float>({2}, {1, 2})}};
  struct Profile {
    std::vector<std::string> node_events;
    std::vector<int> hooks_per_run;
  };
  auto profile = [&](const std::string& name, bool event_blocks) {
    ProfilingObserver profiler(options(dir.file(name + ".json"), event_blocks));
    CountingObserver counting(profiler, true);
    Session s = Session::from_bytes(loop_model());
    RunOptions ro;
    ro.observer = &counting;
    Profile p;
    for (int run = 0; run < 4; ++run) {
      const int before = counting.node_begins;
      const auto out = s.run(inputs, ro);
      EXPECT_EQ(out.at(0).to_vector<float>(), (std::vector<float>{4, 8})) << name << " run " << run;
      p.hooks_per_run.push_back(counting.node_begins - before);
    }
    profiler.finish();
    auto events = epprof::testing::read_trace(profiler.trace_path());
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
    p.node_events = node_events(events);
    return p;
  };
  const Profile with = profile("with", true), without = profile("without", false);
  // Per run: the Loop, then per iteration keep_going, pick and pick's add_x.
  const int per_run = 1 + 3 * int(kIterations);
  EXPECT_EQ(without.hooks_per_run, std::vector<int>(4, per_run));
  // The first iteration takes the hooks and describes the body's epoch and
  // the branch's; the later ones record into blocks, but for their If.
  EXPECT_EQ(with.hooks_per_run.front(), 1 + 3 + int(kIterations - 1));
  EXPECT_EQ(with.hooks_per_run.back(), 1 + int(kIterations)) << "the Loop and each iteration's If";
  ASSERT_EQ(with.node_events.size(), size_t(4 * per_run));
  EXPECT_EQ(with.node_events, without.node_events);
}

// A subgraph node that throws inside its block is recorded with the
// error, and the block is usable again.
TEST(ProfilingBlocks, ASubgraphKernelThatThrowsInABlockIsRecordedWithItsError) {
  epprof::testing::TempDir dir;
  ProfilingObserver profiler(options(dir.file("if.json"), true));
  CountingObserver counting(profiler, true);
  Session s = Session::from_bytes(if_gather_model());
  RunOptions ro;
  ro.observer = &counting;
  auto run = [&](int64_t a, int64_t b) {
    return s.run({{"c", Tensor::scalar<bool>(true)}, {"i", Tensor::from_vector<int64_t>({2}, {a, b})}}, ro);
  };
  for (int k = 0; k < 3; ++k) run(0, 4);  // collects the top level's, then the branch's, then in blocks
  const int hooks = counting.node_begins;
  EXPECT_THROW(run(1, 9), Error);
  EXPECT_EQ(counting.node_begins, hooks + 1) << "only the If takes the hooks";
  run(3, 3);
  profiler.finish();
  int ok = 0, failed = 0;
  for (const auto& e : epprof::testing::read_trace(profiler.trace_path())) {
    if (e.name != "if/then_branch/gather_kernel_time") continue;
    if (e.has_arg("error")) {
      ++failed;
      EXPECT_NE(e.arg("error").find("out of range"), std::string::npos) << e.arg("error");
    } else {
      ++ok;
    }
  }
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(failed, 1);
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
