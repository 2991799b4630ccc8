#include "device.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace epprof::opencl {

const char* cl_error_name(cl_int err) {
  switch (err) {
#define NAME(x) case x: return #x;
    NAME(CL_SUCCESS) NAME(CL_DEVICE_NOT_FOUND) NAME(CL_DEVICE_NOT_AVAILABLE)
    NAME(CL_COMPILER_NOT_AVAILABLE) NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    NAME(CL_OUT_OF_RESOURCES) NAME(CL_OUT_OF_HOST_MEMORY)
    NAME(CL_PROFILING_INFO_NOT_AVAILABLE) NAME(CL_BUILD_PROGRAM_FAILURE)
    NAME(CL_INVALID_VALUE) NAME(CL_INVALID_PLATFORM) NAME(CL_INVALID_DEVICE)
    NAME(CL_INVALID_CONTEXT) NAME(CL_INVALID_COMMAND_QUEUE) NAME(CL_INVALID_MEM_OBJECT)
    NAME(CL_INVALID_PROGRAM) NAME(CL_INVALID_PROGRAM_EXECUTABLE) NAME(CL_INVALID_KERNEL_NAME)
    NAME(CL_INVALID_KERNEL) NAME(CL_INVALID_ARG_INDEX) NAME(CL_INVALID_ARG_VALUE)
    NAME(CL_INVALID_ARG_SIZE) NAME(CL_INVALID_KERNEL_ARGS) NAME(CL_INVALID_WORK_DIMENSION)
    NAME(CL_INVALID_WORK_GROUP_SIZE) NAME(CL_INVALID_GLOBAL_WORK_SIZE) NAME(CL_INVALID_EVENT)
    NAME(CL_INVALID_OPERATION) NAME(CL_INVALID_BUFFER_SIZE)
#undef NAME
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: break;
  }
  static thread_local char buf[32];
  std::snprintf(buf, sizeof buf, "OpenCL error %d", static_cast<int>(err));
  return buf;
}

bool ClError::out_of_memory() const {
  return code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
         code == CL_OUT_OF_HOST_MEMORY || code == CL_INVALID_BUFFER_SIZE;
}

namespace {

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "?";
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  s.resize(std::strlen(s.c_str()));
  return s;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "?";
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  s.resize(std::strlen(s.c_str()));
  return s;
}

}  // namespace

std::unique_ptr<Device> Device::open(std::string* error) {
  cl_uint num_platforms = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (err != CL_SUCCESS || num_platforms == 0) {
    *error = std::string("no OpenCL platform found (clGetPlatformIDs: ") +
             (err != CL_SUCCESS ? cl_error_name(err) : "0 platforms") + ")";
    return nullptr;
  }
  std::vector<cl_platform_id> platforms(num_platforms);
  clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  std::unique_ptr<Device> d(new Device);
  for (cl_device_type type : {cl_device_type{CL_DEVICE_TYPE_GPU}, cl_device_type{CL_DEVICE_TYPE_ALL}}) {
    for (cl_platform_id p : platforms) {
      if (clGetDeviceIDs(p, type, 1, &d->device_, nullptr) == CL_SUCCESS) {
        d->platform_ = p;
        break;
      }
    }
    if (d->platform_) break;
  }
  if (!d->platform_) {
    *error = "no OpenCL device found on " + std::to_string(num_platforms) + " platform(s)";
    return nullptr;
  }
  d->description_ = device_string(d->device_, CL_DEVICE_NAME) + " (" +
                    platform_string(d->platform_, CL_PLATFORM_NAME) + ", " +
                    device_string(d->device_, CL_DEVICE_VERSION) + ")";
  cl_ulong max_alloc = 0;
  clGetDeviceInfo(d->device_, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, nullptr);
  d->max_alloc_ = max_alloc;
  d->context_ = clCreateContext(nullptr, 1, &d->device_, nullptr, nullptr, &err);
  if (!d->context_) {
    *error = std::string("cannot create an OpenCL context on ") + d->description_ + ": " + cl_error_name(err);
    return nullptr;
  }
  // In order, profiling on: every command's QUEUED/SUBMIT/START/END is readable.
  const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  d->queue_ = clCreateCommandQueueWithProperties(d->context_, d->device_, props, &err);
  if (!d->queue_) {
    *error = std::string("cannot create a profiling command queue on ") + d->description_ + ": " + cl_error_name(err);
    return nullptr;
  }
  return d;
}

Device::~Device() {
  for (auto& b : programs_)
    if (b.program) clReleaseProgram(b.program);
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

cl_program Device::program(Program p, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  Built& b = programs_[static_cast<size_t>(p)];
  if (!b.tried) {
    b.tried = true;
    std::string source = program_source(p);
    // Fault injection for tests: a program that does not compile.
    const char* broken = std::getenv("EPPROF_OPENCL_BREAK_PROGRAM");
    if (broken && std::strcmp(broken, program_name(p)) == 0) source += "\n#error injected by EPPROF_OPENCL_BREAK_PROGRAM\n";
    const char* src = source.c_str();
    cl_int err = CL_SUCCESS;
    cl_program prog = clCreateProgramWithSource(context_, 1, &src, nullptr, &err);
    if (prog) err = clBuildProgram(prog, 1, &device_, "", nullptr, nullptr);
    if (err == CL_SUCCESS) {
      b.program = prog;
    } else {
      std::string log;
      size_t n = 0;
      if (prog && clGetProgramBuildInfo(prog, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) == CL_SUCCESS && n) {
        log.resize(n);
        clGetProgramBuildInfo(prog, device_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
        log.resize(std::strlen(log.c_str()));
      }
      if (prog) clReleaseProgram(prog);
      b.error = std::string("building kernel program '") + program_name(p) + "' failed (" + cl_error_name(err) +
                "); build log:\n" + (log.empty() ? "(empty)" : log);
    }
  }
  if (!b.program) *error = b.error;
  return b.program;
}

Dispatch::~Dispatch() {
  // Never leave commands running on buffers we free: wait first.
  if (!events_.empty()) clWaitForEvents(static_cast<cl_uint>(events_.size()), events_.data());
  for (cl_event e : events_) clReleaseEvent(e);
  for (cl_kernel k : kernels_) clReleaseKernel(k);
  for (cl_mem m : buffers_) clReleaseMemObject(m);
}

bool Dispatch::fail(cl_int code, const std::string& what) {
  error_.code = code;
  error_.message = what + ": " + cl_error_name(code);
  return false;
}

template <typename Enqueue>
cl_int Dispatch::enqueue_tracked(CommandRecord record, cl_event* event, Enqueue enqueue) {
  // Room first, so that a tracked event can never fail to be recorded.
  events_.reserve(events_.size() + 1);
  records_.reserve(records_.size() + 1);
  record.enqueue_begin = host_now_ ? host_now_() : 0;
  const cl_int err = enqueue();
  record.enqueue_end = host_now_ ? host_now_() : 0;
  if (err != CL_SUCCESS) return err;
  events_.push_back(*event);
  records_.push_back(std::move(record));
  return CL_SUCCESS;
}

bool Dispatch::create_output(size_t bytes, cl_mem* out) {
  const uint64_t limit = limit_ ? limit_ : device_.max_alloc_bytes();
  if (limit && bytes > limit)
    return fail(CL_MEM_OBJECT_ALLOCATION_FAILURE, "device buffer of " + std::to_string(bytes) +
                                                      " bytes exceeds the allocation limit of " + std::to_string(limit));
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(device_.context(), CL_MEM_READ_WRITE, bytes, nullptr, &err);
  if (!m) return fail(err, "clCreateBuffer(" + std::to_string(bytes) + " bytes)");
  buffers_.push_back(m);
  if (host_now_) memory_.push_back({true, uint64_t(uintptr_t(m)), uint64_t(bytes), host_now_()});
  *out = m;
  return true;
}

std::vector<MemoryRecord> Dispatch::take_memory_records() {
  if (!host_now_) return {};
  const int64_t now = host_now_();
  for (cl_mem m : buffers_) memory_.push_back({false, uint64_t(uintptr_t(m)), 0, now});
  return std::move(memory_);
}

bool Dispatch::upload(const void* data, size_t bytes, cl_mem* out) {
  if (!create_output(bytes, out)) return false;
  CommandRecord r;
  r.kind = CommandRecord::Kind::CopyToDevice;
  r.name = "MemcpyHtoD";
  r.bytes = bytes;
  cl_event ev = nullptr;
  const cl_int err = enqueue_tracked(std::move(r), &ev, [&] {
    return clEnqueueWriteBuffer(device_.queue(), *out, CL_FALSE, 0, bytes, data, 0, nullptr, &ev);
  });
  return err == CL_SUCCESS || fail(err, "clEnqueueWriteBuffer(" + std::to_string(bytes) + " bytes)");
}

bool Dispatch::kernel(Program p, const char* name, cl_kernel* out) {
  std::string build_error;
  cl_program prog = device_.program(p, &build_error);
  if (!prog) return fail(CL_BUILD_PROGRAM_FAILURE, build_error);
  cl_int err = CL_SUCCESS;
  // A fresh kernel object per call: clSetKernelArg on a shared one is not
  // thread-safe, and nodes run concurrently.
  cl_kernel k = clCreateKernel(prog, name, &err);
  if (!k) return fail(err, std::string("clCreateKernel(") + name + ")");
  kernels_.push_back(k);
  *out = k;
  return true;
}

bool Dispatch::set_arg(cl_kernel k, cl_uint index, size_t size, const void* value, const char* what) {
  cl_int err = clSetKernelArg(k, index, size, value);
  return err == CL_SUCCESS || fail(err, std::string("clSetKernelArg(") + what + ")");
}

bool Dispatch::run(cl_kernel k, const char* name, cl_uint work_dim, const size_t* global) {
  CommandRecord r;
  r.kind = CommandRecord::Kind::Kernel;
  r.name = name;
  r.work_dim = work_dim;
  for (cl_uint i = 0; i < work_dim && i < 3; ++i) r.global[i] = global[i];
  cl_event ev = nullptr;
  const cl_int err = enqueue_tracked(std::move(r), &ev, [&] {
    return clEnqueueNDRangeKernel(device_.queue(), k, work_dim, nullptr, global, nullptr, 0, nullptr, &ev);
  });
  return err == CL_SUCCESS || fail(err, std::string("clEnqueueNDRangeKernel(") + name + ")");
}

bool Dispatch::download(cl_mem buffer, void* data, size_t bytes) {
  CommandRecord r;
  r.kind = CommandRecord::Kind::CopyToHost;
  r.name = "MemcpyDtoH";
  r.bytes = bytes;
  cl_event ev = nullptr;
  const cl_int err = enqueue_tracked(std::move(r), &ev, [&] {
    return clEnqueueReadBuffer(device_.queue(), buffer, CL_FALSE, 0, bytes, data, 0, nullptr, &ev);
  });
  return err == CL_SUCCESS || fail(err, "clEnqueueReadBuffer(" + std::to_string(bytes) + " bytes)");
}

bool Dispatch::finish() {
  if (events_.empty()) return true;
  cl_int err = clWaitForEvents(static_cast<cl_uint>(events_.size()), events_.data());
  if (err != CL_SUCCESS) return fail(err, "clWaitForEvents");
  for (size_t i = 0; i < events_.size(); ++i) {
    CommandRecord& r = records_[i];
    const cl_event e = events_[i];
    const struct {
      cl_profiling_info what;
      cl_ulong* where;
    } fields[] = {{CL_PROFILING_COMMAND_QUEUED, &r.queued},
                  {CL_PROFILING_COMMAND_SUBMIT, &r.submit},
                  {CL_PROFILING_COMMAND_START, &r.start},
                  {CL_PROFILING_COMMAND_END, &r.end}};
    for (const auto& f : fields) {
      err = clGetEventProfilingInfo(e, f.what, sizeof(cl_ulong), f.where, nullptr);
      if (err != CL_SUCCESS) return fail(err, "clGetEventProfilingInfo");
    }
  }
  for (cl_event e : events_) clReleaseEvent(e);
  events_.clear();
  return true;
}

}  // namespace epprof::opencl
