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
                                                      int streak = 3) {
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

}  // namespace epprof::bench
