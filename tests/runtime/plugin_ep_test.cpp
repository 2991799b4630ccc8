// The EP plugin ABI end to end: the runtime loads the C99 testing EP
// (plugins/testing_ep), partitions by priority, computes through the C
// slots, refuses broken plugins, and the EP's profiler tags its kernels with
// the node's correlation id.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "epprof/epprof.h"
#include "epprof/rt/plugin_ep.h"
#include "epprof/rt/session.h"
#include "support/test_util.h"
#include "device_ep_checks.h"
#include "test_models.h"

namespace epprof::rt {
namespace {

using epprof::testing::read_trace;
using epprof::testing::TempDir;
using namespace epprof::rt::testing;

// x[2,3] -> Relu -> r; Add(r, x) -> s; Mul(s, x) -> m; Add(m, b[3]) -> y
// (the last Add broadcasts, so the testing EP leaves it to the CPU EP).
std::string mixed_model() {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2, 3});
  add_float_init(m, "b", {3}, {0.5f, -1.0f, 2.0f});
  add_node(m, "Relu", "relu", {"x"}, {"r"});
  add_node(m, "Add", "add_same", {"r", "x"}, {"s"});
  add_node(m, "Mul", "mul", {"s", "x"}, {"m"});
  add_node(m, "Add", "add_bcast", {"m", "b"}, {"y"});
  add_io(m, false, "y", {2, 3});
  return bytes(m);
}

std::map<std::string, Tensor> inputs() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(6);
  for (auto& x : v) x = d(rng);
  return {{"x", Tensor::from_vector<float>({2, 3}, v)}};
}

std::string load_error(const std::string& path) {
  try {
    load_plugin_ep(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    return e.message();
  }
  ADD_FAILURE() << "loading " << path << " did not fail";
  return {};
}

TEST(PluginEp, LoadsTheTestingPlugin) {
  auto ep = load_plugin_ep(EPPROF_TESTING_EP_PATH);
  EXPECT_EQ(ep->name(), "testing");
  EXPECT_EQ(ep->path(), EPPROF_TESTING_EP_PATH);
  EXPECT_TRUE(ep->has_profiler());
}

TEST(PluginEp, PriorityOrderDecidesWhoRunsANode) {
  auto ep = load_plugin_ep(EPPROF_TESTING_EP_PATH);
  Session first(Session::from_bytes(mixed_model(), with({ep, make_cpu_execution_provider()})));
  EXPECT_EQ(first.provider_of(0), "testing");                // Relu
  EXPECT_EQ(first.provider_of(1), "testing");                // Add, same shape
  EXPECT_EQ(first.provider_of(2), "CPUExecutionProvider");  // Mul: not claimed
  EXPECT_EQ(first.provider_of(3), "CPUExecutionProvider");  // Add, broadcasting: not claimed
  Session second(Session::from_bytes(mixed_model(), with({make_cpu_execution_provider(), ep})));
  for (size_t i = 0; i < second.nodes().size(); ++i) EXPECT_EQ(second.provider_of(i), "CPUExecutionProvider");
}

TEST(PluginEp, ResultsEqualTheCpuEp) {
  auto ep = load_plugin_ep(EPPROF_TESTING_EP_PATH);
  Session plugin(Session::from_bytes(mixed_model(), with({ep, make_cpu_execution_provider()})));
  Session cpu(Session::from_bytes(mixed_model()));
  const auto in = inputs();
  EXPECT_EQ(plugin.run(in).at(0).to_vector<float>(), cpu.run(in).at(0).to_vector<float>());
}

TEST(PluginEp, AnUnclaimedNodeWithNoOtherEpIsAClearError) {
  auto ep = load_plugin_ep(EPPROF_TESTING_EP_PATH);
  try {
    Session::from_bytes(mixed_model(), with({ep}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::UnsupportedOp);
    EXPECT_NE(e.message().find("'mul'"), std::string::npos) << e.message();
  }
}

TEST(PluginEp, RefusesBrokenPlugins) {
  const std::string newer = load_error(EPPROF_TESTING_EP_NEWER_ABI_PATH);
  EXPECT_NE(newer.find("built for EP plugin ABI version 2"), std::string::npos) << newer;
  EXPECT_NE(newer.find("this host speaks version 1"), std::string::npos) << newer;
  const std::string missing = load_error(EPPROF_TESTING_EP_MISSING_SLOT_PATH);
  EXPECT_NE(missing.find("lacks required slots: compute"), std::string::npos) << missing;
  const std::string no_entry = load_error(EPPROF_TESTING_EP_NO_ENTRY_PATH);
  EXPECT_NE(no_entry.find("epprof_ep_plugin_entry"), std::string::npos) << no_entry;
  const std::string absent = load_error("/nonexistent/libnothing.so");
  EXPECT_NE(absent.find("/nonexistent/libnothing.so"), std::string::npos) << absent;
#ifdef EPPROF_EXAMPLE_PLUGIN_PATH
  // A profiler plugin is not an EP plugin.
  const std::string wrong = load_error(EPPROF_EXAMPLE_PLUGIN_PATH);
  EXPECT_NE(wrong.find("epprof_ep_plugin_entry"), std::string::npos) << wrong;
#endif
}

TEST(PluginEp, AComputeErrorNamesNodeAndPlugin) {
  auto ep = load_plugin_ep(EPPROF_TESTING_EP_PATH);
  setenv("EPPROF_TESTING_EP_FAIL", "compute", 1);
  Session s(Session::from_bytes(mixed_model(), with({ep, make_cpu_execution_provider()})));
  unsetenv("EPPROF_TESTING_EP_FAIL");
  try {
    s.run(inputs());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Kernel);
    EXPECT_NE(e.message().find("node 'relu'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("EP plugin 'testing'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("injected compute failure"), std::string::npos) << e.message();
  }
}

TEST(PluginEp, TheEpRemainsUsableAfterTheSessionAndPluginObjectsAreGone) {
  // Kernels keep the library alive: destroy the EP handle first.
  auto ep = load_plugin_ep(EPPROF_TESTING_EP_PATH);
  Session s(Session::from_bytes(mixed_model(), with({ep, make_cpu_execution_provider()})));
  ep.reset();
  EXPECT_EQ(s.run(inputs()).size(), 1u);
}


TEST(PluginEp, ItsProfilerTagsKernelsWithTheNodesCorrelationId) {
  auto ep = load_plugin_ep(EPPROF_TESTING_EP_PATH);
  TempDir dir;
  const std::string path = dir.file("trace.json");
  const epprof_trace_stats stats = record_device_trace(ep, path, [&](const RunOptions& ro) {
    SessionOptions o = with({ep, make_cpu_execution_provider()});
    o.executor = ExecutorKind::Parallel;
    o.inter_op_threads = 2;
    Session s(Session::from_bytes(mixed_model(), o));
    for (int i = 0; i < 3; ++i) s.run(inputs(), ro);
  });
  EXPECT_EQ(stats.device_events, 6u);  // Relu and Add, 3 runs
  EXPECT_EQ(stats.unattributed_device_events, 0u);
  EXPECT_EQ(stats.plugin_errors, 0u);

  int kernels = 0;
  for (const auto& e : read_trace(path)) {
    if (e.cat != "Kernel") continue;
    ++kernels;
    const std::string expected = e.name == "testing_relu" ? "relu" : "add_same";
    EXPECT_EQ(e.arg("parent_name"), expected) << e.name;
    EXPECT_EQ(e.arg("op_name"), e.name == "testing_relu" ? "Relu" : "Add");
  }
  EXPECT_EQ(kernels, 6);
}

// x[2,3], c (bool) -> If(c): then Relu(x), else Add(x, x); both branch
// nodes are ones the testing EP claims.
std::string if_model() {
  onnx::ModelProto m = make_model(16);
  add_io(m, true, "x", {2, 3});
  add_io(m, true, "c", {}, onnx::TensorProto::BOOL);
  auto* n = add_node(m, "If", "if", {"c"}, {"y"});
  auto* then_g = graph_attr(n, "then_branch");
  gnode(then_g, "Relu", "relu", {"x"}, {"t"});
  gio(then_g, false, "t", onnx::TensorProto::FLOAT, {2, 3});
  auto* else_g = graph_attr(n, "else_branch");
  gnode(else_g, "Add", "add", {"x", "x"}, {"e"});
  gio(else_g, false, "e", onnx::TensorProto::FLOAT, {2, 3});
  add_io(m, false, "y", {2, 3});
  return bytes(m);
}

// Device work issued by a node inside a subgraph is attributed to that
// execution of it, as at the top level: the EP runs the branch nodes, and
// each kernel's parent is the branch node's event.
TEST(PluginEp, KernelsOfSubgraphNodesAreAttributedToThem) {
  auto ep = load_plugin_ep(EPPROF_TESTING_EP_PATH);
  TempDir dir;
  const std::string path = dir.file("trace.json");
  std::vector<float> then_y, else_y;
  const epprof_trace_stats stats = record_device_trace(ep, path, [&](const RunOptions& ro) {
    Session s(Session::from_bytes(if_model(), with({ep, make_cpu_execution_provider()})));
    auto in = inputs();
    for (bool c : {true, false, true}) {
      in["c"] = Tensor::from_vector<bool>({}, {c});
      (c ? then_y : else_y) = s.run(in, ro).at(0).to_vector<float>();
    }
  });
  // The EP computed the branches (Relu(x) and x + x).
  const std::vector<float> x = inputs().at("x").to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(then_y[i], std::max(x[i], 0.0f));
    EXPECT_EQ(else_y[i], x[i] + x[i]);
  }
  EXPECT_EQ(stats.device_events, 3u);
  EXPECT_EQ(stats.unattributed_device_events, 0u);

  std::map<std::string, uint64_t> node_events;  // by name: the executions
  std::map<std::string, int> kernels_by_parent;
  for (const auto& e : read_trace(path)) {
    if (e.cat == "Node") ++node_events[e.name];
    if (e.cat == "Kernel") ++kernels_by_parent[e.arg("parent_name")];
  }
  EXPECT_EQ(node_events["if/then_branch/relu"], 2u);
  EXPECT_EQ(node_events["if/else_branch/add"], 1u);
  EXPECT_EQ(kernels_by_parent["if/then_branch/relu"], 2);
  EXPECT_EQ(kernels_by_parent["if/else_branch/add"], 1);
}

}  // namespace
}  // namespace epprof::rt
