// What the tests of the device EP plugins (OpenCL, CUDA) and of the EP
// plugin ABI share: random tensors, comparing outputs with the CPU EP,
// single-node models of every op the device EPs claim, the checks that a
// device EP matches the CPU EP on them and on the bundled models, and
// NODE events for EP profilers to tag device work with.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "epprof/epprof.h"
#include "epprof/rt/observer.h"
#include "epprof/rt/plugin_ep.h"
#include "epprof/rt/session.h"
#include "support/test_util.h"
#include "test_models.h"

namespace epprof::rt::testing {

inline Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -2.0f, float hi = 2.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_size(shape)));
  for (auto& x : v) x = d(rng);
  return Tensor::from_vector<float>(shape, v);
}

inline void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto g = got.to_vector<float>(), w = want.to_vector<float>();
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i])) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", the CPU EP gives " << w[i];
  EXPECT_EQ(bad, 0u) << what;
}

inline SessionOptions with(std::vector<std::shared_ptr<ExecutionProvider>> eps) {
  SessionOptions o;
  o.providers = std::move(eps);
  return o;
}

// ---- Kernels against the CPU EP ----

struct OpCase {
  OpCase(std::string label_, std::string op_, std::vector<Shape> inputs_, std::map<std::string, float> f = {},
         std::map<std::string, int64_t> i = {}, int opset_ = 17, bool positive_ = false)
      : label(std::move(label_)), op(std::move(op_)), inputs(std::move(inputs_)), float_attrs(std::move(f)),
        int_attrs(std::move(i)), opset(opset_) {
    if (positive_) positive_inputs.insert(1);
  }
  // More attributes and input ranges, chained onto the constructor.
  OpCase& ints(const std::string& name, std::vector<int64_t> v) {
    ints_attrs[name] = std::move(v);
    return *this;
  }
  OpCase& str(const std::string& name, std::string v) {
    string_attrs[name] = std::move(v);
    return *this;
  }
  OpCase& positive(size_t input) {
    positive_inputs.insert(input);
    return *this;
  }
  // Input `input` is a constant (an initializer) with these values: float,
  // or int64 with `int64`.
  OpCase& constant(size_t input, std::vector<double> values, bool int64 = false) {
    constants[input] = {std::move(values), int64};
    return *this;
  }
  std::string label, op;
  std::vector<Shape> inputs;  // Shape{}: a scalar
  std::map<std::string, float> float_attrs;
  std::map<std::string, int64_t> int_attrs;
  std::map<std::string, std::vector<int64_t>> ints_attrs;
  std::map<std::string, std::string> string_attrs;
  int opset;
  std::set<size_t> positive_inputs;  // drawn from [0.5, 2] (divisors, variances)
  std::map<size_t, std::pair<std::vector<double>, bool>> constants;  // values, int64
};

inline std::string single_node_model(const OpCase& c) {
  onnx::ModelProto m = make_model(c.opset);
  std::vector<std::string> names;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    names.push_back("in" + std::to_string(i));
    auto k = c.constants.find(i);
    if (k == c.constants.end()) {
      add_io(m, true, names.back(), c.inputs[i]);
      continue;
    }
    const std::vector<double>& v = k->second.first;
    if (k->second.second)
      add_int64_init(m, names.back(), c.inputs[i], std::vector<int64_t>(v.begin(), v.end()));
    else
      add_float_init(m, names.back(), c.inputs[i], std::vector<float>(v.begin(), v.end()));
  }
  auto* n = add_node(m, c.op, "node", names, {"y"});
  for (const auto& [k, v] : c.float_attrs) set_float(n, k, v);
  for (const auto& [k, v] : c.int_attrs) set_int(n, k, v);
  for (const auto& [k, v] : c.ints_attrs) set_ints(n, k, v);
  for (const auto& [k, v] : c.string_attrs) set_string(n, k, v);
  auto* out = m.mutable_graph()->add_output();  // shape left to inference
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return bytes(m);
}

// Single-node cases of every op the device EPs claim, broadcasting and
// attribute variants included.
inline const std::vector<OpCase>& device_op_cases() {
  static const std::vector<OpCase> cases = {
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
  return cases;
}

// A CNN's ops and more elementwise ones, which only some device EPs claim
// (OpenCL): windows of every kind of geometry, 1-D and 2-D; Resize.
inline const std::vector<OpCase>& cnn_op_cases() {
  using Ints = std::vector<int64_t>;
  static const std::vector<OpCase> cases = {
    OpCase("conv_3x3_pad_bias", "Conv", {{1, 3, 8, 8}, {4, 3, 3, 3}, {4}}).ints("pads", Ints{1, 1, 1, 1}),
    OpCase("conv_strides_dilations_uneven_pads", "Conv", {{2, 2, 9, 7}, {3, 2, 3, 2}})
        .ints("strides", Ints{2, 1}).ints("dilations", Ints{2, 1}).ints("pads", Ints{1, 0, 2, 1}),
    OpCase("conv_depthwise", "Conv", {{1, 4, 6, 6}, {4, 1, 3, 3}, {4}}, {}, {{"group", 4}})
        .ints("pads", Ints{1, 1, 1, 1}).ints("strides", Ints{2, 2}),
    OpCase("conv_grouped_m_2c", "Conv", {{1, 4, 5, 5}, {8, 2, 3, 3}}, {}, {{"group", 2}}),
    OpCase("conv_1d", "Conv", {{1, 2, 10}, {3, 2, 3}}).ints("strides", Ints{2}),
    OpCase("conv_pointwise", "Conv", {{2, 6, 4, 5}, {3, 6, 1, 1}, {3}}),
    OpCase("conv_same_upper", "Conv", {{1, 1, 7, 7}, {2, 1, 4, 4}}).str("auto_pad", "SAME_UPPER")
        .ints("strides", Ints{2, 2}),
    OpCase("conv_same_lower", "Conv", {{1, 1, 6, 6}, {1, 1, 2, 2}}).str("auto_pad", "SAME_LOWER"),
    OpCase("maxpool_3x3_s2_pad", "MaxPool", {{1, 2, 9, 9}}).ints("kernel_shape", Ints{3, 3})
        .ints("strides", Ints{2, 2}).ints("pads", Ints{1, 1, 1, 1}),
    OpCase("maxpool_ceil", "MaxPool", {{1, 1, 8, 8}}, {}, {{"ceil_mode", 1}}).ints("kernel_shape", Ints{3, 3})
        .ints("strides", Ints{2, 2}),
    OpCase("maxpool_dilated", "MaxPool", {{2, 1, 7, 7}}).ints("kernel_shape", Ints{2, 2}).ints("dilations", Ints{2, 2}),
    OpCase("maxpool_1d_valid", "MaxPool", {{1, 3, 11}}).ints("kernel_shape", Ints{4}).str("auto_pad", "VALID"),
    OpCase("avgpool_exclude_pad", "AveragePool", {{1, 2, 7, 7}}).ints("kernel_shape", Ints{3, 3})
        .ints("pads", Ints{1, 1, 1, 1}),
    OpCase("avgpool_include_pad_ceil", "AveragePool", {{1, 2, 7, 7}}, {}, {{"count_include_pad", 1}, {"ceil_mode", 1}})
        .ints("kernel_shape", Ints{3, 3}).ints("strides", Ints{2, 2}).ints("pads", Ints{1, 1, 0, 0}),
    OpCase("avgpool_1d_same", "AveragePool", {{2, 2, 9}}).ints("kernel_shape", Ints{3})
        .str("auto_pad", "SAME_UPPER").ints("strides", Ints{2}),
    OpCase("global_avgpool", "GlobalAveragePool", {{2, 3, 5, 4}}),
    OpCase("global_avgpool_1d", "GlobalAveragePool", {{1, 4, 9}}),
    OpCase("batchnorm", "BatchNormalization", {{2, 3, 4, 4}, {3}, {3}, {3}, {3}}, {{"epsilon", 1e-3f}}).positive(4),
    OpCase("batchnorm_opset9_rank2", "BatchNormalization", {{5, 3}, {3}, {3}, {3}, {3}}, {}, {}, 9).positive(4),
    OpCase("clip_attrs", "Clip", {{3, 4}}, {{"min", -0.5f}, {"max", 0.7f}}, {}, 6),
    OpCase("clip_inputs", "Clip", {{2, 3, 4}, {}, {}}),
    OpCase("resize_channels_fall_back_to_the_cpu", "Resize", {{1, 2, 3, 3}, {0}, {4}})
        .constant(1, {}).constant(2, {1, 2, 1, 1}),
    // Resize: X, roi (empty), scales or sizes as constants.
    OpCase("exp", "Exp", {{3, 5}}),
    OpCase("log", "Log", {{3, 5}}).positive(0),
    OpCase("sqrt", "Sqrt", {{7}}).positive(0),
    OpCase("neg", "Neg", {{2, 3}}),
    OpCase("abs", "Abs", {{2, 3}}),
    OpCase("erf", "Erf", {{4, 4}}),
    OpCase("reciprocal", "Reciprocal", {{9}}).positive(0),
    OpCase("softplus", "Softplus", {{4, 4}}),
    OpCase("leaky_relu_default", "LeakyRelu", {{4, 4}}),
    OpCase("leaky_relu_alpha", "LeakyRelu", {{4, 4}}, {{"alpha", 0.3f}}),
    OpCase("hard_sigmoid", "HardSigmoid", {{4, 4}}, {{"alpha", 0.4f}}),
    OpCase("elu", "Elu", {{4, 4}}, {{"alpha", 0.7f}}),
    OpCase("pow_bcast", "Pow", {{2, 3, 4}, {4}}).positive(0),
    OpCase("resize_nearest_up2", "Resize", {{1, 2, 3, 4}, {0}, {4}}).constant(1, {}).constant(2, {1, 1, 2, 2}),
    OpCase("resize_nearest_asymmetric_floor", "Resize", {{1, 1, 5, 7}, {0}, {4}})
        .constant(1, {}).constant(2, {1, 1, 1.5, 0.6})
        .str("coordinate_transformation_mode", "asymmetric").str("nearest_mode", "floor"),
    OpCase("resize_linear_half_pixel", "Resize", {{2, 3, 4, 5}, {0}, {4}})
        .constant(1, {}).constant(2, {1, 1, 1.75, 0.5}).str("mode", "linear"),
    OpCase("resize_linear_align_corners_sizes", "Resize", {{1, 2, 4, 4}, {0}, {0}, {4}})
        .constant(1, {}).constant(2, {}).constant(3, {1, 2, 7, 3}, true)
        .str("mode", "linear").str("coordinate_transformation_mode", "align_corners"),
    OpCase("resize_linear_pytorch_rank3", "Resize", {{3, 6, 2}, {0}, {3}})
        .constant(1, {}).constant(2, {1, 0.5, 3}).str("mode", "linear")
        .str("coordinate_transformation_mode", "pytorch_half_pixel"),
  };
  return cases;
}

inline std::map<std::string, Tensor> random_inputs(const Session& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::map<std::string, Tensor> in;
  for (const auto& io : s.inputs()) {
    Shape shape = io.shape;
    for (auto& d : shape) d = d < 0 ? 1 : d;
    in[io.name] = random_tensor(shape, rng, -1.0f, 1.0f);
  }
  return in;
}

// `ep` (first, the CPU EP after it) claims the single-node case `c` and its
// output matches the CPU EP's within `rtol` (atol 1e-5).
inline void expect_kernel_matches_cpu(const std::shared_ptr<PluginExecutionProvider>& ep, const OpCase& c,
                                      double rtol) {
  const std::string model = single_node_model(c);
  Session device(Session::from_bytes(model, with({ep, make_cpu_execution_provider()})));
  ASSERT_EQ(device.provider_of(0), ep->name()) << "the EP did not claim " << c.label;
  Session cpu(Session::from_bytes(model));
  std::mt19937 rng(1234);
  std::map<std::string, Tensor> in;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (!c.constants.count(i))
      in["in" + std::to_string(i)] = c.positive_inputs.count(i) ? random_tensor(c.inputs[i], rng, 0.5f, 2.0f)
                                                              : random_tensor(c.inputs[i], rng);
  expect_close(device.run(in).at(0), cpu.run(in).at(0), rtol, 1e-5, c.label);
}

// The model at `path` (called `name` in messages) on [ep, CPU EP],
// sequential and parallel on 2 threads (nodes on two threads share the
// device), gives the CPU EP's outputs; some of its nodes run on `ep`.
inline void expect_model_matches_cpu(const std::shared_ptr<PluginExecutionProvider>& ep, const std::string& path,
                                     const std::string& name) {
  Session device(path, with({ep, make_cpu_execution_provider()}));
  Session cpu(path);
  size_t on_device = 0;
  for (size_t i = 0; i < device.nodes().size(); ++i) on_device += device.provider_of(i) == ep->name();
  EXPECT_GT(on_device, 0u) << "no node of " << name << " ran on " << ep->name();
  const auto in = random_inputs(cpu, 99);
  const auto got = device.run(in), want = cpu.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-3, 1e-4, name + " output " + std::to_string(i));
  SessionOptions parallel = with({ep, make_cpu_execution_provider()});
  parallel.executor = ExecutorKind::Parallel;
  parallel.inter_op_threads = 2;
  Session par(path, parallel);
  const auto got_par = par.run(in);
  for (size_t i = 0; i < got.size(); ++i)
    expect_close(got_par[i], want[i], 1e-3, 1e-4, name + " parallel output " + std::to_string(i));
}

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
    // The node declared, as the runtime's observer declares it.
    const epprof_arg node = epprof::testing::set_arg(epprof::testing::node_set(
        info.node.name.c_str(), info.node.op_type.c_str(), uint32_t(info.node.index), info.provider.c_str()));
    epprof_status_release(epprof_event_end(p_, info.correlation_id, &node, 1));
  }

 private:
  epprof_profiler_t p_;
};

// Profiles what `run` runs (it is given RunOptions that send NODE events,
// NodeEvents, to the profiler) with `ep`'s EP profiler, writes the trace to
// `trace_path` and returns the profiler's statistics.
inline epprof_trace_stats record_device_trace(const std::shared_ptr<PluginExecutionProvider>& ep,
                                              const std::string& trace_path,
                                              const std::function<void(const RunOptions&)>& run) {
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  epprof_plugin_t plugin{};
  EPPROF_EXPECT_OK(epprof_plugin_register(ep->make_profiler_plugin(), &plugin));
  epprof_profiler_config config = epprof::testing::config_for(trace_path);
  epprof_profiler_t prof{};
  EPPROF_EXPECT_OK(epprof_profiler_create(&config, &prof));
  EPPROF_EXPECT_OK(epprof_profiler_add_plugin(prof, plugin));
  EPPROF_EXPECT_OK(epprof_profiler_start(prof));
  {
    NodeEvents events(prof);
    RunOptions ro;
    ro.observer = &events;
    run(ro);
  }
  EPPROF_EXPECT_OK(epprof_profiler_stop(prof, &stats));
  EPPROF_EXPECT_OK(epprof_profiler_destroy(prof));
  EPPROF_EXPECT_OK(epprof_plugin_unload(plugin));
  return stats;
}

// Profiles 3 runs of the model at `model_path` on [ep, CPU EP] (see above).
inline epprof_trace_stats record_device_trace(const std::shared_ptr<PluginExecutionProvider>& ep,
                                              const std::string& model_path, const std::string& trace_path) {
  return record_device_trace(ep, trace_path, [&](const RunOptions& ro) {
    Session s(model_path, with({ep, make_cpu_execution_provider()}));
    const auto in = random_inputs(s, 5);
    for (int i = 0; i < 3; ++i) s.run(in, ro);
  });
}

// A MatMul (device program "matmul") feeding a Relu ("elementwise").
inline std::string matmul_relu_model() {
  onnx::ModelProto m = make_model();
  add_io(m, true, "a", {5, 7});
  add_io(m, true, "b", {7, 3});
  add_node(m, "MatMul", "mm", {"a", "b"}, {"p"});
  add_node(m, "Relu", "relu", {"p"}, {"y"});
  add_io(m, false, "y", {5, 3});
  return bytes(m);
}

inline std::map<std::string, Tensor> matmul_relu_inputs() {
  std::mt19937 rng(3);
  return {{"a", random_tensor({5, 7}, rng)}, {"b", random_tensor({7, 3}, rng)}};
}

}  // namespace epprof::rt::testing
