// Sessions under concurrent producers (run under TSan in CI: label
// "concurrency"): buffer policies with a slow tool, several sessions at
// once, starting after a warm-up, destroy racing producers.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <set>
#include <thread>

#include "session_test_util.h"

namespace epprof::testing {
namespace {

// `threads` producers each emit `per_thread` node records whose correlation
// id encodes (thread, sequence).
void produce(int threads, uint64_t per_thread, const char* op = "Relu") {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([=] {
      epprof_record r = node_record(0, "n", op);
      for (uint64_t i = 0; i < per_thread; ++i) {
        r.correlation_id = (uint64_t(t + 1) << 32) | i;
        epprof_status_release(epprof_session_emit(&r, 1));
      }
    });
  for (auto& t : ts) t.join();
}

TEST(SessionConcurrency, LosslessSlowCallbackLosesNothing) {
  Collector c;
  c.delay = std::chrono::microseconds(300);
  epprof_session_config cfg = collector_config(c);
  cfg.buffer_policy = EPPROF_BUFFER_LOSSLESS;
  cfg.buffer_bytes = 64 * sizeof(epprof_record);  // tiny: producers must wait
  cfg.watermark_bytes = 16 * sizeof(epprof_record);
  ScopedSession s(cfg);
  const uint64_t per = 3000;
  produce(2, per);
  EPPROF_ASSERT_OK(epprof_session_stop(s.get()));
  const auto st = s.stats();
  ASSERT_EQ(c.size(), 2 * per);
  EXPECT_EQ(c.dropped, 0u);
  EXPECT_EQ(st.records_dropped, 0u);
  EXPECT_EQ(st.records_delivered, 2 * per);
  EXPECT_GT(st.producer_waits, 0u);  // the buffer really was full
  // Every record exactly once, in order per producer.
  std::vector<uint64_t> last(3, 0);
  std::set<uint64_t> seen;
  for (const auto& r : c.records) {
    EXPECT_TRUE(seen.insert(r.correlation_id).second);
    const uint64_t t = r.correlation_id >> 32, i = r.correlation_id & 0xffffffffu;
    if (i) {
      EXPECT_GT(i + 1, last[t]) << "out of order on producer " << t;
    }
    last[t] = i + 1;
  }
}

TEST(SessionConcurrency, DiscardCountsEveryDropExactly) {
  Collector c;
  c.delay = std::chrono::microseconds(2000);
  epprof_session_config cfg = collector_config(c);
  cfg.buffer_policy = EPPROF_BUFFER_DISCARD;
  cfg.buffer_bytes = 64 * sizeof(epprof_record);
  cfg.watermark_bytes = 32 * sizeof(epprof_record);
  ScopedSession s(cfg);
  const uint64_t per = 20000;
  produce(2, per);
  EPPROF_ASSERT_OK(epprof_session_stop(s.get()));
  const auto st = s.stats();
  std::set<uint64_t> seen;
  for (const auto& r : c.records) EXPECT_TRUE(seen.insert(r.correlation_id).second) << "duplicate";
  EXPECT_GT(c.dropped, 0u);  // a fast producer outran the slow tool
  EXPECT_EQ(c.dropped, st.records_dropped);
  EXPECT_EQ(c.records.size() + c.dropped, 2 * per);  // nothing else lost
  EXPECT_EQ(st.records_delivered, c.records.size());
  EXPECT_EQ(st.producer_waits, 0u);
}

TEST(SessionConcurrency, SeveralSessionsEachGetWhatTheirFiltersAccept) {
  Collector all, convs, none;
  epprof_session_config a = collector_config(all);
  a.buffer_bytes = 128 * sizeof(epprof_record);
  epprof_session_config b = collector_config(convs);
  static const char* ops[] = {"Conv"};
  b.op_types = ops;
  b.num_op_types = 1;
  b.buffer_policy = EPPROF_BUFFER_DISCARD;  // large enough to drop nothing here
  b.buffer_bytes = 1 << 22;
  epprof_session_config n = collector_config(none);
  n.categories = 1u << EPPROF_CATEGORY_KERNEL;
  ScopedSession sa(a), sb(b), sn(n);
  std::thread t1([] { produce(1, 5000, "Conv"); });
  std::thread t2([] { produce(1, 7000, "Relu"); });
  t1.join();
  t2.join();
  for (auto* s : {&sa, &sb, &sn}) EPPROF_ASSERT_OK(epprof_session_stop(s->get()));
  EXPECT_EQ(all.size(), 12000u);
  EXPECT_EQ(convs.size(), 5000u);
  for (const auto& r : convs.records) EXPECT_EQ(r.op_type, name_id("Conv"));
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(sb.stats().records_filtered, 7000u);
  EXPECT_EQ(sb.stats().records_dropped, 0u);
}

TEST(SessionConcurrency, StartedAfterWarmupCollectsOnlyWhatFollows) {
  Collector c;
  ScopedSession s(collector_config(c), /*start=*/false);
  std::atomic<bool> started{false}, done{false};
  std::atomic<uint64_t> emitted_after{0};
  std::thread producer([&] {
    uint64_t i = 0;
    epprof_record r = node_record(0, "n", "Relu");
    while (!done.load()) {
      const bool after = started.load(std::memory_order_acquire);
      r.correlation_id = ++i;
      r.run_id = after ? 2 : 1;  // 1: warm-up
      epprof_status_release(epprof_session_emit(&r, 1));
      if (after) emitted_after.fetch_add(1);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // warm-up
  EPPROF_ASSERT_OK(epprof_session_start(s.get()));
  started.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EPPROF_ASSERT_OK(epprof_session_stop(s.get()));
  const size_t at_stop = c.size();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  done = true;
  producer.join();
  EPPROF_ASSERT_OK(epprof_session_flush(s.get()));
  EXPECT_EQ(c.size(), at_stop);  // nothing after stop
  ASSERT_GT(at_stop, 0u);
  // Records emitted while the start call was in flight may be collected
  // (they follow it), but a warm-up record must be older than every kept
  // post-start record: the ids kept form one contiguous run.
  std::vector<uint64_t> ids;
  for (const auto& r : c.records) ids.push_back(r.correlation_id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids.back() - ids.front() + 1, ids.size());
}

TEST(SessionConcurrency, StartAfterWarmupHandshakeIsExact) {
  Collector c;
  ScopedSession s(collector_config(c), /*start=*/false);
  std::mutex mu;
  std::condition_variable cv;
  int phase = 0;  // 0 warm-up, 1 warm-up done, 2 session started
  std::thread producer([&] {
    epprof_record r = node_record(0, "n", "Relu");
    for (uint64_t i = 1; i <= 500; ++i) {
      r.correlation_id = i;
      r.run_id = 1;
      epprof_status_release(epprof_session_emit(&r, 1));
    }
    {
      std::unique_lock<std::mutex> lock(mu);
      phase = 1;
      cv.notify_all();
      cv.wait(lock, [&] { return phase == 2; });
    }
    for (uint64_t i = 501; i <= 800; ++i) {
      r.correlation_id = i;
      r.run_id = 2;
      epprof_status_release(epprof_session_emit(&r, 1));
    }
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return phase == 1; });
  }
  EPPROF_ASSERT_OK(epprof_session_start(s.get()));
  {
    std::lock_guard<std::mutex> lock(mu);
    phase = 2;
  }
  cv.notify_all();
  producer.join();
  EPPROF_ASSERT_OK(epprof_session_stop(s.get()));
  ASSERT_EQ(c.size(), 300u);
  for (const auto& r : c.records) EXPECT_EQ(r.run_id, 2u);
  EXPECT_EQ(c.records.front().correlation_id, 501u);
}

TEST(SessionConcurrency, DestroyWhileProducersRunIsSafe) {
  std::atomic<bool> done{false};
  std::vector<std::thread> ps;
  for (int t = 0; t < 2; ++t)
    ps.emplace_back([&] {
      epprof_record r = node_record(1, "n", "Relu");
      while (!done.load()) epprof_status_release(epprof_session_emit(&r, 1));
    });
  for (int round = 0; round < 20; ++round) {
    Collector c;
    epprof_session_config cfg = collector_config(c);
    cfg.buffer_bytes = 64 * sizeof(epprof_record);
    cfg.buffer_policy = round % 2 ? EPPROF_BUFFER_DISCARD : EPPROF_BUFFER_LOSSLESS;
    epprof_session_t s{};
    EPPROF_ASSERT_OK(epprof_session_create(&cfg, &s));
    EPPROF_ASSERT_OK(epprof_session_start(s));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EPPROF_ASSERT_OK(epprof_session_destroy(s));
    const size_t n = c.size();
    EXPECT_EQ(take(epprof_session_flush(s)).code, EPPROF_NOT_FOUND);
    EXPECT_EQ(c.size(), n);  // nothing delivered after destroy returned
  }
  done = true;
  for (auto& t : ps) t.join();
}

}  // namespace
}  // namespace epprof::testing
