// The intra-op pool (src/intra_op.*): parallel_for's contract, and Conv,
// MatMul and Gemm split across it giving the 1-thread results. Multi-threaded:
// ctest's runtime_intra_op runs these again under ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "epprof/rt/session.h"
#include "intra_op.h"
#include "test_models.h"

namespace {

using namespace epprof::rt;
using epprof::rt::detail::IntraOpPool;
using epprof::rt::detail::IntraOpScope;
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
    std::vector<std::atomic<int>> covered(static_cast<size_t>(units));
    std::atomic<int> ranges{0};
    parallel_for_ranges(units, 2, [&](int64_t begin, int64_t end) {
      EXPECT_LT(begin, end);
      ranges.fetch_add(1);
      for (int64_t u = begin; u < end; ++u) covered[static_cast<size_t>(u)].fetch_add(1);
    });
    EXPECT_EQ(ranges.load(), std::min<int64_t>(units, 6));
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
  int calls = 0;
  parallel_for_ranges(10, 4, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 10);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
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
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "task 3 failed");
  }
  EXPECT_LT(started.load(), 1000) << "the tasks after a failure should be skipped";
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

}  // namespace
