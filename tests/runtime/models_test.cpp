// Bundled models: load, run, check outputs; sequential vs parallel bit equality;
// observer hooks.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "epprof/rt/session.h"
#include "random_inputs.h"
#include "test_models.h"

using namespace epprof::rt;
using epprof::rt::testing::random_inputs;

namespace {

std::string model_path(const std::string& name) { return std::string(EPPROF_MODELS_DIR) + "/" + name + ".onnx"; }

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

class BundledModel : public ::testing::TestWithParam<const char*> {};

TEST_P(BundledModel, RunsAndParallelIsBitIdenticalToSequential) {
  Session seq(model_path(GetParam()));
  SessionOptions po;
  po.executor = ExecutorKind::Parallel;
  po.inter_op_threads = 3;
  Session par(model_path(GetParam()), po);
  EXPECT_STREQ(seq.executor_name(), "SequentialExecutor");
  EXPECT_STREQ(par.executor_name(), "ParallelExecutor");
  const auto inputs = random_inputs(seq, 42);
  const auto t0 = std::chrono::steady_clock::now();
  const auto a = seq.run(inputs);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ model    ] %s: %zu nodes, first sequential run %.2f ms\n", GetParam(), seq.nodes().size(), ms);
  ASSERT_EQ(a.size(), seq.outputs().size());
  for (const Tensor& t : a) {
    EXPECT_GT(t.size(), 0);
    for (int64_t i = 0; i < t.size(); ++i) ASSERT_TRUE(std::isfinite(t.data<float>()[i])) << "element " << i;
  }
  for (int rep = 0; rep < 3; ++rep) {
    const auto b = par.run(inputs);
    ASSERT_EQ(b.size(), a.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(bit_equal(a[i], b[i])) << "output " << i << " rep " << rep;
  }
  const auto again = seq.run(inputs);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(bit_equal(a[i], again[i]));
}

// The fused graph (SessionOptions::fuse_nodes, the default) computes what
// the graph as written does, to folding's rounding: on the CNN, 7 folds and
// 7 FusedConvs, Z and Relu applied in the implicit GEMM's stores on AVX-512.
TEST_P(BundledModel, FusedGraphMatchesTheGraphAsWritten) {
  SessionOptions plain;
  plain.fuse_nodes = false;
  Session fused(model_path(GetParam())), written(model_path(GetParam()), plain);
  if (std::string(GetParam()) == "cnn") {
    EXPECT_EQ(fused.fusions().batch_norms, 7);
    EXPECT_EQ(fused.fusions().fused_convs, 7);
  }
  const auto inputs = random_inputs(written, 42);
  const auto a = fused.run(inputs), b = written.run(inputs);
  ASSERT_EQ(a.size(), b.size());
  for (size_t o = 0; o < a.size(); ++o) {
    ASSERT_EQ(a[o].shape(), b[o].shape());
    double worst = 0;
    for (int64_t i = 0; i < a[o].size(); ++i) {
      const double x = a[o].data<float>()[i], y = b[o].data<float>()[i];
      worst = std::max(worst, std::fabs(x - y) / (std::fabs(y) + 1e-3));
    }
    EXPECT_LE(worst, 1e-4) << "output " << o;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, BundledModel, ::testing::Values("mlp", "cnn", "transformer"));

TEST(BundledModels, OutputsHaveTheExpectedShapesAndValues) {
  Session mlp(model_path("mlp"));
  auto probs = mlp.run(random_inputs(mlp, 1)).at(0);
  ASSERT_EQ(probs.shape(), (Shape{32, 10}));
  for (int64_t r = 0; r < 32; ++r) {
    float sum = 0;
    for (int64_t c = 0; c < 10; ++c) sum += probs.data<float>()[r * 10 + c];
    EXPECT_NEAR(sum, 1.0f, 1e-5f);  // Softmax rows
  }
  Session cnn(model_path("cnn"));
  EXPECT_EQ(cnn.run(random_inputs(cnn, 1)).at(0).shape(), (Shape{1, 10}));
  Session tr(model_path("transformer"));
  auto in = random_inputs(tr, 1);
  auto out = tr.run(in).at(0);
  ASSERT_EQ(out.shape(), (Shape{1, 128, 256}));
  // Residual stream: the output stays correlated with the input.
  double dot = 0, nx = 0, ny = 0;
  const float* x = in.at("input").data<float>();
  for (int64_t i = 0; i < out.size(); ++i) {
    dot += x[i] * out.data<float>()[i];
    nx += x[i] * x[i];
    ny += out.data<float>()[i] * out.data<float>()[i];
  }
  EXPECT_GT(dot / std::sqrt(nx * ny), 0.3);
}

struct RecordingObserver : RunObserver {
  std::mutex mu;
  int runs_begun = 0, runs_ended = 0, phases = 0;
  std::vector<std::string> begun, ended;
  std::set<std::thread::id> threads;
  size_t parameter_bytes = 0, activation_bytes = 0, output_bytes = 0;
  void session_phase_begin(const SessionPhaseInfo&) override { ++phases; }
  void run_begin(const RunInfo& r) override {
    ++runs_begun;
    EXPECT_GT(r.num_nodes, 0u);
  }
  void run_end(const RunInfo&) override { ++runs_ended; }
  void node_begin(const NodeInfo& n) override {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(n.node_index, n.node.index) << n.node.name;
    begun.push_back(n.node.name);
    threads.insert(std::this_thread::get_id());
  }
  void node_end(const NodeInfo& n, const NodeIo& io) override {
    std::lock_guard<std::mutex> lock(mu);
    ended.push_back(n.node.name);
    EXPECT_EQ(n.provider, "CPUExecutionProvider");
    parameter_bytes += io.parameter_bytes();
    activation_bytes += io.activation_bytes();
    output_bytes += io.output_bytes();
  }
};

TEST(Observer, SeesEveryNodeWithSizes) {
  RecordingObserver session_obs, run_obs;
  SessionOptions so;
  so.observer = &session_obs;
  Session s(model_path("mlp"), so);
  EXPECT_EQ(session_obs.phases, 2);  // model loading, session initialization
  RunOptions ro;
  ro.observer = &run_obs;
  s.run(random_inputs(s, 3), ro);
  for (RecordingObserver* o : {&session_obs, &run_obs}) {
    EXPECT_EQ(o->runs_begun, 1);
    EXPECT_EQ(o->runs_ended, 1);
    EXPECT_EQ(o->begun.size(), s.nodes().size());
    EXPECT_EQ(o->ended.size(), s.nodes().size());
    // Parameters: the three Gemm weights and biases.
    const size_t params = 4 * (784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10);
    EXPECT_EQ(o->parameter_bytes, params);
    EXPECT_EQ(o->output_bytes, 4u * 32 * (1024 * 4 + 10 * 2));  // 2x(Gemm+Relu) outputs, Gemm(10), Softmax
    EXPECT_EQ(o->activation_bytes, 4u * 32 * (784 + 1024 * 4 + 10));
  }
}

TEST(Observer, ParallelExecutorCallsHooksOnWorkerThreads) {
  RecordingObserver obs;
  SessionOptions so;
  so.executor = ExecutorKind::Parallel;
  so.inter_op_threads = 2;
  so.observer = &obs;
  Session s(model_path("transformer"), so);
  s.run(random_inputs(s, 3));
  EXPECT_EQ(obs.ended.size(), s.nodes().size());
  EXPECT_EQ(obs.threads.count(std::this_thread::get_id()), 0u);
}

TEST(Session, ConcurrentRunsOnOneSession) {
  SessionOptions so;
  so.executor = ExecutorKind::Parallel;
  so.inter_op_threads = 2;
  Session s(model_path("cnn"), so);
  const auto in = random_inputs(s, 9);
  const auto want = s.run(in);
  std::vector<std::thread> ts;
  std::vector<int> ok(3, 0);
  for (int i = 0; i < 3; ++i)
    ts.emplace_back([&, i] { ok[static_cast<size_t>(i)] = bit_equal(s.run(in).at(0), want.at(0)); });
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok, (std::vector<int>{1, 1, 1}));
}

}  // namespace

// ---- Constant nodes -------------------------------------------------------

// Constant nodes become initializers when the plan is built, as ONNX Runtime
// turns them into initializers when it loads a graph: they never run, so
// they are in no profile, and their consumers read them as initializers.
TEST(Session, ConstantNodesAreFoldedIntoInitializers) {
  onnx::ModelProto m = epprof::rt::testing::make_model();
  epprof::rt::testing::add_io(m, true, "x", {2});
  auto* c = epprof::rt::testing::add_node(m, "Constant", "c", {}, {"k"});
  auto* v = c->add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  v->mutable_t()->add_dims(2);
  v->mutable_t()->add_float_data(10.0f);
  v->mutable_t()->add_float_data(20.0f);
  epprof::rt::testing::add_node(m, "Add", "add", {"x", "k"}, {"y"});
  epprof::rt::testing::add_io(m, false, "y", {2});

  struct Seen final : RunObserver {
    std::vector<std::string> ran;
    std::vector<bool> init_inputs;
    void node_begin(const NodeInfo& info) override { ran.push_back(info.node.name); }
    void node_end(const NodeInfo&, const NodeIo& io) override { init_inputs = io.input_is_initializer; }
  } seen;
  SessionOptions so;
  so.observer = &seen;
  // As written, the model keeps its nodes; the fusion pass (on by default)
  // makes a float Constant an initializer, as ONNX Runtime does.
  so.fuse_nodes = false;
  EXPECT_EQ(Session::from_bytes(epprof::rt::testing::bytes(m), so).nodes().size(), 2u);
  so.fuse_nodes = true;
  Session s = Session::from_bytes(epprof::rt::testing::bytes(m), so);
  EXPECT_EQ(s.nodes().size(), 1u);
  const auto out = s.run({{"x", Tensor::from_vector<float>({2}, {1, 2})}});
  EXPECT_EQ(out.at(0).to_vector<float>(), (std::vector<float>{11, 22}));
  EXPECT_EQ(seen.ran, (std::vector<std::string>{"add"}));
  EXPECT_EQ(seen.init_inputs, (std::vector<bool>{false, true}));

  // A Constant the kernel refuses fails the session's creation, naming it.
  v->set_name("not_a_value");
  try {
    Session::from_bytes(epprof::rt::testing::bytes(m));
    FAIL() << "a Constant without a value attribute was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("'not_a_value' is not a value attribute"), std::string::npos) << e.message();
  }
}

// Nodes whose inputs are all initializers, or outputs of such nodes, are
// computed once when the session is created (SessionOptions::fold_constants,
// as ONNX Runtime's constant folding): they never run. A node reading a run
// input still runs; one whose kernel fails when folded is left to fail in
// the run, named; fold_constants = false runs every node.
TEST(Session, NodesOfInitializersAreFoldedOnce) {
  namespace t = epprof::rt::testing;
  onnx::ModelProto m = t::make_model();
  t::add_io(m, true, "x", {2});
  t::add_float_init(m, "w", {4}, {1, 2, 3, 4});
  t::add_int64_init(m, "starts", {1}, {1});
  t::add_int64_init(m, "ends", {1}, {3});
  t::add_node(m, "Slice", "slice_w", {"w", "starts", "ends"}, {"w2"});  // [2, 3]
  t::add_node(m, "Neg", "neg_w2", {"w2"}, {"k"});                      // [-2, -3]: folded from a folded value
  t::add_node(m, "Add", "add", {"x", "k"}, {"y"});
  t::add_io(m, false, "y", {2});

  // One run of `model` on `inputs`: its first output, and the nodes that ran.
  struct Seen final : RunObserver {
    std::vector<std::string> ran;
    void node_begin(const NodeInfo& info) override { ran.push_back(info.node.name); }
  };
  auto run_once = [](const onnx::ModelProto& model, bool fold, const std::map<std::string, Tensor>& inputs,
                     std::vector<std::string>* ran, std::vector<bool>* runs) {
    Seen seen;
    SessionOptions so;
    so.observer = &seen;
    so.fold_constants = fold;
    Session s = Session::from_bytes(t::bytes(model), so);
    std::vector<float> out = s.run(inputs).at(0).to_vector<float>();
    *ran = seen.ran;
    runs->clear();
    for (size_t i = 0; i < s.nodes().size(); ++i) runs->push_back(s.node_runs(i));
    return out;
  };
  for (const bool fold : {true, false}) {
    SCOPED_TRACE(fold ? "folded" : "not folded");
    std::vector<std::string> ran;
    std::vector<bool> runs;
    EXPECT_EQ(run_once(m, fold, {{"x", Tensor::from_vector<float>({2}, {10, 20})}}, &ran, &runs),
              (std::vector<float>{8, 17}));
    const std::vector<std::string> want =
        fold ? std::vector<std::string>{"add"} : std::vector<std::string>{"slice_w", "neg_w2", "add"};
    EXPECT_EQ(ran, want);
    EXPECT_EQ(runs, (std::vector<bool>{!fold, !fold, true}));
  }

  // Inside an If: the branch's Neg of an initializer of the main graph (an
  // outer value known at creation) is folded; its Add of the run's input
  // runs. The If itself runs, reading the input's condition.
  onnx::ModelProto branchy = t::make_model(16);
  t::add_io(branchy, true, "x", {2});
  t::add_io(branchy, true, "c", {}, onnx::TensorProto::BOOL);
  t::add_float_init(branchy, "w", {2}, {1, 2});
  auto* iff = t::add_node(branchy, "If", "if", {"c"}, {"y"});
  auto* then_g = t::graph_attr(iff, "then_branch");
  t::gnode(then_g, "Neg", "neg_w", {"w"}, {"nw"});
  t::gnode(then_g, "Add", "add", {"x", "nw"}, {"t"});
  t::gio(then_g, false, "t", onnx::TensorProto::FLOAT, {2});
  auto* else_g = t::graph_attr(iff, "else_branch");
  t::gnode(else_g, "Add", "add_w", {"x", "w"}, {"e"});
  t::gio(else_g, false, "e", onnx::TensorProto::FLOAT, {2});
  t::add_io(branchy, false, "y", {2});
  Tensor cond(DataType::Bool, {});
  cond.mutable_data<bool>()[0] = true;
  for (const bool fold : {true, false}) {
    SCOPED_TRACE(fold ? "subgraph folded" : "subgraph not folded");
    std::vector<std::string> ran;
    std::vector<bool> runs;
    EXPECT_EQ(run_once(branchy, fold, {{"x", Tensor::from_vector<float>({2}, {10, 20})}, {"c", cond}}, &ran, &runs),
              (std::vector<float>{9, 18}));
    const std::vector<std::string> want =
        fold ? std::vector<std::string>{"if", "if/then_branch/add"}
             : std::vector<std::string>{"if", "if/then_branch/neg_w", "if/then_branch/add"};
    EXPECT_EQ(ran, want);
    EXPECT_EQ(runs, (std::vector<bool>{true}));  // the If runs
  }

  // A folded value that is a graph output comes back from every run.
  onnx::ModelProto outputs_folded = t::make_model();
  t::add_io(outputs_folded, true, "x", {2});
  t::add_float_init(outputs_folded, "w", {2}, {1, 2});
  t::add_node(outputs_folded, "Neg", "neg_w", {"w"}, {"k"});
  t::add_node(outputs_folded, "Add", "add", {"x", "k"}, {"y"});
  t::add_io(outputs_folded, false, "k", {2});
  t::add_io(outputs_folded, false, "y", {2});
  {
    Session s = Session::from_bytes(t::bytes(outputs_folded));
    EXPECT_FALSE(s.node_runs(0));
    for (int run = 0; run < 2; ++run) {
      const auto out = s.run({{"x", Tensor::from_vector<float>({2}, {10, 20})}});
      ASSERT_EQ(out.size(), 2u);
      EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{-1, -2}));
      EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{9, 18}));
    }
  }

  // A Reshape of initializers to a shape they cannot take: the session is
  // created, and the run fails naming the node.
  onnx::ModelProto bad = t::make_model();
  t::add_io(bad, true, "x", {2});
  t::add_float_init(bad, "w", {4}, {1, 2, 3, 4});
  t::add_int64_init(bad, "shape", {1}, {3});
  t::add_node(bad, "Reshape", "bad_reshape", {"w", "shape"}, {"k"});
  t::add_node(bad, "Add", "add", {"x", "k"}, {"y"});
  t::add_io(bad, false, "y", {2});
  Session s = Session::from_bytes(t::bytes(bad));
  EXPECT_TRUE(s.node_runs(0));
  try {
    s.run({{"x", Tensor::from_vector<float>({2}, {1, 2})}});
    FAIL() << "a Reshape of 4 elements to [3] ran";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("bad_reshape"), std::string::npos) << e.message();
  }
}
