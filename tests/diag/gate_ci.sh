#!/usr/bin/env bash
# The CI regression gate end to end, as docs/record.md's CI job runs it: record a
# program twice (baseline and change) and `phaseprof diff --fail-on`.
# A 4x weight_load regression fails the gate (exit 1); an identical change
# passes (exit 0) although its times differ by noise; bad usage or input is 2.
# usage: gate_ci.sh PHASEPROF GATE_TARGET
set -u
pp=$1
target=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/ppgate-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The recordings run at a real-time priority where that is allowed (root,
# as in CI): then the other tests and builds on the machine cannot preempt
# the target's phases, and the gate measures the program, not the machine's
# load. Elsewhere they run as they are.
rt=()
chrt -f 1 true 2>/dev/null && rt=(chrt -f 1)
rec() { # rec DB [ENV=VALUE]: one recording of the target (a fresh database)
  local db=$1; shift
  rm -f "$db"
  env "$@" "${rt[@]}" "$pp" record -o "$db" -- "$target" >"$dir/rec.out" 2>&1 \
    || { fail "record $db: $(cat "$dir/rec.out")"; return 1; }
}
gate=(--fail-on weight_load=20,compile=50 --fail-on total=50)

# On a loaded machine a preemption can land in a one-off phase of either
# recording; each verdict gets three recordings, as the scenario matrix
# gives its ratios five attempts. On a quiet machine the first one decides.
rec "$dir/base.db" PP_GATE_SLOW=0 || exit 1

# judge DB SLOW WANT: record DB (PP_GATE_SLOW=SLOW) and gate it against
# the baseline, up to three times until the exit status is WANT
judge() {
  local db=$1 slow=$2 want=$3 attempt
  for attempt in 1 2 3; do
    rec "$db" PP_GATE_SLOW="$slow" || exit 1
    out=$("$pp" diff "$dir/base.db" "$db" "${gate[@]}" 2>&1); rc=$?
    [ $rc = "$want" ] && return
    echo "attempt $attempt: $db exited $rc, wanted $want: $out"
  done
}

# identical program: noise only, not regressed
judge "$dir/same.db" 0 0
[ $rc = 0 ] || fail "identical runs: exit $rc, wanted 0: $out"
printf '%s\n' "$out" | grep -q "gate (--fail-on): not regressed" || fail "no pass line: $out"
"$pp" diff "$dir/base.db" "$dir/same.db" "${gate[@]}" --json >"$dir/same.json" || fail "--json identical: exit $?"
/usr/bin/python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["gate"]; assert g["regressed"] is False, g' \
  "$dir/same.json" || fail "identical runs regressed in json"

# the regression: weight_load 4x
judge "$dir/slow.db" 1 1
[ $rc = 1 ] || fail "4x weight_load: exit $rc, wanted 1: $out"
printf '%s\n' "$out" | grep -qE "^  weight_load +\+[0-9.]+% +limit 20% +FAIL$" || fail "no weight_load FAIL line: $out"
printf '%s\n' "$out" | grep -qE "^  compile .* ok " || fail "compile should pass: $out"

# a limit above the regression's size passes it
"$pp" diff "$dir/base.db" "$dir/slow.db" --fail-on weight_load=1000 >/dev/null 2>&1; rc=$?
[ $rc = 0 ] || fail "limit 1000%: exit $rc, wanted 0"

# the machine-readable summary
"$pp" diff "$dir/base.db" "$dir/slow.db" "${gate[@]}" --json >"$dir/gate.json"; rc=$?
[ $rc = 1 ] || fail "--json regression: exit $rc, wanted 1"
/usr/bin/python3 - "$dir/gate.json" <<'PY' || fail "bad gate json: $(cat "$dir/gate.json")"
import json, sys
d = json.load(open(sys.argv[1]))
g = d["gate"]
assert g["regressed"] is True and g["failed"] >= 1, g
c = {x["name"]: x for x in g["checks"]}
assert c["weight_load"]["failed"] and c["weight_load"]["verdict"] == "regression", c
assert c["weight_load"]["change_pct"] > 100, c
assert not c["compile"]["failed"], c
assert {r["name"] for r in d["rows"]} >= {"total", "step median", "weight_load", "compile"}
PY

# usage and input errors are 2 with a gate (1 means regressed)
expect2() {
  local pat=$1; shift
  local out rc
  out=$("$@" 2>&1); rc=$?
  [ $rc = 2 ] || fail "'$*' exited $rc, wanted 2: $out"
  printf '%s' "$out" | grep -qE -- "$pat" || fail "'$*' lacks /$pat/: $out"
  [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "'$*' error is not one line: $out"
}
expect2 "unknown phase 'bogus'" "$pp" diff "$dir/base.db" "$dir/slow.db" --fail-on bogus=5
expect2 "'x' is not a percentage" "$pp" diff "$dir/base.db" "$dir/slow.db" --fail-on total=x
expect2 "is not KIND=PCT" "$pp" diff "$dir/base.db" "$dir/slow.db" --fail-on total
expect2 "--fail-on needs a value" "$pp" diff "$dir/base.db" "$dir/slow.db" --fail-on
expect2 "missing.db" "$pp" diff "$dir/base.db" "$dir/missing.db" --fail-on total=5
# "10%" and the --opt=value form spell the same gate
"$pp" diff "$dir/base.db" "$dir/slow.db" --fail-on=weight_load=10% >/dev/null 2>&1; rc=$?
[ $rc = 1 ] || fail "--fail-on=weight_load=10%: exit $rc, wanted 1"

[ $fails = 0 ] && echo "gate_ci: all checks passed"
exit $fails
