#!/usr/bin/env bash
# Set-up, build, the real-model cache, and the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

"$root/scripts/setup.sh"
"$root/scripts/build.sh"
# Real models and ONNX Runtime's reference outputs, into a cache outside git
# (the real-model tests skip, saying so, when it is absent).
"$root/scripts/fetch_models.sh"
ctest --test-dir "$root/build" --output-on-failure -j2
