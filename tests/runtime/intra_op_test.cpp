// The intra-op pool (src/intra_op.*): parallel_for's contract, and Conv,
// MatMul and Gemm split across it giving the 1-thread results. Multi-threaded:
// ctest's runtime_intra_op runs these again under ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "epprof/rt/session.h"
#include "intra_op.h"
#include "kernels/element_split.h"
#include "test_models.h"

namespace {

using namespace epprof::rt;
using epprof::rt::detail::IntraOpPool;
using epprof::rt::detail::IntraOpScope;
using epprof::rt::detail::intra_op_ranges;
using epprof::rt::detail::intra_op_threads;
using epprof::rt::detail::parallel_for;
using epprof::rt::detail::parallel_for_ranges;
namespace rtt = epprof::rt::testing;

// Runs parallel_for(n) and checks that every index ran exactly once.
void expect_each_index_once(int64_t n) {
  std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
  parallel_for(n, [&](int64_t i) { runs[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed); });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << "index " << i << " of " << n;
}

TEST(IntraOp, EveryIndexRunsExactlyOnce) {
  for (int threads : {2, 3, 8}) {
    IntraOpPool pool(threads);
    const IntraOpScope scope(&pool);
    EXPECT_EQ(intra_op_threads(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1000}) expect_each_index_once(n);
  }
}

TEST(IntraOp, RangesCoverEveryUnitOnce) {
  IntraOpPool pool(3);
  const IntraOpScope scope(&pool);
  for (int64_t units : {1, 2, 5, 6, 100}) {
    const int64_t ranges = intra_op_ranges(units, 2);
    EXPECT_EQ(ranges, std::min<int64_t>(units, 6));
    std::vector<std::atomic<int>> covered(static_cast<size_t>(units)), seen(static_cast<size_t>(ranges));
    parallel_for_ranges(units, ranges, [&](int64_t r, int64_t begin, int64_t end) {
      EXPECT_LT(begin, end);
      EXPECT_LE(end - begin, (units + ranges - 1) / ranges);
      seen[static_cast<size_t>(r)].fetch_add(1);
      for (int64_t u = begin; u < end; ++u) covered[static_cast<size_t>(u)].fetch_add(1);
    });
    for (auto& r : seen) EXPECT_EQ(r.load(), 1);
    for (int64_t u = 0; u < units; ++u) EXPECT_EQ(covered[static_cast<size_t>(u)].load(), 1) << u;
  }
}

TEST(IntraOp, WithoutAPoolItIsAPlainLoopOnTheCaller) {
  EXPECT_EQ(intra_op_threads(), 1);
  const auto self = std::this_thread::get_id();
  std::vector<int64_t> order;
  parallel_for(5, [&](int64_t i) {
    EXPECT_EQ(std::this_thread::get_id(), self);
    order.push_back(i);
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(intra_op_ranges(10, 4), 1);
}

TEST(IntraOp, WorkersTakeTasks) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU";
  IntraOpPool pool(2);
  const IntraOpScope scope(&pool);
  std::mutex mu;
  std::set<std::thread::id> ran_on;
  // Tasks long enough that the worker wakes before the caller has taken them all.
  parallel_for(16, [&](int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard<std::mutex> lock(mu);
    ran_on.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ran_on.size(), 2u);
}

TEST(IntraOp, TheFirstExceptionReachesTheCallerAndThePoolStaysUsable) {
  IntraOpPool pool(3);
  const IntraOpScope scope(&pool);
  std::atomic<int> started{0};
  try {
    parallel_for(1000, [&](int64_t i) {
      started.fetch_add(1);
      if (i == 3) throw std::runtime_error("task 3 failed");
      // Long enough that the failure is recorded while few tasks have been taken.
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "task 3 failed");
  }
  EXPECT_LT(started.load(), 1000) << "the tasks not taken when one failed should be skipped";
  // Every task throws: one exception comes back, none is lost in a worker.
  for (int round = 0; round < 20; ++round)
    EXPECT_THROW(parallel_for(8, [](int64_t i) { throw std::out_of_range(std::to_string(i)); }), std::out_of_range);
  expect_each_index_once(100);
}

TEST(IntraOp, NestedCallsRunOnTheTasksThread) {
  IntraOpPool pool(2);
  const IntraOpScope scope(&pool);
  std::atomic<int> inner{0};
  parallel_for(8, [&](int64_t) {
    EXPECT_EQ(intra_op_threads(), 1);  // a kernel called from a task does not split again
    const auto self = std::this_thread::get_id();
    parallel_for(4, [&](int64_t) {
      EXPECT_EQ(std::this_thread::get_id(), self);
      inner.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 32);
  EXPECT_EQ(intra_op_threads(), 2);  // the scope is back after the job
}

TEST(IntraOp, ConcurrentCallersShareOnePool) {
  // As the parallel executor's threads, or two runs of one session, do: a
  // caller finding the pool busy runs its tasks alone.
  IntraOpPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      const IntraOpScope scope(&pool);
      for (int round = 0; round < 200; ++round) {
        std::vector<std::atomic<int>> runs(16);
        parallel_for(16, [&](int64_t i) { runs[static_cast<size_t>(i)].fetch_add(1); });
        for (auto& r : runs) bad.fetch_add(r.load() != 1);
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// ---- kernels split across the pool give the 1-thread results ----------------

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

Tensor random_tensor(const Shape& shape, unsigned seed) {
  Tensor t(DataType::Float, shape);
  const auto v = random_values(static_cast<size_t>(t.size()), seed);
  std::copy(v.begin(), v.end(), t.mutable_data<float>());
  return t;
}

size_t elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return static_cast<size_t>(n);
}

// Runs `model` on `feeds` with intra_op_threads 1, 2 and 3 (and under the
// parallel executor with 2) and expects the same outputs within 1e-5 of
// the largest magnitude.
void expect_same_for_all_thread_counts(const std::string& model, const std::map<std::string, Tensor>& feeds) {
  SessionOptions one;
  one.intra_op_threads = 1;
  const std::vector<Tensor> want = Session::from_bytes(model, one).run(feeds);
  std::vector<SessionOptions> others(3);
  others[0].intra_op_threads = 2;
  others[1].intra_op_threads = 3;
  others[2].intra_op_threads = 2;
  others[2].executor = ExecutorKind::Parallel;
  others[2].inter_op_threads = 2;
  for (const SessionOptions& so : others) {
    Session s = Session::from_bytes(model, so);
    for (int run = 0; run < 2; ++run) {
      const std::vector<Tensor> got = s.run(feeds);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < want.size(); ++o) {
        ASSERT_EQ(got[o].shape(), want[o].shape());
        const float* g = got[o].data<float>();
        const float* w = want[o].data<float>();
        float scale = 1e-3f;
        for (int64_t i = 0; i < want[o].size(); ++i) scale = std::max(scale, std::fabs(w[i]));
        for (int64_t i = 0; i < want[o].size(); ++i)
          ASSERT_LE(std::fabs(g[i] - w[i]), 1e-5f * scale)
              << "output " << o << " element " << i << " with intra_op_threads " << so.intra_op_threads
              << (so.executor == ExecutorKind::Parallel ? " (parallel executor)" : "");
      }
    }
  }
}

struct ConvCase {
  const char* what;
  int64_t n, c, h, w, m, group, k, stride, pad;
};

TEST(IntraOpKernels, ConvMatchesOneThread) {
  const ConvCase cases[] = {
      {"several im2col tiles per image, 2 images", 2, 32, 48, 48, 16, 1, 3, 1, 1},
      {"cnn's 32x32 maps", 1, 32, 32, 32, 32, 1, 3, 1, 1},
      {"groups, stride 2, 3 images", 3, 16, 21, 19, 24, 4, 3, 2, 1},
      {"depthwise", 2, 24, 30, 30, 24, 24, 3, 1, 1},
      {"depthwise, 2 outputs per channel, stride 2", 1, 12, 33, 31, 24, 12, 5, 2, 2},
      {"depthwise split by rows, 2 outputs per channel, stride 2", 1, 16, 70, 62, 32, 16, 5, 2, 2},
      // Planes under 16 KB split by planes (detail::split_by_planes).
      {"depthwise on small planes, ppocr_v4_rec's", 1, 240, 12, 40, 240, 240, 3, 1, 1},
      {"small planes, 72 channels in blocks of 40 and 32", 1, 72, 32, 8, 72, 1, 3, 1, 1},
      {"small planes, 1x1, 96 channels", 1, 64, 12, 4, 96, 1, 1, 1, 0},
      {"pointwise, 2 images", 2, 16, 30, 30, 40, 1, 1, 1, 0},
      {"pointwise with groups", 1, 32, 17, 17, 64, 2, 1, 1, 0},
      {"one output row", 1, 8, 3, 50, 8, 1, 3, 1, 0},
      // Split for its data alone (kMinSplitBytes), each range filling its
      // own rows with the bias.
      {"little arithmetic on much data, groups, 2 images", 2, 16, 64, 64, 8, 2, 1, 2, 0},
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.what);
    const int64_t oh = (c.h + 2 * c.pad - c.k) / c.stride + 1, ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
    auto m = rtt::make_model();
    rtt::add_io(m, true, "X", {c.n, c.c, c.h, c.w});
    rtt::add_io(m, false, "Y", {c.n, c.m, oh, ow});
    const std::vector<int64_t> wdims{c.m, c.c / c.group, c.k, c.k};
    rtt::add_float_init(m, "W", wdims, random_values(elements(wdims), 1));
    rtt::add_float_init(m, "B", {c.m}, random_values(static_cast<size_t>(c.m), 2));
    auto* node = rtt::add_node(m, "Conv", "conv", {"X", "W", "B"}, {"Y"});
    rtt::set_ints(node, "kernel_shape", {c.k, c.k});
    rtt::set_ints(node, "strides", {c.stride, c.stride});
    rtt::set_ints(node, "pads", {c.pad, c.pad, c.pad, c.pad});
    rtt::set_int(node, "group", c.group);
    expect_same_for_all_thread_counts(rtt::bytes(m), {{"X", random_tensor({c.n, c.c, c.h, c.w}, 3)}});
  }
}

// A conv with fewer output rows than threads and work enough to split (or
// weights enough) splits its output channels into blocks (each block's
// channels of each range of rows): audio models' STFTs as 1-D convs, a 1x1
// conv on one output row, and a conv with one output position, whose
// product is too narrow for the runtime's sgemm and goes through im2col and
// a gemm.
TEST(IntraOpKernels, ConvWithFewRowsSplitsItsChannels) {
  struct Case {
    const char* what;
    Shape x;
    int64_t m, k, stride;
  };
  const Case cases[] = {
      {"STFT: 257 filters of 512 taps, stride 160, 8 positions", {1, 1, 1760}, 257, 512, 160},
      {"STFT split for its weights alone: 258 filters of 256 taps, 3 positions", {1, 1, 576}, 258, 256, 128},
      {"1x1 on one row of 4 positions, 600 channels", {1, 512, 1, 4}, 600, 1, 1},
      {"1x1 on 2 rows (3 threads: 2 ranges of 2 blocks)", {1, 512, 2, 2}, 600, 1, 1},
      {"one output position, im2col and a gemm", {1, 4, 600}, 520, 600, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const size_t spatial = c.x.size() - 2;
    Shape y{c.x[0], c.m}, wdims{c.m, c.x[1]};
    for (size_t d = 0; d < spatial; ++d) {
      y.push_back((c.x[2 + d] - c.k) / c.stride + 1);
      wdims.push_back(c.k);
    }
    auto m = rtt::make_model();
    rtt::add_io(m, true, "X", c.x);
    rtt::add_io(m, false, "Y", y);
    rtt::add_float_init(m, "W", wdims, random_values(elements(wdims), 11));
    rtt::add_float_init(m, "B", {c.m}, random_values(static_cast<size_t>(c.m), 12));
    auto* node = rtt::add_node(m, "Conv", "conv", {"X", "W", "B"}, {"Y"});
    rtt::set_ints(node, "kernel_shape", std::vector<int64_t>(spatial, c.k));
    rtt::set_ints(node, "strides", std::vector<int64_t>(spatial, c.stride));
    expect_same_for_all_thread_counts(rtt::bytes(m), {{"X", random_tensor(c.x, 13)}});
  }
}

// MaxPool splits its output rows of every plane, or its planes when they
// are small; a FusedConv on the gemm path (Z and Relu on a 1x1 conv) has
// each task finish the rows it accumulated, split by rows or, on small
// planes, by channels (the CNN's 1x1 stride-2 downsample).
TEST(IntraOpKernels, MaxPoolAndFusedEpiloguesMatchOneThread) {
  struct PoolCase {
    const char* what;
    int64_t c, h, w, k, stride, pad;
  };
  const PoolCase pools[] = {
      {"3x3/2 pad 1, odd output rows", 8, 63, 70, 3, 2, 1},
      {"2x2/2, the CNN's", 32, 64, 64, 2, 2, 0},
      {"3x3/2 on small planes, split by planes", 96, 24, 24, 3, 2, 1},
  };
  for (const PoolCase& c : pools) {
    SCOPED_TRACE(c.what);
    const int64_t oh = (c.h + 2 * c.pad - c.k) / c.stride + 1, ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
    auto m = rtt::make_model();
    rtt::add_io(m, true, "X", {1, c.c, c.h, c.w});
    rtt::add_io(m, false, "Y", {1, c.c, oh, ow});
    auto* node = rtt::add_node(m, "MaxPool", "pool", {"X"}, {"Y"});
    rtt::set_ints(node, "kernel_shape", {c.k, c.k});
    rtt::set_ints(node, "strides", {c.stride, c.stride});
    rtt::set_ints(node, "pads", {c.pad, c.pad, c.pad, c.pad});
    expect_same_for_all_thread_counts(rtt::bytes(m), {{"X", random_tensor({1, c.c, c.h, c.w}, 5)}});
  }
  struct FusedCase {
    const char* what;
    int64_t c, hw, m, stride;
  };
  const FusedCase fused[] = {
      {"1x1 Conv + Add + Relu, fused, 36 KB planes split by rows", 16, 96, 24, 1},
      {"1x1/2 Conv + Add + Relu, fused, small planes split by channels", 32, 32, 64, 2},
  };
  for (const FusedCase& c : fused) {
    SCOPED_TRACE(c.what);
    const int64_t out = (c.hw - 1) / c.stride + 1;
    auto m = rtt::make_model();
    rtt::add_io(m, true, "X", {1, c.c, c.hw, c.hw});
    rtt::add_io(m, true, "Z", {1, c.m, out, out});
    rtt::add_io(m, false, "Y", {1, c.m, out, out});
    rtt::add_float_init(m, "W", {c.m, c.c, 1, 1}, random_values(static_cast<size_t>(c.m * c.c), 6));
    rtt::add_float_init(m, "B", {c.m}, random_values(static_cast<size_t>(c.m), 7));
    auto* conv = rtt::add_node(m, "Conv", "conv", {"X", "W", "B"}, {"C"});
    rtt::set_ints(conv, "strides", {c.stride, c.stride});
    rtt::add_node(m, "Add", "add", {"C", "Z"}, {"S"});
    rtt::add_node(m, "Relu", "relu", {"S"}, {"Y"});
    expect_same_for_all_thread_counts(rtt::bytes(m), {{"X", random_tensor({1, c.c, c.hw, c.hw}, 8)},
                                                      {"Z", random_tensor({1, c.m, out, out}, 9)}});
  }
}

// Element-wise ops split their tensor as the spatial kernels split it
// (element_split.h): small NCHW planes by planes, large ones by rows of
// every plane, any other shape in contiguous ranges of 16 elements.
TEST(IntraOp, SplitElementsRunsOverEveryElementOnce) {
  using epprof::rt::kernels::split_elements;
  struct Case {
    Shape shape;
    const char* split;  // "planes", "rows", "contiguous" or "whole"
  };
  const Case cases[] = {
      {{1, 240, 12, 40}, "planes"},      // 1,920-byte planes
      {{1, 7, 70, 70}, "rows"},          // 19,600-byte planes
      {{1, 1, 200, 200}, "rows"},        // one plane: fewer planes than threads
      {{4, 40000}, "contiguous"},
      {{1, 64, 5001}, "contiguous"},
      {{2, 8, 4, 5, 100}, "planes"},     // rank 5: planes of dims 0 and 1
      {{1, 8, 8, 8}, "whole"},           // 16 KB read and written: too little to split
  };
  for (int threads : {1, 2, 3}) {
    std::unique_ptr<IntraOpPool> pool = threads > 1 ? std::make_unique<IntraOpPool>(threads) : nullptr;
    const IntraOpScope scope(pool.get());
    for (const Case& c : cases) {
      SCOPED_TRACE(shape_to_string(c.shape) + " at " + std::to_string(threads) + " threads");
      const int64_t n = shape_size(c.shape), plane = n / (c.shape[0] * c.shape[1]);
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      std::mutex mu;
      std::vector<std::pair<int64_t, int64_t>> runs;
      split_elements(c.shape, 4, 8 * n, [&](int64_t begin, int64_t count) {
        for (int64_t i = begin; i < begin + count; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
        const std::lock_guard<std::mutex> lock(mu);
        runs.emplace_back(begin, count);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "element " << i;
      const std::string split = threads == 1 ? "whole" : c.split;
      if (split == "whole") {
        ASSERT_EQ(runs.size(), 1u);
        continue;
      }
      EXPECT_GT(runs.size(), 1u);
      for (const auto& r : runs) {
        if (split == "planes") {
          EXPECT_EQ(r.first % plane, 0) << "a run starts inside a plane";
          EXPECT_EQ(r.second % plane, 0) << "a run ends inside a plane";
        } else if (split == "rows") {
          EXPECT_LE(r.second, plane) << "a run crosses planes";
          EXPECT_EQ(r.second % c.shape.back(), 0) << "a run ends inside a row";
        } else {
          EXPECT_EQ(r.first % 16, 0) << "a run starts inside a 64-byte block";
        }
      }
    }
  }
}

// Element-wise ops after a small-plane Conv, on large planes, and on shapes
// of other ranks give the 1-thread results: the same-shape and scalar
// binary ops, a broadcast one (not split), Clip and a unary function.
TEST(IntraOpKernels, ElementwiseOpsMatchOneThread) {
  const Shape shapes[] = {{1, 240, 12, 40}, {1, 8, 128, 128}, {4, 40000}, {1, 64, 5000}};
  for (const Shape& x : shapes) {
    SCOPED_TRACE(shape_to_string(x));
    Shape per_row(x.size(), 1);
    per_row[1] = x[1];
    auto m = rtt::make_model(13);
    rtt::add_io(m, true, "X", x);
    rtt::add_io(m, false, "Y", x);
    rtt::add_float_init(m, "s", {1}, {0.75f});
    rtt::add_float_init(m, "r", per_row, random_values(static_cast<size_t>(x[1]), 21));
    rtt::add_float_init(m, "lo", {}, {-0.5f});
    rtt::add_float_init(m, "hi", {}, {1.5f});
    rtt::add_node(m, "Mul", "scale", {"s", "X"}, {"A"});
    rtt::add_node(m, "Add", "residual", {"A", "X"}, {"B"});
    rtt::add_node(m, "Sub", "per_row", {"B", "r"}, {"C"});
    rtt::add_node(m, "Clip", "clip", {"C", "lo", "hi"}, {"D"});
    rtt::add_node(m, "Sigmoid", "sigmoid", {"D"}, {"Y"});
    expect_same_for_all_thread_counts(rtt::bytes(m), {{"X", random_tensor(x, 22)}});
  }
}

// An element function that throws in one of the split's ranges (integer
// division by zero) fails the run with its message, and the next run works.
TEST(IntraOpKernels, AnErrorInASplitElementwiseOpReachesTheCaller) {
  const Shape x{1, 64, 32, 32};
  auto m = rtt::make_model(13);
  rtt::add_io(m, true, "A", x, onnx::TensorProto::INT32);
  rtt::add_io(m, true, "B", x, onnx::TensorProto::INT32);
  rtt::add_io(m, false, "Y", x, onnx::TensorProto::INT32);
  rtt::add_node(m, "Div", "div", {"A", "B"}, {"Y"});
  Tensor a(DataType::Int32, x), b(DataType::Int32, x);
  for (int64_t i = 0; i < a.size(); ++i) {
    a.mutable_data<int32_t>()[i] = int32_t(i);
    b.mutable_data<int32_t>()[i] = 3;
  }
  Tensor zero_late = b.clone();
  zero_late.mutable_data<int32_t>()[a.size() - 5] = 0;  // in the last range, another thread's
  for (int threads : {2, 3}) {
    SessionOptions so;
    so.intra_op_threads = threads;
    Session s = Session::from_bytes(rtt::bytes(m), so);
    try {
      s.run({{"A", a}, {"B", zero_late}});
      ADD_FAILURE() << "no error at " << threads << " threads";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
    }
    const std::vector<Tensor> y = s.run({{"A", a}, {"B", b}});
    ASSERT_EQ(y.size(), 1u);
    for (int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(y[0].data<int32_t>()[i], int32_t(i / 3)) << "element " << i;
  }
}

TEST(IntraOpKernels, MatMulAndGemmMatchOneThread) {
  struct MatMulCase {
    Shape a, b, y;
  };
  const MatMulCase matmuls[] = {
      {{300, 256}, {256, 200}, {300, 200}},     // split by rows
      {{40, 512}, {512, 700}, {40, 700}},       // few rows: split by columns
      {{3, 70, 128}, {128, 96}, {3, 70, 96}},   // batched
      {{1, 2048}, {2048, 1024}, {1, 1024}},     // one row: a gemv
      {{1000, 512}, {512, 1}, {1000, 1}},       // one column: a gemv
      {{300, 256}, {256, 3}, {300, 3}},         // three columns (AVX-512's dot-product kernel) split by rows
      {{1, 3264}, {3264, 128}, {1, 128}},       // a gemv split for its 1.7 MB weight alone
  };
  for (const MatMulCase& c : matmuls) {
    SCOPED_TRACE(shape_to_string(c.a) + " x " + shape_to_string(c.b));
    auto m = rtt::make_model();
    rtt::add_io(m, true, "A", c.a);
    rtt::add_io(m, false, "Y", c.y);
    rtt::add_float_init(m, "B", c.b, random_values(elements(c.b), 4));
    rtt::add_node(m, "MatMul", "mm", {"A", "B"}, {"Y"});
    expect_same_for_all_thread_counts(rtt::bytes(m), {{"A", random_tensor(c.a, 5)}});
  }
  for (int trans = 0; trans < 4; ++trans) {
    const bool ta = trans & 1, tb = trans & 2;
    SCOPED_TRACE("Gemm transA " + std::to_string(ta) + " transB " + std::to_string(tb));
    const int64_t mm = 260, k = 300, n = 230;
    const Shape a = ta ? Shape{k, mm} : Shape{mm, k}, b = tb ? Shape{n, k} : Shape{k, n};
    auto m = rtt::make_model();
    rtt::add_io(m, true, "A", a);
    rtt::add_io(m, false, "Y", {mm, n});
    rtt::add_float_init(m, "B", b, random_values(elements(b), 6));
    rtt::add_float_init(m, "C", {n}, random_values(static_cast<size_t>(n), 7));
    auto* node = rtt::add_node(m, "Gemm", "gemm", {"A", "B", "C"}, {"Y"});
    rtt::set_int(node, "transA", ta);
    rtt::set_int(node, "transB", tb);
    rtt::set_float(node, "alpha", 0.5f);
    expect_same_for_all_thread_counts(rtt::bytes(m), {{"A", random_tensor(a, 8)}});
  }
}

// The global pools split small planes by ranges of planes (from 32 KB of
// input); an LSTM step runs its one-row products on the few-column sgemm.
TEST(IntraOpKernels, GlobalPoolsAndAnLstmStepMatchOneThread) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"})
    for (const Shape& x : {Shape{2, 40, 12, 12}, Shape{1, 3, 5, 7}}) {
      SCOPED_TRACE(std::string(op) + " on " + shape_to_string(x));
      auto m = rtt::make_model();
      rtt::add_io(m, true, "X", x);
      rtt::add_io(m, false, "Y", {x[0], x[1], 1, 1});
      rtt::add_node(m, op, "pool", {"X"}, {"Y"});
      expect_same_for_all_thread_counts(rtt::bytes(m), {{"X", random_tensor(x, 10)}});
    }
  SCOPED_TRACE("LSTM, one step of hidden size 128 (Silero VAD's)");
  const int64_t hidden = 128, in = 128;
  auto m = rtt::make_model();
  rtt::add_io(m, true, "X", {1, 1, in});
  rtt::add_io(m, false, "Y_h", {1, 1, hidden});
  rtt::add_float_init(m, "W", {1, 4 * hidden, in}, random_values(static_cast<size_t>(4 * hidden * in), 11));
  rtt::add_float_init(m, "R", {1, 4 * hidden, hidden}, random_values(static_cast<size_t>(4 * hidden * hidden), 12));
  auto* lstm = rtt::add_node(m, "LSTM", "lstm", {"X", "W", "R"}, {"", "Y_h"});
  rtt::set_int(lstm, "hidden_size", hidden);
  expect_same_for_all_thread_counts(rtt::bytes(m), {{"X", random_tensor({1, 1, in}, 13)}});
}

TEST(IntraOpKernels, ParallelExecutorRunsSplitConvsAtOnce) {
  // Four independent convs: under the parallel executor several ask for the
  // pool at once; those that find it busy run alone.
  auto m = rtt::make_model();
  rtt::add_io(m, true, "X", {1, 16, 40, 40});
  for (int b = 0; b < 4; ++b) {
    const std::string i = std::to_string(b);
    rtt::add_io(m, false, "Y" + i, {1, 16, 40, 40});
    rtt::add_float_init(m, "W" + i, {16, 16, 3, 3}, random_values(16 * 16 * 9, 10 + b));
    auto* node = rtt::add_node(m, "Conv", "conv" + i, {"X", "W" + i}, {"Y" + i});
    rtt::set_ints(node, "pads", {1, 1, 1, 1});
  }
  expect_same_for_all_thread_counts(rtt::bytes(m), {{"X", random_tensor({1, 16, 40, 40}, 9)}});
}

}  // namespace
