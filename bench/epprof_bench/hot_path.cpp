// epprof_bench, the hot path: an event's begin+end through the public C
// API (enabled, disabled, with ids, in a long or spilling scope), a memory
// event pair, the floor of two clock reads, and the same event through an
// ONNX-Runtime-style profiler.
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench.h"
#include "core/clock.h"

namespace epprof::bench {
namespace {

// ---------------------------------------------------------------------------
// 1. The hot path through the public C API.

constexpr const char* kEnabled = "event_enabled";
constexpr const char* kEnabledWithId = "event_enabled_with_id_next";
constexpr const char* kEnabledLong = "event_enabled_long_scope";
constexpr const char* kEnabledSpilling = "event_enabled_spilling";
constexpr const char* kDisabled = "event_disabled";
constexpr const char* kDisabledGuarded = "event_disabled_guarded";
constexpr const char* kOrt = "event_ort_style";
constexpr const char* kMemory = "memory_alloc_free";
constexpr const char* kRunEvents = "run_events";

// The timed loop of the enabled-event benchmarks: begin + end of one NODE
// event with no args on `p`, consecutive correlation ids.
void time_begin_end(benchmark::State& state, epprof_profiler_t p) {
  const epprof_name_id name = g_name;
  uint64_t id = g_api.id_next();
  for (auto _ : state) {
    g_api.begin(p, EPPROF_CATEGORY_NODE, name, id);
    g_api.end(p, id, nullptr, 0);
    ++id;
  }
}

// A memory event pair, as a host reports a buffer: an allocation and its
// free, inside an open node event (so both are attributed to it), on a
// running profiler. Compared with begin+end in the summary.
void BM_memory_alloc_free(benchmark::State& state) {
  RunningProfiler prof("mem", 1ull << 30);
  const epprof_profiler_t p = prof.handle();
  epprof_name_id cpu = 0;
  check(g_api.intern("cpu", &cpu), "epprof_intern");
  const uint64_t node = g_api.id_next();
  check(g_api.begin(p, EPPROF_CATEGORY_NODE, g_name, node), "epprof_event_begin");
  uint64_t id = 0x10000;
  for (auto _ : state) {
    g_api.memory_alloc(p, id, 4096, cpu, EPPROF_MEMORY_OUTPUT);
    g_api.memory_free(p, id, cpu);
    id += 64;
  }
  check(g_api.end(p, node, nullptr, 0), "epprof_event_end");
}

// What the runtime's run hooks record around a run's node events: a run
// event and its executor's nested in it, the run's ending with its id as an
// INT64 arg (ONNX Runtime's model_run and SequentialExecutor::Execute).
void BM_run_events(benchmark::State& state) {
  RunningProfiler prof("run", 1ull << 30);
  const epprof_profiler_t p = prof.handle();
  epprof_name_id run_id_key = 0;
  check(g_api.intern("run_id", &run_id_key), "epprof_intern");
  epprof_arg run_id{run_id_key, EPPROF_ARG_INT64, {}};
  uint64_t id = g_api.id_next();
  for (auto _ : state) {
    g_api.begin(p, EPPROF_CATEGORY_SESSION, g_name, id);
    g_api.begin(p, EPPROF_CATEGORY_SESSION, g_name, id + 1);
    g_api.end(p, id + 1, nullptr, 0);
    run_id.value.i64 = int64_t(id);
    g_api.end(p, id, &run_id, 1);
    id += 2;
  }
}

void BM_event_enabled(benchmark::State& state) {
  // Budget above what the repetition records: no spill inside the timing.
  RunningProfiler prof("hot", 1ull << 30);
  const epprof_profiler_t p = prof.handle();
  time_begin_end(state, p);
}

// The floor of an event: the two clock reads any begin+end takes (the clock
// libepprof reads, epprof::core::now_ticks), nothing recorded.
constexpr const char* kTwoClockReads = "two_clock_reads";
void BM_two_clock_reads(benchmark::State& state) {
  const bool tsc = epprof::core::ticks_are_tsc();
  for (auto _ : state) {
    benchmark::DoNotOptimize(epprof::core::now_ticks(tsc));
    benchmark::DoNotOptimize(epprof::core::now_ticks(tsc));
  }
}

// A long scope: one profiler records far more than the slab pool of
// finished profilers holds (64 MiB), so most chunks are fresh memory whose
// pages are populated on the recording thread.
RunningProfiler* g_long_scope = nullptr;  // lives across repetitions
void BM_event_enabled_long_scope(benchmark::State& state) {
  if (!g_long_scope) g_long_scope = new RunningProfiler("hot_long", 4ull << 30);
  const epprof_profiler_t p = g_long_scope->handle();
  time_begin_end(state, p);
}

void BM_event_enabled_with_id(benchmark::State& state) {
  RunningProfiler prof("hot_id", 1ull << 30);
  const epprof_profiler_t p = prof.handle();
  const epprof_name_id name = g_name;
  for (auto _ : state) {
    const uint64_t id = g_api.id_next();
    g_api.begin(p, EPPROF_CATEGORY_NODE, name, id);
    g_api.end(p, id, nullptr, 0);
  }
}

// Steady state of a long scope at the default 64 MiB budget: the profiler
// lives across repetitions and was filled past its budget first, so every
// chunk rollover may spill (synchronously, on the recording thread).
RunningProfiler* g_spilling = nullptr;
void BM_event_enabled_spilling(benchmark::State& state) {
  if (!g_spilling) {
    g_spilling = new RunningProfiler("hot_spill", 64ull << 20);
    record_nested_public(g_spilling->handle(), g_quick ? 600000 : 3000000, g_name, g_name);
  }
  const epprof_profiler_t p = g_spilling->handle();
  time_begin_end(state, p);
}

void BM_event_disabled(benchmark::State& state) {
  const epprof_profiler_t p{0};
  const epprof_name_id name = g_name;
  uint64_t id = 1;
  benchmark::DoNotOptimize(id);
  for (auto _ : state) {
    g_api.begin(p, EPPROF_CATEGORY_NODE, name, id);
    g_api.end(p, id, nullptr, 0);
    ++id;
  }
}

// What a host that guards its event calls with epprof_profiler_enabled()
// (the inline handle test in profiler.h, as the reference runtime does) pays
// per event with profiling off. The handle is reloaded every iteration, as
// a host would load it from its session state.
void BM_event_disabled_guarded(benchmark::State& state) {
  epprof_profiler_t p{0};
  const epprof_name_id name = g_name;
  uint64_t id = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(p);
    if (epprof_profiler_enabled(p)) g_api.begin(p, EPPROF_CATEGORY_NODE, name, id);
    benchmark::DoNotOptimize(p);
    if (epprof_profiler_enabled(p)) g_api.end(p, id, nullptr, 0);
    ++id;
  }
  benchmark::DoNotOptimize(id);
}

// ---------------------------------------------------------------------------
// 2. The same event through an ONNX-Runtime-style profiler (what
// onnxruntime/core/common/profiler.cc does per event): two clock reads, a
// std::string name built per event ("<node>_kernel_time", past the SSO
// limit), an args map built and copied into the record, getpid() and
// gettid() syscalls, a mutex, and a push into a vector of records.

struct OrtEventRecord {
  int cat;
  int pid;
  long tid;
  std::string name;
  long long ts;
  long long dur;
  std::unordered_map<std::string, std::string> args;
};

struct OrtStyleProfiler {
  std::mutex mu;
  std::vector<OrtEventRecord> events;
  std::chrono::high_resolution_clock::time_point start = std::chrono::high_resolution_clock::now();
  size_t max_events = 1000000;  // ONNX Runtime's cap
};

const std::string g_ort_node_name = "Conv_0";

void BM_event_ort_style(benchmark::State& state) {
  OrtStyleProfiler prof;
  // Reserved up front, which ONNX Runtime does not do: this favours the
  // comparison path, so the ratio reported is a lower bound.
  prof.events.reserve(size_t(state.max_iterations));
  for (auto _ : state) {
    using hrc = std::chrono::high_resolution_clock;
    const auto begin = hrc::now();  // StartTime()
    const auto end = hrc::now();    // EndTimeAndRecordEvent()
    const std::unordered_map<std::string, std::string> event_args;
    std::string name = g_ort_node_name + "_kernel_time";
    OrtEventRecord ev{1,
                      int(getpid()),
                      long(syscall(SYS_gettid)),
                      std::move(name),
                      std::chrono::duration_cast<std::chrono::microseconds>(begin - prof.start).count(),
                      std::chrono::duration_cast<std::chrono::microseconds>(end - begin).count(),
                      {event_args.begin(), event_args.end()}};
    std::lock_guard<std::mutex> lock(prof.mu);
    if (prof.events.size() < prof.max_events) prof.events.emplace_back(std::move(ev));
  }
  benchmark::DoNotOptimize(prof.events.data());
}

}  // namespace

// The profilers the hot-path lines keep across repetitions hold up to a
// gigabyte; a child forked while they live would start its ru_maxrss at
// the parent's (Linux keeps the high-water mark across execve). The child
// lines run after the hot-path ones, so free them first.
void free_hot_path_profilers() {
  delete g_spilling;
  g_spilling = nullptr;
  delete g_long_scope;
  g_long_scope = nullptr;
}

void register_hot_path() {
  const int reps = g_quick ? 3 : 15;
  const int64_t hot = g_quick ? 100000 : 2000000;
  auto micro = [&](const char* name, void (*fn)(benchmark::State&), int64_t iters) {
    benchmark::RegisterBenchmark(name, fn)
        ->Iterations(iters)
        ->Repetitions(reps)
        ->ReportAggregatesOnly(true)
        ->UseRealTime()
        ->Unit(benchmark::kNanosecond);
  };
  micro(kEnabled, BM_event_enabled, hot);
  micro(kTwoClockReads, BM_two_clock_reads, hot);
  micro(kEnabledWithId, BM_event_enabled_with_id, hot);
  micro(kEnabledLong, BM_event_enabled_long_scope, hot);
  micro(kEnabledSpilling, BM_event_enabled_spilling, hot);
  micro(kDisabled, BM_event_disabled, hot * 25);
  micro(kDisabledGuarded, BM_event_disabled_guarded, hot * 25);
  micro(kOrt, BM_event_ort_style, g_quick ? 20000 : 200000);
  // Half the iterations: two records each, so as many bytes as the
  // begin+end row writes (both within the recycled slab pool).
  micro(kMemory, BM_memory_alloc_free, hot / 2);
  // Half the iterations: two events each.
  micro(kRunEvents, BM_run_events, hot / 2);
}

void add_hot_path_rows(std::vector<Row>& rows) {
  add_micro_row(rows, kEnabled, "host event begin+end, enabled", 30, "public C API, running profiler, no args");
  add_micro_row(rows, kTwoClockReads, "  floor: two clock reads", 0, "core::now_ticks twice, what any begin+end reads");
  if (g_median_cpu_ns.count(kTwoClockReads) && g_median_cpu_ns.count(kEnabled)) {
    const double ratio = g_median_cpu_ns[kEnabled] / g_median_cpu_ns[kTwoClockReads];
    const double wall = g_median_wall_ns[kEnabled] / g_median_wall_ns[kTwoClockReads];
    rows.push_back({"  begin+end / two clock reads", "<= 1.5x", fmt("%.2fx", ratio), fmt("%.2fx", wall),
                    verdict(ratio <= 1.5), "issue 17: the hot path against its floor, same run"});
  }
  add_micro_row(rows, kEnabledWithId, "  same + epprof_correlation_id_next", 0, "what a host pays per event");
  add_micro_row(rows, kEnabledLong, "  same, one long scope, fresh memory", 0,
                "one profiler past the 64 MiB slab pool: fresh slabs, populated ahead by libepprof's provisioner "
                "thread");
  add_micro_row(rows, kEnabledSpilling, "  same, 64 MiB budget, spilling", 0,
                "steady state past the default budget: rollovers spill on the recording thread");
  add_micro_row(rows, kDisabledGuarded, "host event begin+end, disabled", 2,
                "zero handle, calls guarded by epprof_profiler_enabled() as the runtime does");
  add_micro_row(rows, kDisabled, "  same, unguarded calls", 0, "zero handle passed to the C API: a call each");
  add_micro_row(rows, kOrt, "ONNX-Runtime-style event", 0,
                "mutex, std::string name, unordered_map args, getpid+gettid, 2 clock reads, vector push");
  add_micro_row(rows, kMemory, "memory alloc+free, enabled", 0, "epprof_memory_alloc + _free inside a node event");
  add_micro_row(rows, kRunEvents, "a run's two events, enabled", 0,
                "an event nested in another, the outer ending with an INT64 arg: the runtime's run hooks");
  if (g_median_cpu_ns.count(kMemory) && g_median_cpu_ns.count(kEnabled)) {
    // Each of alloc and free is one memory event: one of them against one
    // begin+end (an event), as the target reads.
    const double ratio = g_median_cpu_ns[kMemory] / 2 / g_median_cpu_ns[kEnabled];
    const double wall = g_median_wall_ns[kMemory] / 2 / g_median_wall_ns[kEnabled];
    rows.push_back({"  one memory event / one begin+end", "<= 1.5x", fmt("%.2fx", ratio), fmt("%.2fx", wall),
                    verdict(ratio <= 1.5), "half the alloc+free pair against the begin+end row, same run"});
  }
  if (g_median_cpu_ns.count(kOrt) && g_median_cpu_ns.count(kEnabled)) {
    const double ratio = g_median_cpu_ns[kOrt] / g_median_cpu_ns[kEnabled];
    const double wall = g_median_wall_ns[kOrt] / g_median_wall_ns[kEnabled];
    rows.push_back({"ratio ORT-style / epprof enabled", ">= 15x", fmt("%.1fx", ratio), fmt("%.1fx", wall),
                    verdict(ratio >= 15), "ratio of the two medians"});
  }
}

}  // namespace epprof::bench
