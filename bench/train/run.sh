#!/usr/bin/env bash
# Training step: flow (graph and eager) and, when Debian's python3-torch is
# installed, PyTorch's CPU step on this machine — with Debian's default BLAS
# (netlib reference) and with OpenBLAS (libopenblas0-pthread via
# LD_LIBRARY_PATH), over torch threads x OpenBLAS threads. Figures only.
# usage: bench/train/run.sh BUILD_DIR [STEPS]
set -eu
b=${1:-build}
steps=${2:-50}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
ncpu=$(nproc)
bin=$b/bench/train/bench_train_step
[ -x "$bin" ] || bin=$(find "$b" -name bench_train_step -type f -perm -u+x | head -1)
echo "== flow (FLOW_THREADS=$ncpu)"
FLOW_THREADS=$ncpu "$bin" "$steps" | sed "s/^flow \(graph\|eager\)/& t=$ncpu/" | tee -a "$out"
if [ "${ncpu}" -gt 1 ]; then
  echo "== flow (FLOW_THREADS=1, OPENBLAS_NUM_THREADS=1)"
  FLOW_THREADS=1 OPENBLAS_NUM_THREADS=1 "$bin" "$steps" | sed "s/^flow \(graph\|eager\)/& t=1/" | tee -a "$out"
fi
summary() {
  echo "== best median step, wall and process CPU time (machine load: $(cut -d' ' -f1-3 /proc/loadavg))"
  for who in "flow graph" "flow eager" "torch"; do
    for what in "median step" "cpu"; do
      grep "^$who" "$out" | sed "s/ *:.*$what *\([0-9.]*\) ms.*/ \1/" |
        awk -v w="$who" -v k="$what" '{ if (best == "" || $NF < best) { best = $NF; $NF = ""; cfg = $0 } }
          END { if (best != "") printf "  %-11s %-11s %8.2f ms  (%s)\n", w, k, best, cfg }'
    done
  done
}
py=/usr/bin/python3
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "== PyTorch: not installed (apt-get install python3-torch) — skipped"
  summary
  exit 0
fi
ob=/usr/lib/x86_64-linux-gnu/openblas-pthread
nb=/usr/lib/x86_64-linux-gnu/blas
# Which libblas.so.3 the alternatives system picks (torch links libblas.so.3).
echo "== libblas.so.3 -> $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo '?')"
echo "== PyTorch (Debian python3-torch), same model, batch and optimiser"
threads="1"
[ "$ncpu" -gt 1 ] && threads="1 $ncpu"
for tt in $threads; do
  [ -e "$nb/libblas.so.3" ] &&
    LD_LIBRARY_PATH=$nb "$py" "$here/torch_step.py" "$steps" "$tt" "netlib-blas t=$tt" | tee -a "$out"
  for ot in $threads; do
    [ -e "$ob/libblas.so.3" ] &&
      LD_LIBRARY_PATH=$ob OPENBLAS_NUM_THREADS=$ot "$py" "$here/torch_step.py" "$steps" "$tt" "openblas t=$tt ob=$ot" | tee -a "$out"
  done
done
summary
