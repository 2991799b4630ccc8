// MaxPool's two paths agree: without the Indices output the kernel takes a
// faster path (tap ranges found once, the inner run vectorised, windows one
// row high as one flat run); with it, the general one. Same Y, NaNs included, over every kind of geometry.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "epprof/rt/session.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;

namespace {

struct PoolCase {
  std::string label;
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool ceil_mode = false;
};

// Failures name the case, not its bytes.
void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.label; }

// MaxPool of `c` with outputs Y and, if `indices`, Indices.
std::string max_pool_model(const PoolCase& c, bool indices) {
  onnx::ModelProto m = make_model(12);
  add_io(m, true, "x", c.x);
  std::vector<std::string> outs = {"y"};
  if (indices) outs.push_back("i");
  auto* n = add_node(m, "MaxPool", "pool", {"x"}, outs);
  set_ints(n, "kernel_shape", c.kernel);
  if (!c.strides.empty()) set_ints(n, "strides", c.strides);
  if (!c.pads.empty()) set_ints(n, "pads", c.pads);
  if (!c.dilations.empty()) set_ints(n, "dilations", c.dilations);
  if (c.ceil_mode) set_int(n, "ceil_mode", 1);
  for (size_t k = 0; k < outs.size(); ++k) {
    auto* o = m.mutable_graph()->add_output();  // shapes left to inference
    o->set_name(outs[k]);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(k == 0 ? onnx::TensorProto::FLOAT
                                                                    : onnx::TensorProto::INT64);
  }
  return bytes(m);
}

class MaxPoolPaths : public ::testing::TestWithParam<PoolCase> {};

TEST_P(MaxPoolPaths, GiveTheSameValues) {
  const PoolCase& c = GetParam();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(shape_size(c.x)));
  for (auto& e : v) e = u(rng);
  // NaNs: one at the very start (a window's first tap) and a few inside.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  v[0] = nan;
  for (size_t i = 17; i < v.size(); i += 97) v[i] = nan;
  const std::map<std::string, Tensor> in = {{"x", Tensor::from_vector<float>(c.x, v)}};
  Session fast(Session::from_bytes(max_pool_model(c, false))), general(Session::from_bytes(max_pool_model(c, true)));
  const Tensor a = fast.run(in).at(0), b = general.run(in).at(0);
  ASSERT_EQ(a.shape(), b.shape());
  const auto av = a.to_vector<float>(), bv = b.to_vector<float>();
  for (size_t i = 0; i < av.size(); ++i)
    ASSERT_EQ(std::memcmp(&av[i], &bv[i], sizeof(float)), 0) << "element " << i << ": " << av[i] << " vs " << bv[i];
  // Without begin padding, the first window's first tap is the NaN: it stays.
  bool begin_padded = false;
  for (size_t d = 0; d < c.pads.size() / 2; ++d) begin_padded |= c.pads[d] != 0;
  if (!begin_padded) {
    EXPECT_TRUE(std::isnan(av[0])) << "a window's first tap is NaN: MaxPool keeps it";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, MaxPoolPaths,
    ::testing::Values(PoolCase{"k3s2p1", {1, 3, 17, 16}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},
                      PoolCase{"k2s2", {2, 2, 8, 8}, {2, 2}, {2, 2}, {}, {}},
                      PoolCase{"k3s1_uneven_pads", {1, 2, 9, 7}, {3, 3}, {1, 1}, {0, 2, 2, 1}, {}},
                      PoolCase{"dilated_ceil", {1, 2, 11, 10}, {3, 2}, {2, 3}, {1, 0, 1, 1}, {2, 2}, true},
                      PoolCase{"window_wider_than_pads", {1, 1, 3, 3}, {3, 5}, {1, 1}, {0, 2, 0, 2}, {}},
                      PoolCase{"one_d", {2, 3, 20}, {4}, {3}, {2, 1}, {}},
                      PoolCase{"three_d", {1, 2, 5, 6, 7}, {2, 3, 2}, {1, 2, 2}, {1, 1, 0, 0, 1, 1}, {}},
                      // Rows of 16 inner outputs or more: the vector run, for
                      // stride 1, 2 and a general one, its last vector
                      // overlapping the one before or not, reading up to the
                      // last element of the input.
                      PoolCase{"wide_k2s2", {1, 3, 4, 64}, {2, 2}, {2, 2}, {}, {}},
                      PoolCase{"wide_k3s2p1", {2, 2, 6, 70}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},
                      PoolCase{"wide_k3s1p1", {1, 2, 5, 40}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}},
                      PoolCase{"wide_s3_dilated", {1, 1, 4, 100}, {2, 3}, {1, 3}, {0, 0, 0, 2}, {1, 2}},
                      PoolCase{"wide_one_d", {2, 2, 50}, {4}, {2}, {1, 2}, {}},
                      PoolCase{"wide_window_mostly_padding", {1, 1, 2, 48}, {5, 2}, {3, 2}, {3, 0, 3, 0}, {}},
                      // A window of more input rows (5 x 4) than the vector
                      // run takes (16): the tap-by-tap run.
                      PoolCase{"wide_three_d_many_rows", {1, 2, 6, 5, 40}, {5, 4, 2}, {1, 1, 2}, {}, {}},
                      // Windows one row high, side by side, covering the
                      // rows exactly: one flat run over whole planes (split
                      // by planes when small) or over each plane's rows (a
                      // split by rows); and a near miss, an odd row width.
                      PoolCase{"flat_1x2s2", {1, 5, 6, 16}, {1, 2}, {1, 2}, {}, {}},
                      PoolCase{"flat_1x2s2_split_by_planes", {1, 48, 32, 16}, {1, 2}, {1, 2}, {}, {}},
                      PoolCase{"flat_1x2s2_split_by_rows", {1, 3, 64, 128}, {1, 2}, {1, 2}, {}, {}},
                      PoolCase{"flat_1x2s3_dilated", {2, 2, 5, 24}, {1, 2}, {1, 3}, {}, {1, 2}},
                      PoolCase{"flat_one_d", {2, 3, 40}, {2}, {2}, {}, {}},
                      PoolCase{"flat_three_d", {1, 2, 3, 4, 12}, {1, 1, 3}, {1, 1, 3}, {}, {}},
                      PoolCase{"not_flat_odd_rows", {1, 2, 5, 9}, {1, 2}, {1, 2}, {}, {}}),
    [](const auto& p) { return p.param.label; });

}  // namespace
