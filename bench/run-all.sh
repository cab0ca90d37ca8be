#!/usr/bin/env bash
# Runs every benchmark (bench/<area>/run.sh BUILD_DIR). Figures are printed,
# never asserted; the README quotes them.
set -u
b=${1:-build}
case "$b" in /*) ;; *) b="$(pwd)/$b" ;; esac
here=$(cd "$(dirname "$0")" && pwd)
for s in "$here"/*/run.sh; do
	echo "== $(basename "$(dirname "$s")")"
	bash "$s" "$b" || echo "(benchmark $s failed: $?)"
done
