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

struct OpCase {
  OpCase(std::string label_, std::string op_, std::vector<Shape> inputs_, std::map<std::string, float> f = {},
         std::map<std::string, int64_t> i = {}, int opset_ = 17, bool positive_ = false)
      : label(std::move(label_)), op(std::move(op_)), inputs(std::move(inputs_)), float_attrs(std::move(f)),
        int_attrs(std::move(i)), opset(opset_), positive(positive_) {}
  std::string label, op;
  std::vector<Shape> inputs;
  std::map<std::string, float> float_attrs;
  std::map<std::string, int64_t> int_attrs;
  int opset;
  bool positive;
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
  auto* out = m.mutable_graph()->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return bytes(m);
}

class CudaKernels : public ::testing::TestWithParam<OpCase> {};

TEST_P(CudaKernels, MatchTheCpuEp) {
  REQUIRE_CUDA(ep);
  const OpCase& c = GetParam();
  const std::string model = single_node_model(c);
  Session device(Session::from_bytes(model, with({ep, make_cpu_execution_provider()})));
  ASSERT_EQ(device.provider_of(0), ep->name()) << "the EP did not claim " << c.label;
  Session cpu(Session::from_bytes(model));
  std::mt19937 rng(1234);
  std::map<std::string, Tensor> in;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    in["in" + std::to_string(i)] = c.positive && i == 1 ? random_tensor(c.inputs[i], rng, 0.5f, 2.0f)
                                                        : random_tensor(c.inputs[i], rng);
  expect_close(device.run(in).at(0), cpu.run(in).at(0), 1e-4, 1e-5, c.label);
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

INSTANTIATE_TEST_SUITE_P(Ops, CudaKernels, ::testing::ValuesIn(kCases), [](const auto& p) { return p.param.label; });

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

class CudaModels : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaModels, GiveTheCpuEpsOutputs) {
  REQUIRE_CUDA(ep);
  const std::string path = std::string(EPPROF_MODELS_DIR) + "/" + GetParam() + ".onnx";
  Session device(path, with({ep, make_cpu_execution_provider()}));
  Session cpu(path);
  size_t on_device = 0;
  for (size_t i = 0; i < device.nodes().size(); ++i) on_device += device.provider_of(i) == ep->name();
  EXPECT_GT(on_device, 0u) << "no node of " << GetParam() << " ran on the CUDA EP";
  const auto in = random_inputs(cpu, 99);
  const auto got = device.run(in), want = cpu.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-3, 1e-4, GetParam() + " output " + std::to_string(i));
  SessionOptions parallel = with({ep, make_cpu_execution_provider()});
  parallel.executor = ExecutorKind::Parallel;
  parallel.threads = 2;
  Session par(path, parallel);
  const auto got_par = par.run(in);
  for (size_t i = 0; i < got.size(); ++i)
    expect_close(got_par[i], want[i], 1e-3, 1e-4, GetParam() + " parallel output " + std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(Bundled, CudaModels, ::testing::Values("mlp", "cnn", "transformer"));

// ---- CUPTI records in the trace ----

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

TEST(CudaTrace, KernelsAndCopiesAreAttributedToTheirNodes) {
  REQUIRE_CUDA(ep);
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
    Session s(std::string(EPPROF_MODELS_DIR) + "/mlp.onnx", with({ep, make_cpu_execution_provider()}));
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
