#!/usr/bin/env bash
# Cost of Python frames in CPU samples: a pure-Python loop 20 frames deep
# (py_loop.py) at --sample 1000 with native frames only (CPython version refused through
# PHASEPROF_PYSTACK_FAKE_VERSION) vs native + Python frames, the agent alone
# (preloaded, spool written, no ingest), runs interleaved; median wall and
# CPU (user+sys) time of REPEATS runs. Prints figures; never asserts.
# Usage: bench/agent/pystack.sh BUILD_DIR [REPEATS] [N] [DEPTH]
set -euo pipefail
build=${1:?usage: pystack.sh BUILD_DIR [REPEATS] [N]}
reps=${2:-7}
n=${3:-3000000}
depth=${4:-20}
agent=$build/libphaseprof-agent.so
[ -f "$agent" ] || { echo "pystack.sh: $agent missing (build first)" >&2; exit 1; }
here=$(cd "$(dirname "$0")/../.." && pwd)
target=$here/bench/agent/py_loop.py
py=${PYTHON:-/usr/bin/python3} # PYTHON=.../python3.13: another interpreter
tmp=$(mktemp -d /tmp/pp-bench-pystack-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# one run: "wall_ms cpu_ms"
one() {
  /usr/bin/time -f '%e %U %S' -o "$tmp/t" "$@" >/dev/null 2>&1 || true
  awk '{printf "%.1f %.1f\n", $1 * 1000, ($2 + $3) * 1000}' "$tmp/t"
}
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

agent_env=(PHASEPROF_OUT="$tmp/a.spool" PHASEPROF_SAMPLE_HZ=1000 LD_PRELOAD="$agent")

: >"$tmp/plain"; : >"$tmp/native"; : >"$tmp/python"
for _ in $(seq "$reps"); do
  one "$py" "$target" "$n" "$depth" >>"$tmp/plain"
  one env "${agent_env[@]}" PHASEPROF_PYSTACK_FAKE_VERSION=0.0 "$py" "$target" "$n" "$depth" >>"$tmp/native"
  one env "${agent_env[@]}" "$py" "$target" "$n" "$depth" >>"$tmp/python"
  rm -f "$tmp/a.spool"
done 2>/dev/null
echo "Python frames in samples, 1 kHz, $py $target $n $depth (median of $reps; $(nproc) CPUs; load $(cut -d' ' -f1 /proc/loadavg))"
pw=$(cut -d' ' -f1 "$tmp/plain" | med); pc=$(cut -d' ' -f2 "$tmp/plain" | med)
for k in plain native python; do
  w=$(cut -d' ' -f1 "$tmp/$k" | med); c=$(cut -d' ' -f2 "$tmp/$k" | med)
  awk -v l="$k" -v w="$w" -v c="$c" -v pw="$pw" -v pc="$pc" \
    'BEGIN {printf "  %-8s wall %8.1f ms (%5.3fx)   cpu %8.1f ms (%5.3fx)\n", l, w, w / pw, c, c / pc}'
done
