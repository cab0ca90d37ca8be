#!/usr/bin/env bash
# GPU benchmarks: bench/gpu/run.sh BUILD_DIR
set -euo pipefail
b=${1:?usage: run.sh BUILD_DIR}
if [ -x "$b/bench/gpu/bench_gpu_decode" ]; then
	echo "== gpu: CUPTI activity decoding (synthetic CUDA 13.0 records) =="
	"$b/bench/gpu/bench_gpu_decode" 8
else
	echo "== gpu: skipped (built without the CUPTI headers) =="
fi
if [ -x "$b/bench/gpu/bench_gpu_nvtx" ]; then
	echo "== gpu: NVTX ranges through injection =="
	"$b/bench/gpu/bench_gpu_nvtx"
	inj="$b/tests/gpu/libppgpu_nvtx_inject.so"
	if [ -f "$inj" ]; then
		spool=$(mktemp -u /tmp/ppgpu-bench-XXXXXX.spool)
		LD_PRELOAD="$inj" NVTX_INJECTION64_PATH="$inj" PHASEPROF_OUT="$spool" "$b/bench/gpu/bench_gpu_nvtx"
		rm -f "$spool"
	fi
fi
echo "== gpu: this machine =="
"$b/phaseprof" doctor | head -2
