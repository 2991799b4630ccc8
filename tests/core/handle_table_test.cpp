// core::HandleTable: handles name their slot, a removed object's handle is
// stale for good, a full table says so, and lookups race inserts and
// removes safely (run under ThreadSanitizer in CI).
#include "core/handle_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

namespace epprof::core {
namespace {

TEST(HandleTable, HandlesNameTheirSlotAndGoStaleWhenRemoved) {
  HandleTable<int, 4> t;
  int a = 1, b = 2;
  const uint64_t ha = t.insert(&a);
  const uint64_t hb = t.insert(&b);
  ASSERT_NE(ha, 0u);
  ASSERT_NE(hb, 0u);
  EXPECT_NE(t.index(ha), t.index(hb));
  EXPECT_EQ(t.find(ha), &a);
  EXPECT_EQ(t.find(hb), &b);
  EXPECT_EQ(t.find(0), nullptr);
  EXPECT_EQ(t.find(ha + 4), nullptr) << "same slot, another generation";

  EXPECT_EQ(t.remove(ha), &a);
  EXPECT_EQ(t.find(ha), nullptr);
  EXPECT_EQ(t.remove(ha), nullptr) << "removed twice";
  // The slot is used again under a new handle; the old one stays stale.
  int c = 3;
  const uint64_t hc = t.insert(&c);
  EXPECT_EQ(t.index(hc), t.index(ha));
  EXPECT_NE(hc, ha);
  EXPECT_EQ(t.find(ha), nullptr);
  EXPECT_EQ(t.find(hc), &c);
}

TEST(HandleTable, AFullTableRefusesAndNamedRunsBeforePublication) {
  HandleTable<int, 2> t;
  int v[3] = {};
  std::vector<uint64_t> named;
  for (int& x : v) {
    const uint64_t h = t.insert(&x, [&](uint64_t handle) {
      named.push_back(handle);
      EXPECT_EQ(t.slot_of(handle).handle.load(), 0u) << "not yet published";
    });
    if (&x == &v[2]) {
      EXPECT_EQ(h, 0u) << "two slots";
    }
  }
  EXPECT_EQ(named.size(), 2u);
  EXPECT_EQ(std::set<uint64_t>(named.begin(), named.end()).size(), 2u);
}

// A reader that finds a handle sees its object as it was published (the
// object is written before insert publishes the handle). Freeing a removed
// object is the caller's business (a lock or a pin): here none is freed
// until the reader is done.
TEST(HandleTable, ALookupSeesTheObjectAsPublished) {
  constexpr int kObjects = 1 << 20;
  HandleTable<int, 8> t;
  std::vector<int> objects(kObjects, 0);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> last{0};
  std::atomic<uint64_t> seen{0};    // lookups that found an object
  std::atomic<uint64_t> lookups{0};  // lookups made
  std::thread reader([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      if (const int* p = t.find(last.load(std::memory_order_relaxed))) {
        EXPECT_NE(*p, 0);
        seen.fetch_add(1, std::memory_order_relaxed);
      }
      lookups.fetch_add(1, std::memory_order_relaxed);
    }
  });
  // Until the reader has found enough objects (or the objects run out).
  // Every 256 objects the writer waits, on one that stays published, for
  // two more lookups (at most 10 s in all): on a loaded machine it could
  // otherwise publish every object before the reader is first scheduled.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; i < kObjects && seen.load(std::memory_order_relaxed) < 1000; ++i) {
    objects[size_t(i)] = i + 1;  // before publication
    const uint64_t h = t.insert(&objects[size_t(i)]);
    EXPECT_NE(h, 0u);
    last.store(h, std::memory_order_relaxed);
    if (i % 256 == 251) {  // kept: 251 % 4 == 3, and 251 % 16 != 15
      const uint64_t from = lookups.load();
      while (lookups.load() < from + 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    }
    if (i % 4 != 3) {  // most go at once, some stay a while
      EXPECT_EQ(t.remove(h), &objects[size_t(i)]);
    }
    if (i % 16 == 15)
      for (uint32_t s = 0; s < t.kCapacity; ++s)
        if (const uint64_t old = t.slot(s).handle.load()) t.remove(old);
  }
  stop.store(true);
  reader.join();
  EXPECT_GT(seen.load(), 0u) << "the reader found some";
}

}  // namespace
}  // namespace epprof::core
