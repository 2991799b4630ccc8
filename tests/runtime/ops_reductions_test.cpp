// Hand-checked results and error messages of the reductions kernels, through
// small graphs (ONNX's own test data is covered by runtime_conformance).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "epprof/rt/session.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;

namespace {

// A one-node model: inputs x0..xn-1 of the given shapes/types, one output y.
struct OneNode {
  onnx::ModelProto m;
  onnx::NodeProto* node;
  OneNode(const std::string& op, int opset, const std::vector<std::vector<int64_t>>& in_shapes,
          const std::vector<int64_t>& out_shape, int elem = onnx::TensorProto::FLOAT,
          const std::vector<int>& in_elems = {}) : m(make_model(opset)) {
    std::vector<std::string> names;
    for (size_t i = 0; i < in_shapes.size(); ++i) {
      names.push_back("x" + std::to_string(i));
      add_io(m, true, names.back(), in_shapes[i], i < in_elems.size() ? in_elems[i] : elem);
    }
    node = add_node(m, op, "n", names, {"y"});
    add_io(m, false, "y", out_shape, elem);
  }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    Session s = Session::from_bytes(bytes(m));
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < inputs.size(); ++i) feeds.emplace("x" + std::to_string(i), inputs[i]);
    return s.run(feeds);
  }
};

// The message of the Error that f throws ("" when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

}  // namespace

TEST(OpsReductions, ReduceSumAxesInputNegativeAndKeepdims) {
  OneNode t("ReduceSum", 13, {{2, 3}}, {2});
  t.node->add_input("axes");
  add_int64_init(t.m, "axes", {1}, {-1});
  set_int(t.node, "keepdims", 0);
  auto y = t.run({f32({2, 3}, {1, 2, 3, 4, 5, 6})})[0];
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{6, 15}));
}

TEST(OpsReductions, ReduceSumEmptyAxesNoopIsIdentity) {
  OneNode t("ReduceSum", 13, {{2, 2}}, {2, 2});
  t.node->add_input("axes");
  add_int64_init(t.m, "axes", {0}, {});
  set_int(t.node, "noop_with_empty_axes", 1);
  auto y = t.run({f32({2, 2}, {1, 2, 3, 4})})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(OpsReductions, EmptySetGivesTheIdentity) {
  // Reducing a dim of size 0: sum 0, prod 1, max -inf, min +inf, log_sum -inf.
  const std::vector<std::pair<const char*, float>> cases = {
      {"ReduceSum", 0.0f}, {"ReduceProd", 1.0f}, {"ReduceMax", -std::numeric_limits<float>::infinity()},
      {"ReduceMin", std::numeric_limits<float>::infinity()}, {"ReduceLogSum", -std::numeric_limits<float>::infinity()},
      {"ReduceSumSquare", 0.0f}};
  for (const auto& [op, expected] : cases) {
    OneNode t(op, 11, {{2, 0}}, {2, 1});
    set_ints(t.node, "axes", {1});
    auto y = t.run({Tensor(DataType::Float, {2, 0})})[0];
    EXPECT_EQ(y.shape(), (Shape{2, 1})) << op;
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{expected, expected})) << op;
  }
}

TEST(OpsReductions, LogSumExpOfLargeValuesDoesNotOverflow) {
  OneNode t("ReduceLogSumExp", 13, {{2}}, {});
  set_int(t.node, "keepdims", 0);
  auto y = t.run({f32({2}, {1000, 1000})})[0];
  EXPECT_NEAR(y.to_vector<float>()[0], 1000.0f + std::log(2.0f), 1e-3f);
}

TEST(OpsReductions, IntegerMeanTruncatesAndL1TakesAbs) {
  OneNode mean("ReduceMean", 13, {{4}}, {1}, onnx::TensorProto::INT64);
  EXPECT_EQ(mean.run({Tensor::from_vector<int64_t>({4}, {1, 2, 2, 2})})[0].to_vector<int64_t>(),
            (std::vector<int64_t>{1}));  // 7 / 4
  OneNode l1("ReduceL1", 13, {{3}}, {1}, onnx::TensorProto::INT32);
  EXPECT_EQ(l1.run({Tensor::from_vector<int32_t>({3}, {-1, 2, -3})})[0].to_vector<int32_t>(),
            (std::vector<int32_t>{6}));
}

TEST(OpsReductions, ReduceRejectsBadAxesAndKeepdims) {
  OneNode rep("ReduceMax", 13, {{2, 2}}, {1, 1});
  set_ints(rep.node, "axes", {1, -1});
  EXPECT_NE(error_of([&] { rep.run({f32({2, 2}, {1, 2, 3, 4})}); }).find("repeat"), std::string::npos);
  OneNode range("ReduceMin", 13, {{2, 2}}, {1, 1});
  set_ints(range.node, "axes", {2});
  EXPECT_NE(error_of([&] { range.run({f32({2, 2}, {1, 2, 3, 4})}); }).find("out of range"), std::string::npos);
  OneNode keep("ReduceProd", 13, {{2, 2}}, {1, 1});
  set_int(keep.node, "keepdims", 2);
  EXPECT_NE(error_of([&] { keep.run({f32({2, 2}, {1, 2, 3, 4})}); }).find("keepdims"), std::string::npos);
}

TEST(OpsReductions, LogSoftmaxLegacyCoercesTo2D) {
  // Opset 11, axis 1 of [1, 2, 2]: one softmax over all four values.
  OneNode legacy("LogSoftmax", 11, {{1, 2, 2}}, {1, 2, 2});
  const float lse = std::log(4.0f);
  for (float v : legacy.run({f32({1, 2, 2}, {0, 0, 0, 0})})[0].to_vector<float>()) EXPECT_NEAR(v, -lse, 1e-6f);
  // Opset 13, axis 1: softmax over the 2 values along axis 1 only.
  OneNode modern("LogSoftmax", 13, {{1, 2, 2}}, {1, 2, 2});
  set_int(modern.node, "axis", 1);
  for (float v : modern.run({f32({1, 2, 2}, {0, 0, 0, 0})})[0].to_vector<float>())
    EXPECT_NEAR(v, -std::log(2.0f), 1e-6f);
}

TEST(OpsReductions, NllLossWeightedMeanSkipsIgnoredTargets) {
  OneNode t("NegativeLogLikelihoodLoss", 13, {{3, 2}, {3}, {2}}, {}, onnx::TensorProto::FLOAT,
            {onnx::TensorProto::FLOAT, onnx::TensorProto::INT64, onnx::TensorProto::FLOAT});
  set_int(t.node, "ignore_index", -1);
  // Losses: -(-1)*1 = 1 (class 0), -(-4)*3 = 12 (class 1), ignored; mean = 13 / (1 + 3).
  auto y = t.run({f32({3, 2}, {-1, -2, -3, -4, -5, -6}), Tensor::from_vector<int64_t>({3}, {0, 1, -1}),
                  f32({2}, {1, 3})})[0];
  EXPECT_FLOAT_EQ(y.to_vector<float>()[0], 13.0f / 4.0f);
}

TEST(OpsReductions, LossRejectsBadTargetsAndReduction) {
  OneNode t("NegativeLogLikelihoodLoss", 13, {{2, 2}, {2}}, {}, onnx::TensorProto::FLOAT,
            {onnx::TensorProto::FLOAT, onnx::TensorProto::INT64});
  EXPECT_NE(error_of([&] { t.run({f32({2, 2}, {0, 0, 0, 0}), Tensor::from_vector<int64_t>({2}, {0, 2})}); })
                .find("target value 2 is outside [0, 2)"),
            std::string::npos);
  OneNode r("SoftmaxCrossEntropyLoss", 13, {{2, 2}, {2}}, {}, onnx::TensorProto::FLOAT,
            {onnx::TensorProto::FLOAT, onnx::TensorProto::INT64});
  set_string(r.node, "reduction", "max");
  EXPECT_NE(error_of([&] { r.run({f32({2, 2}, {0, 0, 0, 0}), Tensor::from_vector<int64_t>({2}, {0, 1})}); })
                .find("reduction must be"),
            std::string::npos);
}

TEST(OpsReductions, EinsumDiagonalImplicitOutputAndEllipsisBroadcast) {
  OneNode diag("Einsum", 12, {{2, 2}}, {2});
  set_string(diag.node, "equation", "ii->i");
  EXPECT_EQ(diag.run({f32({2, 2}, {1, 2, 3, 4})})[0].to_vector<float>(), (std::vector<float>{1, 4}));
  // Implicit output: the letters used once, in order ("ik"); j is summed.
  OneNode mm("Einsum", 12, {{1, 2}, {2, 2}}, {1, 2});
  set_string(mm.node, "equation", "ij,jk");
  EXPECT_EQ(mm.run({f32({1, 2}, {1, 2}), f32({2, 2}, {1, 0, 1, 1})})[0].to_vector<float>(),
            (std::vector<float>{3, 2}));
  // The ellipsis dims broadcast: [1, 1, 2] x [2, 2, 1] -> [2, 1, 1].
  OneNode bmm("Einsum", 12, {{1, 1, 2}, {2, 2, 1}}, {2, 1, 1});
  set_string(bmm.node, "equation", "...ij,...jk->...ik");
  EXPECT_EQ(bmm.run({f32({1, 1, 2}, {1, 2}), f32({2, 2, 1}, {1, 1, 2, 3})})[0].to_vector<float>(),
            (std::vector<float>{3, 8}));
}

TEST(OpsReductions, EinsumRejectsBadEquations) {
  OneNode bad("Einsum", 12, {{2}}, {2});
  set_string(bad.node, "equation", "i1->i");
  EXPECT_NE(error_of([&] { bad.run({f32({2}, {1, 2})}); }).find("unexpected '1'"), std::string::npos);
  OneNode dims("Einsum", 12, {{2}, {3}}, {});
  set_string(dims.node, "equation", "i,i->");
  EXPECT_NE(error_of([&] { dims.run({f32({2}, {1, 2}), f32({3}, {1, 2, 3})}); }).find("its label has size 2"),
            std::string::npos);
}

TEST(OpsReductions, DetPivotsAndRejectsNonSquare) {
  OneNode t("Det", 11, {{2, 2, 2}}, {2});
  auto y = t.run({f32({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0})})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-2, -1}));
  OneNode ns("Det", 11, {{2, 3}}, {});
  EXPECT_NE(error_of([&] { ns.run({f32({2, 3}, {1, 2, 3, 4, 5, 6})}); }).find("square matrices"), std::string::npos);
}

TEST(OpsReductions, NormalizationAttributesAreValidated) {
  OneNode lrn("LRN", 13, {{1, 2, 1, 1}}, {1, 2, 1, 1});
  EXPECT_NE(error_of([&] { lrn.run({f32({1, 2, 1, 1}, {1, 2})}); }).find("'size' must be a positive integer"),
            std::string::npos);
  OneNode in("InstanceNormalization", 6, {{1, 2, 2}, {3}, {2}}, {1, 2, 2});
  EXPECT_NE(error_of([&] { in.run({f32({1, 2, 2}, {1, 2, 3, 4}), f32({3}, {1, 1, 1}), f32({2}, {0, 0})}); })
                .find("input 'scale' must be float[2]"),
            std::string::npos);
  OneNode ln("LayerNormalization", 17, {{2, 2}, {2}}, {2, 2});
  set_int(ln.node, "stash_type", 11);
  EXPECT_NE(error_of([&] { ln.run({f32({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 1})}); }).find("stash_type"),
            std::string::npos);
}

TEST(OpsReductions, InstanceNormAndMvnNormalisePerSlice) {
  // Each (n, c) slice {1, 3} normalises to {-1, 1} (epsilon 0), then scale 2 and bias 1.
  OneNode in("InstanceNormalization", 6, {{1, 1, 2}, {1}, {1}}, {1, 1, 2});
  auto* eps = in.node->add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(0.0f);
  EXPECT_EQ(in.run({f32({1, 1, 2}, {1, 3}), f32({1}, {2}), f32({1}, {1})})[0].to_vector<float>(),
            (std::vector<float>{-1, 3}));
  OneNode mvn("MeanVarianceNormalization", 13, {{2, 2}}, {2, 2});
  set_ints(mvn.node, "axes", {1});
  for (float v : mvn.run({f32({2, 2}, {1, 3, 10, 20})})[0].to_vector<float>()) EXPECT_NEAR(std::abs(v), 1.0f, 1e-6f);
}
