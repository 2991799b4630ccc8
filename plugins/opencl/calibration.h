// Device clock -> host clock. The device's profiling clock (CL_PROFILING_*
// timestamps) is its own; each calibration sample pairs a device time with
// the host time of the same instant, within +-error_ns. Two samples (at
// start_profiling and at end_profiling) give a linear model, offset plus
// drift; every device timestamp between them converts with an error no
// larger than the larger of the two samples' errors (the true line lies
// within +-error of both endpoints, so within +-max(error) between them) --
// if the two clocks run at a constant rate against each other between the
// samples. They need not: a host clock under NTP slew changes rate, and
// PoCL's device clock was seen to depart from the line by microseconds.
// Each command therefore also carries its own sample (the host bracket of
// its enqueue call, which holds its QUEUED time) and is placed by it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <CL/cl.h>

namespace epprof::opencl {

struct ClockSample {
  int64_t host_ns = 0;    // host clock (epprof_host_api::clock_now_ns)
  int64_t device_ns = 0;  // device profiling clock
  int64_t error_ns = 0;   // half-width of the host interval bracketing the device read
  const char* method = "none";  // "clGetDeviceAndHostTimer" or "marker"
};

class ClockModel {
 public:
  // From one sample: offset only, no drift.
  explicit ClockModel(const ClockSample& a);
  // From two samples: offset and drift. Falls back to a's offset when the
  // samples are too close together for the slope to mean anything.
  ClockModel(const ClockSample& a, const ClockSample& b);

  int64_t to_host(int64_t device_ns) const;      // a device time on the host clock
  int64_t duration(int64_t device_dur_ns) const;  // a device duration in host ns
  int64_t error_bound_ns() const { return error_ns_; }
  double drift_ppm() const { return (slope_ - 1.0) * 1e6; }
  int64_t offset_ns() const { return a_.host_ns - a_.device_ns; }  // host - device at sample a
  std::string describe() const;  // the model in words, for the trace metadata

 private:
  ClockSample a_;
  double slope_ = 1.0;
  int64_t error_ns_ = 0;
  bool two_point_ = false;
};

// The device clock on the host clock, anchored command by command: the
// model plus a correction c(t) such that every command's QUEUED time lands
// inside the host bracket of its enqueue call (where OpenCL says it was
// stamped), and c changes by at most kMaxSlope ns per device ns. That bound
// keeps the device's own order and durations: two commands one after the
// other on the device stay so on the host, whatever their brackets. c is
// found at the commands' QUEUED times (each as close to 0 as the brackets
// allow) and interpolated linearly between them.
class AnchoredClock {
 public:
  static constexpr double kMaxSlope = 1e-3;  // 1000 ppm: far above any clock's residual drift

  struct Sample {
    int64_t queued_ns;  // device clock
    int64_t lo, hi;     // host bracket of the enqueue call
  };
  AnchoredClock(const ClockModel& model, std::vector<Sample> samples);

  int64_t to_host(int64_t device_ns) const { return model_.to_host(device_ns) + correction(device_ns); }
  // Bound on the error of to_host(device_ns) for the command of `s`: its
  // bracket's width, plus what c may change between its QUEUED and device_ns.
  int64_t error_ns(const Sample& s, int64_t device_ns) const;

  uint64_t corrected() const { return corrected_; }          // samples with c != 0
  int64_t max_correction_ns() const { return max_abs_; }     // max |c| at a sample
  uint64_t inconsistent() const { return inconsistent_; }    // brackets no slope-bounded c meets

 private:
  int64_t correction(int64_t device_ns) const;
  ClockModel model_;
  std::vector<int64_t> at_, c_;  // c at the samples' QUEUED times, ascending
  uint64_t corrected_ = 0, inconsistent_ = 0;
  int64_t max_abs_ = 0;
};

// Takes the best of several samples (the narrowest bracket).
// clGetDeviceAndHostTimer where the driver implements it; otherwise a marker
// command whose enqueue call is bracketed by host clock reads t0 and t1: its
// QUEUED time lies in [t0, t1]. `host_now` is the host clock.
ClockSample calibrate(cl_device_id device, cl_command_queue queue, int64_t (*host_now)(void));

}  // namespace epprof::opencl
