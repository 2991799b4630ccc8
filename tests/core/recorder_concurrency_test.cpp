// Several producer threads rolling chunks over and spilling at once.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/merge.h"
#include "core/recorder.h"
#include "support/test_util.h"

namespace {

using epprof::core::Merger;
using epprof::core::Record;
using epprof::core::Recorder;
using epprof::testing::TempDir;

TEST(Recorder, ConcurrentProducersWithSpilling) {
  TempDir dir;
  Recorder rec(1 << 20, uint64_t(1) << 30, dir.path().string());
  constexpr int kThreads = 4;
  constexpr uint64_t kEach = 100'000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      auto* s = rec.add_thread(t + 1);
      for (uint64_t i = 0; i < kEach; ++i)
        *rec.reserve(*s, 1) = Record{uint64_t(t) + i * kThreads, 1, i + 1, 1, 1, 0, 0};
    });
  for (auto& t : ts) t.join();
  Merger m(rec.finish());
  std::vector<Record> out;
  uint32_t stream;
  while (const Record* r = m.next(&stream)) out.push_back(*r);
  ASSERT_EQ(out.size(), kThreads * kEach);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i].ts, i);
}

}  // namespace
