#!/usr/bin/env bash
# --keep-all-spans in bounded memory, and every span kept: record (its
# ingest with the indexes built after, sorting on temporary files, and the
# diagnostics), stats with the rules run again, report, and the streamed
# Perfetto and Chrome exports of 1.3*10^6 span events from 2 threads, each under a peak
# RSS far below what holding every span costs (the report held 65 MB at
# 10^6 spans before, the record 590 MB at 10^7). Memory only: timing is in
# bench/profiler. Usage: keep_all_bounded.sh PHASEPROF T_SPANS
set -u
pp=$1 spans=$2
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
# peak RSS in MB of a command (its stdout and stderr into $t/out)
peak() { /usr/bin/time -f "%M" -o "$t/rss" "$@" >"$t/out" 2>&1; local rc=$?; echo $(( $(tail -n1 "$t/rss") / 1024 )); return $rc; }

# 1.3*10^6 events: a spool over the 4 MiB from which indexes are deferred
n=1300000
mb=$(peak "$pp" record --keep-spools --keep-all-spans -o "$t/k.db" -- "$spans" $n 2) || { bad "record: $(cat "$t/out")"; exit 1; }
spool_dir=$(sed -n 's/^phaseprof: spool files kept in \([^ ]*\).*/\1/p' "$t/out")
[ "$mb" -le 200 ] && ok "record --keep-all-spans of $n events: peak $mb MB" || bad "record peak $mb MB > 200"
# every span in: per thread 325,000 ops and 325 steps
rows=$(sqlite3 "$t/k.db" "SELECT count(*) FROM spans; SELECT count(*) FROM span_groups;" | tr '\n' ' ')
[ "$rows" = "650650 0 " ] && ok "650,650 span rows, none grouped" || bad "spans, groups: $rows"
idx=$(sqlite3 "$t/k.db" "SELECT count(*) FROM sqlite_master WHERE name IN ('spans_run','spans_kind')")
[ "$idx" = 2 ] && ok "span indexes built" || bad "span indexes: $idx"

# The same spans whichever way the rows go in: the spool ingested into a
# new file (indexes deferred and built after, in bulk) and into a file that
# already holds a run (indexes kept up row by row) gives the same rows as
# the record, ids and parent links taken relative to the run's first id,
# names as text.
# Each op's parent is the step span of its thread that contains it.
spool=$(ls "$spool_dir"/*.spool 2>/dev/null | head -n1)
spans_sum() { # spans_sum DB: checksum of the largest run's span rows
	sqlite3 "$1" "WITH r AS (SELECT run_id AS rid, min(id) AS lo FROM spans GROUP BY run_id ORDER BY count(*) DESC LIMIT 1)
	  SELECT s.id - lo, tid, kind, n.value, start_ns, end_ns, depth, parent_id - lo, step
	  FROM spans s JOIN r ON s.run_id = rid LEFT JOIN strings n ON n.id = s.name_id ORDER BY s.id" | md5sum | cut -d' ' -f1
}
if [ -n "$spool" ]; then
	"$pp" ingest --keep-all-spans -o "$t/fresh.db" "$spool" >/dev/null 2>&1 || bad "ingest into a new file"
	"$pp" record -o "$t/old.db" -- true >/dev/null 2>&1 || bad "record of true"
	"$pp" ingest --keep-all-spans -o "$t/old.db" "$spool" >/dev/null 2>&1 || bad "ingest into an existing file"
	a=$(spans_sum "$t/k.db") b=$(spans_sum "$t/fresh.db") c=$(spans_sum "$t/old.db")
	[ "$a" = "$b" ] && [ "$a" = "$c" ] && ok "same span rows: record, new file, existing file ($a)" ||
		bad "span rows differ: record $a, new file $b, existing file $c"
	orphans=$(sqlite3 "$t/fresh.db" "SELECT count(*) FROM spans o LEFT JOIN spans p ON p.id = o.parent_id
	  WHERE o.kind = (SELECT id FROM phase_kinds WHERE name='op') AND (p.id IS NULL OR p.tid <> o.tid
	  OR p.kind <> (SELECT id FROM phase_kinds WHERE name='step') OR p.start_ns > o.start_ns OR p.end_ns < o.end_ns
	  OR o.depth <> p.depth + 1)")
	[ "$orphans" = 0 ] && ok "every op's parent is its step" || bad "$orphans ops without their step as parent"
	rm -rf "$spool_dir"
else
	bad "record --keep-spools printed no spool folder: $(cat "$t/out")"
fi

# the rules again, as on a run never diagnosed
sqlite3 "$t/k.db" "DELETE FROM run_meta WHERE key='diag.findings'; DELETE FROM findings;"
mb=$(peak "$pp" stats "$t/k.db") || bad "stats: $(cat "$t/out")"
[ "$mb" -le 64 ] && ok "stats (rules run): peak $mb MB" || bad "stats peak $mb MB > 64"
mb=$(peak "$pp" report -o "$t/r.html" "$t/k.db") || bad "report: $(cat "$t/out")"
[ "$mb" -le 64 ] && ok "report: peak $mb MB" || bad "report peak $mb MB > 64"
grep -q "leaf spans past the first 10000 of their name" "$t/r.html" && ok "report says what its timeline leaves out" ||
	bad "report does not say which spans it leaves out"
mb=$(peak "$pp" export --format perfetto -o "$t/k.pftrace" "$t/k.db") || bad "export: $(cat "$t/out")"
[ "$mb" -le 32 ] && ok "export --format perfetto: peak $mb MB" || bad "perfetto export peak $mb MB > 32"
# each span a begin and an end: at least 2 packets of >= 10 bytes a span
sz=$(stat -c %s "$t/k.pftrace")
[ "$sz" -ge $((650650 * 20)) ] && ok "perfetto trace $sz bytes" || bad "perfetto trace only $sz bytes"
# the Chrome JSON of a run this big streams its spans too
mb=$(peak "$pp" export --format chrome -o "$t/k.json" "$t/k.db") || bad "export chrome: $(cat "$t/out")"
[ "$mb" -le 32 ] && ok "export --format chrome: peak $mb MB" || bad "chrome export peak $mb MB > 32"
x=$(grep -o '"ph":"X"' "$t/k.json" | wc -l)
[ "$x" = 650650 ] && ok "chrome trace: 650,650 X events" || bad "chrome trace: $x X events, want 650650"
exit $fail
