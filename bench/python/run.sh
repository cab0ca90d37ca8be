#!/usr/bin/env bash
# Overhead of the CPython layer of `phaseprof record` (see bench.py).
# Usage: bench/python/run.sh BUILD_DIR [REPEATS]   (median of REPEATS, default 5)
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [REPEATS]}
[ -x "$build/phaseprof" ] || { echo "run.sh: $build/phaseprof missing (build first)" >&2; exit 1; }
exec /usr/bin/python3 "$(dirname "$0")/bench.py" "$build" "${2:-5}"
