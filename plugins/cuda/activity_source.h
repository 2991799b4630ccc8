// Where the CUDA EP's profiler gets its device records from: CUPTI in the
// plugin (cupti_source.h), a fake fed with synthetic records in tests. The
// profiler never calls CUPTI itself.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "records.h"

namespace epprof::cuda {

class ActivitySource {
 public:
  virtual ~ActivitySource() = default;

  // From now on, deliver every record batch to `sink` (under the source's
  // own lock, from whatever thread CUPTI completes buffers on). The first
  // attach turns tracing on. False with `error` set when it cannot.
  virtual bool attach(RecordConverter* sink, std::string* error) = 0;
  // Flushes what the device has finished into every attached sink, then
  // stops delivering to `sink`; the last detach turns tracing off. After it
  // returns the source no longer touches `sink`.
  virtual void detach(RecordConverter* sink) = 0;
  // Records the source lost (CUPTI buffers full), since the process began.
  virtual uint64_t dropped_records() const = 0;
  // The device work issued next on the calling thread is tagged with `id`,
  // until pop_external_id(id). Properly nested per thread. False with
  // `error` set on failure.
  virtual bool push_external_id(uint64_t id, std::string* error) = 0;
  virtual bool pop_external_id(uint64_t id, std::string* error) = 0;
  // How record timestamps relate to the host clock, for the metadata.
  virtual std::string clock_description() const = 0;
};

// A per-thread stack of external ids shared by every profiler of the
// plugin: two profiling scopes (session and run) get start_event with the
// same node id, and CUPTI needs it pushed only once. enter/leave say when
// the vendor push/pop is due.
class SharedIdStack {
 public:
  // True when `id` is new on top (push it to the vendor).
  bool enter(uint64_t id);
  // The vendor refused the push of the top id: it stays for its holders,
  // but its last leave pops nothing from the vendor.
  void mark_not_pushed() { entries_.back().pushed = false; }
  enum class Leave { kMismatch, kStillHeld, kPop };
  // kMismatch (nothing changes) if `id` is not on top; kPop when its last
  // holder left and the vendor holds it (pop it from the vendor); else
  // kStillHeld.
  Leave leave(uint64_t id);
  size_t depth() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t id;
    uint32_t holders;
    bool pushed;
  };
  std::vector<Entry> entries_;
};

}  // namespace epprof::cuda
