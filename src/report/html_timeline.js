// The HTML report's script (embedded by html.cpp through embed_text.cmake).
// It reads the JSON that html.cpp embeds (#epprof-data) and draws:
//  - the timeline on a canvas: one lane per host thread, device track and
//    counter; slices nested by depth, one row per depth; labels on bars wide
//    enough; flows as arrows from node slices to device slices; counters as
//    small area charts. Sharp at any devicePixelRatio.
//  - the per-op bar chart as SVG.
// When done it marks body[data-rendered] and data-* counts, which the
// browser test (tests/report/html_check.sh) reads; window.epprofTimeline
// exposes the hit test and the geometry for the same test.
(function () {
'use strict';
const D = JSON.parse(document.getElementById('epprof-data').textContent);
const cv = document.getElementById('timeline');
const ctx = cv.getContext('2d');
const tip = document.getElementById('tip');
const details = document.getElementById('details');
const strs = D.strs;
const lanes = D.lanes;
const SRC = ['run', 'host', 'node', 'device'];
const ROW = 16, AXIS = 22, PAD = 2, COUNTER_H = 34, LINE = 13;
const FONT = '11px system-ui,sans-serif';

// Slices, columns as typed arrays. html.cpp sorts them by lane, depth, time,
// so each (lane, depth) row is one index range, its slices in time order and
// disjoint (so their ends are in order too).
const SL = D.slices;
const N = SL.ts.length;
const sLane = Int32Array.from(SL.lane), sDepth = Int32Array.from(SL.depth), sSrc = Uint8Array.from(SL.src);
const sTs = Float64Array.from(SL.ts), sDur = Float64Array.from(SL.dur);
// The colour follows the op, else the slice's name.
const sName = Int32Array.from(SL.name), sKind = Int32Array.from(SL.op);
for (let i = 0; i < N; i++) if (sKind[i] < 0) sKind[i] = sName[i];
const sEnd = new Float64Array(N);
for (let i = 0; i < N; i++) sEnd[i] = sTs[i] + sDur[i];
for (const l of lanes) { l.rowBegin = new Int32Array(l.rows).fill(-1); l.rowEnd = new Int32Array(l.rows).fill(-1); }
for (let i = 0; i < N; i++) {
  const l = lanes[sLane[i]], d = sDepth[i];
  if (l.rowBegin[d] < 0) l.rowBegin[d] = i;
  l.rowEnd[d] = i + 1;
}
for (const c of D.counters) {
  const l = lanes[c.lane];
  l.series = { ts: Float64Array.from(c.ts), v: Float64Array.from(c.v) };
  let m = 0;
  for (const v of l.series.v) m = Math.max(m, Math.abs(v));
  l.series.max = m;
}
// Flows, flat: lane, ts, depth of the start, then of the finish.
const nFlows = D.flows.length;
const F = new Float64Array(nFlows * 6);
D.flows.forEach((f, i) => F.set(f, i * 6));

// Colours: one per kind (the op, else the slice's name), from a hash of it.
const colorOf = [];
function color(k) {
  if (colorOf[k] === undefined) {
    let h = 0;
    for (const c of (k < 0 ? '' : strs[k])) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    colorOf[k] = 'hsl(' + (h % 360) + ',55%,' + (62 + (h >> 9) % 14) + '%)';
  }
  return colorOf[k];
}

function fmtUs(us) {
  const a = Math.abs(us);
  if (a >= 1e6) return (us / 1e6).toFixed(3) + ' s';
  if (a >= 1e3) return (us / 1e3).toFixed(3) + ' ms';
  if (a >= 1) return us.toFixed(a >= 100 ? 1 : 3) + ' us';
  return (us * 1e3).toFixed(0) + ' ns';
}

// Layout: label column wide enough for the longest lane name (at most 40%
// of the width; longer names wrap onto more lines, so none is cut).
let labelW = 0, contentH = 0, viewH = 0, scrollY = 0, cssW = 0;
function wrap(text, width) {
  if (ctx.measureText(text).width <= width) return [text];
  const parts = text.split(/(?<=[ /:,._-])/);
  const lines = [];
  let cur = '';
  for (let p of parts) {
    while (ctx.measureText(p).width > width && p.length > 1) {
      // A part too long for a line on its own is broken by characters.
      let n = p.length - 1;
      while (n > 1 && ctx.measureText(p.slice(0, n)).width > width) n--;
      if (cur) { lines.push(cur); cur = ''; }
      lines.push(p.slice(0, n));
      p = p.slice(n);
    }
    if (cur && ctx.measureText(cur + p).width > width) { lines.push(cur); cur = ''; }
    cur += p;
  }
  if (cur) lines.push(cur);
  return lines;
}
function layout() {
  cssW = cv.clientWidth;
  ctx.font = FONT;
  let widest = 0;
  for (const l of lanes) widest = Math.max(widest, ctx.measureText(l.name).width);
  labelW = Math.ceil(Math.min(widest + 14, Math.max(160, cssW * 0.4)));
  let y = 0;
  for (const l of lanes) {
    l.lines = wrap(l.name, labelW - 10);
    const body = l.kind === 'counter' ? COUNTER_H : l.rows * ROW + 2 * PAD;
    l.top = y;
    l.h = Math.max(body, l.lines.length * LINE + 6);
    y += l.h;
  }
  contentH = y;
  viewH = AXIS + Math.min(contentH, Math.max(240, Math.floor(window.innerHeight * 0.7)));
  scrollY = Math.max(0, Math.min(scrollY, contentH - (viewH - AXIS)));
}

// The view: [v0, v1] in µs from the trace's start (D.t_base).
const runs = D.runs, whole = D.whole;
function runsView() {
  const span = Math.max(runs[1] - runs[0], 1e-3), pad = span * 0.02;
  return [runs[0] - pad, runs[1] + pad];
}
let [v0, v1] = runsView();
const plotW = () => Math.max(1, cssW - labelW);
const X = t => labelW + (t - v0) * plotW() / (v1 - v0);
const T = x => v0 + (x - labelW) * (v1 - v0) / plotW();
const rowY = (lane, depth) => AXIS + lanes[lane].top - scrollY + PAD + depth * ROW;

// First index in [b, e) of a row whose slice ends at or after t.
function firstEnding(b, e, t) {
  while (b < e) { const m = (b + e) >> 1; if (sEnd[m] < t) b = m + 1; else e = m; }
  return b;
}

const nameW = new Float64Array(strs.length).fill(-1);
function label(i, x, y, w) {
  const k = sName[i];
  if (k < 0) return;
  const s = strs[k];
  if (nameW[k] < 0) nameW[k] = ctx.measureText(s).width;
  let text = s;
  if (nameW[k] > w - 6) {
    // Elide: as many characters as fit, then an ellipsis.
    let n = Math.floor((w - 6) / (nameW[k] / s.length)) - 1;
    while (n > 0 && ctx.measureText(s.slice(0, n) + '\u2026').width > w - 6) n--;
    if (n < 2) return;
    text = s.slice(0, n) + '\u2026';
  }
  ctx.fillText(text, x + 3, y + ROW - 5);
}

let hover = -1, pinned = -1, drawnSlices = 0, drawnFlows = 0;
function drawAxis(w) {
  ctx.fillStyle = '#f0f0f0';
  ctx.fillRect(0, 0, w, AXIS);
  const span = v1 - v0, target = span / Math.max(1, plotW() / 110);
  const p = Math.pow(10, Math.floor(Math.log10(target)));
  const step = [1, 2, 5, 10].map(m => m * p).find(s => s >= target) || 10 * p;
  ctx.fillStyle = '#333';
  ctx.strokeStyle = '#ddd';
  ctx.beginPath();
  for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
    const x = Math.round(X(t)) + 0.5;
    ctx.moveTo(x, AXIS - 6); ctx.lineTo(x, viewH);
    ctx.fillText(fmtUs(t), x + 3, 12);
  }
  ctx.stroke();
  ctx.fillText(fmtUs(span) + ' shown', 4, 12);
}
function drawRow(lane, d, w) {
  const l = lanes[lane], b = l.rowBegin[d], e = l.rowEnd[d];
  if (b < 0) return;
  const y = rowY(lane, d);
  if (y + ROW < AXIS || y > viewH) return;
  const k = plotW() / (v1 - v0);
  let i = firstEnding(b, e, v0);
  while (i < e && sTs[i] <= v1) {
    let x0 = labelW + (sTs[i] - v0) * k, x1 = labelW + (sEnd[i] - v0) * k;
    if (x1 - x0 < 1) {
      // Slices under a pixel: one block for the run of them that touch.
      const first = i;
      let end = Math.max(x1, x0 + 1);
      i++;
      while (i < e && sTs[i] <= v1) {
        const a = labelW + (sTs[i] - v0) * k, z = labelW + (sEnd[i] - v0) * k;
        if (z - a >= 1 || a > end + 0.5) break;
        end = Math.max(end, z, a + 1);
        i++;
      }
      ctx.fillStyle = color(sKind[first]);
      ctx.fillRect(Math.max(labelW, x0), y, Math.max(1, end - Math.max(labelW, x0)), ROW - 1);
      drawnSlices += i - first;
      continue;
    }
    x0 = Math.max(labelW - 1, x0);
    x1 = Math.min(w + 1, x1);
    ctx.fillStyle = color(sKind[i]);
    ctx.fillRect(x0, y, x1 - x0, ROW - 1);
    if (x1 - x0 > 14) { ctx.fillStyle = '#111'; label(i, x0, y, x1 - x0); }
    drawnSlices++;
    i++;
  }
}
function drawCounter(lane, w) {
  const l = lanes[lane], s = l.series;
  if (!s || !s.ts.length) return;
  const top = AXIS + l.top - scrollY + 3, h = l.h - 6;
  if (top + h < AXIS || top > viewH) return;
  const base = top + h, scale = s.max > 0 ? (h - 2) / s.max : 0;
  // A sample holds until the next one (a step line); samples that fall in
  // one pixel column are a vertical stroke there.
  let i = 0;
  { let b = 0, e = s.ts.length; while (b < e) { const m = (b + e) >> 1; if (s.ts[m] < v0) b = m + 1; else e = m; } i = Math.max(0, b - 1); }
  ctx.beginPath();
  ctx.moveTo(Math.max(labelW, X(s.ts[i])), base);
  let px = -1, pv = 0;
  for (; i < s.ts.length; i++) {
    const x = Math.max(labelW, Math.min(w, Math.floor(X(s.ts[i])))), v = s.v[i];
    if (x === px) { ctx.lineTo(x, base - v * scale); pv = v; continue; }
    if (px >= 0) ctx.lineTo(x, base - pv * scale);
    ctx.lineTo(x, base - v * scale);
    px = x; pv = v;
    if (s.ts[i] > v1) break;
  }
  if (px >= 0) { const xe = i >= s.ts.length ? Math.min(w, X(whole[1])) : px; ctx.lineTo(Math.max(px, xe), base - pv * scale); ctx.lineTo(Math.max(px, xe), base); }
  ctx.closePath();
  ctx.fillStyle = 'rgba(40,110,190,0.35)';
  ctx.strokeStyle = 'rgba(40,110,190,0.9)';
  ctx.fill();
  ctx.stroke();
  ctx.fillStyle = '#555';
  ctx.fillText('max ' + s.max.toPrecision(4), w - 90, top + 10);
}
function drawFlows(w) {
  // One path for the curves and one for the arrowheads: a stroke per flow
  // is what made large traces slow. Flows that land on the same pixels as
  // one already drawn are drawn once.
  const k = plotW() / (v1 - v0), seen = new Set(), heads = [];
  ctx.beginPath();
  for (let f = 0; f < F.length; f += 6) {
    const xa = labelW + (F[f + 1] - v0) * k, xb = labelW + (F[f + 4] - v0) * k;
    if ((xa < labelW && xb < labelW) || (xa > w && xb > w)) continue;
    // From the middle of the node's row to the near edge of the device
    // slice's row, with an arrowhead there.
    const down = F[f + 3] > F[f] || (F[f + 3] === F[f] && F[f + 5] >= F[f + 2]);
    const ya = rowY(F[f], F[f + 2]) + ROW / 2, yb = rowY(F[f + 3], F[f + 5]) + (down ? 0 : ROW - 1), dir = down ? 1 : -1;
    if ((ya < AXIS && yb < AXIS) || (ya > viewH && yb > viewH)) continue;
    const key = Math.round(xa) + ',' + Math.round(ya) + ',' + Math.round(xb) + ',' + Math.round(yb);
    drawnFlows++;
    if (seen.has(key)) continue;
    seen.add(key);
    const my = (ya + yb) / 2;
    ctx.moveTo(xa, ya);
    ctx.bezierCurveTo(xa, my, xb, my, xb, yb - 4 * dir);
    heads.push(xb, yb, dir);
  }
  ctx.strokeStyle = 'rgba(200,0,0,0.7)';
  ctx.lineWidth = 1;
  ctx.stroke();
  ctx.beginPath();
  for (let i = 0; i < heads.length; i += 3) {
    const x = heads[i], y = heads[i + 1], dir = heads[i + 2];
    ctx.moveTo(x, y); ctx.lineTo(x - 3, y - 5 * dir); ctx.lineTo(x + 3, y - 5 * dir); ctx.closePath();
  }
  ctx.fillStyle = 'rgba(200,0,0,0.8)';
  ctx.fill();
}
function outline(i, width) {
  if (i < 0) return;
  const x0 = Math.max(labelW, X(sTs[i])), x1 = Math.min(cssW, X(sEnd[i]));
  if (x1 < labelW || x0 > cssW) return;
  ctx.strokeStyle = '#000';
  ctx.lineWidth = width;
  ctx.strokeRect(x0 + 0.5, rowY(sLane[i], sDepth[i]) + 0.5, Math.max(1, x1 - x0) - 1, ROW - 2);
  ctx.lineWidth = 1;
}

function draw() {
  const dpr = window.devicePixelRatio || 1;
  if (cv.clientWidth !== cssW) layout();
  const w = cssW, h = viewH;
  cv.style.height = h + 'px';
  // Backing store in device pixels, drawing in CSS pixels.
  const bw = Math.round(w * dpr), bh = Math.round(h * dpr);
  if (cv.width !== bw) cv.width = bw;
  if (cv.height !== bh) cv.height = bh;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.font = FONT;
  ctx.textBaseline = 'alphabetic';
  ctx.clearRect(0, 0, w, h);
  drawAxis(w);
  drawnSlices = 0; drawnFlows = 0;
  ctx.save();
  ctx.beginPath(); ctx.rect(0, AXIS, w, h - AXIS); ctx.clip();
  lanes.forEach((l, i) => {
    const y = AXIS + l.top - scrollY;
    if (y + l.h < AXIS || y > h) return;
    ctx.fillStyle = i % 2 ? '#f5f5f5' : '#fff';
    ctx.fillRect(0, y, w, l.h);
    ctx.fillStyle = l.kind === 'device' ? '#a40' : l.kind === 'counter' ? '#264' : '#124';
    l.lines.forEach((s, n) => ctx.fillText(s, 4, y + 12 + n * LINE));
    ctx.fillStyle = '#ccc';
    ctx.fillRect(0, y + l.h - 1, w, 1);
  });
  ctx.fillStyle = '#bbb';
  ctx.fillRect(labelW - 1, AXIS, 1, h - AXIS);
  ctx.beginPath(); ctx.rect(labelW, AXIS, w - labelW, h - AXIS); ctx.clip();
  lanes.forEach((l, i) => {
    if (l.kind === 'counter') drawCounter(i, w);
    else for (let d = 0; d < l.rows; d++) drawRow(i, d, w);
  });
  drawFlows(w);
  outline(hover, 1);
  outline(pinned, 2);
  ctx.restore();
  if (contentH > h - AXIS) {
    // Where the lanes shown sit among all of them.
    const bar = (h - AXIS) * (h - AXIS) / contentH, at = AXIS + scrollY * (h - AXIS) / contentH;
    ctx.fillStyle = 'rgba(0,0,0,0.25)';
    ctx.fillRect(w - 5, at, 4, bar);
  }
  cv.dataset.drawnSlices = drawnSlices;
  cv.dataset.drawnFlows = drawnFlows;
  document.body.dataset.viewT0 = v0;
  document.body.dataset.viewT1 = v1;
}

// Hit test: the lane under the pointer, then the innermost slice that holds
// the pointer's time among the rows at or above the pointer's row (a slice
// under a few pixels wide counts within 2 px).
function hitAt(clientX, clientY) {
  const r = cv.getBoundingClientRect();
  const x = clientX - r.left - cv.clientLeft, y = clientY - r.top - cv.clientTop;
  if (x < labelW || x > cssW || y < AXIS || y > viewH) return null;
  const cy = y - AXIS + scrollY;
  const lane = lanes.findIndex(l => cy >= l.top && cy < l.top + l.h);
  if (lane < 0) return null;
  const l = lanes[lane], t = T(x);
  if (l.kind === 'counter') {
    const s = l.series;
    if (!s) return null;
    let b = 0, e = s.ts.length;
    while (b < e) { const m = (b + e) >> 1; if (s.ts[m] <= t) b = m + 1; else e = m; }
    return b > 0 ? { lane: lane, ts: s.ts[b - 1], v: s.v[b - 1] } : null;
  }
  const tol = 2 * (v1 - v0) / plotW();
  const row = Math.max(0, Math.min(l.rows - 1, Math.floor((cy - l.top - PAD) / ROW)));
  for (let d = row; d >= 0; d--) {
    if (l.rowBegin[d] < 0) continue;
    const e = l.rowEnd[d];
    let best = -1, bestDist = Infinity;
    for (let i = firstEnding(l.rowBegin[d], e, t - tol); i < e && sTs[i] <= t + tol; i++) {
      const dist = t < sTs[i] ? sTs[i] - t : t > sEnd[i] ? t - sEnd[i] : 0;
      if (dist < bestDist) { best = i; bestDist = dist; }
      if (dist === 0) break;
    }
    if (best >= 0) return { slice: best };
  }
  return null;
}

function str(k) { return k < 0 ? '' : strs[k]; }
function describe(i) {
  const out = [str(sName[i]), 'duration ' + fmtUs(sDur[i]) + ', start ' + fmtUs(sTs[i]),
    SRC[sSrc[i]] + ' slice, depth ' + sDepth[i] + ', lane ' + lanes[sLane[i]].name];
  const args = [['cat', str(SL.cat[i])], ['op', str(SL.op[i])], ['provider', str(SL.prov[i])],
    ['node_index', str(SL.nidx[i])], ['correlation_id', SL.corr[i] ? String(SL.corr[i]) : '']];
  const a = args.filter(p => p[1] !== '').map(p => p[0] + '=' + p[1]);
  if (a.length) out.push(a.join('  '));
  return out.join('\n');
}
function describeHit(h) {
  if (!h) return '';
  if (h.slice !== undefined) return describe(h.slice);
  return lanes[h.lane].name + '\n' + h.v + ' at ' + fmtUs(h.ts);
}

function zoomTo(a, b) { v0 = a; v1 = Math.max(b, a + 1e-3); draw(); }
cv.addEventListener('wheel', ev => {
  ev.preventDefault();
  if (ev.shiftKey) {
    scrollY = Math.max(0, Math.min(scrollY + ev.deltaY, contentH - (viewH - AXIS)));
    draw();
    return;
  }
  const r = cv.getBoundingClientRect();
  const x = Math.max(labelW, ev.clientX - r.left), at = T(x);
  if (Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
    const dt = ev.deltaX / plotW() * (v1 - v0);
    zoomTo(v0 + dt, v1 + dt);
    return;
  }
  const k = ev.deltaY < 0 ? 0.8 : 1.25;
  zoomTo(at - (at - v0) * k, at + (v1 - at) * k);
}, { passive: false });
let drag = null;
cv.addEventListener('mousedown', ev => { drag = { x: ev.clientX, y: ev.clientY, a: v0, b: v1, s: scrollY, moved: false }; });
window.addEventListener('mouseup', ev => {
  if (!drag) return;
  const click = !drag.moved;
  drag = null;
  cv.style.cursor = '';
  if (click && ev.target === cv) {
    // Click pins the slice's details; a click on nothing unpins.
    const h = hitAt(ev.clientX, ev.clientY);
    pinned = h && h.slice !== undefined ? h.slice : -1;
    details.className = h ? 'pinned' : 'note';
    details.textContent = h ? describeHit(h) : 'Click a slice to pin its details here.';
    cv.dataset.pinned = pinned >= 0 ? str(sName[pinned]) : '';
    draw();
  }
});
window.addEventListener('mousemove', ev => {
  if (!drag) return;
  const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
  if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 3) return;
  drag.moved = true;
  cv.style.cursor = 'grabbing';
  const dt = dx / plotW() * (drag.b - drag.a);
  v0 = drag.a - dt; v1 = drag.b - dt;
  scrollY = Math.max(0, Math.min(drag.s - dy, contentH - (viewH - AXIS)));
  draw();
});
cv.addEventListener('mousemove', ev => {
  if (drag && drag.moved) return;
  const h = hitAt(ev.clientX, ev.clientY);
  const i = h && h.slice !== undefined ? h.slice : -1;
  cv.dataset.hover = i >= 0 ? str(sName[i]) : '';
  cv.dataset.hoverDepth = i >= 0 ? sDepth[i] : '';
  cv.dataset.hoverSrc = i >= 0 ? SRC[sSrc[i]] : '';
  if (h) {
    tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 320) + 'px';
    tip.style.top = (ev.clientY + 14) + 'px';
    tip.textContent = describeHit(h);
  } else {
    tip.style.display = 'none';
  }
  if (i !== hover) { hover = i; draw(); }
});
cv.addEventListener('mouseleave', () => { tip.style.display = 'none'; if (hover >= 0) { hover = -1; draw(); } });
document.getElementById('reset').addEventListener('click', () => { const v = runsView(); zoomTo(v[0], v[1]); });
document.getElementById('whole').addEventListener('click', () => zoomTo(whole[0], whole[1] > whole[0] ? whole[1] : whole[0] + 1));
window.addEventListener('resize', () => { layout(); draw(); });
layout();
draw();

// For the browser test: the hit test, and where a slice is drawn (client
// coordinates; null when it is off screen).
window.epprofTimeline = {
  count: N,
  hitAt: (x, y) => { const h = hitAt(x, y); return h && h.slice !== undefined ? h.slice : -1; },
  slice: i => ({ name: str(sName[i]), src: SRC[sSrc[i]], lane: sLane[i], depth: sDepth[i], ts: sTs[i], dur: sDur[i] }),
  rect: i => {
    const r = cv.getBoundingClientRect();
    const x0 = Math.max(labelW, X(sTs[i])), x1 = Math.min(cssW, X(sEnd[i])), y = rowY(sLane[i], sDepth[i]);
    if (x1 <= x0 || y < AXIS || y + ROW > viewH) return null;
    return { x: r.left + cv.clientLeft + x0, y: r.top + cv.clientTop + y, w: x1 - x0, h: ROW - 1 };
  },
  view: () => [v0, v1],
  runs: runs,
  whole: whole,
};

// Per-op bar chart.
const ns = 'http://www.w3.org/2000/svg';
const svg = document.getElementById('chart');
const max = Math.max(1e-9, ...D.ops.map(o => o[1]));
const barH = 18, W = 700;
const opColor = {};
svg.setAttribute('height', D.ops.length * barH + 10); svg.setAttribute('width', W);
D.ops.forEach((o, i) => {
  if (!(o[0] in opColor)) { const k = strs.indexOf(o[0]); opColor[o[0]] = k >= 0 ? color(k) : '#8ab'; }
  const r = document.createElementNS(ns, 'rect'); r.setAttribute('x', 200); r.setAttribute('y', i * barH + 2);
  r.setAttribute('width', Math.max(1, (W - 320) * o[1] / max)); r.setAttribute('height', barH - 4); r.setAttribute('fill', opColor[o[0]]);
  r.setAttribute('class', 'bar'); svg.appendChild(r);
  const l = document.createElementNS(ns, 'text'); l.setAttribute('x', 4); l.setAttribute('y', i * barH + 14); l.textContent = o[0]; svg.appendChild(l);
  const v = document.createElementNS(ns, 'text'); v.setAttribute('x', 204 + (W - 320) * o[1] / max); v.setAttribute('y', i * barH + 14);
  v.textContent = (o[1] / 1000).toFixed(3) + ' ms'; svg.appendChild(v);
});

const B = document.body.dataset;
B.timelineTracks = lanes.length;
B.timelineLanesHost = lanes.filter(l => l.kind === 'host').length;
B.timelineLanesDevice = lanes.filter(l => l.kind === 'device').length;
B.timelineLanesCounter = lanes.filter(l => l.kind === 'counter').length;
// Nesting levels: rows of the deepest lane (model_run > node is 2).
B.timelineLevels = lanes.reduce((m, l) => l.kind === 'counter' ? m : Math.max(m, l.rows), 0);
B.timelineSlices = cv.dataset.drawnSlices;
B.timelineSlicesEmbedded = N;
B.timelineSlicesTotal = D.slices_total;
B.timelineFlows = nFlows;
B.timelineDrawnFlows = cv.dataset.drawnFlows;
B.runsT0 = runs[0];
B.runsT1 = runs[1];
B.wholeT1 = whole[1];
B.chartBars = svg.querySelectorAll('rect.bar').length;
B.rendered = 'timeline chart';
// Navigation start to here (the page's own load time, for bench/html_open_bench.sh).
B.renderMs = performance.now().toFixed(1);
})();
