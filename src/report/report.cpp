#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace epprof::report {

const char* group_name(GroupBy by) {
  switch (by) {
    case GroupBy::kOp: return "op";
    case GroupBy::kNode: return "node";
    case GroupBy::kProvider: return "provider";
    case GroupBy::kKernel: return "kernel";
  }
  return "?";
}

bool parse_group(const std::string& s, GroupBy* out) {
  for (GroupBy g : {GroupBy::kOp, GroupBy::kNode, GroupBy::kProvider, GroupBy::kKernel})
    if (s == group_name(g)) {
      *out = g;
      return true;
    }
  return false;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = std::ceil(p / 100.0 * double(sorted.size()));
  size_t i = rank < 1 ? 0 : size_t(rank) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

namespace {

bool counted(const Trace& t, const Slice& s) {
  if (t.runs.empty()) return true;
  return s.run >= 0 && t.runs[size_t(s.run)].measured;
}

std::string key_of(const Trace& t, const Slice& s, GroupBy by) {
  uint32_t id = kNoString;
  switch (by) {
    case GroupBy::kOp: id = s.op; break;
    case GroupBy::kNode: id = s.name; break;
    case GroupBy::kProvider: id = s.provider; break;
    case GroupBy::kKernel: id = s.name; break;
  }
  return id == kNoString ? "(unknown)" : t.strings.at(id);
}

const std::vector<Slice>& source_of(const Trace& t, GroupBy by) {
  return by == GroupBy::kKernel ? t.devices : t.nodes;
}

}  // namespace

Report build_report(const Trace& t, const ReportOptions& o) {
  Report r;
  r.by = o.by;
  r.events = t.events;
  r.bytes = t.bytes;
  r.device_events = t.devices.size();
  r.unattributed_device_events = t.unattributed_devices;
  r.runs_total = t.runs.size();
  std::vector<double> run_durs;
  for (const Run& run : t.runs)
    if (run.measured) run_durs.push_back(run.slice.dur), r.run_total += run.slice.dur;
  r.runs_measured = run_durs.size();
  std::sort(run_durs.begin(), run_durs.end());
  if (!run_durs.empty()) {
    r.run_mean = r.run_total / double(run_durs.size());
    r.run_p50 = percentile(run_durs, 50);
    r.run_p90 = percentile(run_durs, 90);
    r.run_p99 = percentile(run_durs, 99);
  }

  std::map<std::string, std::vector<double>> groups;
  for (const Slice& s : source_of(t, o.by))
    if (counted(t, s)) groups[key_of(t, s, o.by)].push_back(s.dur);
  for (auto& [key, durs] : groups) {
    Row row;
    row.key = key;
    std::sort(durs.begin(), durs.end());
    row.count = durs.size();
    for (double d : durs) row.total += d;
    row.mean = row.total / double(row.count);
    row.p50 = percentile(durs, 50);
    row.p90 = percentile(durs, 90);
    row.p99 = percentile(durs, 99);
    if (r.run_total > 0) row.pct_of_run = 100.0 * row.total / r.run_total;
    r.rows.push_back(std::move(row));
  }
  std::stable_sort(r.rows.begin(), r.rows.end(), [](const Row& a, const Row& b) { return a.total > b.total; });
  if (o.top && r.rows.size() > o.top) {
    r.rows_omitted = r.rows.size() - o.top;
    r.rows.resize(o.top);
  }

  // Host vs device time per node.
  std::map<uint32_t, NodeTimeRow> per_node;
  for (const Slice& n : t.nodes) {
    if (!counted(t, n)) continue;
    NodeTimeRow& row = per_node[n.name];
    row.count++;
    row.host_total += n.dur;
    if (row.op.empty() && n.op != kNoString) row.op = t.strings.at(n.op);
  }
  for (const Slice& d : t.devices) {
    if (d.node < 0 || !counted(t, d)) continue;
    auto it = per_node.find(t.nodes[size_t(d.node)].name);
    if (it == per_node.end()) continue;
    it->second.device_total += d.dur;
    it->second.device_slices++;
  }
  for (auto& [name, row] : per_node) {
    row.node = t.strings.at(name);
    r.nodes.push_back(row);
  }
  std::stable_sort(r.nodes.begin(), r.nodes.end(),
                   [](const NodeTimeRow& a, const NodeTimeRow& b) { return a.host_total > b.host_total; });
  if (o.top && r.nodes.size() > o.top) r.nodes.resize(o.top);

  // Counters per op.
  std::map<std::pair<std::string, std::string>, CounterRow> counters;
  for (const CounterSample& c : t.counters) {
    if (c.node >= 0 && !counted(t, t.nodes[size_t(c.node)])) continue;
    std::string op = c.node < 0 ? "(no node)" : key_of(t, t.nodes[size_t(c.node)], GroupBy::kOp);
    CounterRow& row = counters[{op, t.strings.at(c.counter)}];
    if (row.samples == 0 || c.value < row.min) row.min = c.value;
    if (row.samples == 0 || c.value > row.max) row.max = c.value;
    row.samples++;
    row.total += c.value;
  }
  for (auto& [k, row] : counters) {
    row.op = k.first;
    row.counter = k.second;
    row.mean = row.total / double(row.samples);
    r.counters.push_back(row);
  }
  return r;
}

RunSeries run_series(const Trace& t, GroupBy by) {
  RunSeries s;
  // Measured runs in order; a trace with no model_run is one "run".
  std::vector<int32_t> slot(t.runs.size(), -1);
  for (size_t i = 0; i < t.runs.size(); ++i)
    if (t.runs[i].measured) slot[i] = int32_t(s.runs++);
  const bool no_runs = t.runs.empty();
  if (no_runs) s.runs = 1;
  std::unordered_map<std::string, size_t> index;
  for (const Slice& sl : source_of(t, by)) {
    int32_t r = no_runs ? 0 : sl.run >= 0 ? slot[size_t(sl.run)] : -1;
    if (r < 0) continue;
    std::string key = key_of(t, sl, by);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, s.keys.size()).first;
      s.keys.push_back(key);
      s.per_run.emplace_back(s.runs, 0.0);
    }
    s.per_run[it->second][size_t(r)] += sl.dur;
  }
  return s;
}

namespace {

void mean_var(const std::vector<double>& v, double* mean, double* var) {
  double m = 0;
  for (double x : v) m += x;
  m = v.empty() ? 0 : m / double(v.size());
  double q = 0;
  for (double x : v) q += (x - m) * (x - m);
  *mean = m;
  *var = v.size() > 1 ? q / double(v.size() - 1) : 0;
}

}  // namespace

std::vector<DiffRow> diff_series(const RunSeries& a, const RunSeries& b) {
  std::map<std::string, std::pair<const std::vector<double>*, const std::vector<double>*>> keys;
  for (size_t i = 0; i < a.keys.size(); ++i) keys[a.keys[i]].first = &a.per_run[i];
  for (size_t i = 0; i < b.keys.size(); ++i) keys[b.keys[i]].second = &b.per_run[i];
  std::vector<DiffRow> rows;
  for (const auto& [key, pr] : keys) {
    std::vector<double> va = pr.first ? *pr.first : std::vector<double>(a.runs, 0.0);
    std::vector<double> vb = pr.second ? *pr.second : std::vector<double>(b.runs, 0.0);
    double var_a, var_b;
    DiffRow row;
    row.key = key;
    mean_var(va, &row.mean_a, &var_a);
    mean_var(vb, &row.mean_b, &var_b);
    row.delta = row.mean_b - row.mean_a;
    row.delta_pct = row.mean_a > 0 ? 100.0 * row.delta / row.mean_a : 0;
    row.spread_known = va.size() > 1 && vb.size() > 1;
    if (row.spread_known) {
      row.noise = 2.0 * std::sqrt(var_a / double(va.size()) + var_b / double(vb.size()));
      row.significant = std::fabs(row.delta) > row.noise;
    }
    rows.push_back(row);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const DiffRow& x, const DiffRow& y) { return std::fabs(x.delta) > std::fabs(y.delta); });
  return rows;
}

}  // namespace epprof::report
