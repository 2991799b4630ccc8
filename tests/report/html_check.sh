#!/usr/bin/env bash
# Opens the HTML report of a real trace in headless Chromium and checks that
# the page ran without console errors and drew its timeline and chart.
#   html_check.sh EPPROF_CLI EXAMPLE_PLUGIN
# Chromium is required (scripts/setup.sh installs it). Only when
# EPPROF_CHROMIUM_ABSENT=1 says it is intentionally missing does the test
# skip (exit 77); otherwise its absence fails the test.
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
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$cli" run --runs 3 --no-table --plugin "$plugin" --output "$dir/t.json" >"$dir/run.log" 2>&1 ||
  { cat "$dir/run.log"; fail "epprof run"; }
"$cli" report "$dir/t.json" --format html -o "$dir/report.html" || fail "epprof report --format html"
grep -qiE '<(script|link|img)[^>]+(src|href)=' "$dir/report.html" && fail "the page loads an external asset"
grep -qE 'https?://' <(grep -v 'http://www.w3.org/2000/svg' "$dir/report.html") && fail "the page refers to a URL"

timeout 120 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$dir/profile" \
  --enable-logging=stderr --v=0 --virtual-time-budget=5000 --window-size=1200,900 \
  --dump-dom "file://$dir/report.html" >"$dir/dom.html" 2>"$dir/chromium.log"
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
num() { sed -n "s/.*data-$1=\"\([0-9]*\)\".*/\1/p" <<<"$body"; }
tracks=$(num timeline-tracks) slices=$(num timeline-slices) flows=$(num timeline-flows) bars=$(num chart-bars)
[[ ${tracks:-0} -ge 2 ]] || fail "timeline: $tracks tracks, want a host thread and a device track"
[[ ${slices:-0} -gt 0 ]] || fail "timeline: no slice drawn"
[[ ${flows:-0} -gt 0 ]] || fail "timeline: no flow"
# One bar per op of the report.
ops=$("$cli" report "$dir/t.json" --format csv | awk -F, '$1=="by"' | wc -l)
[[ ${bars:-0} -eq $ops ]] || fail "chart: $bars bars for $ops ops"
grep -q '<table>' "$dir/dom.html" || fail "no tables"
echo "PASS: $tracks tracks, $slices slices drawn, $flows flows, $bars bars"
