#!/usr/bin/env bash
# tests/gpu/progs/torch_loop.py on the CPU, so the program gpu-check.sh runs
# on the GPU keeps working with the PyTorch at hand: the loop under
# torch.profiler (its trace read by gpu_compare.py's reader: 0 kernels on
# the CPU) and under `phaseprof record` (one step phase per iteration).
# Skipped (77) without a Python that imports torch.
#   torch_loop_cpu.sh ROOT PHASEPROF
set -u
ROOT=$1
PHASEPROF=$2
PY=${TORCH_PYTHON:-/usr/bin/python3}
"$PY" -c 'import torch' > /dev/null 2>&1 || { echo "no torch for $PY"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ppgpu-torch.XXXXXX")
trap 'rm -rf "$T"' EXIT
PROG=$ROOT/tests/gpu/progs/torch_loop.py
fails=0
die() { echo "FAIL: $*"; fails=$((fails + 1)); }

(cd "$T" && "$PY" "$PROG" --device cpu --steps 3 --batch 16 --workers 0 --profile "$T/trace.json") > "$T/prof.out" 2>&1 ||
	die "under torch.profiler: $(tail -n 3 "$T/prof.out")"
grep -qE "^torch_loop: steps=3 device=cpu loss=[0-9.]+ trace=$T/trace.json\$" "$T/prof.out" || die "output: $(cat "$T/prof.out")"
"$PY" - "$ROOT/scripts" "$T/trace.json" <<'PYEOF' || die "trace not readable by gpu_compare"
import sys
sys.path.insert(0, sys.argv[1])
import gpu_compare
r = gpu_compare.read_torch_trace(sys.argv[2])
assert r["kernels"] == 0, r
PYEOF

"$PHASEPROF" record -q -o "$T/rec.db" -- "$PY" "$PROG" --device cpu --steps 3 --batch 16 --workers 0 > "$T/rec.out" 2>&1 ||
	die "under record: $(tail -n 3 "$T/rec.out")"
grep -q '^torch_loop: steps=3 device=cpu' "$T/rec.out" || die "record output: $(cat "$T/rec.out")"
n=$("$PY" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM spans s JOIN phase_kinds k ON k.id = s.kind WHERE k.name = '"'step'"'").fetchone()[0])' "$T/rec.db")
[ "$n" = 3 ] || die "record: $n step phases, wanted 3"
[ $fails -eq 0 ] || exit 1
echo "torch_loop.py on the CPU: ok (3 steps under torch.profiler and under record)"
