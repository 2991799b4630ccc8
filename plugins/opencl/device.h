// The OpenCL device the EP runs on: platform, device, context, one in-order
// queue with profiling enabled, and the kernel programs (built lazily, once).
// Dispatch is one compute call's commands: explicit host->device copies,
// kernels, device->host copies, each with its own profiling cl_event, read
// after completion into CommandRecords (device clock), each with the host
// clock's bracket around the call that enqueued it.
#pragma once
#include <CL/cl.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels.h"
#include "records.h"

namespace epprof::opencl {

const char* cl_error_name(cl_int err);  // "CL_OUT_OF_RESOURCES" or the number

// A failed OpenCL call: its error code and a message naming what failed.
struct ClError {
  cl_int code = CL_SUCCESS;
  std::string message;
  bool out_of_memory() const;  // device or host memory exhausted
};

class Device final : public DeviceClock {
 public:
  // Opens the first device of the first platform that has one (GPUs
  // first). Returns null with `error` set when there is none.
  static std::unique_ptr<Device> open(std::string* error);
  ~Device() override;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The built program, or null with `error` holding the build log.
  // Thread-safe; a failed build is remembered, not retried.
  cl_program program(Program p, std::string* error);

  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  cl_device_id id() const { return device_; }
  const std::string& description() const override { return description_; }  // "device (platform)"
  ClockSample sample(HostClock host_now) override { return calibrate(device_, queue_, host_now); }
  uint64_t max_alloc_bytes() const { return max_alloc_; }

 private:
  Device() = default;
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::string description_;
  uint64_t max_alloc_ = 0;
  std::mutex mu_;
  struct Built {
    bool tried = false;
    cl_program program = nullptr;
    std::string error;
  };
  std::array<Built, static_cast<size_t>(Program::Count_)> programs_;
};

class Dispatch {
 public:
  // `alloc_limit` caps buffer sizes (0: the device's own limit); bigger
  // requests fail as out of device memory. `host_now` (may be null) brackets
  // each enqueue call (CommandRecord::enqueue_begin/end).
  Dispatch(Device& device, uint64_t alloc_limit, HostClock host_now)
      : device_(device), limit_(alloc_limit), host_now_(host_now) {}
  ~Dispatch();
  Dispatch(const Dispatch&) = delete;
  Dispatch& operator=(const Dispatch&) = delete;

  // Each returns false with error() set. Commands are enqueued without
  // blocking; finish() waits for all of them and reads their timestamps.
  bool upload(const void* data, size_t bytes, cl_mem* out);  // create + write
  bool create_output(size_t bytes, cl_mem* out);
  bool kernel(Program p, const char* name, cl_kernel* out);  // a fresh cl_kernel, released with the dispatch
  bool set_arg(cl_kernel k, cl_uint index, size_t size, const void* value, const char* what);
  bool run(cl_kernel k, const char* name, cl_uint work_dim, const size_t* global);
  bool download(cl_mem buffer, void* data, size_t bytes);
  bool finish();

  const ClError& error() const { return error_; }
  const std::vector<CommandRecord>& records() const { return records_; }
  // The buffers' allocations, and their releases, which the destructor
  // makes right after this (stamped now). Empty without a host clock.
  std::vector<MemoryRecord> take_memory_records();

 private:
  bool fail(cl_int code, const std::string& what);
  // Runs `enqueue` (a clEnqueue* call producing `*event`) between two host
  // clock reads stored in `record`; on success tracks the event.
  template <typename Enqueue>
  cl_int enqueue_tracked(CommandRecord record, cl_event* event, Enqueue enqueue);

  Device& device_;
  uint64_t limit_;
  HostClock host_now_;
  std::vector<cl_mem> buffers_;
  std::vector<cl_kernel> kernels_;
  std::vector<cl_event> events_;
  std::vector<CommandRecord> records_;  // parallel to events_ until finish()
  std::vector<MemoryRecord> memory_;    // allocations, with a host clock
  ClError error_;
};

}  // namespace epprof::opencl
