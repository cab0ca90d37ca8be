#!/usr/bin/env bash
# Diagnostics benchmarks: rules and diff time on recordings of 1k-50k steps.
# usage: bench/diag/run.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR}
echo "== diag: pp_diag_analyze / pp_diag_diff on N-step runs (4 spans + 2 counters per step)"
"$build/bench/diag/bench_diag" "${TMPDIR:-/tmp}"
