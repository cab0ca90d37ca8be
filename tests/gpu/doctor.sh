#!/usr/bin/env bash
# phaseprof doctor: plain reasons for each driver situation, --json, --check,
# and a one-line error for a bad argument.
# usage: doctor.sh PHASEPROF FAKE_LIBCUDA FAKE_LIBCUPTI|"" STUB_LIBCUDA|""
set -u
pp=$1 fake=$2 fakecupti=$3 stub=$4
fail=0
want() { # want NAME OUTPUT NEEDLE
	if ! grep -qF -- "$3" <<<"$2"; then
		echo "FAIL $1: output lacks '$3':"; echo "$2"; fail=1
	fi
}
out=$("$pp" doctor --libcuda /nonexistent/libcuda.so.1)
want missing "$out" "no NVIDIA driver: /nonexistent/libcuda.so.1 cannot be loaded"
want missing "$out" "GPU tracing: unavailable"
"$pp" doctor --libcuda /nonexistent/libcuda.so.1 --check >/dev/null
[ $? = 3 ] || { echo "FAIL --check must exit 3 without a driver"; fail=1; }
if [ -n "$stub" ]; then
	out=$("$pp" doctor --libcuda "$stub")
	want stub "$out" "stub libcuda"
	want stub "$out" "cuInit -> 34 CUDA_ERROR_STUB_LIBRARY"
fi
out=$(FAKE_CUINIT=100 "$pp" doctor --libcuda "$fake")
want nodevice "$out" "no GPU is visible"
out=$(FAKE_CUINIT=803 "$pp" doctor --libcuda "$fake" --json)
/usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["available"] is False and d["state"]=="driver_mismatch" and d["driver"]["cuInit"]==803, d' "$out" \
	|| { echo "FAIL json: $out"; fail=1; }
if [ -n "$fakecupti" ]; then
	out=$(FAKE_CUINIT=0 FAKE_CUPTI_SUBSCRIBE=39 FAKE_CUPTI_HOLDER="Nsight Compute" "$pp" doctor --libcuda "$fake" --libcupti "$fakecupti")
	want busy "$out" 'CUPTI is already held by "Nsight Compute"'
	FAKE_CUINIT=0 "$pp" doctor --libcuda "$fake" --libcupti "$fakecupti" --check >/dev/null \
		|| { echo "FAIL --check must exit 0 with a working (fake) driver and CUPTI"; fail=1; }
fi
err=$("$pp" doctor --bogus 2>&1 >/dev/null); rc=$?
[ $rc = 2 ] && [ "$(wc -l <<<"$err")" = 1 ] && grep -q "unknown option '--bogus'" <<<"$err" \
	|| { echo "FAIL bad argument: rc=$rc '$err'"; fail=1; }
[ $fail = 0 ] && echo "doctor: ok"
exit $fail
