#!/usr/bin/env bash
# Configures and builds epprof into build/ (RelWithDebInfo). Extra arguments
# go to the configure step, e.g. ./scripts/build.sh -DEPPROF_BUILD_BENCHMARKS=OFF
# BUILD_DIR overrides the build directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build "$build_dir" -j"$(nproc)"
