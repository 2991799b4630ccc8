// The CUDA EP on a GPU: kernels match the CPU EP, the bundled models give
// the same outputs, and CUPTI's records reach the trace attributed to their
// nodes. Without a GPU every test skips with cudaGetDeviceCount's error,
// except RefusedAtLoadWithAClearReason, which checks the refusal itself.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>

#include "epprof/epprof.h"
#include "epprof/rt/plugin_ep.h"
#include "epprof/rt/profiling.h"
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

// ---- CUPTI records in the trace, strictly ----
//
// Through the runtime's own profiling observer, as `epprof run` profiles:
// every kernel and copy the EP's nodes cause is in the trace, attributed to
// its node (or to the replay that issued it), inside that node's slice
// widened by the clock error bound the EP states; nothing is dropped; each
// execution of a node launches as many kernels as every other execution of
// it; library (cuBLAS) kernels sit under MatMul and Gemm nodes only.

const std::set<std::string>& own_kernels() {  // plugins/cuda/kernels.cpp
  static const std::set<std::string> k = {"binary_add",    "binary_sub", "binary_mul", "binary_div",    "unary_relu",
                                          "unary_sigmoid", "unary_tanh", "softmax",    "broadcast_copy"};
  return k;
}

std::string node_of(const epprof::testing::TraceEvent& e) {
  for (const std::string suffix : {"_kernel_time", "_replay"})
    if (e.name.size() > suffix.size() && e.name.compare(e.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return e.name.substr(0, e.name.size() - suffix.size());
  return e.name;
}

// `executions`: how many times each node of the model ran in the scope;
// `replays`: how many replays each execution had.
void expect_strict_trace(const std::string& path, const Session& model, int executions, int replays) {
  SCOPED_TRACE(path);
  const auto trace = epprof::testing::read_trace(path);
  const auto meta = epprof::testing::plugin_metadata(trace, "CUDAExecutionProvider");
  auto field = [&](const char* k) { return meta.count(k) ? meta.at(k) : std::string("<missing>"); };
  std::printf("[ info ] %s: clock error bound %s ns (probes %s: %s), %s device records, %s API records, worst start "
              "before its call %s ns\n",
              path.c_str(), field("clock_error_bound_ns").c_str(), field("clock_probes").c_str(),
              field("clock_probe_bounds_ns").c_str(),
              field("device_records").c_str(), field("api_records").c_str(), field("worst_start_before_call_ns").c_str());
  ASSERT_EQ(field("device_tracing"), "on");
  EXPECT_EQ(field("cupti_dropped_records"), "0");
  EXPECT_EQ(field("unattributed_device_records"), "0");
  EXPECT_EQ(field("untimed_device_records"), "0");
  EXPECT_EQ(field("device_records_before_their_call"), "0") << "a kernel started before its launch call";
  EXPECT_EQ(field("clock_probes"), "6 of 6");
  const std::string bound_text = field("clock_error_bound_ns");
  ASSERT_FALSE(bound_text.empty());
  ASSERT_TRUE(std::isdigit(static_cast<unsigned char>(bound_text[0]))) << bound_text;
  const double bound_us = std::stod(bound_text) / 1000.0;
  EXPECT_LT(bound_us, 1000.0) << "a bound of a millisecond or more says nothing";

  std::map<std::string, const epprof::testing::TraceEvent*> hosts;  // by correlation id
  std::map<std::string, int> node_executions, node_replays;
  for (const auto& e : trace) {
    if (e.cat != "Node" || e.ph != "X") continue;
    hosts[e.arg("correlation_id")] = &e;
    (e.has_arg("replay_pass") ? node_replays : node_executions)[node_of(e)]++;
  }
  std::map<std::string, std::string> provider;
  for (const auto& n : model.nodes()) provider[n.name] = model.provider_of(size_t(&n - &model.nodes()[0]));
  for (const auto& [name, ep] : provider) {
    EXPECT_EQ(node_executions[name], executions) << name;
    if (ep == "CUDAExecutionProvider") {
      EXPECT_EQ(node_replays[name], executions * replays) << name;
    }
  }

  std::map<std::string, int> kernels_of;  // host event correlation id → kernels
  size_t kernels = 0, copies = 0, library = 0;
  for (const auto& e : trace) {
    if (e.cat != "Kernel" && e.cat != "Memcpy") continue;
    (e.cat == "Kernel" ? kernels : copies)++;
    SCOPED_TRACE(e.cat + " " + e.name + " " + e.args_json);
    ASSERT_TRUE(e.has_arg("correlation_id")) << "unattributed";
    const auto host = hosts.find(e.arg("correlation_id"));
    ASSERT_NE(host, hosts.end()) << "attributed to no node event";
    const auto& h = *host->second;
    EXPECT_EQ(e.arg("parent_name"), h.name);
    EXPECT_EQ(provider[node_of(h)], "CUDAExecutionProvider");
    EXPECT_GE(e.ts, h.ts - bound_us - 1e-3) << "starts before its node " << h.name;
    EXPECT_LE(e.ts + e.dur, h.ts + h.dur + bound_us + 1e-3) << "ends after its node " << h.name;
    if (e.cat != "Kernel") continue;
    ++kernels_of[e.arg("correlation_id")];
    if (own_kernels().count(e.name)) continue;
    ++library;
    const std::string op = e.arg("op_name");
    EXPECT_TRUE(op == "MatMul" || op == "Gemm") << "a library kernel under " << op;
  }
  // Each execution (and replay) of a node launches the same kernels.
  std::map<std::string, std::set<int>> launches;  // node → kernel counts seen
  for (const auto& [id, h] : hosts)
    if (provider[node_of(*h)] == "CUDAExecutionProvider") launches[node_of(*h)].insert(kernels_of[id]);
  size_t expected = 0;
  for (const auto& [name, counts] : launches) {
    EXPECT_EQ(counts.size(), 1u) << name << " launched different numbers of kernels in its executions";
    EXPECT_GT(*counts.begin(), 0) << name << " ran on the CUDA EP with no kernel";
    expected += size_t(*counts.begin()) * size_t(executions * (1 + replays));
  }
  EXPECT_EQ(kernels, expected);
  EXPECT_GT(copies, 0u);
  EXPECT_GT(library, 0u) << "no cuBLAS kernel: the model's MatMul/Gemm did not run on the GPU";
  std::printf("[ info ] %zu kernels (%zu from cuBLAS), %zu copies, all attributed\n", kernels, library, copies);
}

struct StrictCase {
  std::string label;
  bool parallel = false;    // the parallel executor, 2 inter-op threads
  bool run_scopes = false;  // a per-run trace beside the session trace
  bool replay = false;      // counters in several passes: kernel replay
};

class CudaTrace : public ::testing::TestWithParam<StrictCase> {};

TEST_P(CudaTrace, EveryDeviceRecordIsAttributedInsideItsNode) {
  REQUIRE_CUDA(ep);
  const StrictCase& c = GetParam();
  epprof::testing::TempDir dir;
  const std::string session_trace = dir.file("session.json");
  constexpr int kRuns = 3;
  epprof_plugin_t plugin{};
  EPPROF_ASSERT_OK(epprof_plugin_register(ep->make_profiler_plugin(), &plugin));
  epprof_counter_config_t counters{};
  uint32_t passes = 1;
  if (c.replay) {
    EPPROF_ASSERT_OK(epprof_counter_register_fake_device());
    const char* names[] = {"cache-references", "cache-misses", "branch-instructions", "branch-misses",
                           "l1d-loads",        "l1d-load-misses", "cycles"};
    epprof_status_release(epprof_counter_config_create("fake-pmu", names, 7, &counters));
    EPPROF_ASSERT_OK(epprof_counter_config_pass_count(counters, &passes));
    ASSERT_GT(passes, 1u);
  }
  SessionOptions so = with({ep, make_cpu_execution_provider()});
  if (c.parallel) {
    so.executor = ExecutorKind::Parallel;
    so.inter_op_threads = 2;
  }
  std::vector<std::string> run_traces;
  {
    ProfilingOptions po;
    po.trace_path = session_trace;
    po.plugins = {plugin};
    po.sessions = c.replay;  // the dispatch counting service, for the replays
    ProfilingObserver prof(po);
    so.observer = &prof;
    struct Tool {
      epprof_counter_config_t config;
      static epprof_status* dispatch(void* u, epprof_session_t, const epprof_dispatch_info*,
                                     epprof_counter_config_t* out) {
        *out = static_cast<Tool*>(u)->config;
        return nullptr;
      }
    } tool{counters};
    epprof_session_t session{};
    if (c.replay) {
      epprof_session_config cfg{};
      cfg.size = sizeof cfg;
      cfg.record_size = sizeof(epprof_record);
      cfg.replay_mode = EPPROF_REPLAY_KERNEL;
      cfg.callback = [](void*, epprof_session_t, const epprof_record*, size_t, uint64_t) -> epprof_status* {
        return nullptr;
      };
      cfg.dispatch_callback = &Tool::dispatch;
      cfg.dispatch_user_data = &tool;
      EPPROF_ASSERT_OK(epprof_session_create(&cfg, &session));
      EPPROF_ASSERT_OK(epprof_session_start(session));
    }
    Session s(std::string(EPPROF_MODELS_DIR) + "/mlp.onnx", so);
    const auto in = random_inputs(s, 5);
    for (int r = 0; r < kRuns; ++r) {
      if (!c.run_scopes) {
        s.run(in);
        continue;
      }
      ProfilingOptions rpo;
      rpo.trace_path = dir.file("run" + std::to_string(r) + ".json");
      rpo.scope_name = "run";
      rpo.plugins = {plugin};
      ProfilingObserver run_prof(rpo);
      RunOptions ro;
      ro.observer = &run_prof;
      s.run(in, ro);
      const epprof_trace_stats rs = run_prof.finish();
      EXPECT_EQ(rs.plugin_errors, 0u) << rpo.trace_path;
      run_traces.push_back(rpo.trace_path);
    }
    if (c.replay) EPPROF_ASSERT_OK(epprof_session_destroy(session));
    const epprof_trace_stats stats = prof.finish();
    EXPECT_EQ(stats.plugin_errors, 0u);
    const int replays = c.replay ? int(passes) - 1 : 0;
    expect_strict_trace(session_trace, s, kRuns, replays);
    for (const auto& t : run_traces) expect_strict_trace(t, s, 1, replays);
  }
  if (c.replay) epprof_status_release(epprof_counter_config_destroy(counters));
  EPPROF_EXPECT_OK(epprof_plugin_unload(plugin));
}

INSTANTIATE_TEST_SUITE_P(Scopes, CudaTrace,
                         ::testing::Values(StrictCase{"sequential"}, StrictCase{"parallel", true},
                                           StrictCase{"session_and_run_scopes", false, true},
                                           StrictCase{"parallel_session_and_run_scopes", true, true},
                                           StrictCase{"kernel_replay", false, false, true}),
                         [](const auto& p) { return p.param.label; });

// The CUDA API records, on request (EPPROF_CUDA_API_RECORDS=1, its own
// ctest entry): each on its thread's track, the launches attributed.
TEST(CudaApiRecords, AreWrittenWhenAskedAndJoinedToTheirNodes) {
  if (!std::getenv("EPPROF_CUDA_API_RECORDS")) GTEST_SKIP() << "run by ctest cuda_ep_api_records";
  REQUIRE_CUDA(ep);
  epprof::testing::TempDir dir;
  const std::string trace = dir.file("trace.json");
  record_device_trace(ep, std::string(EPPROF_MODELS_DIR) + "/mlp.onnx", trace);
  size_t api = 0, attributed = 0;
  for (const auto& e : epprof::testing::read_trace(trace)) {
    if (e.cat != "Api") continue;
    ++api;
    attributed += e.has_arg("correlation_id");
  }
  std::printf("[ info ] %zu API records, %zu attributed\n", api, attributed);
  EXPECT_GT(api, 0u);
  EXPECT_GT(attributed, 0u);
}

// ---- Faults, each its own ctest entry with the environment set ----

bool fault_env(const char* name) { return std::getenv(name) != nullptr; }

// CUPTI unavailable (missing, or held by another CUPTI client): the EP
// still loads and runs the model; its traces say why they have no device
// work.
TEST(CudaFaults, CuptiFailureLeavesTheEpRunningUntraced) {
  if (!fault_env("EPPROF_CUDA_BREAK_CUPTI")) GTEST_SKIP() << "run by ctest cuda_ep_cupti_failure";
  REQUIRE_CUDA(ep);
  expect_model_matches_cpu(ep, std::string(EPPROF_MODELS_DIR) + "/mlp.onnx", "mlp");
  epprof::testing::TempDir dir;
  const std::string trace = dir.file("trace.json");
  const epprof_trace_stats stats = record_device_trace(ep, std::string(EPPROF_MODELS_DIR) + "/mlp.onnx", trace);
  EXPECT_EQ(stats.plugin_errors, 0u);
  EXPECT_EQ(stats.device_events, 0u);
  const auto meta = epprof::testing::plugin_metadata(epprof::testing::read_trace(trace), "CUDAExecutionProvider");
  ASSERT_TRUE(meta.count("device_tracing"));
  EXPECT_EQ(meta.at("device_tracing").rfind("off: CUPTI initialisation failed: ", 0), 0u) << meta.at("device_tracing");
  EXPECT_NE(meta.at("device_tracing").find("EPPROF_CUDA_BREAK_CUPTI"), std::string::npos) << meta.at("device_tracing");
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
