#!/usr/bin/env bash
# scripts/gpu-check.sh where no GPU is usable: it parses (bash -n), does the
# CPU-side steps it can with this build (no rebuild, no ctest inside ctest:
# --no-tests), builds the CUDA program with nvcc where nvcc exists, and
# stops with exit 3 and one stderr line "no GPU: <reason>". Skipped (77)
# where a GPU is usable: there the script is meant to be run by hand.
# With the fake libcuda and libcupti, doctor says a GPU is usable and the
# script walks its GPU branch to the end: every step that needs the real
# driver fails with its reason on one FAIL line, exit 1.
#   check_script.sh ROOT BUILD_DIR PHASEPROF [FAKE_LIBCUDA FAKE_LIBCUPTI]
set -u
ROOT=$1
BUILD=$2
PHASEPROF=$3
FAKE_CUDA=${4:-}
FAKE_CUPTI=${5:-}
S=$ROOT/scripts/gpu-check.sh
bash -n "$S" || { echo "FAIL: bash -n $S"; exit 1; }
if "$PHASEPROF" doctor --check > /dev/null 2>&1; then
	echo "a GPU is usable here: run scripts/gpu-check.sh by hand"
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/ppgpu-check.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
die() { echo "FAIL: $*"; fails=$((fails + 1)); }

PP_BUILD_DIR=$BUILD "$S" --no-tests --out "$T/out" --bundle "$T/bundle" > "$T/stdout" 2> "$T/stderr"
rc=$?
[ $rc -eq 3 ] || die "exit $rc, wanted 3"
# stderr: exactly one line, the reason
[ "$(wc -l < "$T/stderr")" -eq 1 ] || die "stderr is not one line: $(cat "$T/stderr")"
grep -qE '^no GPU: .+' "$T/stderr" || die "no 'no GPU: ...' line on stderr: $(cat "$T/stderr")"
SUM=$T/out/summary.txt
[ -f "$SUM" ] || die "no summary.txt"
tail -n 1 "$SUM" | grep -qE '^no GPU: .+' || die "summary does not end with the 'no GPU' line: $(tail -n 3 "$SUM")"
grep -q '^build: reused ' "$SUM" || die "PP_BUILD_DIR did not mean --no-build"
grep -q '^gpu tests: skipped (--no-tests)' "$SUM" || die "--no-tests not honoured"
grep -q '^ok: python syntax' "$SUM" || die "python syntax step: $(grep -i python "$SUM")"
[ -f "$T/out/doctor.txt" ] || die "doctor output not kept"
# the bundle: the summary and the whole output folder, two files
cmp -s "$SUM" "$T/bundle/summary.txt" || die "bundle: summary.txt differs"
tar -tzf "$T/bundle/gpu-check.tar.gz" 2>/dev/null | grep -qx 'out/doctor.txt' || die "bundle: no out/doctor.txt in the tarball"
[ "$(ls "$T/bundle" | wc -l)" -eq 2 ] || die "bundle: $(ls "$T/bundle")"
# --deps with nothing to unpack says so
mkdir -p "$T/nodebs"
PP_BUILD_DIR=$BUILD "$S" --no-tests --deps "$T/nodebs" --out "$T/nodeps" > /dev/null 2>&1
grep -q "^FAIL: --deps: no .deb files in $T/nodebs" "$T/nodeps/summary.txt" || die "--deps empty: $(grep -i deps "$T/nodeps/summary.txt")"
"$S" --out "$T/out" --bundle "$T/out/inside" > /dev/null 2> "$T/inside"
[ $? -eq 2 ] && grep -q 'must lie outside' "$T/inside" || die "--bundle inside --out: $(cat "$T/inside")"
if command -v nvcc > /dev/null 2>&1; then
	grep -q '^ok: nvcc streams_graph.cu' "$SUM" || die "streams_graph.cu did not build: $(cat "$T/out/logs/nvcc.log")"
	[ -x "$T/out/bin/streams_graph" ] || die "no streams_graph binary"
	# without a GPU the program fails in one line naming the CUDA call
	"$T/out/bin/streams_graph" > "$T/sg.out" 2> "$T/sg.err"
	[ $? -eq 1 ] && [ "$(wc -l < "$T/sg.err")" -eq 1 ] && grep -q '^streams_graph: cuda.* failed: ' "$T/sg.err" ||
		die "streams_graph without a GPU: $(cat "$T/sg.err")"
fi
# nothing that needs a GPU ran
[ ! -e "$T/out/torch_loop.db" ] && [ ! -e "$T/out/transfer.db" ] || die "GPU steps ran without a GPU"
# bad usage is exit 2 with one line
"$S" --bogus > /dev/null 2> "$T/usage"
[ $? -eq 2 ] && [ "$(wc -l < "$T/usage")" -eq 1 ] || die "--bogus: $(cat "$T/usage")"

# the GPU branch, over the fakes
if [ -n "$FAKE_CUDA" ] && [ -n "$FAKE_CUPTI" ]; then
	PHASEPROF_LIBCUDA=$FAKE_CUDA PHASEPROF_LIBCUPTI=$FAKE_CUPTI PP_BUILD_DIR=$BUILD \
		"$S" --no-tests --out "$T/fake" > "$T/fake.stdout" 2> "$T/fake.stderr"
	rc=$?
	F=$T/fake/summary.txt
	[ $rc -eq 1 ] || die "fake GPU: exit $rc, wanted 1"
	grep -q '^doctor: GPU tracing: available' "$F" || die "fake GPU: doctor did not say available"
	grep -q '^no GPU' "$F" && die "fake GPU: a 'no GPU' line"
	grep -q '^FAIL: torch_loop: ' "$F" || die "fake GPU: no torch_loop line"
	grep -qE '^(FAIL|ok): phaseprof run transfer' "$F" || die "fake GPU: transfer not run"
	if command -v nvcc > /dev/null 2>&1; then
		grep -q '^FAIL: record streams_graph: exit 1 after .*streams_graph: cuda.* failed: ' "$F" ||
			die "fake GPU: streams_graph's failure not said: $(grep streams_graph "$F")"
		[ -f "$T/fake/streams_graph.html" ] || die "fake GPU: no report of streams_graph.db"
		grep -q '^  streams_graph phaseprof: 0 kernels' "$F" || die "fake GPU: no kernel line for streams_graph"
	fi
	tail -n 1 "$F" | grep -q '^gpu-check: FAIL (see the FAIL lines above' || die "fake GPU: last line $(tail -n 1 "$F")"
	SUM="$SUM $F"
	# the GPU branch's wiring, with a fake nvcc (a stub printing streams_graph's
	# line), a fake ncu (a fixture CSV, then a counter-permission refusal) and
	# the PyTorch loop on the CPU where torch exists: record -> the program's
	# count -> ncu -> gpu_compare -> summary; 0 kernels on the fakes, so the
	# comparisons disagree, each on its line
	mkdir -p "$T/fakebin"
	cat > "$T/fakebin/nvcc" <<'SH'
#!/bin/sh
case "$1" in --version) echo "Cuda compilation tools, release 0.0 (fake)"; exit 0 ;; esac
out=
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
printf '#include <stdio.h>\nint main(void) { puts("streams_graph: kernels=3 memcpys=2 memsets=0 graph_launches=0 ok"); return 0; }\n' |
	cc -x c -o "$out" -
SH
	cat > "$T/fakebin/ncu" <<'SH'
#!/bin/sh
case "$1" in --version) echo "NVIDIA (R) Nsight Compute Command Line Profiler (fake)"; exit 0 ;; esac
log=
while [ $# -gt 0 ]; do [ "$1" = --log-file ] && log=$2; shift; done
cp "$FAKE_NCU_OUT" "$log"
exit "${FAKE_NCU_RC:-0}"
SH
	chmod +x "$T/fakebin/nvcc" "$T/fakebin/ncu"
	TPY=/usr/bin/python3
	"$TPY" -c 'import torch' > /dev/null 2>&1 || TPY=${PYTHON:-python3}
	for ncu_case in csv noperm; do
		# the PyTorch half once (csv), on the CPU; the second time it is not run
		if [ $ncu_case = csv ]; then
			export FAKE_NCU_OUT=$ROOT/tests/gpu/fixtures/ncu_gpu_time.csv FAKE_NCU_RC=0 TDEV=cpu
		else
			export FAKE_NCU_OUT=$ROOT/tests/gpu/fixtures/ncu_noperm.log FAKE_NCU_RC=1 TDEV=cuda
		fi
		W=$T/wire-$ncu_case
		NVCC=$T/fakebin/nvcc NCU=$T/fakebin/ncu PYTHON=$TPY PP_TORCH_DEVICE=$TDEV \
		PHASEPROF_LIBCUDA=$FAKE_CUDA PHASEPROF_LIBCUPTI=$FAKE_CUPTI PP_BUILD_DIR=$BUILD \
			"$S" --no-tests --steps 2 --out "$W" > /dev/null 2>&1
		rc=$?
		[ $rc -eq 1 ] || die "wiring ($ncu_case): exit $rc, wanted 1"
		for want in "ok: nvcc streams_graph.cu" "ok: record streams_graph" \
			"  streams_graph: kernels=3 memcpys=2 memsets=0 graph_launches=0 ok" \
			"streams_graph kernels: phaseprof 0, the program launched 3: DISAGREE (must be equal)" \
			"FAIL: streams_graph comparison: streams_graph verdict: FAIL"; do
			grep -qF -- "$want" "$W/summary.txt" || die "wiring ($ncu_case): no line '$want'"
		done
		if [ $ncu_case = csv ]; then
			grep -q "^ok: ncu streams_graph (" "$W/summary.txt" &&
				grep -qxF "streams_graph kernels: phaseprof 0, ncu 3 (100.0 %): DISAGREE (beyond 10 %)" "$W/summary.txt" ||
				die "wiring (csv): ncu lines: $(grep ncu "$W/summary.txt")"
		else
			grep -q '^not ok (no failure): ncu streams_graph: exit 1 ' "$W/summary.txt" &&
				grep -q '^streams_graph ncu: not compared: ncu failed: ==ERROR== ERR_NVGPUCTRPERM' "$W/summary.txt" &&
				! grep -q '^FAIL: ncu' "$W/summary.txt" ||
				die "wiring (noperm): ncu lines: $(grep ncu "$W/summary.txt")"
		fi
		if [ $TDEV = cpu ] && "$TPY" -c 'import torch' > /dev/null 2>&1; then
			for want in "ok: torch_loop under torch.profiler" "  torch_loop: steps=2 device=cpu loss=" \
				"torch_loop kernels: phaseprof 0, torch.profiler 0: DISAGREE (nothing to compare: no kernels on either side)" \
				"torch_loop ncu: not compared: not run on the PyTorch loop"; do
				grep -qF -- "$want" "$W/summary.txt" || die "wiring ($ncu_case): no line '$want'"
			done
			grep -q '^ok: record torch_loop (2 steps, cpu)' "$W/summary.txt" || die "wiring: torch_loop not recorded"
		fi
		SUM="$SUM $W/summary.txt"
	done
	unset FAKE_NCU_OUT FAKE_NCU_RC TDEV

	# the time budget: a spent budget runs nothing more, and says so
	PP_GPU_CHECK_BUDGET=0 PHASEPROF_LIBCUDA=$FAKE_CUDA PHASEPROF_LIBCUPTI=$FAKE_CUPTI PP_BUILD_DIR=$BUILD \
		"$S" --no-tests --out "$T/budget" > /dev/null 2>&1
	rc=$?
	[ $rc -eq 1 ] || die "budget 0: exit $rc, wanted 1"
	grep -q '^FAIL: phaseprof run transfer: not run: the 0s budget is spent' "$T/budget/summary.txt" ||
		die "budget 0: $(grep FAIL "$T/budget/summary.txt")"
	[ ! -e "$T/budget/bin/streams_graph" ] || die "budget 0: nvcc ran"
fi

if [ $fails -ne 0 ]; then
	for f in $SUM; do echo "--- $f"; cat "$f"; done
	exit 1
fi
echo "gpu-check.sh without a GPU: $(cat "$T/stderr")"
