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

int64_t ClockModel::duration(int64_t device_dur_ns) const {
  return static_cast<int64_t>(std::llround(static_cast<double>(device_dur_ns) * slope_));
}

AnchoredClock::AnchoredClock(const ClockModel& model, std::vector<Sample> samples) : model_(model) {
  std::sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.queued_ns < b.queued_ns; });
  const size_t n = samples.size();
  if (n == 0) return;  // no command to anchor: the model alone
  // Each sample's allowed correction [lo, hi], narrowed by its neighbours':
  // c may change by kMaxSlope per device ns, forwards and backwards.
  std::vector<double> lo(n), hi(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t predicted = model_.to_host(samples[i].queued_ns);
    lo[i] = static_cast<double>(samples[i].lo - predicted);
    hi[i] = static_cast<double>(samples[i].hi - predicted);
  }
  auto reach = [&](size_t a, size_t b) {
    return kMaxSlope * static_cast<double>(std::llabs(samples[b].queued_ns - samples[a].queued_ns));
  };
  for (size_t i = 1; i < n; ++i) {
    lo[i] = std::max(lo[i], lo[i - 1] - reach(i - 1, i));
    hi[i] = std::min(hi[i], hi[i - 1] + reach(i - 1, i));
  }
  for (size_t i = n - 1; i-- > 0;) {
    lo[i] = std::max(lo[i], lo[i + 1] - reach(i, i + 1));
    hi[i] = std::min(hi[i], hi[i + 1] + reach(i, i + 1));
  }
  // The correction closest to none; both bounds are slope-bounded, so the
  // clamp is too.
  at_.reserve(n);
  c_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    double c = 0.0;
    if (lo[i] > hi[i]) {  // no slope-bounded c: this one's own bracket, alone
      ++inconsistent_;
      const int64_t predicted = model_.to_host(samples[i].queued_ns);
      c = static_cast<double>(std::clamp(predicted, samples[i].lo, samples[i].hi) - predicted);
    } else {
      c = std::clamp(0.0, lo[i], hi[i]);
    }
    const auto ci = static_cast<int64_t>(std::llround(c));
    if (ci != 0) ++corrected_;
    max_abs_ = std::max<int64_t>(max_abs_, std::llabs(ci));
    at_.push_back(samples[i].queued_ns);
    c_.push_back(ci);
  }
}

int64_t AnchoredClock::correction(int64_t device_ns) const {
  if (at_.empty()) return 0;
  const auto next = std::upper_bound(at_.begin(), at_.end(), device_ns);
  if (next == at_.begin()) return c_.front();
  if (next == at_.end()) return c_.back();
  const size_t j = static_cast<size_t>(next - at_.begin()), i = j - 1;
  const double f = static_cast<double>(device_ns - at_[i]) / static_cast<double>(at_[j] - at_[i]);
  return c_[i] + static_cast<int64_t>(std::llround(f * static_cast<double>(c_[j] - c_[i])));
}

int64_t AnchoredClock::error_ns(const Sample& s, int64_t device_ns) const {
  return (s.hi - s.lo) +
         static_cast<int64_t>(std::ceil(kMaxSlope * static_cast<double>(std::llabs(device_ns - s.queued_ns))));
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
