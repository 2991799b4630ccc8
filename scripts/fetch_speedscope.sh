#!/usr/bin/env bash
# Fetches speedscope (https://www.speedscope.app, the npm package
# `speedscope`) at a pinned version into a cache (never into git), for the
# browser test that imports epprof's default trace into it
# (tests/report/speedscope_check.sh). Only the package's built release is
# used: dist/release/index.html and its scripts; nothing is installed and
# no package script runs.
#
# Usage: scripts/fetch_speedscope.sh [CACHE_DIR]
#   CACHE_DIR defaults to $EPPROF_SPEEDSCOPE_CACHE, else ~/.cache/epprof/speedscope.
# Idempotent: a verified copy is kept. Needs npm and the npm registry.
#
# Cache layout: speedscope-VERSION.tgz (npm checks its integrity against the
# registry's; we check its sha256 against the pin below), VERSION/ (the
# unpacked package), release -> VERSION/package/dist/release (what the test
# opens).
set -euo pipefail
version=1.25.0
sha256=2831f1e0d26df914b477e522d78b8485511495a6af81a0b88158f8b48f9e0d03
cache=${1:-${EPPROF_SPEEDSCOPE_CACHE:-$HOME/.cache/epprof/speedscope}}

for tool in npm tar sha256sum; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fetch_speedscope: '$tool' not found (Debian: apt-get install npm)" >&2
    exit 1
  fi
done
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
tgz=$cache/speedscope-$version.tgz
release=$cache/$version/package/dist/release

if [[ ! -f $release/index.html || ! -f $cache/$version/verified ]]; then
  if [[ ! -s $tgz ]]; then
    echo "fetch_speedscope: npm pack speedscope@$version" >&2
    (cd "$cache" && npm pack --silent "speedscope@$version" >/dev/null)
    [[ -s $tgz ]] || { echo "fetch_speedscope: npm pack did not produce $tgz" >&2; exit 1; }
  fi
  got=$(sha256sum "$tgz" | cut -d' ' -f1)
  if [[ $got != "$sha256" ]]; then
    echo "fetch_speedscope: CHECKSUM MISMATCH for $tgz: expected $sha256, got $got (delete it to fetch it again)" >&2
    exit 1
  fi
  rm -rf "$cache/$version.tmp"
  mkdir -p "$cache/$version.tmp"
  tar -xzf "$tgz" -C "$cache/$version.tmp"
  [[ -f $cache/$version.tmp/package/dist/release/index.html ]] ||
    { echo "fetch_speedscope: speedscope@$version has no dist/release/index.html" >&2; exit 1; }
  touch "$cache/$version.tmp/verified"
  rm -rf "$cache/$version"
  mv "$cache/$version.tmp" "$cache/$version"
fi
ln -sfn "$version/package/dist/release" "$cache/release"
echo "fetch_speedscope: speedscope $version in $cache/release"
