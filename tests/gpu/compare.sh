#!/usr/bin/env bash
# scripts/gpu_compare.py, the judgement of scripts/gpu-check.sh, on fixtures:
# a database made from store/schema.sql with known kernels, one the
# collector wrote over the fake libcupti (test_gpu_collector trace, kept with
# KEEP_DB), a Kineto-style Chrome trace, ncu CSV output. Asserts the verdict
# lines and exit statuses.
#   compare.sh ROOT [TEST_GPU_COLLECTOR]
set -u
ROOT=$1
COLLECTOR=${2:-}
PY=${PYTHON:-python3}
CMP=$ROOT/scripts/gpu_compare.py
FIX=$ROOT/tests/gpu/fixtures
T=$(mktemp -d "${TMPDIR:-/tmp}/ppgpu-compare.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0

die() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect RC PATTERN... -- ARGS: runs gpu_compare.py ARGS, checks exit status
# and that every PATTERN (a fixed string) is one of its output lines' text
expect() {
	local want_rc=$1; shift
	local pats=()
	while [ "$1" != "--" ]; do pats+=("$1"); shift; done
	shift
	"$PY" "$CMP" "$@" > "$T/out" 2>&1
	local rc=$?
	[ $rc -eq "$want_rc" ] || die "exit $rc, wanted $want_rc: gpu_compare.py $*: $(cat "$T/out")"
	for p in "${pats[@]}"; do
		grep -qxF -- "$p" "$T/out" || die "no line '$p' in: $(cat "$T/out")"
	done
}

# a database with 3 kernels of 1, 2 and 3 ms, plus rows that are not kernels
"$PY" - "$ROOT/store/schema.sql" "$T/known.db" <<'EOF' || { echo "FAIL: cannot make the fixture db"; exit 1; }
import sqlite3, sys
con = sqlite3.connect(sys.argv[2])
con.executescript(open(sys.argv[1]).read())
con.execute("INSERT INTO strings(id, value) VALUES (1, 'gemm'), (2, 'cudaLaunchKernel'), (3, 'sync')")
rows = [("kernel", 1000, 1001000, 1), ("kernel", 2000000, 4000000, 1), ("kernel", 5000000, 8000000, 1),
        ("runtime", 900, 1100, 2), ("memcpy", 100, 90000100, 3), ("phase", 0, 9000000, 1)]
for kind, s, e, n in rows:
    con.execute("INSERT INTO gpu_activity(run_id, kind, start_ns, end_ns, name_id, external_id, tid)"
                " VALUES (1, ?, ?, ?, ?, -1, 7)", (kind, s, e, n))
con.execute("INSERT INTO gpu_status VALUES (1, 1, 'ok; tracing 9 activity kinds', 0, 0)")
con.execute("INSERT INTO run_meta VALUES (1, 'gpu.cold_start', '212000000 ns in 2 calls')")
# phase_kinds is filled by the store; the script joins on the name
con.execute("INSERT INTO phase_kinds(id, name) VALUES (21, 'step'), (22, 'device_init')")
step = (21,)
for i in range(3):  # 3 steps in run 1 (the one with kernels), 1 in run 2
    con.execute("INSERT INTO spans(run_id, tid, kind, name_id, start_ns, end_ns, depth, step)"
                " VALUES (1, 7, ?, 1, ?, ?, 0, ?)", (step[0], i * 3000000, (i + 1) * 3000000, i))
con.execute("INSERT INTO spans(run_id, tid, kind, name_id, start_ns, end_ns, depth, step)"
            " VALUES (2, 7, ?, 1, 0, 1, 0, 0)", (step[0],))
# a second run, without GPU work
con.execute("INSERT INTO gpu_status VALUES (2, 0, 'the program did not initialise CUDA', 0, 0)")
con.commit()
EOF

DB=$T/known.db
# torch.profiler: 3 kernels, 6.05 ms -> within 10 %
expect 0 \
	"t phaseprof: 3 kernels, 6.000 ms in 1 run(s)" \
	"t kernels: phaseprof 3, torch.profiler 3 (0.0 %): agree" \
	"t kernel time: phaseprof 6.000 ms, torch.profiler 6.050 ms (0.8 %): agree" \
	"t verdict: PASS" \
	-- --label t --db "$DB" --torch-trace "$FIX/torch_trace_kineto.json"

# the same trace gzipped, as torch.profiler writes trace.json.gz
gzip -c "$FIX/torch_trace_kineto.json" > "$T/trace.json.gz"
expect 0 "t verdict: PASS" -- --label t --db "$DB" --torch-trace "$T/trace.json.gz"

# a trace with one kernel more and 5 ms more: both beyond 10 %
"$PY" - "$FIX/torch_trace_kineto.json" "$T/more.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "extra", "pid": 0, "tid": 7, "ts": 9000.0, "dur": 5000.0})
json.dump(d, open(sys.argv[2], "w"))
EOF
expect 1 \
	"t kernels: phaseprof 3, torch.profiler 4 (25.0 %): DISAGREE (beyond 10 %)" \
	"t kernel time: phaseprof 6.000 ms, torch.profiler 11.050 ms (45.7 %): DISAGREE (beyond 10 %)" \
	"t verdict: FAIL" \
	-- --label t --db "$DB" --torch-trace "$T/more.json"
# a wider tolerance lets the count through, not the time
expect 1 \
	"t kernels: phaseprof 3, torch.profiler 4 (25.0 %): agree" \
	"t kernel time: phaseprof 6.000 ms, torch.profiler 11.050 ms (45.7 %): DISAGREE (beyond 30 %)" \
	-- --label t --db "$DB" --torch-trace "$T/more.json" --tolerance 30

# the legacy profiler's bare list with no kernels (a CPU-only trace)
echo '[{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions", "args": {}}]' > "$T/cpu.json"
expect 1 "t kernels: phaseprof 3, torch.profiler 0 (inf %): DISAGREE (beyond 10 %)" \
	-- --label t --db "$DB" --torch-trace "$T/cpu.json"

# ncu: units mixed, thousands separators, the program's and ncu's own lines first
expect 0 \
	"sg kernels: phaseprof 3, the program launched 3: agree" \
	"sg kernels: phaseprof 3, ncu 3 (0.0 %): agree" \
	"sg kernel time: phaseprof 6.000 ms, ncu 6.011 ms (0.2 %): agree" \
	"sg verdict: PASS" \
	-- --label sg --db "$DB" --ncu "$FIX/ncu_gpu_time.csv" --expect-kernels 3
expect 1 "sg kernels: phaseprof 3, the program launched 4: DISAGREE (must be equal)" "sg verdict: FAIL" \
	-- --label sg --db "$DB" --expect-kernels 4
# ncu without counter permission: an input error naming the reason, one line
expect 2 -- --label sg --db "$DB" --ncu "$FIX/ncu_noperm.log"
grep -q 'ERR_NVGPUCTRPERM' "$T/out" && [ "$(wc -l < "$T/out")" -eq 1 ] ||
	die "ncu permission error not said in one line: $(cat "$T/out")"
# a reference that could not be had is a line, not a failure; none at all is a failure
expect 0 "sg ncu: not compared: ncu is not on PATH" "sg verdict: PASS" \
	-- --label sg --db "$DB" --expect-kernels 3 --missing "ncu=ncu is not on PATH"
expect 1 "sg: nothing compared (no reference could be had)" \
	-- --label sg --db "$DB" --missing "ncu=ncu is not on PATH"

# one run only; a run without kernels says what gpu_status says
expect 1 "t phaseprof recorded no kernels; gpu_status: unavailable: the program did not initialise CUDA" \
	"t kernels: phaseprof 0, torch.profiler 3 (100.0 %): DISAGREE (beyond 10 %)" \
	-- --label t --db "$DB" --run 2 --torch-trace "$FIX/torch_trace_kineto.json"

# steps: those of the runs that launched kernels
expect 0 "t steps: phaseprof 3, the program ran 3: agree" "t verdict: PASS" \
	-- --label t --db "$DB" --expect-steps 3 --torch-trace "$FIX/torch_trace_kineto.json"
expect 1 "t steps: phaseprof 3, the program ran 40: DISAGREE (must be equal)" \
	-- --label t --db "$DB" --expect-steps 40

# --info: what the database holds, no judgement
expect 0 "t phaseprof: 3 kernels, 6.000 ms in 1 run(s)" \
	"t gpu_status: available: ok; tracing 9 activity kinds; unavailable: the program did not initialise CUDA" \
	"t GPU cold start (device_init phases): 212000000 ns in 2 calls" \
	-- --label t --db "$DB" --info
grep -q 'verdict' "$T/out" && die "--info judged: $(cat "$T/out")"

# the summary file gets the same lines
expect 0 -- --label t --db "$DB" --torch-trace "$FIX/torch_trace_kineto.json" --summary "$T/summary.txt"
cmp -s "$T/out" "$T/summary.txt" || die "summary differs from the printed lines"

# unreadable inputs: exit 2, one line naming the file
expect 2 -- --label t --db "$T/nonexistent.db" --torch-trace "$FIX/torch_trace_kineto.json"
grep -qx "gpu_compare: t: cannot read $T/nonexistent.db: no such file" "$T/out" || die "missing db: $(cat "$T/out")"
echo '{"traceEvents": [' > "$T/torn.json"
expect 2 -- --label t --db "$DB" --torch-trace "$T/torn.json"
[ "$(wc -l < "$T/out")" -eq 1 ] || die "torn trace: $(cat "$T/out")"
echo 'not a database' > "$T/text.db"
expect 2 -- --label t --db "$T/text.db" --torch-trace "$FIX/torch_trace_kineto.json"
[ "$(wc -l < "$T/out")" -eq 1 ] || die "text db: $(cat "$T/out")"

# a database the collector wrote over the fake libcupti: 2 kernels
if [ -n "$COLLECTOR" ]; then
	if KEEP_DB=1 TMPDIR=$T "$COLLECTOR" trace > "$T/collector.log" 2>&1; then
		FAKEDB=$(ls "$T"/ppgpu-trace-*.db 2>/dev/null | head -n 1)
		"$PY" - "$FIX/torch_trace_kineto.json" "$T/two.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
k = [e for e in d["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X"]
d["traceEvents"].remove(k[-1])
json.dump(d, open(sys.argv[2], "w"))
EOF
		expect 1 "f kernels: phaseprof 2, torch.profiler 2 (0.0 %): agree" \
			"f steps: phaseprof 1, the program ran 1: agree" \
			-- --label f --db "$FAKEDB" --torch-trace "$T/two.json" --expect-steps 1
		grep -q '^f phaseprof: 2 kernels, .* in 1 run(s)' "$T/out" || die "fake-CUPTI db: $(cat "$T/out")"
		# the fake's 5 dropped records are reported
		grep -q '5 CUPTI records or buffers lost' "$T/out" || die "fake-CUPTI losses: $(cat "$T/out")"
	else
		die "test_gpu_collector trace failed: $(tail -n 3 "$T/collector.log")"
	fi
fi

if [ $fails -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "gpu_compare: all verdicts as expected"
