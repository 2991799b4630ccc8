#!/usr/bin/env bash
# usage: run_install_test.sh BUILD_DIR WORK_DIR [CMAKE_ARGS...]
# Installs BUILD_DIR into WORK_DIR/prefix, configures and builds the outside
# host project in host/ against it with find_package(epprof), runs it with
# the installed example plugin, then runs the installed `epprof demo`.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR WORK_DIR [CMAKE_ARGS...]" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
work_dir=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

rm -rf "$work_dir"
mkdir -p "$work_dir"
work_dir=$(cd "$work_dir" && pwd)
prefix=$work_dir/prefix

echo "== cmake --install $build_dir --prefix $prefix"
cmake --install "$build_dir" --prefix "$prefix"

config=$(find "$prefix" -name epprofConfig.cmake -print -quit)
plugin=$(find "$prefix" -name libepprof_example.so -print -quit)
[[ -n $config ]] || { echo "FAIL: epprofConfig.cmake was not installed" >&2; exit 1; }
[[ -n $plugin ]] || { echo "FAIL: libepprof_example.so was not installed" >&2; exit 1; }
[[ -f $prefix/include/epprof/epprof.h ]] || { echo "FAIL: headers were not installed" >&2; exit 1; }

echo "== configure and build the outside host"
cmake -S "$here/host" -B "$work_dir/host-build" -DCMAKE_PREFIX_PATH="$prefix" "$@"
cmake --build "$work_dir/host-build"

echo "== run the host"
(cd "$work_dir" && "$work_dir/host-build/epprof_install_host" "$plugin" "$work_dir/host_trace.json")

echo "== run the installed CLI"
"$prefix/bin/epprof" --help >/dev/null
(cd "$work_dir" && "$prefix/bin/epprof" demo --threads 2 --events 50)
[[ -s $work_dir/epprof_demo.json ]] || { echo "FAIL: epprof demo wrote no trace" >&2; exit 1; }

echo "install test passed"
