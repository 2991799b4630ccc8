// SessionOptions::fuse_nodes: a Conv's BatchNormalization folded into its
// weights, Conv [+ Add] [+ activation] run as one com.microsoft FusedConv,
// with the outputs of the graph as written; what it must leave alone; and
// FusedConv as a model may hold it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "epprof/rt/execution_provider.h"
#include "epprof/rt/observer.h"
#include "epprof/rt/session.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;

namespace {

std::vector<float> random_values(size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& e : v) e = u(rng);
  return v;
}

// Rows of 28 columns: on AVX-512 the implicit GEMM runs these convs (its
// second segment masked), and applies Z, Relu and Clip as it stores; 12
// output channels: a full tile of 8 and a partial one.
constexpr int64_t kC = 3, kM = 12, kH = 9, kW = 28;

// Conv(x) 3x3 pad 1 with a bias, its BatchNormalization, then what `tail`
// adds; the Conv's output is "c", the BatchNormalization's "n".
onnx::ModelProto conv_bn_model(int opset = 17, int64_t width = kW) {
  onnx::ModelProto m = make_model(opset);
  add_io(m, true, "x", {1, kC, kH, width});
  add_float_init(m, "w", {kM, kC, 3, 3}, random_values(size_t(kM * kC * 9), 1));
  add_float_init(m, "b", {kM}, random_values(kM, 2));
  add_float_init(m, "scale", {kM}, random_values(kM, 3, 0.5f, 2.0f));
  add_float_init(m, "shift", {kM}, random_values(kM, 4));
  add_float_init(m, "mean", {kM}, random_values(kM, 5));
  add_float_init(m, "var", {kM}, random_values(kM, 6, 0.1f, 3.0f));
  auto* conv = add_node(m, "Conv", "conv", {"x", "w", "b"}, {"c"});
  set_ints(conv, "kernel_shape", {3, 3});
  set_ints(conv, "pads", {1, 1, 1, 1});
  auto* bn = add_node(m, "BatchNormalization", "bn", {"c", "scale", "shift", "mean", "var"}, {"n"});
  set_float(bn, "epsilon", 1e-3f);
  return m;
}

// Random inputs; every nan_every-th element of X NaN (0: none).
std::map<std::string, Tensor> inputs_of(const Session& s, size_t nan_every = 0) {
  std::map<std::string, Tensor> in;
  unsigned seed = 10;
  for (const IoInfo& i : s.inputs()) {
    std::vector<float> v = random_values(size_t(shape_size(i.shape)), seed++);
    if (i.name == "x" && nan_every > 0)
      for (size_t k = nan_every / 2; k < v.size(); k += nan_every) v[k] = std::nanf("");
    in.emplace(i.name, Tensor::from_vector<float>(i.shape, v));
  }
  return in;
}

SessionOptions fusing(bool fuse) {
  SessionOptions o;
  o.fuse_nodes = fuse;
  return o;
}

std::vector<std::string> op_types(const Session& s) {
  std::vector<std::string> ops;
  for (const Node& n : s.nodes()) ops.push_back(n.op_type);
  return ops;
}

// The fused session's outputs against the graph run as written. Folding
// rounds differently: the error is relative to the terms' scale (inputs
// and weights in [-1, 1], sums of 27 products), not to a result that
// cancels to near 0.
// With nan_every, X has NaNs (inputs_of): the fused outputs must be NaN
// exactly where the graph's are. Returns how many of those there were.
size_t expect_same_outputs(const std::string& model, float tolerance = 1e-5f, size_t nan_every = 0) {
  Session fused = Session::from_bytes(model, fusing(true)), plain = Session::from_bytes(model, fusing(false));
  const auto in = inputs_of(plain, nan_every);
  const auto a = fused.run(in), b = plain.run(in);
  size_t nans = 0;
  EXPECT_EQ(a.size(), b.size());
  for (size_t o = 0; o < a.size() && o < b.size(); ++o) {
    EXPECT_EQ(a[o].shape(), b[o].shape());
    if (a[o].shape() != b[o].shape()) continue;
    const auto av = a[o].to_vector<float>(), bv = b[o].to_vector<float>();
    for (size_t i = 0; i < av.size(); ++i) {  // stops at the first element that differs
      nans += std::isnan(bv[i]);
      const bool same = std::isnan(bv[i]) ? std::isnan(av[i])
                                          : std::fabs(av[i] - bv[i]) <= tolerance * (std::fabs(bv[i]) + 1.0f);
      if (!same) {
        ADD_FAILURE() << "output " << o << " element " << i << ": " << av[i] << ", the graph's " << bv[i];
        return nans;
      }
    }
  }
  return nans;
}

TEST(Fusion, ConvBatchNormReluBecomeOneFusedConv) {
  onnx::ModelProto m = conv_bn_model();
  add_node(m, "Relu", "relu", {"n"}, {"y"});
  add_io(m, false, "y", {1, kM, kH, kW});
  Session s = Session::from_bytes(bytes(m));
  ASSERT_EQ(op_types(s), std::vector<std::string>{"FusedConv"});
  EXPECT_EQ(s.nodes()[0].name, "conv");  // the trace names the fused node as the Conv
  EXPECT_EQ(s.nodes()[0].domain, "com.microsoft");
  EXPECT_EQ(s.nodes()[0].attr_string("activation", ""), "Relu");
  const Session::Fusions f = s.fusions();
  EXPECT_EQ(f.batch_norms, 1);
  EXPECT_EQ(f.fused_convs, 1);
  EXPECT_EQ(f.absorbed, 1);
  expect_same_outputs(bytes(m));
  // Without fusion, the graph as written.
  Session plain = Session::from_bytes(bytes(m), fusing(false));
  EXPECT_EQ(op_types(plain), (std::vector<std::string>{"Conv", "BatchNormalization", "Relu"}));
  EXPECT_EQ(plain.fusions().batch_norms, 0);
}

// paddle2onnx writes a model's weights as Constant nodes: they become
// initializers, as ONNX Runtime makes them, and fold the same way. A
// Constant that is a graph output stays a node.
TEST(Fusion, WeightsInConstantNodesFoldAsInitializersDo) {
  onnx::ModelProto m = conv_bn_model();
  add_node(m, "Relu", "relu", {"n"}, {"y"});
  add_io(m, false, "y", {1, kM, kH, kW});
  auto* g = m.mutable_graph();
  for (const onnx::TensorProto& t : g->initializer()) {
    auto* c = add_node(m, "Constant", t.name() + "_const", {}, {t.name()});
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = t;
  }
  g->clear_initializer();
  auto* k = add_node(m, "Constant", "k_const", {}, {"k"});
  auto* a = k->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_float_data(2.5f);
  add_io(m, false, "k", {});
  Session s = Session::from_bytes(bytes(m));
  std::vector<std::string> ops = op_types(s);
  std::sort(ops.begin(), ops.end());
  EXPECT_EQ(ops, (std::vector<std::string>{"Constant", "FusedConv"}));
  EXPECT_EQ(s.fusions().batch_norms, 1);
  EXPECT_EQ(s.fusions().fused_convs, 1);
  expect_same_outputs(bytes(m));
  Session plain = Session::from_bytes(bytes(m), fusing(false));
  const std::vector<std::string> written = op_types(plain);
  EXPECT_EQ(std::count(written.begin(), written.end(), "Constant"), 7);  // six parameters and k
}

// A FusedConv's output shape follows from its inputs', as a Conv's: the
// nodes of a fused model keep their shape epoch (profiling then formats
// their shapes once per epoch, not once per run).
class NodeEpochs final : public RunObserver {
 public:
  void node_end(const NodeInfo& info, const NodeIo&) override { epochs[info.node.name] = info.shape_epoch; }
  std::map<std::string, uint64_t> epochs;
};

TEST(Fusion, FusedNodesKeepTheirShapeEpoch) {
  onnx::ModelProto m = conv_bn_model();
  add_node(m, "Relu", "relu", {"n"}, {"r"});
  add_node(m, "Sigmoid", "after", {"r"}, {"y"});
  add_io(m, false, "y", {1, kM, kH, kW});
  NodeEpochs rec;
  SessionOptions o;
  o.observer = &rec;
  Session s = Session::from_bytes(bytes(m), o);
  ASSERT_EQ(op_types(s), (std::vector<std::string>{"FusedConv", "Sigmoid"}));
  s.run(inputs_of(s));
  EXPECT_NE(rec.epochs.at("conv"), 0u);
  EXPECT_NE(rec.epochs.at("after"), 0u);
}

TEST(Fusion, ResidualAddAndReluJoinTheConv) {
  onnx::ModelProto m = conv_bn_model();
  add_io(m, true, "skip", {1, kM, kH, kW});
  add_node(m, "Add", "add", {"skip", "n"}, {"s"});  // Y second: Z is the other input either way
  add_node(m, "Relu", "relu", {"s"}, {"y"});
  add_io(m, false, "y", {1, kM, kH, kW});
  Session s = Session::from_bytes(bytes(m));
  ASSERT_EQ(op_types(s), std::vector<std::string>{"FusedConv"});
  EXPECT_EQ(s.nodes()[0].inputs.size(), 4u);
  EXPECT_EQ(s.nodes()[0].inputs[3], "skip");
  EXPECT_EQ(s.fusions().absorbed, 2);
  expect_same_outputs(bytes(m));
}

TEST(Fusion, ClipWithConstantBoundsIsTheActivation) {
  onnx::ModelProto m = conv_bn_model();
  add_float_init(m, "lo", {}, {0.0f});
  add_float_init(m, "hi", {}, {0.5f});
  add_node(m, "Clip", "clip", {"n", "lo", "hi"}, {"y"});
  add_io(m, false, "y", {1, kM, kH, kW});
  Session s = Session::from_bytes(bytes(m));
  ASSERT_EQ(op_types(s), std::vector<std::string>{"FusedConv"});
  EXPECT_EQ(s.nodes()[0].attr_string("activation", ""), "Clip");
  expect_same_outputs(bytes(m));

  // A bound a run gives is no constant: the Clip stays.
  onnx::ModelProto v = conv_bn_model();
  add_float_init(v, "lo", {}, {0.0f});
  add_io(v, true, "hi", {});
  add_node(v, "Clip", "clip", {"n", "lo", "hi"}, {"y"});
  add_io(v, false, "y", {1, kM, kH, kW});
  Session sv = Session::from_bytes(bytes(v));
  EXPECT_EQ(op_types(sv), (std::vector<std::string>{"Conv", "Clip"}));
}

// The other activations ONNX Runtime's CPU EP fuses into a Conv, with
// their attributes (or the defaults) as the FusedConv's parameters.
TEST(Fusion, TheActivationsOnnxRuntimeFusesJoinTheConv) {
  struct Case {
    std::string op;
    std::vector<std::pair<std::string, float>> attrs;
    std::vector<float> params;
  };
  for (const Case& c : {Case{"LeakyRelu", {{"alpha", 0.3f}}, {0.3f}}, Case{"LeakyRelu", {}, {0.01f}},
                        Case{"Sigmoid", {}, {}}, Case{"Tanh", {}, {}},
                        Case{"HardSigmoid", {{"alpha", 0.3f}, {"beta", 0.4f}}, {0.3f, 0.4f}},
                        Case{"HardSigmoid", {}, {0.2f, 0.5f}}}) {
    SCOPED_TRACE(c.op + (c.attrs.empty() ? " (defaults)" : ""));
    onnx::ModelProto m = conv_bn_model();
    auto* act = add_node(m, c.op, "act", {"n"}, {"y"});
    for (const auto& [name, value] : c.attrs) set_float(act, name, value);
    add_io(m, false, "y", {1, kM, kH, kW});
    Session s = Session::from_bytes(bytes(m));
    ASSERT_EQ(op_types(s), std::vector<std::string>{"FusedConv"});
    EXPECT_EQ(s.nodes()[0].attr_string("activation", ""), c.op);
    EXPECT_EQ(s.nodes()[0].has_attr("activation_params") ? s.nodes()[0].attr_floats("activation_params")
                                                           : std::vector<float>{},
              c.params);
    EXPECT_EQ(s.fusions().absorbed, 1);
    expect_same_outputs(bytes(m));
  }
  // Softplus is no activation ONNX Runtime's CPU EP fuses: it stays.
  onnx::ModelProto m = conv_bn_model();
  add_node(m, "Softplus", "act", {"n"}, {"y"});
  add_io(m, false, "y", {1, kM, kH, kW});
  EXPECT_EQ(op_types(Session::from_bytes(bytes(m))), (std::vector<std::string>{"Conv", "Softplus"}));
}

// A NaN in X reaches the outputs whose windows read it: the fused
// activation (the implicit GEMM's epilogue, where it runs the conv) keeps
// it NaN or maps it as the op does (Relu: 0), as does a residual Add. On
// rows of 28 columns (cut by rows) and of 4 (cut flat, where Z is read and
// Y written lane by lane).
TEST(Fusion, NansComeOutOfAFusedConvAsOutOfTheGraph) {
  struct Case {
    std::string op;
    bool skip;     // a residual Add before the activation
    bool nan_out;  // whether NaN survives the activation
    int64_t width;
  };
  for (const Case& c : {Case{"Relu", false, false, kW}, Case{"Relu", true, false, kW}, Case{"Clip", false, true, kW},
                        Case{"LeakyRelu", true, true, kW}, Case{"", true, true, kW}, Case{"Relu", true, false, 4},
                        Case{"Clip", true, true, 4}, Case{"LeakyRelu", false, true, 4}}) {
    SCOPED_TRACE((c.op.empty() ? "no activation" : c.op) + (c.skip ? " after an Add" : "") + ", width " +
                 std::to_string(c.width));
    onnx::ModelProto m = conv_bn_model(17, c.width);
    std::string v = "n";
    if (c.skip) {
      add_io(m, true, "skip", {1, kM, kH, c.width});
      add_node(m, "Add", "add", {v, "skip"}, {"s"});
      v = "s";
    }
    if (c.op == "Clip") {
      add_float_init(m, "lo", {}, {-0.25f});
      add_float_init(m, "hi", {}, {0.5f});
      add_node(m, "Clip", "act", {v, "lo", "hi"}, {"y"});
    } else if (!c.op.empty()) {
      auto* act = add_node(m, c.op, "act", {v}, {"y"});
      if (c.op == "LeakyRelu") set_float(act, "alpha", 0.2f);
    } else {
      add_node(m, "Identity", "id", {v}, {"y"});
    }
    add_io(m, false, "y", {1, kM, kH, c.width});
    const std::vector<std::string> ops = op_types(Session::from_bytes(bytes(m)));
    EXPECT_EQ(ops.front(), "FusedConv");
    const size_t nans = expect_same_outputs(bytes(m), 1e-5f, 61);
    if (c.nan_out)
      EXPECT_GT(nans, 0u);
    else
      EXPECT_EQ(nans, 0u);
  }
}

TEST(Fusion, LeavesAValueOthersReadAlone) {
  // The Conv's output is a graph output: nothing fuses.
  onnx::ModelProto a = conv_bn_model();
  add_node(a, "Relu", "relu", {"n"}, {"y"});
  add_io(a, false, "c", {1, kM, kH, kW});
  add_io(a, false, "y", {1, kM, kH, kW});
  EXPECT_EQ(op_types(Session::from_bytes(bytes(a))),
            (std::vector<std::string>{"Conv", "BatchNormalization", "Relu"}));
  expect_same_outputs(bytes(a));

  // The normalised value is read twice: the fold happens, the Relu stays.
  onnx::ModelProto b = conv_bn_model();
  add_node(b, "Relu", "relu", {"n"}, {"y"});
  add_node(b, "Sigmoid", "sig", {"n"}, {"z"});
  add_io(b, false, "y", {1, kM, kH, kW});
  add_io(b, false, "z", {1, kM, kH, kW});
  Session sb = Session::from_bytes(bytes(b));
  EXPECT_EQ(op_types(sb), (std::vector<std::string>{"Conv", "Relu", "Sigmoid"}));
  EXPECT_EQ(sb.fusions().batch_norms, 1);
  EXPECT_EQ(sb.fusions().fused_convs, 0);
  expect_same_outputs(bytes(b));

  // A weight a run may not change but that another node also reads keeps
  // its value for that node.
  onnx::ModelProto c = conv_bn_model();
  add_node(c, "Identity", "keep_w", {"w"}, {"w_out"});
  add_io(c, false, "n", {1, kM, kH, kW});
  add_io(c, false, "w_out", {kM, kC, 3, 3});
  expect_same_outputs(bytes(c));
}

// FusedConv is float only: a double Conv and its Relu run as written.
TEST(Fusion, ADoubleConvStaysAConv) {
  onnx::ModelProto m = make_model(17);
  add_io(m, true, "x", {1, kC, kH, kW}, onnx::TensorProto::DOUBLE);
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::DOUBLE);
  for (int64_t d : {kM, kC, int64_t(3), int64_t(3)}) w->add_dims(d);
  for (float v : random_values(size_t(kM * kC * 9), 1)) w->add_double_data(v);
  auto* conv = add_node(m, "Conv", "conv", {"x", "w"}, {"c"});
  set_ints(conv, "kernel_shape", {3, 3});
  add_node(m, "Relu", "relu", {"c"}, {"y"});
  add_io(m, false, "y", {1, kM, kH - 2, kW - 2}, onnx::TensorProto::DOUBLE);
  Session s = Session::from_bytes(bytes(m));
  EXPECT_EQ(op_types(s), (std::vector<std::string>{"Conv", "Relu"}));
  std::map<std::string, Tensor> in;
  in.emplace("x", Tensor(DataType::Double, {1, kC, kH, kW}));
  EXPECT_EQ(s.run(in).at(0).shape(), (Shape{1, kM, kH - 2, kW - 2}));
}

// An EP before the CPU EP that claims Relu: the Relu stays its node (the
// BatchNormalization is still folded, the Conv stays a Conv).
class ReluEp final : public ExecutionProvider {
 public:
  std::string name() const override { return "ReluEP"; }
  bool claims(const Node& node) const override { return node.op_type == "Relu"; }
  std::unique_ptr<Kernel> create_kernel(const Node& node) const override {
    return make_cpu_execution_provider()->create_kernel(node);
  }
};

TEST(Fusion, NodesAnotherEpRunsAreNotAbsorbed) {
  onnx::ModelProto m = conv_bn_model();
  add_node(m, "Relu", "relu", {"n"}, {"y"});
  add_io(m, false, "y", {1, kM, kH, kW});
  SessionOptions o;
  o.providers = {std::make_shared<ReluEp>(), make_cpu_execution_provider()};
  Session s = Session::from_bytes(bytes(m), o);
  EXPECT_EQ(op_types(s), (std::vector<std::string>{"Conv", "Relu"}));
  EXPECT_EQ(s.provider_of(1), "ReluEP");
}

// FusedConv as ONNX Runtime saves it in an optimised model: every
// activation against the ops it stands for, on rows the implicit GEMM
// takes (kW) and on rows of 6 columns it leaves to im2col + gemm and a
// pass of its own.
class FusedConvWidths : public ::testing::TestWithParam<int64_t> {};

TEST_P(FusedConvWidths, MatchesItsOps) {
  const int64_t width = GetParam();
  struct Act {
    std::string name;
    std::vector<float> params;
    std::string op;  // the op that computes it alone
  };
  for (const Act& act : {Act{"LeakyRelu", {0.2f}, "LeakyRelu"}, Act{"Sigmoid", {}, "Sigmoid"},
                         Act{"Tanh", {}, "Tanh"}, Act{"HardSigmoid", {0.3f, 0.4f}, "HardSigmoid"},
                         Act{"Clip", {-0.2f, 0.3f}, "Clip"}, Act{"Clip", {0.3f, -0.2f}, "Clip"},
                         Act{"Relu", {}, "Relu"}, Act{"", {}, "Identity"}}) {
    SCOPED_TRACE(act.name + (act.params.empty() ? "" : " " + std::to_string(act.params[0])));
    auto base = [&](onnx::ModelProto& m) {
      add_io(m, true, "x", {1, kC, kH, width});
      add_io(m, true, "z", {1, kM, kH, width});
      add_float_init(m, "w", {kM, kC, 3, 3}, random_values(size_t(kM * kC * 9), 1));
      add_float_init(m, "b", {kM}, random_values(kM, 2));
    };
    onnx::ModelProto fused = make_model(17);
    auto* ms = fused.add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
    base(fused);
    auto* fc = add_node(fused, "FusedConv", "fc", {"x", "w", "b", "z"}, {"y"});
    fc->set_domain("com.microsoft");
    set_ints(fc, "kernel_shape", {3, 3});
    set_ints(fc, "pads", {1, 1, 1, 1});
    if (!act.name.empty()) set_string(fc, "activation", act.name);  // none: Conv + Z
    if (!act.params.empty()) set_floats(fc, "activation_params", act.params);
    add_io(fused, false, "y", {1, kM, kH, width});

    onnx::ModelProto ops = make_model(17);
    base(ops);
    auto* conv = add_node(ops, "Conv", "conv", {"x", "w", "b"}, {"c"});
    set_ints(conv, "kernel_shape", {3, 3});
    set_ints(conv, "pads", {1, 1, 1, 1});
    add_node(ops, "Add", "add", {"c", "z"}, {"s"});
    auto* a = add_node(ops, act.op, "act", {"s"}, {"y"});
    if (act.name == "LeakyRelu") set_float(a, "alpha", act.params[0]);
    if (act.name == "HardSigmoid") set_float(a, "alpha", act.params[0]), set_float(a, "beta", act.params[1]);
    if (act.name == "Clip") {  // opset 11 on: the bounds are inputs; min > max gives max
      add_float_init(ops, "lo", {}, {act.params[0]});
      add_float_init(ops, "hi", {}, {act.params[1]});
      a->add_input("lo");
      a->add_input("hi");
    }
    add_io(ops, false, "y", {1, kM, kH, width});

    Session sf = Session::from_bytes(bytes(fused)), so = Session::from_bytes(bytes(ops), fusing(false));
    const auto in = inputs_of(so);
    const auto yf = sf.run(in).at(0).to_vector<float>(), yo = so.run(in).at(0).to_vector<float>();
    ASSERT_EQ(yf.size(), yo.size());
    for (size_t i = 0; i < yf.size(); ++i) ASSERT_NEAR(yf[i], yo[i], 1e-5f * (std::fabs(yo[i]) + 1.0f)) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Fusion, FusedConvWidths, ::testing::Values(kW, int64_t(6)));

TEST(Fusion, FusedConvRefusesWhatItCannotRun) {
  onnx::ModelProto m = make_model(17);
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  add_io(m, true, "x", {1, kC, kH, kW});
  add_float_init(m, "w", {kM, kC, 3, 3}, random_values(size_t(kM * kC * 9), 1));
  auto* fc = add_node(m, "FusedConv", "fc", {"x", "w"}, {"y"});
  fc->set_domain("com.microsoft");
  set_string(fc, "activation", "Softsign");
  add_io(m, false, "y", {1, kM, kH - 2, kW - 2});
  try {
    Session::from_bytes(bytes(m));
    FAIL() << "an unknown activation was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown activation 'Softsign'"), std::string::npos) << e.what();
  }
}

}  // namespace
