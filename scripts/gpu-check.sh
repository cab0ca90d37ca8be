#!/usr/bin/env bash
# gpu-check.sh: phaseprof on a real GPU in one command (issue 21, item 1).
#
#   scripts/gpu-check.sh [--out DIR] [--bundle DIR] [--deps DIR] [--no-build] [--no-tests] [--steps N]
#   scripts/gpu-check.sh --fetch-deps DIR
#
# Target: one NVIDIA H100/H200, CUDA 13 (nvcc, CUPTI, ncu), PyTorch with CUDA
# on Python 3.12, 16 cores, no network; about 3-6 minutes there (8 at most:
# every step runs under a time limit, and all of them within
# PP_GPU_CHECK_BUDGET seconds, 460 by default). It
#   1. builds phaseprof with CUDA (CMake finds the toolkit; --no-build or
#      PP_BUILD_DIR=DIR reuses a build),
#   2. runs the GPU tests (ctest -R '^gpu\.'; --no-tests skips them),
#   3. builds tests/gpu/progs/streams_graph.cu with nvcc (streams, copies, a
#      CUDA graph), then, where a GPU is usable:
#   4. runs the transfer scenario,
#   5. records (a) streams_graph, (b) tests/gpu/progs/torch_loop.py under
#      `phaseprof record`, and runs (c) the same loop under torch.profiler,
#   6. compares phaseprof's kernel count and total kernel time with the
#      program's own count, ncu's (on (a)) and torch.profiler's (on (b)/(c))
#      through scripts/gpu_compare.py (within 10 %, or a line saying why not),
#   7. writes $OUT/summary.txt, the databases and their HTML reports.
# Where no GPU is usable it does steps 1-3 and exits 3 with one line
# "no GPU: <reason>". Exit 0: every step ran and every comparison agreed;
# 1: something failed or disagreed (summary.txt says what); 2: bad usage.
#
# --bundle DIR: also writes DIR/summary.txt and DIR/gpu-check.tar.gz (the
# whole output folder; without the databases if it would pass 15 MiB): two
# files, for a runner that brings back only a few (the device tool: 8 files
# of 16 MiB at most), e.g. `scripts/gpu-check.sh --out /tmp/gco --bundle $OUT`.
#
# --fetch-deps DIR (on a Debian machine with apt, e.g. the CPU machine):
# downloads the .deb files of the build dependencies a GPU image may lack
# (~16 MB) into DIR, and exits. --deps DIR (on the GPU machine): unpacks
# them into a private prefix (dpkg-deb -x, nothing installed) that the build
# uses: CMake and pkg-config look there first, the binaries find the
# libraries through their build RPATH, and the tests and the transfer
# scenario (OpenBLAS's libgfortran) through LD_LIBRARY_PATH; the recorded
# programs do not get it.
#
# Environment: OUT (default ./gpu-check-out), PP_BUILD_DIR (default
# build-gpu in the repository), PYTHON (default python3), NCU (default ncu),
# NVCC (default nvcc), PP_GPU_ARCH (default: sm_90 code + compute_90 PTX),
# PP_CMAKE_ARGS (more arguments for CMake's configure), PP_TORCH_DEVICE
# (default cuda; cpu runs the PyTorch half on the CPU, for tests of this
# script).
set -u
set -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-./gpu-check-out}
BUILD=${PP_BUILD_DIR:-$ROOT/build-gpu}
PY=${PYTHON:-python3}
NCU=${NCU:-ncu}
NVCC=${NVCC:-nvcc}
STEPS=40
BUDGET=${PP_GPU_CHECK_BUDGET:-460} # seconds for every step together: 8 minutes with room for the rest
DO_BUILD=1
DO_TESTS=1
BUNDLE=
DEPS=
FETCH=
# the build dependencies a GPU image may lack, as Debian 12 packages (link
# time: sqlite3, zlib, OpenBLAS and its Fortran runtime, cmocka; headers
# only: libunwind, graphviz, both dlopen'ed at run time; pkgconf)
DEP_DEBS="libsqlite3-dev libsqlite3-0 zlib1g-dev libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread
libopenblas0 libgfortran5 libquadmath0 zlib1g libunwind-dev libunwind8 libgraphviz-dev libcmocka-dev libcmocka0 pkgconf pkgconf-bin
libpkgconf3"
[ -n "${PP_BUILD_DIR:-}" ] && DO_BUILD=0

while [ $# -gt 0 ]; do
	case "$1" in
	--out) OUT=$2; shift 2 ;;
	--out=*) OUT=${1#--out=}; shift ;;
	--bundle) BUNDLE=$2; shift 2 ;;
	--bundle=*) BUNDLE=${1#--bundle=}; shift ;;
	--deps) DEPS=$2; shift 2 ;;
	--deps=*) DEPS=${1#--deps=}; shift ;;
	--fetch-deps) FETCH=$2; shift 2 ;;
	--fetch-deps=*) FETCH=${1#--fetch-deps=}; shift ;;
	--no-build) DO_BUILD=0; shift ;;
	--build) DO_BUILD=1; shift ;;
	--no-tests) DO_TESTS=0; shift ;;
	--steps) STEPS=$2; shift 2 ;;
	-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case "$STEPS" in ''|*[!0-9]*) echo "gpu-check: --steps wants a number, got '$STEPS'" >&2; exit 2 ;; esac

if [ -n "$FETCH" ]; then
	mkdir -p "$FETCH" || { echo "gpu-check: cannot create $FETCH" >&2; exit 2; }
	# shellcheck disable=SC2086
	(cd "$FETCH" && apt-get download $DEP_DEBS) > "$FETCH/fetch.log" 2>&1 ||
		{ echo "gpu-check: apt-get download failed: $(grep -m 1 -E '^E:' "$FETCH/fetch.log")" >&2; exit 1; }
	echo "gpu-check: $(ls "$FETCH"/*.deb | wc -l) packages, $(du -sh "$FETCH" | cut -f 1), in $FETCH: carry it and pass --deps"
	exit 0
fi
mkdir -p "$OUT/logs" "$OUT/bin" || { echo "gpu-check: cannot create $OUT" >&2; exit 2; }
OUT=$(cd "$OUT" && pwd)
if [ -n "$BUNDLE" ]; then
	mkdir -p "$BUNDLE" || { echo "gpu-check: cannot create $BUNDLE" >&2; exit 2; }
	BUNDLE=$(cd "$BUNDLE" && pwd)
	case "$BUNDLE/" in "$OUT"/*) echo "gpu-check: --bundle must lie outside --out ($OUT)" >&2; exit 2 ;; esac
fi
SUMMARY=$OUT/summary.txt
COMPARE=$ROOT/scripts/gpu_compare.py
PROGS=$ROOT/tests/gpu/progs
: > "$SUMMARY"
FAILED=0
T0=$(date +%s)

say() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }
# finish RC: the bundle (if asked for), then exit RC
finish() {
	if [ -n "$BUNDLE" ]; then
		mkdir -p "$BUNDLE" && cp "$SUMMARY" "$BUNDLE/summary.txt" &&
			tar -C "$(dirname "$OUT")" -czf "$BUNDLE/gpu-check.tar.gz" "$(basename "$OUT")" ||
			echo "gpu-check: cannot write the bundle in $BUNDLE" >&2
		if [ -f "$BUNDLE/gpu-check.tar.gz" ] && [ "$(stat -c %s "$BUNDLE/gpu-check.tar.gz")" -gt $((15 << 20)) ]; then
			tar -C "$(dirname "$OUT")" -czf "$BUNDLE/gpu-check.tar.gz" --exclude='*.db' "$(basename "$OUT")"
			echo "bundle: gpu-check.tar.gz without the databases (over 15 MiB with them)" >> "$BUNDLE/summary.txt"
		fi
	fi
	exit "$1"
}
fail() { FAILED=1; say "FAIL: $*"; }
not_ok() { say "not ok (no failure): $*"; }
elapsed() { echo $(( $(date +%s) - T0 ))s; }
# last non-empty line of a log, for one-line reasons
last_line() { grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 1; }
# the line of a log that says why: the first error-like line, else the last line
why_line() {
	local l
	l=$(grep -m 1 -E '(^|[^a-z])(error|Error|ERROR|failed|cannot|skipped|refused|no GPU|Traceback|Killed)' "$1" 2>/dev/null)
	[ -n "$l" ] || l=$(last_line "$1")
	printf '%s' "$l" | cut -c 1-300
}
# step NAME LIMIT_S LOG CMD...: runs CMD under a time limit, output to LOG;
# a failure is a FAIL line, or with SOFT=1 a "not ok" line that fails nothing
step() {
	local name=$1 limit=$2 log=$3; shift 3
	local t=$(date +%s) rc
	local left=$(( BUDGET - (t - T0) ))
	if [ $left -lt 5 ]; then
		fail "$name: not run: the ${BUDGET}s budget is spent"
		return 124
	fi
	[ $limit -le $left ] || limit=$left
	timeout --kill-after=10 "$limit" "$@" > "$log" 2>&1
	rc=$?
	local dt=$(( $(date +%s) - t ))
	local report=fail
	[ "${SOFT:-0}" = 1 ] && report=not_ok
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		$report "$name: timed out after ${limit}s (log: ${log#$OUT/})"
	elif [ $rc -ne 0 ]; then
		$report "$name: exit $rc after ${dt}s: $(why_line "$log") (log: ${log#$OUT/})"
	else
		say "ok: $name (${dt}s)"
	fi
	return $rc
}

say "phaseprof gpu-check, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(uname -n)"
say "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (modified)')"
say "output: $OUT"

# ---- 0. what this machine has -------------------------------------------
if command -v nvidia-smi >/dev/null 2>&1; then
	say "nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 2 | tr '\n' ';')"
else
	say "nvidia-smi: not on PATH"
fi
if command -v "$NVCC" >/dev/null 2>&1; then
	say "nvcc: $("$NVCC" --version | grep -i release | head -n 1)"
else
	say "nvcc: not on PATH"
fi
if command -v "$NCU" >/dev/null 2>&1; then
	say "ncu: $("$NCU" --version 2>&1 | tail -n 1)"
else
	say "ncu: not on PATH"
fi
TORCH_INFO=$("$PY" -c 'import sys, torch; print("python %d.%d.%d, torch %s, CUDA %s, cuda available: %s" % (sys.version_info[:3] + (torch.__version__, torch.version.cuda, torch.cuda.is_available())))' 2>&1 | tail -n 1)
say "torch: $TORCH_INFO"

# ---- 1. build ------------------------------------------------------------
# carried build dependencies: a private prefix
RUN_LIBS=
if [ -n "$DEPS" ]; then
	PFX=${TMPDIR:-/tmp}/pp-gpu-deps
	ARCH_DIR=$(gcc -print-multiarch 2>/dev/null); ARCH_DIR=${ARCH_DIR:-x86_64-linux-gnu}
	rm -rf "$PFX" && mkdir -p "$PFX/bin"
	n=0
	for f in "$DEPS"/*.deb; do
		[ -f "$f" ] || continue
		dpkg-deb -x "$f" "$PFX" || fail "--deps: cannot unpack $f"
		n=$((n + 1))
	done
	L=$PFX/usr/lib/$ARCH_DIR
	# links to absolute paths (libz.so -> /lib/.../libz.so.1.2.13) into the prefix
	find "$PFX" -type l -lname '/*' | while read -r l; do
		t=$(readlink "$l")
		[ ! -e "$PFX$t" ] || ln -sfn "$PFX$t" "$l"
	done
	# Debian points libopenblas.so/libblas.so at OpenBLAS through
	# alternatives, which dpkg-deb -x does not run
	for so in libopenblas.so libopenblas.so.0 libblas.so libblas.so.3 libcblas.so; do
		[ -e "$L/$so" ] || [ ! -e "$L/openblas-pthread/$so" ] || ln -s "openblas-pthread/$so" "$L/$so"
	done
	# the .pc files name /usr: point them at the prefix
	for pc in "$L"/pkgconfig/*.pc "$L"/openblas-pthread/pkgconfig/*.pc "$PFX"/usr/share/pkgconfig/*.pc; do
		[ -f "$pc" ] && sed -i -e "s|=/usr/|=$PFX/usr/|g" -e "s|=/usr\$|=$PFX/usr|" "$pc"
	done
	if [ -x "$PFX/usr/bin/pkgconf" ]; then
		printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' "$L" "$PFX/usr/bin/pkgconf" > "$PFX/bin/pkg-config"
		chmod +x "$PFX/bin/pkg-config"
	fi
	export PATH=$PFX/bin:$PATH
	export PKG_CONFIG_PATH=$L/pkgconfig:$L/openblas-pthread/pkgconfig:$PFX/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
	export CMAKE_PREFIX_PATH=$PFX/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
	RUN_LIBS=$L:$L/openblas-pthread
	if [ $n -eq 0 ]; then
		fail "--deps: no .deb files in $DEPS (make them with --fetch-deps on a Debian machine)"
	else
		say "deps: $n packages from $DEPS unpacked into $PFX"
	fi
fi
# a command prefix putting the carried libraries on LD_LIBRARY_PATH (tests, scenarios)
WITH_LIBS=(env)
[ -z "$RUN_LIBS" ] || WITH_LIBS=(env "LD_LIBRARY_PATH=$RUN_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
if [ $DO_BUILD -eq 1 ]; then
	# what CMake will look for (a GPU image may lack the -dev packages: say so first)
	if command -v pkg-config >/dev/null 2>&1; then
		missing=
		for m in sqlite3 zlib openblas libunwind libgvc libcgraph cmocka; do
			pkg-config --exists "$m" || missing="$missing $m"
		done
		say "build deps (pkg-config):${missing:- all found}${missing:+ missing (Debian: scripts/install-deps.sh lists the packages)}"
	else
		say "build deps: no pkg-config here: CMake's configure will fail (it needs pkg-config)"
	fi
	# shellcheck disable=SC2086
	step "configure ($BUILD)" 120 "$OUT/logs/configure.log" \
		cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${PP_CMAKE_ARGS:-}
	# only what this check runs: the CLI, the agent, the scenarios, the GPU
	# tests and flow's CUDA backend (the whole build needs more, LAPACKE too)
	TARGETS=$(cmake --build "$BUILD" --target help 2>/dev/null |
		sed -n -e 's/^\.\.\. \([^ ]*\).*/\1/p' -e 's/^\([A-Za-z0-9_.+-]*\): .*/\1/p' |
		grep -xE 'phaseprof|phaseprof-scenarios|phaseprof_agent|ppa_python_package|test_gpu_.*|fake_cupti|fake_libcuda|nvtx_app|ppgpu_nvtx_inject|test_flow_cuda|flow_cuda' |
		sort -u | tr '\n' ' ')
	if [ -n "$TARGETS" ]; then
		# shellcheck disable=SC2086
		step "build ($(echo $TARGETS | wc -w) targets)" 300 "$OUT/logs/build.log" \
			cmake --build "$BUILD" -j "$(nproc)" --target $TARGETS
	else
		step "build" 300 "$OUT/logs/build.log" cmake --build "$BUILD" -j "$(nproc)"
	fi
	grep -q 'CUDA toolkit .* found' "$OUT/logs/configure.log" ||
		say "note: CMake did not find the CUDA toolkit (configure.log): GPU support not built"
else
	say "build: reused $BUILD (--no-build)"
fi
if [ -n "$(find "$BUILD" -name 'libflow_cuda.a' -print -quit 2>/dev/null)" ]; then
	say "flow_cuda (the transfer scenario's CUDA backend): built"
else
	msg=$(grep -h -m 1 'flow_cuda:' "$OUT/logs/configure.log" 2>/dev/null | sed 's/^-- //')
	say "flow_cuda (the transfer scenario's CUDA backend): not built${msg:+ ($msg)}: transfer cannot run"
fi
PHASEPROF=$BUILD/phaseprof
[ -x "$PHASEPROF" ] || PHASEPROF=$BUILD/cli/phaseprof
if [ ! -x "$PHASEPROF" ]; then
	fail "no phaseprof binary in $BUILD"
	echo "gpu-check: no phaseprof build at $BUILD (drop --no-build or set PP_BUILD_DIR)" >&2
	finish 1
fi

# ---- 2. the GPU tests (fake CUPTI everywhere; real kernels where a GPU is) --
if [ $DO_TESTS -eq 1 ]; then
	step "ctest -R '^gpu\\.'" 240 "$OUT/logs/ctest-gpu.log" \
		"${WITH_LIBS[@]}" ctest --test-dir "$BUILD" -R '^gpu\.' -E '^gpu\.check_script$' --output-on-failure -j "$(nproc)"
	grep -E 'tests passed|Not Run|\*\*\*Skipped' "$OUT/logs/ctest-gpu.log" | sed 's/^/  /' | tee -a "$SUMMARY" >/dev/null
else
	say "gpu tests: skipped (--no-tests)"
fi

# ---- 3. the CUDA program ---------------------------------------------------
ARCH=${PP_GPU_ARCH:--gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90}
SG=$OUT/bin/streams_graph
HAVE_SG=0
if command -v "$NVCC" >/dev/null 2>&1; then
	# shellcheck disable=SC2086
	step "nvcc streams_graph.cu" 120 "$OUT/logs/nvcc.log" \
		"$NVCC" -O2 $ARCH -o "$SG" "$PROGS/streams_graph.cu" && HAVE_SG=1
else
	fail "nvcc not on PATH: streams_graph.cu not built"
fi
step "python syntax of torch_loop.py and gpu_compare.py" 30 "$OUT/logs/pysyntax.log" \
	"$PY" -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' \
	"$PROGS/torch_loop.py" "$COMPARE"

# ---- is a GPU usable? ------------------------------------------------------
"$PHASEPROF" doctor --check > "$OUT/doctor.txt" 2>&1
DOCTOR_RC=$?
REASON=$(sed -n 's/^  reason *//p' "$OUT/doctor.txt" | head -n 1)
say "doctor: $(head -n 1 "$OUT/doctor.txt") (${REASON:-no reason given})"
if [ $DOCTOR_RC -ne 0 ]; then
	say "elapsed: $(elapsed)"
	# the last line of the summary, and the one line on stderr
	printf 'no GPU: %s\n' "${REASON:-phaseprof doctor --check exited $DOCTOR_RC}" | tee -a "$SUMMARY" >&2
	finish 3
fi

# ---- 4. the transfer scenario ----------------------------------------------
step "phaseprof run transfer" 120 "$OUT/logs/transfer.log" \
	"${WITH_LIBS[@]}" "$PHASEPROF" run transfer -o "$OUT/transfer.db"
grep -iE 'verdict|speed-up|finding|GPU' "$OUT/logs/transfer.log" 2>/dev/null | head -n 12 | sed 's/^/  /' >> "$SUMMARY"

# ---- 5a. the CUDA program under record, and ncu -------------------------------
if [ $HAVE_SG -eq 1 ]; then
	if step "record streams_graph" 120 "$OUT/logs/streams_graph.log" \
		"$PHASEPROF" record -o "$OUT/streams_graph.db" --summary "$OUT/streams_graph.record.txt" -- "$SG"; then
		SG_LINE=$(grep '^streams_graph:' "$OUT/logs/streams_graph.log" | tail -n 1)
		say "  $SG_LINE"
		EXPECT=$(printf '%s\n' "$SG_LINE" | sed -n 's/.*kernels=\([0-9]*\).*/\1/p')
		NCU_ARGS=()
		if command -v "$NCU" >/dev/null 2>&1; then
			# each kernel alone, clocks and caches left as they are, as the traced run had them
			# ncu that cannot read the counters (ERR_NVGPUCTRPERM, a sandbox) is a
			# reason for the comparison's line, not a failure of the check
			if SOFT=1 step "ncu streams_graph" 180 "$OUT/logs/ncu.log" \
				"$NCU" --csv --log-file "$OUT/streams_graph.ncu.csv" --metrics gpu__time_duration.sum \
				--cache-control none --clock-control none "$SG" &&
				grep -q '^"ID"' "$OUT/streams_graph.ncu.csv"; then
				NCU_ARGS=(--ncu "$OUT/streams_graph.ncu.csv")
			else
				why=$(grep -h '==ERROR==' "$OUT/streams_graph.ncu.csv" "$OUT/logs/ncu.log" 2>/dev/null | head -n 1)
				[ -n "$why" ] || why=$(last_line "$OUT/logs/ncu.log")
				NCU_ARGS=(--missing "ncu=ncu failed: ${why:-no message}")
			fi
		else
			NCU_ARGS=(--missing "ncu=ncu is not on PATH")
		fi
		"$PY" "$COMPARE" --label streams_graph --db "$OUT/streams_graph.db" \
			${EXPECT:+--expect-kernels "$EXPECT"} "${NCU_ARGS[@]}" --summary "$SUMMARY" \
			> "$OUT/logs/compare-streams_graph.log" 2>&1 ||
			fail "streams_graph comparison: $(last_line "$OUT/logs/compare-streams_graph.log")"
	fi
fi

# ---- 5b/5c. the PyTorch loop under record and under torch.profiler ---------------
TL=$PROGS/torch_loop.py
TDEV=${PP_TORCH_DEVICE:-cuda} # cpu: the PyTorch half without a GPU (for tests of this script)
if [ "$TDEV" != cuda ] ||
	"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
	REC_OK=0 PROF_OK=0
	step "record torch_loop ($STEPS steps, $TDEV)" 180 "$OUT/logs/torch_loop.log" \
		"$PHASEPROF" record -o "$OUT/torch_loop.db" --summary "$OUT/torch_loop.record.txt" -- \
		"$PY" "$TL" --steps "$STEPS" --device "$TDEV" && REC_OK=1
	step "torch_loop under torch.profiler" 180 "$OUT/logs/torch_loop.profiler.log" \
		"$PY" "$TL" --steps "$STEPS" --device "$TDEV" --profile "$OUT/torch_loop.trace.json" && PROF_OK=1
	if [ $REC_OK -eq 1 ] && [ $PROF_OK -eq 1 ]; then
		say "  $(grep '^torch_loop:' "$OUT/logs/torch_loop.log" | tail -n 1)"
		RAN=$(grep '^torch_loop:' "$OUT/logs/torch_loop.log" | tail -n 1 | sed -n 's/.*steps=\([0-9]*\).*/\1/p')
		"$PY" "$COMPARE" --label torch_loop --db "$OUT/torch_loop.db" ${RAN:+--expect-steps "$RAN"} \
			--torch-trace "$OUT/torch_loop.trace.json" \
			--missing "ncu=not run on the PyTorch loop (thousands of kernels, each replayed: minutes); see streams_graph" \
			--summary "$SUMMARY" > "$OUT/logs/compare-torch_loop.log" 2>&1 ||
			fail "torch_loop comparison: $(last_line "$OUT/logs/compare-torch_loop.log")"
	else
		say "torch_loop: not compared: a run above failed"
	fi
else
	fail "torch_loop: not run: $TORCH_INFO"
fi

# ---- 6. what phaseprof says about the recordings ---------------------------------
for rec in streams_graph torch_loop; do
	[ -f "$OUT/$rec.record.txt" ] || continue
	say "phaseprof record's summary of $rec:"
	sed 's/^/  /' "$OUT/$rec.record.txt" | head -n 24 >> "$SUMMARY"
done
for db in "$OUT"/transfer.db "$OUT"/streams_graph.db "$OUT"/torch_loop.db; do
	[ -f "$db" ] || continue
	name=$(basename "$db" .db)
	if ! "$PY" -c 'import sqlite3, sys; sys.exit(0 if sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM runs").fetchone()[0] else 1)' "$db" 2>/dev/null; then
		say "  $name: no runs recorded in $name.db (no report)"
		continue
	fi
	step "report $name" 120 "$OUT/logs/report-$name.log" "$PHASEPROF" report "$db" -o "$OUT/$name.html"
	"$PHASEPROF" info "$db" > "$OUT/$name.info.txt" 2>&1
	"$PHASEPROF" stats "$db" > "$OUT/$name.stats.txt" 2>&1
	# kernels, the GPU status, the cold start, a detach: one line each
	"$PY" "$COMPARE" --label "$name" --db "$db" --info 2>&1 | sed 's/^/  /' >> "$SUMMARY"
	# the findings stats prints (first-step, GPU rules)
	grep -E '^ *\[(high|moderate|info)\] ' "$OUT/$name.stats.txt" | head -n 6 | sed "s/^ */  $name finding: /" >> "$SUMMARY"
done

say "elapsed: $(elapsed)"
if [ $FAILED -eq 0 ]; then
	say "gpu-check: PASS"
	finish 0
fi
say "gpu-check: FAIL (see the FAIL lines above and $OUT/logs/)"
finish 1
