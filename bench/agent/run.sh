#!/usr/bin/env bash
# Overhead of the agent in default mode, side by side:
#   a 10^7 malloc/free loop (target <= 1.3x) and
#   /usr/bin/python3 -c 'import numpy' (target <= 1.10x),
# plain vs `phaseprof record`, and under heaptrack, `perf record -g` and
# ltrace when installed.
# Usage: bench/agent/run.sh BUILD_DIR [REPEATS]
# Plain, record into a new database, record appending to one that grows,
# and the agent alone run interleaved REPEATS times (default 101) by
# bench_spawn_time, which prints each one's median and the mean of its
# middle half (the figure shown: on this 2-core VM sets of 101 agree to
# ~1 %). The peers, 14-100x slower, run at most 5 times.
set -euo pipefail
build=$(cd "${1:?usage: run.sh BUILD_DIR [REPEATS]}" && pwd) # absolute: heaptrack runs from a temp folder
reps=${2:-101}
peer_reps=$(( reps < 5 ? reps : 5 ))
pp=$build/phaseprof
loop=$build/bench/agent/bench_agent_loop
spawn=$build/bench/agent/bench_spawn_time
for x in "$pp" "$loop" "$spawn"; do
  [ -x "$x" ] || { echo "run.sh: $x missing (build first)" >&2; exit 1; }
done
py=/usr/bin/python3
tmp=$(mktemp -d /tmp/pp-bench-agent-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# median wall time in ms of a command line, run $reps times (the peers)
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
  awk -v l="$1" -v p="$2" -v m="$3" 'BEGIN {printf "  %-28s %9.1f ms  %6.3fx\n", l, m, m / p}'
}

n=10000000
echo "agent overhead (mean of the middle half of $reps interleaved runs; $(nproc) CPUs; $(date -u +%Y-%m-%d))"
"$py" -c 'import numpy' # warm the page cache
# the agent alone: preloaded (and audit), spool written, no launcher and no ingest
mkdir -p "$tmp/spool"
cat > "$tmp/agent.sh" <<AGENT
#!/bin/sh
LD_PRELOAD=$build/libphaseprof-agent.so LD_AUDIT=$build/libphaseprof-agent.so \\
GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 PHASEPROF_SPOOL_DIR=$tmp/spool \\
PHASEPROF_AGENT=$build/libphaseprof-agent.so exec "\$@"
AGENT
# the same shell before plain, so the difference is the agent's
cat > "$tmp/plain.sh" <<PLAIN
#!/bin/sh
exec "\$@"
PLAIN
chmod +x "$tmp/agent.sh" "$tmp/plain.sh"
for w in loop numpy; do
  if [ $w = loop ]; then
    # 0.6 s a run: 21 rounds agree to ~1 % already
    wreps=$(( reps < 21 ? reps : 21 ))
    echo "malloc/free loop, $n pairs (target <= 1.3x; $wreps rounds):"
    cmd=("$loop" "$n")
  else
    wreps=$reps
    echo "python3 -c 'import numpy' (target <= 1.10x; $wreps rounds):"
    cmd=("$py" -c 'import numpy')
  fi
  rm -f "$tmp/bench.db"
  # a new database each time (what `record -o new.db` costs), and one that
  # grows run by run (appending: the existing file checked, the run synced)
  mapfile -t res < <("$spawn" -n "$wreps" -u "$tmp/new.db" -- "${cmd[@]}" ";;" \
    "$pp" record -o "$tmp/new.db" -- "${cmd[@]}" ";;" "$pp" record -o "$tmp/bench.db" -- "${cmd[@]}" ";;" \
    "$tmp/plain.sh" "${cmd[@]}" ";;" "$tmp/agent.sh" "${cmd[@]}")
  mid() { echo "${res[$1]}" | awk '{print $2}'; }
  plain=$(mid 0)
  row "plain" "$plain" "$plain"
  row "phaseprof record, new db" "$plain" "$(mid 1)"
  row "phaseprof record, appending" "$plain" "$(mid 2)"
  row "agent only (no ingest)" "$(mid 3)" "$(mid 4)"
  rm -f "$tmp/bench.db" "$tmp/new.db" "$tmp"/spool/*
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
