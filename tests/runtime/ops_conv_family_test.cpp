// Hand-checked results and error messages of the conv family kernels, through
// small graphs (ONNX's own test data is covered by runtime_conformance).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "epprof/rt/session.h"
#include "kernels/conv_direct.h"
#include "kernels/sgemm.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;

namespace {

// Runs `fn` and checks that it throws an epprof::rt::Error whose message contains `part`.
void expect_error(const std::function<void()>& fn, const std::string& part) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    return;
  }
  ADD_FAILURE() << "expected an error mentioning '" << part << "'";
}

// A one-node model y = op(inputs...) whose inputs are all graph inputs.
struct OneNode {
  onnx::ModelProto m;
  onnx::NodeProto* node;
  OneNode(const std::string& op, const std::vector<std::pair<std::string, std::vector<int64_t>>>& inputs,
          const std::vector<int>& types, const std::vector<int64_t>& out_dims, int out_type = onnx::TensorProto::FLOAT,
          int opset = 17)
      : m(make_model(opset)) {
    std::vector<std::string> names;
    for (size_t i = 0; i < inputs.size(); ++i) {
      names.push_back(inputs[i].first);
      if (!inputs[i].first.empty()) add_io(m, true, inputs[i].first, inputs[i].second, types[i]);
    }
    node = add_node(m, op, "n", names, {"y"});
    add_io(m, false, "y", out_dims, out_type);
  }
  Tensor run(const std::map<std::string, Tensor>& feeds) {
    Session s = Session::from_bytes(bytes(m));
    return s.run(feeds)[0];
  }
};

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;
constexpr int kInt8 = onnx::TensorProto::INT8;
constexpr int kUint8 = onnx::TensorProto::UINT8;

}  // namespace

// x = [1, 2], w = [1, 10]: the full transposed convolution is [1, 12, 20];
// pads crop it, and an output_shape larger than it leaves zeros at the end.
TEST(OpsConvFamily, ConvTransposePadsAndOutputShape) {
  const Tensor x = Tensor::from_vector<float>({1, 1, 2}, {1, 2});
  const Tensor w = Tensor::from_vector<float>({1, 1, 2}, {1, 10});
  {
    OneNode g("ConvTranspose", {{"x", {1, 1, 2}}, {"w", {1, 1, 2}}}, {kFloat, kFloat}, {1, 1, 2});
    set_ints(g.node, "pads", {1, 0});
    EXPECT_EQ(g.run({{"x", x}, {"w", w}}).to_vector<float>(), (std::vector<float>{12, 20}));
  }
  {
    OneNode g("ConvTranspose", {{"x", {1, 1, 2}}, {"w", {1, 1, 2}}}, {kFloat, kFloat}, {1, 1, 4});
    set_ints(g.node, "output_shape", {4});
    EXPECT_EQ(g.run({{"x", x}, {"w", w}}).to_vector<float>(), (std::vector<float>{1, 12, 20, 0}));
  }
  {
    OneNode g("ConvTranspose", {{"x", {1, 1, 2}}, {"w", {1, 1, 2}}}, {kFloat, kFloat}, {1, 1, 3});
    set_ints(g.node, "output_padding", {-1});
    expect_error([&] { g.run({{"x", x}, {"w", w}}); }, "output_padding");
  }
}

TEST(OpsConvFamily, ConvRejectsMismatchedChannels) {
  OneNode g("Conv", {{"x", {1, 3, 4}}, {"w", {2, 2, 1}}}, {kFloat, kFloat}, {1, 2, 4});
  expect_error(
      [&] {
        g.run({{"x", Tensor(DataType::Float, {1, 3, 4})}, {"w", Tensor(DataType::Float, {2, 2, 1})}});
      },
      "channels");
}

// Padding never wins a max, even when every real value is negative.
TEST(OpsConvFamily, MaxPoolInt8IgnoresPadding) {
  OneNode g("MaxPool", {{"x", {1, 1, 2}}}, {kInt8}, {1, 1, 2}, kInt8);
  set_ints(g.node, "kernel_shape", {3});
  set_ints(g.node, "pads", {1, 1});
  const Tensor y = g.run({{"x", Tensor::from_vector<int8_t>({1, 1, 2}, {-5, -7})}});
  EXPECT_EQ(y.to_vector<int8_t>(), (std::vector<int8_t>{-5, -5}));
}

// asymmetric coordinates o / 2 = 0, 0.5, 1, 1.5: the halves go down or up
// with the nearest_mode, and index 2 clamps to the last element.
TEST(OpsConvFamily, ResizeNearestModes) {
  for (const auto& [mode, want] : std::vector<std::pair<std::string, std::vector<float>>>{
           {"round_prefer_floor", {1, 1, 2, 2}}, {"round_prefer_ceil", {1, 2, 2, 2}}, {"ceil", {1, 2, 2, 2}}}) {
    OneNode g("Resize", {{"x", {1, 2}}, {"", {}}, {"scales", {2}}}, {kFloat, kFloat, kFloat}, {1, 4});
    set_string(g.node, "coordinate_transformation_mode", "asymmetric");
    set_string(g.node, "nearest_mode", mode);
    const Tensor y = g.run({{"x", Tensor::from_vector<float>({1, 2}, {1, 2})},
                            {"scales", Tensor::from_vector<float>({2}, {1, 2})}});
    EXPECT_EQ(y.to_vector<float>(), want) << mode;
  }
}

TEST(OpsConvFamily, ResizeLinearAlignCornersWithSizes) {
  OneNode g("Resize", {{"x", {1, 3}}, {"", {}}, {"", {}}, {"sizes", {2}}}, {kFloat, kFloat, kFloat, kInt64}, {1, 5});
  set_string(g.node, "mode", "linear");
  set_string(g.node, "coordinate_transformation_mode", "align_corners");
  const Tensor y = g.run({{"x", Tensor::from_vector<float>({1, 3}, {0, 10, 20})},
                          {"sizes", Tensor::from_vector<int64_t>({2}, {1, 5})}});
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 5, 10, 15, 20}));
}

TEST(OpsConvFamily, ResizeRejectsScalesAndSizesTogether) {
  OneNode g("Resize", {{"x", {1, 2}}, {"", {}}, {"scales", {2}}, {"sizes", {2}}}, {kFloat, kFloat, kFloat, kInt64},
            {1, 4});
  expect_error(
      [&] {
        g.run({{"x", Tensor::from_vector<float>({1, 2}, {1, 2})},
               {"scales", Tensor::from_vector<float>({2}, {1, 2})},
               {"sizes", Tensor::from_vector<int64_t>({2}, {1, 4})}});
      },
      "scales or sizes");
}

// Rounds half to even, then saturates to int8.
TEST(OpsConvFamily, QuantizeLinearRoundsToEvenAndSaturates) {
  OneNode g("QuantizeLinear", {{"x", {5}}, {"s", {}}, {"z", {}}}, {kFloat, kFloat, kInt8}, {5}, kInt8);
  const Tensor y = g.run({{"x", Tensor::from_vector<float>({5}, {0.5f, 1.5f, 2.5f, -300.0f, 300.0f})},
                          {"s", Tensor::scalar<float>(1.0f)},
                          {"z", Tensor::scalar<int8_t>(0)}});
  EXPECT_EQ(y.to_vector<int8_t>(), (std::vector<int8_t>{0, 2, 2, -128, 127}));
}

TEST(OpsConvFamily, QuantizeLinearRejectsZeroScale) {
  OneNode g("QuantizeLinear", {{"x", {2}}, {"s", {}}}, {kFloat, kFloat}, {2}, kUint8);
  expect_error([&] { g.run({{"x", Tensor(DataType::Float, {2})}, {"s", Tensor::scalar<float>(0.0f)}}); }, "y_scale");
}

// Per-row zero points of A: rows are centred separately.
TEST(OpsConvFamily, MatMulIntegerPerRowZeroPoint) {
  OneNode g("MatMulInteger", {{"a", {2, 2}}, {"b", {2, 1}}, {"za", {2}}}, {kUint8, kUint8, kUint8}, {2, 1},
            onnx::TensorProto::INT32);
  const Tensor y = g.run({{"a", Tensor::from_vector<uint8_t>({2, 2}, {3, 4, 10, 20})},
                          {"b", Tensor::from_vector<uint8_t>({2, 1}, {1, 2})},
                          {"za", Tensor::from_vector<uint8_t>({2}, {1, 10})}});
  // (3-1)*1 + (4-1)*2 = 8; (10-10)*1 + (20-10)*2 = 20
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{8, 20}));
}

TEST(OpsConvFamily, MatMulIntegerRejectsFloat) {
  OneNode g("MatMulInteger", {{"a", {1, 1}}, {"b", {1, 1}}}, {kFloat, kFloat}, {1, 1}, onnx::TensorProto::INT32);
  expect_error(
      [&] { g.run({{"a", Tensor(DataType::Float, {1, 1})}, {"b", Tensor(DataType::Float, {1, 1})}}); },
      "MatMulInteger inputs");
}

TEST(OpsConvFamily, MaxUnpoolRejectsOutOfRangeIndex) {
  OneNode g("MaxUnpool", {{"x", {1, 1, 1}}, {"i", {1, 1, 1}}}, {kFloat, kInt64}, {1, 1, 2});
  set_ints(g.node, "kernel_shape", {2});
  set_ints(g.node, "strides", {2});
  expect_error(
      [&] {
        g.run({{"x", Tensor::from_vector<float>({1, 1, 1}, {1})},
               {"i", Tensor::from_vector<int64_t>({1, 1, 1}, {2})}});
      },
      "MaxUnpool index 2");
}

TEST(OpsConvFamily, GridSampleRejectsUnknownPaddingMode) {
  OneNode g("GridSample", {{"x", {1, 1, 2, 2}}, {"grid", {1, 1, 1, 2}}}, {kFloat, kFloat}, {1, 1, 1, 1});
  set_string(g.node, "padding_mode", "mirror");
  expect_error([&] { Session::from_bytes(bytes(g.m)); }, "padding_mode");
}

TEST(OpsConvFamily, RoiAlignRejectsUnknownMode) {
  OneNode g("RoiAlign", {{"x", {1, 1, 2, 2}}, {"rois", {1, 4}}, {"b", {1}}}, {kFloat, kFloat, kInt64}, {1, 1, 1, 1});
  set_string(g.node, "mode", "median");
  expect_error([&] { Session::from_bytes(bytes(g.m)); }, "mode must be avg or max");
}

// Two overlapping boxes (IoU 0.5 > 0.4) and one apart: the lower-scored
// overlapping box is suppressed; max_output_boxes_per_class 0 selects nothing.
TEST(OpsConvFamily, NonMaxSuppressionSuppressesAndLimits) {
  const Tensor boxes = Tensor::from_vector<float>({1, 3, 4}, {0, 0, 1, 1, 0, 0, 1, 2, 5, 5, 6, 6});
  const Tensor scores = Tensor::from_vector<float>({1, 1, 3}, {0.5f, 0.9f, 0.1f});
  for (int64_t max_out : {10, 0}) {
    OneNode g("NonMaxSuppression", {{"boxes", {1, 3, 4}}, {"scores", {1, 1, 3}}, {"max", {1}}, {"iou", {1}}},
              {kFloat, kFloat, kInt64, kFloat}, {max_out ? 2 : 0, 3}, kInt64);
    const Tensor y = g.run({{"boxes", boxes},
                            {"scores", scores},
                            {"max", Tensor::from_vector<int64_t>({1}, {max_out})},
                            {"iou", Tensor::from_vector<float>({1}, {0.4f})}});
    if (max_out)
      EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
    else
      EXPECT_EQ(y.shape(), (Shape{0, 3}));
  }
}

// Before opset 7, Gemm's C must be exactly [M, N] unless broadcast = 1.
TEST(OpsConvFamily, GemmOpset6NeedsBroadcastAttribute) {
  OneNode g("Gemm", {{"a", {1, 2}}, {"b", {2, 2}}, {"c", {2}}}, {kFloat, kFloat, kFloat}, {1, 2}, kFloat, 6);
  const std::map<std::string, Tensor> feeds = {{"a", Tensor::from_vector<float>({1, 2}, {1, 2})},
                                                             {"b", Tensor::from_vector<float>({2, 2}, {1, 0, 0, 1})},
                                                             {"c", Tensor::from_vector<float>({2}, {10, 20})}};
  expect_error([&] { g.run(feeds); }, "Gemm input C");
  set_int(g.node, "broadcast", 1);
  EXPECT_EQ(g.run(feeds).to_vector<float>(), (std::vector<float>{11, 22}));
}

// LpPool (p = 2) over [pad, 3] and [3, 4]: padding adds nothing to the sum.
TEST(OpsConvFamily, LpPoolIgnoresPadding) {
  OneNode g("LpPool", {{"x", {1, 1, 2}}}, {kFloat}, {1, 1, 2});
  set_ints(g.node, "kernel_shape", {2});
  set_ints(g.node, "pads", {1, 0});
  const Tensor y = g.run({{"x", Tensor::from_vector<float>({1, 1, 2}, {3, 4})}});
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 5}));
  set_int(g.node, "p", 0);
  expect_error([&] { Session::from_bytes(bytes(g.m)); }, "p must be positive");
}

TEST(OpsConvFamily, MatMulOnIntegers) {
  constexpr int kInt32 = onnx::TensorProto::INT32;
  OneNode g("MatMul", {{"a", {2, 2}}, {"b", {2}}}, {kInt32, kInt32}, {2}, kInt32);
  const Tensor y = g.run({{"a", Tensor::from_vector<int32_t>({2, 2}, {1, 2, -3, 4})},
                          {"b", Tensor::from_vector<int32_t>({2}, {5, 6})}});
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{17, 9}));
}

namespace {

// A 1-D or 2-D Conv case; 1-D when H == 1 and KH == 1 and the spatial rank is 1.
struct ConvCase {
  const char* name;
  int64_t N, C, H, W, M, group, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
  bool bias;
  bool one_d = false;  // X is N x C x W (H, KH, sh, dh, pt, pb unused)
};

// Deterministic values in [-1, 1) that are not all alike.
template <typename T>
std::vector<T> conv_test_values(size_t n, unsigned seed) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = T(int((i * 7919 + seed * 104729) % 2003) - 1001) / T(1001);
  return v;
}

// The definition, term by term, accumulated in long double.
template <typename T>
std::vector<T> naive_conv(const ConvCase& c, const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b,
                          int64_t OH, int64_t OW) {
  const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
  std::vector<T> y(static_cast<size_t>(c.N * c.M * OH * OW));
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          long double acc = c.bias ? b[static_cast<size_t>(m)] : 0;
          for (int64_t cg = 0; cg < Cg; ++cg)
            for (int64_t kh = 0; kh < c.KH; ++kh)
              for (int64_t kw = 0; kw < c.KW; ++kw) {
                const int64_t ih = oh * c.sh - c.pt + kh * c.dh, iw = ow * c.sw - c.pl + kw * c.dw;
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                const int64_t ch = (m / Mg) * Cg + cg;
                acc += static_cast<long double>(x[static_cast<size_t>(((n * c.C + ch) * c.H + ih) * c.W + iw)]) *
                       w[static_cast<size_t>(((m * Cg + cg) * c.KH + kh) * c.KW + kw)];
              }
          y[static_cast<size_t>(((n * c.M + m) * OH + oh) * OW + ow)] = static_cast<T>(acc);
        }
  return y;
}

template <typename T>
void check_conv_case(const ConvCase& c) {
  constexpr int type = std::is_same_v<T, float> ? onnx::TensorProto::FLOAT : onnx::TensorProto::DOUBLE;
  const int64_t OH = (c.H + c.pt + c.pb - ((c.KH - 1) * c.dh + 1)) / c.sh + 1;
  const int64_t OW = (c.W + c.pl + c.pr - ((c.KW - 1) * c.dw + 1)) / c.sw + 1;
  const Shape xs = c.one_d ? Shape{c.N, c.C, c.W} : Shape{c.N, c.C, c.H, c.W};
  const Shape ws = c.one_d ? Shape{c.M, c.C / c.group, c.KW} : Shape{c.M, c.C / c.group, c.KH, c.KW};
  const Shape ys = c.one_d ? Shape{c.N, c.M, OW} : Shape{c.N, c.M, OH, OW};
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs = {{"x", xs}, {"w", ws}};
  if (c.bias) inputs.push_back({"b", {c.M}});
  OneNode g("Conv", inputs, {type, type, type}, ys, type);
  set_int(g.node, "group", c.group);
  if (c.one_d) {
    set_ints(g.node, "strides", {c.sw});
    set_ints(g.node, "dilations", {c.dw});
    set_ints(g.node, "pads", {c.pl, c.pr});
  } else {
    set_ints(g.node, "strides", {c.sh, c.sw});
    set_ints(g.node, "dilations", {c.dh, c.dw});
    set_ints(g.node, "pads", {c.pt, c.pl, c.pb, c.pr});
  }
  const auto x = conv_test_values<T>(static_cast<size_t>(shape_size(xs)), 1);
  const auto w = conv_test_values<T>(static_cast<size_t>(shape_size(ws)), 2);
  const auto b = conv_test_values<T>(static_cast<size_t>(c.M), 3);
  std::map<std::string, Tensor> feeds = {{"x", Tensor::from_vector<T>(xs, x)}, {"w", Tensor::from_vector<T>(ws, w)}};
  if (c.bias) feeds.emplace("b", Tensor::from_vector<T>({c.M}, b));
  const Tensor y = g.run(feeds);
  ASSERT_EQ(y.shape(), ys) << c.name;
  const std::vector<T> got = y.to_vector<T>(), want = naive_conv(c, x, w, b, OH, OW);
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(double(want[i])))) << c.name << " element " << i;
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      // name                           N  C  H   W  M  grp KH KW sh sw dh dw pt pl pb pr bias
      {"depthwise 3x3 s1 pad1 bias", 2, 5, 7, 9, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"depthwise 3x3 s2 asym pads", 1, 3, 9, 8, 3, 3, 3, 3, 2, 2, 1, 1, 1, 0, 1, 2, false},
      {"depthwise 3x3 s1 dil2 pad2", 1, 4, 8, 11, 4, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, true},
      {"depthwise 3x3 s2 dil2 pad1", 1, 2, 10, 9, 2, 2, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, false},
      {"depthwise M=2C 5x5 s(2,1)", 2, 3, 9, 10, 6, 3, 5, 5, 2, 1, 1, 1, 2, 2, 2, 2, true},
      // Rows wide enough for several vectors of interior columns plus a tail.
      {"depthwise 3x3 s1 wide rows", 1, 3, 5, 29, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"depthwise M=3C 5x5 s1 wide", 1, 2, 6, 37, 6, 2, 5, 5, 1, 1, 1, 2, 2, 4, 1, 3, false},
      {"depthwise 3x3 s2 wide rows", 2, 3, 7, 45, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true},
      {"depthwise M=2C 5x5 s(1,3) dil2 wide", 1, 2, 6, 70, 4, 2, 5, 5, 1, 3, 1, 2, 2, 5, 1, 2, true},
      {"depthwise 3x1 s(2,1) no pad", 1, 3, 8, 5, 3, 3, 3, 1, 2, 1, 1, 1, 0, 0, 0, 0, true},
      {"depthwise pads wider than input", 1, 2, 2, 2, 2, 2, 3, 3, 1, 3, 3, 3, 4, 4, 4, 4, true},
      // Maps fewer rows high than the kernel: rows of taps that read only
      // padding are skipped.
      {"depthwise 5x5 pad2 on 2 rows", 1, 6, 2, 19, 6, 6, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, true},
      {"depthwise 3x3 s2 dil2 pad3 on 3 rows", 1, 4, 3, 12, 4, 4, 3, 3, 2, 1, 2, 1, 3, 1, 3, 1, false},
      {"one input channel to 6 (gemm)", 1, 1, 6, 9, 6, 1, 3, 3, 1, 2, 1, 1, 1, 0, 1, 1, true},
      {"depthwise M=6C (gemm per group)", 1, 2, 5, 6, 12, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false},
      {"grouped 3x3 pad1", 2, 4, 6, 7, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"grouped 3x3 s2 no bias", 1, 6, 7, 7, 9, 3, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, false},
      {"pointwise 1x1 bias", 2, 5, 4, 6, 7, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true},
      {"pointwise 1x1 no bias", 1, 3, 5, 5, 4, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false},
      {"pointwise on a 1x1 map (one column)", 2, 8, 1, 1, 5, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true},
      {"3x3 to a 1x1 map (one column)", 1, 4, 3, 3, 6, 2, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, true},
      {"1x1 s2 pad1", 1, 3, 5, 6, 2, 1, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1, true},
      {"generic 3x3 s2 pad1 bias", 2, 3, 9, 8, 4, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true},
      // K x out-width big enough that im2col runs in tiles of a few output rows
      // (the first, float, takes the implicit GEMM on AVX2 and AVX-512; double does not).
      {"generic 3x3 in row tiles", 1, 64, 12, 40, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"grouped 3x3 s2 in row tiles", 1, 128, 15, 70, 4, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false},
      {"generic 3x3 dil2 asym pads", 1, 2, 7, 9, 3, 1, 3, 3, 1, 1, 2, 2, 0, 3, 2, 1, false},
      {"1-D depthwise k4 s3 dil2", 2, 3, 1, 20, 3, 3, 1, 4, 1, 3, 1, 2, 0, 2, 0, 1, true, true},
      {"1-D generic k5 s2", 1, 2, 1, 17, 3, 1, 1, 5, 1, 2, 1, 1, 0, 1, 0, 3, true, true},
      // Output rows of 12 columns or more: the implicit GEMM on AVX2 and
      // AVX-512 (conv_direct.cpp), with 8- or 16-column segments, short
      // ends, tiles whose segments span rows or run past the last,
      // channel tiles of fewer rows than a full one, strides, dilations and
      // groups.
      {"direct 3x3 s1 pad1, 32-column rows", 2, 5, 6, 32, 19, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"direct 3x3 s1 pad1, 16-column rows", 1, 7, 5, 16, 8, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false},
      {"direct 3x3 s2 pad1, 13-column rows", 1, 4, 11, 26, 11, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true},
      {"direct 5x3 s(1,3) dil(2,1) asym", 1, 3, 11, 80, 9, 1, 5, 3, 1, 3, 2, 1, 2, 0, 1, 2, false},
      {"direct 3x3 dil2 pads wider", 1, 2, 4, 40, 6, 1, 3, 3, 1, 1, 2, 3, 3, 4, 2, 5, true},
      {"direct grouped 3x3, 44-column rows", 2, 6, 3, 44, 10, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"direct 2x2 s2 no pad", 1, 3, 8, 64, 16, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, true},
      {"1-D direct k3 s1 pad1", 2, 4, 1, 37, 12, 1, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, true, true},
      // Maps of 4 and 2 columns, stride 1: the implicit GEMM cuts them flat,
      // rows end to end, the kernel's extra columns computed and not
      // stored; vectors spanning rows, the map's end, groups, dilation;
      // the last splits its tiles across the intra-op threads.
      {"flat 3x3 pad1, 4 columns", 1, 5, 9, 4, 10, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"flat grouped 3x1 dil2, 4 columns", 2, 6, 12, 4, 9, 3, 3, 1, 1, 1, 2, 1, 2, 0, 2, 0, false},
      {"flat 1x3 pad(0,1), 2 columns", 1, 8, 24, 2, 12, 1, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, true},
      {"flat 3x3 pad1, 4 columns, split rows", 1, 16, 128, 4, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      // "Same" convs of stride 1 on narrow rows, where the gemm runs them
      // (..ThroughTheGemm, and CPUs without the implicit GEMM; it cuts such
      // maps flat): each tap's rows are adjacent in X, packed a panel row at a time
      // (pack_adjacent_rows), with the padding at rows' ends and at the
      // top and bottom zeroed; the last splits its rows across threads.
      {"adjacent rows 3x3 same, 8 columns", 1, 6, 9, 8, 10, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"adjacent rows 1x3, 4 columns", 1, 5, 23, 4, 7, 1, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, false},
      {"adjacent rows 3x1 dil2, 5 columns", 1, 4, 11, 5, 6, 1, 3, 1, 1, 1, 2, 1, 2, 0, 2, 0, true},
      {"adjacent rows 5x5 pad2, 3 columns", 2, 3, 6, 3, 4, 1, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, true},
      {"adjacent rows 3x3 asym pads, 2 columns", 1, 3, 7, 2, 9, 1, 3, 3, 1, 1, 1, 1, 2, 1, 0, 1, false},
      {"adjacent rows grouped 3x3, 6 columns", 1, 4, 10, 6, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"adjacent rows 3x3 same, split rows", 2, 16, 40, 8, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"1-D adjacent k3 pad1", 2, 4, 1, 6, 5, 1, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, true, true},
      // Maps of 8 positions or fewer, whose columns the gemm lowering packs
      // whole for AVX-512's few-column kernel (pack_im2col_columns): an
      // STFT's one channel of long taps, an encoder's many channels of 3
      // taps, stride and dilation with pads, taps and rows in the padding
      // of a 2-D map, groups, and output channels short of a whole step.
      {"few columns: 1-D STFT k32 s16", 1, 1, 1, 64, 10, 1, 1, 32, 1, 16, 1, 1, 0, 0, 0, 0, true, true},
      {"few columns: 1-D k3 pad1, 20 channels", 2, 20, 1, 3, 7, 1, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, true, true},
      {"few columns: 1-D k3 s2 dil2 pads", 1, 5, 1, 6, 9, 1, 1, 3, 1, 2, 1, 2, 0, 2, 0, 1, false, true},
      {"few columns: 1-D 8 positions", 1, 3, 1, 10, 5, 1, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0, true, true},
      {"few columns: 3x3 pad1 on 2x2", 1, 3, 2, 2, 6, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"few columns: 3x3 dil2 pads wider on 2x3", 1, 2, 2, 3, 5, 1, 3, 3, 1, 1, 2, 2, 2, 1, 1, 2, false},
      {"few columns: grouped 1-D k3 s2", 1, 8, 1, 7, 12, 2, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1, true, true},
      // 1-D depthwise over 16 channels or more and rows of 16 outputs or
      // fewer, computed across the channels (conv_depthwise_short_1d):
      // Silero VAD's k5 pad2 on 8 and 1 positions, channel counts off the
      // vector width, stride, dilation, pads wider than the row, images.
      {"across channels: 1-D k5 pad2, 258 x 8", 1, 258, 1, 8, 258, 258, 1, 5, 1, 1, 1, 1, 0, 2, 0, 2, true, true},
      {"across channels: 1-D k5 pad2 on 1", 2, 32, 1, 1, 32, 32, 1, 5, 1, 1, 1, 1, 0, 2, 0, 2, true, true},
      {"across channels: 1-D k3 s2 dil2 asym", 1, 19, 1, 11, 19, 19, 1, 3, 1, 2, 1, 2, 0, 3, 0, 1, false, true},
      {"across channels: 1-D k4 pads wider", 3, 17, 1, 2, 17, 17, 1, 4, 1, 1, 1, 1, 0, 5, 0, 4, true, true},
      {"across channels: 1-D k2 s3, 16 outputs", 1, 40, 1, 47, 40, 40, 1, 2, 1, 3, 1, 1, 0, 0, 0, 0, false, true},
  };
  return cases;
}

}  // namespace

// Each Conv lowering (direct depthwise, per-group gemm, pointwise gemm, im2col
// gemm) against the definition, with and without bias, float and double.
TEST(OpsConvFamily, ConvMatchesNaiveReferenceFloat) {
  for (const ConvCase& c : conv_cases()) check_conv_case<float>(c);
}

// The same float cases with the implicit GEMM held off: the gemm lowering
// (its panels packed from X) on the shapes it would otherwise take.
TEST(OpsConvFamily, ConvMatchesNaiveReferenceFloatThroughTheGemm) {
  using epprof::rt::kernels::set_conv_direct_allowed;
  set_conv_direct_allowed(false);
  for (const ConvCase& c : conv_cases()) check_conv_case<float>(c);
  set_conv_direct_allowed(true);
}

TEST(OpsConvFamily, ConvMatchesNaiveReferenceDouble) {
  for (const ConvCase& c : conv_cases()) check_conv_case<double>(c);
}

// The cases named "direct" (cut by rows) and "flat" above reach the implicit
// GEMM wherever the CPU has AVX2 or AVX-512; so does a map of 8-column rows
// (by rows in 8-lane vectors, flat in 16-lane ones). A single short row,
// narrow strided maps and pointwise convs never do.
TEST(OpsConvFamily, WideRowsTakeTheDirectConv) {
  using namespace epprof::rt::kernels;
  const int64_t lanes = conv_direct_lanes();
  std::printf("[ info ] the implicit GEMM's vectors here: %lld floats\n", static_cast<long long>(lanes));
  auto resolve = [](const ConvCase& c) {
    WindowAttrs attrs;
    if (c.one_d) {
      attrs.strides = {c.sw}, attrs.dilations = {c.dw}, attrs.pads = {c.pl, c.pr};
      return resolve_conv(attrs, c.group, {c.N, c.C, c.W}, {c.M, c.C / c.group, c.KW}, "Conv");
    }
    attrs.strides = {c.sh, c.sw}, attrs.dilations = {c.dh, c.dw}, attrs.pads = {c.pt, c.pl, c.pb, c.pr};
    return resolve_conv(attrs, c.group, {c.N, c.C, c.H, c.W}, {c.M, c.C / c.group, c.KH, c.KW}, "Conv");
  };
  int direct = 0;
  for (const ConvCase& c : conv_cases()) {
    if (std::string(c.name).find("direct") == std::string::npos) continue;
    EXPECT_EQ(conv_direct_runs(resolve(c)), lanes > 0) << c.name;
    ++direct;
  }
  EXPECT_EQ(direct, 8);
  int flat = 0;
  for (const ConvCase& c : conv_cases()) {
    if (std::string(c.name).rfind("flat", 0) != 0) continue;
    EXPECT_EQ(conv_direct_runs(resolve(c)), lanes > 0) << c.name;
    ++flat;
  }
  EXPECT_EQ(flat, 4);
  // Stride 2 cannot be cut flat: rows of 4 outputs stay with the gemm.
  const ConvCase strided = {"4 columns, stride 2", 1, 4, 16, 8, 8, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true};
  EXPECT_FALSE(conv_direct_runs(resolve(strided)));
  // Held off, it takes none, wide rows included.
  const ConvCase wide = {"32-column rows", 1, 4, 8, 32, 8, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true};
  set_conv_direct_allowed(false);
  EXPECT_FALSE(conv_direct_runs(resolve(wide)));
  set_conv_direct_allowed(true);
  EXPECT_EQ(conv_direct_runs(resolve(wide)), lanes > 0);
  const ConvCase eight = {"8-column rows", 1, 4, 8, 8, 8, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true};
  EXPECT_EQ(conv_direct_runs(resolve(eight)), lanes > 0);
  // One row of 4 outputs fills too little of a flat cut's tile.
  const ConvCase four = {"one 4-column row", 1, 4, 1, 4, 8, 1, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, true};
  EXPECT_FALSE(conv_direct_runs(resolve(four)));
  const ConvCase pointwise = {"pointwise", 1, 4, 8, 32, 8, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true};
  EXPECT_FALSE(conv_direct_runs(resolve(pointwise)));
}
