// The CUDA EP on a GPU: kernels match the CPU EP, the bundled models give
// the same outputs, and CUPTI's records reach the trace attributed to their
// nodes. Without a GPU every test skips with cudaGetDeviceCount's error,
// except RefusedAtLoadWithAClearReason, which checks the refusal itself.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <simdjson.h>

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

// Empty when a CUDA device is present, else why not.
std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return std::string("no CUDA device: cudaGetDeviceCount failed with ") + cudaGetErrorName(e) + " (" +
           cudaGetErrorString(e) + ")";
  if (count == 0) return "no CUDA device: cudaGetDeviceCount found none";
  return {};
}

std::shared_ptr<PluginExecutionProvider> cuda_ep(std::string* why) {
  try {
    return load_plugin_ep(EPPROF_CUDA_EP_PATH);
  } catch (const Error& e) {
    *why = e.message();
    return nullptr;
  }
}

#define REQUIRE_CUDA(ep)                                                              \
  if (const std::string no_gpu_ = no_gpu_reason(); !no_gpu_.empty()) GTEST_SKIP() << no_gpu_; \
  std::string why_;                                                                   \
  auto ep = cuda_ep(&why_);                                                           \
  ASSERT_TRUE(ep) << "a CUDA device is present but the EP was refused: " << why_

// ---- Loading ----

TEST(CudaEp, RefusedAtLoadWithAClearReasonOrLoaded) {
  const std::string no_gpu = no_gpu_reason();
  std::string why;
  auto ep = cuda_ep(&why);
  if (no_gpu.empty()) {
    ASSERT_TRUE(ep) << "a CUDA device is present but the EP was refused: " << why;
    EXPECT_EQ(ep->name().find("cuda") != std::string::npos || ep->name().find("CUDA") != std::string::npos, true)
        << ep->name();
    return;
  }
  // No GPU (or no driver): the library loads, its entry refuses the EP,
  // naming the failed call and what happens to the nodes.
  ASSERT_FALSE(ep) << "the EP loaded without a CUDA device (" << no_gpu << ")";
  EXPECT_NE(why.find("cuda EP"), std::string::npos) << why;
  EXPECT_NE(why.find("cudaGetDeviceCount"), std::string::npos) << why;
  EXPECT_NE(why.find("refused at load"), std::string::npos) << why;
  EXPECT_NE(why.find("CPU EP"), std::string::npos) << why;
  std::printf("[ info ] without a GPU: %s\n", why.c_str());
}

// ---- Kernels against the CPU EP ----

class CudaKernels : public ::testing::TestWithParam<OpCase> {};

TEST_P(CudaKernels, MatchTheCpuEp) {
  REQUIRE_CUDA(ep);
  expect_kernel_matches_cpu(ep, GetParam(), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaKernels, ::testing::ValuesIn(device_op_cases()), [](const auto& p) { return p.param.label; });

// ---- Bundled models ----

class CudaModels : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaModels, GiveTheCpuEpsOutputs) {
  REQUIRE_CUDA(ep);
  expect_model_matches_cpu(ep, std::string(EPPROF_MODELS_DIR) + "/" + GetParam() + ".onnx", GetParam());
}

INSTANTIATE_TEST_SUITE_P(Bundled, CudaModels, ::testing::Values("mlp", "cnn", "transformer"));

// ---- CUPTI records in the trace ----

TEST(CudaTrace, KernelsAndCopiesAreAttributedToTheirNodes) {
  REQUIRE_CUDA(ep);
  epprof::testing::TempDir dir;
  const std::string trace = dir.file("trace.json");
  const epprof_trace_stats stats =
      record_device_trace(ep, std::string(EPPROF_MODELS_DIR) + "/mlp.onnx", trace);
  if (HasFailure()) return;
  EXPECT_GT(stats.device_events, 0u);
  EXPECT_EQ(stats.plugin_errors, 0u);

  const auto events = epprof::testing::read_trace(trace);
  size_t kernels = 0, attributed = 0, copies = 0;
  for (const auto& e : events) {
    if (e.cat == "Metadata") std::printf("[ info ] metadata: %s\n", e.args_json.c_str());
    if (e.cat != "Kernel" && e.cat != "Memcpy") continue;
    (e.cat == "Kernel" ? kernels : copies)++;
    if (e.has_arg("correlation_id") && e.has_arg("op_name")) ++attributed;
    if (e.cat == "Kernel") {
      EXPECT_TRUE(e.has_arg("grid")) << e.name;
      EXPECT_TRUE(e.has_arg("block")) << e.name;
      EXPECT_TRUE(e.has_arg("stream")) << e.name;
    }
  }
  std::printf("[ info ] %zu kernels, %zu copies, %zu attributed to nodes\n", kernels, copies, attributed);
  EXPECT_GT(kernels, 0u);
  EXPECT_GT(copies, 0u);
  EXPECT_GT(attributed, 0u);
}

// ---- Faults, each its own ctest entry with the environment set ----

bool fault_env(const char* name) { return std::getenv(name) != nullptr; }

TEST(CudaFaults, CuptiFailureRefusesTheEpAtLoad) {
  if (!fault_env("EPPROF_CUDA_BREAK_CUPTI")) GTEST_SKIP() << "run by ctest cuda_ep_cupti_failure";
  if (const std::string no_gpu = no_gpu_reason(); !no_gpu.empty())
    GTEST_SKIP() << no_gpu << " (the device check refuses the EP before CUPTI is set up)";
  std::string why;
  ASSERT_FALSE(cuda_ep(&why)) << "the EP loaded with CUPTI broken";
  EXPECT_NE(why.find("CUPTI initialisation failed"), std::string::npos) << why;
  EXPECT_NE(why.find("refused at load"), std::string::npos) << why;
}

TEST(CudaFaults, DeviceOutOfMemoryFallsBackToTheCpuEp) {
  if (!fault_env("EPPROF_CUDA_MAX_ALLOC_BYTES")) GTEST_SKIP() << "run by ctest cuda_ep_device_oom";
  REQUIRE_CUDA(ep);
  Session s(Session::from_bytes(matmul_relu_model(), with({ep, make_cpu_execution_provider()})));
  Session cpu(Session::from_bytes(matmul_relu_model()));
  const auto in = matmul_relu_inputs();
  ::testing::internal::CaptureStderr();
  const Tensor got = s.run(in).at(0);
  const std::string log = ::testing::internal::GetCapturedStderr();
  expect_close(got, cpu.run(in).at(0), 1e-5, 1e-5, "after device OOM");
  EXPECT_NE(log.find("device out of memory running node 'mm' (MatMul)"), std::string::npos) << log;
}

}  // namespace
}  // namespace epprof::rt
