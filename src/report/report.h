// Summary tables over a loaded trace (`epprof report`) and the comparison of
// two traces (`epprof diff`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/trace_model.h"

namespace epprof::report {

enum class GroupBy { kOp, kNode, kProvider, kKernel };
const char* group_name(GroupBy by);
bool parse_group(const std::string& s, GroupBy* out);

// Nearest-rank percentile of sorted values: the value at rank ceil(p/100*n).
double percentile(const std::vector<double>& sorted, double p);

// One row of a table. Durations in µs; the percentiles are over the
// individual slices (one per node execution, or per device kernel) of the
// measured runs.
struct Row {
  std::string key;
  uint64_t count = 0;
  double total = 0, mean = 0, p50 = 0, p90 = 0, p99 = 0;
  double pct_of_run = -1;  // % of the measured model_run time; -1 if no model_run
};

// Host and device time of one node, summed over the measured runs.
struct NodeTimeRow {
  std::string node, op;
  uint64_t count = 0;  // node executions
  double host_total = 0, device_total = 0;
  uint64_t device_slices = 0;
};

struct CounterRow {
  std::string op, counter;
  uint64_t samples = 0;
  double total = 0, mean = 0, min = 0, max = 0;
};

struct ReportOptions {
  GroupBy by = GroupBy::kOp;
  size_t top = 0;  // 0: every row
};

struct Report {
  std::string source;
  GroupBy by = GroupBy::kOp;
  uint64_t runs_total = 0, runs_measured = 0;
  double run_total = 0, run_mean = 0, run_p50 = 0, run_p90 = 0, run_p99 = 0;
  uint64_t events = 0, bytes = 0;
  uint64_t device_events = 0, unattributed_device_events = 0;  // all runs, warm-up included
  std::vector<Row> rows;           // the --by table, by total descending
  size_t rows_omitted = 0;         // cut by --top
  std::vector<NodeTimeRow> nodes;  // host vs device, by host total descending
  std::vector<CounterRow> counters;
};

// Slices of unmeasured (warm-up) runs are left out; slices outside every
// model_run are counted when the trace has no model_run at all.
Report build_report(const Trace& trace, const ReportOptions& options);

// Per-run totals of every group key over the measured runs: [key][run].
struct RunSeries {
  std::vector<std::string> keys;
  std::vector<std::vector<double>> per_run;  // per key, one total per measured run
  uint64_t runs = 0;
};
RunSeries run_series(const Trace& trace, GroupBy by);

struct DiffRow {
  std::string key;
  double mean_a = 0, mean_b = 0, delta = 0, delta_pct = 0;  // per-run totals, µs
  double noise = 0;        // 2 standard errors of the difference
  bool significant = false;
  bool spread_known = false;  // false when a side has fewer than two runs
};

// Rows of B − A, sorted by |delta| descending. A key missing on one side
// counts as 0 there.
std::vector<DiffRow> diff_series(const RunSeries& a, const RunSeries& b);

}  // namespace epprof::report
