#!/usr/bin/env bash
# CLI behaviour of report / export / stats: help, bad input, exit codes,
# one-line errors, end-to-end outputs. usage: cli.sh PHASEPROF FIXTURE CHECK_CHROME
set -u
pp=$1 fixture=$2 check=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect CODE DESCRIPTION -- CMD...: exit code and (on error) one stderr line
expect() {
  local code=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -ne "$code" ]; then bad "$what: exit $rc, wanted $code: $(head -3 "$tmp/err")"; return; fi
  if [ "$code" -ne 0 ] && [ "$(wc -l <"$tmp/err")" -lt 1 ]; then bad "$what: no error message"; return; fi
  ok "$what"
}

"$fixture" "$tmp/run.db" --steps 12 || { echo "FAIL: fixture"; exit 1; }
echo "not a database" >"$tmp/foreign.db"

for c in report export stats; do
  expect 0 "$c --help" -- "$pp" $c --help
  grep -q "usage: phaseprof $c" "$tmp/out" || bad "$c --help prints usage"
  expect 2 "$c unknown option" -- "$pp" $c --bogus "$tmp/run.db"
  grep -q "unknown option '--bogus'" "$tmp/err" || bad "$c names the unknown option"
done
expect 1 "report missing db" -- "$pp" report "$tmp/missing.db" -o "$tmp/x.html"
grep -q "missing.db" "$tmp/err" || bad "missing db error names the file"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || bad "missing db: one line"
expect 1 "report foreign db" -- "$pp" report "$tmp/foreign.db" -o "$tmp/x.html"
grep -q "foreign.db" "$tmp/err" || bad "foreign db error names the file"
expect 1 "export foreign db" -- "$pp" export --format chrome "$tmp/foreign.db"
expect 1 "stats missing db" -- "$pp" stats "$tmp/missing.db"
expect 1 "report unknown run" -- "$pp" report "$tmp/run.db" --run 77 -o "$tmp/x.html"
grep -q "no run 77" "$tmp/err" || bad "unknown run named"
expect 1 "export unknown run" -- "$pp" export --format chrome --run 77 "$tmp/run.db" -o "$tmp/x.json"
[ -e "$tmp/x.json" ] && bad "failed export leaves no file"
expect 1 "stats unknown run" -- "$pp" stats --run 77 "$tmp/run.db"
expect 2 "export unknown format" -- "$pp" export --format pdf "$tmp/run.db"
grep -q "unknown format 'pdf'" "$tmp/err" || bad "unknown format named"
expect 2 "export without format" -- "$pp" export "$tmp/run.db"
expect 2 "report bad --run" -- "$pp" report "$tmp/run.db" --run abc
expect 2 "report --run without value" -- "$pp" report "$tmp/run.db" --run

cp "$tmp/run.db" "$tmp/keep.db"
expect 2 "report refuses to overwrite the database" -- "$pp" report "$tmp/keep.db" -o "$tmp/keep.db"
cmp -s "$tmp/run.db" "$tmp/keep.db" || bad "database untouched after the refusal"

# end to end
expect 0 "report" -- "$pp" report "$tmp/run.db" -o "$tmp/report.html"
grep -q "Phase waterfall" "$tmp/report.html" || bad "report has the waterfall"
grep -qE "https?://" "$tmp/report.html" && bad "report references the network"
expect 0 "report default output name" -- "$pp" report "$tmp/run.db"
[ -s "$tmp/run.html" ] || bad "report writes DB.html by default"
expect 0 "export chrome gzip" -- "$pp" export --format chrome --gzip "$tmp/run.db" -o "$tmp/t.json.gz"
/usr/bin/python3 "$check" "$tmp/t.json.gz" --flows 10 || bad "chrome trace valid"
expect 0 "export folded" -- "$pp" export -f folded --run 1 "$tmp/run.db" -o "$tmp/f.txt"
grep -q "^main;train_loop;sgemm_kernel [0-9]*$" "$tmp/f.txt" || bad "folded has the sampled stack"
expect 0 "export svg" -- "$pp" export --format svg --run 1 "$tmp/run.db" -o "$tmp/g.svg"
grep -q "<svg" "$tmp/g.svg" || bad "svg export is SVG"
expect 0 "export dot to stdout" -- "$pp" export --format dot --run 2 "$tmp/run.db"
grep -q "digraph" "$tmp/out" || bad "dot export is DOT"
expect 0 "export csv" -- "$pp" export --format csv "$tmp/run.db" -o "$tmp/p.csv"
head -1 "$tmp/p.csv" | grep -q "^run_id,tid,thread,kind,name" || bad "csv header"
expect 0 "stats" -- "$pp" stats "$tmp/run.db"
awk '{ if (length($0) > 80) { print "long line: " $0; bad = 1 } } END { exit bad }' "$tmp/out" || bad "stats fits 80 columns"
grep -q "growing-graph/slow" "$tmp/out" || bad "stats lists the runs"
expect 0 "stats --json" -- "$pp" stats --json "$tmp/run.db"
/usr/bin/python3 -c "import json,sys; d=json.load(open('$tmp/out')); assert len(d['runs'])==2" || bad "stats json parses"

[ $fails -eq 0 ] && echo "cli.sh: all passed" || echo "cli.sh: $fails failed"
exit $((fails > 0))
