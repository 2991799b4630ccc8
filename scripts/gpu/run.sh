#!/usr/bin/env bash
# On the GPU machine, from the repository root: runs the CUDA test set that
# scripts/gpu/pack.sh packed into .gpu/, and `epprof run` on the CUDA EP,
# writing logs and traces under $OUT (or /tmp/gpu-out). The test binaries
# were built with /work/main/build paths compiled in; a link puts .gpu there.
set -uo pipefail
root=$PWD
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
[ -f .gpu/bundle.tar.xz ] && tar -C .gpu -xJf .gpu/bundle.tar.xz
if [ ! -e /work/main/build ]; then
  mkdir -p /work/main/build
  ln -s "$root/.gpu/lib" /work/main/build/lib
  ln -s "$root/.gpu/bin" /work/main/build/bin
  ln -s "$root/.gpu/models" /work/main/build/models
fi
cuda_libs=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib 2>/dev/null | tr '\n' ':')
pip_libs=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib 2>/dev/null | tr '\n' ':')
export LD_LIBRARY_PATH="$root/.gpu/deps:$root/.gpu/lib:${cuda_libs}${pip_libs}${LD_LIBRARY_PATH:-}"
nvidia-smi -L
echo "== missing libraries"; ldd .gpu/bin/* .gpu/lib/libepprof_cuda.so | grep "not found" | sort -u
status=0
run() {  # name, command...
  local name=$1; shift
  echo "== $name"
  timeout 300 "$@" > "$out/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.log"
  echo "== $name: exit $rc"
  [ $rc -eq 0 ] || status=1
}
run records .gpu/bin/cuda_records_tests
run ep .gpu/bin/cuda_ep_tests --gtest_filter=-CudaFaults.*:CudaApiRecords.*
run api_records env EPPROF_CUDA_API_RECORDS=1 .gpu/bin/cuda_ep_tests --gtest_filter='CudaApiRecords.*'
run cupti_failure env EPPROF_CUDA_BREAK_CUPTI=1 .gpu/bin/cuda_ep_tests --gtest_filter='CudaFaults.CuptiFailure*'
run device_oom env EPPROF_CUDA_MAX_ALLOC_BYTES=64 .gpu/bin/cuda_ep_tests --gtest_filter='CudaFaults.DeviceOutOfMemory*'
if [ -x .gpu/bin/epprof ]; then
  for m in mlp transformer; do
    run "epprof_run_$m" .gpu/bin/epprof run ".gpu/models/$m.onnx" --ep cuda,cpu --runs 5 --output "$out/$m.json"
    run "epprof_validate_$m" .gpu/bin/epprof validate "$out/$m.json"
  done
fi
exit $status
