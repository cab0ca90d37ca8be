#!/bin/sh
# run.sh CASE — `phaseprof record` / `merge` on real Open MPI jobs (4 ranks on
# localhost, oversubscribed) of mpi_job.c. Exit 77 (skip) only when mpirun
# cannot run at all here.
set -u
case_=$1
: "${PP_BIN:?}" "${MPI_JOB:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# no shared-memory warnings from a container's small /dev/shm in the output checks
export OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN="mpirun --oversubscribe -np 4"
W=$(mktemp -d "${TMPDIR:-/tmp}/pp-mpi-XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1

fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 -batch -noheader "$1" "$2" || fail "query on $1: $2"; }

if ! command -v mpirun >/dev/null 2>&1; then
	echo "skip: mpirun not installed"; exit 77
fi
if ! mpirun --oversubscribe -np 1 true >probe.log 2>&1; then
	echo "skip: mpirun cannot run here: $(head -c 300 probe.log)"; exit 77
fi

# record -- mpirun -np 4 mpi_job MODE: every rank a run in one database
record_job() {
	"$PP_BIN" record -o "$1.db" -- $MPIRUN "$MPI_JOB" "$1" >"$1.out" 2>"$1.err"
	echo $? >"$1.rc"
}

ranks_ok() {
	n=$(q "$1" "SELECT count(DISTINCT value) FROM run_meta WHERE key='rank'")
	[ "$n" = 4 ] || fail "$1: $n distinct ranks, expected 4"
	j=$(q "$1" "SELECT count(DISTINCT value) FROM run_meta WHERE key='job'")
	[ "$j" = 1 ] || fail "$1: $j jobs, expected 1"
	w=$(q "$1" "SELECT group_concat(DISTINCT value) FROM run_meta WHERE key='world_size'")
	[ "$w" = 4 ] || fail "$1: world_size $w"
}

# "398 ms" / "1.19 s" / "850 us" -> whole milliseconds
to_ms() { awk -v v="$1" -v u="$2" 'BEGIN { m = u == "s" ? 1000 : u == "ms" ? 1 : u == "us" ? 0.001 : -1; if (m < 0) exit 1; printf "%d\n", v * m }'; }
# the first "NUMBER UNIT" after TEXT in STRING, in ms
ms_after() { x=$(printf '%s\n' "$1" | sed -n "s/.*$2 \([0-9.]*\) \(s\|ms\|us\).*/\1 \2/p" | head -1); [ -n "$x" ] || return 1; to_ms $x; }
between() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ] || fail "$4: $1 ms not within [$2, $3] ms"; }

# two ranks launched the way torchrun launches workers (Debian's torchrun
# fails at start on Python 3.11), one database each, merged into $2.db
ddp_job() { # PY NAME MODE STEPS
	$1 -c 'import torch.distributed as d; assert d.is_available() and d.is_gloo_available()' 2>/dev/null ||
		{ echo "skip: $1 has no torch.distributed with gloo"; exit 77; }
	PORT=$($1 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	for r in 0 1; do
		RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
			"$PP_BIN" record -o "$2-%r.db" -- $1 "$(dirname "$0")/progs/ddp_job.py" "$3" "$4" >"$2.out$r" 2>"$2.err$r" &
	done
	wait
	grep -q "ddp_job $3: 2 ranks, $4 steps" "$2.out0" || { cat "$2.err0" "$2.err1"; fail "rank 0 output: $(cat "$2.out0")"; }
	"$PP_BIN" merge "$2-0.db" "$2-1.db" -o "$2.db" >"$2.merge" 2>&1 || { cat "$2.merge"; fail "merge"; }
}

rank_findings() { q "$1" "SELECT rule || ': ' || title FROM findings WHERE rule LIKE 'rank_%'"; }
# the claims among them: a balanced job may get information (one rank's
# import of torch slower on a busy host), never a moderate or high finding
rank_claims() { q "$1" "SELECT rule || ': ' || severity || ': ' || title FROM findings WHERE rule LIKE 'rank_%' AND severity IN ('moderate', 'high')"; }

case $case_ in
balanced)
	record_job balanced
	[ "$(cat balanced.rc)" = 0 ] || { cat balanced.err; fail "record exited $(cat balanced.rc)"; }
	grep -q "mpi_job balanced: 4 ranks, sum\[1\] = 10" balanced.out || fail "program output changed: $(cat balanced.out)"
	grep -q "(MPI)" balanced.err || fail "the PMPI layer was not preloaded for mpirun"
	ranks_ok balanced.db
	# every rank: MPI_Init, 12 allreduces of 1024 doubles, 2 barriers, in steps
	for r in 0 1 2 3; do
		run=$(q balanced.db "SELECT min(run_id) FROM run_meta WHERE key='rank' AND value='$r'")
		a=$(q balanced.db "SELECT count(*) || ' ' || sum(c.bytes) || ' ' || min(c.comm_size) FROM comm c JOIN strings s ON s.id=c.op_id WHERE c.run_id=$run AND s.value='MPI_Allreduce'")
		[ "$a" = "12 98304 4" ] || fail "rank $r allreduce rows: $a"
		i=$(q balanced.db "SELECT count(*) FROM spans_v WHERE run_id=$run AND kind_name='comm_init' AND name='MPI_Init'")
		[ "$i" = 1 ] || fail "rank $r: $i MPI_Init spans"
		s=$(q balanced.db "SELECT count(DISTINCT step) FROM spans_v WHERE run_id=$run AND kind_name='comm' AND name='MPI_Allreduce'")
		[ "$s" = 12 ] || fail "rank $r: allreduce in $s distinct steps, expected 12"
	done
	echo "rank findings: $(rank_findings balanced.db)"
	f=$(rank_claims balanced.db)
	[ -z "$f" ] || fail "findings on a balanced job: $f"
	# rank 1's system("true") children claim rank 1 too; the rank is the mpi_job run
	[ "$(q balanced.db "SELECT count(*) FROM run_meta WHERE key='rank' AND value='1'")" -ge 2 ] ||
		fail "rank 1's helper child was not recorded (the test lost its point)"
	"$PP_BIN" stats balanced.db >stats.txt || fail "stats"
	grep -q "^job openmpi:.*: 4 of 4 ranks" stats.txt || fail "ranks in stats: $(grep -A8 '^job' stats.txt)"
	[ "$(grep -cE '^ +1 +[0-9]+ ' stats.txt)" = 1 ] || fail "rank 1 listed more than once: $(grep -A8 '^job' stats.txt)"
	;;
init_skew)
	record_job init-skew
	ranks_ok init-skew.db
	f=$(rank_findings init-skew.db)
	echo "$f"
	echo "$f" | grep -q "rank_init_skew: Rank 2 reached MPI_Init" || fail "no init skew naming rank 2: $f"
	grep -q "job findings (on the lowest rank" init-skew.err || fail "record did not print the job's findings"
	ev=$(q init-skew.db "SELECT evidence FROM findings WHERE rule='rank_init_skew'")
	echo "$ev" | grep -q "weight_load 'load shard'" || fail "skew does not name the phase: $ev"
	echo "$f" | grep -q rank_straggler && fail "straggler reported on an init-skew job: $f"
	;;
straggler)
	record_job straggler
	ranks_ok straggler.db
	f=$(rank_findings straggler.db)
	echo "$f"
	echo "$f" | grep -q "rank_straggler: Rank 2 is a straggler" || fail "no straggler naming rank 2: $f"
	# rank 2 sleeps 120 ms a step, the others 30 ms: 90 ms more, which the
	# others wait in their allreduce
	t=$(q straggler.db "SELECT title FROM findings WHERE rule='rank_straggler'")
	ev=$(q straggler.db "SELECT evidence FROM findings WHERE rule='rank_straggler'")
	echo "$ev"
	ex=$(ms_after "$t" "straggler:") || fail "no excess in: $t"
	between "$ex" 60 200 "rank 2's extra compute per step"
	wait=$(ms_after "$ev" "wait a median") || fail "no wait in: $ev"
	between "$wait" $((ex / 2)) $((ex * 2)) "the others' wait per step"
	tot=$(ms_after "$ev" "step;") || fail "no total wait in: $ev"
	between "$tot" $((wait * 3 * 11 / 2)) $((wait * 3 * 11 * 2)) "the others' total wait (3 ranks x 11 steps)"
	# views: the per-rank table in stats, one Chrome process per rank
	"$PP_BIN" stats straggler.db >stats.txt || fail "stats"
	grep -q "^job openmpi:.*: 4 of 4 ranks" stats.txt || fail "stats has no rank table: $(head -30 stats.txt)"
	[ "$(grep -cE '^ +[0-3] +[0-9]+ +[^ ]+ +complete +[0-9.]+ (s|ms) ' stats.txt)" = 4 ] || fail "stats rank rows: $(grep -A7 '^job' stats.txt)"
	"$PP_BIN" export --format chrome straggler.db -o trace.json || fail "chrome export"
	for r in 0 1 2 3; do grep -q "\"rank $r (run " trace.json || fail "no Chrome process for rank $r"; done
	"$PP_BIN" diff straggler.db straggler.db --ranks >diff.txt || fail "diff --ranks"
	[ "$(grep -cE '^ +[0-3] +[0-9.]+ (s|ms) -> ' diff.txt)" = 4 ] || fail "diff --ranks rows: $(cat diff.txt)"
	;;
merge_offset)
	# one database per rank, then an artificial clock offset on rank 2
	$MPIRUN "$PP_BIN" record -o job-%r.db -- "$MPI_JOB" balanced >rec.out 2>rec.err || { cat rec.err; fail "per-rank record"; }
	for r in 0 1 2 3; do [ -f job-$r.db ] || fail "job-$r.db missing: $(ls)"; done
	q job-2.db "UPDATE runs SET start_unix_ns = start_unix_ns + 5000000000"
	"$PP_BIN" merge job-0.db job-1.db job-2.db job-3.db -o job.db >merge.out 2>merge.err || { cat merge.err; fail "merge"; }
	cat merge.out
	ranks_ok job.db
	run=$(q job.db "SELECT min(run_id) FROM run_meta WHERE key='rank' AND value='2'")
	off=$(q job.db "SELECT value FROM run_meta WHERE run_id=$run AND key='clock.offset_ns'")
	unc=$(q job.db "SELECT value FROM run_meta WHERE run_id=$run AND key='clock.uncertainty_ns'")
	echo "rank 2: offset $off ns +- $unc ns (true -5000000000 ns)"
	[ -n "$off" ] && [ -n "$unc" ] || fail "no offset stored"
	d=$((off + 5000000000)); [ $d -lt 0 ] && d=$((-d))
	[ $d -le $unc ] || fail "offset $off not within +-$unc of -5 s"
	[ $unc -lt 100000000 ] || fail "uncertainty $unc ns is not informative (>= 100 ms)"
	grep -q "clocks aligned to rank 0" merge.out || fail "merge did not print the alignment"
	# output written only on success: nothing else left beside it
	[ "$(ls job.db.merge-* 2>/dev/null)" = "" ] || fail "temporary file left"
	;;
merge_refuse)
	$MPIRUN "$PP_BIN" record -o a-%r.db -- "$MPI_JOB" balanced >/dev/null 2>&1 || fail "per-rank record a"
	mpirun --oversubscribe -np 2 "$PP_BIN" record -o b-%r.db -- "$MPI_JOB" balanced >/dev/null 2>&1 || fail "per-rank record b"
	if "$PP_BIN" merge a-0.db b-1.db -o m.db 2>err.txt; then fail "merged two jobs"; fi
	grep -q "different jobs" err.txt || fail "no reason given: $(cat err.txt)"
	[ ! -e m.db ] || fail "m.db written although refused"
	if "$PP_BIN" merge a-0.db a-0.db -o m.db 2>err.txt; then fail "merged one rank twice"; fi
	grep -q "rank 0 of job .* is in both" err.txt || fail "duplicate rank not named: $(cat err.txt)"
	"$PP_BIN" merge --force a-0.db b-1.db -o m.db >/dev/null 2>&1 || fail "--force refused"
	[ "$(q m.db "SELECT count(DISTINCT value) FROM run_meta WHERE key='job'")" = 2 ] || fail "forced merge lost a job"
	if "$PP_BIN" merge a-1.db -o m.db 2>err.txt; then fail "overwrote m.db"; fi
	grep -q "exists" err.txt || fail "existing output not named: $(cat err.txt)"
	;;
crash)
	record_job crash
	rc=$(cat crash.rc)
	[ "$rc" != 0 ] || fail "record exited 0 for a crashed job"
	ranks_ok crash.db
	# Open MPI's own SIGABRT handler (a backtrace, then the signal again)
	# replaces the agent's: mpirun saw the signal in waitpid, its agent
	# completes the rank's recording with it
	st=$(q crash.db "SELECT r.status || ' ' || r.term_signal FROM runs r JOIN run_meta m ON m.run_id=r.id AND m.key='rank' AND m.value='2' ORDER BY r.id LIMIT 1")
	[ "$st" = "crashed 6" ] || fail "rank 2 status '$st', expected 'crashed 6'"
	for r in 0 1 3; do
		n=$(q crash.db "SELECT count(*) FROM spans s JOIN run_meta m ON m.run_id=s.run_id AND m.key='rank' AND m.value='$r' WHERE s.kind=16")
		[ "$n" -ge 5 ] || fail "rank $r kept only $n steps"
		# mpirun stops the others: SIGTERM, SIGKILL one second later if still alive
		st=$(q crash.db "SELECT r.status || ' ' || r.term_signal FROM runs r JOIN run_meta m ON m.run_id=r.id AND m.key='rank' AND m.value='$r' ORDER BY r.id LIMIT 1")
		case $st in "killed 15"|"killed 9") ;; *) fail "rank $r status '$st', expected killed by SIGTERM or SIGKILL" ;; esac
	done
	f=$(rank_findings crash.db)
	echo "$f"
	echo "$f" | grep -qE "rank_failed: Rank 2 crashed.* in step 5" || fail "crashed rank not named: $f"
	# the report's swimlanes: one lane per rank, the crashed one marked
	"$PP_BIN" report crash.db -o crash.html >/dev/null 2>&1 || fail "report"
	grep -q "Ranks of job <code>openmpi:" crash.html || fail "report has no rank swimlanes"
	for r in 0 1 3; do grep -q ">rank $r ✕<" crash.html || fail "report lane of killed rank $r not marked"; done
	grep -qE "✕ crashed<" crash.html || fail "report does not mark the crash"
	;;
kill)
	record_job kill
	[ "$(cat kill.rc)" != 0 ] || fail "record exited 0 for a killed job"
	ranks_ok kill.db
	# SIGKILL leaves no chance to flush: the spool ends at the last periodic
	# write, and mpirun's agent adds the signal it saw in waitpid
	st=$(q kill.db "SELECT r.status || ' ' || r.term_signal FROM runs r JOIN run_meta m ON m.run_id=r.id AND m.key='rank' AND m.value='2' ORDER BY r.id LIMIT 1")
	[ "$st" = "killed 9" ] || fail "rank 2 status '$st', expected 'killed 9'"
	for r in 0 1 3; do
		n=$(q kill.db "SELECT count(*) FROM spans s JOIN run_meta m ON m.run_id=s.run_id AND m.key='rank' AND m.value='$r' WHERE s.kind=16")
		[ "$n" -ge 5 ] || fail "rank $r kept only $n steps"
	done
	f=$(rank_findings kill.db)
	echo "$f"
	echo "$f" | grep -qE "rank_failed: Rank 2 killed.* in step 5" || fail "killed rank not named: $f"
	;;
untouched)
	# a program that is not MPI: no PMPI layer, same output
	"$PP_BIN" record -o plain.db -- /bin/echo hello >out.txt 2>err.txt || fail "record echo"
	[ "$(cat out.txt)" = hello ] || fail "echo output changed"
	grep -q "(MPI)" err.txt && fail "PMPI layer preloaded into /bin/echo"
	# the layer itself is inert in a process that never calls MPI
	[ "$(LD_PRELOAD="$PP_BUILD/libphaseprof-mpi.so" /bin/echo ok)" = ok ] || fail "preloaded layer broke echo"
	# %r outside a launcher is an error naming the missing variables, not rank 0
	if env -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u SLURM_PROCID -u PMI_RANK -u RANK \
		"$PP_BIN" record -o x-%r.db -- /bin/true 2>err.txt; then fail "%r without a rank accepted"; fi
	grep -q "no rank in the environment" err.txt || fail "%r error: $(cat err.txt)"
	[ ! -e x-0.db ] || fail "x-0.db written"
	env RANK=5 "$PP_BIN" record -o x-%r-%%.db -- /bin/true 2>/dev/null || fail "record with RANK=5"
	[ -f x-5-%.db ] || fail "%r/%% not expanded: $(ls)"
	# --no-mpi: the job runs unrecorded by PMPI, still one run per rank
	"$PP_BIN" record --no-mpi -o nompi.db -- $MPIRUN "$MPI_JOB" balanced >/dev/null 2>err.txt || fail "record --no-mpi"
	[ "$(q nompi.db "SELECT count(*) FROM comm")" = 0 ] || fail "--no-mpi still recorded comm rows"
	ranks_ok nompi.db
	;;
ddp)
	# two ranks launched the way torchrun launches workers (Debian's torchrun
	# fails at start on Python 3.11), one database each, then merged
	PY=/usr/bin/python3
	$PY -c 'import torch.distributed as d; assert d.is_available() and d.is_gloo_available()' 2>/dev/null ||
		{ echo "skip: /usr/bin/python3 has no torch.distributed with gloo"; exit 77; }
	PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	PROG="$(dirname "$0")/progs/ddp_train.py"
	for r in 0 1; do
		RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
			"$PP_BIN" record -o ddp-%r.db -- $PY "$PROG" 8 >out$r.txt 2>err$r.txt &
	done
	wait
	grep -q "ddp: 2 ranks, 8 steps" out0.txt || { cat err0.txt; fail "rank 0 output: $(cat out0.txt)"; }
	"$PP_BIN" merge ddp-0.db ddp-1.db -o ddp.db >merge.out 2>merge.err || { cat merge.err; fail "merge"; }
	cat merge.out
	[ "$(q ddp.db "SELECT group_concat(DISTINCT value) FROM run_meta WHERE key='job'")" = "torchrun:127.0.0.1:$PORT" ] ||
		fail "job id: $(q ddp.db "SELECT group_concat(DISTINCT value) FROM run_meta WHERE key='job'")"
	for r in 0 1; do
		run=$(q ddp.db "SELECT min(run_id) FROM run_meta WHERE key='rank' AND value='$r'")
		[ -n "$run" ] || fail "rank $r missing"
		n=$(q ddp.db "SELECT count(*) FROM spans WHERE run_id=$run AND kind=16")
		[ "$n" = 8 ] || fail "rank $r: $n steps"
		# the loss all_reduce follows optimizer.step(), where the adapter's steps end
		a=$(q ddp.db "SELECT count(*) FROM spans_v WHERE run_id=$run AND kind_name='comm' AND name='all_reduce'")
		[ "$a" = 8 ] || fail "rank $r all_reduce spans: $a"
		t=$(q ddp.db "SELECT sum(end_ns-start_ns) FROM spans_v WHERE run_id=$run AND kind_name='comm' AND name='all_reduce'")
		[ "$t" -gt 0 ] || fail "rank $r: no all_reduce time"
		i=$(q ddp.db "SELECT group_concat(name, ',') FROM (SELECT name FROM spans_v WHERE run_id=$run AND kind_name='comm_init' ORDER BY start_ns)")
		[ "$i" = "init_process_group,DistributedDataParallel.__init__" ] || fail "rank $r comm_init: $i"
		b=$(q ddp.db "SELECT max(c.value) FROM counters c JOIN strings s ON s.id=c.name_id WHERE c.run_id=$run AND s.value='comm.bytes'")
		[ "$b" = "32.0" ] || fail "rank $r comm.bytes $b (8 all_reduce of one float32)"
		q ddp.db "SELECT value FROM run_meta WHERE run_id=$run AND key='torch.ddp'" | grep -q "C++ reducer" || fail "rank $r: DDP note missing"
		echo "rank $r: 8 steps, all_reduce $((t / 1000)) us in total"
	done
	# the two ranks import torch side by side on 2 busy cores: one may reach
	# init_process_group seconds later, which the skew rule rightly reports;
	# nothing else may fire
	f=$(q ddp.db "SELECT rule || ': ' || title FROM findings WHERE rule LIKE 'rank_%' AND rule NOT LIKE 'rank_%skew'")
	echo "rank findings: $(rank_findings ddp.db)"
	[ -z "$f" ] || fail "rank findings on a balanced DDP job: $f"
	unc=$(q ddp.db "SELECT m.value FROM run_meta m JOIN run_meta r ON r.run_id=m.run_id AND r.key='rank' AND r.value='1' WHERE m.key='clock.uncertainty_ns'")
	[ -n "$unc" ] && [ "$unc" -ge 0 ] && [ "$unc" -lt 100000000 ] || fail "rank 1 clock uncertainty: '$unc'"
	;;
late_coll)
	# a sub-second job: rank 2 sleeps 500 ms between MPI_Init and its first
	# collective (an MPI_Barrier); the others wait there
	record_job late-coll
	[ "$(cat late-coll.rc)" = 0 ] || { cat late-coll.err; fail "record exited $(cat late-coll.rc)"; }
	ranks_ok late-coll.db
	f=$(rank_findings late-coll.db)
	echo "$f"
	t=$(q late-coll.db "SELECT title FROM findings WHERE rule='rank_first_collective_skew'")
	ev=$(q late-coll.db "SELECT evidence FROM findings WHERE rule='rank_first_collective_skew'")
	echo "$ev"
	echo "$t" | grep -q "^Rank 2 reached MPI_Barrier " || fail "no first-collective skew naming rank 2: $f"
	late=$(ms_after "$t" "MPI_Barrier") || fail "no lateness in: $t"
	between "$late" 300 3000 "rank 2's lateness (500 ms sleep)"
	echo "$ev" | grep -q "data_wait 'build index'" || fail "the phase is not named: $ev"
	wait=$(ms_after "$ev" "waited") || fail "no wait in: $ev"
	between "$wait" $((late * 2)) $((late * 4)) "the others' wait (3 ranks x $late ms)"
	# (not comm_share: 30 ms steps beside an allreduce on 2 loaded CPUs may
	# rightly show it; mpi_balanced holds that one)
	echo "$f" | grep -qE "rank_(straggler|init_skew|barrier_skew)" && fail "other rank findings: $f"
	w=$(q late-coll.db "SELECT (max(start_unix_ns + duration_ns) - min(start_unix_ns)) / 1000000 FROM runs r JOIN run_meta m ON m.run_id = r.id AND m.key = 'rank'")
	echo "late by $late ms, the others waited $wait ms, job $w ms"
	;;
barrier)
	# rank 2 saves a checkpoint 500 ms after the steps; the others wait in the final barrier
	record_job barrier
	[ "$(cat barrier.rc)" = 0 ] || { cat barrier.err; fail "record exited $(cat barrier.rc)"; }
	f=$(rank_findings barrier.db)
	echo "$f"
	t=$(q barrier.db "SELECT title FROM findings WHERE rule='rank_barrier_skew'")
	ev=$(q barrier.db "SELECT evidence FROM findings WHERE rule='rank_barrier_skew'")
	echo "$t" | grep -q "^Rank 2 reached MPI_Barrier " || fail "no barrier skew naming rank 2: $f"
	late=$(ms_after "$t" "MPI_Barrier") || fail "no lateness in: $t"
	between "$late" 300 3000 "rank 2's lateness (500 ms sleep)"
	echo "$ev" | grep -q "span 'save checkpoint'" || fail "the phase is not named: $ev"
	wait=$(ms_after "$ev" "waited") || fail "no wait in: $ev"
	between "$wait" $((late * 2)) $((late * 4)) "the others' wait"
	echo "$f" | grep -qE "rank_(straggler|init_skew|first_collective_skew)" && fail "other rank findings: $f"
	;;
fsdp_t2)
	# FSDP (FULL_SHARD) on gloo: its shards' collectives (torch 2.13's
	# all_gather in forward, reduce_scatter_single inside backward)
	# are comm phases inside the steps; no DDP note; output as a plain run's
	PY=/opt/phaseprof-venv/torch2/bin/python
	[ -x "$PY" ] || { echo "skip: no $PY"; exit 77; }
	$PY -c 'import torch.distributed as d; assert d.is_available() and d.is_gloo_available()' 2>/dev/null ||
		{ echo "skip: $PY has no torch.distributed with gloo"; exit 77; }
	PROG="$(dirname "$0")/progs/fsdp_train.py"
	for mode in plain record; do
		PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
		for r in 0 1; do
			if [ $mode = record ]; then
				RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
					"$PP_BIN" record -q -o "fsdp-$r.db" -- $PY "$PROG" 6 >"$mode.out$r" 2>"$mode.err$r" &
			else
				RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
					$PY "$PROG" 6 >"$mode.out$r" 2>"$mode.err$r" &
			fi
			eval p$r=\$!
		done
		wait $p0; echo $? >"$mode.rc0"
		wait $p1; echo $? >"$mode.rc1"
	done
	for r in 0 1; do
		[ "$(cat plain.rc$r) $(cat record.rc$r)" = "0 0" ] ||
			{ cat "record.err$r"; fail "rank $r exit: plain $(cat plain.rc$r), recorded $(cat record.rc$r)"; }
		grep -q "^fsdp_train: rank $r of 2, 6 steps, digest " "record.out$r" || fail "rank $r: $(cat "record.out$r")"
		cmp -s "plain.out$r" "record.out$r" ||
			fail "rank $r output differs: plain '$(cat "plain.out$r")', recorded '$(cat "record.out$r")'"
		db="fsdp-$r.db"
		run=$(q "$db" "SELECT min(id) FROM runs")
		n=$(q "$db" "SELECT count(*) FROM spans WHERE run_id=$run AND kind=16")
		[ "$n" = 6 ] || fail "rank $r: $n steps, expected 6"
		# every step: a gather inside its forward, a reduce-scatter inside its backward
		for pair in "all_gather forward" "reduce_scatter_single backward"; do
			set -- $pair
			k=$(q "$db" "SELECT count(*) FROM spans s WHERE s.run_id=$run AND s.kind=16 AND EXISTS (SELECT 1 FROM spans c JOIN strings cn ON cn.id=c.name_id JOIN phase_kinds ck ON ck.id=c.kind JOIN spans p ON p.run_id=c.run_id JOIN phase_kinds pk ON pk.id=p.kind WHERE c.run_id=s.run_id AND ck.name='comm' AND cn.value='$1' AND pk.name='$2' AND c.start_ns>=p.start_ns AND c.end_ns<=p.end_ns AND p.start_ns>=s.start_ns AND p.end_ns<=s.end_ns)")
			[ "$k" = 6 ] || fail "rank $r: $k of 6 steps have $1 inside $2 ($(q "$db" "SELECT group_concat(DISTINCT n.value) FROM spans s JOIN strings n ON n.id=s.name_id JOIN phase_kinds k ON k.id=s.kind WHERE k.name='comm'"))"
		done
		m=$(q "$db" "SELECT count(*) FROM run_meta WHERE key='torch.ddp'")
		[ "$m" = 0 ] || fail "rank $r: an FSDP job has the DDP note"
		b=$(q "$db" "SELECT CAST(max(c.value) AS INTEGER) FROM counters c JOIN strings n ON n.id=c.name_id WHERE c.run_id=$run AND n.value='comm.bytes'")
		[ "${b:-0}" -gt 0 ] || fail "rank $r: no comm.bytes"
		echo "rank $r: $(q "$db" "SELECT group_concat(v, ', ') FROM (SELECT n.value || ' x' || count(*) AS v FROM spans s JOIN strings n ON n.id=s.name_id JOIN phase_kinds k ON k.id=s.kind WHERE s.run_id=$run AND k.name='comm' GROUP BY n.value)"); $b bytes"
	done
	;;
ddp_buckets_t?|ddp_exposed_t?)
	# DDP's gradient buckets (the torch.distributed adapter's communication
	# hook): per step as many bucket all-reduces as DDP has buckets, the
	# exposed part within the step, output (gradient and parameter digests)
	# identical to a plain run's; a job whose all-reduce runs after backward
	# gets ddp_comm_exposed, a healthy one nothing above info
	PY=/usr/bin/python3
	case $case_ in *_t2) PY=/opt/phaseprof-venv/torch2/bin/python ;; esac
	[ -x "$PY" ] || { echo "skip: no $PY"; exit 77; }
	$PY -c 'import torch.distributed as d; assert d.is_available() and d.is_gloo_available()' 2>/dev/null ||
		{ echo "skip: $PY has no torch.distributed with gloo"; exit 77; }
	PROG="$(dirname "$0")/progs/ddp_buckets.py"
	# pair NAME MODE STEPS [record]: both ranks, plain or recorded
	pair() {
		PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
		for r in 0 1; do
			if [ $# -ge 4 ]; then
				RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
					"$PP_BIN" record -q -o "$1-%r.db" -- $PY "$PROG" "$2" "$3" >"$1.out$r" 2>"$1.err$r" &
			else
				RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
					$PY "$PROG" "$2" "$3" >"$1.out$r" 2>"$1.err$r" &
			fi
			eval p$r=\$!
		done
		wait $p0; echo $? >"$1.rc0"
		wait $p1; echo $? >"$1.rc1"
	}
	# check NAME MODE STEPS: recorded beside plain, then the facts per rank
	check() {
		pair "plain-$1" "$2" "$3"
		pair "$1" "$2" "$3" record
		for r in 0 1; do
			[ "$(cat "plain-$1.rc$r") $(cat "$1.rc$r")" = "0 0" ] ||
				{ cat "$1.err$r" "plain-$1.err$r"; fail "$1 rank $r exit: plain $(cat "plain-$1.rc$r"), recorded $(cat "$1.rc$r")"; }
			cmp -s "plain-$1.out$r" "$1.out$r" ||
				fail "$1 rank $r output differs: plain '$(cat "plain-$1.out$r")', recorded '$(cat "$1.out$r")'"
			cmp -s "plain-$1.err$r" "$1.err$r" ||
				fail "$1 rank $r stderr differs: plain '$(cat "plain-$1.err$r")', recorded '$(cat "$1.err$r")'"
			db="$1-$r.db"
			# DDP's own bucket sizes, index order, from the program's output
			sizes=$(sed -n "s/^ddp_buckets $2: rank $r of 2, $3 steps, buckets [0-9]*: //p" "$1.out$r")
			nb=$(sed -n "s/^ddp_buckets $2: rank $r of 2, $3 steps, buckets \([0-9]*\): .*/\1/p" "$1.out$r")
			[ -n "$nb" ] && [ "$nb" -ge 1 ] || fail "$1 rank $r: no bucket count in '$(cat "$1.out$r")'"
			run=$(q "$db" "SELECT min(id) FROM runs")
			q "$db" "SELECT value FROM run_meta WHERE run_id=$run AND key='torch.ddp.buckets'" |
				grep -q "^timed through a communication hook" ||
				fail "$1 rank $r: torch.ddp.buckets '$(q "$db" "SELECT value FROM run_meta WHERE key='torch.ddp.buckets'")'"
			n=$(q "$db" "SELECT count(*) FROM spans WHERE run_id=$run AND kind=16")
			[ "$n" = "$3" ] || fail "$1 rank $r: $n steps, expected $3"
			# bucket rows per step, in step order: the first step >= 1 (DDP's
			# initial buckets), every later one exactly DDP's count
			per=$(q "$db" "SELECT group_concat(k, ' ') FROM (SELECT s.step, (SELECT count(*) FROM comm c JOIN strings n ON n.id=c.op_id WHERE c.run_id=s.run_id AND n.value LIKE 'DDP allreduce bucket %' AND c.start_ns>=s.start_ns AND c.end_ns<=s.end_ns) AS k FROM spans s WHERE s.run_id=$run AND s.kind=16 ORDER BY s.start_ns)")
			first=${per%% *}
			[ "$first" -ge 1 ] || fail "$1 rank $r: no bucket in the first step ($per)"
			want=$(printf "%$(( $3 - 1 ))s" "" | sed "s/ /$nb /g")
			[ "${per#* } " = "$want" ] || fail "$1 rank $r: buckets per step '$per', expected $nb after the first"
			tot=$(q "$db" "SELECT count(*) FROM comm c JOIN strings n ON n.id=c.op_id WHERE c.run_id=$run AND n.value LIKE 'DDP allreduce bucket %'")
			[ "$tot" = "$(( first + ($3 - 1) * nb ))" ] || fail "$1 rank $r: $tot bucket rows, some outside the steps ($per)"
			# the last step's buckets: index order, DDP's sizes, the group's size
			last=$(q "$db" "SELECT max(start_ns) FROM spans WHERE run_id=$run AND kind=16")
			got=$(q "$db" "SELECT group_concat(bytes, ', ') FROM (SELECT c.bytes FROM comm c JOIN strings n ON n.id=c.op_id WHERE c.run_id=$run AND n.value LIKE 'DDP allreduce bucket %' AND c.start_ns>=$last ORDER BY CAST(substr(n.value, 22) AS INTEGER))")
			[ "$got" = "$sizes" ] || fail "$1 rank $r: bucket bytes '$got', DDP's '$sizes'"
			cs=$(q "$db" "SELECT group_concat(DISTINCT comm_size) || ' ' || min(end_ns >= start_ns) FROM comm WHERE run_id=$run")
			[ "$cs" = "2 1" ] || fail "$1 rank $r: comm_size/times '$cs'"
			# per step: one ddp.exposed_ns sample inside it, 0 <= exposed <= step time,
			# and exposed <= the time a bucket was in flight
			bad=$(q "$db" "SELECT count(*) FROM spans s WHERE s.run_id=$run AND s.kind=16 AND NOT EXISTS (SELECT 1 FROM counters e JOIN strings n ON n.id=e.name_id AND n.value='ddp.exposed_ns' JOIN counters m ON m.run_id=e.run_id AND m.ts_ns BETWEEN s.start_ns AND s.end_ns JOIN strings mn ON mn.id=m.name_id AND mn.value='ddp.comm_ns' WHERE e.run_id=s.run_id AND e.ts_ns BETWEEN s.start_ns AND s.end_ns AND e.value >= 0 AND e.value <= s.end_ns - s.start_ns AND e.value <= m.value)")
			[ "$bad" = 0 ] || fail "$1 rank $r: $bad steps without a sane ddp.exposed_ns"
			ex=$(q "$db" "SELECT CAST(sum(e.value) / 1000 AS INTEGER) || ' us exposed of ' || CAST((SELECT sum(end_ns - start_ns) FROM spans WHERE run_id=$run AND kind=16) / 1000 AS INTEGER) || ' us in steps' FROM counters e JOIN strings n ON n.id=e.name_id AND n.value='ddp.exposed_ns' WHERE e.run_id=$run")
			echo "$1 rank $r: $nb buckets ($sizes bytes), per step: $per; $ex"
			# alone, a rank cannot tell its wait for a slower rank from the
			# network's: nothing above info
			sev=$(q "$db" "SELECT group_concat(severity) FROM findings WHERE run_id=$run AND rule='ddp_comm_exposed'")
			[ -z "$sev" ] || [ "$sev" = info ] || fail "$1 rank $r alone: ddp_comm_exposed $sev"
		done
		# merged, each step's exposed time is the least over the ranks
		"$PP_BIN" merge "$1-0.db" "$1-1.db" -o "$1.db" >"$1.merge" 2>&1 || { cat "$1.merge"; fail "merge $1"; }
		for r in 0 1; do
			run=$(q "$1.db" "SELECT min(run_id) FROM run_meta WHERE key='rank' AND value='$r'")
			q "$1.db" "SELECT severity || ' ' || title || ' | ' || evidence FROM findings WHERE run_id=$run AND rule='ddp_comm_exposed'" >"$1.f$r"
			[ -s "$1.f$r" ] && echo "$1 rank $r, merged: $(cat "$1.f$r")"
		done
	}
	case $case_ in
	ddp_buckets_*)
		check overlap overlap 10
		check nosync nosync 8
		# the program's own hooks: one before the first forward (ours stays
		# out), one after it and a built-in one after it (they run inside
		# ours), a second one DDP refuses: the same calls, digests and
		# refusal as a plain run (stdout; torch 1.13's reducer logs the
		# built-in hook to stderr with a timestamp, and not when it runs
		# inside ours)
		pair plain-hooks hooks 2
		pair hooks hooks 2 record
		for r in 0 1; do
			[ "$(cat "plain-hooks.rc$r") $(cat "hooks.rc$r")" = "0 0" ] || { cat "hooks.err$r"; fail "hooks rank $r exit"; }
			grep -q "^rank $r hook calls \[('early', 3), ('late', 3)\]" "hooks.out$r" || fail "hooks rank $r: $(cat "hooks.out$r")"
			grep -q "^rank $r second hook refused: register_comm_hook or register_builtin_comm_hook can only be called once" "hooks.out$r" ||
				fail "hooks rank $r: no refusal in $(cat "hooks.out$r")"
			cmp -s "plain-hooks.out$r" "hooks.out$r" || fail "hooks rank $r output differs: plain '$(cat "plain-hooks.out$r")', recorded '$(cat "hooks.out$r")'"
			m=$(q "hooks-$r.db" "SELECT value FROM run_meta WHERE key='torch.ddp.buckets'")
			[ "$m" = "the program registered a communication hook: not timed" ] || fail "hooks rank $r: torch.ddp.buckets '$m'"
		done
		echo "hooks: $(cat hooks.out0 | head -2 | tr '\n' ' ')"
		for r in 0 1; do
			for m in overlap nosync; do
				sev=$(cut -d' ' -f1 "$m.f$r")
				[ -z "$sev" ] || [ "$sev" = info ] || fail "$m rank $r: $(cat "$m.f$r")"
			done
		done
		;;
	ddp_exposed_*)
		check exposed exposed 16
		for r in 0 1; do
			cat "exposed.f$r"
			grep -q "^moderate DDP's gradient all-reduce is exposed for " "exposed.f$r" || fail "rank $r: no ddp_comm_exposed finding"
			grep -q "1 bucket per step, 8.0 MiB all-reduced" "exposed.f$r" || fail "rank $r: evidence"
		done
		;;
	esac
	;;
ddp_*_t1|ddp_*_t2)
	PY=/usr/bin/python3
	case $case_ in *_t2) PY=/opt/phaseprof-venv/torch2/bin/python ;; esac
	[ -x "$PY" ] || { echo "skip: no $PY"; exit 77; }
	mode=${case_#ddp_}; mode=${mode%_t?}
	case $mode in
	balanced)
		ddp_job $PY j balanced 10
		echo "rank findings: $(rank_findings j.db)"
		f=$(rank_claims j.db)
		[ -z "$f" ] || fail "rank findings on a balanced DDP job: $f"
		;;
	late)
		ddp_job $PY j late-ddp 12
		f=$(rank_findings j.db)
		echo "$f"
		t=$(q j.db "SELECT title FROM findings WHERE rule='rank_init_skew' AND title LIKE '%DistributedDataParallel%'")
		ev=$(q j.db "SELECT evidence FROM findings WHERE rule='rank_init_skew' AND title LIKE '%DistributedDataParallel%'")
		echo "$ev"
		echo "$t" | grep -q "^Rank 1 reached DistributedDataParallel.__init__ " || fail "no skew at DDP's construction naming rank 1: $f"
		late=$(ms_after "$t" "__init__") || fail "no lateness in: $t"
		between "$late" 1000 6000 "rank 1's lateness (1.5 s sleep)"
		wait=$(ms_after "$ev" "waited") || fail "no wait in: $ev"
		between "$wait" $((late * 3 / 4)) $((late * 5 / 4)) "rank 0's wait"
		# rank 0 sat in DDP's broadcast
		run=$(q j.db "SELECT min(run_id) FROM run_meta WHERE key='rank' AND value='0'")
		d=$(q j.db "SELECT (end_ns - start_ns) / 1000000 FROM spans_v WHERE run_id=$run AND name='DistributedDataParallel.__init__'")
		# (torch 2 imports on first construction: seconds more on both ranks)
		[ "$d" -ge $((late * 3 / 4)) ] || fail "rank 0's time in DistributedDataParallel.__init__: $d ms for $late ms late"
		echo "$f" | grep -q rank_straggler && fail "straggler on a late-construction job: $f"
		;;
	slow)
		ddp_job $PY j slow-steps 12
		f=$(rank_findings j.db)
		echo "$f"
		t=$(q j.db "SELECT title FROM findings WHERE rule='rank_straggler'")
		ev=$(q j.db "SELECT evidence FROM findings WHERE rule='rank_straggler'")
		echo "$ev"
		echo "$t" | grep -q "^Rank 1 is a straggler: " || fail "no straggler naming rank 1: $f"
		ex=$(ms_after "$t" "straggler:") || fail "no excess in: $t"
		between "$ex" 80 400 "rank 1's extra compute per step (130 ms more sleep)"
		wait=$(ms_after "$ev" "wait a median") || fail "no wait in: $ev"
		between "$wait" $((ex / 2)) $((ex * 2)) "rank 0's wait per step"
		echo "$ev" | grep -q "backward" || fail "the wait is not placed in backward: $ev"
		;;
	exit|abort|segv)
		# rank 1 ends in step 3; rank 0 waits in DDP's allreduce until
		# the launcher stops it (torchrun: SIGTERM to the other workers)
		$PY -c 'import torch.distributed' 2>/dev/null || { echo "skip: no torch.distributed"; exit 77; }
		PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
		for r in 0 1; do
			RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
				"$PP_BIN" record -o "j-%r.db" -- $PY "$(dirname "$0")/progs/ddp_job.py" $mode 10 >j.out$r 2>j.err$r &
			eval pid$r=\$!
		done
		wait $pid1
		sleep 1
		kill -TERM $pid0 2>/dev/null # gloo may have raised already (a closed peer)
		wait $pid0
		"$PP_BIN" merge j-0.db j-1.db -o j.db >j.merge 2>&1 || { cat j.merge j.err0 j.err1; fail "merge"; }
		st=$(q j.db "SELECT r.status || ' ' || coalesce(r.exit_code, '-') || ' ' || r.term_signal FROM runs r JOIN run_meta m ON m.run_id=r.id AND m.key='rank' AND m.value='1' ORDER BY r.id LIMIT 1")
		case $mode in
		exit) want="complete 3 0" ;;
		abort) want="crashed - 6" ;;
		segv) want="crashed - 11" ;;
		esac
		[ "$st" = "$want" ] || { cat j.err1; fail "rank 1 ended '$st', expected '$want'"; }
		st0=$(q j.db "SELECT r.status || ' ' || coalesce(r.exit_code, '-') || ' ' || r.term_signal FROM runs r JOIN run_meta m ON m.run_id=r.id AND m.key='rank' AND m.value='0' ORDER BY r.id LIMIT 1")
		case $st0 in "killed - 15"|"complete 1 0") ;; *) fail "rank 0 ended '$st0', expected killed by SIGTERM or an error exit" ;; esac
		f=$(rank_findings j.db)
		echo "$f"
		# the program's i == 3; the adapter numbers the steps it found (2 or 3)
		case $mode in
		exit) echo "$f" | grep -qE "rank_failed: Rank 1 exited with code 3 in step [23]" || fail "rank 1's exit not named: $f" ;;
		*) echo "$f" | grep -qE "rank_failed: Rank 1 crashed by a signal in step [23]" || fail "rank 1's crash not named: $f" ;;
		esac
		;;
	*) fail "unknown DDP case $mode" ;;
	esac
	;;
*) fail "unknown case $case_" ;;
esac
echo "ok: $case_"
