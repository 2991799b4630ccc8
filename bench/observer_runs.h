// How the runtime benchmarks time what an observer (the profiler, the
// floor, an empty one) costs a run: epprof_runtime_bench and
// epprof_ort_bench both measure their on/off ratios with time_settings().
#pragma once
#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "epprof/rt/observer.h"
#include "epprof/rt/session.h"

namespace epprof::bench {

// time_settings' default streak: three runs, the last two recorded.
constexpr int kStreak = 3;

// One setting to time: runs of `session` with `observer` as each run's
// observer (RunOptions::observer; nullptr: none).
struct Setting {
  rt::Session* session;
  rt::RunObserver* observer;
};

// Runs `rounds` rounds and returns, per setting, the wall times in ms of
// the runs it recorded, in order. Each round runs every setting once, as a
// streak of `streak` (>= 2) runs back to back, in an order shuffled per round
// (fixed seed), and records the streak's runs after its first, so that:
//  - every recorded run follows a run of its own setting: what an observer
//    leaves behind for the next run (caches its records and state took)
//    lands on its own runs, as in a deployment that profiles every run;
//  - every setting follows every other equally often: none is always the
//    one after another session's run, on colder caches.
// Settings that share a session run on the same tensors and weights, at
// the same addresses: the difference between them is their observers'. Two
// sessions of one model differ by their memory's layout alone, and that
// moved the median run by up to 3 % either way on these machines (the A/A
// column of epprof_runtime_bench), more than the effect measured here.
inline std::vector<std::vector<double>> time_settings(const std::vector<Setting>& settings,
                                                      const std::map<std::string, rt::Tensor>& inputs, int rounds,
                                                      int streak = kStreak) {
  std::vector<std::vector<double>> times(settings.size());
  for (auto& t : times) t.reserve(size_t(std::max(0, rounds)) * size_t(streak - 1));
  std::vector<size_t> order(settings.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937 rng(1);
  for (int round = 0; round < rounds; ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t which : order) {
      rt::RunOptions ro;
      ro.observer = settings[which].observer;
      for (int k = 0; k < streak; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        settings[which].session->run(inputs, ro);
        const auto t1 = std::chrono::steady_clock::now();
        if (k > 0) times[which].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    }
  }
  return times;
}

// What `on` costs over `off`, from two settings' times as time_settings()
// returned them (`per_round` recorded runs a round, in round order; several
// calls' times may be concatenated): the median over the rounds of the ratio
// of on's mean to off's mean in that round. Both sides of a round's ratio
// ran within a few of the model's runs of each other, on the same machine
// state; a median over the whole benchmark compares runs up to seconds
// apart, and on these shared machines the speed of the same session drifts
// by more than the effect measured (an off median of 1.42 ms in one
// invocation, 1.73 ms in the next, minutes later). 0 with no whole round.
inline double paired_ratio(const std::vector<double>& on, const std::vector<double>& off,
                           size_t per_round = kStreak - 1) {
  const size_t rounds = std::min(on.size(), off.size()) / per_round;
  if (rounds == 0) return 0;
  std::vector<double> ratios(rounds);
  for (size_t r = 0; r < rounds; ++r) {
    double a = 0, b = 0;
    for (size_t k = r * per_round; k < (r + 1) * per_round; ++k) a += on[k], b += off[k];
    ratios[r] = a / b;
  }
  const auto mid = ratios.begin() + ptrdiff_t(rounds / 2);
  std::nth_element(ratios.begin(), mid, ratios.end());
  if (rounds % 2) return *mid;
  return (*mid + *std::max_element(ratios.begin(), mid)) / 2;
}

}  // namespace epprof::bench
