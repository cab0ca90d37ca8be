#!/usr/bin/env bash
# The numbers a user sees do not depend on --keep-all-spans: one recording
# whose short leaf spans were folded into span_groups, ingested both ways,
# gives the same phase counts and times in stats, diff and report.
# Usage: span_groups.sh PHASEPROF T_SPANS
set -u
pp=$1 spans=$2
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }

# 2 threads x 100,000 op spans of 8 names: 12,500 per (thread, name), past
# the 10,000 kept by default
"$pp" record --keep-spools -o "$t/rec.db" -- "$spans" 400000 2 >/dev/null 2>"$t/rec.err"
dir=$(sed -n 's/^phaseprof: spool files kept in \([^ ]*\).*/\1/p' "$t/rec.err")
spool=$(ls "$dir"/*.spool 2>/dev/null | head -n1)
[ -f "$spool" ] || { echo "FAIL: record --keep-spools left no spool: $(cat "$t/rec.err")"; exit 1; }
"$pp" ingest -o "$t/a.db" "$spool" >/dev/null 2>&1 || bad "ingest"
"$pp" ingest --keep-all-spans -o "$t/b.db" "$spool" >/dev/null 2>&1 || bad "ingest --keep-all-spans"
rm -rf "$dir"
folded=$(sqlite3 "$t/a.db" "SELECT COALESCE(sum(count), 0) FROM span_groups")
[ "$folded" -gt 0 ] && ok "default ingest folded $folded spans" || bad "nothing folded: the test tests nothing"

phases() { "$pp" stats --json "$1" | python3 -c 'import json, sys
for p in json.load(sys.stdin)["runs"][0]["phases"]: print(p["kind"], p["count"], p["total_ns"], p["max_ns"])'; }
pa=$(phases "$t/a.db") pb=$(phases "$t/b.db")
if [ -n "$pa" ] && [ "$pa" = "$pb" ] && grep -q "^op 200000 " <<<"$pa"; then ok "stats: phase totals equal ($(tr '\n' ';' <<<"$pa"))"
else bad "stats: default [$pa] vs keep-all [$pb]"; fi

rows=$("$pp" diff --json "$t/a.db" "$t/b.db" | python3 -c 'import json, sys
for r in json.load(sys.stdin)["rows"]:
    if r["kind"] >= 0: print(r["name"], r["count_a"] == r["count_b"], r["a_ns"] == r["b_ns"], r["verdict"])')
if [ -n "$rows" ] && ! grep -qv " True True same$" <<<"$rows"; then ok "diff: every phase row equal"
else bad "diff rows: $rows"; fi

table() { "$pp" report -o "$t/r.html" "$1" >/dev/null 2>&1
  python3 -c 'import sys, re
s = open(sys.argv[1]).read()
m = re.search(r"<th>phase kind</th>.*?</table>", s, re.S)
print(m.group(0) if m else "")' "$t/r.html"; }
ta=$(table "$t/a.db") tb=$(table "$t/b.db")
if [ -n "$ta" ] && [ "$ta" = "$tb" ] && grep -q ">200000<" <<<"$ta"; then ok "report: phase totals table equal"
else bad "report tables differ: [$ta] vs [$tb]"; fi
exit $fail
