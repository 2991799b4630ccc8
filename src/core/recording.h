// A recorded scope: its host events (a Recorder), the clock readings that
// bracket it, its trace file and its metadata. It is what the way out
// (src/scope/) writes once the scope has stopped. A Profiler records the C
// API's events into one; a session with a trace file records the records it
// accepts into one of its own, so the same pipeline and sinks write both,
// and a session needs no profiler.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/name_filter.h"
#include "core/recorder.h"
#include "epprof/event.h"
#include "epprof/status.h"

namespace epprof::io {
class AtomicFile;
}

namespace epprof::core {

// What the trace leaves out (epprof_trace_filter); scope/trace_filter.*
// applies it on the way out.
struct TraceFilterSettings {
  uint32_t categories = 0;  // bit (1u << epprof_category) per category kept; 0: all
  NameFilter names;
};

// How a scope records and where its trace goes.
struct ScopeConfig {
  std::string trace_path;
  std::string scope_name = "profile";
  uint64_t memory_budget_bytes = 64ull << 20;
  uint64_t disk_budget_bytes = 16ull << 30;
  std::string spill_dir;
  bool integer_timestamps = false;
  bool sqlite = false;  // a SQLite database rather than JSON
  std::shared_ptr<const TraceFilterSettings> filter;  // nullptr: the trace is whole
};

class Recording {
 public:
  // Opens the temporary trace file now, so an unwritable path fails here.
  // Throws std::runtime_error with a message naming the path on failure.
  explicit Recording(ScopeConfig config);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  // T0 on the monotonic and wall clocks; then the scope records.
  void start();
  // The second clock reading; the way out may then run.
  void stop();

  const ScopeConfig& config() const { return config_; }
  ClockPair start_pair() const { return start_pair_; }
  ClockPair stop_pair() const { return stop_pair_; }
  int64_t t0_epoch_ns() const { return t0_epoch_ns_; }
  // Ticks to ns from T0 until stop() has the second point.
  const TickConverter& provisional() const { return provisional_; }
  Recorder& recorder() { return recorder_; }
  const Recorder& recorder() const { return recorder_; }
  io::AtomicFile& file() { return *file_; }

  // The host's metadata fields, in the order first set; a key set again
  // keeps its place and takes the new value. Thread-safe.
  void set_metadata(std::string key, std::string value);
  std::vector<std::pair<std::string, std::string>> metadata() const;

  ThreadStream* add_thread(int64_t tid) { return recorder_.add_thread(tid); }

  // An event the host timed itself, on the host clock in ns (the time base
  // of epprof_event_record and of session records).
  epprof_status* record(ThreadStream& s, uint8_t category, uint32_t name, uint64_t id, int64_t start_ns,
                        int64_t dur_ns, const epprof_arg* args, size_t num_args) noexcept;
  // The record of `o`, `dur` long (ticks, or ns when flags has
  // kRecordDurationNs), with its args checked and encoded; nothing is
  // written when an arg is bad. `fn` names the entry point in the error.
  epprof_status* write_with_args(ThreadStream& s, const OpenEvent& o, uint64_t dur, uint8_t flags,
                                 const epprof_arg* args, size_t num_args, const char* fn) noexcept;

 private:
  ScopeConfig config_;
  std::unique_ptr<io::AtomicFile> file_;
  Recorder recorder_;
  ClockPair start_pair_{};
  ClockPair stop_pair_{};
  int64_t t0_epoch_ns_ = 0;
  TickConverter provisional_;

  mutable std::mutex meta_mu_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace epprof::core
