#!/usr/bin/env bash
# Installs every Debian 12 package epprof needs to build and test. Idempotent:
# when everything is already installed it does nothing (no apt-get at all).
# Run as root (sudo is used when available and not root).
set -euo pipefail

packages=(
  # toolchain
  cmake make g++ clang libclang-rt-14-dev pkg-config
  # library, tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev libsimdjson-dev nlohmann-json3-dev
  # SQLite traces (the library, and the shell the README's example queries use)
  libsqlite3-dev sqlite3
  # reference ONNX runtime
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler libopenblas-dev
  # OpenCL plugin (CPU device through PoCL) and hardware counters
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers libpfm4-dev
  # HTML report test (headless browser)
  chromium
  # scripts/fetch_models.sh (real-model tests, ONNX Runtime reference outputs)
  nodejs
)
# Debian's nodejs has no npm; a Node.js from elsewhere (NodeSource) brings its
# own and conflicts with Debian's npm package, so ask for it only when missing.
if ! command -v npm >/dev/null 2>&1; then
  packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "setup: missing packages: ${missing[*]}" >&2
  echo "setup: run as root (or install sudo) to install them" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update
"${as_root[@]}" apt-get install -y --no-install-recommends "${packages[@]}"
