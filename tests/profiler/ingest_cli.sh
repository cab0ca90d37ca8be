#!/usr/bin/env bash
# `phaseprof ingest` and `record`'s post-run path end to end: leftover spools
# ingested, bad input refused with the file named, a full disk (RLIMIT_FSIZE)
# fails cleanly keeping earlier runs, nothing recorded is an error, and two
# concurrent records each report exactly their own runs; stats, diff and
# report read the same whether short spans were folded or all kept.
# Usage: ingest_cli.sh PHASEPROF T_SPANS
set -u
pp=$1 spans=$2
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }

# a leftover spool, kept by record
"$pp" record --keep-spools -o "$t/a.db" -- "$spans" 200000 1 >/dev/null 2>"$t/rec.err"
dir=$(sed -n 's/^phaseprof: spool files kept in \([^ ]*\).*/\1/p' "$t/rec.err")
spool=$(ls "$dir"/*.spool 2>/dev/null | head -n1)
[ -f "$spool" ] || { bad "record --keep-spools left no spool: $(cat "$t/rec.err")"; exit 1; }
cp "$spool" "$t/left.spool"
rm -rf "$dir"

out=$("$pp" ingest -o "$t/b.db" "$t/left.spool" 2>&1); rc=$?
# 200,000 spans, 100 steps with their step.cpu_ns counter, a few more
if [ $rc = 0 ] && grep -q "left.spool: run 1, complete, 2003.. events" <<<"$out"; then ok "ingest a leftover spool"
else bad "ingest: rc=$rc $out"; fi
[ "$(sqlite3 "$t/b.db" "SELECT count(*) FROM spans") " != "0 " ] || bad "ingest stored no spans"

out=$("$pp" ingest -o "$t/b.db" /etc/hostname 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "/etc/hostname: not a phaseprof spool" <<<"$out" && [ "$(wc -l <<<"$out")" = 1 ]; then ok "ingest refuses a non-spool"
else bad "ingest /etc/hostname: rc=$rc $out"; fi

# the same spool again (ingest after a kill between record's commit and its
# clean-up, or run twice): refused with one line, stored once (issue 22)
out=$("$pp" ingest -o "$t/b.db" "$t/left.spool" 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "left.spool: already stored as run 1" <<<"$out" && [ "$(wc -l <<<"$out")" = 1 ] &&
   [ "$(sqlite3 "$t/b.db" "SELECT count(*) FROM runs")" = 1 ]; then ok "ingest refuses a spool already stored"
else bad "ingest twice: rc=$rc $out"; fi

# a disk that fills up: the ingest fails with a message, no signal kills
# it, the database keeps its earlier run and stays valid
"$pp" record -q -o "$t/c.db" -- /bin/true >/dev/null 2>&1
kb=$(( $(stat -c %s "$t/c.db") / 1024 + 64 ))
out=$( (ulimit -f "$kb"; "$pp" ingest --keep-all-spans -o "$t/c.db" "$t/left.spool") 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "left.spool failed" <<<"$out"; then ok "ingest on a full disk fails cleanly"
else bad "full disk: rc=$rc (want 1, not 128+SIGXFSZ) $out"; fi
chk=$(sqlite3 "$t/c.db" "PRAGMA integrity_check; SELECT count(*) FROM runs;" 2>&1 | tr '\n' ' ')
[ "$chk" = "ok 1 " ] && ok "database valid with its earlier run" || bad "after a full disk: $chk"

# nothing recorded: the program removed the spool folder under the agent
out=$("$pp" record -o "$t/d.db" -- /bin/sh -c 'rm -rf "$PHASEPROF_SPOOL_DIR"' 2>&1); rc=$?
if [ $rc = 3 ] && grep -q "nothing was recorded" <<<"$out"; then ok "record with nothing recorded exits 3"
else bad "nothing recorded: rc=$rc $out"; fi
# the database record made while the program ran is not left behind
if ls "$t"/d.db* >/dev/null 2>&1; then bad "nothing recorded, yet $(ls "$t"/d.db*) left"
else ok "nothing recorded leaves no database"; fi
# an existing database, opened while the program ran, stays as it was
"$pp" record -o "$t/k.db" -- /bin/true 2>/dev/null
"$pp" record -o "$t/k.db" -- /bin/sh -c 'rm -rf "$PHASEPROF_SPOOL_DIR"' >/dev/null 2>&1; rc=$?
n=$(sqlite3 "$t/k.db" "SELECT count(*) FROM runs" 2>&1)
if [ $rc = 3 ] && [ "$n" = 1 ] && ! ls "$t"/k.db-* >/dev/null 2>&1; then ok "nothing recorded keeps an existing database"
else bad "nothing recorded into an existing database: rc=$rc runs=$n $(ls "$t"/k.db*)"; fi

# an SQLite file with no tables yet (what a record creating it leaves for a
# moment) is a database record may fill: record's own check refused it
sqlite3 "$t/z.db" "PRAGMA journal_mode=WAL" >/dev/null
if "$pp" record -o "$t/z.db" -- /bin/true 2>"$t/z.err" && [ "$(sqlite3 "$t/z.db" "SELECT count(*) FROM runs")" = 1 ]
then ok "an empty SQLite file is filled"; else bad "empty SQLite file refused: $(cat "$t/z.err")"; fi

# two records at once into one database, each with 6 processes: each names
# exactly its own runs (10 rounds: the second opens while the first creates)
for round in 1 2 3 4 5 6 7 8 9 10; do
rm -f "$t"/e.db*
for k in 1 2; do
  "$pp" record -o "$t/e.db" -- /bin/sh -c "/bin/true m$k; /bin/true; /bin/true; /bin/true; /bin/true" \
    2>"$t/e$k.err" >/dev/null &
done
wait
ids() { sed -n 's/.* recorded into [^ ]* (runs* \([0-9., ]*\)).*/\1/p' "$1" |
  tr ',' '\n' | awk -F'[.][.]' '{ if (NF == 2) for (i = $1 + 0; i <= $2 + 0; i++) print i; else if ($1 != "") print $1 + 0 }' | sort -n; }
# the parser itself: split ranges after the first once read " 11" as a string
[ "$round" = 1 ] && { printf 'phaseprof: 6 runs recorded into x.db (runs 1..4, 11..12); ok\n' >"$t/ids.t"
  [ "$(ids "$t/ids.t" | tr '\n' ' ')" = "1 2 3 4 11 12 " ] || bad "run-list parser: $(ids "$t/ids.t" | tr '\n' ' ')"; }
ids "$t/e1.err" > "$t/ids1"; ids "$t/e2.err" > "$t/ids2"
all=$(sqlite3 "$t/e.db" "SELECT id FROM runs ORDER BY id" | tr '\n' ' ')
mine=$(sort -n "$t/ids1" "$t/ids2" | tr '\n' ' ')
both=$(comm -12 <(sort "$t/ids1") <(sort "$t/ids2") | tr '\n' ' ')
if [ -z "$both" ] && [ "$mine" = "$all" ] && [ "$(wc -l <"$t/ids1")" = 6 ]; then ok "concurrent records report their own runs"
else bad "concurrent: record 1 [$(tr '\n' ' ' <"$t/ids1")] record 2 [$(tr '\n' ' ' <"$t/ids2")] db [$all]"; cat "$t/e1.err" "$t/e2.err"; fi
# and each listed run belongs to its own session (same top-level pid tree)
for k in 1 2; do
  top=$(head -n1 "$t/ids$k")
  n=$(sqlite3 "$t/e.db" "WITH RECURSIVE d(id) AS (SELECT $top UNION ALL SELECT r.id FROM runs r JOIN d ON r.parent_run = d.id) SELECT count(*) FROM d WHERE id IN ($(paste -sd, "$t/ids$k"))")
  [ "$n" = 6 ] || bad "record $k: its runs are not one session ($n of 6)"
done
done
# a program whose ELF section-header offset overflows (it still runs: the
# loader needs no section headers): sampling it symbolises against a file
# that must be bounds-checked, not read through
cp "$spans" "$t/hostile"
/usr/bin/python3 - "$t/hostile" <<'PY'
import struct, sys
f = open(sys.argv[1], 'r+b')
f.seek(0x28); f.write(struct.pack('<Q', 2**64 - 64))  # e_shoff: + e_shnum * 64 wraps
PY
out=$("$pp" record --sample 2000 -o "$t/h.db" -- "$t/hostile" 3000000 1 2>&1); rc=$?
n=$(sqlite3 "$t/h.db" "SELECT count(*) FROM samples WHERE typeof(stack) = 'integer'" 2>/dev/null)
if [ $rc = 0 ] && [ "${n:-0}" -gt 0 ]; then ok "record --sample on an ELF with an overflowing section-header offset ($n samples)"
else bad "hostile ELF: rc=$rc samples=$n $out"; fi

# the numbers a user sees do not depend on --keep-all-spans: the leftover
# spool (100,000 op spans of 8 names on one thread: 12,500 a name, past
# the 10,000 kept by default) ingested both ways reads the same in stats,
# diff and report
"$pp" ingest -o "$t/fold.db" "$t/left.spool" >/dev/null 2>&1 || bad "ingest (folding)"
"$pp" ingest --keep-all-spans -o "$t/all.db" "$t/left.spool" >/dev/null 2>&1 || bad "ingest --keep-all-spans"
folded=$(sqlite3 "$t/fold.db" "SELECT COALESCE(sum(count), 0) FROM span_groups")
[ "${folded:-0}" -gt 0 ] && ok "default ingest folded $folded spans" || bad "nothing folded: the next checks test nothing"
phases() { "$pp" stats --json "$1" | /usr/bin/python3 -c 'import json, sys
for p in json.load(sys.stdin)["runs"][0]["phases"]: print(p["kind"], p["count"], p["total_ns"], p["max_ns"])'; }
pa=$(phases "$t/fold.db") pb=$(phases "$t/all.db")
if [ -n "$pa" ] && [ "$pa" = "$pb" ] && grep -q "^op 100000 " <<<"$pa"; then ok "stats: phase totals equal ($(tr '\n' ';' <<<"$pa"))"
else bad "stats: default [$pa] vs keep-all [$pb]"; fi
rows=$("$pp" diff --json "$t/fold.db" "$t/all.db" | /usr/bin/python3 -c 'import json, sys
for r in json.load(sys.stdin)["rows"]:
    if r["kind"] >= 0: print(r["name"], r["count_a"] == r["count_b"], r["a_ns"] == r["b_ns"], r["verdict"])')
if [ -n "$rows" ] && ! grep -qv " True True same$" <<<"$rows"; then ok "diff: every phase row equal"
else bad "diff rows: $rows"; fi
table() { "$pp" report -o "$t/r.html" "$1" >/dev/null 2>&1
  /usr/bin/python3 -c 'import re, sys
m = re.search(r"<th>phase kind</th>.*?</table>", open(sys.argv[1]).read(), re.S)
print(m.group(0) if m else "")' "$t/r.html"; }
ta=$(table "$t/fold.db") tb=$(table "$t/all.db")
if [ -n "$ta" ] && [ "$ta" = "$tb" ] && grep -q ">100000<" <<<"$ta"; then ok "report: phase totals table equal"
else bad "report tables differ: [$ta] vs [$tb]"; fi
exit $fail
