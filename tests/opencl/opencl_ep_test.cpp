// The OpenCL EP on a real OpenCL device (PoCL's CPU device here): kernels
// match the CPU EP, the bundled models give the same outputs, and device
// timestamps put on the host clock lie inside their nodes. Every test skips
// with the EP's own reason when no OpenCL platform or device is present.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "epprof/epprof.h"
#include "epprof/rt/plugin_ep.h"
#include "epprof/rt/session.h"
#include "support/test_util.h"
#include "test_models.h"

namespace epprof::rt {
namespace {

using namespace epprof::rt::testing;

// The EP, or the reason it cannot be loaded on this machine.
std::shared_ptr<PluginExecutionProvider> opencl_ep(std::string* why) {
  try {
    return load_plugin_ep(EPPROF_OPENCL_EP_PATH);
  } catch (const Error& e) {
    *why = e.message();
    return nullptr;
  }
}

#define REQUIRE_OPENCL(ep)                                                       \
  std::string why_;                                                              \
  auto ep = opencl_ep(&why_);                                                    \
  if (!ep) GTEST_SKIP() << "no usable OpenCL device, the EP was refused: " << why_

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -2.0f, float hi = 2.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_size(shape)));
  for (auto& x : v) x = d(rng);
  return Tensor::from_vector<float>(shape, v);
}

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto g = got.to_vector<float>(), w = want.to_vector<float>();
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i])) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", the CPU EP gives " << w[i];
  EXPECT_EQ(bad, 0u) << what;
}

SessionOptions with(std::vector<std::shared_ptr<ExecutionProvider>> eps) {
  SessionOptions o;
  o.providers = std::move(eps);
  return o;
}

// ---- Kernels against the CPU EP ----

struct OpCase {
  OpCase(std::string label_, std::string op_, std::vector<Shape> inputs_, std::map<std::string, float> f = {},
         std::map<std::string, int64_t> i = {}, int opset_ = 17, bool positive_ = false)
      : label(std::move(label_)), op(std::move(op_)), inputs(std::move(inputs_)), float_attrs(std::move(f)),
        int_attrs(std::move(i)), opset(opset_), positive(positive_) {}
  std::string label, op;
  std::vector<Shape> inputs;  // Shape{}: a scalar
  std::map<std::string, float> float_attrs;
  std::map<std::string, int64_t> int_attrs;
  int opset;
  bool positive;  // the second input in [0.5, 2] (divisors)
};

std::string single_node_model(const OpCase& c) {
  onnx::ModelProto m = make_model(c.opset);
  std::vector<std::string> names;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    names.push_back("in" + std::to_string(i));
    add_io(m, true, names.back(), c.inputs[i]);
  }
  auto* n = add_node(m, c.op, "node", names, {"y"});
  for (const auto& [k, v] : c.float_attrs) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  for (const auto& [k, v] : c.int_attrs) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  auto* out = m.mutable_graph()->add_output();  // shape left to inference
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return bytes(m);
}

class OpenClKernels : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpenClKernels, MatchTheCpuEp) {
  REQUIRE_OPENCL(ep);
  const OpCase& c = GetParam();
  const std::string model = single_node_model(c);
  Session device(Session::from_bytes(model, with({ep, make_cpu_execution_provider()})));
  ASSERT_EQ(device.provider_of(0), "OpenCLExecutionProvider") << "the EP did not claim " << c.label;
  Session cpu(Session::from_bytes(model));
  std::mt19937 rng(1234);
  std::map<std::string, Tensor> in;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    in["in" + std::to_string(i)] = c.positive && i == 1 ? random_tensor(c.inputs[i], rng, 0.5f, 2.0f)
                                                        : random_tensor(c.inputs[i], rng);
  expect_close(device.run(in).at(0), cpu.run(in).at(0), 1e-5, 1e-5, c.label);
}

const OpCase kCases[] = {
    {"add_same", "Add", {{2, 3, 4}, {2, 3, 4}}},
    {"add_bcast_vector", "Add", {{2, 3, 4}, {4}}},
    {"add_bcast_both", "Add", {{3, 1, 5}, {1, 4, 1}}},
    {"add_scalar", "Add", {{2, 3}, {}}},
    {"sub_bcast", "Sub", {{4, 1}, {1, 6}}},
    {"mul_bcast_rank6", "Mul", {{2, 1, 2, 1, 2, 3}, {3, 1, 2, 1, 1}}},
    {"div_bcast", "Div", {{2, 3, 4}, {3, 1}}, {}, {}, 17, true},
    {"relu", "Relu", {{3, 7}}},
    {"sigmoid", "Sigmoid", {{1000}}},
    {"tanh", "Tanh", {{2, 2, 9}}},
    {"softmax_last", "Softmax", {{2, 3, 5}}},
    {"softmax_axis1", "Softmax", {{2, 3, 5}}, {}, {{"axis", 1}}},
    {"softmax_legacy_axis1", "Softmax", {{2, 3, 4}}, {}, {{"axis", 1}}, 11},
    {"matmul_2d", "MatMul", {{5, 7}, {7, 3}}},
    {"matmul_batched", "MatMul", {{2, 3, 4}, {2, 4, 5}}},
    {"matmul_bcast_batch", "MatMul", {{2, 1, 3, 4}, {5, 4, 6}}},
    {"matmul_vec_mat", "MatMul", {{4}, {4, 3}}},
    {"matmul_mat_vec", "MatMul", {{2, 3, 4}, {4}}},
    {"gemm_plain", "Gemm", {{4, 5}, {5, 3}}},
    {"gemm_c_row", "Gemm", {{4, 5}, {5, 3}, {3}}, {{"alpha", 0.5f}, {"beta", 2.0f}}},
    {"gemm_c_col_transposed", "Gemm", {{5, 4}, {3, 5}, {4, 1}}, {}, {{"transA", 1}, {"transB", 1}}},
    {"gemm_c_full_transb", "Gemm", {{4, 5}, {3, 5}, {4, 3}}, {{"beta", -1.0f}}, {{"transB", 1}}},
    {"gemm_c_scalar", "Gemm", {{2, 6}, {6, 2}, {}}},
};

INSTANTIATE_TEST_SUITE_P(Ops, OpenClKernels, ::testing::ValuesIn(kCases),
                         [](const auto& p) { return p.param.label; });

// ---- Bundled models ----

std::map<std::string, Tensor> random_inputs(const Session& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::map<std::string, Tensor> in;
  for (const auto& io : s.inputs()) {
    Shape shape = io.shape;
    for (auto& d : shape) d = d < 0 ? 1 : d;
    in[io.name] = random_tensor(shape, rng, -1.0f, 1.0f);
  }
  return in;
}

class OpenClModels : public ::testing::TestWithParam<std::string> {};

TEST_P(OpenClModels, GiveTheCpuEpsOutputs) {
  REQUIRE_OPENCL(ep);
  const std::string path = std::string(EPPROF_MODELS_DIR) + "/" + GetParam() + ".onnx";
  Session device(path, with({ep, make_cpu_execution_provider()}));
  Session cpu(path);
  size_t on_device = 0;
  for (size_t i = 0; i < device.nodes().size(); ++i) on_device += device.provider_of(i) == "OpenCLExecutionProvider";
  EXPECT_GT(on_device, 0u) << "no node of " << GetParam() << " ran on the OpenCL EP";
  const auto in = random_inputs(cpu, 99);
  const auto got = device.run(in), want = cpu.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-3, 1e-4, GetParam() + " output " + std::to_string(i));
  // Nodes on two threads at once share the device queue.
  SessionOptions parallel = with({ep, make_cpu_execution_provider()});
  parallel.executor = ExecutorKind::Parallel;
  parallel.threads = 2;
  Session par(path, parallel);
  const auto got_par = par.run(in);
  for (size_t i = 0; i < got.size(); ++i)
    expect_close(got_par[i], want[i], 1e-3, 1e-4, GetParam() + " parallel output " + std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(Bundled, OpenClModels, ::testing::Values("mlp", "cnn", "transformer"));

// ---- Device timestamps on the host clock ----

// NODE events around each node, on the node's thread, as the runtime's
// profiling observer reports them.
class NodeEvents final : public RunObserver {
 public:
  explicit NodeEvents(epprof_profiler_t p) : p_(p) {}
  void node_begin(const NodeInfo& info) override {
    epprof_status_release(epprof_event_begin(p_, EPPROF_CATEGORY_NODE,
                                             epprof::testing::name_id(info.node.name.c_str()), info.correlation_id));
  }
  void node_end(const NodeInfo& info, const NodeIo&) override {
    epprof_arg args[2] = {};
    args[0].key = epprof::testing::name_id("op_name");
    args[0].type = EPPROF_ARG_STRING;
    args[0].value.str = info.node.op_type.c_str();
    args[1].key = epprof::testing::name_id("node_index");
    args[1].type = EPPROF_ARG_INT64;
    args[1].value.i64 = static_cast<int64_t>(info.node.index);
    epprof_status_release(epprof_event_end(p_, info.correlation_id, args, 2));
  }

 private:
  epprof_profiler_t p_;
};

struct Interval {
  double ts = 0, dur = 0;  // µs
};

TEST(OpenClTrace, DeviceKernelsLieInsideTheirNodesWithinTheErrorBound) {
  REQUIRE_OPENCL(ep);
  epprof_plugin_t plugin{};
  EPPROF_ASSERT_OK(epprof_plugin_register(ep->make_profiler_plugin(), &plugin));
  epprof::testing::TempDir dir;
  const std::string trace = dir.file("trace.json");
  epprof_profiler_config config = epprof::testing::config_for(trace);
  epprof_profiler_t prof{};
  EPPROF_ASSERT_OK(epprof_profiler_create(&config, &prof));
  EPPROF_ASSERT_OK(epprof_profiler_add_plugin(prof, plugin));
  EPPROF_ASSERT_OK(epprof_profiler_start(prof));
  {
    NodeEvents events(prof);
    Session s(std::string(EPPROF_MODELS_DIR) + "/transformer.onnx", with({ep, make_cpu_execution_provider()}));
    RunOptions ro;
    ro.observer = &events;
    const auto in = random_inputs(s, 5);
    for (int i = 0; i < 3; ++i) s.run(in, ro);
  }
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  EPPROF_ASSERT_OK(epprof_profiler_stop(prof, &stats));
  EPPROF_EXPECT_OK(epprof_profiler_destroy(prof));
  EPPROF_EXPECT_OK(epprof_plugin_unload(plugin));
  EXPECT_GT(stats.device_events, 0u);
  EXPECT_EQ(stats.unattributed_device_events, 0u);
  EXPECT_EQ(stats.plugin_errors, 0u);

  // Read it with simdjson: nodes by correlation id, the error bound from the
  // plugin's metadata, then every device event against its node.
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.load(trace).get(doc), simdjson::SUCCESS);
  std::map<std::string, Interval> nodes;
  std::vector<std::pair<std::string, Interval>> device;
  std::vector<std::string> device_names;
  int64_t bound_ns = -1;
  for (simdjson::dom::element e : doc.get_array()) {
    std::string_view cat = e["cat"].get_string().value();
    if (cat == "Metadata") {
      std::string_view v;
      if (e["args"]["plugins"]["OpenCLExecutionProvider"]["clock_error_bound_ns"].get(v) == simdjson::SUCCESS) {
        bound_ns = std::stoll(std::string(v));
        std::printf("[ info ] OpenCL EP metadata: %s\n", simdjson::minify(e["args"]["plugins"]["OpenCLExecutionProvider"]).c_str());
      }
      continue;
    }
    if (cat != "Node" && cat != "Kernel" && cat != "Memcpy") continue;
    std::string_view id;
    ASSERT_EQ(e["args"]["correlation_id"].get(id), simdjson::SUCCESS) << cat;
    Interval iv{e["ts"].get_double().value(), e["dur"].get_double().value()};
    if (cat == "Node") {
      nodes[std::string(id)] = iv;
    } else {
      device.emplace_back(std::string(id), iv);
      device_names.emplace_back(e["name"].get_string().value());
    }
  }
  ASSERT_GE(bound_ns, 0) << "the trace metadata lacks plugins.opencl.clock_error_bound_ns";
  const double bound_us = static_cast<double>(bound_ns) / 1000.0 + 0.001;  // + the trace's ns rounding
  std::printf("[ info ] OpenCL clock calibration error bound: %lld ns; %zu device events\n",
              static_cast<long long>(bound_ns), device.size());
  ASSERT_FALSE(device.empty());
  double tightest_us = 1e300;  // the smallest margin to a node edge, unwidened
  for (size_t i = 0; i < device.size(); ++i) {
    const auto& [id, d] = device[i];
    auto it = nodes.find(id);
    ASSERT_NE(it, nodes.end()) << device_names[i] << " has correlation id " << id << " of no node";
    const Interval& n = it->second;
    tightest_us = std::min({tightest_us, d.ts - n.ts, n.ts + n.dur - (d.ts + d.dur)});
    EXPECT_GE(d.ts, n.ts - bound_us) << device_names[i] << " starts before its node";
    EXPECT_LE(d.ts + d.dur, n.ts + n.dur + bound_us) << device_names[i] << " ends after its node";
  }
  std::printf("[ info ] tightest margin of a device event to its node's edge: %.3f us\n", tightest_us);
}

// ---- Faults. Each runs as its own ctest entry, which sets the
// environment that provokes the fault; elsewhere it skips. ----

bool fault_env(const char* name) { return std::getenv(name) != nullptr; }

// A MatMul (device program "matmul") feeding a Relu ("elementwise").
std::string matmul_relu_model() {
  onnx::ModelProto m = make_model();
  add_io(m, true, "a", {5, 7});
  add_io(m, true, "b", {7, 3});
  add_node(m, "MatMul", "mm", {"a", "b"}, {"p"});
  add_node(m, "Relu", "relu", {"p"}, {"y"});
  add_io(m, false, "y", {5, 3});
  return bytes(m);
}

std::map<std::string, Tensor> matmul_relu_inputs() {
  std::mt19937 rng(3);
  return {{"a", random_tensor({5, 7}, rng)}, {"b", random_tensor({7, 3}, rng)}};
}

TEST(OpenClFaults, RefusedWithoutAPlatform) {
  if (!fault_env("OCL_ICD_VENDORS")) GTEST_SKIP() << "run by ctest opencl_ep_no_platform (OCL_ICD_VENDORS=<empty dir>)";
  try {
    load_plugin_ep(EPPROF_OPENCL_EP_PATH);
    FAIL() << "the EP loaded without an OpenCL platform";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("no OpenCL platform found"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("the EP is refused"), std::string::npos) << e.message();
  }
}

TEST(OpenClFaults, AKernelBuildFailureSendsItsNodesToTheNextEp) {
  if (!fault_env("EPPROF_OPENCL_BREAK_PROGRAM")) GTEST_SKIP() << "run by ctest opencl_ep_build_failure";
  REQUIRE_OPENCL(ep);
  ::testing::internal::CaptureStderr();
  Session s(Session::from_bytes(matmul_relu_model(), with({ep, make_cpu_execution_provider()})));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(s.provider_of(0), "CPUExecutionProvider");  // MatMul: its program did not build
  EXPECT_EQ(s.provider_of(1), "OpenCLExecutionProvider");
  EXPECT_NE(log.find("building kernel program 'matmul' failed"), std::string::npos) << log;
  EXPECT_NE(log.find("injected by EPPROF_OPENCL_BREAK_PROGRAM"), std::string::npos) << "no build log: " << log;
  EXPECT_NE(log.find("node 'mm' (MatMul)"), std::string::npos) << log;
  EXPECT_NE(log.find("goes to the next EP"), std::string::npos) << log;
  Session cpu(Session::from_bytes(matmul_relu_model()));
  const auto in = matmul_relu_inputs();
  expect_close(s.run(in).at(0), cpu.run(in).at(0), 1e-5, 1e-5, "after a build failure");
}

TEST(OpenClFaults, DeviceOutOfMemoryFallsBackToTheCpuEp) {
  if (!fault_env("EPPROF_OPENCL_MAX_ALLOC_BYTES")) GTEST_SKIP() << "run by ctest opencl_ep_device_oom";
  REQUIRE_OPENCL(ep);
  Session s(Session::from_bytes(matmul_relu_model(), with({ep, make_cpu_execution_provider()})));
  Session cpu(Session::from_bytes(matmul_relu_model()));
  const auto in = matmul_relu_inputs();
  ::testing::internal::CaptureStderr();
  const Tensor got = s.run(in).at(0);
  s.run(in);  // warned once per node, not per run
  const std::string log = ::testing::internal::GetCapturedStderr();
  expect_close(got, cpu.run(in).at(0), 1e-5, 1e-5, "after device OOM");
  EXPECT_NE(log.find("device out of memory running node 'mm' (MatMul)"), std::string::npos) << log;
  EXPECT_NE(log.find("falls back to the CPU EP"), std::string::npos) << log;
  EXPECT_EQ(log.find("falls back"), log.rfind("falls back")) << "warned more than once per node: " << log;
}

}  // namespace
}  // namespace epprof::rt
