#!/usr/bin/env bash
# Opens the HTML report of a real trace in headless Chromium (device scale
# factor 2) and checks that the page ran without console errors and drew its
# timeline and chart, then what the timeline shows:
#  - lanes: one per host thread and one per device track of the trace, and a
#    counter lane (the run counts flops);
#  - nesting: at least 2 levels (model_run holds its nodes);
#  - flows drawn from nodes to device slices;
#  - innermost hover: a mousemove on the middle of a node slice names that
#    node, not the model_run around it, and a click pins it;
#  - default zoom: the view opens on the measured runs, the whole trace is a
#    button away;
#  - sharp canvas: its backing store is 2x its CSS size.
# A probe script appended to a copy of the page does the pointer work after
# the page's own script and writes what it saw into body[data-probe-*].
#   html_check.sh EPPROF_CLI EXAMPLE_PLUGIN
# Chromium and Node.js are required (scripts/setup.sh installs them). Only
# when EPPROF_CHROMIUM_ABSENT=1 says Chromium is intentionally missing does
# the test skip (exit 77); otherwise its absence fails the test.
set -u
cli=$1 plugin=$2
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $browser ]]; then
  if [[ ${EPPROF_CHROMIUM_ABSENT:-0} == 1 ]]; then
    echo "SKIP: chromium not installed and EPPROF_CHROMIUM_ABSENT=1"
    exit 77
  fi
  echo "FAIL: chromium is not installed (run scripts/setup.sh, or set EPPROF_CHROMIUM_ABSENT=1 to skip on purpose)"
  exit 1
fi
command -v node >/dev/null 2>&1 || { echo "FAIL: node is not installed (run scripts/setup.sh)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$cli" run --runs 3 --no-table --counters flops --plugin "$plugin" --output "$dir/t.json" >"$dir/run.log" 2>&1 ||
  { cat "$dir/run.log"; fail "epprof run"; }
"$cli" report "$dir/t.json" --format html -o "$dir/report.html" || fail "epprof report --format html"
grep -qiE '<(script|link|img)[^>]+(src|href)=' "$dir/report.html" && fail "the page loads an external asset"
grep -qE 'https?://' <(grep -v 'http://www.w3.org/2000/svg' "$dir/report.html") && fail "the page refers to a URL"

# The probe: runs after the page's script, through window.epprofTimeline.
cat >"$dir/probe.js" <<'JS'
(function () {
  const T = window.epprofTimeline, cv = document.getElementById('timeline'), out = {};
  // The widest node slice drawn in the opening view that sits below another slice.
  let best = -1, bestW = 0;
  for (let i = 0; i < T.count; i++) {
    const s = T.slice(i), r = T.rect(i);
    if (s.src === 'node' && s.depth >= 1 && r && r.w > bestW) { best = i; bestW = r.w; }
  }
  if (best >= 0) {
    const s = T.slice(best), r = T.rect(best), x = r.x + r.w / 2, y = r.y + r.h / 2;
    const ev = type => cv.dispatchEvent(new MouseEvent(type, { clientX: x, clientY: y, bubbles: true, button: 0 }));
    out.node = s.name; out.nodeDepth = s.depth;
    // What else holds that point in time, on the same lane.
    const outer = [];
    for (let i = 0; i < T.count; i++) {
      const o = T.slice(i);
      if (i !== best && o.lane === s.lane && o.depth < s.depth && o.ts <= s.ts && o.ts + o.dur >= s.ts + s.dur) outer.push(o.name);
    }
    out.outer = outer.join('|');
    ev('mousemove');
    out.hover = cv.dataset.hover; out.hoverSrc = cv.dataset.hoverSrc;
    ev('mousedown'); ev('mouseup');
    out.pinned = cv.dataset.pinned;
    out.details = document.getElementById('details').textContent.split('\n')[0];
  }
  out.canvasWidth = cv.width; out.clientWidth = cv.clientWidth;
  out.canvasHeight = cv.height; out.clientHeight = cv.clientHeight;
  const v = T.view(); out.view0 = v[0]; out.view1 = v[1];
  document.getElementById('whole').click();
  const w = T.view(); out.whole0 = w[0]; out.whole1 = w[1];
  document.getElementById('reset').click();
  for (const k in out) document.body.dataset['probe' + k[0].toUpperCase() + k.slice(1)] = out[k];
})();
JS
{ sed '$d' "$dir/report.html"; echo "<script>"; cat "$dir/probe.js"; echo "</script>"; echo "</body></html>"; } \
  >"$dir/probed.html"
tail -1 "$dir/report.html" | grep -q '</body></html>' || fail "the page does not end with </body></html>"

timeout 120 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$dir/profile" \
  --enable-logging=stderr --v=0 --virtual-time-budget=5000 --window-size=1200,900 --force-device-scale-factor=2 \
  --dump-dom "file://$dir/probed.html" >"$dir/dom.html" 2>"$dir/chromium.log"
rc=$?
[[ $rc -eq 0 ]] || { tail -20 "$dir/chromium.log"; fail "chromium exited with $rc"; }

# Console errors (uncaught exceptions, console.error) are logged as CONSOLE lines.
if grep -E 'CONSOLE' "$dir/chromium.log" | grep -qiE 'error|uncaught'; then
  grep -E 'CONSOLE' "$dir/chromium.log"
  fail "console errors"
fi
body=$(grep -o '<body[^>]*>' "$dir/dom.html" | head -1)
echo "body: $body"
[[ $body == *'data-rendered="timeline chart"'* ]] || fail "the script did not finish rendering"
attr() { sed -n "s/.* data-$1=\"\([^\"]*\)\".*/\1/p" <<<"$body"; }
num() { local v; v=$(attr "$1"); [[ $v =~ ^-?[0-9.]+$ ]] && echo "$v" || echo 0; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }
tracks=$(num timeline-tracks) slices=$(num timeline-slices) flows=$(num timeline-flows) bars=$(num chart-bars)
[[ $tracks -ge 2 ]] || fail "timeline: $tracks lanes, want a host thread and a device track"
[[ $slices -gt 0 ]] || fail "timeline: no slice drawn"
[[ $flows -gt 0 ]] || fail "timeline: no flow"
[[ $(num timeline-drawn-flows) -gt 0 ]] || fail "timeline: no flow drawn in the opening view"
# One bar per op of the report.
ops=$("$cli" report "$dir/t.json" --format csv | awk -F, '$1=="by"' | wc -l)
[[ $bars -eq $ops ]] || fail "chart: $bars bars for $ops ops"
grep -q '<table>' "$dir/dom.html" || fail "no tables"

# Lanes: the threads and tracks of the trace, counted independently.
read -r want_host want_device want_counter < <(node -e '
  const ev = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const list = Array.isArray(ev) ? ev : ev.traceEvents;
  const host = new Set(), dev = new Set(), ctr = new Set();
  for (const e of list) {
    const k = e.pid + "/" + e.tid;
    if (e.ph === "X") (e.cat === "Kernel" || e.cat === "Memcpy" ? dev : host).add(k);
    if (e.ph === "C") ctr.add(e.pid + "/" + e.name);
  }
  for (const k of dev) host.delete(k);
  console.log(host.size, dev.size, ctr.size);' "$dir/t.json") || fail "reading the trace with node"
[[ $(num timeline-lanes-host) -eq $want_host ]] ||
  fail "timeline: $(num timeline-lanes-host) host lanes for $want_host host threads"
[[ $(num timeline-lanes-device) -eq $want_device ]] ||
  fail "timeline: $(num timeline-lanes-device) device lanes for $want_device device tracks"
[[ $want_counter -ge 1 ]] || fail "the trace has no counter track (epprof run --counters flops)"
[[ $(num timeline-lanes-counter) -eq $want_counter ]] ||
  fail "timeline: $(num timeline-lanes-counter) counter lanes for $want_counter counter tracks"
# Nesting: model_run > node at least.
[[ $(num timeline-levels) -ge 2 ]] || fail "timeline: $(num timeline-levels) nesting levels, want >= 2"

# Innermost hover and click.
node=$(attr probe-node)
[[ -n $node ]] || fail "probe: no node slice drawn below another slice in the opening view"
[[ $(attr probe-outer) == *model_run* ]] || fail "probe: node $node is not inside a model_run ($(attr probe-outer))"
[[ $(attr probe-hover) == "$node" && $(attr probe-hover-src) == node ]] ||
  fail "hover on the middle of node $node names '$(attr probe-hover)' ($(attr probe-hover-src)), want the node"
[[ $(attr probe-pinned) == "$node" && $(attr probe-details) == "$node" ]] ||
  fail "click on node $node pinned '$(attr probe-pinned)', details '$(attr probe-details)'"

# Default zoom: the measured runs, all of them, and not much more; the whole
# trace one click away.
r0=$(num runs-t0) r1=$(num runs-t1) v0=$(num probe-view0) v1=$(num probe-view1) w1=$(num whole-t1)
le "$v0" "$r0" && le "$r1" "$v1" || fail "opening view [$v0, $v1] does not cover the measured runs [$r0, $r1]"
le "$(awk -v a="$v0" -v b="$v1" 'BEGIN { print b - a }')" "$(awk -v a="$r0" -v b="$r1" 'BEGIN { print 1.1 * (b - a) }')" ||
  fail "opening view [$v0, $v1] is not zoomed to the measured runs [$r0, $r1]"
le "$r0" 0 && fail "the measured runs start the trace: the test cannot tell the opening view from the whole trace"
le "$(num probe-whole0)" 0 && le "$w1" "$(num probe-whole1)" ||
  fail "'show whole trace' shows [$(attr probe-whole0), $(attr probe-whole1)], want [0, $w1]"

# Device pixel ratio 2: the backing store has twice the CSS pixels.
cw=$(num probe-canvas-width) ccw=$(num probe-client-width) ch=$(num probe-canvas-height) cch=$(num probe-client-height)
[[ $ccw -gt 0 && $cw -eq $((ccw * 2)) && $ch -eq $((cch * 2)) ]] ||
  fail "canvas backing store ${cw}x$ch for a ${ccw}x$cch CSS box at device scale factor 2"

echo "PASS: $tracks lanes ($want_host host, $want_device device, $want_counter counter)," \
  "$(num timeline-levels) levels, $slices slices drawn, $flows flows, hover and click on $node," \
  "opening view [$v0, $v1] over runs [$r0, $r1], canvas ${cw}x$ch at dpr 2, $bars bars"
