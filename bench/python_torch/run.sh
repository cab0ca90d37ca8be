#!/usr/bin/env bash
# Python/PyTorch overhead, side by side in one run (medians of REPEATS,
# plain / recorded / peers interleaved so a busy neighbour slows all alike):
#   torch MLP 20 steps: agent alone (target <= 1.05x), whole record with
#     ingest (<= 1.15x), torch.profiler (default activities, no shapes),
#     cProfile;
#   python3 -c 'import torch': whole record (<= 1.10x);
#   the adapter's per-step cost (<= 2% of a 5 ms step), measured in-process.
#   torch 2: the torch.compile adapter's cost per compile (<= 2%), in-process.
# Usage: bench/python_torch/run.sh BUILD_DIR [REPEATS]   (default 5)
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [REPEATS]}
reps=${2:-5}
pp=$build/phaseprof
agent=$build/libphaseprof-agent.so
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$pp" ] || { echo "run.sh: $pp missing (build first)" >&2; exit 1; }
"$py" -c 'import torch' 2>/dev/null || { echo "run.sh: $py cannot import torch; skipped"; exit 0; }
tmp=$(mktemp -d /tmp/pp-bench-python-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

ms() { # wall time of one run in ms
  local s e
  s=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  e=$(date +%s%N)
  echo $(( (e - s) / 1000000 ))
}
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
row() { awk -v l="$1" -v p="$2" -v m="$3" -v t="$4" \
  'BEGIN {printf "  %-34s %8.0f ms  %5.2fx  %s\n", l, m, m / p, t}'; }

echo "python overhead (median of $reps runs; $(nproc) CPUs; load $(cut -d' ' -f1 /proc/loadavg); $(date -u +%Y-%m-%d))"
"$py" -c 'import torch' # warm the page cache

echo "torch MLP, 20 Adam steps (bench/python_torch/mlp.py):"
pl=() ag=() rc=() tp=() cp=()
for _ in $(seq "$reps"); do
  pl+=("$(ms "$py" "$here/mlp.py")")
  ag+=("$(PHASEPROF_OUT="$tmp/agent.spool" ms env LD_PRELOAD="$agent" "$py" "$here/mlp.py")")
  rm -f "$tmp"/agent.spool*
  rc+=("$(ms "$pp" record -o "$tmp/mlp.db" -- "$py" "$here/mlp.py")")
  rm -f "$tmp/mlp.db"
  tp+=("$(ms "$py" "$here/mlp.py" profiler)")
  cp+=("$(ms "$py" -m cProfile -o "$tmp/prof.out" "$here/mlp.py")")
done
p=$(med "${pl[@]}")
row "plain" "$p" "$p" ""
row "agent alone (no ingest)" "$p" "$(med "${ag[@]}")" "(target <= 1.05x)"
row "phaseprof record (ingest included)" "$p" "$(med "${rc[@]}")" "(target <= 1.15x)"
row "torch.profiler (CPU, no shapes)" "$p" "$(med "${tp[@]}")" ""
row "cProfile" "$p" "$(med "${cp[@]}")" ""

echo "python3 -c 'import torch':"
pl=() rc=()
for _ in $(seq "$reps"); do
  pl+=("$(ms "$py" -c 'import torch')")
  rc+=("$(ms "$pp" record -o "$tmp/imp.db" -- "$py" -c 'import torch')")
  rm -f "$tmp/imp.db"
done
p=$(med "${pl[@]}")
row "plain" "$p" "$p" ""
row "phaseprof record (ingest included)" "$p" "$(med "${rc[@]}")" "(target <= 1.10x)"

echo "step tracking (bench/python_torch/step_cost.py, target <= 2% of a 5 ms step):"
"$pp" record -o "$tmp/step.db" -- "$py" "$here/step_cost.py" 2>/dev/null | sed 's/^/  /'

# torch.compile tracking (torch 2 only: the venv of install-deps.sh --torch2)
py2=${PP_TORCH2_PYTHON:-/opt/phaseprof-venv/torch2/bin/python}
if [ -x "$py2" ] && "$py2" -c 'import torch._dynamo' 2>/dev/null; then
  echo "torch.compile tracking (bench/python_torch/compile_cost.py, target <= 2% of compile time):"
  "$pp" record -o "$tmp/compile.db" -- "$py2" "$here/compile_cost.py" 2>/dev/null | sed 's/^/  /'
fi
