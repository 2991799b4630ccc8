// Hand-checked results and error messages of the control flow kernels, through
// small graphs (ONNX's own test data is covered by runtime_conformance), and
// how subgraph node executions reach observers and the profiler's trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "epprof/epprof.h"
#include "epprof/rt/error.h"
#include "epprof/rt/profiling.h"
#include "epprof/rt/session.h"
#include "support/test_util.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;

namespace {

std::vector<float> floats(const Tensor& t) { return t.to_vector<float>(); }

// x[2], c (bool) -> xs = Mul(x, x); If(c): then xs + x, else xs - x.
// Both branches read the outer values xs (a node output) and x (a graph input).
std::string if_model() {
  onnx::ModelProto m = make_model(16);
  add_io(m, true, "x", {2});
  add_io(m, true, "c", {}, onnx::TensorProto::BOOL);
  add_node(m, "Mul", "square", {"x", "x"}, {"xs"});
  auto* n = add_node(m, "If", "if", {"c"}, {"y"});
  auto* then_g = graph_attr(n, "then_branch");
  gnode(then_g, "Add", "add", {"xs", "x"}, {"t"});
  gio(then_g, false, "t", onnx::TensorProto::FLOAT, {2});
  auto* else_g = graph_attr(n, "else_branch");
  gnode(else_g, "Sub", "sub", {"xs", "x"}, {"e"});
  gio(else_g, false, "e", onnx::TensorProto::FLOAT, {2});
  add_io(m, false, "y", {2});
  return bytes(m);
}

onnx::NodeProto* constant(onnx::GraphProto* g, const std::string& name, bool value) {
  auto* n = gnode(g, "Constant", name, {}, {name});
  auto* v = n->add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  v->mutable_t()->add_int32_data(value);
  return n;
}

// Loop M times (no cond) over acc[2] += step, with a loop-carried flag
// (initially true). The body's If on the flag gives step = x (then) or 2x
// (else) and the next flag (false, true): a subgraph inside a subgraph
// reading the top-level input x. Scan output: acc after each iteration.
std::string loop_model() {
  onnx::ModelProto m = make_model(16);
  add_io(m, true, "M", {}, onnx::TensorProto::INT64);
  add_io(m, true, "x", {2});
  add_float_init(m, "acc0", {2}, {0, 0});
  auto* flag0 = m.mutable_graph()->add_initializer();
  flag0->set_name("flag0");
  flag0->set_data_type(onnx::TensorProto::BOOL);
  flag0->add_int32_data(1);
  auto* n = add_node(m, "Loop", "loop", {"M", "", "acc0", "flag0"}, {"acc", "flag", "accs"});
  auto* body = graph_attr(n, "body");
  gio(body, true, "i", onnx::TensorProto::INT64);
  gio(body, true, "cond_in", onnx::TensorProto::BOOL);
  gio(body, true, "acc_in", onnx::TensorProto::FLOAT, {2});
  gio(body, true, "flag_in", onnx::TensorProto::BOOL);
  gnode(body, "Identity", "keep_going", {"cond_in"}, {"cond_out"});
  auto* inner = gnode(body, "If", "pick", {"flag_in"}, {"step", "flag_out"});
  auto* then_g = graph_attr(inner, "then_branch");
  gnode(then_g, "Identity", "one_x", {"x"}, {"sx"});
  constant(then_g, "no", false);
  gio(then_g, false, "sx", onnx::TensorProto::FLOAT, {2});
  gio(then_g, false, "no", onnx::TensorProto::BOOL);
  auto* else_g = graph_attr(inner, "else_branch");
  gnode(else_g, "Add", "two_x", {"x", "x"}, {"dx"});
  constant(else_g, "yes", true);
  gio(else_g, false, "dx", onnx::TensorProto::FLOAT, {2});
  gio(else_g, false, "yes", onnx::TensorProto::BOOL);
  gnode(body, "Add", "add", {"acc_in", "step"}, {"acc_out"});
  gnode(body, "Identity", "emit", {"acc_out"}, {"scan"});
  gio(body, false, "cond_out", onnx::TensorProto::BOOL);
  gio(body, false, "acc_out", onnx::TensorProto::FLOAT, {2});
  gio(body, false, "flag_out", onnx::TensorProto::BOOL);
  gio(body, false, "scan", onnx::TensorProto::FLOAT, {2});
  add_io(m, false, "acc", {2});
  add_io(m, false, "flag", {}, onnx::TensorProto::BOOL);
  add_io(m, false, "accs", {-1, 2});
  return bytes(m);
}

// Scan (opset 9) of rows[3,2]: sum[2] += row; out = sum + bias (bias from the outer scope).
std::string scan_model(int64_t direction) {
  onnx::ModelProto m = make_model(11);
  add_io(m, true, "init", {2});
  add_io(m, true, "rows", {3, 2});
  add_float_init(m, "bias", {2}, {100, 200});
  auto* n = add_node(m, "Scan", "scan", {"init", "rows"}, {"sum", "outs"});
  set_int(n, "num_scan_inputs", 1);
  auto* dirs = n->add_attribute();
  dirs->set_name("scan_input_directions");
  dirs->set_type(onnx::AttributeProto::INTS);
  dirs->add_ints(direction);
  auto* body = graph_attr(n, "body");
  gio(body, true, "sum_in", onnx::TensorProto::FLOAT, {2});
  gio(body, true, "row", onnx::TensorProto::FLOAT, {2});
  gnode(body, "Add", "acc", {"sum_in", "row"}, {"sum_out"});
  gnode(body, "Add", "shift", {"sum_out", "bias"}, {"out"});
  gio(body, false, "sum_out", onnx::TensorProto::FLOAT, {2});
  gio(body, false, "out", onnx::TensorProto::FLOAT, {2});
  add_io(m, false, "sum", {2});
  add_io(m, false, "outs", {3, 2});
  return bytes(m);
}

Tensor vec(std::vector<float> v) { return Tensor::from_vector<float>({int64_t(v.size())}, v); }

}  // namespace

TEST(OpsControlFlow, IfBranchesReadOuterScopeValues) {
  Session s = Session::from_bytes(if_model());
  auto y = s.run({{"x", vec({2, 3})}, {"c", Tensor::scalar<bool>(true)}});
  EXPECT_EQ(floats(y[0]), (std::vector<float>{6, 12}));
  y = s.run({{"x", vec({2, 3})}, {"c", Tensor::scalar<bool>(false)}});
  EXPECT_EQ(floats(y[0]), (std::vector<float>{2, 6}));
  // The parallel executor waits for the values the branches read (xs).
  SessionOptions so;
  so.executor = ExecutorKind::Parallel;
  so.inter_op_threads = 2;
  Session p = Session::from_bytes(if_model(), so);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(floats(p.run({{"x", vec({2, 3})}, {"c", Tensor::scalar<bool>(true)}})[0]), (std::vector<float>{6, 12}));
}

// Constants reach every reader from the session's plan, run after run: an
// initializer and a folded value as graph outputs, and If branches that
// read an outer initializer, add their own, or return either as it is.
TEST(OpsControlFlow, ConstantsReachNodesAndOutputsInEveryRun) {
  onnx::ModelProto m = make_model(16);
  add_io(m, true, "x", {2});
  add_io(m, true, "c", {}, onnx::TensorProto::BOOL);
  add_float_init(m, "w", {2}, {1, 2});
  add_node(m, "Mul", "ww", {"w", "w"}, {"w2"});  // folded at load
  auto* n = add_node(m, "If", "if", {"c"}, {"y", "z"});
  auto* then_g = graph_attr(n, "then_branch");
  auto* k = then_g->add_initializer();
  k->set_name("k");
  k->set_data_type(onnx::TensorProto::FLOAT);
  k->add_dims(2);
  k->add_float_data(10);
  k->add_float_data(20);
  gnode(then_g, "Add", "add", {"w", "k"}, {"t"});
  gnode(then_g, "Add", "add_x", {"t", "x"}, {"tx"});
  gio(then_g, false, "tx", onnx::TensorProto::FLOAT, {2});
  gio(then_g, false, "k", onnx::TensorProto::FLOAT, {2});
  auto* else_g = graph_attr(n, "else_branch");
  gnode(else_g, "Identity", "id", {"x"}, {"e"});
  gio(else_g, false, "e", onnx::TensorProto::FLOAT, {2});
  gio(else_g, false, "w2", onnx::TensorProto::FLOAT, {2});
  add_io(m, false, "y", {2});
  add_io(m, false, "z", {2});
  add_io(m, false, "w", {2});
  add_io(m, false, "w2", {2});
  for (ExecutorKind kind : {ExecutorKind::Sequential, ExecutorKind::Parallel}) {
    SessionOptions so;
    so.executor = kind;
    Session s = Session::from_bytes(bytes(m), so);
    for (int run = 0; run < 3; ++run) {
      const bool c = run != 1;
      const auto out = s.run({{"x", vec({100, 200})}, {"c", Tensor::scalar<bool>(c)}});
      ASSERT_EQ(out.size(), 4u);
      EXPECT_EQ(floats(out[0]), c ? (std::vector<float>{111, 222}) : (std::vector<float>{100, 200})) << run;
      EXPECT_EQ(floats(out[1]), c ? (std::vector<float>{10, 20}) : (std::vector<float>{1, 4})) << run;
      EXPECT_EQ(floats(out[2]), (std::vector<float>{1, 2})) << run;
      EXPECT_EQ(floats(out[3]), (std::vector<float>{1, 4})) << run;
    }
  }
}

TEST(OpsControlFlow, LoopCarriesValuesAndConcatenatesScanOutputs) {
  Session s = Session::from_bytes(loop_model());
  auto out = s.run({{"M", Tensor::scalar<int64_t>(3)}, {"x", vec({1, 10})}});
  // Iterations 0, 1, 2 add x, 2x, x.
  EXPECT_EQ(floats(out[0]), (std::vector<float>{4, 40}));
  EXPECT_FALSE(out[1].to_vector<bool>()[0]);
  EXPECT_EQ(out[2].shape(), (Shape{3, 2}));
  EXPECT_EQ(floats(out[2]), (std::vector<float>{1, 10, 3, 30, 4, 40}));
  // Zero iterations: the initial value, an empty scan output of the declared shape.
  out = s.run({{"M", Tensor::scalar<int64_t>(0)}, {"x", vec({1, 10})}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{0, 0}));
  EXPECT_EQ(out[2].shape(), (Shape{0, 2}));
}

TEST(OpsControlFlow, ScanSlicesInputsAndReadsOuterScope) {
  Session fwd = Session::from_bytes(scan_model(0));
  const Tensor rows = Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  auto out = fwd.run({{"init", vec({0, 0})}, {"rows", rows}});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{9, 12}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{101, 202, 104, 206, 109, 212}));
  Session rev = Session::from_bytes(scan_model(1));
  out = rev.run({{"init", vec({0, 0})}, {"rows", rows}});
  EXPECT_EQ(floats(out[1]), (std::vector<float>{105, 206, 108, 210, 109, 212}));
}

TEST(OpsControlFlow, SubgraphReadingAnUndefinedNameFailsAtLoad) {
  onnx::ModelProto m = onnx::ModelProto();
  m.ParseFromString(if_model());
  auto* then_g = m.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
  then_g->mutable_node(0)->set_input(1, "nowhere");
  try {
    Session::from_bytes(bytes(m));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::DanglingInput);
    EXPECT_NE(e.message().find("'if/then_branch/add'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("'nowhere'"), std::string::npos) << e.message();
  }
}

TEST(OpsControlFlow, WrongSubgraphArityFailsAtLoad) {
  onnx::ModelProto m;
  m.ParseFromString(if_model());
  gio(m.mutable_graph()->mutable_node(1)->mutable_attribute(1)->mutable_g(), false, "xs");  // else: 2 outputs
  try {
    Session::from_bytes(bytes(m));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidModel);
    EXPECT_NE(e.message().find("'if/else_branch' has 2 outputs, expected 1"), std::string::npos) << e.message();
  }
  onnx::ModelProto l;
  l.ParseFromString(loop_model());
  gio(l.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g(), true, "extra");
  EXPECT_THROW(
      {
        try {
          Session::from_bytes(bytes(l));
        } catch (const Error& e) {
          EXPECT_NE(e.message().find("'loop/body' has 5 inputs, expected 4"), std::string::npos) << e.message();
          throw;
        }
      },
      Error);
}

TEST(OpsControlFlow, AFailingSubgraphNodeIsNamedInTheError) {
  onnx::ModelProto m;
  m.ParseFromString(loop_model());
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->clear_shape();
  Session s = Session::from_bytes(bytes(m));
  try {
    s.run({{"M", Tensor::scalar<int64_t>(1)}, {"x", vec({1, 2, 3})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    // The failing node is named by its qualified name.
    EXPECT_NE(e.message().find("loop/body/add"), std::string::npos) << e.message();
  }
}

namespace {

// Records every node hook.
class Recorder final : public RunObserver {
 public:
  struct Event {
    std::string what, node;
    uint64_t id;
    uint64_t epoch;
  };
  void run_begin(const RunInfo& info) override { first = info.first_node_correlation_id; }
  void node_begin(const NodeInfo& i) override { add("begin", i); }
  void node_end(const NodeInfo& i, const NodeIo&) override { add("end", i); }
  void node_failed(const NodeInfo& i, const char*) override { add("failed", i); }
  std::vector<Event> events;
  uint64_t first = 0;

 private:
  void add(const char* what, const NodeInfo& i) {
    events.push_back({what, i.node.name, i.correlation_id, i.shape_epoch});
    keys[i.node_index].insert(i.node.name);
    indices[i.node.name] = i.node.index;
  }

 public:
  std::map<size_t, std::set<std::string>> keys;  // NodeInfo::node_index → the nodes given it
  std::map<std::string, size_t> indices;         // node → node.index
};

// x[n], c, d (bool) -> xs = Mul(x, x); If(c) -> (y1, y2, y3, y4):
//   then: b = Neg(xs); If(d) -> (p, q, r), outputs (p, q, r, p):
//     then: t = Add(b, x), outputs (t, t, b);
//     else: u = Sub(xs, x), outputs (u, xs, u);
//   else: e = Identity(x), outputs (e, x, xs, e).
// The inner branches read values of both enclosing scopes (x and xs two
// levels up); branches return a value of their own twice, and values of
// enclosing scopes as they are.
std::string nested_if_model() {
  onnx::ModelProto m = make_model(16);
  add_io(m, true, "x", {-1});
  add_io(m, true, "c", {}, onnx::TensorProto::BOOL);
  add_io(m, true, "d", {}, onnx::TensorProto::BOOL);
  add_node(m, "Mul", "square", {"x", "x"}, {"xs"});
  auto* outer = add_node(m, "If", "if", {"c"}, {"y1", "y2", "y3", "y4"});
  auto* then_g = graph_attr(outer, "then_branch");
  gnode(then_g, "Neg", "neg", {"xs"}, {"b"});
  auto* inner = gnode(then_g, "If", "inner", {"d"}, {"p", "q", "r"});
  auto* inner_then = graph_attr(inner, "then_branch");
  gnode(inner_then, "Add", "add", {"b", "x"}, {"t"});
  for (const char* out : {"t", "t", "b"}) gio(inner_then, false, out, onnx::TensorProto::FLOAT, {-1});
  auto* inner_else = graph_attr(inner, "else_branch");
  gnode(inner_else, "Sub", "sub", {"xs", "x"}, {"u"});
  for (const char* out : {"u", "xs", "u"}) gio(inner_else, false, out, onnx::TensorProto::FLOAT, {-1});
  for (const char* out : {"p", "q", "r", "p"}) gio(then_g, false, out, onnx::TensorProto::FLOAT, {-1});
  auto* else_g = graph_attr(outer, "else_branch");
  gnode(else_g, "Identity", "id", {"x"}, {"e"});
  for (const char* out : {"e", "x", "xs", "e"}) gio(else_g, false, out, onnx::TensorProto::FLOAT, {-1});
  for (const char* out : {"y1", "y2", "y3", "y4"}) add_io(m, false, out, {-1});
  return bytes(m);
}

}  // namespace

// A subgraph's execution reads its enclosing scopes' values where they lie,
// through every level of nesting, and hands its outputs back whole: a value
// returned twice, or returned from an enclosing scope, reaches every output.
// Its shape epoch follows the shapes it reads from two levels up.
TEST(OpsControlFlow, NestedBranchesReadEveryEnclosingScopeAndReturnEachOutputWhole) {
  using V = std::vector<float>;
  struct Case {
    V x;
    bool c, d;
    std::vector<V> expected;
  };
  const std::vector<Case> cases = {
      {{2, 3}, true, true, {{-2, -6}, {-2, -6}, {-4, -9}, {-2, -6}}},  // t = -xs + x, t, b = -xs, t
      {{2, 3}, true, false, {{2, 6}, {4, 9}, {2, 6}, {2, 6}}},         // u = xs - x, xs, u, u
      {{2, 3}, false, true, {{2, 3}, {2, 3}, {4, 9}, {2, 3}}},         // x, x, xs, x
      {{1, 2, 3}, true, true, {{0, -2, -6}, {0, -2, -6}, {-1, -4, -9}, {0, -2, -6}}},
      {{1, 2, 3}, true, true, {{0, -2, -6}, {0, -2, -6}, {-1, -4, -9}, {0, -2, -6}}},
  };
  for (ExecutorKind kind : {ExecutorKind::Sequential, ExecutorKind::Parallel}) {
    SessionOptions so;
    so.executor = kind;
    Session s = Session::from_bytes(nested_if_model(), so);
    Recorder rec;
    RunOptions ro;
    ro.observer = &rec;
    std::vector<uint64_t> add_epochs;  // of if/then_branch/inner/then_branch/add, one per run taking it
    for (size_t i = 0; i < cases.size(); ++i) {
      for (const RunOptions& options : {RunOptions{}, ro}) {
        const Case& k = cases[i];
        const auto out = s.run({{"x", vec(k.x)}, {"c", Tensor::scalar<bool>(k.c)}, {"d", Tensor::scalar<bool>(k.d)}},
                               options);
        ASSERT_EQ(out.size(), 4u);
        for (size_t o = 0; o < 4; ++o) EXPECT_EQ(floats(out[o]), k.expected[o]) << "case " << i << ", output " << o;
      }
      for (const auto& e : rec.events)
        if (e.what == "end" && e.node == "if/then_branch/inner/then_branch/add") add_epochs.push_back(e.epoch);
      rec.events.clear();
    }
    // Cases 0, 3 and 4 ran the inner then-branch: x's shape [2], then [3] twice.
    ASSERT_EQ(add_epochs.size(), 3u);
    EXPECT_NE(add_epochs[0], 0u);
    EXPECT_NE(add_epochs[0], add_epochs[1]) << "x's shape changed two scopes up";
    EXPECT_EQ(add_epochs[1], add_epochs[2]);
  }
}

TEST(OpsControlFlow, EverySubgraphNodeExecutionIsANodeEventWithItsOwnId) {
  Recorder rec;
  SessionOptions so;
  so.observer = &rec;
  Session s = Session::from_bytes(loop_model(), so);
  s.run({{"M", Tensor::scalar<int64_t>(2)}, {"x", vec({1, 10})}});
  // Begin/end pairs, properly nested; the loop's own event spans its body's.
  std::vector<const Recorder::Event*> open;
  std::set<uint64_t> ids;
  std::vector<std::string> ended;
  std::map<std::string, std::set<uint64_t>> branch_epochs;
  for (const auto& e : rec.events) {
    if (e.what == "begin") {
      open.push_back(&e);
      EXPECT_TRUE(ids.insert(e.id).second) << "correlation id " << e.id << " of " << e.node << " reused";
      EXPECT_NE(e.id, 0u);
    } else {
      ASSERT_EQ(e.what, "end");
      ASSERT_FALSE(open.empty());
      EXPECT_EQ(open.back()->node, e.node);
      EXPECT_EQ(open.back()->id, e.id);
      open.pop_back();
      ended.push_back(e.node);
    }
    // A subgraph execution has its own shape epoch, which covers the nodes
    // whose shapes follow from its inputs' and outer values' shapes: all of
    // each If branch; in the Loop body, keep_going but not the If on a
    // computed flag (its branches may differ in shape) or what reads its
    // outputs. The top-level Loop is in no epoch: its trip count is data.
    const std::string branch = e.node.substr(0, e.node.rfind('/') + 1);
    if (branch == "loop/body/pick/then_branch/" || branch == "loop/body/pick/else_branch/" ||
        e.node == "loop/body/keep_going") {
      EXPECT_NE(e.epoch, 0u) << e.node;
      branch_epochs[e.node == "loop/body/keep_going" ? e.node : branch].insert(e.epoch);
    } else {
      EXPECT_EQ(e.epoch, 0u) << e.node;
    }
  }
  EXPECT_TRUE(open.empty());
  ASSERT_EQ(branch_epochs.size(), 3u);
  // Each branch ran once; the body's two iterations have the same shapes.
  for (const auto& kv : branch_epochs) EXPECT_EQ(kv.second.size(), 1u) << kv.first << ": one epoch";
  EXPECT_NE(*branch_epochs["loop/body/pick/then_branch/"].begin(), *branch_epochs["loop/body/pick/else_branch/"].begin());
  // The branches' Constant nodes ('no', 'yes') became initializers when the
  // plans were built, as ONNX Runtime does: they never run.
  const std::vector<std::string> expected = {
      "loop/body/keep_going", "loop/body/pick/then_branch/one_x", "loop/body/pick", "loop/body/add", "loop/body/emit",
      "loop/body/keep_going", "loop/body/pick/else_branch/two_x", "loop/body/pick", "loop/body/add", "loop/body/emit",
      "loop"};
  EXPECT_EQ(ended, expected);
  // The top-level node has the run's reserved id; the subgraph nodes do not.
  EXPECT_EQ(rec.events.front().node, "loop");
  EXPECT_EQ(rec.events.front().id, rec.first);
}

// An observer keys its per-node state by NodeInfo::node_index: a subgraph's
// nodes, whose node.index counts from 0 as the main graph's do, get keys of
// their own, after the main graph's; the main graph's keys are node.index.
TEST(OpsControlFlow, EveryNodeHasAKeyOfItsOwnSubgraphsIncluded) {
  Recorder rec;
  SessionOptions so;
  so.observer = &rec;
  Session s = Session::from_bytes(loop_model(), so);
  s.run({{"M", Tensor::scalar<int64_t>(2)}, {"x", vec({1, 10})}});
  ASSERT_GT(rec.indices.size(), s.nodes().size()) << "the model's subgraph nodes did not run";
  for (const auto& [key, nodes] : rec.keys)
    EXPECT_EQ(nodes.size(), 1u) << "key " << key << " is shared by " << *nodes.begin() << " and " << *nodes.rbegin()
                                << " (node.index " << rec.indices[*nodes.begin()] << ", "
                                << rec.indices[*nodes.rbegin()] << ")";
  size_t subgraph_nodes = 0;
  for (const auto& [key, nodes] : rec.keys) {
    const std::string& node = *nodes.begin();
    const bool top = node.find('/') == std::string::npos;
    if (top) EXPECT_EQ(key, rec.indices[node]) << node;
    else EXPECT_GE(key, s.nodes().size()) << node;
    subgraph_nodes += !top;
  }
  EXPECT_GT(subgraph_nodes, 0u);
}

TEST(OpsControlFlow, SubgraphNodeEventsAreInTheTraceInsideTheParentSpan) {
  epprof::testing::TempDir dir;
  ProfilingOptions po;
  po.trace_path = dir.file("loop.json");
  ProfilingObserver prof(po);
  SessionOptions so;
  so.observer = &prof;
  {
    Session s = Session::from_bytes(loop_model(), so);
    for (int run = 0; run < 2; ++run) s.run({{"M", Tensor::scalar<int64_t>(3)}, {"x", vec({1, 10})}});
  }
  prof.finish();
  const auto events = epprof::testing::read_trace(po.trace_path);
  std::vector<const epprof::testing::TraceEvent*> loops;
  for (const auto& e : events)
    if (e.cat == "Node" && e.name == "loop_kernel_time") loops.push_back(&e);
  ASSERT_EQ(loops.size(), 2u);
  int inside = 0, adds = 0;
  std::set<std::string> names;
  for (const auto& e : events) {
    if (e.cat != "Node" || e.name == "loop_kernel_time") continue;
    names.insert(e.name);
    adds += e.name == "loop/body/add_kernel_time";
    for (const auto* l : loops)
      if (e.ts >= l->ts && e.ts + e.dur <= l->ts + l->dur) ++inside;
  }
  EXPECT_EQ(adds, 6);  // 3 iterations, 2 runs
  EXPECT_EQ(inside, 2 * 3 * 5);  // 5 body nodes run per iteration: the branches' Constants are folded
  EXPECT_TRUE(names.count("loop/body/pick/then_branch/one_x_kernel_time"));
  EXPECT_TRUE(names.count("loop/body/pick/else_branch/two_x_kernel_time"));
}

// ---- Sequences and optionals ------------------------------------------------

namespace {

void seq_io(onnx::ModelProto& m, bool input, const std::string& name, bool optional = false) {
  auto* v = input ? m.mutable_graph()->add_input() : m.mutable_graph()->add_output();
  v->set_name(name);
  onnx::TypeProto* t = v->mutable_type();
  if (optional) t = t->mutable_optional_type()->mutable_elem_type();
  t->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
}

}  // namespace

TEST(OpsControlFlow, SequenceOpsThroughSessionInputsAndOutputs) {
  // s (seq) -> insert x at front -> erase last -> at(-1); length; concat with a new axis.
  onnx::ModelProto m = make_model(16);
  seq_io(m, true, "s");
  add_io(m, true, "x", {2});
  add_float_init(m, "front", {}, {0});
  m.mutable_graph()->mutable_initializer(0)->set_data_type(onnx::TensorProto::INT64);
  m.mutable_graph()->mutable_initializer(0)->clear_float_data();
  m.mutable_graph()->mutable_initializer(0)->add_int64_data(0);
  add_node(m, "SequenceInsert", "insert", {"s", "x", "front"}, {"s1"});
  add_node(m, "SequenceErase", "erase", {"s1"}, {"s2"});
  add_node(m, "SequenceLength", "length", {"s2"}, {"n"});
  add_node(m, "ConcatFromSequence", "stack", {"s2"}, {"stacked"});
  set_int(m.mutable_graph()->mutable_node(3), "axis", -1);
  set_int(m.mutable_graph()->mutable_node(3), "new_axis", 1);
  seq_io(m, false, "s2");
  add_io(m, false, "n", {}, onnx::TensorProto::INT64);
  add_io(m, false, "stacked", {2, 2});
  Session s = Session::from_bytes(bytes(m));
  const Tensor seq = Tensor::sequence_of(DataType::Float, {vec({1, 2}), vec({3, 4})});
  auto out = s.run({{"s", seq}, {"x", vec({5, 6})}});
  ASSERT_TRUE(out[0].is_sequence());
  ASSERT_EQ(out[0].sequence().size(), 2u);
  EXPECT_EQ(floats(out[0].sequence()[0]), (std::vector<float>{5, 6}));
  EXPECT_EQ(floats(out[0].sequence()[1]), (std::vector<float>{1, 2}));
  EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{2}));
  EXPECT_EQ(floats(out[2]), (std::vector<float>{5, 1, 6, 2}));  // new axis last: [[5,1],[6,2]]
  // A tensor where a sequence is declared is a bad input.
  EXPECT_THROW(s.run({{"s", vec({1})}, {"x", vec({5, 6})}}), Error);
}

TEST(OpsControlFlow, SequenceAtRejectsOutOfRangePositions) {
  onnx::ModelProto m = make_model(16);
  seq_io(m, true, "s");
  add_io(m, true, "p", {}, onnx::TensorProto::INT64);
  add_node(m, "SequenceAt", "at", {"s", "p"}, {"y"});
  add_io(m, false, "y", {2});
  Session s = Session::from_bytes(bytes(m));
  const Tensor seq = Tensor::sequence_of(DataType::Float, {vec({1, 2}), vec({3, 4})});
  EXPECT_EQ(floats(s.run({{"s", seq}, {"p", Tensor::scalar<int64_t>(-2)}})[0]), (std::vector<float>{1, 2}));
  try {
    s.run({{"s", seq}, {"p", Tensor::scalar<int64_t>(2)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("position 2 is out of range [-2, 1]"), std::string::npos) << e.message();
  }
}

TEST(OpsControlFlow, OptionalInputsMayBeEmpty) {
  onnx::ModelProto m = make_model(16);
  seq_io(m, true, "o", true);
  add_node(m, "OptionalHasElement", "has", {"o"}, {"h"});
  add_io(m, false, "h", {}, onnx::TensorProto::BOOL);
  Session s = Session::from_bytes(bytes(m));
  EXPECT_FALSE(s.run({{"o", Tensor::none(DataType::Float, true)}})[0].to_vector<bool>()[0]);
  EXPECT_TRUE(s.run({{"o", Tensor::sequence_of(DataType::Float, {})}})[0].to_vector<bool>()[0]);
}

// ---- Sessions: subgraph node executions are dispatches of their own --------

namespace {

struct DispatchLog {
  epprof_counter_config_t config{0};
  std::mutex mu;
  std::map<uint32_t, int> counted;  // deliveries per node index
  size_t node_records = 0;         // NODE records through the session's buffer
  static epprof_status* records(void* u, epprof_session_t, const epprof_record* r, size_t n, uint64_t) {
    auto* log = static_cast<DispatchLog*>(u);
    std::lock_guard<std::mutex> lock(log->mu);
    for (size_t i = 0; i < n; ++i) log->node_records += r[i].category == EPPROF_CATEGORY_NODE;
    return nullptr;
  }
  static epprof_status* dispatch(void* u, epprof_session_t, const epprof_dispatch_info*, epprof_counter_config_t* c) {
    *c = static_cast<DispatchLog*>(u)->config;
    return nullptr;
  }
  static epprof_status* record(void* u, epprof_session_t, const epprof_dispatch_info* info, const epprof_record*,
                               size_t) {
    auto* log = static_cast<DispatchLog*>(u);
    std::lock_guard<std::mutex> lock(log->mu);
    ++log->counted[info->node_index];
    return nullptr;
  }
};

}  // namespace

TEST(OpsControlFlow, SessionCountersAttributeSubgraphNodes) {
  const char* names[] = {"duration_ns", "flops"};
  DispatchLog log;
  ASSERT_EQ(epprof_counter_config_create("cpu", names, 2, &log.config), nullptr);
  epprof_session_config cfg{};
  cfg.size = sizeof cfg;
  cfg.record_size = sizeof(epprof_record);
  cfg.replay_mode = EPPROF_REPLAY_NONE;
  cfg.callback = &DispatchLog::records;
  cfg.callback_user_data = &log;
  cfg.dispatch_callback = &DispatchLog::dispatch;
  cfg.dispatch_user_data = &log;
  cfg.counter_record_callback = &DispatchLog::record;
  cfg.counter_record_user_data = &log;
  epprof_session_t es{0};
  ASSERT_EQ(epprof_session_create(&cfg, &es), nullptr);
  ASSERT_EQ(epprof_session_start(es), nullptr);
  ProfilingOptions po;
  po.sessions = true;
  ProfilingObserver obs(po);
  SessionOptions so;
  so.observer = &obs;
  {
    Session s = Session::from_bytes(loop_model(), so);
    auto out = s.run({{"M", Tensor::scalar<int64_t>(2)}, {"x", vec({1, 10})}});
    EXPECT_EQ(floats(out[0]), (std::vector<float>{3, 30}));
    // The Loop requests no counters (its body's nodes would share them); each
    // body node execution is counted under its own session-unique index.
    EXPECT_EQ(log.counted.count(uint32_t(s.nodes()[0].index)), 0u);
    const Graph& body = *s.nodes()[0].attr_graph("body");
    for (const Node& n : body.nodes) {
      EXPECT_GT(n.index, s.nodes().size() - 1);
      EXPECT_EQ(log.counted[uint32_t(n.index)], n.op_type == "If" ? 0 : 2) << n.name;
    }
    const Node& pick = body.nodes[1];
    ASSERT_EQ(pick.name, "loop/body/pick");
    EXPECT_EQ(log.counted[uint32_t(pick.attr_graph("then_branch")->nodes[0].index)], 1);  // first iteration
    EXPECT_EQ(log.counted[uint32_t(pick.attr_graph("else_branch")->nodes[0].index)], 1);  // second
  }
  ASSERT_EQ(epprof_session_flush(es), nullptr);
  EXPECT_EQ(log.node_records, 11u);  // every node execution, subgraphs' too (Constants are folded)
  epprof_status_release(epprof_session_destroy(es));
  epprof_status_release(epprof_counter_config_destroy(log.config));
}
