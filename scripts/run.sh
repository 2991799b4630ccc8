#!/usr/bin/env bash
# Set-up, build, and the main job: profile the demo workload with the
# example plugin and write a trace (epprof_demo.json in the current
# directory). Arguments go to `epprof demo` (try --help).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

"$root/scripts/setup.sh"
"$root/scripts/build.sh"
"$root/build/bin/epprof" demo "$@"
