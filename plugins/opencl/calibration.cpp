#include "calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace epprof::opencl {

namespace {

constexpr int kSamples = 16;
constexpr int64_t kMinSpanNs = 1000000;  // 1 ms: shorter spans give no usable drift

// Host interval around one device timer read; false if the driver lacks it.
bool timer_sample(cl_device_id device, int64_t (*host_now)(void), ClockSample* out) {
  cl_ulong dev = 0, host = 0;
  const int64_t t0 = host_now();
  const cl_int err = clGetDeviceAndHostTimer(device, &dev, &host);
  const int64_t t1 = host_now();
  if (err != CL_SUCCESS) return false;
  // The driver's host timer is not necessarily our host clock: bracket the
  // call with ours instead of trusting it.
  *out = ClockSample{t0 + (t1 - t0) / 2, static_cast<int64_t>(dev), (t1 - t0 + 1) / 2, "clGetDeviceAndHostTimer"};
  return true;
}

// A marker's CL_PROFILING_COMMAND_QUEUED is the device time "when the
// command is enqueued by the host" (OpenCL 3.0, clGetEventProfilingInfo):
// inside the enqueue call, which is all the host bracket needs to hold. Its
// END is stamped by the device's worker whenever it gets to it, which PoCL
// was seen to do after clFinish returned: a bracket around enqueue and
// clFinish then did not hold the END, and device slices were placed up to
// tens of us before their nodes, outside the error bound.
bool marker_sample(cl_command_queue queue, int64_t (*host_now)(void), ClockSample* out) {
  cl_event ev = nullptr;
  const int64_t t0 = host_now();
  cl_int err = clEnqueueMarkerWithWaitList(queue, 0, nullptr, &ev);
  const int64_t t1 = host_now();
  if (err == CL_SUCCESS) err = clFinish(queue);
  cl_ulong queued = 0;
  if (err == CL_SUCCESS)
    err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued, nullptr);
  if (ev) clReleaseEvent(ev);
  if (err != CL_SUCCESS) return false;
  *out = ClockSample{t0 + (t1 - t0) / 2, static_cast<int64_t>(queued), (t1 - t0 + 1) / 2, "marker"};
  return true;
}

}  // namespace

ClockSample calibrate(cl_device_id device, cl_command_queue queue, int64_t (*host_now)(void)) {
  ClockSample best;
  best.error_ns = INT64_MAX;
  ClockSample s;
  bool use_timer = timer_sample(device, host_now, &s);  // PoCL: CL_INVALID_OPERATION
  for (int i = 0; i < kSamples; ++i) {
    const bool ok = use_timer ? timer_sample(device, host_now, &s) : marker_sample(queue, host_now, &s);
    if (ok && s.error_ns < best.error_ns) best = s;
  }
  if (best.error_ns == INT64_MAX) best = ClockSample{};  // the device gave no time at all
  return best;
}

ClockModel::ClockModel(const ClockSample& a) : a_(a), error_ns_(a.error_ns) {}

ClockModel::ClockModel(const ClockSample& a, const ClockSample& b) : a_(a) {
  error_ns_ = std::max(a.error_ns, b.error_ns);
  const int64_t dev_span = b.device_ns - a.device_ns;
  if (dev_span >= kMinSpanNs) {
    slope_ = static_cast<double>(b.host_ns - a.host_ns) / static_cast<double>(dev_span);
    two_point_ = true;
  }
}

int64_t ClockModel::to_host(int64_t device_ns) const {
  return a_.host_ns + static_cast<int64_t>(std::llround(static_cast<double>(device_ns - a_.device_ns) * slope_));
}

ClockModel::Anchored ClockModel::to_host_anchored(int64_t device_ns, int64_t queued_ns, int64_t lo,
                                                  int64_t hi) const {
  const int64_t predicted = to_host(queued_ns);
  const int64_t queued = std::clamp(predicted, lo, hi);
  return Anchored{queued + duration(device_ns - queued_ns), hi - lo,
                  predicted < lo ? lo - predicted : predicted - queued};
}

int64_t ClockModel::duration(int64_t device_dur_ns) const {
  return static_cast<int64_t>(std::llround(static_cast<double>(device_dur_ns) * slope_));
}

std::string ClockModel::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "host_ns = %lld + (device_ns - %lld) * %.9f; %s, from %s samples at start_profiling%s",
                static_cast<long long>(a_.host_ns), static_cast<long long>(a_.device_ns), slope_,
                two_point_ ? "offset and drift" : "offset only", a_.method,
                two_point_ ? " and end_profiling" : "");
  return buf;
}

}  // namespace epprof::opencl
