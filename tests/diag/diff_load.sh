#!/usr/bin/env bash
# `phaseprof diff` on a loaded machine: the same program recorded twice, the
# second time beside a CPU hog, shows no regression; the program with every
# step doing twice the work is a step regression (and fails --fail-on step).
# The recordings run at normal priority on purpose: the load is the point.
# A verdict gets three recordings, as gate_ci.sh gives its own: the
# machine's other load can change between two recordings by more than the
# hog does.
# usage: diff_load.sh PHASEPROF GATE_TARGET
set -u
pp=$1
target=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/ppload-XXXXXX")
hog=
cleanup() { [ -n "$hog" ] && kill "$hog" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

rec() { # rec DB SLOW
  rm -f "$1"
  PP_GATE_SLOW=$2 "$pp" record -q -o "$1" -- "$target" >/dev/null 2>"$dir/rec.err" \
    || { fail "record $1: $(cat "$dir/rec.err")"; exit 1; }
}

rec "$dir/base.db" 0
for attempt in 1 2 3; do
  # a busy loop beside the program, for the length of its recording
  bash -c 'while :; do :; done' &
  hog=$!
  rec "$dir/same.db" 0
  kill "$hog"; wait "$hog" 2>/dev/null; hog=
  out=$("$pp" diff "$dir/base.db" "$dir/same.db" --fail-on any=0 2>&1); rc=$?
  [ $rc = 0 ] && break
  echo "attempt $attempt: beside a hog, exit $rc: $out"
done
[ $rc = 0 ] || fail "the same program beside a hog regressed: $out"
printf '%s\n' "$out" | grep -q '^0 regressions' || fail "regressions flagged beside a hog: $out"
printf '%s\n' "$out" | grep -q '^step median: Mann-Whitney U on 19 vs 19 steady steps' || fail "no test line: $out"

for attempt in 1 2 3; do
  # a retry records the baseline again beside it: the suite's other tests
  # can load the machine while either one runs (a loaded baseline's steps
  # took 1.9x their CPU time in wall time, as long as the 2x program's)
  [ $attempt = 1 ] || rec "$dir/base.db" 0
  rec "$dir/slow.db" 2
  out=$("$pp" diff "$dir/base.db" "$dir/slow.db" --fail-on step=50 2>&1); rc=$?
  [ $rc = 1 ] && break
  echo "attempt $attempt: 2x steps, exit $rc: $out"
done
[ $rc = 1 ] || fail "2x steps: exit $rc, wanted 1: $out"
printf '%s\n' "$out" | grep -qE '^step median .* REGRESSION$' || fail "2x steps not a step regression: $out"
printf '%s\n' "$out" | grep -qE '^  step median +\+[0-9.]+% +limit 50% +FAIL$' || fail "no step FAIL line: $out"

[ $fails = 0 ] && echo "diff_load: all checks passed"
exit $fails
