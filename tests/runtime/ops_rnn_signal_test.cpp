// Hand-checked results and error messages of the rnn signal kernels, through
// small graphs (ONNX's own test data is covered by runtime_conformance).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "epprof/rt/error.h"
#include "epprof/rt/session.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;

namespace {

void expect_near(const Tensor& t, const std::vector<float>& want) {
  ASSERT_EQ(t.size(), static_cast<int64_t>(want.size())) << t.description();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data<float>()[i], want[i], 1e-5f) << "element " << i;
}

// Loading and running must fail with a message containing `what`.
void expect_error(const onnx::ModelProto& m, const std::map<std::string, Tensor>& feeds, const std::string& what) {
  try {
    Session s = Session::from_bytes(bytes(m));
    s.run(feeds);
    ADD_FAILURE() << "no error, expected one mentioning '" << what << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

// RNN with hidden_size 1 and input_size 1: X [3, 2, 1], W = 1, R = 0.5, no bias.
onnx::ModelProto scalar_rnn(const std::string& direction, onnx::NodeProto** node = nullptr) {
  onnx::ModelProto m = make_model(14);
  add_io(m, true, "x", {3, 2, 1});
  add_io(m, true, "lens", {2}, onnx::TensorProto::INT32);
  add_float_init(m, "w", {1, 1, 1}, {1});
  add_float_init(m, "r", {1, 1, 1}, {0.5f});
  auto* n = add_node(m, "RNN", "rnn", {"x", "w", "r", "", "lens"}, {"y", "y_h"});
  set_int(n, "hidden_size", 1);
  set_string(n, "direction", direction);
  add_io(m, false, "y", {3, 1, 2, 1});
  add_io(m, false, "y_h", {1, 2, 1});
  if (node) *node = n;
  return m;
}

const std::map<std::string, Tensor> kScalarRnnFeeds = {
    {"x", Tensor::from_vector<float>({3, 2, 1}, {1, 10, 2, 20, 3, 30})},
    {"lens", Tensor::from_vector<int32_t>({2}, {3, 2})}};

}  // namespace

TEST(OpsRnn, ReverseWithSequenceLengthsAndAffine) {
  onnx::NodeProto* n = nullptr;
  onnx::ModelProto m = scalar_rnn("reverse", &n);
  set_strings(n, "activations", {"Affine"});
  set_floats(n, "activation_alpha", {2});
  set_floats(n, "activation_beta", {1});
  // h = 2 * (x + 0.5 h_prev) + 1, each row walked back from its own last step:
  // row 0 (length 3) reads x = 3, 2, 1 -> 7, 12, 15; row 1 (length 2) reads 20, 10 -> 41, 62.
  auto out = Session::from_bytes(bytes(m)).run(kScalarRnnFeeds);
  expect_near(out[0], {15, 62, 12, 41, 7, 0});  // [t][dir][batch]: row 1 is zero past its length
  expect_near(out[1], {15, 62});
}

TEST(OpsRnn, BidirectionalActivationsConsumeAlphaBetaInOrder) {
  onnx::ModelProto m = make_model(14);
  add_io(m, true, "x", {1, 1, 1});
  add_float_init(m, "w", {2, 1, 1}, {1, 1});
  add_float_init(m, "r", {2, 1, 1}, {0, 0});
  auto* n = add_node(m, "RNN", "rnn", {"x", "w", "r"}, {"", "y_h"});
  set_int(n, "hidden_size", 1);
  set_string(n, "direction", "bidirectional");
  // LeakyRelu takes alpha 0.2; HardSigmoid takes the next alpha (0.3) and the first beta (0.4).
  set_strings(n, "activations", {"LeakyRelu", "hardsigmoid"});
  set_floats(n, "activation_alpha", {0.2f, 0.3f});
  set_floats(n, "activation_beta", {0.4f});
  add_io(m, false, "y_h", {2, 1, 1});
  auto out = Session::from_bytes(bytes(m)).run({{"x", Tensor::from_vector<float>({1, 1, 1}, {-1})}});
  expect_near(out[0], {-0.2f, 0.1f});
}

TEST(OpsRnn, LstmInputForgetCouplesForgetToInputGate) {
  // Zero weights; forget bias 5. Without coupling f = sigmoid(5); with it f = 1 - i = 0.5.
  const auto run = [](int64_t input_forget) {
    onnx::ModelProto m = make_model(14);
    add_io(m, true, "x", {1, 1, 1});
    add_float_init(m, "w", {1, 4, 1}, {0, 0, 0, 0});
    add_float_init(m, "r", {1, 4, 1}, {0, 0, 0, 0});
    add_float_init(m, "b", {1, 8}, {0, 0, 5, 0, 0, 0, 0, 0});  // Wb[iofc], Rb[iofc]
    add_float_init(m, "c0", {1, 1, 1}, {2});
    auto* n = add_node(m, "LSTM", "lstm", {"x", "w", "r", "b", "", "", "c0"}, {"", "y_h", "y_c"});
    set_int(n, "hidden_size", 1);
    set_int(n, "input_forget", input_forget);
    add_io(m, false, "y_h", {1, 1, 1});
    add_io(m, false, "y_c", {1, 1, 1});
    return Session::from_bytes(bytes(m)).run({{"x", Tensor::from_vector<float>({1, 1, 1}, {0})}});
  };
  // i = o = 0.5, c~ = tanh(0) = 0: C = f * 2, H = 0.5 * tanh(C).
  const float f = 1.0f / (1.0f + std::exp(-5.0f));
  auto plain = run(0);
  expect_near(plain[1], {2 * f});
  expect_near(plain[0], {0.5f * std::tanh(2 * f)});
  auto coupled = run(1);
  expect_near(coupled[1], {1.0f});
  expect_near(coupled[0], {0.5f * std::tanh(1.0f)});
}

TEST(OpsRnn, RejectsBadAttributesAndInputs) {
  onnx::NodeProto* n = nullptr;
  onnx::ModelProto m = scalar_rnn("sideways");
  expect_error(m, kScalarRnnFeeds, "direction");
  m = scalar_rnn("forward", &n);
  set_strings(n, "activations", {"Tanh", "Tanh"});
  expect_error(m, kScalarRnnFeeds, "activations");
  m = scalar_rnn("forward", &n);
  set_strings(n, "activations", {"Swish"});
  expect_error(m, kScalarRnnFeeds, "Swish");
  m = scalar_rnn("forward", &n);
  set_float(n, "clip", -1);
  expect_error(m, kScalarRnnFeeds, "clip");
  m = scalar_rnn("forward");
  expect_error(m, {{"x", kScalarRnnFeeds.at("x")}, {"lens", Tensor::from_vector<int32_t>({2}, {4, 1})}},
               "sequence_lens");
  m = scalar_rnn("forward", &n);
  n->set_input(1, "w2");  // W of the wrong input size
  add_float_init(m, "w2", {1, 1, 2}, {1, 1});
  expect_error(m, kScalarRnnFeeds, "input W");
}

TEST(OpsSignal, OnesidedDftAndDftLength) {
  onnx::ModelProto m = make_model(17);
  add_io(m, true, "x", {1, 4, 1});
  add_io(m, true, "n", {}, onnx::TensorProto::INT64);
  auto* full = add_node(m, "DFT", "dft", {"x"}, {"y"});
  set_int(full, "onesided", 1);
  add_node(m, "DFT", "dft2", {"x", "n"}, {"z"});
  add_io(m, false, "y", {1, 3, 2});
  add_io(m, false, "z", {1, 2, 2});
  auto out = Session::from_bytes(bytes(m)).run({{"x", Tensor::from_vector<float>({1, 4, 1}, {1, 2, 3, 4})},
                                                {"n", Tensor::scalar<int64_t>(2)}});
  expect_near(out[0], {10, 0, -2, 2, -2, 0});  // bins 0..2 of DFT([1,2,3,4])
  expect_near(out[1], {3, 0, -1, 0});          // DFT([1,2]): the signal truncated to dft_length
}

TEST(OpsSignal, WindowsPeriodicAndSymmetric) {
  onnx::ModelProto m = make_model(17);
  add_io(m, true, "n4", {}, onnx::TensorProto::INT32);
  add_io(m, true, "n3", {}, onnx::TensorProto::INT32);
  add_node(m, "HannWindow", "hann", {"n4"}, {"p"});
  set_int(add_node(m, "HannWindow", "hann_sym", {"n3"}, {"s"}), "periodic", 0);
  set_int(add_node(m, "HammingWindow", "hamming", {"n4"}, {"h"}), "output_datatype", onnx::TensorProto::DOUBLE);
  add_io(m, false, "p", {4});
  add_io(m, false, "s", {3});
  add_io(m, false, "h", {4}, onnx::TensorProto::DOUBLE);
  auto out = Session::from_bytes(bytes(m)).run({{"n4", Tensor::scalar<int32_t>(4)}, {"n3", Tensor::scalar<int32_t>(3)}});
  expect_near(out[0], {0, 0.5f, 1, 0.5f});
  expect_near(out[1], {0, 1, 0});
  ASSERT_EQ(out[2].dtype(), DataType::Double);
  const double a0 = 25.0 / 46.0;
  const std::vector<double> want = {a0 - (1 - a0), a0, a0 + (1 - a0), a0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[2].data<double>()[i], want[i], 1e-12);
}

TEST(OpsSignal, RejectsBadAttributesAndInputs) {
  {
    onnx::ModelProto m = make_model(17);
    add_io(m, true, "x", {1, 4, 2});
    set_int(add_node(m, "DFT", "dft", {"x"}, {"y"}), "onesided", 1);
    add_io(m, false, "y", {1, 3, 2});
    expect_error(m, {{"x", Tensor(DataType::Float, {1, 4, 2})}}, "onesided=1 needs a real input");
  }
  {
    onnx::ModelProto m = make_model(17);
    add_io(m, true, "x", {1, 4, 1});
    set_int(add_node(m, "DFT", "dft", {"x"}, {"y"}), "axis", 2);
    add_io(m, false, "y", {1, 4, 2});
    expect_error(m, {{"x", Tensor(DataType::Float, {1, 4, 1})}}, "'axis' 2 is out of range");
  }
  {
    onnx::ModelProto m = make_model(17);
    add_io(m, true, "x", {1, 16, 1});
    add_io(m, true, "step", {}, onnx::TensorProto::INT64);
    add_node(m, "STFT", "stft", {"x", "step"}, {"y"});
    add_io(m, false, "y", {1, 1, 1, 2});
    expect_error(m, {{"x", Tensor(DataType::Float, {1, 16, 1})}, {"step", Tensor::scalar<int64_t>(4)}},
                 "window or a frame_length");
  }
  {
    onnx::ModelProto m = make_model(17);
    add_io(m, true, "n", {}, onnx::TensorProto::INT32);
    set_int(add_node(m, "HannWindow", "hann", {"n"}, {"y"}), "output_datatype", onnx::TensorProto::BOOL);
    add_io(m, false, "y", {4}, onnx::TensorProto::BOOL);
    expect_error(m, {{"n", Tensor::scalar<int32_t>(4)}}, "output_datatype");
  }
  {
    onnx::ModelProto m = make_model(17);
    for (const char* name : {"bins", "len", "rate"}) add_io(m, true, name, {}, onnx::TensorProto::INT32);
    add_io(m, true, "lo", {});
    add_io(m, true, "hi", {});
    add_node(m, "MelWeightMatrix", "mel", {"bins", "len", "rate", "lo", "hi"}, {"y"});
    add_io(m, false, "y", {9, 8});
    expect_error(m,
                 {{"bins", Tensor::scalar<int32_t>(8)}, {"len", Tensor::scalar<int32_t>(16)},
                  {"rate", Tensor::scalar<int32_t>(8000)}, {"lo", Tensor::scalar<float>(0)},
                  {"hi", Tensor::scalar<float>(16000)}},
                 "Nyquist");
  }
}
