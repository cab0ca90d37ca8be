#!/usr/bin/env bash
# Viewer benchmarks: report generation time and size at 10^5 and 10^6 events
# (fixture recordings), then `stats`, `report` and `diff` on recordings of
# 10^5, 10^6 and 10^7 span events from 2 threads (bench_t_spans under
# `phaseprof record`), default (short leaf spans folded into span_groups)
# and --keep-all-spans (a row per span: the hard case). Each time is the
# median of 3 runs; the load average is printed beside them.
# usage: bench/viewers/run.sh BUILD_DIR [EVENTS...]
set -eu
build=${1:?usage: run.sh BUILD_DIR [EVENTS...]}
shift
sizes=${*:-100000 1000000 10000000}
"$build/bench/viewers/bench_report" 100000 1000000
pp=$build/phaseprof
spans=$build/bench/profiler/bench_t_spans
[ -x "$pp" ] && [ -x "$spans" ] || { echo "run.sh: build phaseprof and bench_t_spans first" >&2; exit 1; }
tmp=$(mktemp -d /tmp/pp-bench-viewers-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# median wall seconds of 3 runs of a phaseprof command
med() {
  for i in 1 2 3; do
    s=$(date +%s%N); "$pp" "$@" >/dev/null 2>&1 || { echo "fail"; return; }; e=$(date +%s%N)
    echo $(( (e - s) / 1000000 ))
  done | sort -n | sed -n 2p | awk '{ printf "%.2f", $1 / 1000 }'
}

echo
echo "stats / report / diff on recordings of span events, 2 threads (medians of 3; $(nproc) CPUs)"
printf "  %-9s %-9s %9s %8s %9s %9s %9s %8s  %s\n" events mode "span rows" "db MB" "stats s" "report s" "diff s" "html MB" "load average"
for n in $sizes; do
  for mode in default keep-all; do
    opt=(); [ $mode = keep-all ] && opt=(--keep-all-spans)
    for x in a b; do
      rm -f "$tmp/$x.db"
      "$pp" record "${opt[@]}" -o "$tmp/$x.db" -- "$spans" "$n" 2 >/dev/null 2>&1
    done
    rows=$(sqlite3 "$tmp/a.db" "SELECT count(*) FROM spans")
    st=$(med stats "$tmp/a.db")
    rp=$(med report -o "$tmp/a.html" "$tmp/a.db")
    df=$(med diff "$tmp/a.db" "$tmp/b.db")
    awk -v n="$n" -v m="$mode" -v r="$rows" -v d="$(stat -c %s "$tmp/a.db")" -v s="$st" -v p="$rp" -v f="$df" \
        -v h="$(stat -c %s "$tmp/a.html")" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
      printf "  %-9d %-9s %9d %8.1f %9s %9s %9s %8.2f  %s\n", n, m, r, d / 1e6, s, p, f, h / 1e6, l }'
  done
done
echo "(targets at 10^7 events: each <= 5 s, report <= 10 MB)"
