#include "report/format.h"

#include <algorithm>
#include <cmath>

namespace epprof::report {

bool parse_format(const std::string& s, Format* out) {
  if (s == "text") *out = Format::kText;
  else if (s == "csv") *out = Format::kCsv;
  else if (s == "json") *out = Format::kJson;
  else if (s == "html") *out = Format::kHtml;
  else return false;
  return true;
}

std::string json_escape(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '<': out += "\\u003c"; break;  // safe inside an HTML <script>
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  // Invalid UTF-8 is left to the caller's input: names come from a parser
  // that validated the trace as UTF-8.
  return out + "\"";
}

std::string csv_escape(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void write_text_table(const Table& t, std::string* out) {
  std::vector<size_t> w(t.header.size(), 0);
  for (size_t c = 0; c < t.header.size(); ++c) w[c] = t.header[c].size();
  for (const auto& row : t.rows)
    for (size_t c = 0; c < row.size() && c < w.size(); ++c) w[c] = std::max(w[c], row[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < w.size(); ++c) {
      const std::string& s = c < cells.size() ? cells[c] : std::string();
      const std::string pad(w[c] - std::min(w[c], s.size()), ' ');
      if (c) l += "  ";
      l += t.numeric[c] ? pad + s : s + pad;
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    *out += l + "\n";
  };
  if (!t.title.empty()) *out += t.title + "\n";
  line(t.header);
  size_t total = 0;
  for (size_t c = 0; c < w.size(); ++c) total += w[c] + (c ? 2 : 0);
  *out += std::string(total, '-') + "\n";
  for (const auto& row : t.rows) line(row);
}

std::vector<Table> report_tables(const Report& r) {
  std::vector<Table> tables;
  Table main;
  main.title = std::string("by ") + group_name(r.by) + (r.by == GroupBy::kKernel ? " (device slices)" : " (node slices)");
  main.header = {group_name(r.by), "count", "total_us", "mean_us", "p50_us", "p90_us", "p99_us", "pct_run"};
  main.numeric = {false, true, true, true, true, true, true, true};
  for (const Row& row : r.rows)
    main.rows.push_back({row.key, std::to_string(row.count), fixed(row.total, 3), fixed(row.mean, 3),
                         fixed(row.p50, 3), fixed(row.p90, 3), fixed(row.p99, 3),
                         row.pct_of_run < 0 ? "-" : fixed(row.pct_of_run, 2)});
  tables.push_back(main);

  Table nodes;
  nodes.title = "host vs device time per node";
  nodes.header = {"node", "op", "count", "host_us", "device_us", "device_slices", "device_pct_host"};
  nodes.numeric = {false, false, true, true, true, true, true};
  for (const NodeTimeRow& n : r.nodes)
    nodes.rows.push_back({n.node, n.op.empty() ? "-" : n.op, std::to_string(n.count), fixed(n.host_total, 3),
                          fixed(n.device_total, 3), std::to_string(n.device_slices),
                          n.host_total > 0 ? fixed(100.0 * n.device_total / n.host_total, 2) : "-"});
  tables.push_back(nodes);

  if (!r.counters.empty()) {
    Table c;
    c.title = "counters per op";
    c.header = {"op", "counter", "samples", "total", "mean", "min", "max"};
    c.numeric = {false, false, true, true, true, true, true};
    for (const CounterRow& row : r.counters)
      c.rows.push_back({row.op, row.counter, std::to_string(row.samples), fixed(row.total, 3), fixed(row.mean, 3),
                        fixed(row.min, 3), fixed(row.max, 3)});
    tables.push_back(c);
  }
  return tables;
}

namespace {

void json_number(double v, std::string* out) { *out += std::isfinite(v) ? fixed(v, 3) : "null"; }

}  // namespace

void write_csv(const Table& t, const std::string& table_name, std::string* out) {
  *out += "table";
  for (const auto& h : t.header) *out += "," + csv_escape(h);
  *out += "\n";
  for (const auto& row : t.rows) {
    *out += table_name;
    for (const auto& cell : row) *out += "," + csv_escape(cell);
    *out += "\n";
  }
}

void write_csv_tables(const std::vector<Table>& tables, const char* const* names, std::string* out) {
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i) *out += "\n";
    write_csv(tables[i], names[i], out);
  }
}

void write_report(const Report& r, Format f, std::string* out) {
  const std::vector<Table> tables = report_tables(r);
  static const char* const kNames[] = {"by", "nodes", "counters"};
  if (f == Format::kText) {
    *out += "trace: " + r.source + " (" + std::to_string(r.events) + " events, " + std::to_string(r.bytes) +
            " bytes)\n";
    if (r.runs_total)
      *out += "model_run: " + std::to_string(r.runs_measured) + " measured of " + std::to_string(r.runs_total) +
              ", total " + fixed(r.run_total, 3) + " us, mean " + fixed(r.run_mean, 3) + " us, p50 " +
              fixed(r.run_p50, 3) + ", p90 " + fixed(r.run_p90, 3) + ", p99 " + fixed(r.run_p99, 3) + "\n";
    else
      *out += "model_run: none in this trace (pct_run not available)\n";
    if (r.device_events)
      *out += "device events: " + std::to_string(r.device_events) + ", " +
              std::to_string(r.unattributed_device_events) + " not attributed to a node\n";
    for (const Table& t : tables) {
      *out += "\n";
      write_text_table(t, out);
    }
    if (r.rows_omitted) *out += "(" + std::to_string(r.rows_omitted) + " more rows; see --top)\n";
    return;
  }
  if (f == Format::kCsv) {
    write_csv_tables(tables, kNames, out);
    return;
  }
  // JSON: numbers as numbers, µs.
  *out += "{\"trace\":" + json_escape(r.source) + ",\"events\":" + std::to_string(r.events) +
          ",\"by\":" + json_escape(group_name(r.by)) + ",\"runs_total\":" + std::to_string(r.runs_total) +
          ",\"runs_measured\":" + std::to_string(r.runs_measured) +
          ",\"device_events\":" + std::to_string(r.device_events) +
          ",\"unattributed_device_events\":" + std::to_string(r.unattributed_device_events) +
          ",\"model_run_total_us\":";
  json_number(r.run_total, out);
  *out += ",\"model_run_mean_us\":";
  json_number(r.run_mean, out);
  *out += ",\"rows\":[";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const Row& row = r.rows[i];
    if (i) *out += ",";
    *out += "{\"key\":" + json_escape(row.key) + ",\"count\":" + std::to_string(row.count) + ",\"total_us\":";
    json_number(row.total, out);
    *out += ",\"mean_us\":";
    json_number(row.mean, out);
    *out += ",\"p50_us\":";
    json_number(row.p50, out);
    *out += ",\"p90_us\":";
    json_number(row.p90, out);
    *out += ",\"p99_us\":";
    json_number(row.p99, out);
    *out += ",\"pct_of_run\":";
    if (row.pct_of_run < 0) *out += "null";
    else json_number(row.pct_of_run, out);
    *out += "}";
  }
  *out += "],\"rows_omitted\":" + std::to_string(r.rows_omitted) + ",\"nodes\":[";
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const NodeTimeRow& n = r.nodes[i];
    if (i) *out += ",";
    *out += "{\"node\":" + json_escape(n.node) + ",\"op\":" + json_escape(n.op) + ",\"count\":" +
            std::to_string(n.count) + ",\"host_us\":";
    json_number(n.host_total, out);
    *out += ",\"device_us\":";
    json_number(n.device_total, out);
    *out += ",\"device_slices\":" + std::to_string(n.device_slices) + "}";
  }
  *out += "],\"counters\":[";
  for (size_t i = 0; i < r.counters.size(); ++i) {
    const CounterRow& c = r.counters[i];
    if (i) *out += ",";
    *out += "{\"op\":" + json_escape(c.op) + ",\"counter\":" + json_escape(c.counter) +
            ",\"samples\":" + std::to_string(c.samples) + ",\"total\":";
    json_number(c.total, out);
    *out += ",\"mean\":";
    json_number(c.mean, out);
    *out += ",\"min\":";
    json_number(c.min, out);
    *out += ",\"max\":";
    json_number(c.max, out);
    *out += "}";
  }
  *out += "]}\n";
}

void write_diff(const std::vector<DiffRow>& rows, const std::string& title, Format f, std::string* out) {
  Table t;
  t.title = title;
  t.header = {"key", "a_us_per_run", "b_us_per_run", "delta_us", "delta_pct", "noise_us", "significant"};
  t.numeric = {false, true, true, true, true, true, false};
  for (const DiffRow& r : rows)
    t.rows.push_back({r.key, fixed(r.mean_a, 3), fixed(r.mean_b, 3), fixed(r.delta, 3),
                      r.mean_a > 0 ? fixed(r.delta_pct, 2) : "-", r.spread_known ? fixed(r.noise, 3) : "-",
                      !r.spread_known ? "unknown" : r.significant ? "yes" : "no"});
  if (f == Format::kText) {
    write_text_table(t, out);
  } else if (f == Format::kCsv) {
    write_csv(t, title, out);
  } else {
    *out += "[";
    for (size_t i = 0; i < rows.size(); ++i) {
      const DiffRow& r = rows[i];
      if (i) *out += ",";
      *out += "{\"key\":" + json_escape(r.key) + ",\"a_us\":";
      json_number(r.mean_a, out);
      *out += ",\"b_us\":";
      json_number(r.mean_b, out);
      *out += ",\"delta_us\":";
      json_number(r.delta, out);
      *out += ",\"noise_us\":";
      if (r.spread_known) json_number(r.noise, out);
      else *out += "null";
      *out += std::string(",\"significant\":") + (!r.spread_known ? "null" : r.significant ? "true" : "false") + "}";
    }
    *out += "]";
  }
}

}  // namespace epprof::report
