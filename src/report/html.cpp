// The HTML report: one file, no external assets. The data is embedded as
// JSON; a script (html_timeline.js, embedded at build time) draws the
// timeline on a canvas: one lane per host thread, device track and counter,
// slices nested by depth, flows from nodes to the device work they caused.
// The per-op bar chart is SVG. The script marks the DOM when done so a
// headless browser can check it (body[data-rendered], data-* counts).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <map>
#include <unordered_map>

#include "report/format.h"
#include "report/html_timeline_js.h"  // generated: kTimelineScript

namespace epprof::report {
namespace {

// The page embeds at most this many slices, flows and counter samples. Past
// a cap the page says so: slices keep the longest ones (the shortest are
// sub-pixel until zoomed far in), counters keep every k-th sample. The
// tables below the timeline always cover every event.
constexpr size_t kMaxSlices = 150000;
constexpr size_t kMaxFlows = 50000;
constexpr size_t kMaxCounterPoints = 200000;

const char* const kStyle = R"CSS(
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px}h2{font-size:15px;margin-top:24px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:2px 6px}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#eee}
#timeline{border:1px solid #888;width:100%;height:200px;cursor:grab;display:block;box-sizing:content-box}
#tip{position:fixed;background:#ffd;border:1px solid #999;padding:3px 5px;display:none;pointer-events:none;
  white-space:pre;font:12px ui-monospace,monospace;max-width:60vw;overflow:hidden;z-index:2}
#details{border:1px solid #bbb;background:#f8f8f8;padding:4px 8px;margin:6px 0;min-height:1.2em;
  white-space:pre-wrap;font:12px ui-monospace,monospace}
#details.pinned{border-color:#124;background:#eef4ff}
.note{color:#666}.warn{color:#a40}
)CSS";

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default:
        // Names are byte strings: a NUL or other control byte (not allowed
        // in HTML text) is shown as \xNN, so the name keeps its length.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          o += buf;
        } else {
          o += c;
        }
    }
  }
  return o;
}

void html_table(const Table& t, std::string* out) {
  *out += "<h2>" + html_escape(t.title) + "</h2>\n<table><tr>";
  for (const auto& h : t.header) *out += "<th>" + html_escape(h) + "</th>";
  *out += "</tr>\n";
  for (const auto& row : t.rows) {
    *out += "<tr>";
    for (size_t c = 0; c < row.size(); ++c)
      *out += std::string(t.numeric[c] ? "<td class=n>" : "<td>") + html_escape(row[c]) + "</td>";
    *out += "</tr>\n";
  }
  *out += "</table>\n";
}

// A time in µs with at most 3 decimals and no trailing zeros (integer-µs
// traces stay short). JSON has no inf or NaN (a hostile trace's times can
// overflow when made relative): those are written as 0.
void num(double v, std::string* out) {
  if (!std::isfinite(v)) v = 0;
  char buf[400];
  int n = std::snprintf(buf, sizeof buf, "%.3f", v);
  while (n > 0 && buf[n - 1] == '0') --n;
  if (n > 0 && buf[n - 1] == '.') --n;
  if (n == 2 && buf[0] == '-' && buf[1] == '0') n = 1, buf[0] = '0';  // "-0.000"
  out->append(buf, size_t(n));
}

// Where a slice comes from; the script shows it and the browser test uses it.
enum Source : uint8_t { kRunSlice = 0, kOtherSlice = 1, kNodeSlice = 2, kDeviceSlice = 3 };

struct Item {
  const Slice* s;
  Source src;
  int lane = 0;
  int depth = 0;
};

enum class LaneKind { kHost, kDevice, kCounter };

struct Lane {
  int64_t pid = 0, tid = 0;
  LaneKind kind = LaneKind::kHost;
  uint32_t counter = kNoString;  // counter lanes
  std::string name;
  int rows = 1;  // max depth + 1 of the slices shown
};

// Strings of the page, each once; slices refer to them by index.
class PageStrings {
 public:
  explicit PageStrings(const StringTable& t) : t_(t) {}
  int of(uint32_t id) {
    if (id == kNoString) return -1;
    auto [it, fresh] = index_.try_emplace(id, int(list_.size()));
    if (fresh) list_.push_back(id);
    return it->second;
  }
  void write(std::string* out) const {
    *out += "[";
    for (size_t i = 0; i < list_.size(); ++i) *out += (i ? "," : "") + json_escape(t_.at(list_[i]));
    *out += "]";
  }

 private:
  const StringTable& t_;
  std::unordered_map<uint32_t, int> index_;
  std::vector<uint32_t> list_;
};

std::string lane_name(const Trace& t, const Lane& l) {
  auto pn = t.process_names.find(l.pid);
  std::string name = pn != t.process_names.end() ? pn->second : "pid " + std::to_string(l.pid);
  if (l.kind == LaneKind::kCounter) return name + " / counter " + t.strings.get(l.counter);
  auto tn = t.thread_names.find({l.pid, l.tid});
  return name + " / " + (tn != t.thread_names.end() ? tn->second : "tid " + std::to_string(l.tid));
}

// The timeline's data as JSON, and what the page says about it.
struct TimelineData {
  std::string json;
  size_t slices_total = 0, slices_shown = 0;
  double thinned_below_us = 0;  // slices shorter than this were left out
  size_t flows_total = 0, flows_shown = 0;
  size_t counter_points_total = 0, counter_points_shown = 0;
};

TimelineData build_timeline(const Trace& t) {
  TimelineData out;
  std::vector<Item> items;
  items.reserve(t.runs.size() + t.others.size() + t.nodes.size() + t.devices.size());
  for (const Run& run : t.runs) items.push_back({&run.slice, kRunSlice});
  for (const Slice& s : t.others) items.push_back({&s, kOtherSlice});
  for (const Slice& s : t.nodes) items.push_back({&s, kNodeSlice});
  for (const Slice& s : t.devices) items.push_back({&s, kDeviceSlice});
  out.slices_total = items.size();

  // Lanes: per process, its host threads, then its device tracks, then its
  // counters. A thread with any device slice is a device track.
  std::map<std::pair<int64_t, int64_t>, bool> threads;  // (pid, tid) -> device
  for (const Item& it : items) threads[{it.s->pid, it.s->tid}] |= it.src == kDeviceSlice;
  std::map<std::pair<int64_t, uint32_t>, std::vector<const CounterPoint*>> series;
  for (const CounterPoint& c : t.counter_points) series[{c.pid, c.counter}].push_back(&c);
  std::vector<Lane> lanes;
  auto make_lane = [](int64_t pid, int64_t tid, LaneKind kind, uint32_t counter) {
    Lane l;
    l.pid = pid, l.tid = tid, l.kind = kind, l.counter = counter;
    return l;
  };
  for (const auto& [k, dev] : threads)
    lanes.push_back(make_lane(k.first, k.second, dev ? LaneKind::kDevice : LaneKind::kHost, kNoString));
  for (const auto& [k, v] : series) lanes.push_back(make_lane(k.first, 0, LaneKind::kCounter, k.second));
  std::stable_sort(lanes.begin(), lanes.end(), [](const Lane& a, const Lane& b) {
    return a.pid != b.pid ? a.pid < b.pid : int(a.kind) < int(b.kind);
  });
  std::map<std::pair<int64_t, int64_t>, int> lane_of_thread;
  std::map<std::pair<int64_t, uint32_t>, int> lane_of_counter;
  for (size_t i = 0; i < lanes.size(); ++i) {
    lanes[i].name = lane_name(t, lanes[i]);
    if (lanes[i].kind == LaneKind::kCounter)
      lane_of_counter[{lanes[i].pid, lanes[i].counter}] = int(i);
    else
      lane_of_thread[{lanes[i].pid, lanes[i].tid}] = int(i);
  }
  for (Item& it : items) it.lane = lane_of_thread[{it.s->pid, it.s->tid}];

  // Depth by containment, per lane: in start order (longer first, a run
  // before what it holds), a slice sits one below the innermost open slice
  // that has not ended when it starts.
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.lane != b.lane) return a.lane < b.lane;
    if (a.s->ts != b.s->ts) return a.s->ts < b.s->ts;
    if (a.s->dur != b.s->dur) return a.s->dur > b.s->dur;
    return a.src < b.src;
  });
  std::vector<size_t> lane_begin(lanes.size() + 1, items.size());
  {
    std::vector<double> open_ends;
    int lane = -1;
    for (size_t i = 0; i < items.size(); ++i) {
      Item& it = items[i];
      if (it.lane != lane) {
        for (int l = lane + 1; l <= it.lane; ++l) lane_begin[size_t(l)] = i;
        lane = it.lane;
        open_ends.clear();
      }
      while (!open_ends.empty() && open_ends.back() <= it.s->ts) open_ends.pop_back();
      it.depth = int(open_ends.size());
      open_ends.push_back(it.s->ts + it.s->dur);
    }
  }
  // The depth of the innermost slice of a lane that holds time ts (0 if
  // none): walking back from the last slice that starts by ts, the first
  // one that still runs at ts is the innermost.
  auto depth_at = [&](int lane, double ts) {
    auto b = items.begin() + std::ptrdiff_t(lane_begin[size_t(lane)]);
    auto e = items.begin() + std::ptrdiff_t(lane_begin[size_t(lane) + 1]);
    auto pos = std::upper_bound(b, e, ts + 1e-6, [](double v, const Item& it) { return v < it.s->ts; });
    for (int back = 0; pos != b && back < 256; ++back) {
      --pos;
      if (ts <= pos->s->ts + pos->s->dur + 1e-6) return pos->depth;
    }
    return 0;
  };

  double t_min = 0, t_max = 0;
  bool any = false;
  auto extend = [&](double a, double b) {
    if (!any) t_min = a, t_max = b, any = true;
    t_min = std::min(t_min, a);
    t_max = std::max(t_max, b);
  };
  for (const Item& it : items) extend(it.s->ts, it.s->ts + it.s->dur);
  for (const CounterPoint& c : t.counter_points) extend(c.ts, c.ts);

  // Flows: a finish point and the start with the same id, on known lanes.
  std::string flows;
  {
    std::unordered_map<uint64_t, const FlowPoint*> starts;
    for (const FlowPoint& f : t.flows)
      if (f.start) starts[f.id] = &f;
    for (const FlowPoint& f : t.flows) {
      if (f.start) continue;
      auto s = starts.find(f.id);
      if (s == starts.end()) continue;
      auto a = lane_of_thread.find({s->second->pid, s->second->tid});
      auto b = lane_of_thread.find({f.pid, f.tid});
      if (a == lane_of_thread.end() || b == lane_of_thread.end()) continue;
      ++out.flows_total;
      if (out.flows_shown >= kMaxFlows) continue;
      ++out.flows_shown;
      flows += flows.empty() ? "[" : ",[";
      flows += std::to_string(a->second) + ",";
      num(s->second->ts - t_min, &flows);
      flows += "," + std::to_string(depth_at(a->second, s->second->ts)) + "," + std::to_string(b->second) + ",";
      num(f.ts - t_min, &flows);
      flows += "," + std::to_string(depth_at(b->second, f.ts)) + "]";
    }
  }

  // Thinning: past the cap, the longest slices stay.
  if (items.size() > kMaxSlices) {
    std::vector<double> durs;
    durs.reserve(items.size());
    for (const Item& it : items) durs.push_back(it.s->dur);
    std::nth_element(durs.begin(), durs.begin() + std::ptrdiff_t(kMaxSlices - 1), durs.end(), std::greater<double>());
    const double cut = durs[kMaxSlices - 1];
    size_t at_cut = 0;  // slices exactly at the cut, kept in time order until the cap
    for (const Item& it : items) at_cut += it.s->dur > cut;
    std::vector<Item> kept;
    kept.reserve(kMaxSlices);
    for (const Item& it : items)
      if (it.s->dur > cut || (it.s->dur == cut && at_cut++ < kMaxSlices)) kept.push_back(it);
    items.swap(kept);
    out.thinned_below_us = cut;
  }
  out.slices_shown = items.size();
  for (const Item& it : items) lanes[size_t(it.lane)].rows = std::max(lanes[size_t(it.lane)].rows, it.depth + 1);
  // Each (lane, depth) row in time order: the script searches rows.
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.lane != b.lane) return a.lane < b.lane;
    if (a.depth != b.depth) return a.depth < b.depth;
    return a.s->ts < b.s->ts;
  });

  // The window the page opens on: the measured runs (all runs if none is
  // measured, the whole trace if there is no run).
  double r0 = 0, r1 = 0;
  bool have_runs = false;
  for (int pass = 0; pass < 2 && !have_runs; ++pass)
    for (const Run& r : t.runs) {
      if (pass == 0 && !r.measured) continue;
      r0 = have_runs ? std::min(r0, r.slice.ts) : r.slice.ts;
      r1 = have_runs ? std::max(r1, r.slice.ts + r.slice.dur) : r.slice.ts + r.slice.dur;
      have_runs = true;
    }
  if (!have_runs) r0 = t_min, r1 = t_max;

  PageStrings strings(t.strings);
  std::string& j = out.json;
  j.reserve(items.size() * 48 + 4096);
  constexpr int kCols = 11;
  std::string cols[kCols];
  const char* const col_names[kCols] = {"lane", "ts", "dur", "depth", "src", "name",
                                        "cat",  "op", "prov", "nidx", "corr"};
  for (const Item& it : items) {
    const Slice& s = *it.s;
    std::string* c = cols;
    auto sep = [](std::string* col) {
      if (!col->empty()) *col += ',';
      return col;
    };
    *sep(&c[0]) += std::to_string(it.lane);
    num(s.ts - t_min, sep(&c[1]));
    num(s.dur, sep(&c[2]));
    *sep(&c[3]) += std::to_string(it.depth);
    *sep(&c[4]) += std::to_string(int(it.src));
    *sep(&c[5]) += std::to_string(strings.of(s.name));
    *sep(&c[6]) += std::to_string(strings.of(s.cat_name));
    *sep(&c[7]) += std::to_string(strings.of(s.op));
    *sep(&c[8]) += std::to_string(strings.of(s.provider));
    *sep(&c[9]) += std::to_string(strings.of(s.node_index));
    *sep(&c[10]) += std::to_string(s.corr);
  }
  j += "{\"lanes\":[";
  for (size_t i = 0; i < lanes.size(); ++i) {
    const Lane& l = lanes[i];
    const char* kind = l.kind == LaneKind::kHost ? "host" : l.kind == LaneKind::kDevice ? "device" : "counter";
    j += std::string(i ? "," : "") + "{\"name\":" + json_escape(l.name) + ",\"kind\":\"" + kind +
         "\",\"rows\":" + std::to_string(l.rows) + "}";
  }
  j += "],\"slices\":{";
  for (int c = 0; c < kCols; ++c) j += std::string(c ? "," : "") + "\"" + col_names[c] + "\":[" + cols[c] + "]";
  j += "},\"flows\":[" + flows + "],\"counters\":[";
  // Counter series: thinned by a common stride when there are too many.
  for (const auto& [k, v] : series) out.counter_points_total += v.size();
  const size_t stride = (out.counter_points_total + kMaxCounterPoints - 1) / kMaxCounterPoints;
  bool first = true;
  for (auto& [k, v] : series) {
    std::stable_sort(v.begin(), v.end(), [](const CounterPoint* a, const CounterPoint* b) { return a->ts < b->ts; });
    std::string ts, val;
    for (size_t i = 0; i < v.size(); i += std::max<size_t>(1, stride)) {
      if (!ts.empty()) ts += ',', val += ',';
      num(v[i]->ts - t_min, &ts);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", std::isfinite(v[i]->value) ? v[i]->value : 0.0);
      val += buf;
      ++out.counter_points_shown;
    }
    j += std::string(first ? "" : ",") + "{\"lane\":" + std::to_string(lane_of_counter[k]) + ",\"ts\":[" + ts +
         "],\"v\":[" + val + "]}";
    first = false;
  }
  j += "],\"strs\":";
  strings.write(&j);
  j += ",\"t_base\":";
  num(t_min, &j);
  j += ",\"whole\":[0,";
  num(t_max - t_min, &j);
  j += "],\"runs\":[";
  num(r0 - t_min, &j);
  j += ",";
  num(r1 - t_min, &j);
  j += "],\"slices_total\":" + std::to_string(out.slices_total) + ",\"flows_total\":" + std::to_string(out.flows_total);
  return out;
}

}  // namespace

void write_html(const Trace& t, const Report& r, std::string* out) {
  TimelineData tl = build_timeline(t);
  std::string data = tl.json;
  // Per-op chart: total time per op over the measured runs.
  data += ",\"ops\":[";
  ReportOptions by_op;
  Report ops = build_report(t, by_op);
  for (size_t i = 0; i < ops.rows.size(); ++i)
    data += std::string(i ? "," : "") + "[" + json_escape(ops.rows[i].key) + "," + fixed(ops.rows[i].total, 3) + "]";
  data += "]}";

  *out += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>epprof report: " + html_escape(r.source) +
          "</title>\n<style>" + kStyle + "</style></head>\n<body>\n<h1>epprof report: " + html_escape(r.source) + "</h1>\n";
  *out += "<p>" + std::to_string(r.events) + " events; model_run: " + std::to_string(r.runs_measured) +
          " measured of " + std::to_string(r.runs_total) + ", mean " + fixed(r.run_mean, 3) + " us";
  if (r.device_events)
    *out += "; device events: " + std::to_string(r.device_events) + ", " +
            std::to_string(r.unattributed_device_events) + " not attributed to a node";
  *out += "</p>\n";
  *out += "<h2>Timeline</h2><p class=note>Opens on the measured runs. Wheel: zoom; drag: pan; shift+wheel: scroll "
          "lanes; hover: details; click: pin them. One lane per host thread, device track and counter; red arrows "
          "are flows from nodes to the device work they caused. <button id=reset>zoom to measured runs</button> "
          "<button id=whole>show whole trace</button> (model loading, session initialization)</p>\n";
  *out += "<p id=thinning class=" + std::string(tl.slices_shown < tl.slices_total ? "warn" : "note") + ">";
  if (tl.slices_shown < tl.slices_total)
    *out += "Thinned to stay fast: " + std::to_string(tl.slices_shown) + " of " + std::to_string(tl.slices_total) +
            " slices are drawn; the " + std::to_string(tl.slices_total - tl.slices_shown) +
            " shortest (" + fixed(tl.thinned_below_us, 3) + " us or less) are left out.";
  else
    *out += "All " + std::to_string(tl.slices_total) + " slices are drawn (those under a pixel wide merged on screen).";
  if (tl.flows_shown < tl.flows_total)
    *out += " Flows: the first " + std::to_string(tl.flows_shown) + " of " + std::to_string(tl.flows_total) + ".";
  if (tl.counter_points_shown < tl.counter_points_total)
    *out += " Counters: " + std::to_string(tl.counter_points_shown) + " of " +
            std::to_string(tl.counter_points_total) + " samples (evenly spaced).";
  *out += " The tables below count every event.</p>\n";
  *out += "<canvas id=timeline></canvas><div id=details class=note>Click a slice to pin its details here.</div>"
          "<div id=tip></div>\n";
  *out += "<h2>Time per op (measured runs)</h2>\n<svg id=chart xmlns=\"http://www.w3.org/2000/svg\"></svg>\n";
  for (const Table& tab : report_tables(r)) html_table(tab, out);
  *out += "<script type=\"application/json\" id=\"epprof-data\">" + data + "</script>\n";
  *out += std::string("<script>") + kTimelineScript + "</script>\n</body></html>\n";
}

}  // namespace epprof::report
