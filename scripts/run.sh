#!/usr/bin/env bash
# Set-up, build, and the main job: `epprof run` profiles the bundled CNN on
# the reference runtime and writes a trace (epprof_cnn.json in the current
# directory). Arguments go to `epprof run` (try --help).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

"$root/scripts/setup.sh"
"$root/scripts/build.sh"
"$root/build/bin/epprof" run "$@"
