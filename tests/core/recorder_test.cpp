// The recorder's bounded memory: spilling to disk past the memory budget,
// exact drop accounting past the disk budget, and the merge of streams and
// spilled runs back into one time-ordered sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

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

// The open-event stack keeps the innermost event in the stream's first
// line; moving it to open[] and back must lose nothing.
TEST(ThreadStream, OpenEventStackKeepsEveryLevel) {
  epprof::core::ThreadStream s;
  using epprof::core::OpenEvent;
  auto ev = [](uint64_t id) { return OpenEvent{id * 10, id, uint32_t(id), uint8_t(id)}; };
  std::vector<uint64_t> expected;  // ids open, outermost first
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    const bool push = expected.empty() || (expected.size() < epprof::core::kMaxOpenEvents && rng() % 2);
    if (push) {
      const uint64_t id = uint64_t(step) + 1;
      s.push(ev(id));
      expected.push_back(id);
    } else {
      s.pop();
      expected.pop_back();
    }
    ASSERT_EQ(s.depth, expected.size());
    if (expected.empty()) continue;
    const OpenEvent& top = s.innermost();
    ASSERT_EQ(top.correlation_id, expected.back());
    ASSERT_EQ(top.ts, expected.back() * 10);
    ASSERT_EQ(top.name, uint32_t(expected.back()));
    ASSERT_EQ(top.category, uint8_t(expected.back()));
  }
  // Unwinding from any state yields every level in order.
  while (!expected.empty()) {
    ASSERT_EQ(s.innermost().correlation_id, expected.back());
    s.pop();
    expected.pop_back();
  }
  EXPECT_EQ(s.depth, 0u);
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


// --- Ordering a stream: the adaptive pass against a reference sort. -------

// The defined order of one stream: start, then longer first, then (equal
// keys) the later-written first, i.e. a stable sort of the reversed stream.
std::vector<Record> reference_order(std::vector<Record> written) {
  std::reverse(written.begin(), written.end());
  std::stable_sort(written.begin(), written.end(), [](const Record& a, const Record& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
  });
  return written;
}

bool key_less(const Record& a, const Record& b) {
  return a.ts != b.ts ? a.ts < b.ts : ~a.dur < ~b.dur;
}

// Writes `written` into one stream (with `args` arg slots on every third
// record, to exercise entries longer than a slot) and drains it.
std::vector<Record> record_and_drain(const std::vector<Record>& written, uint64_t memory_budget,
                                     const std::string& spill_dir, bool with_args) {
  Recorder rec(memory_budget, uint64_t(1) << 32, spill_dir);
  auto* s = rec.add_thread(1);
  for (size_t i = 0; i < written.size(); ++i) {
    const uint16_t slots = with_args && i % 3 == 0 ? uint16_t(1 + i % 2) : 0;
    Record* r = rec.reserve(*s, 1 + slots);
    *r = written[i];
    r->arg_slots = slots;
    std::memset(r + 1, 0xab, slots * sizeof(Record));
  }
  auto out = drain(rec);
  EXPECT_EQ(rec.stats().dropped_events, 0u);
  for (auto& r : out) r.arg_slots = 0;
  return out;
}

// Nested events written in end order (post-order), with random depths,
// fan-outs, gaps and zero-length events; `same_key` children sometimes
// share their parent's start and duration.
void nested(std::mt19937_64& rng, uint64_t& t, int depth, std::vector<Record>& out, uint64_t& id,
            size_t limit) {
  const uint64_t start = t;
  const size_t children = depth > 0 ? size_t(rng() % 6) : 0;
  const bool same_key = rng() % 8 == 0;
  for (size_t i = 0; i < children && out.size() < limit; ++i) {
    t += rng() % 3;  // gaps of 0 ticks: children that start with the parent
    nested(rng, t, depth - 1, out, id, limit);
  }
  if (!same_key || children == 0) t += rng() % 4;
  out.push_back(Record{start, t - start, id++, 1, 1, 0, 0});
  if (same_key && children > 0) out.push_back(Record{start, t - start, id++, 2, 1, 0, 0});
}

std::vector<Record> make_nested(std::mt19937_64& rng, size_t n, int max_depth) {
  std::vector<Record> out;
  uint64_t t = 1000, id = 1;
  while (out.size() < n) nested(rng, t, int(rng() % (max_depth + 1)), out, id, n);
  return out;
}

std::vector<Record> make_flat(std::mt19937_64& rng, size_t n) {
  std::vector<Record> out;
  uint64_t t = 0;
  for (size_t i = 0; i < n; ++i) {
    t += rng() % 3;
    out.push_back(Record{t, rng() % 3, i + 1, 1, 1, 0, 0});
  }
  return out;
}

std::vector<Record> make_arbitrary(std::mt19937_64& rng, size_t n, uint64_t range) {
  std::vector<Record> out;
  for (size_t i = 0; i < n; ++i) out.push_back(Record{rng() % range, rng() % 5, i + 1, 1, 1, 0, 0});
  return out;
}

// Nested, with a few arbitrary events (epprof_event_record) mixed in.
std::vector<Record> make_mixed(std::mt19937_64& rng, size_t n) {
  auto out = make_nested(rng, n, 4);
  for (size_t i = 0; i < out.size(); i += 1 + rng() % 50)
    out[i] = Record{rng() % (out.back().ts + 1), rng() % 100, out[i].correlation_id, 3, 1, 0, 0};
  return out;
}

void expect_ordered_like_sort(const std::vector<Record>& written, const std::vector<Record>& out,
                              const char* what) {
  const auto want = reference_order(written);
  ASSERT_EQ(out.size(), want.size()) << what;
  auto by_sort = written;
  std::sort(by_sort.begin(), by_sort.end(), key_less);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i].ts, by_sort[i].ts) << what << " at " << i;
    ASSERT_EQ(out[i].dur, by_sort[i].dur) << what << " at " << i;
    ASSERT_EQ(out[i].correlation_id, want[i].correlation_id) << what << " at " << i;
  }
}

TEST(Recorder, StreamOrderMatchesASortOnRandomInputs) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 60; ++round) {
    const size_t n = 1 + rng() % (round < 40 ? 300 : 20000);
    const bool args = round % 2 == 1;
    struct Case {
      const char* what;
      std::vector<Record> written;
    } cases[] = {
        {"nested", make_nested(rng, n, 1 + int(rng() % 12))},
        {"deep", make_nested(rng, n, 60)},
        {"flat", make_flat(rng, n)},
        {"arbitrary", make_arbitrary(rng, n, 1 + rng() % (4 * n))},
        {"few keys", make_arbitrary(rng, n, 3)},
        {"mixed", make_mixed(rng, n)},
        {"reversed", [&] {
           auto v = make_flat(rng, n);
           std::reverse(v.begin(), v.end());
           return v;
         }()},
    };
    for (const auto& c : cases) {
      SCOPED_TRACE(::testing::Message() << "round " << round << " n " << n << " args " << args);
      expect_ordered_like_sort(c.written, record_and_drain(c.written, 64 << 20, "/tmp", args),
                               c.what);
    }
  }
}

TEST(Recorder, SpilledNestedStreamsMergeInOrder) {
  TempDir dir;
  std::mt19937_64 rng(777);
  for (const char* what : {"nested", "mixed", "arbitrary"}) {
    const size_t n = 300'000;  // ~150 chunks: several spill runs under a 1 MiB budget
    std::vector<Record> written = std::string(what) == "nested" ? make_nested(rng, n, 8)
                                  : std::string(what) == "mixed" ? make_mixed(rng, n)
                                                                 : make_arbitrary(rng, n, n);
    auto out = record_and_drain(written, 1 << 20, dir.path().string(), true);
    // Runs are merged by key; equal keys may come from different runs, so
    // compare keys, and that every record came out once.
    auto by_sort = written;
    std::sort(by_sort.begin(), by_sort.end(), key_less);
    ASSERT_EQ(out.size(), by_sort.size()) << what;
    std::vector<bool> seen(written.size() + 1);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out[i].ts, by_sort[i].ts) << what << " at " << i;
      ASSERT_EQ(out[i].dur, by_sort[i].dur) << what << " at " << i;
      ASSERT_FALSE(seen[out[i].correlation_id]) << what;
      seen[out[i].correlation_id] = true;
    }
  }
}

TEST(Recorder, MergeOrdersTiesByRunDeterministically) {
  // Identical keys in several streams: stream order breaks the tie.
  Recorder rec(64 << 20, uint64_t(1) << 30, "/tmp");
  std::vector<epprof::core::ThreadStream*> ss;
  for (int i = 0; i < 5; ++i) ss.push_back(rec.add_thread(i + 1));
  for (uint64_t k = 0; k < 100; ++k)
    for (int i = 4; i >= 0; --i) *rec.reserve(*ss[i], 1) = Record{k / 2, 3, k * 10 + i + 1, 1, 1, 0, 0};
  Merger m(rec.finish());
  uint32_t stream, prev_stream = 0;
  uint64_t prev_ts = 0;
  size_t count = 0;
  while (const Record* r = m.next(&stream)) {
    if (count > 0 && r->ts == prev_ts) {
      EXPECT_GE(stream, prev_stream);
    }
    EXPECT_EQ(uint32_t((r->correlation_id - 1) % 10), stream);
    prev_ts = r->ts;
    prev_stream = stream;
    ++count;
  }
  EXPECT_EQ(count, 500u);
}

TEST(Recorder, EmptyRecorderMergesToNothing) {
  Recorder rec(64 << 20, uint64_t(1) << 30, "/tmp");
  rec.add_thread(1);
  Merger m(rec.finish());
  uint32_t stream;
  EXPECT_EQ(m.next(&stream), nullptr);
  EXPECT_EQ(m.next(&stream), nullptr);
}

}  // namespace
