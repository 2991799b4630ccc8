#!/usr/bin/env bash
# Configures and builds epprof into build/ (RelWithDebInfo). Extra arguments
# go to the configure step, e.g. ./scripts/build.sh -DEPPROF_BUILD_BENCHMARKS=OFF
# BUILD_DIR overrides the build directory; TARGETS (space-separated) builds
# only those targets and what they need, instead of everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
targets=()
for t in ${TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
