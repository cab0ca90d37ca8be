#!/usr/bin/env bash
# Runs the op-library benchmarks. Usage: bench/runtime_ops/run.sh BUILD_DIR
set -euo pipefail
b=${1:?usage: run.sh BUILD_DIR}/bench/runtime_ops
echo "-- RNG and initialisers"; "$b/bench_ops_rng_init"
echo "-- weight files"; "$b/bench_ops_weights"
echo "-- kernels"; "$b/bench_ops_kernels"
