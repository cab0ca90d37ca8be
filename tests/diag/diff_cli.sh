#!/usr/bin/env bash
# `phaseprof diff`: table output, --json, the run selection forms, and a clear
# one-line error (naming the file or the argument) for each kind of bad input.
# usage: diff_cli.sh PHASEPROF MAKE_FIXTURES
set -u
pp=$1
mk=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/ppdiff-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$mk" "$dir" || { echo "FAIL: fixtures"; exit 1; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect STATUS PATTERN -- command...: exit status and a pattern in stdout+stderr
expect() {
  local want=$1 pat=$2; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, wanted $want: $out"
  printf '%s' "$out" | grep -qE -- "$pat" || fail "'$*' output lacks /$pat/: $out"
}

# Two databases: table with aligned columns and the verdicts.
out=$("$pp" diff "$dir/a.db" "$dir/b.db") || fail "diff a b failed"
printf '%s\n' "$out" | grep -qE '^step median +39 +39 .* REGRESSION$' || fail "no step regression row: $out"
printf '%s\n' "$out" | grep -qE '^weight_load .* improvement$' || fail "no weight_load improvement: $out"
printf '%s\n' "$out" | grep -qE '^compile .* ~$' || fail "compile should be within noise: $out"
printf '%s\n' "$out" | grep -q '2 regressions, 1 improvement beyond noise' || fail "no summary: $out"
printf '%s\n' "$out" | grep -q 'A: .*a.db run 1 "base"' || fail "no run header: $out"
# the header says which test judged the step row, with its numbers
printf '%s\n' "$out" | grep -qE '^step median: Mann-Whitney U on 39 vs 39 steady steps, two-sided p [<=] [0-9.e-]+ \(flagged below 0.001\); Hodges-Lehmann shift .*; both shifts must exceed max\(10% of A.s median, 2 x the quieter run.s sigma\) = ' \
  || fail "no step test line: $out"
printf '%s\n' "$out" | grep -qE '^total, phases: a change counts beyond max\(3 x noise x A, 5% of A, ' || fail "no phase threshold line: $out"
# every table line has its ratio column at the same place
cols=$(printf '%s\n' "$out" | awk '/^phase /{on=1} on && NF>=8 {print index($0, $(NF-1) " ") + length($(NF-1))}' | sort -u | wc -l)
[ "$cols" = 1 ] || fail "ratio column not aligned: $out"

# One database with exactly two runs, and with --runs.
expect 0 'step median .*REGRESSION' -- "$pp" diff "$dir/two.db"
expect 0 'step median .*improvement' -- "$pp" diff "$dir/two.db" --runs 2 1
expect 0 'B: .*three.db run 3 "third"' -- "$pp" diff "$dir/three.db" --runs 1 3
expect 0 'compared the last run' -- "$pp" diff "$dir/a.db" "$dir/three.db"

# JSON parses and carries the verdicts.
"$pp" diff "$dir/two.db" --json > "$dir/out.json" || fail "json diff failed"
/usr/bin/python3 - "$dir/out.json" <<'PY' || fail "bad json: $(cat "$dir/out.json")"
import json, sys
d = json.load(open(sys.argv[1]))
rows = {r["name"]: r for r in d["rows"]}
assert d["a"]["run"] == 1 and d["b"]["run"] == 2, d
assert d["b"]["label"] == 'slower "quoted"', d["b"]
assert rows["step median"]["verdict"] == "regression"
assert rows["weight_load"]["verdict"] == "improvement"
assert rows["compile"]["verdict"] == "same"
assert d["regressions"] == 2 and d["improvements"] == 1
assert d["noise_from_steps"] is True
t = d["step_test"]
assert t["test"] == "mann-whitney-u" and t["alpha"] == 0.001 and t["p_two_sided"] < 0.001, t
assert t["hodges_lehmann_shift_ns"] > t["min_effect_ns"] > 0, t
assert t["q25_b_ns"] - t["q25_a_ns"] > t["min_effect_ns"], t
assert rows["step median"]["threshold_ns"] == round(t["min_effect_ns"]), (rows["step median"], t)
PY

# Errors: one line, naming the file or the argument; exit 1 (data) or 2 (usage).
expect 1 "three.db holds 3 runs: name the two to compare with --runs" -- "$pp" diff "$dir/three.db"
expect 1 "empty.db: the database holds no runs" -- "$pp" diff "$dir/a.db" "$dir/empty.db"
expect 1 "two.db: no run 9" -- "$pp" diff "$dir/two.db" --runs 1 9
expect 1 "missing.db" -- "$pp" diff "$dir/missing.db" "$dir/a.db"
printf 'not a database at all, just text\n' > "$dir/junk.db"
expect 1 "junk.db" -- "$pp" diff "$dir/a.db" "$dir/junk.db"
expect 2 "'x' is not a number" -- "$pp" diff "$dir/two.db" --runs 1 x
expect 2 "--runs needs two run ids" -- "$pp" diff "$dir/two.db" --runs 1
expect 2 "unknown option '--bogus'" -- "$pp" diff "$dir/two.db" --bogus
expect 2 "too many databases" -- "$pp" diff "$dir/a.db" "$dir/b.db" "$dir/two.db"
expect 2 "usage: phaseprof diff" -- "$pp" diff
expect 0 "usage: phaseprof diff" -- "$pp" diff --help
# errors are single lines
n=$("$pp" diff "$dir/three.db" 2>&1 >/dev/null | wc -l)
[ "$n" = 1 ] || fail "error is $n lines"

[ $fails = 0 ] && echo "diff_cli: all checks passed"
exit $fails
