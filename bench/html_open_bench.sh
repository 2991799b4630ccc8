#!/usr/bin/env bash
# How long the HTML report of a large trace takes to open in headless
# Chromium (issue 18: a 100k-event trace in under 2 s). A benchmark, not a
# test: a MISS does not change the exit status; a page that does not render
# does (exit 1).
#
#   bench/html_open_bench.sh [EPPROF_CLI] [EVENTS] [REPEATS]
#     EPPROF_CLI defaults to build/bin/epprof, EVENTS to 100000, REPEATS to 5.
#
# The trace is synthetic, in the shape `epprof run` writes with a device
# plugin: model loading and session initialization, then runs of
# model_run > SequentialExecutor::Execute > 200 nodes; each node launches a
# kernel on one of 2 device queues (correlation id, flow start and finish)
# and every 4th node writes a counter sample. EVENTS counts every trace
# event (complete, flow and counter events, not metadata).
#
# The time is the page's own: performance.now() when its script has drawn
# the timeline and the chart (body[data-render-ms]), i.e. from navigation
# start through parsing the page and its embedded data to the first drawn
# frame. Chromium's start-up is not in it; its wall time is shown beside.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cli=${1:-$root/build/bin/epprof}
events=${2:-100000}
repeats=${3:-5}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[[ -n $browser ]] || { echo "html_open_bench: chromium not found (scripts/setup.sh installs it)" >&2; exit 1; }
command -v node >/dev/null || { echo "html_open_bench: node not found (scripts/setup.sh installs it)" >&2; exit 1; }
[[ -x $cli ]] || { echo "html_open_bench: $cli is not built (cmake --build build --target epprof_cli)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

node - "$dir/trace.json" "$events" <<'JS'
const fs = require('fs');
const [out, want] = [process.argv[2], Number(process.argv[3])];
const pid = 4242, tid = 4242, queues = [1073741824, 1073741825], ops = ['Conv', 'Relu', 'Add', 'MatMul', 'Softmax'];
const lines = [];
let n = 0, corr = 1, flow = 1, ts = 1000, seed = 12345;
const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296;
const ev = e => { lines.push(JSON.stringify(e)); n++; };
const meta = (name, t, value) => lines.push(JSON.stringify({ ph: 'M', cat: '__metadata', name, pid, tid: t, ts: 0, args: { name: value } }));
meta('process_name', 0, 'html_open_bench host');
meta('thread_name', tid, 'thread ' + tid);
queues.forEach((q, i) => meta('thread_name', q, 'device queue ' + i));
lines.push(JSON.stringify({ ph: 'M', cat: 'Metadata', name: 'epprof_metadata', pid, tid: 0, ts: 0, args: { warmup: '1' } }));
ev({ ph: 'X', cat: 'Session', name: 'model_loading_uri', pid, tid, ts, dur: 400000, args: { correlation_id: String(corr++) } });
ts += 400010;
ev({ ph: 'X', cat: 'Session', name: 'session_initialization', pid, tid, ts, dur: 60000, args: { correlation_id: String(corr++) } });
ts += 60010;
const qFree = [0, 0];
while (n < want) {
  const run = ts, nodes = [];
  let t = run + 2;
  for (let k = 0; k < 200; k++) { const d = 5 + Math.floor(rnd() * 60); nodes.push([t, d]); t += d + 1; }
  ev({ ph: 'X', cat: 'Session', name: 'model_run', pid, tid, ts: run, dur: t - run + 2, args: { correlation_id: String(corr++) } });
  ev({ ph: 'X', cat: 'Session', name: 'SequentialExecutor::Execute', pid, tid, ts: run + 1, dur: t - run, args: {} });
  for (let k = 0; k < nodes.length && n < want; k++) {
    const [s, d] = nodes[k], op = ops[k % ops.length], c = corr++, q = k % 2;
    ev({ ph: 'X', cat: 'Node', name: 'node' + k + '_' + op + '_kernel_time', pid, tid, ts: s, dur: d,
         args: { op_name: op, provider: 'ExampleExecutionProvider', node_index: String(k), correlation_id: String(c) } });
    const ks = Math.max(s + 1, qFree[q]), kd = 1 + Math.floor(d * 0.8);
    qFree[q] = ks + kd;
    ev({ ph: 'X', cat: 'Kernel', name: op + '_kernel', pid, tid: queues[q], ts: ks, dur: kd,
         args: { correlation_id: String(c), parent_name: 'node' + k + '_' + op, op_name: op } });
    ev({ ph: 's', cat: 'Flow', name: 'node_to_device', pid, tid, ts: s, id: flow, args: {} });
    ev({ ph: 'f', bp: 'e', cat: 'Flow', name: 'node_to_device', pid, tid: queues[q], ts: ks, id: flow++, args: {} });
    if (k % 4 === 0) ev({ ph: 'C', cat: 'Counter', name: 'flops', pid, tid, ts: s + d, args: { flops: Math.floor(rnd() * 1e7) } });
  }
  ts = Math.max(t, qFree[0], qFree[1]) + 20;
}
fs.writeFileSync(out, '[\n' + lines.join(',\n') + '\n]\n');
console.log(`html_open_bench: ${n} events (${lines.length - n} metadata) in ${out}`);
JS

"$cli" report "$dir/trace.json" --format html -o "$dir/page.html" >/dev/null
page_mb=$(awk -v b="$(stat -c %s "$dir/page.html")" 'BEGIN { printf "%.1f", b / 1048576 }')
echo "html_open_bench: page $page_mb MiB; $(sed -n 's/.*<p id=thinning[^>]*>\([^<]*\).*/\1/p' "$dir/page.html")"

times=()
for ((i = 1; i <= repeats; i++)); do
  start=$(date +%s%N)
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$dir/profile" \
    --window-size=1400,900 --dump-dom "file://$dir/page.html" >"$dir/dom.html" 2>/dev/null
  wall=$((($(date +%s%N) - start) / 1000000))
  body=$(grep -o '<body[^>]*>' "$dir/dom.html" | head -1)
  [[ $body == *'data-rendered="timeline chart"'* ]] || { echo "html_open_bench: the page did not render" >&2; exit 1; }
  ms=$(sed -n 's/.* data-render-ms="\([0-9.]*\)".*/\1/p' <<<"$body")
  slices=$(sed -n 's/.* data-timeline-slices="\([0-9]*\)".*/\1/p' <<<"$body")
  echo "  run $i: rendered in $ms ms (chromium wall time $wall ms, $slices slices in the opening view)"
  times+=("$ms")
done
median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
verdict=$(awk -v m="$median" 'BEGIN { print (m < 2000 ? "PASS" : "MISS") }')
echo "html_open_bench: $events-event trace opens in $median ms (median of $repeats; target < 2000 ms): $verdict"
