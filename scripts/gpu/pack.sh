#!/usr/bin/env bash
# Packs what the CUDA tests need to run on a machine with a GPU but without
# this build's Debian libraries: the test binaries, the CLI, libepprof, the
# plugins, the bundled models, and every non-system, non-CUDA shared library
# they load, stripped, into .gpu/ (ignored by git). scripts/gpu/run.sh runs
# them there. CUDA's own libraries (cuBLAS, NVRTC, the driver) are the GPU
# machine's; CUPTI and the CUDA runtime travel, so the record layouts match
# the headers this build used.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${BUILD_DIR:-build}
out=.gpu
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/models" "$out/deps"
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
bins=(cuda_ep_tests cuda_records_tests epprof)
for b in "${bins[@]}"; do [ -f "$build/bin/$b" ] && strip -o "$out/bin/$b" "$build/bin/$b"; done
for l in "$build"/lib/*.so*; do
  [ -L "$l" ] && { cp -P "$l" "$out/lib/"; continue; }
  strip -o "$out/lib/$(basename "$l")" "$l"
done
cp "$build"/models/*.onnx "$out/models/"
# Shared libraries from Debian's packages that the binaries and plugins need.
for f in "$out"/bin/* "$out"/lib/*.so; do
  [ -L "$f" ] && continue
  LD_LIBRARY_PATH="$build/lib" ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  case "$lib" in
    */build/lib/*|*/libstdc++.so*|*/libgcc_s.so*|*/libz.so*|*/libutil.so*|/lib/x86_64-linux-gnu/libc.so*|/lib/x86_64-linux-gnu/libm.so*|*/libdl.so*|*/libpthread.so*|*/librt.so*|*/ld-linux*) continue ;;
    /usr/local/cuda*/libcublas*|/usr/local/cuda*/libnvrtc*) continue ;;
  esac
  strip -o "$out/deps/$(basename "$lib")" "$lib" 2>/dev/null || cp "$lib" "$out/deps/"
done
cp /usr/local/cuda/lib64/libcupti.so.13 "$out/deps/" 2>/dev/null || true
du -sh "$out"
# One compressed file: the tree that travels to the GPU machine is capped.
tar -C "$out" -cf - bin lib models deps | xz -T2 -6 > "$out.tar.xz"
rm -rf "$out" && mkdir -p "$out" && mv "$out.tar.xz" "$out/bundle.tar.xz"
du -sh "$out"
