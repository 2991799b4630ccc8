// The floor of any per-node timeline, for the benchmarks that set a
// profiler's cost against it (epprof_runtime_bench, epprof_ort_bench).
#pragma once
#include <x86intrin.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "epprof/rt/observer.h"

namespace epprof::bench {

// Nanoseconds per TSC tick, timed against steady_clock over 50 ms: how the
// benchmarks turn the TSC reads of their observers into time.
inline double ns_per_tick() {
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t c0 = __rdtsc();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50)) {
  }
  const uint64_t c1 = __rdtsc();
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  return ns / double(c1 - c0);
}

// Two TSC reads per node execution and per run, and each (start,
// duration) stored, 16 bytes, into a 1 MiB ring (memory that, like a
// trace's, is not in the caches the kernels use). A profiler cannot cost
// less and still time every node and the run that holds them: this
// observer's on/off ratio, measured in the same interleaved runs as the
// profiler's, is the least a timeline adds to that model.
class FloorObserver final : public rt::RunObserver {
 public:
  FloorObserver() : ring_(kRing) {}
  void run_begin(const rt::RunInfo&) override { run_start_ = __rdtsc(); }
  void run_end(const rt::RunInfo&) override { store(run_start_); }
  void node_begin(const rt::NodeInfo&) override { start_ = __rdtsc(); }
  void node_end(const rt::NodeInfo&, const rt::NodeIo&) override { store(start_); }

 private:
  struct Slice {
    uint64_t start, ticks;
  };
  void store(uint64_t start) { ring_[next_++ & (kRing - 1)] = Slice{start, __rdtsc() - start}; }
  static constexpr size_t kRing = 1 << 16;
  std::vector<Slice> ring_;
  size_t next_ = 0;
  uint64_t start_ = 0, run_start_ = 0;
};

}  // namespace epprof::bench
