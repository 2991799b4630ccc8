// Hand-checked results and error messages of the elementwise kernels, through
// small graphs (ONNX's own test data is covered by runtime_conformance).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "epprof/rt/session.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;

namespace {

// One-node model: inputs in0.. of the given tensors' types and shapes, one output.
struct OneNode {
  onnx::ModelProto model;
  onnx::NodeProto* node;
  std::vector<Tensor> inputs;

  OneNode(const std::string& op, std::vector<Tensor> in, int out_type, int opset = 17) : model(make_model(opset)) {
    std::vector<std::string> names;
    for (size_t i = 0; i < in.size(); ++i) {
      names.push_back("in" + std::to_string(i));
      add_io(model, true, names.back(), in[i].shape(), static_cast<int>(in[i].dtype()));
    }
    node = add_node(model, op, "n", names, {"y"});
    auto* out = model.mutable_graph()->add_output();
    out->set_name("y");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(out_type);
    inputs = std::move(in);
  }

  std::vector<Tensor> run() {
    Session s = Session::from_bytes(bytes(model));
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < inputs.size(); ++i) feeds["in" + std::to_string(i)] = inputs[i];
    return s.run(feeds);
  }
};

// Runs f and expects an epprof Error whose message contains every `parts`.
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kBool = onnx::TensorProto::BOOL;

}  // namespace

TEST(OpsElementwise, IntegerArithmeticWraps) {
  const int32_t max = std::numeric_limits<int32_t>::max(), min = std::numeric_limits<int32_t>::min();
  OneNode add("Add", {Tensor::from_vector<int32_t>({2}, {max, -5}), Tensor::from_vector<int32_t>({2}, {1, 3})},
              onnx::TensorProto::INT32);
  EXPECT_EQ(add.run()[0].to_vector<int32_t>(), (std::vector<int32_t>{min, -2}));
  OneNode mul("Mul", {Tensor::from_vector<uint16_t>({1}, {65535}), Tensor::from_vector<uint16_t>({1}, {65535})},
              onnx::TensorProto::UINT16);
  EXPECT_EQ(mul.run()[0].to_vector<uint16_t>(), (std::vector<uint16_t>{1}));
  // Truncating division; INT_MIN / -1 wraps instead of trapping.
  OneNode div("Div", {Tensor::from_vector<int32_t>({3}, {-7, 7, min}), Tensor::from_vector<int32_t>({3}, {2, -2, -1})},
              onnx::TensorProto::INT32);
  EXPECT_EQ(div.run()[0].to_vector<int32_t>(), (std::vector<int32_t>{-3, -3, min}));
}

TEST(OpsElementwise, IntegerDivisionByZeroFails) {
  OneNode div("Div", {Tensor::from_vector<uint8_t>({2}, {1, 2}), Tensor::from_vector<uint8_t>({2}, {1, 0})},
              onnx::TensorProto::UINT8);
  expect_error([&] { div.run(); }, {"division by zero"});
}

TEST(OpsElementwise, ModSignRules) {
  const auto a = Tensor::from_vector<int32_t>({6}, {-4, 7, 5, 4, -7, 8});
  const auto b = Tensor::from_vector<int32_t>({6}, {2, -3, 8, -2, 3, 5});
  OneNode py("Mod", {a, b}, onnx::TensorProto::INT32);  // fmod = 0: divisor's sign
  EXPECT_EQ(py.run()[0].to_vector<int32_t>(), (std::vector<int32_t>{0, -2, 5, 0, 2, 3}));
  OneNode c("Mod", {a, b}, onnx::TensorProto::INT32);  // fmod = 1: dividend's sign
  set_int(c.node, "fmod", 1);
  EXPECT_EQ(c.run()[0].to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 5, 0, -1, 3}));
}

TEST(OpsElementwise, ModRejectsFloatWithoutFmodAndBadAttribute) {
  OneNode f("Mod", {Tensor::from_vector<float>({1}, {1.5f}), Tensor::from_vector<float>({1}, {1.0f})}, kFloat);
  expect_error([&] { f.run(); }, {"Mod", "'fmod' must be 1"});
  OneNode bad("Mod", {Tensor::from_vector<int32_t>({1}, {1}), Tensor::from_vector<int32_t>({1}, {1})},
              onnx::TensorProto::INT32);
  set_int(bad.node, "fmod", 2);
  expect_error([&] { bad.run(); }, {"'fmod'", "got 2"});
}

TEST(OpsElementwise, IntegerPowIsExact) {
  // 3^39 is not representable in a double; a negative exponent truncates.
  OneNode p("Pow",
            {Tensor::from_vector<int64_t>({4}, {3, 2, -1, 1}), Tensor::from_vector<int32_t>({4}, {39, -1, -3, -5})},
            onnx::TensorProto::INT64);
  EXPECT_EQ(p.run()[0].to_vector<int64_t>(), (std::vector<int64_t>{4052555153018976267LL, 0, -1, 1}));
}

TEST(OpsElementwise, SquaringPowIsBitForBitStdPow) {
  // An exponent of exactly 2 (float or double, broadcast from [1] or [1,1])
  // takes a fast path: every value, specials included, as std::pow gives it.
  const std::vector<float> x{0.0f, -0.0f, 1.5f, -3.25f, 1e-30f, 3e19f, -3e19f, 7.1e-39f,
                             std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::quiet_NaN(), 123456.789f};
  const Tensor base = Tensor::from_vector<float>({2, 6}, x);
  for (const Tensor& two : {Tensor::from_vector<float>({1}, {2.0f}), Tensor::from_vector<double>({1, 1}, {2.0})}) {
    OneNode p("Pow", {base, two}, kFloat);
    const std::vector<float> got = p.run()[0].to_vector<float>();
    ASSERT_EQ(got.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = std::pow(x[i], 2.0f);
      EXPECT_EQ(std::memcmp(&got[i], &want, sizeof want), 0) << x[i] << ": " << got[i] << " vs " << want;
    }
  }
  // An exponent near 2 is not squared.
  OneNode near("Pow", {base, Tensor::from_vector<float>({1}, {2.0000002f})}, kFloat);
  EXPECT_EQ(near.run()[0].to_vector<float>()[2], std::pow(1.5f, 2.0000002f));
}

TEST(OpsElementwise, PowRejectsUnsignedBase) {
  OneNode p("Pow", {Tensor::from_vector<uint8_t>({1}, {2}), Tensor::from_vector<uint8_t>({1}, {2})},
            onnx::TensorProto::UINT8);
  expect_error([&] { p.run(); }, {"Pow", "base X", "uint8"});
}

TEST(OpsElementwise, LegacyBroadcastAlongAxis) {
  OneNode add("Add", {Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor::from_vector<float>({2}, {10, 20})},
              kFloat, 6);
  set_int(add.node, "broadcast", 1);
  set_int(add.node, "axis", 0);
  EXPECT_EQ(add.run()[0].to_vector<float>(), (std::vector<float>{11, 12, 13, 24, 25, 26}));
}

TEST(OpsElementwise, LegacyShapesMustMatchWithoutBroadcast) {
  OneNode add("Add", {Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor::from_vector<float>({3}, {1, 2, 3})},
              kFloat, 6);
  expect_error([&] { add.run(); }, {"'broadcast' is not set"});
}

TEST(OpsElementwise, PReluOpset6SlopePerChannel) {
  OneNode p("PRelu",
            {Tensor::from_vector<float>({1, 2, 2}, {-1, 2, -3, -4}), Tensor::from_vector<float>({2}, {0.5f, 0.25f})},
            kFloat, 6);
  EXPECT_EQ(p.run()[0].to_vector<float>(), (std::vector<float>{-0.5f, 2, -0.75f, -1}));
}

TEST(OpsElementwise, VariadicMaxBroadcastsAndPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  OneNode m("Max",
            {Tensor::from_vector<float>({2, 1}, {1, nan}), Tensor::from_vector<float>({3}, {0, 2, 4}),
             Tensor::from_vector<float>({}, {3})},
            kFloat);
  const auto y = m.run()[0];
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  const auto v = y.to_vector<float>();
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + 3), (std::vector<float>{3, 3, 4}));
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan(v[i]));
}

TEST(OpsElementwise, VariadicOpset6NeedsEqualShapes) {
  OneNode m("Sum", {Tensor::from_vector<float>({2}, {1, 2}), Tensor::from_vector<float>({1}, {1})}, kFloat, 6);
  expect_error([&] { m.run(); }, {"Sum", "before opset 8"});
}

TEST(OpsElementwise, RoundHalfToEven) {
  OneNode r("Round", {Tensor::from_vector<float>({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f})}, kFloat);
  EXPECT_EQ(r.run()[0].to_vector<float>(), (std::vector<float>{0, 2, 2, -0.0f, -2, 3}));
}

TEST(OpsElementwise, NegAndAbsSignedZeroAndIntegerMinimum) {
  OneNode neg("Neg", {Tensor::from_vector<float>({2}, {0.0f, -0.0f})}, kFloat);
  const auto n = neg.run()[0].to_vector<float>();
  EXPECT_TRUE(std::signbit(n[0]));
  EXPECT_FALSE(std::signbit(n[1]));
  OneNode abs("Abs", {Tensor::from_vector<int8_t>({3}, {-128, -3, 4})}, onnx::TensorProto::INT8);
  EXPECT_EQ(abs.run()[0].to_vector<int8_t>(), (std::vector<int8_t>{-128, 3, 4}));  // wraps, like numpy
}

TEST(OpsElementwise, UnaryRejectsIntegerInputForFloatOnlyOp) {
  OneNode s("Sin", {Tensor::from_vector<int32_t>({1}, {1})}, onnx::TensorProto::INT32);
  expect_error([&] { s.run(); }, {"Sin", "floating-point", "int32"});
}

TEST(OpsElementwise, CeluRejectsZeroAlpha) {
  OneNode c("Celu", {Tensor::from_vector<float>({1}, {1})}, kFloat);
  set_float(c.node, "alpha", 0.0f);
  expect_error([&] { c.run(); }, {"'alpha' must be positive"});
}

TEST(OpsElementwise, ClipAttributesAndInputs) {
  OneNode old("Clip", {Tensor::from_vector<float>({3}, {-2, 0.25f, 2})}, kFloat, 6);
  set_float(old.node, "min", -0.5f);
  set_float(old.node, "max", 0.5f);
  EXPECT_EQ(old.run()[0].to_vector<float>(), (std::vector<float>{-0.5f, 0.25f, 0.5f}));
  // min > max: everything becomes max.
  OneNode swapped("Clip",
                  {Tensor::from_vector<int8_t>({3}, {-100, 0, 100}), Tensor::from_vector<int8_t>({}, {5}),
                   Tensor::from_vector<int8_t>({}, {-5})},
                  onnx::TensorProto::INT8);
  EXPECT_EQ(swapped.run()[0].to_vector<int8_t>(), (std::vector<int8_t>{-5, -5, -5}));
  OneNode bad("Clip", {Tensor::from_vector<float>({1}, {1}), Tensor::from_vector<float>({2}, {0, 1})}, kFloat);
  expect_error([&] { bad.run(); }, {"'min' must be a scalar"});
}

TEST(OpsElementwise, BitShiftPastWidthIsZero) {
  OneNode b("BitShift", {Tensor::from_vector<uint8_t>({3}, {1, 255, 7}), Tensor::from_vector<uint8_t>({3}, {7, 1, 8})},
            onnx::TensorProto::UINT8);
  set_string(b.node, "direction", "LEFT");
  EXPECT_EQ(b.run()[0].to_vector<uint8_t>(), (std::vector<uint8_t>{128, 254, 0}));
  OneNode bad("BitShift", {Tensor::from_vector<uint8_t>({1}, {1}), Tensor::from_vector<uint8_t>({1}, {1})},
              onnx::TensorProto::UINT8);
  set_string(bad.node, "direction", "UP");
  expect_error([&] { bad.run(); }, {"'direction'", "UP"});
}

TEST(OpsElementwise, WhereBroadcastsAllThree) {
  OneNode w("Where",
            {Tensor::from_vector<bool>({2, 1}, {true, false}), Tensor::from_vector<int64_t>({1, 3}, {1, 2, 3}),
             Tensor::from_vector<int64_t>({}, {-1})},
            onnx::TensorProto::INT64);
  const auto y = w.run()[0];
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
  OneNode bad("Where",
              {Tensor::from_vector<float>({1}, {1}), Tensor::from_vector<float>({1}, {1}),
               Tensor::from_vector<float>({1}, {2})},
              kFloat);
  expect_error([&] { bad.run(); }, {"condition must be bool"});
}

TEST(OpsElementwise, ComparisonsAndLogic) {
  OneNode ge("GreaterOrEqual", {Tensor::from_vector<uint32_t>({3}, {1, 2, 3}), Tensor::from_vector<uint32_t>({}, {2})},
             kBool);
  EXPECT_EQ(ge.run()[0].to_vector<bool>(), (std::vector<bool>{false, true, true}));
  OneNode x("Xor", {Tensor::from_vector<bool>({2}, {true, false}), Tensor::from_vector<bool>({2, 1}, {true, false})},
            kBool);
  EXPECT_EQ(x.run()[0].to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
  OneNode bad("Greater", {Tensor::from_vector<bool>({1}, {true}), Tensor::from_vector<bool>({1}, {false})}, kBool);
  expect_error([&] { bad.run(); }, {"Greater", "bool inputs are not supported"});
}

TEST(OpsElementwise, CastSaturatesAndRejectsString) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  OneNode c("Cast", {Tensor::from_vector<float>({4}, {300.7f, -300, nan, -1.9f})}, onnx::TensorProto::INT8);
  set_int(c.node, "to", onnx::TensorProto::INT8);
  EXPECT_EQ(c.run()[0].to_vector<int8_t>(), (std::vector<int8_t>{127, -128, 0, -1}));
  OneNode s("Cast", {Tensor::from_vector<float>({1}, {1})}, kFloat);
  set_int(s.node, "to", onnx::TensorProto::STRING);
  expect_error([&] { s.run(); }, {"string tensors are not supported"});
}

TEST(OpsElementwise, CastDoubleToFloat16RoundsOnce) {
  // 1 + 2^-11 + 2^-30 lies just above the midpoint of float16's 1 and 1 + 2^-10.
  // Through float (to nearest) it would become the midpoint and round to even, 1.
  OneNode c("Cast", {Tensor::from_vector<double>({1}, {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30)})},
            onnx::TensorProto::FLOAT16);
  set_int(c.node, "to", onnx::TensorProto::FLOAT16);
  EXPECT_EQ(c.run()[0].to_vector<Float16>()[0].bits, 0x3C01);  // 1 + 2^-10
}

TEST(OpsElementwise, CastLikeTakesSecondInputsType) {
  OneNode c("CastLike", {Tensor::from_vector<double>({2}, {1.5, -2.5}), Tensor::from_vector<int16_t>({1}, {0})},
            onnx::TensorProto::INT16);
  EXPECT_EQ(c.run()[0].to_vector<int16_t>(), (std::vector<int16_t>{1, -2}));
}

TEST(OpsElementwise, DropoutInferenceAndTraining) {
  OneNode old("Dropout", {Tensor::from_vector<float>({2}, {1, 2})}, kFloat, 7);
  old.node->add_output("mask");
  add_io(old.model, false, "mask", {2});
  const auto out = old.run();
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{1, 1}));  // opset < 10: mask of X's type
  // Training mode draws numpy's MT19937 stream for seed 0: the first uniform
  // draws are 0.5488, 0.7152, 0.6028, 0.5449.
  OneNode train("Dropout",
                {Tensor::from_vector<float>({4}, {1, 2, 3, 4}), Tensor::from_vector<float>({}, {0.6f}),
                 Tensor::from_vector<bool>({}, {true})},
                kFloat);
  train.node->add_output("mask");
  add_io(train.model, false, "mask", {4}, kBool);
  const auto t = train.run();
  EXPECT_EQ(t[1].to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
  const auto ty = t[0].to_vector<float>();
  EXPECT_FLOAT_EQ(ty[1], 5.0f);
  EXPECT_FLOAT_EQ(ty[2], 7.5f);
  EXPECT_EQ(ty[0], 0.0f);
  OneNode bad("Dropout",
              {Tensor::from_vector<float>({2}, {1, 2}), Tensor::from_vector<float>({}, {1.0f}),
               Tensor::from_vector<bool>({}, {true})},
              kFloat);
  expect_error([&] { bad.run(); }, {"'ratio' must be in [0, 1)"});
  OneNode zero("Dropout",
               {Tensor::from_vector<float>({2}, {1, 2}), Tensor::from_vector<float>({}, {0.0f}),
                Tensor::from_vector<bool>({}, {true})},
               kFloat);
  EXPECT_EQ(zero.run()[0].to_vector<float>(), (std::vector<float>{1, 2}));
}
