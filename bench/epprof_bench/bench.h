// What the parts of epprof_bench share: the clock helpers, the public C
// API as the benchmarks call it, the results the summary table is built
// from, and each part's entry points (registration, table rows).
//
// The parts, one file each: hot_path.cpp (the event hot path and the
// ONNX-Runtime-style event), export.cpp (export to JSON and SQLite, their
// floors, the merge), children.cpp (what runs in a child process: resident
// bytes per event, the 50M-event scope), main.cpp (flags, the table);
// support.cpp defines what this header declares.
#pragma once

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "epprof/profiler.h"

// Set by the build: the shared library to measure, and the build type.
#ifndef EPPROF_BENCH_SHARED_LIB
#define EPPROF_BENCH_SHARED_LIB ""
#endif
#ifndef EPPROF_BENCH_BUILD_TYPE
#define EPPROF_BENCH_BUILD_TYPE "unknown"
#endif

namespace epprof::bench {

using Clock = std::chrono::steady_clock;

extern bool g_quick;   // --quick: smaller sizes (a smoke run)
extern bool g_failed;  // a functional check failed (not a timing miss)

double seconds_since(Clock::time_point t);
double process_cpu_s();
// /proc/loadavg's 1- and 5-minute figures, and the CPU count.
std::string loadavg();
double median(std::vector<double> v);

// ---- The public C API, called the way a host calls it: through
// libepprof.so (dlopen + function pointers, i.e. the same indirect call a
// PLT makes), or with --static-api the copy linked into this binary.

// The C API functions the benchmarks call, as X(field, symbol): one list
// for the struct, the linked-in copy and the dlsym of each.
#define EPPROF_BENCH_API(X)                    \
  X(intern, epprof_intern)                     \
  X(id_next, epprof_correlation_id_next)       \
  X(create, epprof_profiler_create)            \
  X(start, epprof_profiler_start)              \
  X(stop, epprof_profiler_stop)                \
  X(destroy, epprof_profiler_destroy)          \
  X(begin, epprof_event_begin)                 \
  X(end, epprof_event_end)                     \
  X(memory_alloc, epprof_memory_alloc)         \
  X(memory_free, epprof_memory_free)           \
  X(status_message, epprof_status_get_message) \
  X(status_release, epprof_status_release)

struct Api {
#define EPPROF_BENCH_API_FIELD(field, symbol) decltype(&symbol) field = nullptr;
  EPPROF_BENCH_API(EPPROF_BENCH_API_FIELD)
#undef EPPROF_BENCH_API_FIELD
  std::string origin;  // which copy, and why when the shared one is not used
};
extern Api g_api;
// Fills g_api; falls back to the static copy, saying why, when the shared
// library or a symbol is missing.
void load_api(bool force_static);

// Exits with the message when `st` is an error.
void check(epprof_status* st, const char* what);
std::string tmp_path(const char* tag);
epprof_name_id intern_public(const char* s);
extern epprof_name_id g_name;  // "Conv_0_kernel_time", interned by main

// A created and started profiler, destroyed (without writing) at scope end.
class RunningProfiler {
 public:
  RunningProfiler(const char* tag, uint64_t memory_budget, uint32_t ts_format = 0)
      : path_(tmp_path(tag)) {
    epprof_profiler_config c{};
    c.size = sizeof c;
    c.trace_path = path_.c_str();
    c.scope_name = tag;
    c.memory_budget_bytes = memory_budget;
    c.timestamp_format = ts_format;
    check(g_api.create(&c, &h_), "epprof_profiler_create");
    check(g_api.start(h_), "epprof_profiler_start");
  }
  ~RunningProfiler() {
    if (h_.handle) g_api.destroy(h_);
    unlink(path_.c_str());
  }
  RunningProfiler(const RunningProfiler&) = delete;
  RunningProfiler& operator=(const RunningProfiler&) = delete;

  epprof_profiler_t handle() const { return h_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  epprof_profiler_t h_{};
};

// `n` complete host events through the public API, nested as a runtime
// nests them: a NODE parent around every 8 leaves. Ids from
// epprof_correlation_id_next, as a host gets them.
void record_nested_public(epprof_profiler_t p, uint64_t n, epprof_name_id parent, epprof_name_id leaf);

// ---- Results collected for the summary table.

// Micro benchmarks: median ns per iteration over the repetitions, CPU time
// (the verdict) and wall-clock time.
extern std::map<std::string, double> g_median_cpu_ns;
extern std::map<std::string, double> g_median_wall_ns;
// Macro: one value per repetition, from CPU time (the verdict) and wall.
extern std::map<std::string, std::vector<double>> g_samples;
extern std::map<std::string, std::vector<double>> g_samples_wall;
extern std::map<std::string, std::string> g_notes;

struct Row {
  std::string what;
  std::string target;
  std::string measured;  // the verdict's figure (CPU time for timings)
  std::string wall;      // the same from wall-clock time, "-" where not a timing
  std::string verdict;   // PASS, MISS or info
  std::string note;
};

std::string fmt(const char* f, double v);
std::string verdict(bool pass);
// The row of micro benchmark `key`, if it ran: its median against `target`
// ns (0: no target, an "info" row).
void add_micro_row(std::vector<Row>& rows, const char* key, const char* what, double target, const char* note);
// The row of macro measurement `key`, if it ran: the median of its samples
// times `scale`, printed with `unit`, against `limit` (target "-": an
// "info" row).
void add_macro_row(std::vector<Row>& rows, const char* key, const char* what, const std::string& target,
                   const char* unit, double scale, bool higher_is_better, double limit);
// Registers a macro measurement: one iteration a repetition, manual time.
void register_macro(const char* name, void (*fn)(benchmark::State&), int repetitions);

// ---- The parts.

void register_hot_path();
void add_hot_path_rows(std::vector<Row>& rows);
// Frees the profilers the hot-path benchmarks keep across repetitions.
void free_hot_path_profilers();

void register_exports();
void add_export_rows(std::vector<Row>& rows);

void register_children();
void add_children_rows(std::vector<Row>& rows);
// Runs as the child `kind` ("rss", "scope") with size `n`; the exit status.
int run_as_child(const std::string& kind, uint64_t n);

}  // namespace epprof::bench
