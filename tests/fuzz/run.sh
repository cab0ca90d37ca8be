#!/usr/bin/env bash
# Runs each fuzz target (weight files, spools, the database reader) for N seconds (default 20) over a copy of
# the committed seed corpus. Builds nothing: configure a clang build with
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DPP_FUZZ=ON && cmake --build build-fuzz --target fuzz_safetensors fuzz_npy fuzz_spool fuzz_db -j2
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [SECONDS]}
secs=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for t in safetensors npy spool db; do
  exe=$(find "$build" -type f -name "fuzz_$t" -perm -u+x | head -n1)
  if [ -z "$exe" ]; then
    echo "run.sh: fuzz_$t not found under $build (configure with CC=clang -DPP_FUZZ=ON and build it)" >&2
    exit 2
  fi
  mkdir -p "$work/$t"
  cp "$here/corpus/$t/"* "$work/$t/"
  echo "== fuzz_$t for ${secs}s"
  # -max_len keeps inputs small; the header cap checks need only bytes 0..11;
  # the database seeds are 20 KB files of 512-byte pages
  maxlen=4096
  [ "$t" = db ] && maxlen=65536
  if ! "$exe" -max_total_time="$secs" -max_len="$maxlen" -timeout=10 -rss_limit_mb=1024 \
       -artifact_prefix="$work/" "$work/$t" 2>"$work/$t.log"; then
    echo "fuzz_$t FAILED; log tail:" >&2
    tail -n 40 "$work/$t.log" >&2
    mkdir -p "$build/fuzz-artifacts" && cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$build/fuzz-artifacts/" 2>/dev/null || true
    status=1
  else
    grep -E '^#[0-9]+.*DONE|Done [0-9]+ runs' "$work/$t.log" | tail -n1 || true
  fi
done
exit $status
