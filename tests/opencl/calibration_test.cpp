// The OpenCL EP's clock model (plugins/opencl/calibration.h) on made-up
// clocks: no device needed.
#include "calibration.h"

#include <gtest/gtest.h>

namespace {

using epprof::opencl::ClockModel;
using epprof::opencl::ClockSample;

// Device clock = host clock - 1'000'000 ns, running 100 ppm slow; samples
// at host 10 ms and 1010 ms, each +-500 ns.
ClockModel slow_device() {
  const ClockSample a{10'000'000, 9'000'000, 500, "marker"};
  const ClockSample b{1'010'000'000, 9'000'000 + 999'900'000, 500, "marker"};
  return ClockModel(a, b);
}

TEST(OpenClClockModel, TwoSamplesGiveOffsetAndDrift) {
  const ClockModel m = slow_device();
  EXPECT_NEAR(m.drift_ppm(), 100.01, 0.01);  // host ns per device ns - 1
  EXPECT_EQ(m.offset_ns(), 1'000'000);
  EXPECT_EQ(m.error_bound_ns(), 500);
  // Halfway: device 500 ms after sample a is host 500.05 ms after it.
  EXPECT_NEAR(static_cast<double>(m.to_host(9'000'000 + 500'000'000)), 10'000'000 + 500'050'005.0, 2.0);
}

using epprof::opencl::AnchoredClock;

TEST(OpenClAnchoredClock, CommandsInsideTheirBracketsKeepTheModelsPlace) {
  const ClockModel m = slow_device();
  std::vector<AnchoredClock::Sample> s;
  for (int64_t q : {100'000'000, 100'050'000, 300'000'000}) s.push_back({q, m.to_host(q) - 300, m.to_host(q) + 700});
  const AnchoredClock c(m, s);
  EXPECT_EQ(c.corrected(), 0u);
  EXPECT_EQ(c.inconsistent(), 0u);
  for (int64_t t : {0, 100'000'000, 200'000'000, 900'000'000}) EXPECT_EQ(c.to_host(t), m.to_host(t)) << t;
  EXPECT_EQ(c.error_ns(s[0], s[0].queued_ns + 2'000), 1'000 + 2);  // the bracket, and 1000 ppm of 2 us
}

// A scope whose run failed before its first command: no samples, the model.
TEST(OpenClAnchoredClock, NoSamplesLeaveTheModel) {
  const ClockModel m = slow_device();
  const AnchoredClock c(m, {});
  EXPECT_EQ(c.corrected(), 0u);
  EXPECT_EQ(c.inconsistent(), 0u);
  for (int64_t t : {0, 100'000'000}) EXPECT_EQ(c.to_host(t), m.to_host(t)) << t;
}

TEST(OpenClAnchoredClock, ACommandOutsideItsBracketIsMovedIntoIt) {
  const ClockModel m = slow_device();
  const int64_t q = 100'000'000, p = m.to_host(q);
  // The enqueue call began 5 us after where the model puts QUEUED: the
  // command cannot have been queued before the call began.
  const AnchoredClock c(m, {{q, p + 5'000, p + 6'000}});
  EXPECT_EQ(c.corrected(), 1u);
  EXPECT_EQ(c.max_correction_ns(), 5'000);
  EXPECT_EQ(c.to_host(q), p + 5'000);
  EXPECT_EQ(c.to_host(q + 2'000) - c.to_host(q), m.duration(2'000));  // one sample: a constant correction
}

// Two commands back to back on the device, B queued 1 us after A: A's
// bracket needs +5 us, B's allows none. Moving each into its own bracket
// alone would start B 4 us before A ends; the slope-bounded correction
// moves B with A, within B's bracket, and keeps the device's order.
TEST(OpenClAnchoredClock, BackToBackCommandsStayInTheirOrder) {
  const ClockModel m = slow_device();
  const int64_t qa = 100'000'000, qb = qa + 1'000;
  const int64_t a_start = qa + 2'000, a_end = a_start + 3'000, b_start = a_end, b_end = b_start + 3'000;
  const AnchoredClock::Sample a{qa, m.to_host(qa) + 5'000, m.to_host(qa) + 6'000};
  const AnchoredClock::Sample b{qb, m.to_host(qb) - 1'000, m.to_host(qb) + 20'000};
  const AnchoredClock c(m, {b, a});  // any order
  EXPECT_EQ(c.inconsistent(), 0u);
  EXPECT_GE(c.to_host(b_start), c.to_host(a_end));
  EXPECT_GT(c.to_host(b_end), c.to_host(b_start));
  // Both QUEUED times lie inside their brackets.
  for (const auto& s : {a, b}) {
    EXPECT_GE(c.to_host(s.queued_ns), s.lo);
    EXPECT_LE(c.to_host(s.queued_ns), s.hi);
  }
}

TEST(OpenClAnchoredClock, BracketsNoSlopeBoundedCorrectionMeetsAreCounted) {
  const ClockModel m = slow_device();
  const int64_t q = 100'000'000;
  // 1 us apart on the device, the host brackets 50 us apart: 1000 ppm of
  // 1 us allows 1 ns of change, not 50 us.
  const AnchoredClock c(m, {{q, m.to_host(q) - 100, m.to_host(q) + 100},
                            {q + 1'000, m.to_host(q + 1'000) + 50'000, m.to_host(q + 1'000) + 50'100}});
  EXPECT_EQ(c.inconsistent(), 2u);
}

TEST(OpenClClockModel, SamplesTooCloseGiveOffsetOnly) {
  const ClockSample a{10'000, 5'000, 100, "marker"};
  const ClockSample b{20'000, 15'001, 300, "marker"};  // 10 us apart: no slope from that
  const ClockModel m(a, b);
  EXPECT_EQ(m.drift_ppm(), 0.0);
  EXPECT_EQ(m.error_bound_ns(), 300);
  EXPECT_EQ(m.to_host(7'000), 12'000);
}

}  // namespace
