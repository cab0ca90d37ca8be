#!/usr/bin/env bash
# A step nested inside a step (session.run inside a loop iteration) is not a
# step of its own: stats, diff and the report all count 30 steps of ~2 ms,
# and diff's noise is the loop's, not the spread between outer and inner.
# usage: nested_steps.sh PHASEPROF MAKE_NESTED
set -u
pp=$1
mk=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/ppnest-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$mk" "$dir/n.db" || { echo "FAIL: fixture"; exit 1; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

out=$("$pp" stats "$dir/n.db") || fail "stats failed: $out"
printf '%s\n' "$out" | grep -qE '^ +1 +unit/before +complete +[0-9.]+ ms +30 ' || fail "stats: run 1 not 30 steps: $out"
printf '%s\n' "$out" | grep -qE '^ +2 +unit/after +complete +[0-9.]+ ms +30 ' || fail "stats: run 2 not 30 steps: $out"
printf '%s\n' "$out" | grep -qE 'run 1: .*steady 2\.[0-9]+ ms' || fail "stats: steady step is not the outer 2 ms: $out"

json=$("$pp" stats "$dir/n.db" --json) || fail "stats --json failed"
printf '%s' "$json" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
for r in d["runs"]:
    assert r["steps"] == 30, r["steps"]
    assert 1900000 < r["steady_step_ns"] < 2100000, r["steady_step_ns"]
' || fail "stats --json: $json"

out=$("$pp" diff "$dir/n.db" --runs 1 2) || fail "diff failed: $out"
printf '%s\n' "$out" | grep -q 'run 1 "before" (unit/before), 30 steps' || fail "diff: A not 30 steps: $out"
printf '%s\n' "$out" | grep -q 'run 2 "after" (unit/after), 30 steps' || fail "diff: B not 30 steps: $out"
printf '%s\n' "$out" | grep -qE '^step median +29 +29 .* ~$' || fail "diff: step median not 29 steady steps within noise: $out"
noise=$(printf '%s\n' "$out" | sed -n 's/^noise: steps vary by \([0-9.]*\)%.*/\1/p')
[ -n "$noise" ] && awk -v n="$noise" 'BEGIN { exit !(n < 10) }' || fail "diff: noise ${noise:-?}% (the loop's is ~2%): $out"

"$pp" report "$dir/n.db" -o "$dir/r.html" >/dev/null 2>&1 || fail "report failed"
c=$(grep -o '<div class="k">steps</div><div class="v">[0-9]*</div>' "$dir/r.html" | sort | uniq -c)
[ "$(printf '%s\n' "$c" | awk '{print $1, $NF}')" = '2 class="v">30</div>' ] || fail "report: step cards not 30 for both runs: $c"
grep -qE '<td class="r">60</td>' "$dir/r.html" && fail "report: a run lists 60 steps"

[ "$fails" = 0 ] && echo "nested steps: all checks passed"
exit $((fails > 0))
