// The HTML report: one file, no external assets. The data is embedded as
// JSON; a small script draws the timeline on a canvas (wheel to zoom, drag
// to pan), the per-op bar chart as SVG, and marks the DOM when done so a
// headless browser can check it (body[data-rendered], data-* counts).
#include <algorithm>
#include <cstdio>
#include <map>

#include "report/format.h"

namespace epprof::report {
namespace {

// The timeline holds at most this many slices (the earliest ones): a page
// for a gigabyte trace would not open anyway; the tables cover everything.
constexpr size_t kMaxSlices = 50000;

const char* const kStyle = R"CSS(
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px}h2{font-size:15px;margin-top:24px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:2px 6px}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#eee}
#timeline{border:1px solid #888;width:100%;height:420px;cursor:grab;display:block}
#tip{position:fixed;background:#ffd;border:1px solid #999;padding:3px;display:none;pointer-events:none}
.note{color:#666}
)CSS";

const char* const kScript = R"JS(
(function(){
'use strict';
const D = JSON.parse(document.getElementById('epprof-data').textContent);
const cv = document.getElementById('timeline');
const ctx = cv.getContext('2d');
const tip = document.getElementById('tip');
const trackH = 18, labelW = 220;
let t0 = D.t_min, t1 = D.t_max > D.t_min ? D.t_max : D.t_min + 1;
const colors = {};
function color(k){ if(!(k in colors)){ let h=0; for(const c of k) h=(h*31+c.charCodeAt(0))>>>0; colors[k]='hsl('+(h%360)+',60%,60%)'; } return colors[k]; }
function draw(){
  const w = cv.clientWidth; cv.width = w; cv.height = Math.max(60, D.tracks.length*trackH + 20);
  cv.style.height = cv.height + 'px';
  ctx.clearRect(0,0,cv.width,cv.height);
  const sx = (w - labelW) / (t1 - t0);
  const X = t => labelW + (t - t0) * sx;
  ctx.font = '11px sans-serif';
  D.tracks.forEach((t,i)=>{ ctx.fillStyle = i%2 ? '#f6f6f6' : '#fff'; ctx.fillRect(0,i*trackH,w,trackH);
    ctx.fillStyle = t.device ? '#a40' : '#124'; ctx.fillText(t.name.slice(0,34), 4, i*trackH+13); });
  let drawn = 0;
  for (const s of D.slices){
    const x0 = X(s[1]), x1 = X(s[1]+s[2]);
    if (x1 < labelW || x0 > w) continue;
    const y = s[0]*trackH + 2 + (s[5]||0)*3;
    ctx.fillStyle = color(s[4]); ctx.fillRect(Math.max(labelW,x0), y, Math.max(1, x1-Math.max(labelW,x0)), trackH-4-(s[5]||0)*3);
    drawn++;
  }
  ctx.strokeStyle = 'rgba(200,0,0,0.6)';
  for (const f of D.flows){
    const xa = X(f[1]), xb = X(f[3]);
    if ((xa < labelW && xb < labelW) || (xa > w && xb > w)) continue;
    ctx.beginPath(); ctx.moveTo(xa, f[0]*trackH+trackH/2); ctx.lineTo(xb, f[2]*trackH+trackH/2); ctx.stroke();
  }
  ctx.fillStyle='#000'; ctx.fillText((t1-t0).toFixed(1)+' us shown', w-120, cv.height-4);
  cv.dataset.drawnSlices = drawn;
}
cv.addEventListener('wheel', ev=>{ ev.preventDefault();
  const r = cv.getBoundingClientRect(); const w = cv.clientWidth;
  const f = Math.max(0, (ev.clientX - r.left - labelW)/(w-labelW));
  const at = t0 + f*(t1-t0); const k = ev.deltaY < 0 ? 0.8 : 1.25;
  t0 = at - (at - t0)*k; t1 = at + (t1 - at)*k; draw(); }, {passive:false});
let drag = null;
cv.addEventListener('mousedown', ev=>{ drag = {x: ev.clientX, a: t0, b: t1}; });
window.addEventListener('mouseup', ()=>{ drag = null; });
cv.addEventListener('mousemove', ev=>{
  const r = cv.getBoundingClientRect(); const w = cv.clientWidth;
  if (drag){ const dt = (ev.clientX - drag.x)/(w-labelW)*(drag.b-drag.a); t0 = drag.a - dt; t1 = drag.b - dt; draw(); return; }
  const t = t0 + (ev.clientX - r.left - labelW)/(w-labelW)*(t1-t0); const tr = Math.floor((ev.clientY - r.top)/trackH);
  const hit = D.slices.find(s => s[0]===tr && s[1]<=t && t<=s[1]+s[2]);
  if (hit){ tip.style.display='block'; tip.style.left=(ev.clientX+12)+'px'; tip.style.top=(ev.clientY+12)+'px';
    tip.textContent = hit[3] + ' (' + hit[4] + ') ' + hit[2].toFixed(3) + ' us'; } else tip.style.display='none';
});
document.getElementById('reset').addEventListener('click', ()=>{ t0 = D.t_min; t1 = D.t_max > D.t_min ? D.t_max : D.t_min + 1; draw(); });
window.addEventListener('resize', draw);
draw();
// Per-op bar chart.
const ns = 'http://www.w3.org/2000/svg';
const svg = document.getElementById('chart');
const max = Math.max(1e-9, ...D.ops.map(o=>o[1]));
const barH = 18, W = 700;
svg.setAttribute('height', D.ops.length*barH + 10); svg.setAttribute('width', W);
D.ops.forEach((o,i)=>{
  const r = document.createElementNS(ns,'rect'); r.setAttribute('x',200); r.setAttribute('y',i*barH+2);
  r.setAttribute('width', Math.max(1,(W-320)*o[1]/max)); r.setAttribute('height', barH-4); r.setAttribute('fill', color(o[0]));
  r.setAttribute('class','bar'); svg.appendChild(r);
  const l = document.createElementNS(ns,'text'); l.setAttribute('x',4); l.setAttribute('y',i*barH+14); l.textContent=o[0]; svg.appendChild(l);
  const v = document.createElementNS(ns,'text'); v.setAttribute('x',204+(W-320)*o[1]/max); v.setAttribute('y',i*barH+14);
  v.textContent=(o[1]/1000).toFixed(3)+' ms'; svg.appendChild(v);
});
document.body.dataset.timelineTracks = D.tracks.length;
document.body.dataset.timelineSlices = cv.dataset.drawnSlices;
document.body.dataset.timelineFlows = D.flows.length;
document.body.dataset.chartBars = svg.querySelectorAll('rect.bar').length;
document.body.dataset.rendered = 'timeline chart';
})();
)JS";

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

struct TrackKey {
  int64_t pid, tid;
  bool operator<(const TrackKey& o) const { return pid != o.pid ? pid < o.pid : tid < o.tid; }
};

}  // namespace

void write_html(const Trace& t, const Report& r, std::string* out) {
  // Slices for the timeline: runs, other host slices, nodes, device work.
  struct S {
    const Slice* s;
    int depth;
  };
  std::vector<S> all;
  for (const Run& run : t.runs) all.push_back({&run.slice, 0});
  for (const Slice& s : t.others) all.push_back({&s, 0});
  for (const Slice& s : t.nodes) all.push_back({&s, 1});
  for (const Slice& s : t.devices) all.push_back({&s, 0});
  std::stable_sort(all.begin(), all.end(), [](const S& a, const S& b) { return a.s->ts < b.s->ts; });
  const size_t shown = std::min(all.size(), kMaxSlices);
  std::map<TrackKey, bool> device_track;
  for (size_t i = 0; i < shown; ++i) {
    const bool dev = t.strings.get(all[i].s->cat_name) == "Kernel" || t.strings.get(all[i].s->cat_name) == "Memcpy";
    auto [it, fresh] = device_track.try_emplace({all[i].s->pid, all[i].s->tid}, dev);
    if (!fresh) it->second = it->second || dev;
  }
  std::map<TrackKey, int> track_index;
  std::string data = "{\"tracks\":[";
  int n = 0;
  for (const auto& [k, dev] : device_track) {
    track_index[k] = n;
    auto tn = t.thread_names.find({k.pid, k.tid});
    auto pn = t.process_names.find(k.pid);
    std::string name = (pn != t.process_names.end() ? pn->second : "pid " + std::to_string(k.pid)) + " / " +
                       (tn != t.thread_names.end() ? tn->second : "tid " + std::to_string(k.tid));
    data += std::string(n ? "," : "") + "{\"name\":" + json_escape(name) + ",\"device\":" + (dev ? "true" : "false") + "}";
    ++n;
  }
  double t_min = shown ? all[0].s->ts : 0, t_max = t_min;
  data += "],\"slices\":[";
  for (size_t i = 0; i < shown; ++i) {
    const Slice& s = *all[i].s;
    t_max = std::max(t_max, s.ts + s.dur);
    const std::string kind = s.op != kNoString ? t.strings.at(s.op) : t.strings.get(s.cat_name);
    data += std::string(i ? "," : "") + "[" + std::to_string(track_index[{s.pid, s.tid}]) + "," + fixed(s.ts, 3) +
            "," + fixed(s.dur, 3) + "," + json_escape(t.strings.get(s.name)) + "," + json_escape(kind) + "," +
            std::to_string(all[i].depth) + "]";
  }
  // Flows: start and finish points with the same id, both on shown tracks.
  data += "],\"flows\":[";
  std::map<uint64_t, const FlowPoint*> starts;
  for (const FlowPoint& f : t.flows)
    if (f.start) starts[f.id] = &f;
  bool first = true;
  size_t flows = 0;
  for (const FlowPoint& f : t.flows) {
    if (f.start || flows >= kMaxSlices) continue;
    auto s = starts.find(f.id);
    if (s == starts.end()) continue;
    auto a = track_index.find({s->second->pid, s->second->tid});
    auto b = track_index.find({f.pid, f.tid});
    if (a == track_index.end() || b == track_index.end() || s->second->ts > t_max) continue;
    data += std::string(first ? "" : ",") + "[" + std::to_string(a->second) + "," + fixed(s->second->ts, 3) + "," +
            std::to_string(b->second) + "," + fixed(f.ts, 3) + "]";
    first = false;
    ++flows;
  }
  // Per-op chart: total time per op over the measured runs.
  data += "],\"ops\":[";
  ReportOptions by_op;
  Report ops = build_report(t, by_op);
  for (size_t i = 0; i < ops.rows.size(); ++i)
    data += std::string(i ? "," : "") + "[" + json_escape(ops.rows[i].key) + "," + fixed(ops.rows[i].total, 3) + "]";
  data += "],\"t_min\":" + fixed(t_min, 3) + ",\"t_max\":" + fixed(t_max, 3) + "}";

  *out += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>epprof report: " + html_escape(r.source) +
          "</title>\n<style>" + kStyle + "</style></head>\n<body>\n<h1>epprof report: " + html_escape(r.source) + "</h1>\n";
  *out += "<p>" + std::to_string(r.events) + " events; model_run: " + std::to_string(r.runs_measured) +
          " measured of " + std::to_string(r.runs_total) + ", mean " + fixed(r.run_mean, 3) + " us";
  if (r.device_events)
    *out += "; device events: " + std::to_string(r.device_events) + ", " +
            std::to_string(r.unattributed_device_events) + " not attributed to a node";
  *out += "</p>\n";
  *out += "<h2>Timeline</h2><p class=note>Wheel: zoom, drag: pan. Host threads and device tracks; red lines are "
          "flows from nodes to the device work they caused.";
  if (shown < all.size())
    *out += " Showing the first " + std::to_string(shown) + " of " + std::to_string(all.size()) + " slices.";
  *out += " <button id=reset>reset zoom</button></p>\n<canvas id=timeline></canvas><div id=tip></div>\n";
  *out += "<h2>Time per op (measured runs)</h2>\n<svg id=chart xmlns=\"http://www.w3.org/2000/svg\"></svg>\n";
  for (const Table& tab : report_tables(r)) html_table(tab, out);
  *out += "<script type=\"application/json\" id=\"epprof-data\">" + data + "</script>\n";
  *out += std::string("<script>") + kScript + "</script>\n</body></html>\n";
}

}  // namespace epprof::report
