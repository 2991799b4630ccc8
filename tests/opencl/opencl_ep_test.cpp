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
#include "device_ep_checks.h"
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

class OpenClKernels : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpenClKernels, MatchTheCpuEp) {
  REQUIRE_OPENCL(ep);
  expect_kernel_matches_cpu(ep, GetParam(), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Ops, OpenClKernels, ::testing::ValuesIn(device_op_cases()),
                         [](const auto& p) { return p.param.label; });
INSTANTIATE_TEST_SUITE_P(CnnOps, OpenClKernels, ::testing::ValuesIn(cnn_op_cases()),
                         [](const auto& p) { return p.param.label; });

// Attributes no kernel is written for -- a 3-D window, dilations beyond
// 2^24, an exclude_outside Resize -- leave the node to the next EP.
TEST(OpenClClaims, WindowsBeyondTheKernelsReachGoToTheNextEp) {
  REQUIRE_OPENCL(ep);
  using Ints = std::vector<int64_t>;
  const OpCase cases[] = {
      OpCase("conv_3d", "Conv", {{1, 1, 4, 4, 4}, {1, 1, 2, 2, 2}}),
      OpCase("conv_huge_dilation", "Conv", {{1, 1, 8, 8}, {1, 1, 2, 2}}).ints("dilations", Ints{1, int64_t(1) << 30}),
      OpCase("maxpool_huge_stride", "MaxPool", {{1, 1, 8, 8}}).ints("kernel_shape", Ints{2, 2})
          .ints("strides", Ints{int64_t(1) << 40, 1}),
      OpCase("resize_exclude_outside", "Resize", {{1, 1, 4, 4}, {0}, {4}}, {}, {{"exclude_outside", 1}})
          .constant(1, {}).constant(2, {1, 1, 2, 2}).str("mode", "linear"),
  };
  for (const OpCase& c : cases) {
    Session s(Session::from_bytes(single_node_model(c), with({ep, make_cpu_execution_provider()})));
    EXPECT_NE(s.provider_of(0), ep->name()) << c.label << " was claimed";
  }
}

// ---- Bundled models ----

class OpenClModels : public ::testing::TestWithParam<std::string> {};

TEST_P(OpenClModels, GiveTheCpuEpsOutputs) {
  REQUIRE_OPENCL(ep);
  expect_model_matches_cpu(ep, std::string(EPPROF_MODELS_DIR) + "/" + GetParam() + ".onnx", GetParam());
}

INSTANTIATE_TEST_SUITE_P(Bundled, OpenClModels, ::testing::Values("mlp", "cnn", "transformer"));

// ---- Device timestamps on the host clock ----

struct Interval {
  double ts = 0, dur = 0;  // µs
};

// Each device event carries its own clock error bound (clock_error_ns: the
// width of the host bracket around the call that enqueued it, which holds
// its QUEUED time); the metadata's clock_error_bound_ns is the largest.
TEST(OpenClTrace, DeviceKernelsLieInsideTheirNodesWithinTheirErrorBounds) {
  REQUIRE_OPENCL(ep);
  epprof::testing::TempDir dir;
  const std::string trace = dir.file("trace.json");
  const epprof_trace_stats stats =
      record_device_trace(ep, std::string(EPPROF_MODELS_DIR) + "/transformer.onnx", trace);
  if (HasFailure()) return;
  EXPECT_GT(stats.device_events, 0u);
  EXPECT_EQ(stats.unattributed_device_events, 0u);
  EXPECT_EQ(stats.plugin_errors, 0u);

  // Read it with simdjson: nodes by correlation id, the plugin's metadata,
  // then every device event against its node.
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.load(trace).get(doc), simdjson::SUCCESS);
  struct DeviceEvent {
    std::string id, name;
    Interval at;
    int64_t error_ns = -1;
  };
  std::map<std::string, Interval> nodes;
  std::vector<DeviceEvent> device;
  int64_t bound_ns = -1, anchored = -1;
  for (simdjson::dom::element e : doc.get_array()) {
    std::string_view cat = e["cat"].get_string().value();
    if (cat == "Metadata") {
      simdjson::dom::element meta;
      if (e["args"]["plugins"]["OpenCLExecutionProvider"].get(meta) != simdjson::SUCCESS) continue;
      std::printf("[ info ] OpenCL EP metadata: %s\n", simdjson::minify(meta).c_str());
      std::string_view v;
      if (meta["clock_error_bound_ns"].get(v) == simdjson::SUCCESS) bound_ns = std::stoll(std::string(v));
      if (meta["clock_anchored_commands"].get(v) == simdjson::SUCCESS) anchored = std::stoll(std::string(v));
      continue;
    }
    if (cat != "Node" && cat != "Kernel" && cat != "Memcpy") continue;
    std::string_view id;
    ASSERT_EQ(e["args"]["correlation_id"].get(id), simdjson::SUCCESS) << cat;
    Interval iv{e["ts"].get_double().value(), e["dur"].get_double().value()};
    if (cat == "Node") {
      nodes[std::string(id)] = iv;
      continue;
    }
    DeviceEvent d{std::string(id), std::string(e["name"].get_string().value()), iv};
    std::string_view err;
    ASSERT_EQ(e["args"]["clock_error_ns"].get(err), simdjson::SUCCESS) << d.name << " has no clock_error_ns";
    d.error_ns = std::stoll(std::string(err));
    device.push_back(std::move(d));
  }
  ASSERT_GE(bound_ns, 0) << "the trace metadata lacks plugins.opencl.clock_error_bound_ns";
  ASSERT_FALSE(device.empty());
  // Every command was enqueued inside a node, with a profiler active.
  EXPECT_EQ(anchored, static_cast<int64_t>(device.size()));
  std::printf("[ info ] OpenCL clock error bound: %lld ns at most; %zu device events\n",
              static_cast<long long>(bound_ns), device.size());
  double tightest_us = 1e300;  // the smallest margin to a node edge, unwidened
  for (const DeviceEvent& d : device) {
    auto it = nodes.find(d.id);
    ASSERT_NE(it, nodes.end()) << d.name << " has correlation id " << d.id << " of no node";
    EXPECT_GE(d.error_ns, 0) << d.name;
    EXPECT_LE(d.error_ns, bound_ns) << d.name << ": the metadata's bound is not the largest";
    const Interval& n = it->second;
    const double bound_us = static_cast<double>(d.error_ns) / 1000.0 + 0.001;  // + the trace's ns rounding
    tightest_us = std::min({tightest_us, d.at.ts - n.ts, n.ts + n.dur - (d.at.ts + d.at.dur)});
    EXPECT_GE(d.at.ts, n.ts - bound_us) << d.name << " starts before its node (correlation id " << d.id
                                        << ", clock_error_ns " << d.error_ns << ")";
    EXPECT_LE(d.at.ts + d.at.dur, n.ts + n.dur + bound_us)
        << d.name << " ends after its node (correlation id " << d.id << ", clock_error_ns " << d.error_ns << ")";
  }
  std::printf("[ info ] tightest margin of a device event to its node's edge: %.3f us\n", tightest_us);
}

// ---- Faults. Each runs as its own ctest entry, which sets the
// environment that provokes the fault; elsewhere it skips. ----

bool fault_env(const char* name) { return std::getenv(name) != nullptr; }

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

TEST(OpenClFaults, AMistypedAllocationCapRefusesTheEpByName) {
  const char* cap = std::getenv("EPPROF_OPENCL_MAX_ALLOC_BYTES");
  if (!cap || std::string(cap) != "64k") GTEST_SKIP() << "run by ctest opencl_ep_bad_alloc_cap";
  try {
    load_plugin_ep(EPPROF_OPENCL_EP_PATH);
    FAIL() << "the EP loaded with EPPROF_OPENCL_MAX_ALLOC_BYTES=64k, as if it had no cap";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("EPPROF_OPENCL_MAX_ALLOC_BYTES='64k' is not a byte count"), std::string::npos)
        << e.message();
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
