#!/usr/bin/env bash
# Viewer benchmarks: report generation time and size at 10^5 and 10^6 events.
# usage: bench/viewers/run.sh BUILD_DIR
set -eu
build=${1:?usage: run.sh BUILD_DIR}
"$build/bench/viewers/bench_report" 100000 1000000
