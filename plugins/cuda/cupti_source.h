// The ActivitySource of the plugin: CUPTI's activity API, process-wide (as
// CUPTI is), reached through a CuptiApi table (cupti_api.h): libcupti opened
// at run time in the plugin, fakes in tests.
//
// init registers the timestamp callback (every record timestamp is then a
// host-clock reading) and the buffer callbacks. The first attach enables
// kTracedKinds (cupti_records.h), the last detach disables them.
//
// Locking: CUPTI may call buffer_completed on its own thread while it holds
// its own lock, and buffer_completed takes the sinks' lock. So no CUPTI call
// is ever made under the sinks' lock: attach and detach serialise on a
// separate control lock, which the callback never takes.
//
// Losses: every record the source cannot deliver is counted in
// dropped_records(): those CUPTI dropped (per buffer's context and stream,
// and in its global queue, where per-thread buffers count theirs), those it
// reports as unreadable, and those a failed allocation lost. Nothing thrown
// leaves a callback.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "activity_source.h"
#include "cupti_api.h"
#include "cupti_records.h"
#include "epprof/ep_profiler.h"

namespace epprof::cuda {

// Reads every record of a completed buffer into `batch`, through
// api.activity_get_next_record, and returns how many were lost: each record
// CUPTI reports as incomplete or invalid, and each the parser could not
// store. It reads on past an unreadable record while CUPTI moves to the
// next, and stops only at the buffer's end (CUPTI_ERROR_MAX_LIMIT_REACHED)
// or where CUPTI cannot move on, counting that as one more lost record.
uint64_t drain_buffer(const CuptiApi& api, uint8_t* buffer, size_t valid_size, RecordBatch* batch,
                      CallbackNamer namer) noexcept;

class CuptiSource final : public ActivitySource {
 public:
  // The process's source. Registers CUPTI's callbacks; null with `error`
  // naming the call and its result when that fails. `host` gives the clock
  // and must outlive the source. One source at a time: CUPTI's callbacks
  // carry no user data. The plugin never destroys its source (CUPTI may
  // call back until the process exits); tests destroy theirs.
  static CuptiSource* create(const CuptiApi& api, const epprof_host_api* host, std::string* error);
  ~CuptiSource() override;

  bool attach(RecordConverter* sink, std::string* error) override;
  void detach(RecordConverter* sink) override;
  uint64_t dropped_records() const override { return dropped_.load(std::memory_order_relaxed); }
  bool push_external_id(uint64_t id, std::string* error) override;
  bool pop_external_id(uint64_t id, std::string* error) override;
  std::string clock_description() const override;

  // CUPTI's callbacks, public for tests that play CUPTI.
  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                        size_t valid_size);

 private:
  explicit CuptiSource(const CuptiApi& api) : api_(api) {}
  bool check(CUptiResult r, const char* call, std::string* error) const;
  void count_global_drops() noexcept;
  void deliver(const RecordBatch& batch) noexcept;

  const CuptiApi api_;
  std::mutex control_mu_;  // attach/detach; held across CUPTI calls, never taken by a callback
  size_t attached_ = 0;    // under control_mu_
  std::mutex sinks_mu_;    // sinks_; never held across a CUPTI call
  std::vector<RecordConverter*> sinks_;
  std::atomic<uint64_t> dropped_{0};
};

// The plugin's source: libcupti opened and the callbacks registered on the
// first call; later calls return the same source, or the same error.
ActivitySource* cupti_source(const epprof_host_api* host, std::string* error);

}  // namespace epprof::cuda
