// epprof_counters_bench: per-dispatch cost of collecting counters (issue 5).
// One "dispatch" is start + stop + read of a counting context around an
// empty body, through the public C API of the shared library. Target for
// a 3-counter software group: <= 1.5 us per dispatch (see bench/README.md).
#include <benchmark/benchmark.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  check(epprof_counter_config_counter_count(config, &n), "num_counters");
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

// The floor on this machine, without epprof: the same three software
// counters opened as one group with perf_event_open and read twice (the two
// boundaries of a dispatch) with read(), the one syscall per boundary the
// design asks for. What BM_Dispatch_SoftwareGroup3 adds to this is epprof.
void BM_RawGroupRead_TwoBoundaries(benchmark::State& state) {
  const uint64_t configs[] = {PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_COUNT_SW_PAGE_FAULTS};
  int fds[3];
  for (int i = 0; i < 3; ++i) {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = configs[i];
    attr.read_format = PERF_FORMAT_GROUP;
    attr.exclude_hv = 1;
    fds[i] = int(syscall(SYS_perf_event_open, &attr, 0, -1, i ? fds[0] : -1, PERF_FLAG_FD_CLOEXEC));
    if (fds[i] < 0) {
      state.SkipWithError("perf_event_open refused a software counter");
      return;
    }
  }
  uint64_t before[4], after[4];
  for (auto _ : state) {
    if (::read(fds[0], before, sizeof before) != sizeof before || ::read(fds[0], after, sizeof after) != sizeof after) {
      state.SkipWithError("read of the group failed");
      break;
    }
    benchmark::DoNotOptimize(after[1] - before[1]);
  }
  state.counters["us/dispatch"] =
      benchmark::Counter(double(state.iterations()) * 1e-6, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  for (int fd : fds) ::close(fd);
}
BENCHMARK(BM_RawGroupRead_TwoBoundaries)->MinTime(1.0)->Repetitions(5)->ReportAggregatesOnly(true);

// Derived counters only (no syscall): the library's own overhead.
void BM_Dispatch_DerivedOnly(benchmark::State& state) {
  run_dispatches(state, "cpu", {"duration_ns", "flops", "flop_per_s"}, true);
}
BENCHMARK(BM_Dispatch_DerivedOnly)->MinTime(0.5)->Repetitions(3)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
