#!/usr/bin/env bash
# Runs every built-in scenario at full size and prints the figures:
# per-variant time, the speed-up of each fix, findings and the claims.
#   bench/scenarios/run.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/phaseprof" run --all -o "$tmp/scenarios.db"
