// A profiling session: filters, a bounded multi-producer buffer drained by
// a delivery thread into the tool's callback, drop accounting, an optional
// trace file, and the session's part of the dispatch counting service.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/name_filter.h"
#include "epprof/session.h"
#include "session/session_trace.h"

namespace epprof::session {

static_assert(sizeof(epprof_record) == EPPROF_RECORD_MIN_SIZE, "the first growable layout");

// Records in another stride than this library's sizeof(epprof_record).
// `records` in, `stride` bytes apart, each `size` saying what it covers:
// read as this library's layout (what a record does not cover is 0).
void read_records(const void* records, size_t stride, size_t n, std::vector<epprof_record>* out);
// This library's records as a tool built with `stride` takes them: the
// records themselves at this library's own stride; else each rewritten
// into *buf, `stride` bytes apart, holding what fits (its `size` says how
// much) and 0 past it. May throw std::bad_alloc.
const epprof_record* in_stride(const epprof_record* records, size_t n, size_t stride,
                               std::vector<unsigned char>* buf);

struct Filters {
  uint32_t categories = 0;
  uint32_t kinds = 0;
  std::vector<uint32_t> counter_names;
  core::NameFilter names;
  uint64_t dispatch_skip = 0, dispatch_count = 0;

  // Every filter but the dispatch range.
  bool accepts(const epprof_record& r) const noexcept;
  // The name filters only: for dispatches, which kind and category filters
  // do not speak of.
  bool accepts_names(uint32_t op_type, uint32_t node, uint32_t ep, uint32_t kernel) const noexcept {
    return names.accepts_node(op_type, node, ep) && names.accepts_kernel(kernel);
  }
  bool in_range(uint64_t ordinal) const noexcept {
    return ordinal >= dispatch_skip && (dispatch_count == 0 || ordinal - dispatch_skip < dispatch_count);
  }
};

struct SessionSettings {
  epprof_replay_mode replay = EPPROF_REPLAY_NONE;
  epprof_buffer_policy policy = EPPROF_BUFFER_LOSSLESS;
  uint64_t capacity_records = 0;   // power of two
  uint64_t watermark_records = 0;  // 1..capacity
  epprof_session_callback_fn callback = nullptr;
  void* callback_user_data = nullptr;
  std::string trace_path;
  epprof_dispatch_callback_fn dispatch_callback = nullptr;
  void* dispatch_user_data = nullptr;
  epprof_counter_record_fn counter_record_callback = nullptr;
  void* counter_record_user_data = nullptr;
  size_t record_size = sizeof(epprof_record);  // the tool's: the callbacks' stride
};

class Session {
 public:
  // Throws std::runtime_error (trace file) or std::bad_alloc.
  Session(SessionSettings settings, Filters filters);
  ~Session();  // joins the delivery thread; does not write the trace (write_trace does)
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void set_handle(uint64_t h) { handle_.store(h, std::memory_order_release); }
  uint64_t handle() const { return handle_.load(std::memory_order_acquire); }
  const SessionSettings& settings() const { return settings_; }
  const Filters& filters() const { return filters_; }

  epprof_session_state state() const { return state_.load(std::memory_order_acquire); }
  void set_state(epprof_session_state s) { state_.store(s, std::memory_order_release); }
  bool on_delivery_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Producer side (any thread). Applies filters and the dispatch range.
  void offer(const epprof_record* records, size_t count) noexcept;
  // Counter records of a dispatch already admitted at query time.
  void offer_counters(const epprof_record* records, size_t count) noexcept;
  // Query time: filters and predicted dispatch range for a dispatch.
  bool admits_dispatch(const epprof_dispatch_info& info) noexcept;

  // Blocks until everything accepted before the call was delivered.
  void flush();
  // Writes the trace, if any. Empty on success, else the reason.
  std::string write_trace();
  void stats(epprof_session_stats& out) const;

  // APPLICATION / USER replay: the open pass, or -1.
  std::atomic<int64_t> open_pass{-1};
  void count_callback_error(const char* what, const std::string& message) noexcept;
  void count_dispatch(uint64_t counter_records) noexcept {
    dispatches_counted_.fetch_add(1, std::memory_order_relaxed);
    counter_records_.fetch_add(counter_records, std::memory_order_relaxed);
  }

 private:
  struct Slot {
    std::atomic<uint64_t> seq;
    epprof_record rec;
  };

  bool try_push(const epprof_record& r) noexcept;
  void push(const epprof_record& r) noexcept;
  void wake_delivery() noexcept;
  void delivery_loop();
  // Moves what is in the buffer to the callback; with `all`, everything
  // reserved before the call, waiting for producers still writing.
  void drain(bool all);
  void deliver(const epprof_record* records, size_t count, uint64_t dropped);

  SessionSettings settings_;
  Filters filters_;
  std::atomic<uint64_t> handle_{0};  // set after the delivery thread started
  std::atomic<epprof_session_state> state_{EPPROF_SESSION_CREATED};

  // The ring: Vyukov's bounded queue, single consumer.
  const uint64_t mask_;
  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> head_{0};  // published by the consumer
  alignas(64) std::atomic<uint64_t> dropped_pending_{0};
  std::atomic<uint64_t> dropped_total_{0};
  std::atomic<uint64_t> filtered_{0};
  std::atomic<uint64_t> producer_waits_{0};
  std::atomic<uint64_t> dispatch_ordinal_{0};  // NODE events seen at emit
  std::atomic<uint64_t> query_ordinal_{0};     // dispatches seen at query
  std::atomic<uint64_t> dispatches_counted_{0};
  std::atomic<uint64_t> counter_records_{0};
  std::atomic<uint64_t> callback_errors_{0};
  std::atomic<bool> warned_{false};

  // Delivery thread.
  std::atomic<bool> wake_{false};
  std::atomic<uint32_t> space_waiters_{0};
  std::mutex mu_;                 // guards the fields below
  std::condition_variable cv_;    // the delivery thread waits here
  std::condition_variable done_cv_;  // flushers wait here
  std::condition_variable space_cv_;  // LOSSLESS producers wait here
  uint64_t flush_requested_ = 0, flush_done_ = 0;
  bool quit_ = false;
  std::vector<epprof_record> batch_;
  std::vector<unsigned char> strided_;  // batch_ in the tool's record_size, when it differs
  std::atomic<uint64_t> delivered_{0}, callback_calls_{0};

  // The trace file, if any: fed on the delivery thread, written by
  // write_trace after the join.
  std::unique_ptr<SessionTrace> trace_;

  std::thread thread_;  // last: started once everything above exists
};

}  // namespace epprof::session
