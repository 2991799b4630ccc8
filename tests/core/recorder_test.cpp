// The recorder's bounded memory: spilling to disk past the memory budget,
// exact drop accounting past the disk budget, and the merge of streams and
// spilled runs back into one time-ordered sequence.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/merge.h"
#include "core/recorder.h"
#include "support/test_util.h"

namespace {

using epprof::core::Merger;
using epprof::core::Record;
using epprof::core::Recorder;
using epprof::testing::TempDir;

// Records `n` leaf events with ts = base + i*step into stream s.
void fill(Recorder& rec, epprof::core::ThreadStream& s, uint64_t n, uint64_t base, uint64_t step) {
  for (uint64_t i = 0; i < n; ++i) {
    Record* r = rec.reserve(s, 1);
    *r = Record{base + i * step, 1, base + i, 1, 1, 0, 0};
  }
}

std::vector<Record> drain(Recorder& rec) {
  Merger m(rec.finish());
  std::vector<Record> out;
  uint32_t stream;
  while (const Record* r = m.next(&stream)) out.push_back(*r);
  return out;
}

TEST(Recorder, SpillsPastTheMemoryBudgetAndLosesNothing) {
  TempDir dir;
  Recorder rec(1 << 20, uint64_t(1) << 30, dir.path().string());  // 16 chunks in memory
  auto* a = rec.add_thread(1);
  auto* b = rec.add_thread(2);
  const uint64_t n = 200'000;  // ~100 chunks per stream
  fill(rec, *a, n, 0, 2);
  fill(rec, *b, n, 1, 2);
  auto out = drain(rec);
  auto st = rec.stats();
  EXPECT_GT(st.spilled_bytes, 0u);
  EXPECT_EQ(st.dropped_events, 0u);
  EXPECT_EQ(st.events, 2 * n);
  EXPECT_LE(st.peak_chunks, 16u + 2u) << "resident chunks exceeded the budget";
  ASSERT_EQ(out.size(), 2 * n);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i].ts, i) << "merge order broken at " << i;
  // The spill file is unlinked: nothing is left in the directory.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(Recorder, DropsAreCountedExactlyPastTheDiskBudget) {
  TempDir dir;
  const uint64_t disk = 3 * epprof::core::kChunkSlots * sizeof(Record);  // room for 3 chunks
  Recorder rec(1 << 20, disk, dir.path().string());
  auto* s = rec.add_thread(1);
  const uint64_t n = 100'000;
  fill(rec, *s, n, 0, 1);
  auto out = drain(rec);
  auto st = rec.stats();
  EXPECT_GT(st.dropped_events, 0u);
  EXPECT_EQ(out.size() + st.dropped_events, n) << "kept + dropped must equal recorded";
  EXPECT_LE(st.spilled_bytes, disk);
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end(),
                             [](const Record& x, const Record& y) { return x.ts < y.ts; }));
}

TEST(Recorder, UnwritableSpillDirectoryDropsWithAReason) {
  Recorder rec(1 << 20, uint64_t(1) << 30, "/nonexistent-epprof-spill");
  auto* s = rec.add_thread(1);
  fill(rec, *s, 100'000, 0, 1);
  auto out = drain(rec);
  auto st = rec.stats();
  EXPECT_EQ(out.size() + st.dropped_events, 100'000u);
  EXPECT_GT(st.dropped_events, 0u);
  EXPECT_NE(rec.spill_error().find("/nonexistent-epprof-spill"), std::string::npos) << rec.spill_error();
}

TEST(Recorder, NestedEventsComeOutParentFirst) {
  Recorder rec(64 << 20, uint64_t(1) << 30, "/tmp");
  auto* s = rec.add_thread(1);
  // Written in end order: child (ts 10, dur 5) before parent (ts 10, dur 50).
  *rec.reserve(*s, 1) = Record{10, 5, 2, 1, 1, 0, 0};
  *rec.reserve(*s, 1) = Record{20, 5, 3, 1, 1, 0, 0};
  *rec.reserve(*s, 1) = Record{10, 50, 1, 1, 0, 0, 0};
  auto out = drain(rec);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].correlation_id, 1u);
  EXPECT_EQ(out[1].correlation_id, 2u);
  EXPECT_EQ(out[2].correlation_id, 3u);
}

}  // namespace
