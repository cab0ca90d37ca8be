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
mb=$(peak "$pp" record --keep-all-spans -o "$t/k.db" -- "$spans" $n 2) || { bad "record: $(cat "$t/out")"; exit 1; }
[ "$mb" -le 200 ] && ok "record --keep-all-spans of $n events: peak $mb MB" || bad "record peak $mb MB > 200"
# every span in: per thread 325,000 ops and 325 steps
rows=$(sqlite3 "$t/k.db" "SELECT count(*) FROM spans; SELECT count(*) FROM span_groups;" | tr '\n' ' ')
[ "$rows" = "650650 0 " ] && ok "650,650 span rows, none grouped" || bad "spans, groups: $rows"
idx=$(sqlite3 "$t/k.db" "SELECT count(*) FROM sqlite_master WHERE name IN ('spans_run','spans_kind')")
[ "$idx" = 2 ] && ok "span indexes built" || bad "span indexes: $idx"

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
