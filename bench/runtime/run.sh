#!/usr/bin/env bash
# Runs the flow-core benchmarks. Usage: bench/runtime/run.sh BUILD_DIR
set -euo pipefail
b=${1:?usage: run.sh BUILD_DIR}/bench/runtime
"$b/bench_runtime_matmul"
"$b/bench_runtime_startup"
"$b/bench_runtime_compile"
"$b/bench_runtime_alloc"
