#!/usr/bin/env bash
# Imports epprof's default trace (Chrome trace JSON from `epprof run`,
# integer µs) into speedscope (the npm package, pinned and cached by
# scripts/fetch_speedscope.sh) in headless Chromium, and checks what
# speedscope renders against the trace itself:
#  - its profile list has one profile per thread of the trace, named with
#    the trace's process and thread names;
#  - the sandwich view of the profile it opens (the host thread) lists every
#    node event name of that thread;
#  - its total time for model_run equals the trace's (the µs are read as µs).
# The profile goes in the way speedscope's own command-line tool hands one
# over: a script calling speedscope.loadFileFromBase64, named by
# #localProfilePath=.
#   speedscope_check.sh EPPROF_CLI EXAMPLE_PLUGIN
# Skips (exit 77) when Chromium, Node.js or the speedscope cache is missing
# ($EPPROF_SPEEDSCOPE_CACHE, else ~/.cache/epprof/speedscope; fetching it
# needs npm and the registry).
set -u
cli=$1 plugin=$2
cache=${EPPROF_SPEEDSCOPE_CACHE:-$HOME/.cache/epprof/speedscope}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[[ -n $browser ]] || skip "chromium is not installed (scripts/setup.sh installs it)"
command -v node >/dev/null 2>&1 || skip "node is not installed (scripts/setup.sh installs it)"
[[ -f $cache/release/index.html ]] ||
  skip "speedscope is not in $cache (run scripts/fetch_speedscope.sh; it needs npm and the npm registry)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$cli" run --runs 3 --no-table --plugin "$plugin" --output "$dir/t.json" >"$dir/run.log" 2>&1 ||
  { cat "$dir/run.log"; fail "epprof run"; }
node -e '
  const fs = require("fs");
  const b64 = fs.readFileSync(process.argv[1]).toString("base64");
  fs.writeFileSync(process.argv[2], "speedscope.loadFileFromBase64(" + JSON.stringify("t.json") + ", " + JSON.stringify(b64) + ")\n");
' "$dir/t.json" "$dir/profile.js" || fail "writing the profile script"

# A tall window, so that the sandwich table (virtualised) renders every row.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$dir/profile" \
  --enable-logging=stderr --v=0 --virtual-time-budget=10000 --window-size=1400,4000 \
  --dump-dom "file://$cache/release/index.html#localProfilePath=$dir/profile.js&view=sandwich" \
  >"$dir/dom.html" 2>"$dir/chromium.log"
rc=$?
[[ $rc -eq 0 ]] || { tail -20 "$dir/chromium.log"; fail "chromium exited with $rc"; }
if grep -E 'CONSOLE' "$dir/chromium.log" | grep -qiE 'error|uncaught'; then
  grep -E 'CONSOLE' "$dir/chromium.log"
  fail "console errors in speedscope"
fi

node - "$dir/t.json" "$dir/dom.html" <<'JS'
const fs = require('fs');
const fail = m => { console.log('FAIL: ' + m); process.exit(1); };
const ev = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const events = Array.isArray(ev) ? ev : ev.traceEvents;
const dom = fs.readFileSync(process.argv[3], 'utf8');
const unescape = s => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&');
const text = unescape(dom.replace(/<[^>]*>/g, '\n'));

// The trace: threads with complete events, their names, node names, model_run time.
const pname = {}, tname = {}, threads = new Map();
for (const e of events) {
  if (e.ph === 'M' && e.name === 'process_name') pname[e.pid] = e.args.name;
  if (e.ph === 'M' && e.name === 'thread_name') tname[e.pid + '/' + e.tid] = e.args.name;
  if (e.ph !== 'X') continue;
  const k = e.pid + '/' + e.tid;
  if (!threads.has(k)) threads.set(k, { nodes: new Set(), runUs: 0 });
  const t = threads.get(k);
  if (e.cat === 'Node') t.nodes.add(e.name);
  if (e.name === 'model_run') t.runUs += e.dur;
}
if (!Number.isInteger(events.find(e => e.ph === 'X').dur)) fail('the default trace is not in integer microseconds');

// 1. The profile list: "(1/N)", and a profile named after each thread.
const count = /\(1\/(\d+)\)/.exec(text);
if (!count) fail('speedscope shows no profile (did the import fail?)');
if (Number(count[1]) !== threads.size) fail(`speedscope has ${count[1]} profiles for ${threads.size} threads`);
for (const k of threads.keys()) {
  const [pid, tid] = k.split('/');
  for (const want of [`(pid ${pid})`, `(tid ${tid})`, pname[pid], tname[k]])
    if (want && !text.includes(want)) fail(`speedscope's profile list does not name thread ${k}: no "${want}"`);
}

// 2. The profile shown: the first "(pid P), ... (tid T)" in the page.
const shown = /\(pid (\d+)\)[^\n]*\(tid (\d+)\)/.exec(text);
if (!shown) fail('no profile title in the page');
const t = threads.get(shown[1] + '/' + shown[2]);
if (!t || !t.nodes.size) fail(`speedscope opened thread ${shown[1]}/${shown[2]}, which has no node events`);
// Sandwich rows: total, self, symbol (speedscope appends the args as JSON).
const rows = [];
const re = /<tr[^>]*><td[^>]*>([^<]*)<div[\s\S]*?<\/td><td[^>]*>([^<]*)<div[\s\S]*?<\/td><td[^>]*>(?:<span[^>]*><\/span>)?([^<]*)<\/td><\/tr>/g;
for (let m; (m = re.exec(dom));) rows.push({ total: m[1], symbol: unescape(m[3]) });
if (!rows.length) fail('speedscope rendered no sandwich table');
const names = new Set(rows.map(r => r.symbol.replace(/ \{.*$/, '')));
const missing = [...t.nodes].filter(n => !names.has(n));
if (missing.length) fail(`${missing.length} of ${t.nodes.size} node names are not in speedscope's table, e.g. ${missing.slice(0, 3)}`);

// 3. model_run's total: the sum of its rows' totals ("12.34ms (5%)").
const unit = { ns: 1e-3, 'µs': 1, us: 1, ms: 1e3, s: 1e6 };
let runUs = 0, runRows = 0;
for (const r of rows) {
  if (r.symbol.replace(/ \{.*$/, '') !== 'model_run') continue;
  const m = /^([\d.]+)\s*(ns|µs|us|ms|s)\b/.exec(r.total);
  if (!m) fail(`cannot read the total "${r.total}"`);
  runUs += Number(m[1]) * unit[m[2]];
  runRows++;
}
// Totals are shown with 2 decimals: allow half a unit of the last digit per row.
const tolerance = runRows * 0.005 * 1e3 + 1e-6 * t.runUs;
if (!runRows || Math.abs(runUs - t.runUs) > tolerance)
  fail(`speedscope's model_run total is ${runUs} us over ${runRows} rows, the trace's ${t.runUs} us`);
console.log(`PASS: ${threads.size} profiles named after the trace's threads; all ${t.nodes.size} node names of ` +
  `thread ${shown[1]}/${shown[2]} in the sandwich view (${rows.length} rows); model_run ${runUs.toFixed(0)} us ` +
  `(trace ${t.runUs} us)`);
JS
