#!/usr/bin/env bash
# PyTorch programs: phaseprof beside the profilers a user would pick instead
# (issue 25, Performance), side by side in one run, for each torch there is:
#   torch 1.13: Debian's /usr/bin/python3, peers from $PHASEPROF_BENCH_VENV-torch1
#   torch 2.13: $PHASEPROF_TORCH2_VENV, peers from $PHASEPROF_BENCH_VENV
# (scripts/install-deps.sh --torch2 --bench makes them; a missing peer is
# listed as not installed).
#   compare.py    loop5ms.py (~5 ms training steps, 1 thread): plain,
#                 `record` (target <= 1.05x), `record --sample 100` (target
#                 <= py-spy at the same rate), torch.profiler (CPU), py-spy
#                 --rate 100 --nonblocking, Scalene --cpu-only, memray,
#                 pyinstrument, viztracer, cProfile; interleaved rounds, wall
#                 and CPU, medians [min-max]
#   step_cost.py  the adapter's in-process cost per step (target <= 1 % of a
#                 1 ms step), thread CPU, split into wrappers / loop tracker /
#                 counters
#   compile_cost.py  (torch 2, under record) the torch.compile adapter's own
#                 cost per compile, in-process (target <= 2 %)
#   compile_whole.py torch.compile's cold first call end to end, plain vs
#                 record, PP_BENCH_COMPILE_REPS rounds (default 3; 0 skips)
# Usage: bench/python_torch/run.sh BUILD_DIR [ROUNDS] [STEPS]   (default 3, 60)
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [ROUNDS] [STEPS]}
reps=${2:-3}
steps=${3:-60}
pp=$build/phaseprof
here=$(cd "$(dirname "$0")" && pwd)
bvenv=${PHASEPROF_BENCH_VENV:-/opt/phaseprof-venv/bench}
t2=${PHASEPROF_TORCH2_VENV:-/opt/phaseprof-venv/torch2}
[ -x "$pp" ] || { echo "run.sh: $pp missing (build first)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/pp-bench-torch-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

one() { # PYTHON PEERS-VENV
  local py=$1 peers=$2
  if ! "$py" -c 'import torch' >/dev/null 2>&1; then
    echo "($py cannot import torch: skipped)"
    return
  fi
  /usr/bin/python3 "$here/compare.py" --pp "$pp" --python "$py" --peers "$peers" \
    --reps "$reps" --steps "$steps"
  echo "step tracking ($py, bench/python_torch/step_cost.py, load average $(cut -d' ' -f1-3 /proc/loadavg)):"
  "$pp" record -q -o "$tmp/step.db" -- "$py" "$here/step_cost.py" | sed 's/^/  /'
  rm -f "$tmp/step.db"
}
one /usr/bin/python3 "$bvenv-torch1"
one "$t2/bin/python" "$bvenv"
# torch.compile: a cold compile is minutes under load; PP_BENCH_COMPILE_REPS=0 skips it
creps=${PP_BENCH_COMPILE_REPS:-3}
if "$t2/bin/python" -c 'import torch._dynamo' >/dev/null 2>&1; then
  if [ -f "$here/compile_cost.py" ]; then
    echo "torch.compile tracking (bench/python_torch/compile_cost.py, target <= 2% of compile time):"
    "$pp" record -q -o "$tmp/compile.db" -- "$t2/bin/python" "$here/compile_cost.py" | sed 's/^/  /'
    rm -f "$tmp/compile.db"
  fi
  if [ "$creps" -gt 0 ]; then
    echo "torch.compile, whole cold first call (bench/python_torch/compile_whole.py):"
    /usr/bin/python3 "$here/compile_whole.py" --pp "$pp" --python "$t2/bin/python" --reps "$creps" | sed 's/^/  /'
  fi
fi
