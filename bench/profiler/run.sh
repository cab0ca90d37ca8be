#!/usr/bin/env bash
# Recorder cost per event and ingest rate vs a plain SQLite loop.
set -eu
b=${1:-build}
"$b/bench/profiler/bench_recorder"
"$b/bench/profiler/bench_ingest"
