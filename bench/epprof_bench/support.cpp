// epprof_bench's shared helpers (bench.h).
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "bench.h"

namespace epprof::bench {

bool g_quick = false;
bool g_failed = false;
epprof_name_id g_name = 0;
std::map<std::string, double> g_median_cpu_ns;
std::map<std::string, double> g_median_wall_ns;
std::map<std::string, std::vector<double>> g_samples;
std::map<std::string, std::vector<double>> g_samples_wall;
std::map<std::string, std::string> g_notes;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double process_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string one, five;
  f >> one >> five;
  return one + " (1 min), " + five + " (5 min) on " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) +
         " CPUs";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Api g_api;

namespace {

void use_static_api(const std::string& why) {
#define EPPROF_BENCH_LINKED(field, symbol) g_api.field = &symbol;
  EPPROF_BENCH_API(EPPROF_BENCH_LINKED)
#undef EPPROF_BENCH_LINKED
  g_api.origin = "static (linked into epprof_bench)" + why;
}

template <typename F>
bool bind(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

}  // namespace

void load_api(bool force_static) {
  const char* path = EPPROF_BENCH_SHARED_LIB;
  if (force_static || !*path) return use_static_api("");
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return use_static_api(std::string("; dlopen failed: ") + dlerror());
  bool ok = true;
#define EPPROF_BENCH_BIND(field, symbol) ok = ok && bind(lib, #symbol, g_api.field);
  EPPROF_BENCH_API(EPPROF_BENCH_BIND)
#undef EPPROF_BENCH_BIND
  if (!ok) return use_static_api("; a symbol is missing from " + std::string(path));
  g_api.origin = std::string("shared (") + path + ")";
}

void check(epprof_status* st, const char* what) {
  if (!st) return;
  std::fprintf(stderr, "epprof_bench: %s failed: %s\n", what, g_api.status_message(st));
  g_api.status_release(st);
  std::exit(1);
}

std::string tmp_path(const char* tag) {
  return "/tmp/epprof_bench_" + std::to_string(getpid()) + "_" + tag + ".json";
}

epprof_name_id intern_public(const char* s) {
  epprof_name_id id = 0;
  check(g_api.intern(s, &id), "epprof_intern");
  return id;
}

void record_nested_public(epprof_profiler_t p, uint64_t n, epprof_name_id parent,
                          epprof_name_id leaf) {
  uint64_t done = 0;
  while (done < n) {
    const uint64_t pid = g_api.id_next();
    check(g_api.begin(p, EPPROF_CATEGORY_NODE, parent, pid), "epprof_event_begin");
    const uint64_t leaves = std::min<uint64_t>(8, n - done - 1);
    for (uint64_t i = 0; i < leaves; ++i) {
      const uint64_t id = g_api.id_next();
      check(g_api.begin(p, EPPROF_CATEGORY_KERNEL, leaf, id), "epprof_event_begin");
      check(g_api.end(p, id, nullptr, 0), "epprof_event_end");
    }
    check(g_api.end(p, pid, nullptr, 0), "epprof_event_end");
    done += leaves + 1;
  }
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string verdict(bool pass) { return pass ? "PASS" : "MISS"; }

void add_micro_row(std::vector<Row>& rows, const char* key, const char* what, double target, const char* note) {
  if (!g_median_cpu_ns.count(key)) return;
  const double cpu = g_median_cpu_ns[key], wall = g_median_wall_ns[key];
  rows.push_back({what, target > 0 ? fmt("<= %.0f ns", target) : "-", fmt("%.2f ns", cpu), fmt("%.2f ns", wall),
                  target > 0 ? verdict(cpu <= target) : "info", note});
}

void add_macro_row(std::vector<Row>& rows, const char* key, const char* what, const std::string& target,
                   const char* unit, double scale, bool higher_is_better, double limit) {
  auto it = g_samples.find(key);
  if (it == g_samples.end() || it->second.empty()) return;
  const double m = median(it->second) * scale;
  const bool pass = higher_is_better ? m >= limit : m <= limit;
  const auto w = g_samples_wall.find(key);
  const std::string wall = w == g_samples_wall.end() ? "-" : fmt(unit, median(w->second) * scale);
  // No target ("-"): a figure for reading the others against, as the micro rows' "info".
  rows.push_back({what, target, fmt(unit, m), wall, target == "-" ? "info" : verdict(pass),
                  g_notes[key] + fmt("; median of %.0f", double(it->second.size()))});
}

void register_macro(const char* name, void (*fn)(benchmark::State&), int repetitions) {
  benchmark::RegisterBenchmark(name, fn)
      ->Iterations(1)
      ->Repetitions(repetitions)
      ->UseManualTime()
      ->ReportAggregatesOnly(repetitions > 1)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace epprof::bench
