#include "core/clock.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace epprof::core {
namespace {

bool detect_invariant_tsc() {
#if defined(__x86_64__) || defined(__i386__)
  if (const char* env = std::getenv("EPPROF_CLOCK"); env && std::strcmp(env, "monotonic") == 0)
    return false;
  // /proc/cpuinfo flags say whether the TSC ticks at a constant rate in every
  // P/C-state; without both, fall back to clock_gettime.
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return false;
  char line[4096];
  bool constant = false, nonstop = false;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    constant = std::strstr(line, " constant_tsc") != nullptr;
    nonstop = std::strstr(line, " nonstop_tsc") != nullptr;
    break;
  }
  std::fclose(f);
  return constant && nonstop;
#else
  return false;
#endif
}


double measure_nominal() {
  if (!detail::g_tsc_ticks) return 1.0;
  ClockPair a = read_clock_pair();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ClockPair b = read_clock_pair();
  if (b.ticks <= a.ticks || b.ns <= a.ns) return 1.0;
  return double(b.ns - a.ns) / double(b.ticks - a.ticks);
}

}  // namespace

namespace detail {
bool g_tsc_ticks = detect_invariant_tsc();
TestClock g_test_clock = nullptr;
}  // namespace detail

void set_test_clock(TestClock now) noexcept {
  static const bool tsc = detail::g_tsc_ticks;  // the machine's answer, kept for the restore
  detail::g_test_clock = now;
  detail::g_tsc_ticks = now ? false : tsc;
}

ClockPair read_clock_pair() noexcept {
  ClockPair best{0, 0};
  uint64_t best_width = ~uint64_t(0);
  for (int i = 0; i < 5; ++i) {
    uint64_t t0 = now_ticks();
    int64_t ns = monotonic_ns();
    uint64_t t1 = now_ticks();
    if (t1 - t0 < best_width) {
      best_width = t1 - t0;
      best = ClockPair{t0 + (t1 - t0) / 2, ns};
    }
  }
  return best;
}

TickConverter::TickConverter(ClockPair a, ClockPair b) noexcept : base_(a) {
  if (b.ticks > a.ticks && b.ns > a.ns)
    ns_per_tick_ = double(b.ns - a.ns) / double(b.ticks - a.ticks);
  else
    ns_per_tick_ = detail::g_tsc_ticks ? nominal_ns_per_tick() : 1.0;
}

double nominal_ns_per_tick() noexcept {
  static const double value = measure_nominal();
  return value;
}

}  // namespace epprof::core
