// Host clock. Hot-path timestamps are raw ticks (the TSC when it is invariant,
// else CLOCK_MONOTONIC ns); each profiler converts them to nanoseconds with
// a two-point fit taken at its start and stop, so drift of the tick rate
// over a scope is corrected and both ends are exact.
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace epprof::core {

using TestClock = int64_t (*)();

namespace detail {
// Decided once while the library loads, before any profiler can exist.
extern bool g_tsc_ticks;
// Installed by set_test_clock; null: the system's clocks.
extern TestClock g_test_clock;
}  // namespace detail

inline int64_t monotonic_ns() noexcept {
  if (__builtin_expect(detail::g_test_clock != nullptr, 0)) return detail::g_test_clock();
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline int64_t realtime_ns() noexcept {
  if (__builtin_expect(detail::g_test_clock != nullptr, 0)) return detail::g_test_clock();
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// For deterministic tests (the golden trace): every clock read of
// libepprof -- CLOCK_MONOTONIC, CLOCK_REALTIME, and the ticks, which become
// its nanoseconds instead of the TSC's -- returns `now()`. nullptr restores
// the system's clocks. Call only while no profiler exists and no other
// thread reads the clock.
void set_test_clock(TestClock now) noexcept;

// True when ticks come from an invariant TSC.
inline bool ticks_are_tsc() noexcept { return detail::g_tsc_ticks; }

// `tsc`: ticks_are_tsc(), for callers that keep it at hand.
inline uint64_t now_ticks(bool tsc) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_expect(tsc, 1)) return __rdtsc();
#else
  (void)tsc;
#endif
  return uint64_t(monotonic_ns());
}

inline uint64_t now_ticks() noexcept { return now_ticks(ticks_are_tsc()); }

// A simultaneous reading of ticks and CLOCK_MONOTONIC: the monotonic read is
// bracketed by two tick reads and the bracket with the smallest width of a
// few tries is kept, so the pair's error is at most half that width.
struct ClockPair {
  uint64_t ticks;
  int64_t ns;
};
ClockPair read_clock_pair() noexcept;

// Linear map from ticks to host ns, fitted on two clock pairs.
class TickConverter {
 public:
  TickConverter() = default;
  TickConverter(ClockPair a, ClockPair b) noexcept;
  TickConverter(ClockPair base, double ns_per_tick) noexcept : base_(base), ns_per_tick_(ns_per_tick) {}
  int64_t to_ns(uint64_t ticks) const noexcept {
    return base_.ns + int64_t(double(int64_t(ticks - base_.ticks)) * ns_per_tick_);
  }
  int64_t duration_ns(uint64_t dticks) const noexcept {
    return int64_t(double(dticks) * ns_per_tick_);
  }
  double ns_per_tick() const noexcept { return ns_per_tick_; }

 private:
  ClockPair base_{0, 0};
  double ns_per_tick_ = 1.0;
};

// ns per tick measured once at load (over ~2 ms); used for conversions
// before a scope has its own fit.
double nominal_ns_per_tick() noexcept;

}  // namespace epprof::core
