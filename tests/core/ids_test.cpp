// Correlation ids: unique across threads and across concurrent profilers,
// never 0, never reused.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace {

using epprof::testing::config_for;
using epprof::testing::name_id;
using epprof::testing::take;
using epprof::testing::TempDir;

TEST(CorrelationIds, UniqueAcrossEightThreadsAndTwoProfilers) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 1'000'000;
  TempDir dir;
  std::string pa = dir.file("a.json"), pb = dir.file("b.json");
  auto ca = config_for(pa), cb = config_for(pb);
  ca.memory_budget_bytes = cb.memory_budget_bytes = 8 << 20;  // spill some
  epprof_profiler_t a, b;
  EPPROF_ASSERT_OK(epprof_profiler_create(&ca, &a));
  EPPROF_ASSERT_OK(epprof_profiler_create(&cb, &b));
  EPPROF_ASSERT_OK(epprof_profiler_start(a));
  EPPROF_ASSERT_OK(epprof_profiler_start(b));
  const epprof_name_id n = name_id("ev");
  std::vector<std::vector<uint64_t>> ids(kThreads);
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto& mine = ids[t];
      mine.reserve(kPerThread);
      // Half the threads record into profiler a, half into b; every id is
      // drawn from the one process-wide source.
      epprof_profiler_t p = (t % 2) ? a : b;
      for (int i = 0; i < kPerThread; ++i) {
        uint64_t id = epprof_correlation_id_next();
        mine.push_back(id);
        if (i % 16 == 0) {
          epprof_status* s1 = epprof_event_begin(p, EPPROF_CATEGORY_NODE, n, id);
          epprof_status* s2 = epprof_event_end(p, id, nullptr, 0);
          failures[t] += (s1 != nullptr) + (s2 != nullptr);
          epprof_status_release(s1);
          epprof_status_release(s2);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uint64_t> all;
  all.reserve(size_t(kThreads) * kPerThread);
  for (auto& v : ids) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an id was handed out twice";
  EXPECT_NE(all.front(), 0u);
  for (int f : failures) EXPECT_EQ(f, 0);
  epprof_trace_stats sa{}, sb{};
  sa.size = sb.size = sizeof sa;
  EPPROF_ASSERT_OK(epprof_profiler_stop(a, &sa));
  EPPROF_ASSERT_OK(epprof_profiler_stop(b, &sb));
  const uint64_t per_profiler = uint64_t(kThreads / 2) * (kPerThread / 16);
  EXPECT_EQ(sa.host_events, per_profiler);
  EXPECT_EQ(sb.host_events, per_profiler);
  EXPECT_EQ(sa.dropped_events + sb.dropped_events, 0u);
  EPPROF_ASSERT_OK(epprof_profiler_destroy(a));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(b));
}

TEST(CorrelationIds, NeverZeroAndIncreasingPerThread) {
  uint64_t prev = epprof_correlation_id_next();
  EXPECT_NE(prev, 0u);
  for (int i = 0; i < 10000; ++i) {
    uint64_t id = epprof_correlation_id_next();
    EXPECT_GT(id, prev);
    prev = id;
  }
}

TEST(CorrelationIds, BlocksNeverOverlapSingleIdsOrEachOther) {
  EXPECT_EQ(epprof_correlation_id_block(0), 0u);
  EXPECT_EQ(epprof_correlation_id_block(uint64_t(1) << 60), 0u);
  constexpr int kThreads = 4;
  // Each thread takes single ids and blocks of several sizes (some fit the
  // thread's own reserve, some do not); every id handed out is collected.
  std::vector<std::vector<uint64_t>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ids, t] {
      for (uint64_t round = 0; round < 200; ++round) {
        const uint64_t n = round % 3 == 0 ? 5000 : 1 + round % 40;
        const uint64_t first = epprof_correlation_id_block(n);
        ASSERT_NE(first, 0u);
        for (uint64_t k = 0; k < n; ++k) ids[size_t(t)].push_back(first + k);
        ids[size_t(t)].push_back(epprof_correlation_id_next());
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uint64_t> all;
  for (auto& v : ids) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an id was handed out twice";
  EXPECT_NE(all.front(), 0u);
}

}  // namespace
