// epprof_bench: every performance target of issue 2, measured side by side
// in one run and summarised in one table (target, measured, PASS/MISS).
//
//   epprof_bench                  everything, full sizes
//   epprof_bench --quick          smaller sizes (smoke run; figures not comparable)
//   epprof_bench --static-api     call the C API linked statically instead of
//                                 through libepprof.so (dlopen + function pointers)
//   epprof_bench --benchmark_filter=REGEX ...   Google Benchmark flags pass through
//
// Micro benchmarks (the hot path, the ONNX-Runtime-style path) use Google
// Benchmark repetitions and report the median. The macro measurements
// (export, merge, resident bytes, the 50M-event scope) are registered as
// manual-time benchmarks too, so --benchmark_filter selects them; the RSS
// figures come from child processes (this binary re-executed with a hidden
// --child=... flag) so that no earlier measurement's heap is counted.
//
// This file: the flags, the run and the summary table; bench.h lists the
// other parts.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench.h"

namespace epprof::bench {
namespace {

class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Aggregate) continue;
      if (r.aggregate_name != "median") continue;
      g_median_wall_ns[r.run_name.function_name] = r.GetAdjustedRealTime();
      g_median_cpu_ns[r.run_name.function_name] = r.GetAdjustedCPUTime();
    }
    benchmark::ConsoleReporter::ReportRuns(runs);
  }
};

void print_table(const std::vector<Row>& rows, const std::string& load_before) {
  size_t w[5] = {4, 6, 8, 4, 6};
  for (const Row& r : rows) {
    w[0] = std::max(w[0], r.what.size());
    w[1] = std::max(w[1], r.target.size());
    w[2] = std::max(w[2], r.measured.size());
    w[3] = std::max(w[3], r.wall.size());
  }
  std::printf("\nepprof_bench summary (%s sizes; build %s)\n", g_quick ? "QUICK" : "full",
              EPPROF_BENCH_BUILD_TYPE);
  std::printf("C API: %s\n", g_api.origin.c_str());
  std::printf("load average: %s before, %s after\n", load_before.c_str(), loadavg().c_str());
  std::printf("'measured' (the verdict) is CPU time, 'wall' is wall-clock time: on shared cores\n"
              "wall-clock also counts the time the benchmark waited for a CPU. Medians of repetitions.\n\n");
  std::printf("%-*s  %-*s  %-*s  %-*s  %-6s  %s\n", int(w[0]), "what", int(w[1]), "target", int(w[2]),
              "measured", int(w[3]), "wall", "result", "notes");
  std::printf("%s\n", std::string(w[0] + w[1] + w[2] + w[3] + 24, '-').c_str());
  for (const Row& r : rows)
    std::printf("%-*s  %-*s  %-*s  %-*s  %-6s  %s\n", int(w[0]), r.what.c_str(), int(w[1]),
                r.target.c_str(), int(w[2]), r.measured.c_str(), int(w[3]), r.wall.c_str(),
                r.verdict.c_str(), r.note.c_str());
  if (g_quick)
    std::printf("(--quick: reduced sizes; a smoke run, not the targets' measurements)\n");
}

std::vector<Row> build_rows() {
  std::vector<Row> rows;
  add_hot_path_rows(rows);
  add_export_rows(rows);
  add_children_rows(rows);
  if (g_failed)
    rows.push_back({"functional checks", "all ok", "FAILED", "-", "MISS",
                    "see the messages above (dropped events, counts, a child)"});
  return rows;
}

}  // namespace
}  // namespace epprof::bench

int main(int argc, char** argv) {
  using namespace epprof::bench;
  // Our own flags first; the rest goes to Google Benchmark.
  bool force_static = false;
  std::string child;
  uint64_t child_n = 0;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      g_quick = true;
    } else if (a == "--static-api") {
      force_static = true;
    } else if (a.rfind("--child=", 0) == 0 && i + 1 < argc) {
      child = a.substr(8);
      child_n = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: epprof_bench [--quick] [--static-api] [Google Benchmark flags]\n"
          "  runs every benchmark of issue 2 and prints a summary table with\n"
          "  target, measured value and PASS/MISS per line. Timing misses do not\n"
          "  change the exit status; a failed functional check (dropped events,\n"
          "  wrong counts, a failed child) exits 1.\n");
      return 0;
    } else {
      rest.push_back(argv[i]);
    }
  }
  load_api(force_static);
  if (!child.empty()) return run_as_child(child, child_n);

  int bargc = int(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&bargc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, rest.data())) return 2;

  g_name = intern_public("Conv_0_kernel_time");
  const std::string load_before = loadavg();
  std::printf("epprof_bench: C API %s; build %s%s\n", g_api.origin.c_str(), EPPROF_BENCH_BUILD_TYPE,
              std::strcmp(EPPROF_BENCH_BUILD_TYPE, "Debug") == 0
                  ? " (WARNING: the library is unoptimised; figures are meaningless)"
                  : "");
  register_hot_path();
  register_exports();
  register_children();
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  free_hot_path_profilers();

  print_table(build_rows(), load_before);
  return g_failed ? 1 : 0;
}
