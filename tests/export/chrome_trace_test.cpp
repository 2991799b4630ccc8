// The Chrome trace sink's integer microseconds (the default of `epprof run`,
// as ONNX Runtime writes them): both ends of a slice round to the nearest
// µs, so nesting survives and totals stay unbiased, and no slice with a
// length is written with none.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "export/chrome_trace.h"
#include "export/integer_us.h"

namespace epprof::exporter {
namespace {

TEST(ChromeTraceInteger, EndsRoundToTheNearestMicrosecond) {
  EXPECT_EQ(integer_slice(1499, 2000).ts, 1);
  EXPECT_EQ(integer_slice(1500, 2000).ts, 2);  // halves up
  EXPECT_EQ(integer_slice(1499, 2000).dur, 3 - 1);
  EXPECT_EQ(integer_slice(-1500, 1000).ts, -1);
  EXPECT_EQ(integer_slice(-1501, 1000).ts, -2);
  EXPECT_EQ(integer_slice(0, 0).dur, 0);  // an instant stays one
}

TEST(ChromeTraceInteger, ASliceUnderAMicrosecondKeepsOne) {
  for (int64_t ts : {0, 400, 499, 500, 999, 123456789})
    for (int64_t dur : {1, 120, 499, 999}) {
      const auto s = integer_slice(ts, dur);
      EXPECT_GE(s.dur, 1) << ts << "+" << dur;
      EXPECT_LE(s.dur, 1) << ts << "+" << dur;
    }
}

TEST(ChromeTraceInteger, NestingSurvivesRounding) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> start(0, 10'000'000), len(1, 200'000);
  for (int i = 0; i < 100000; ++i) {
    const int64_t pts = start(rng), pdur = len(rng);
    std::uniform_int_distribution<int64_t> in(pts, pts + pdur);
    int64_t a = in(rng), b = in(rng);
    if (a > b) std::swap(a, b);
    if (b - a < 1000) continue;  // a child of a µs or more: no 1 µs minimum to stretch it
    const auto p = integer_slice(pts, pdur), c = integer_slice(a, b - a);
    ASSERT_GE(c.ts, p.ts) << pts << "+" << pdur << " holds " << a << ".." << b;
    ASSERT_LE(c.ts + c.dur, p.ts + p.dur) << pts << "+" << pdur << " holds " << a << ".." << b;
  }
}

TEST(ChromeTraceInteger, TotalsStayUnbiased) {
  // 3 µs kernels at random offsets: truncating the length (ONNX Runtime's
  // way, and this sink's before) loses ~0.5 µs each; flooring the start and
  // ceiling the end adds ~1 µs.
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> start(0, 1'000'000'000), len(2500, 3500);
  int64_t true_ns = 0, written_us = 0;
  for (int i = 0; i < 200000; ++i) {
    const int64_t ts = start(rng), dur = len(rng);
    true_ns += dur;
    written_us += integer_slice(ts, dur).dur;
  }
  EXPECT_NEAR(double(written_us) * 1000 / double(true_ns), 1.0, 0.002);
}

}  // namespace
}  // namespace epprof::exporter
