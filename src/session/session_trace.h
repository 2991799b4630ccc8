// A session's trace file: the records the session accepted, written by the
// way out (src/scope/) as a profiler's scope is. Host records become host
// events in a core::Recording (a node's record declares its node, so
// attribution needs no name convention); device records (kernels, copies)
// become the events of one EP profiler per EP they name, handed over at
// the way out's collect stage, so they get device tracks, attribution to
// their node by correlation id, and flows; counter records become args of
// the host event with their id, and counter tracks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ep_hooks.h"
#include "epprof/session.h"

namespace epprof::core {
class Recording;
struct ThreadStream;
}  // namespace epprof::core

namespace epprof::session {

class RecordedDeviceWork;

class SessionTrace {
 public:
  // Opens the file. Throws std::runtime_error naming the path when it
  // cannot be written, std::bad_alloc.
  explicit SessionTrace(const std::string& path);
  ~SessionTrace();  // an unwritten trace leaves no file
  SessionTrace(const SessionTrace&) = delete;
  SessionTrace& operator=(const SessionTrace&) = delete;

  // One thread at a time (the session's delivery thread). Records that
  // name no interned name are written as "?"; nothing throws.
  void add(const epprof_record* records, size_t count) noexcept;
  // Writes and commits the file. Empty on success, else the reason.
  std::string write();

 private:
  void add_host(const epprof_record& r) noexcept;
  void add_device(const epprof_record& r) noexcept;
  void add_counter(const epprof_record& r) noexcept;

  std::unique_ptr<core::Recording> recording_;
  std::unordered_map<uint32_t, core::ThreadStream*> streams_;  // by the records' tid
  std::vector<std::unique_ptr<core::EpHooks>> device_work_;   // RecordedDeviceWork, one per EP
  std::unordered_map<uint32_t, RecordedDeviceWork*> by_ep_;   // EP name id → its entry above
  uint64_t dropped_ = 0;  // records not kept for want of memory
};

}  // namespace epprof::session
