// Hand-checked kernel results through small graphs (ONNX's own test data is
// covered by runtime_conformance).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "epprof/rt/session.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;

namespace {

}  // namespace

TEST(Kernels, BroadcastAddAndMul) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "a", {2, 3});
  add_io(m, true, "b", {3});
  add_io(m, true, "c", {2, 1});
  add_node(m, "Add", "add", {"a", "b"}, {"s"});
  add_node(m, "Mul", "mul", {"s", "c"}, {"y"});
  add_io(m, false, "y", {2, 3});
  Session s = Session::from_bytes(bytes(m));
  auto y = s.run({{"a", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                  {"b", Tensor::from_vector<float>({3}, {10, 20, 30})},
                  {"c", Tensor::from_vector<float>({2, 1}, {1, -1})}})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{11, 22, 33, -14, -25, -36}));
}

TEST(Kernels, ConvWithPaddingAndStride) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {1, 1, 3, 3});
  add_float_init(m, "w", {1, 1, 2, 2}, {1, 1, 1, 1});
  auto* c = add_node(m, "Conv", "conv", {"x", "w"}, {"y"});
  set_ints(c, "pads", {1, 1, 0, 0});
  set_ints(c, "strides", {2, 2});
  add_io(m, false, "y", {1, 1, 2, 2});
  Session s = Session::from_bytes(bytes(m));
  auto y = s.run({{"x", Tensor::from_vector<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}})[0];
  // Windows over the padded input rows/cols {-1,0},{1,2}: [1], [2+3], [4+7], [5+6+8+9]
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 5, 11, 28}));
}

TEST(Kernels, MatMulBatchedBroadcast) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "a", {2, 1, 2});
  add_io(m, true, "b", {2, 2});
  add_node(m, "MatMul", "mm", {"a", "b"}, {"y"});
  add_io(m, false, "y", {2, 1, 2});
  Session s = Session::from_bytes(bytes(m));
  auto y = s.run({{"a", Tensor::from_vector<float>({2, 1, 2}, {1, 2, 3, 4})},
                  {"b", Tensor::from_vector<float>({2, 2}, {1, 0, 1, 1})}})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 2, 7, 4}));
}

// A float MatMul or Gemm whose B is an initializer multiplies by B packed
// once when the session is created (Kernel::prepare); fed as an input, the
// same B is packed on each call. Both give the product, on shapes that take
// the runtime's sgemm: a batched A (all its rows in one product), B^T with
// alpha and a bias, and a single row (OpenBLAS's gemv either way).
TEST(Kernels, MatMulAndGemmOnAConstantWeightMatchTheWeightFedAsAnInput) {
  const int64_t K = 40, N = 50;
  std::vector<float> w(static_cast<size_t>(K * N)), wt(w.size()), bias(static_cast<size_t>(N)),
      a(static_cast<size_t>(2 * 3 * K)), row(static_cast<size_t>(K));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 37 % 101) - 50) / 50.0f;
  for (size_t i = 0; i < wt.size(); ++i) wt[i] = float(int(i * 53 % 97) - 48) / 48.0f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = float(i) / 10.0f;
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i * 29 % 89) - 44) / 44.0f;
  for (size_t i = 0; i < row.size(); ++i) row[i] = a[i];
  auto model = [&](bool weights_as_inputs) {
    onnx::ModelProto m = make_model();
    add_io(m, true, "a", {2, 3, K});
    add_io(m, true, "a2", {6, K});
    add_io(m, true, "r", {1, K});
    if (weights_as_inputs) {
      add_io(m, true, "w", {K, N});
      add_io(m, true, "wt", {N, K});
    } else {
      add_float_init(m, "w", {K, N}, w);
      add_float_init(m, "wt", {N, K}, wt);
    }
    add_float_init(m, "bias", {N}, bias);
    add_node(m, "MatMul", "mm", {"a", "w"}, {"y"});
    auto* g = add_node(m, "Gemm", "gemm", {"a2", "wt", "bias"}, {"z"});
    set_int(g, "transB", 1);
    set_float(g, "alpha", 0.5f);
    add_node(m, "MatMul", "mm_row", {"r", "w"}, {"v"});
    add_io(m, false, "y", {2, 3, N});
    add_io(m, false, "z", {6, N});
    add_io(m, false, "v", {1, N});
    return Session::from_bytes(bytes(m));
  };
  std::map<std::string, Tensor> feeds = {{"a", Tensor::from_vector<float>({2, 3, K}, a)},
                                         {"a2", Tensor::from_vector<float>({6, K}, a)},
                                         {"r", Tensor::from_vector<float>({1, K}, row)}};
  const auto packed = model(false).run(feeds);
  feeds.emplace("w", Tensor::from_vector<float>({K, N}, w));
  feeds.emplace("wt", Tensor::from_vector<float>({N, K}, wt));
  const auto fed = model(true).run(feeds);
  ASSERT_EQ(packed.size(), 3u);
  for (size_t o = 0; o < 3; ++o) {
    ASSERT_EQ(packed[o].shape(), fed[o].shape()) << "output " << o;
    const auto x = packed[o].to_vector<float>(), y = fed[o].to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 1e-5f * (1 + std::abs(y[i]))) << o << ":" << i;
  }
  // And the product itself, for one element of each.
  double y0 = 0, z0 = bias[0];
  for (size_t p = 0; p < size_t(K); ++p) y0 += double(a[p]) * w[p * size_t(N)], z0 += 0.5 * a[p] * wt[p];
  EXPECT_NEAR(packed[0].to_vector<float>()[0], y0, 1e-5);
  EXPECT_NEAR(packed[1].to_vector<float>()[0], z0, 1e-5);
  EXPECT_NEAR(packed[2].to_vector<float>()[0], y0, 1e-5);
}

TEST(Kernels, ShapeGatherUnsqueezeConcatReshapeInt64) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2, 3, 4});
  auto* idx = m.mutable_graph()->add_initializer();
  idx->set_name("idx");
  idx->set_data_type(onnx::TensorProto::INT64);
  idx->add_int64_data(-1);  // scalar index: last dim
  auto* ax = m.mutable_graph()->add_initializer();
  ax->set_name("axes");
  ax->set_data_type(onnx::TensorProto::INT64);
  ax->add_dims(1);
  ax->add_int64_data(0);
  add_node(m, "Shape", "shape", {"x"}, {"s"});
  add_node(m, "Gather", "gather", {"s", "idx"}, {"last"});
  add_node(m, "Unsqueeze", "unsq", {"last", "axes"}, {"last1"});
  add_node(m, "Concat", "concat", {"minus1", "last1"}, {"new_shape"})->add_attribute()->set_name("axis");
  m.mutable_graph()->mutable_node(3)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  m.mutable_graph()->mutable_node(3)->mutable_attribute(0)->set_i(0);
  auto* minus1 = m.mutable_graph()->add_initializer();
  minus1->set_name("minus1");
  minus1->set_data_type(onnx::TensorProto::INT64);
  minus1->add_dims(1);
  minus1->add_int64_data(-1);
  add_node(m, "Reshape", "reshape", {"x", "new_shape"}, {"y"});
  add_io(m, false, "new_shape", {2}, onnx::TensorProto::INT64);
  add_io(m, false, "y", {6, 4});
  Session s = Session::from_bytes(bytes(m));
  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i);
  auto out = s.run({{"x", Tensor::from_vector<float>({2, 3, 4}, xs)}});
  EXPECT_EQ(out[0].to_vector<int64_t>(), (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(out[1].shape(), (Shape{6, 4}));
  EXPECT_EQ(out[1].to_vector<float>(), xs);
}

TEST(Kernels, SupportedOpListCoversTheIssue) {
  std::set<std::string> ops;
  for (const auto& o : cpu_supported_ops()) ops.insert(o.op_type);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Erf", "Tanh", "Sigmoid", "Relu",
                         "LeakyRelu", "Softmax", "MatMul", "Gemm", "Conv", "MaxPool", "AveragePool",
                         "GlobalAveragePool", "BatchNormalization", "LayerNormalization", "Flatten", "Reshape",
                         "Transpose", "Concat", "Identity", "Constant", "Shape", "Gather", "Unsqueeze", "Squeeze",
                         "ReduceMean", "Cast"})
    EXPECT_TRUE(ops.count(op)) << op;
}
