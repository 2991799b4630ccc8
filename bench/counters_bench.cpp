// epprof_counters_bench: per-dispatch cost of collecting counters (issue 5).
// One "dispatch" is start + stop + read of a counting context around an
// empty body, through the public C API of the shared library. Target for
// a 3-counter software group: <= 1.5 us per dispatch (see bench/README.md).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "epprof/epprof.h"

namespace {

void check(epprof_status* st, const char* what) {
  if (!st || epprof_status_get_code(st) == EPPROF_MULTIPASS) {
    epprof_status_release(st);
    return;
  }
  std::fprintf(stderr, "%s: %s\n", what, epprof_status_get_message(st));
  std::exit(1);
}

// Counts the dispatches of `state` with the counters `names` on `device`.
void run_dispatches(benchmark::State& state, const char* device, std::vector<const char*> names,
                    bool with_read) {
  epprof_counter_config_t config{0};
  check(epprof_counter_config_create(device, names.data(), names.size(), &config), "config");
  size_t n = 0;
  check(epprof_counter_config_get_num_counters(config, &n), "num_counters");
  epprof_counting_context_t ctx{0};
  check(epprof_counting_context_create(config, &ctx), "context");
  std::vector<epprof_counter_value> values(n);
  epprof_dispatch_measures m{};
  m.size = sizeof m;
  m.known = EPPROF_MEASURE_FLOPS | EPPROF_MEASURE_BYTES;
  m.flops = 1e6;
  m.bytes = 1e5;
  uint64_t invalid = 0;
  for (auto _ : state) {
    epprof_status* st = epprof_counting_context_start(ctx, 0);
    // the (empty) dispatch
    st = st ? st : epprof_counting_context_stop(ctx);
    if (with_read) st = st ? st : epprof_counting_context_read(ctx, &m, values.data(), n);
    if (st) check(st, "dispatch");
    invalid += !(values[0].flags & EPPROF_COUNTER_VALUE_VALID);
    benchmark::DoNotOptimize(values.data());
  }
  if (with_read && invalid) state.SkipWithError("a value was not valid");
  state.counters["us/dispatch"] =
      benchmark::Counter(double(state.iterations()) * 1e-6, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  epprof_status_release(epprof_counting_context_destroy(ctx));
  epprof_status_release(epprof_counter_config_destroy(config));
}

// The issue-5 target: 3 software counters read as one group.
void BM_Dispatch_SoftwareGroup3(benchmark::State& state) {
  run_dispatches(state, "cpu", {"task-clock", "context-switches", "page-faults"}, true);
}
BENCHMARK(BM_Dispatch_SoftwareGroup3)->MinTime(1.0)->Repetitions(5)->ReportAggregatesOnly(true);

// The same without the read (start + stop: the two syscalls only).
void BM_Dispatch_SoftwareGroup3_NoRead(benchmark::State& state) {
  run_dispatches(state, "cpu", {"task-clock", "context-switches", "page-faults"}, false);
}
BENCHMARK(BM_Dispatch_SoftwareGroup3_NoRead)->MinTime(1.0)->Repetitions(5)->ReportAggregatesOnly(true);

// Derived counters only (no syscall): the library's own overhead.
void BM_Dispatch_DerivedOnly(benchmark::State& state) {
  run_dispatches(state, "cpu", {"duration_ns", "flops", "flop_per_s"}, true);
}
BENCHMARK(BM_Dispatch_DerivedOnly)->MinTime(0.5)->Repetitions(3)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
