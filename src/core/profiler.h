// A profiler: one profiling scope as the C API drives it. It records host
// events into its Recording (core/recording.h: recorder, clock, trace file,
// metadata) on the hot paths below, and owns its EP profiler instances;
// at stop the way out (src/scope/) writes the recording.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/args.h"
#include "core/clock.h"
#include "core/ep_hooks.h"
#include "core/intern.h"
#include "core/recorder.h"
#include "core/recording.h"
#include "epprof/profiler.h"

namespace epprof::core {

// What an event needs to know about its profiler, kept in one word beside
// its handle so an event does not read the Profiler itself.
constexpr uint32_t kHotRunning = 1;      // started and not stopped
constexpr uint32_t kHotStartEvents = 2;  // an EP profiler wants start_event
constexpr uint32_t kHotStopEvents = 4;   // an EP profiler wants stop_event
constexpr uint32_t kHotTsc = 8;          // ticks are the TSC (ticks_are_tsc())

class Profiler;

// An open event block (epprof_event_block), in the host's memory. A begin
// or an end reads the first 48 bytes, the stream's first line and
// descs[index]; `profiler` is for the slow paths.
struct BlockState {
  static constexpr uint32_t kOpen = 0xb10c09e1;
  static constexpr uint32_t kDisabled = 0xb10cd15a;
  static constexpr uint32_t kNone = UINT32_MAX;  // `begun` when no event is
  ThreadStream* stream;
  const epprof_event_desc* descs;
  uint64_t first_id;
  uint64_t start;  // ticks of the begun event
  uint32_t begun;
  uint32_t count;
  uint32_t state;  // kOpen, kDisabled, or anything else: not open
  uint8_t category;
  uint8_t tsc;  // ticks_are_tsc()
  Profiler* profiler;
};

class Profiler {
 public:
  enum class State : int { kCreated, kRunning, kStopped };

  // Opens the temporary trace file now, so an unwritable path fails here.
  // Throws std::runtime_error with a message naming the path on failure.
  explicit Profiler(ScopeConfig config);
  ~Profiler();

  uint64_t handle() const { return handle_; }
  void set_handle(uint64_t h) { handle_ = h; }
  State state() const { return state_.load(std::memory_order_acquire); }

  // Before start only (the caller checks the state).
  void add_ep(std::unique_ptr<EpHooks> ep);
  bool uses_plugins() const { return !eps_.empty(); }
  // Whether an EP profiler wants start_event / stop_event calls.
  bool eps_want_events() const { return eps_want_events_; }
  bool eps_want_stop() const { return eps_want_stop_; }
  void set_metadata(std::string key, std::string value) { recording_.set_metadata(std::move(key), std::move(value)); }

  void start();
  // Ends recording; scope::write_trace (src/scope/) then writes the trace.
  void stop();

  // ---- for the way out (src/scope/), once stopped ----
  const ScopeConfig& config() const { return recording_.config(); }
  Recording& recording() { return recording_; }
  const std::vector<std::unique_ptr<EpHooks>>& eps() const { return eps_; }

  ThreadStream* add_thread(int64_t tid) { return recording_.add_thread(tid); }

  // ---- hot path; the caller has checked the handle and the state, and
  // passes the handle's hot word (kHot*: EP callbacks wanted, TSC ticks) ----
  [[gnu::always_inline]] epprof_status* begin(ThreadStream& s, uint8_t category, uint32_t name, uint64_t id,
                                              uint32_t hot) noexcept {
    if (__builtin_expect(s.depth == kMaxOpenEvents, 0)) return too_deep();
    s.push(OpenEvent{now_ticks(hot & kHotTsc), id, name, category});
    if (hot & kHotStartEvents)
      for (auto& ep : eps_) ep->start_event(id);
    return nullptr;
  }

  [[gnu::always_inline]] epprof_status* end(ThreadStream& s, uint64_t id, const epprof_arg* args, size_t num_args,
                                            uint32_t hot) noexcept {
    const uint64_t t = now_ticks(hot & kHotTsc);
    if (__builtin_expect(s.depth == 0 || s.innermost().correlation_id != id, 0)) return mismatched_end(s, id);
    const OpenEvent o = s.innermost();
    const uint32_t set = lone_set(args, num_args);
    if (num_args == 0 || (set && known_set(s, set))) {
      emit(recording_.recorder().reserve(s, set_slots(set)), o, t, set);
    } else if (epprof_status* st = write_with_args(s, o, t - o.ts, 0, args, num_args)) {
      return st;  // bad args: the event stays open, nothing recorded
    }
    s.pop();
    if (hot & kHotStopEvents) notify_stop(s, o, t, args, num_args);
    return nullptr;
  }

  // The straight-line cases of begin and end, for the entry points to try
  // first: with TSC ticks and no EP profiler to call, a begin, and an end
  // of the innermost event with no args or one arg set and room in the
  // chunk. They return false, having changed nothing, when the general path
  // must run. They need no Profiler, so an event that takes them reads no
  // more than the handle's slot, the thread's TLS line and its stream line
  // (and, around nested events, the slot of open[] that holds the outer one).
  [[gnu::always_inline]] static bool try_begin(ThreadStream& s, uint8_t category, uint32_t name,
                                               uint64_t id) noexcept {
    if (__builtin_expect(s.depth == kMaxOpenEvents, 0)) return false;
    s.push(OpenEvent{now_ticks(true), id, name, category});
    return true;
  }
  // An end whose one arg is an INT64 (a run's id, say) takes it too, and
  // so does the end of an event that others were nested in (a run's, after
  // its executor's), whose begin is in open[] rather than in `top`.
  [[gnu::always_inline]] static bool try_end(ThreadStream& s, uint64_t id, const epprof_arg* args,
                                             size_t num_args) noexcept {
    const uint64_t t = now_ticks(true);
    if (__builtin_expect(s.depth == 0 || num_args > 1 || s.used + 1 + uint32_t(num_args) > kChunkSlots, 0))
      return false;
    const OpenEvent& o = s.innermost();
    if (__builtin_expect(o.correlation_id != id, 0)) return false;
    if (num_args == 0) {
      emit(Recorder::reserve_in_chunk(s, 1), o, t, 0);
    } else if (const uint32_t set = lone_set(args, num_args); set && set <= s.known_sets) {
      emit(Recorder::reserve_in_chunk(s, set_slots(set)), o, t, set);
    } else if (args[0].type == EPPROF_ARG_INT64 && is_interned(args[0].key)) {
      emit_int(Recorder::reserve_in_chunk(s, 2), o, t, args[0]);
    } else {
      return false;
    }
    s.pop();
    return true;
  }

  epprof_status* record(ThreadStream& s, uint8_t category, uint32_t name, uint64_t id, int64_t start_ns,
                        int64_t dur_ns, const epprof_arg* args, size_t num_args) noexcept {
    return recording_.record(s, category, name, id, start_ns, dur_ns, args, num_args);
  }

  // A memory event (record.h: kRecordMemory): one slot, like an event; the
  // way out finds the event that owns it (the innermost one open on this
  // thread at that moment). The caller checked its arguments.
  [[gnu::always_inline]] void memory(ThreadStream& s, uint8_t kind, uint64_t allocation_id, uint64_t bytes,
                                     uint32_t device, uint8_t tag, uint32_t hot) noexcept {
    *recording_.recorder().reserve(s, 1) = Record{now_ticks(hot & kHotTsc), bytes, allocation_id, device, tag, kind, 0};
  }
  // Its straight-line case, as try_begin: TSC ticks, room in the chunk.
  [[gnu::always_inline]] static bool try_memory(ThreadStream& s, uint8_t kind, uint64_t allocation_id,
                                                uint64_t bytes, uint32_t device, uint8_t tag) noexcept {
    if (__builtin_expect(s.used + 1 > kChunkSlots, 0)) return false;
    *Recorder::reserve_in_chunk(s, 1) = Record{now_ticks(true), bytes, allocation_id, device, tag, kind, 0};
    return true;
  }

  // ---- event blocks (epprof_event_block_*); the caller checked the state ----
  // Fills `b` after checking every desc.
  epprof_status* open_block(ThreadStream& s, BlockState& b, uint8_t category, uint64_t first_id, uint32_t count,
                            const epprof_event_desc* descs) noexcept;
  [[gnu::always_inline]] static void block_begin(BlockState& b, uint32_t index) noexcept {
    b.start = now_ticks(b.tsc);
    b.begun = index;
  }
  [[gnu::always_inline]] static void block_end(BlockState& b) noexcept {
    const uint64_t t = now_ticks(b.tsc);
    ThreadStream& s = *b.stream;
    const epprof_event_desc d = b.descs[b.begun];
    const uint32_t slots = set_slots(d.args);
    Record* r = __builtin_expect(s.used + slots <= kChunkSlots, 1) ? Recorder::reserve_in_chunk(s, slots)
                                                                   : b.profiler->reserve_slow(s, slots);
    emit(r, OpenEvent{b.start, b.first_id + b.begun, d.name, b.category}, t, d.args);
    b.begun = BlockState::kNone;
  }
  epprof_status* block_end_with_args(BlockState& b, const epprof_arg* args, size_t num_args) noexcept;
  void close_block() noexcept { open_blocks_.fetch_sub(1, std::memory_order_release); }
  uint32_t open_blocks() const noexcept { return open_blocks_.load(std::memory_order_acquire); }

 private:
  // The set id if `args` is one arg set with no key (a node's args, say), else 0.
  static uint32_t lone_set(const epprof_arg* args, size_t num_args) noexcept {
    return num_args == 1 && args[0].type == EPPROF_ARG_SET && args[0].key == 0 ? args[0].value.set : 0;
  }
  // The slots of an event whose one arg is the arg set `set` (0: no args).
  static uint32_t set_slots(uint32_t set) noexcept { return set > kMaxInlineSet ? 2 : 1; }
  // Writes the record of `o` ending at `t` at `r`, with `set` as its one
  // arg if nonzero, in set_slots(set) slots.
  static void emit(Record* r, const OpenEvent& o, uint64_t t, uint32_t set) noexcept {
    if (__builtin_expect(set <= kMaxInlineSet, 1)) {
      *r = Record{o.ts, t - o.ts, o.correlation_id, o.name, o.category, set ? kRecordInlineSet : uint8_t(0),
                  uint16_t(set)};
      return;
    }
    *r = Record{o.ts, t - o.ts, o.correlation_id, o.name, o.category, 0, 1};
    encode_lone_set(r + 1, set);
  }
  // Writes the record of `o` ending at `t` at `r`, with the one INT64 arg
  // `a` (its key interned) in the slot after it.
  static void emit_int(Record* r, const OpenEvent& o, uint64_t t, const epprof_arg& a) noexcept {
    *r = Record{o.ts, t - o.ts, o.correlation_id, o.name, o.category, 0, 1};
    encode_lone_int(r + 1, a.key, a.value.i64);
  }
  // Whether `set` is an arg set id, checked against the stream's copy of
  // the published count first (its line is read anyway).
  static bool known_set(ThreadStream& s, uint32_t set) noexcept {
    return set != 0 && (set <= s.known_sets ||
                        set <= (s.known_sets = g_arg_sets_published.load(std::memory_order_relaxed)));
  }

  // Error paths stay out of line so the hot path keeps a small frame.
  [[gnu::cold, gnu::noinline]] epprof_status* too_deep() const noexcept;
  [[gnu::cold, gnu::noinline]] epprof_status* mismatched_end(const ThreadStream& s,
                                                             uint64_t id) const noexcept;
  // dur is in ticks, or in ns when flags has kRecordDurationNs.
  epprof_status* write_with_args(ThreadStream& s, const OpenEvent& o, uint64_t dur, uint8_t flags,
                                 const epprof_arg* args, size_t num_args,
                                 const char* fn = "epprof_event_end") noexcept {
    return recording_.write_with_args(s, o, dur, flags, args, num_args, fn);
  }
  [[gnu::noinline]] Record* reserve_slow(ThreadStream& s, uint32_t slots) noexcept {
    return recording_.recorder().reserve(s, slots);
  }
  void notify_stop(const ThreadStream& s, const OpenEvent& o, uint64_t end_ticks,
                   const epprof_arg* args, size_t num_args) noexcept;

  // The state and what EP profilers want: read by the control path and by
  // an event's slow path. The fast path reads a copy in the profiler's slot
  // (abi/profiler_api.cpp), so events touch no line of this object.
  std::atomic<State> state_{State::kCreated};
  std::atomic<uint32_t> open_blocks_{0};  // stop and destroy refuse while any is open
  bool eps_want_events_ = false;
  bool eps_want_stop_ = false;

  uint64_t handle_ = 0;
  const int64_t pid_ = int64_t(getpid());  // once: getpid() is a syscall
  Recording recording_;
  std::vector<std::unique_ptr<EpHooks>> eps_;
};

}  // namespace epprof::core
