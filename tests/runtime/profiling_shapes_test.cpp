// Shape epochs (NodeInfo::shape_epoch) and what the ProfilingObserver does
// with them: runs with the same input shapes share an epoch only where the
// session proved shapes follow from input shapes, and every node event
// reports the shapes of its own run, however they change between runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "epprof/rt/profiling.h"
#include "epprof/rt/session.h"
#include "support/test_util.h"
#include "test_models.h"

namespace {

using namespace epprof::rt;
using namespace epprof::rt::testing;

class EpochRecorder final : public RunObserver {
 public:
  // Top-level nodes only: a subgraph's nodes have epochs of their own.
  void run_begin(const RunInfo& info) override { run_epoch = info.shape_epoch; }
  void node_end(const NodeInfo& info, const NodeIo&) override {
    if (info.node.name.find('/') != std::string::npos) return;
    epochs.push_back(info.shape_epoch);
    by_node[info.node.name] = info.shape_epoch;
  }
  uint64_t run_epoch = 0;
  std::vector<uint64_t> epochs;
  std::map<std::string, uint64_t> by_node;  // the last run's
};

void set_dims(onnx::ValueInfoProto* v, const std::vector<std::string>& dims) {
  auto* shape = v->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (const auto& d : dims) {
    if (d.find_first_not_of("0123456789") == std::string::npos)
      shape->add_dim()->set_dim_value(std::stoll(d));
    else
      shape->add_dim()->set_dim_param(d);
  }
}

// x[N,3] -> Relu -> y[N,3]
std::string dynamic_relu() {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {1, 3});
  set_dims(m.mutable_graph()->mutable_input(0), {"N", "3"});
  add_node(m, "Relu", "relu", {"x"}, {"y"});
  add_io(m, false, "y", {1, 3});
  set_dims(m.mutable_graph()->mutable_output(0), {"N", "3"});
  return bytes(m);
}

// y = Reshape(x[2,3], shape): the caller gives the shape (int64[2]).
std::string reshape_by_caller() {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2, 3});
  add_io(m, true, "shape", {2}, onnx::TensorProto::INT64);
  add_node(m, "Reshape", "reshape", {"x", "shape"}, {"y"});
  add_io(m, false, "y", {});
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  return bytes(m);
}

// y = Reshape(Relu(x[N,3]), Shape(x)): the shape is computed from shapes.
std::string reshape_by_shape() {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {1, 3});
  set_dims(m.mutable_graph()->mutable_input(0), {"N", "3"});
  add_node(m, "Shape", "shape", {"x"}, {"s"});
  add_node(m, "Relu", "relu", {"x"}, {"r"});
  add_node(m, "Reshape", "reshape", {"r", "s"}, {"y"});
  add_io(m, false, "y", {1, 3});
  set_dims(m.mutable_graph()->mutable_output(0), {"N", "3"});
  return bytes(m);
}

Tensor rows(int64_t n) { return Tensor(DataType::Float, {n, 3}); }

// The epoch of each run (RunInfo::shape_epoch); every node has it, or 0
// where `outside` names the node.
std::vector<uint64_t> run_epochs(const std::string& model, const std::vector<std::map<std::string, Tensor>>& runs,
                                 const std::set<std::string>& outside = {}) {
  EpochRecorder rec;
  SessionOptions o;
  o.observer = &rec;
  Session s = Session::from_bytes(model, o);
  std::vector<uint64_t> out;
  for (const auto& in : runs) {
    rec.by_node.clear();
    s.run(in);
    out.push_back(rec.run_epoch);
    for (const auto& [node, e] : rec.by_node)
      EXPECT_EQ(e, outside.count(node) || rec.run_epoch == 0 ? 0 : rec.run_epoch) << node;
  }
  return out;
}

// The epochs of four runs whose keys are a, a, b, a: all set, the first
// two shared, and a new one at each change.
void expect_same_then_new(const std::vector<uint64_t>& e) {
  ASSERT_EQ(e.size(), 4u);
  EXPECT_NE(e[0], 0u);
  EXPECT_EQ(e[1], e[0]);
  EXPECT_NE(e[2], e[1]);
  EXPECT_NE(e[2], 0u);
  EXPECT_NE(e[3], e[2]);
  EXPECT_NE(e[3], 0u);
}

TEST(ShapeEpochs, RunsWithTheSameInputShapesShareOne) {
  const auto e = run_epochs(dynamic_relu(), {{{"x", rows(2)}}, {{"x", rows(2)}}, {{"x", rows(4)}}, {{"x", rows(2)}}});
  expect_same_then_new(e);
  // Another session never reuses this one's epochs.
  const auto other = run_epochs(dynamic_relu(), {{{"x", rows(2)}}});
  EXPECT_TRUE(std::find(e.begin(), e.end(), other[0]) == e.end());
}

TEST(ShapeEpochs, AShapeComputedFromShapesKeepsThem) {
  const auto e = run_epochs(reshape_by_shape(), {{{"x", rows(2)}}, {{"x", rows(2)}}});
  EXPECT_NE(e[0], 0u);
  EXPECT_EQ(e[1], e[0]);
}

// A small integer input (here Reshape's shape, int64[2]) read as a value
// joins the epoch's key: runs with the same contents share an epoch.
TEST(ShapeEpochs, ASmallValueGivenByTheCallerJoinsTheKey) {
  auto in = [](std::vector<int64_t> shape) {
    return std::map<std::string, Tensor>{{"x", Tensor(DataType::Float, {2, 3})},
                                         {"shape", Tensor::from_vector<int64_t>({2}, shape)}};
  };
  const auto e = run_epochs(reshape_by_caller(), {in({3, 2}), in({3, 2}), in({6, 1}), in({3, 2})});
  expect_same_then_new(e);
}

// A value input whose size is not declared (int64[K]) is not compared on
// every run: the caller's shape disables the epochs.
TEST(ShapeEpochs, AValueOfUndeclaredSizeGivenByTheCallerDisablesThem) {
  onnx::ModelProto m;
  m.ParseFromString(reshape_by_caller());
  set_dims(m.mutable_graph()->mutable_input(1), {"K"});
  auto in = [](std::vector<int64_t> shape) {
    return std::map<std::string, Tensor>{{"x", Tensor(DataType::Float, {2, 3})},
                                         {"shape", Tensor::from_vector<int64_t>({2}, shape)}};
  };
  const auto e = run_epochs(bytes(m), {in({3, 2}), in({3, 2})});
  EXPECT_EQ(e[0], 0u);
  EXPECT_EQ(e[1], 0u);
}

// y = Slice(Clip(x[N,3]), starts, ends): Slice reads its starts and ends
// (inputs 1 and 2) as values; from a Constant they keep the epochs, from the
// caller they disable them.
std::string clip_then_slice(bool ends_from_caller) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {1, 3});
  set_dims(m.mutable_graph()->mutable_input(0), {"N", "3"});
  if (ends_from_caller) add_io(m, true, "ends", {1}, onnx::TensorProto::INT64);
  auto* starts = m.mutable_graph()->add_initializer();
  starts->set_name("starts");
  starts->set_data_type(onnx::TensorProto::INT64);
  starts->add_dims(1);
  starts->add_int64_data(1);
  if (!ends_from_caller) {
    auto* ends = add_node(m, "Constant", "ends_const", {}, {"ends"})->add_attribute();
    ends->set_name("value_ints");
    ends->set_type(onnx::AttributeProto::INTS);
    ends->add_ints(3);
  }
  add_node(m, "Clip", "clip", {"x"}, {"c"});
  add_node(m, "Slice", "slice", {"c", "starts", "ends"}, {"y"});
  add_io(m, false, "y", {});
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  return bytes(m);
}

TEST(ShapeEpochs, OpsThatReadValuesForShapesKeepThemOnlyWhenThoseValuesAreFixed) {
  const auto fixed = run_epochs(clip_then_slice(false), {{{"x", rows(2)}}, {{"x", rows(2)}}});
  EXPECT_NE(fixed[0], 0u);
  EXPECT_EQ(fixed[1], fixed[0]);
  auto in = [](int64_t end) {
    return std::map<std::string, Tensor>{{"x", rows(2)}, {"ends", Tensor::from_vector<int64_t>({1}, {end})}};
  };
  // ends (int64[1]) from the caller: keyed on its contents.
  const auto given = run_epochs(clip_then_slice(true), {in(3), in(3), in(2)});
  EXPECT_NE(given[0], 0u);
  EXPECT_EQ(given[1], given[0]);
  EXPECT_NE(given[2], given[1]);
  EXPECT_NE(given[2], 0u);
}

// x[N,3], c (bool) -> If(c): then Relu(x) [N,3], else Transpose(x) [3,N].
// The branch taken decides the output's shape; c's contents join the key.
std::string if_on_input(bool cond_from_float) {
  onnx::ModelProto m = make_model(16);
  add_io(m, true, "x", {1, 3});
  set_dims(m.mutable_graph()->mutable_input(0), {"N", "3"});
  std::string cond = "c";
  if (cond_from_float) {  // c = Greater(f, 0) for a float input f[1]: not a key
    add_io(m, true, "f", {1});
    auto* zero = m.mutable_graph()->add_initializer();
    zero->set_name("zero");
    zero->set_data_type(onnx::TensorProto::FLOAT);
    zero->add_float_data(0.0f);
    add_node(m, "Greater", "greater", {"f", "zero"}, {"g"});
    add_node(m, "Squeeze", "squeeze", {"g"}, {"c"});
  } else {
    add_io(m, true, "c", {}, onnx::TensorProto::BOOL);
    m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();  // a scalar
  }
  auto* n = add_node(m, "If", "if", {cond}, {"y"});
  auto* then_g = graph_attr(n, "then_branch");
  gnode(then_g, "Relu", "relu", {"x"}, {"t"});
  gio(then_g, false, "t");
  then_g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  auto* else_g = graph_attr(n, "else_branch");
  gnode(else_g, "Transpose", "transpose", {"x"}, {"e"});
  gio(else_g, false, "e");
  else_g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  add_node(m, "Identity", "identity", {"y"}, {"z"});
  add_io(m, false, "z", {});
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  return bytes(m);
}

std::map<std::string, Tensor> if_inputs(int64_t n, bool c) {
  return {{"x", rows(n)}, {"c", Tensor::from_vector<bool>({}, {c})}};
}

TEST(ShapeEpochs, AnIfOnASmallInputKeysOnItsCondition) {
  const auto e = run_epochs(if_on_input(false),
                            {if_inputs(2, true), if_inputs(2, true), if_inputs(2, false), if_inputs(2, true)});
  expect_same_then_new(e);
  // A condition computed from a float input's contents is not a key: the
  // epoch covers the nodes before the If, not the If or what reads it.
  auto in = [](float f) {
    return std::map<std::string, Tensor>{{"x", rows(2)}, {"f", Tensor::from_vector<float>({1}, {f})}};
  };
  const auto part = run_epochs(if_on_input(true), {in(1), in(-1), in(1)}, {"if", "identity"});
  EXPECT_NE(part[0], 0u);
  EXPECT_EQ(part[1], part[0]);
  EXPECT_EQ(part[2], part[0]);
}

// A model with only nodes outside any epoch has none.
TEST(ShapeEpochs, NoNodeInTheEpochMeansNone) {
  onnx::ModelProto m;
  m.ParseFromString(if_on_input(true));
  // Feed the If's condition from the caller as a float-derived value with
  // nothing before it: drop Greater and Squeeze, and take c as bool[1] that
  // is not a key (its size is not declared).
  m.mutable_graph()->mutable_node()->DeleteSubrange(0, 2);
  add_io(m, true, "c", {1}, onnx::TensorProto::BOOL);
  set_dims(m.mutable_graph()->mutable_input(2), {"K"});
  auto inputs = [](bool c) {
    return std::map<std::string, Tensor>{{"x", rows(2)}, {"f", Tensor::from_vector<float>({1}, {0})},
                                         {"c", Tensor::from_vector<bool>({1}, {c})}};
  };
  const auto none = run_epochs(bytes(m), {inputs(true), inputs(true)}, {"if", "identity"});
  EXPECT_EQ(none[0], 0u);
  EXPECT_EQ(none[1], 0u);
}

// The type/shape args of every node event named `event`, in time order.
std::vector<std::string> shapes_in_trace(const std::string& path, const std::string& event, const char* key) {
  auto events = epprof::testing::read_trace(path);
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
  std::vector<std::string> out;
  const std::string k = std::string("\"") + key + "\":";
  for (const auto& e : events) {
    if (e.name != event) continue;
    const size_t at = e.args_json.find(k);
    if (at == std::string::npos) {
      out.push_back("(missing)");
      continue;
    }
    const size_t start = at + k.size();
    out.push_back(e.args_json.substr(start, e.args_json.find("}]", start) + 2 - start));
  }
  return out;
}

// Runs `model` once per entry of `runs` with session-level profiling into `path`.
void profile_runs(const std::string& path, const std::string& model,
                  const std::vector<std::map<std::string, Tensor>>& runs) {
  ProfilingOptions po;
  po.trace_path = path;
  ProfilingObserver prof(po);
  SessionOptions o;
  o.observer = &prof;
  Session s = Session::from_bytes(model, o);
  for (const auto& in : runs) s.run(in);
  prof.finish();
}

TEST(ProfilingShapes, NodeEventsReportTheShapesOfTheirOwnRun) {
  epprof::testing::TempDir dir;
  std::vector<std::map<std::string, Tensor>> runs;
  for (int64_t n : {2, 2, 4, 4, 2}) runs.push_back({{"x", rows(n)}});
  profile_runs(dir.file("relu.json"), dynamic_relu(), runs);
  EXPECT_EQ(shapes_in_trace(dir.file("relu.json"), "relu_kernel_time", "output_type_shape"),
            (std::vector<std::string>{"[{\"float\":[2,3]}]", "[{\"float\":[2,3]}]", "[{\"float\":[4,3]}]",
                                      "[{\"float\":[4,3]}]", "[{\"float\":[2,3]}]"}));
  // Epochs keyed on the caller's values: the shapes follow them.
  runs.clear();
  for (std::vector<int64_t> shape : {std::vector<int64_t>{3, 2}, {3, 2}, {6, 1}})
    runs.push_back({{"x", Tensor(DataType::Float, {2, 3})}, {"shape", Tensor::from_vector<int64_t>({2}, shape)}});
  profile_runs(dir.file("reshape.json"), reshape_by_caller(), runs);
  EXPECT_EQ(shapes_in_trace(dir.file("reshape.json"), "reshape_kernel_time", "output_type_shape"),
            (std::vector<std::string>{"[{\"float\":[3,2]}]", "[{\"float\":[3,2]}]", "[{\"float\":[6,1]}]"}));
  // The branch an If takes decides the shapes after it.
  runs.clear();
  for (bool c : {true, true, false, false, true}) runs.push_back(if_inputs(2, c));
  profile_runs(dir.file("if.json"), if_on_input(false), runs);
  EXPECT_EQ(shapes_in_trace(dir.file("if.json"), "identity_kernel_time", "output_type_shape"),
            (std::vector<std::string>{"[{\"float\":[2,3]}]", "[{\"float\":[2,3]}]", "[{\"float\":[3,2]}]",
                                      "[{\"float\":[3,2]}]", "[{\"float\":[2,3]}]"}));
}

// An If on a computed condition: every run has the same epoch, and runs
// after the first go through the event block, but the If and the node after
// it are outside the epoch and report the shapes of the branch each run
// took.
TEST(ProfilingShapes, NodesOutsideTheEpochReportTheirOwnShapesInsideTheBlock) {
  epprof::testing::TempDir dir;
  std::vector<std::map<std::string, Tensor>> runs;
  for (float f : {1.f, 1.f, 1.f, -1.f, -1.f, 1.f})
    runs.push_back({{"x", rows(2)}, {"f", Tensor::from_vector<float>({1}, {f})}});
  ProfilingOptions po;
  po.trace_path = dir.file("if.json");
  ProfilingObserver prof(po);
  SessionOptions o;
  o.observer = &prof;
  Session s = Session::from_bytes(if_on_input(true), o);
  for (const auto& in : runs) s.run(in);
  EXPECT_EQ(prof.runs_in_event_blocks(), runs.size() - 1) << "the first run collects, the others use the block";
  prof.finish();
  const std::string rows23 = "[{\"float\":[2,3]}]", rows32 = "[{\"float\":[3,2]}]";
  EXPECT_EQ(shapes_in_trace(dir.file("if.json"), "identity_kernel_time", "output_type_shape"),
            (std::vector<std::string>{rows23, rows23, rows23, rows32, rows32, rows23}));
  EXPECT_EQ(shapes_in_trace(dir.file("if.json"), "if_kernel_time", "output_type_shape"),
            (std::vector<std::string>{rows23, rows23, rows23, rows32, rows32, rows23}));
  EXPECT_EQ(shapes_in_trace(dir.file("if.json"), "greater_kernel_time", "output_type_shape"),
            std::vector<std::string>(runs.size(), "[{\"bool\":[1]}]"));
}

// x[N,3], b[B], c -> If(c): Mul(Add(x, w), b) in both branches, with w an
// initializer: both read from the outer scope.
std::string if_reading_initializers() {
  onnx::ModelProto m = make_model(16);
  add_io(m, true, "x", {1, 3});
  set_dims(m.mutable_graph()->mutable_input(0), {"N", "3"});
  add_io(m, true, "c", {}, onnx::TensorProto::BOOL);
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();  // a scalar
  add_io(m, true, "b", {3});
  set_dims(m.mutable_graph()->mutable_input(2), {"B"});
  add_float_init(m, "w", {3}, {1, 2, 3});
  auto* n = add_node(m, "If", "if", {"c"}, {"y"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* g = graph_attr(n, branch);
    gnode(g, "Add", "add", {"x", "w"}, {"s"});
    gnode(g, "Mul", "mul", {"s", "b"}, {"t"});
    gio(g, false, "t");
    g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  }
  add_io(m, false, "y", {});
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  return bytes(m);
}

// A subgraph's epoch leaves out the outer values that are the session's
// constants (w), not those a run feeds (b): the branch's nodes, recorded in
// blocks after the first execution of each epoch, report the shapes of
// their own run.
TEST(ProfilingShapes, ASubgraphsEpochFollowsTheOuterValuesARunFeeds) {
  epprof::testing::TempDir dir;
  std::vector<std::map<std::string, Tensor>> runs;
  for (int64_t b : {3, 3, 1, 1, 3})
    runs.push_back({{"x", rows(2)}, {"c", Tensor::from_vector<bool>({}, {true})}, {"b", Tensor(DataType::Float, {b})}});
  profile_runs(dir.file("if.json"), if_reading_initializers(), runs);
  const std::string b3 = "[{\"float\":[2,3]},{\"float\":[3]}]", b1 = "[{\"float\":[2,3]},{\"float\":[1]}]";
  EXPECT_EQ(shapes_in_trace(dir.file("if.json"), "if/then_branch/mul_kernel_time", "input_type_shape"),
            (std::vector<std::string>{b3, b3, b1, b1, b3}));
  EXPECT_EQ(shapes_in_trace(dir.file("if.json"), "if/then_branch/add_kernel_time", "input_type_shape"),
            std::vector<std::string>(runs.size(), b3));
}

// Names are byte strings: a node name with a NUL byte keeps every byte in
// its node event's name (escaped in the JSON), not the part before the NUL.
TEST(ProfilingShapes, NodeNamesKeepEmbeddedNulBytes) {
  epprof::testing::TempDir dir;
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2, 3});
  add_node(m, "Relu", std::string("re\0lu", 5), {"x"}, {"y"});
  add_io(m, false, "y", {2, 3});
  profile_runs(dir.file("nul.json"), bytes(m), {{{"x", rows(2)}}});
  const std::string want = std::string("re\0lu", 5) + "_kernel_time";
  bool found = false;
  for (const auto& e : epprof::testing::read_trace(dir.file("nul.json"))) found = found || e.name == want;
  EXPECT_TRUE(found) << "no node event named 're\\0lu_kernel_time'";
}

}  // namespace
