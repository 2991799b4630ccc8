#!/usr/bin/env bash
# Set-up, build, and the main job: `epprof run` profiles the bundled CNN on
# the reference runtime and writes a trace (epprof_cnn.json in the current
# directory). Arguments go to `epprof run` (try --help).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

"$root/scripts/setup.sh"
# Only what `epprof run` needs (the epprof_main target): the command, the
# bundled models and the EP plugins; the tests and benchmarks are test.sh's.
TARGETS=epprof_main "$root/scripts/build.sh"
"$root/build/bin/epprof" run "$@"
