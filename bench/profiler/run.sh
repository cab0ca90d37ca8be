#!/usr/bin/env bash
# Recorder cost per event, ingest rate vs a plain SQLite loop, and the cost
# curve of `record` on span-heavy programs: post-exit wait, peak memory and
# database bytes per event at 10^5, 10^6, 10^7 span events (2 threads), with
# SQLite's own `.import` of the same span rows as a floor, side by side.
# Usage: bench/profiler/run.sh [BUILD_DIR]
set -eu
b=${1:-build}
pp=$b/phaseprof
spans=$b/bench/profiler/bench_t_spans
"$b/bench/profiler/bench_recorder"
"$b/bench/profiler/bench_ingest"
[ -x "$pp" ] && [ -x "$spans" ] || { echo "run.sh: build phaseprof and bench_t_spans first" >&2; exit 1; }
tmp=$(mktemp -d /tmp/pp-bench-profiler-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# one `record` of N events: prints "wall_s child_s maxrss_kb db_bytes"
rec() { # rec N [record options]
  local n=$1; shift
  rm -f "$tmp/r.db"
  /usr/bin/time -f "%e %M" -o "$tmp/time" \
    "$pp" record "$@" -o "$tmp/r.db" -- /usr/bin/time -f "child %e" "$spans" "$n" 2 >/dev/null 2>"$tmp/err"
  local child; child=$(sed -n 's/^child //p' "$tmp/err" | tail -n1)
  echo "$(cat "$tmp/time") $child $(stat -c %s "$tmp/r.db")"
}

echo
echo "record, span events from 2 threads (bench_t_spans; $(nproc) CPUs; $(date -u +%Y-%m-%dT%H:%MZ))"
echo "  peak RSS is the larger of record and the recorded program (wait4 rusage)"
printf "  %-9s %-16s %10s %10s %11s %10s %9s\n" events mode "wall s" "post-exit" "peak MB" "db MB" "B/event"
for n in 100000 1000000 10000000; do
  for mode in default keep-all; do
    [ $mode = keep-all ] && [ $n = 10000000 ] && [ -z "${PP_BENCH_KEEP_ALL_1E7:-}" ] && continue
    opt=(); [ $mode = keep-all ] && opt=(--keep-all-spans)
    read -r wall rss child bytes < <(rec $n "${opt[@]}")
    awk -v n=$n -v m=$mode -v w="$wall" -v c="$child" -v r="$rss" -v d="$bytes" 'BEGIN {
      printf "  %-9d %-16s %10.2f %10.2f %11.1f %10.1f %9.1f\n", n, m, w, w - c, r / 1024, d / 1e6, d / n }'
  done
done

# ingest of the same 10^6-event spool (every span kept) vs SQLite's own
# .import of the resulting span rows into an identical table: the floor
"$pp" record --keep-spools --keep-all-spans -o "$tmp/k.db" -- "$spans" 1000000 2 >/dev/null 2>"$tmp/err"
dir=$(sed -n 's/^phaseprof: spool files kept in \([^ ]*\).*/\1/p' "$tmp/err")
rm -f "$tmp/i.db"
s=$(date +%s%N)
"$pp" ingest --keep-all-spans -o "$tmp/i.db" "$dir"/*.spool >/dev/null
e=$(date +%s%N)
ours=$(( (e - s) / 1000000 ))
rows=$(sqlite3 "$tmp/i.db" "SELECT count(*) FROM spans")
sqlite3 -csv "$tmp/i.db" "SELECT id,run_id,tid,kind,name_id,start_ns,end_ns,depth,parent_id,step FROM spans" > "$tmp/spans.csv"
rm -rf "$dir"
s=$(date +%s%N)
sqlite3 "$tmp/floor.db" "CREATE TABLE spans(id INTEGER PRIMARY KEY, run_id INTEGER, tid INTEGER,
  kind INTEGER, name_id INTEGER, start_ns INTEGER, end_ns INTEGER, depth INTEGER, parent_id INTEGER, step INTEGER);" \
  ".import --csv $tmp/spans.csv spans" "CREATE INDEX spans_run ON spans(run_id, tid, start_ns);
  CREATE INDEX spans_kind ON spans(run_id, kind);"
e=$(date +%s%N)
floor=$(( (e - s) / 1000000 ))
echo
echo "ingest of a 10^6-event spool, every span kept ($rows span rows, indexes included):"
echo "  phaseprof ingest  ${ours} ms   (spool walk, CRCs, clock conversion, spans, threads, close)"
echo "  sqlite3 .import   ${floor} ms   (the same rows from CSV, same indexes: the floor)"
# the views of that every-span database: stats with the rules run (as on a
# run never diagnosed), report, and both trace exports (peak RSS, size)
view() { # view TAG command...
  local tag=$1; shift
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >/dev/null 2>&1
  read -r w r < "$tmp/time"
  printf "  %-24s %6.2f s %8.1f MB peak\n" "$tag" "$w" "$(awk -v r="$r" 'BEGIN { print r / 1024 }')"
}
echo
echo "views of that database (every span kept):"
sqlite3 "$tmp/i.db" "DELETE FROM run_meta WHERE key='diag.findings'; DELETE FROM findings;"
view "stats (rules run)" "$pp" stats "$tmp/i.db"
view "report" "$pp" report -o "$tmp/i.html" "$tmp/i.db"
view "export chrome" "$pp" export -f chrome -o "$tmp/i.json" "$tmp/i.db"
view "export perfetto" "$pp" export -f perfetto -o "$tmp/i.pftrace" "$tmp/i.db"
echo "  sizes: report $(stat -c %s "$tmp/i.html") B, chrome $(stat -c %s "$tmp/i.json") B, perfetto $(stat -c %s "$tmp/i.pftrace") B"
rm -f "$tmp/i.json" "$tmp/i.pftrace"

# Perfetto's trace_processor loading the same spans (Chrome JSON export);
# Debian packages no Perfetto, so it runs only where one is on PATH
tp=$(command -v trace_processor_shell || command -v trace_processor || true)
if [ -n "$tp" ]; then
  "$pp" export -f chrome -o "$tmp/k.json" "$tmp/i.db"
  s=$(date +%s%N)
  "$tp" -q <(echo "SELECT count(*) FROM slice;") "$tmp/k.json" >/dev/null 2>&1
  e=$(date +%s%N)
  echo "  trace_processor   $(( (e - s) / 1000000 )) ms   (the same spans as Chrome JSON, loaded and counted)"
else
  echo "  trace_processor   (not installed: Debian packages no Perfetto; the .import floor stands in)"
fi
