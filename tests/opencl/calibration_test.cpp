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

TEST(OpenClClockModel, ACommandInsideItsBracketKeepsTheModelsPlace) {
  const ClockModel m = slow_device();
  const int64_t queued = 100'000'000;  // device
  const int64_t predicted = m.to_host(queued);
  const ClockModel::Anchored a = m.to_host_anchored(queued + 2'000, queued, predicted - 300, predicted + 700);
  EXPECT_EQ(a.correction_ns, 0);
  EXPECT_EQ(a.error_ns, 1'000);
  EXPECT_EQ(a.host_ns, predicted + m.duration(2'000));
}

TEST(OpenClClockModel, ACommandOutsideItsBracketIsMovedToItsNearestEdge) {
  const ClockModel m = slow_device();
  const int64_t queued = 100'000'000;
  const int64_t predicted = m.to_host(queued);
  // The enqueue call happened 5 us after where the model puts QUEUED: the
  // command cannot have been queued before its enqueue call began.
  ClockModel::Anchored a = m.to_host_anchored(queued + 2'000, queued, predicted + 5'000, predicted + 6'000);
  EXPECT_EQ(a.correction_ns, 5'000);
  EXPECT_EQ(a.host_ns, predicted + 5'000 + m.duration(2'000));
  EXPECT_EQ(a.error_ns, 1'000);
  // ...nor after it returned.
  a = m.to_host_anchored(queued, queued, predicted - 9'000, predicted - 8'000);
  EXPECT_EQ(a.correction_ns, 8'000);
  EXPECT_EQ(a.host_ns, predicted - 8'000);
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
