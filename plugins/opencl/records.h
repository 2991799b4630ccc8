// What the OpenCL EP's profiler reads, apart from the device itself: the
// commands a dispatch completed and the buffers it allocated and freed (the
// records compute hands to the Registry), and the device's clock. A test
// feeds made-up records and a made-up clock through the same seams.
#pragma once

#include <CL/cl.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "calibration.h"

namespace epprof::opencl {

// The host's profiling clock (epprof_host_api::clock_now_ns).
using HostClock = int64_t (*)(void);

// One completed command on the device's profiling clock (ns).
struct CommandRecord {
  enum class Kind { Kernel, CopyToDevice, CopyToHost } kind = Kind::Kernel;
  std::string name;  // kernel name, or "MemcpyHtoD" / "MemcpyDtoH"
  cl_ulong queued = 0, submit = 0, start = 0, end = 0;
  // Host clock read just before and just after the clEnqueue* call. OpenCL
  // stamps QUEUED "when the command is enqueued by the host", inside that
  // call, so `queued` happened within [enqueue_begin, enqueue_end] on the
  // host clock: each command carries its own calibration sample. Both 0
  // when the dispatch had no host clock.
  int64_t enqueue_begin = 0, enqueue_end = 0;
  std::array<size_t, 3> global{};  // kernels: global work size
  cl_uint work_dim = 0;
  size_t bytes = 0;  // copies
};

// A device buffer's allocation or release, on the host clock: the
// profilers report it as a memory event (EPPROF_CATEGORY_MEMORY).
struct MemoryRecord {
  bool alloc = true;
  uint64_t id = 0;     // the cl_mem
  uint64_t bytes = 0;  // allocations
  int64_t host_ns = 0;
};

// The device's profiling clock against the host's.
class DeviceClock {
 public:
  virtual ~DeviceClock() = default;
  // A calibration sample: a device time paired with the host time of the
  // same instant (calibration.h).
  virtual ClockSample sample(HostClock host_now) = 0;
  virtual const std::string& description() const = 0;  // for the trace's metadata and track name
};

}  // namespace epprof::opencl
