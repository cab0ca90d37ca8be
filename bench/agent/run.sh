#!/usr/bin/env bash
# Overhead of the agent in default mode, side by side:
#   a 10^7 malloc/free loop (target <= 1.3x) and
#   /usr/bin/python3 -c 'import numpy' (target <= 1.10x),
# plain vs `phaseprof record`, and under heaptrack, `perf record -g` and
# ltrace when installed.
# Usage: bench/agent/run.sh BUILD_DIR [REPEATS]   (median of REPEATS, default 21:
# on this 2-core VM plain's own median moves by 3 % between sets of 11; the
# peers, 14-19x slower, run at most 5 times)
set -euo pipefail
build=$(cd "${1:?usage: run.sh BUILD_DIR [REPEATS]}" && pwd) # absolute: heaptrack runs from a temp folder
reps=${2:-21}
peer_reps=$(( reps < 5 ? reps : 5 ))
pp=$build/phaseprof
loop=$build/bench/agent/bench_agent_loop
[ -x "$pp" ] || { echo "run.sh: $pp missing (build first)" >&2; exit 1; }
[ -x "$loop" ] || { echo "run.sh: $loop missing (build the bench_agent_loop target)" >&2; exit 1; }
py=/usr/bin/python3
tmp=$(mktemp -d /tmp/pp-bench-agent-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# median wall time in ms of a command line, run $reps times
median_ms() {
  local t=()
  for _ in $(seq "$reps"); do
    local s e
    s=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    e=$(date +%s%N)
    t+=($(( (e - s) / 1000 )))
  done
  printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

row() { # label plain_ms ms
  awk -v l="$1" -v p="$2" -v m="$3" 'BEGIN {printf "  %-28s %9.1f ms  %6.2fx\n", l, m, m / p}'
}

n=10000000
echo "agent overhead (median of $reps runs; $(nproc) CPUs; $(date -u +%Y-%m-%d))"
"$py" -c 'import numpy' # warm the page cache
for w in loop numpy; do
  if [ $w = loop ]; then
    echo "malloc/free loop, $n pairs (target <= 1.3x):"
    cmd=("$loop" "$n")
  else
    echo "python3 -c 'import numpy' (target <= 1.10x):"
    cmd=("$py" -c 'import numpy')
  fi
  # plain, recorded and agent-only runs interleaved, so a busy neighbour
  # slows all three alike; medians of each
  pl=() rc=() ra=() ag=()
  for _ in $(seq "$reps"); do
    pl+=("$(reps=1 median_ms "${cmd[@]}")")
    # a new database each time (what `record -o new.db` costs), and one
    # that grows run by run (appending: the existing file is checked first)
    rm -f "$tmp/new.db"
    rc+=("$(reps=1 median_ms "$pp" record -o "$tmp/new.db" -- "${cmd[@]}")")
    ra+=("$(reps=1 median_ms "$pp" record -o "$tmp/bench.db" -- "${cmd[@]}")")
    # the agent alone: preloaded, spool written, no launcher and no ingest
    ag+=("$(PHASEPROF_OUT="$tmp/agent.spool" reps=1 median_ms env LD_PRELOAD="$build/libphaseprof-agent.so" "${cmd[@]}")")
  done
  med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  plain=$(med "${pl[@]}")
  row "plain" "$plain" "$plain"
  row "phaseprof record, new db" "$plain" "$(med "${rc[@]}")"
  row "phaseprof record, appending" "$plain" "$(med "${ra[@]}")"
  row "agent only (no ingest)" "$plain" "$(med "${ag[@]}")"
  rm -f "$tmp/bench.db" "$tmp/new.db" "$tmp/agent.spool"
  if command -v heaptrack >/dev/null; then
    ht=$(cd "$tmp" && reps=$peer_reps median_ms timeout 300 heaptrack -o "$tmp/ht" "${cmd[@]}")
    row "heaptrack" "$plain" "$ht"
    rm -f "$tmp"/ht*
  else
    echo "  heaptrack                    (not installed)"
  fi
  # perf record samples (default 4 kHz) with call graphs: the sampling peer
  if command -v perf >/dev/null && perf record -q -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
    pr=$(reps=$peer_reps median_ms perf record -q -g -o "$tmp/perf.data" -- "${cmd[@]}")
    row "perf record -g" "$plain" "$pr"
    rm -f "$tmp"/*.data
  else
    echo "  perf record -g               (cannot record here: not installed or perf_event_open refused)"
  fi
  if command -v ltrace >/dev/null; then
    # ltrace stops at every traced call: a shorter loop, one run, 120 s cap
    if [ $w = loop ]; then lcmd=("$loop" 100000); lp=$(median_ms "${lcmd[@]}"); else lcmd=("${cmd[@]}"); lp=$plain; fi
    s=$(date +%s%N)
    if timeout 120 ltrace -f -c -o "$tmp/lt" -e malloc+free "${lcmd[@]}" >/dev/null 2>&1; then
      e=$(date +%s%N)
      row "ltrace -e malloc+free$([ $w = loop ] && echo ' (10^5)')" "$lp" "$(( (e - s) / 1000000 ))"
    else
      echo "  ltrace -e malloc+free        (did not finish in 120 s)"
    fi
  else
    echo "  ltrace                       (not installed)"
  fi
done
