// The runtime's cost model against operation counts computed independently:
// naive loops that count each multiply and add as the reference kernels
// would perform them.
#include <gtest/gtest.h>

#include "epprof/rt/cost_model.h"

namespace epprof::rt {
namespace {

Node make_node(const std::string& op) {
  Node n;
  n.op_type = op;
  n.name = op + "_0";
  return n;
}

void set_int(Node* n, const char* key, int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  n->attributes[key] = a;
}
void set_float(Node* n, const char* key, float v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  n->attributes[key] = a;
}

double bytes_of(const std::vector<const Tensor*>& in, const std::vector<Tensor>& out) {
  double b = 0;
  for (const Tensor* t : in)
    if (t) b += double(t->size()) * double(element_size(t->dtype()));
  for (const Tensor& t : out) b += double(t.size()) * double(element_size(t.dtype()));
  return b;
}

TEST(CostModel, MatMulBatched) {
  const int64_t B = 3, M = 5, K = 7, N = 4;
  Tensor a(DataType::Float, {B, M, K}), b(DataType::Float, {K, N}), y(DataType::Float, {B, M, N});
  double ops = 0;
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k) ops += 2;  // one multiply, one add
  std::vector<const Tensor*> in{&a, &b};
  std::vector<Tensor> out{y};
  const NodeCost c = node_cost(make_node("MatMul"), in, out);
  EXPECT_TRUE(c.flops_exact);
  EXPECT_EQ(c.flops, ops);
  EXPECT_EQ(c.bytes, bytes_of(in, out));
  EXPECT_EQ(c.bytes, 4.0 * (B * M * K + K * N + B * M * N));
}

TEST(CostModel, GemmWithTransposeAlphaBetaAndBias) {
  const int64_t M = 6, K = 9, N = 5;
  Tensor a(DataType::Float, {K, M}), b(DataType::Float, {K, N}), cbias(DataType::Float, {N}),
      y(DataType::Float, {M, N});
  Node n = make_node("Gemm");
  set_int(&n, "transA", 1);
  set_float(&n, "alpha", 0.5f);
  set_float(&n, "beta", 2.0f);
  double ops = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      for (int64_t k = 0; k < K; ++k) ops += 2;
      ops += 1;  // alpha * acc
      ops += 1;  // beta * c
      ops += 1;  // + beta * c
    }
  std::vector<const Tensor*> in{&a, &b, &cbias};
  std::vector<Tensor> out{y};
  NodeCost c = node_cost(n, in, out);
  EXPECT_TRUE(c.flops_exact);
  EXPECT_EQ(c.flops, ops);
  EXPECT_EQ(c.bytes, bytes_of(in, out));

  // Defaults (alpha = beta = 1), no C: the product only.
  Node plain = make_node("Gemm");
  std::vector<const Tensor*> in2{&b, &b, nullptr};
  Tensor y2(DataType::Float, {K, K});
  // b is [K, N]; with transB = 1: [K, N] x [N, K] -> [K, K], inner N.
  set_int(&plain, "transB", 1);
  std::vector<Tensor> out2{y2};
  c = node_cost(plain, in2, out2);
  EXPECT_EQ(c.flops, 2.0 * K * K * N);
}

TEST(CostModel, ConvGroupedWithBias) {
  const int64_t N = 2, C = 8, G = 2, M = 6, H = 10, W = 12, KH = 3, KW = 3, OH = 8, OW = 10;
  Tensor x(DataType::Float, {N, C, H, W}), w(DataType::Float, {M, C / G, KH, KW}), bias(DataType::Float, {M}),
      y(DataType::Float, {N, M, OH, OW});
  Node n = make_node("Conv");
  set_int(&n, "group", G);
  double ops = 0;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          for (int64_t c = 0; c < C / G; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) ops += 2;
          ops += 1;  // bias
        }
  std::vector<const Tensor*> in{&x, &w, &bias};
  std::vector<Tensor> out{y};
  const NodeCost c = node_cost(n, in, out);
  EXPECT_TRUE(c.flops_exact);
  EXPECT_EQ(c.flops, ops);
  EXPECT_EQ(c.bytes, bytes_of(in, out));
}

TEST(CostModel, ElementwiseBroadcastAndUnary) {
  Tensor a(DataType::Float, {4, 1, 3}), b(DataType::Float, {5, 1}), y(DataType::Float, {4, 5, 3});
  std::vector<const Tensor*> in{&a, &b};
  std::vector<Tensor> out{y};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"}) {
    const NodeCost c = node_cost(make_node(op), in, out);
    EXPECT_TRUE(c.flops_exact) << op;
    EXPECT_EQ(c.flops, 4.0 * 5 * 3) << op;  // one per broadcast output element
    EXPECT_EQ(c.bytes, 4.0 * (12 + 5 + 60)) << op;
  }
  Tensor x(DataType::Float, {2, 8}), r(DataType::Float, {2, 8});
  std::vector<const Tensor*> in1{&x};
  std::vector<Tensor> out1{r};
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Erf"}) {
    const NodeCost c = node_cost(make_node(op), in1, out1);
    EXPECT_TRUE(c.flops_exact) << op;
    EXPECT_EQ(c.flops, 16.0) << op;
  }
  const NodeCost reshape = node_cost(make_node("Reshape"), in1, out1);
  EXPECT_TRUE(reshape.flops_exact);
  EXPECT_EQ(reshape.flops, 0.0);
  EXPECT_EQ(reshape.bytes, 2.0 * 16 * 4);
  const NodeCost other = node_cost(make_node("Softmax"), in1, out1);
  EXPECT_FALSE(other.flops_exact);
}

}  // namespace
}  // namespace epprof::rt
