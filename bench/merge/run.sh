#!/usr/bin/env bash
# Merge benchmark: per-rank databases of a synthetic job joined by
# `phaseprof merge` (time, peak memory, output size); 32 ranks, then 256.
# usage: bench/merge/run.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR}
dir=$(mktemp -d "${TMPDIR:-/tmp}/pp-bench-merge-XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "== merge: N rank databases of 10^5 spans each"
"$build/bench/merge/bench_merge" "$build/phaseprof" "$dir" 32 100000
"$build/bench/merge/bench_merge" "$build/phaseprof" "$dir" 256 100000
