#include "report/memory_report.h"

#include <simdjson.h>

#include <algorithm>
#include <map>

namespace epprof::report {
namespace {

constexpr std::string_view kTrackPrefix = "mem_in_use ";

double number(simdjson::dom::element e) {
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) return std::strtod(std::string(s).c_str(), nullptr);
  double d;
  return e.get_double().get(d) == simdjson::SUCCESS ? d : 0;
}

std::string bytes(double v) { return fixed(v, 0); }

}  // namespace

MemoryReport build_memory_report(const Trace& t) {
  MemoryReport r;
  simdjson::dom::parser parser;
  for (const auto& [pid, json] : t.memory_metadata) {
    simdjson::dom::object devices;
    if (parser.parse(json).get_object().get(devices) != simdjson::SUCCESS) continue;
    for (auto [name, fields] : devices) {
      MemoryReport::Device d;
      d.pid = pid;
      d.device = std::string(name);
      simdjson::dom::element v;
      if (fields["peak_in_use_bytes"].get(v) == simdjson::SUCCESS) d.peak = number(v);
      if (fields["in_use_at_end_bytes"].get(v) == simdjson::SUCCESS) d.end = number(v);
      if (fields["leaked_bytes"].get(v) == simdjson::SUCCESS) d.leaked = number(v);
      if (fields["leaked_allocations"].get(v) == simdjson::SUCCESS) d.leaked_allocations = number(v);
      r.devices.push_back(d);
    }
  }

  // Each measured run's peak per device track, and the innermost node of
  // that thread running at that moment.
  for (size_t ri = 0; ri < t.runs.size(); ++ri) {
    const Run& run = t.runs[ri];
    if (!run.measured) continue;
    std::map<uint32_t, const CounterPoint*> peak;
    for (const CounterPoint& c : t.counter_points) {
      if (c.pid != run.slice.pid || c.ts < run.slice.ts || c.ts > run.slice.ts + run.slice.dur) continue;
      if (t.strings.at(c.counter).compare(0, kTrackPrefix.size(), kTrackPrefix) != 0) continue;
      const CounterPoint*& p = peak[c.counter];
      if (!p || c.value > p->value) p = &c;
    }
    for (const auto& [counter, c] : peak) {
      MemoryReport::RunPeak rp;
      rp.pid = run.slice.pid;
      rp.run_index = run.index_in_pid;
      rp.device = t.strings.at(counter).substr(kTrackPrefix.size());
      rp.peak = c->value;
      // The innermost node of the sample's thread running then; for a
      // device's track (a plugin's memory), of any thread of the process.
      const Slice* at = nullptr;
      for (int pass = 0; pass < 2 && !at; ++pass)
        for (const Slice& n : t.nodes)
          if (n.pid == c->pid && (pass == 1 || n.tid == c->tid) && n.ts <= c->ts && c->ts <= n.ts + n.dur &&
              (!at || n.dur < at->dur))
            at = &n;
      if (at) {
        rp.node = t.strings.get(at->name);
        rp.op = t.strings.get(at->op);
      }
      r.runs.push_back(rp);
    }
  }

  // What each node execution allocated, freed and kept (its mem_* args).
  const uint32_t allocated = t.strings.find("mem_allocated_bytes"), freed = t.strings.find("mem_freed_bytes"),
                 delta = t.strings.find("mem_in_use_delta");
  std::map<std::string, MemoryReport::Usage> by_op, by_node;
  for (const CounterSample& c : t.counters) {
    if (c.node < 0 || (c.counter != allocated && c.counter != freed && c.counter != delta)) continue;
    const Slice& n = t.nodes[size_t(c.node)];
    if (n.run >= 0 && !t.runs[size_t(n.run)].measured) continue;
    if (n.run < 0 && !t.runs.empty()) continue;
    const std::string op = t.strings.get(n.op), node = t.strings.get(n.name);
    for (MemoryReport::Usage* u : {&by_op[op], &by_node[node]}) {
      if (c.counter == allocated) {
        u->allocated += c.value;
        ++u->count;
      } else if (c.counter == freed) {
        u->freed += c.value;
      } else {
        u->activation += std::max(0.0, c.value);
      }
    }
    by_node[node].op = op;
  }
  for (auto& [op, u] : by_op) {
    u.key = op;
    u.op = op;
    r.ops.push_back(u);
  }
  for (auto& [node, u] : by_node) {
    u.key = node;
    r.nodes.push_back(u);
  }
  std::stable_sort(r.ops.begin(), r.ops.end(), [](const auto& a, const auto& b) { return a.allocated > b.allocated; });
  std::stable_sort(r.nodes.begin(), r.nodes.end(),
                   [](const auto& a, const auto& b) { return a.activation > b.activation; });
  r.any = !r.devices.empty() || !r.ops.empty();
  return r;
}

std::vector<Table> memory_tables(const MemoryReport& r) {
  std::vector<Table> out;
  Table dev{"memory per device (whole scope)", {"pid", "device", "peak_bytes", "end_bytes", "leaked_bytes",
                                               "leaked_allocations"},
            {true, false, true, true, true, true}, {}};
  for (const auto& d : r.devices)
    dev.rows.push_back({std::to_string(d.pid), d.device, bytes(d.peak), bytes(d.end), bytes(d.leaked),
                        bytes(d.leaked_allocations)});
  out.push_back(dev);
  Table runs{"peak per measured run", {"pid", "run", "device", "peak_bytes", "node_at_peak", "op"},
             {true, true, false, true, false, false}, {}};
  for (const auto& p : r.runs)
    runs.rows.push_back({std::to_string(p.pid), std::to_string(p.run_index), p.device, bytes(p.peak), p.node, p.op});
  out.push_back(runs);
  Table ops{"top allocating ops (measured runs)", {"op", "executions", "allocated_bytes", "freed_bytes",
                                                   "activation_bytes"},
            {false, true, true, true, true}, {}};
  for (const auto& u : r.ops)
    ops.rows.push_back({u.key, std::to_string(u.count), bytes(u.allocated), bytes(u.freed), bytes(u.activation)});
  out.push_back(ops);
  Table nodes{"activation bytes per node (measured runs)", {"node", "op", "executions", "activation_bytes",
                                                            "allocated_bytes"},
              {false, false, true, true, true}, {}};
  for (const auto& u : r.nodes)
    nodes.rows.push_back({u.key, u.op, std::to_string(u.count), bytes(u.activation), bytes(u.allocated)});
  out.push_back(nodes);
  return out;
}

void write_memory_report(const MemoryReport& r, const std::string& source, Format f, std::string* out) {
  const std::vector<Table> tables = memory_tables(r);
  static const char* const kNames[] = {"devices", "runs", "ops", "nodes"};
  if (f == Format::kText) {
    *out += "trace: " + source + "\n";
    if (!r.any) {
      *out += "no memory data in this trace (record it with epprof run --memory, or epprof_memory_alloc)\n";
      return;
    }
    for (const Table& t : tables) {
      *out += "\n";
      write_text_table(t, out);
    }
    return;
  }
  if (f == Format::kCsv) {
    write_csv_tables(tables, kNames, out);
    return;
  }
  // JSON: every table as an array of objects, numbers as numbers.
  *out += "{\"trace\":" + json_escape(source) + ",\"memory\":" + (r.any ? "true" : "false");
  for (size_t i = 0; i < tables.size(); ++i) {
    *out += std::string(",\"") + kNames[i] + "\":[";
    const Table& t = tables[i];
    for (size_t row = 0; row < t.rows.size(); ++row) {
      *out += row ? ",{" : "{";
      for (size_t c = 0; c < t.header.size(); ++c) {
        *out += (c ? "," : "") + json_escape(t.header[c]) + ":";
        *out += t.numeric[c] ? t.rows[row][c] : json_escape(t.rows[row][c]);
      }
      *out += "}";
    }
    *out += "]";
  }
  *out += "}\n";
}

}  // namespace epprof::report
