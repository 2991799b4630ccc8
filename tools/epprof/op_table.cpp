#include "op_table.h"

#include <simdjson.h>

#include <algorithm>
#include <map>
#include <vector>

namespace epprof::cli {
namespace {

struct Slice {
  double ts, dur;
  std::string op;
};

struct OpStats {
  uint64_t count = 0;
  double total_us = 0;
};

}  // namespace

bool print_op_table(const std::string& trace_path, int skip_runs, int max_runs, FILE* out, std::string* error) {
  simdjson::dom::parser parser;
  simdjson::dom::array events;
  if (auto err = parser.load(trace_path).get(events)) {
    *error = "cannot read trace '" + trace_path + "': " + simdjson::error_message(err);
    return false;
  }
  std::vector<Slice> runs, nodes;
  for (simdjson::dom::element e : events) {
    std::string_view cat, name, ph;
    if (e["cat"].get(cat) || e["name"].get(name) || e["ph"].get(ph) || ph != "X") continue;
    double ts = 0, dur = 0;
    if (e["ts"].get(ts) || e["dur"].get(dur)) continue;
    if (cat == "Session" && name == "model_run") runs.push_back({ts, dur, {}});
    if (cat == "Node") {
      std::string_view op = "?";
      if (e["args"]["op_name"].get(op)) op = "?";
      nodes.push_back({ts, dur, std::string(op)});
    }
  }
  std::sort(runs.begin(), runs.end(), [](const Slice& a, const Slice& b) { return a.ts < b.ts; });
  if (runs.size() <= size_t(skip_runs)) {
    *error = "the trace has no measured model_run events";
    return false;
  }
  runs.erase(runs.begin(), runs.begin() + skip_runs);
  if (runs.size() > size_t(max_runs)) runs.resize(size_t(max_runs));
  double run_total = 0;
  for (const Slice& r : runs) run_total += r.dur;

  // Runs do not overlap (epprof run executes them one after another), so a
  // node belongs to the run whose interval holds its start.
  std::map<std::string, OpStats> ops;
  for (const Slice& n : nodes) {
    auto it = std::upper_bound(runs.begin(), runs.end(), n.ts,
                               [](double t, const Slice& r) { return t < r.ts; });
    if (it == runs.begin()) continue;
    --it;
    if (n.ts > it->ts + it->dur) continue;
    OpStats& s = ops[n.op];
    ++s.count;
    s.total_us += n.dur;
  }
  std::vector<std::pair<std::string, OpStats>> rows(ops.begin(), ops.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.total_us > b.second.total_us; });
  std::fprintf(out, "%-24s %8s %12s %12s %10s\n", "op", "count", "total ms", "mean us", "% run");
  double all = 0;
  for (const auto& [op, s] : rows) {
    all += s.total_us;
    std::fprintf(out, "%-24s %8llu %12.3f %12.2f %9.1f%%\n", op.c_str(),
                 static_cast<unsigned long long>(s.count), s.total_us / 1000.0,
                 s.total_us / double(s.count), run_total > 0 ? 100.0 * s.total_us / run_total : 0.0);
  }
  std::fprintf(out, "%-24s %8s %12.3f %12s %9.1f%%\n", "(all nodes)", "", all / 1000.0, "",
               run_total > 0 ? 100.0 * all / run_total : 0.0);
  std::fprintf(out, "model_run: %zu runs, mean %.3f ms\n", runs.size(), run_total / 1000.0 / double(runs.size()));
  return true;
}

}  // namespace epprof::cli
