#include "op_table.h"

#include "report/report.h"
#include "report/trace_model.h"

namespace epprof::cli {

bool print_op_table(const std::string& trace_path, int skip_runs, int max_runs, FILE* out, std::string* error) {
  report::LoadOptions options;
  options.skip_runs = skip_runs;
  options.max_runs = max_runs;
  report::Trace trace;
  if (!report::load_trace(trace_path, options, &trace, error)) return false;
  const report::Report r = report::build_report(trace, report::ReportOptions{});
  if (r.runs_measured == 0) {
    *error = "the trace has no measured model_run events";
    return false;
  }
  std::fprintf(out, "%-24s %8s %12s %12s %10s\n", "op", "count", "total ms", "mean us", "% run");
  double all = 0;
  for (const report::Row& row : r.rows) {
    all += row.total;
    std::fprintf(out, "%-24s %8llu %12.3f %12.2f %9.1f%%\n", row.key.c_str(), static_cast<unsigned long long>(row.count),
                 row.total / 1000.0, row.mean, row.pct_of_run > 0 ? row.pct_of_run : 0.0);
  }
  std::fprintf(out, "%-24s %8s %12.3f %12s %9.1f%%\n", "(all nodes)", "", all / 1000.0, "",
               r.run_total > 0 ? 100.0 * all / r.run_total : 0.0);
  std::fprintf(out, "model_run: %llu runs, mean %.3f ms\n", static_cast<unsigned long long>(r.runs_measured),
               r.run_mean / 1000.0);
  return true;
}

}  // namespace epprof::cli
