/*
 * mpi_job.c — a small MPI "training job" for the distributed tests.
 *
 *   mpi_job MODE [RANK]
 *     balanced    every rank: set-up, 12 steps of equal work (300 ms) + MPI_Allreduce
 *     init-skew   RANK does extra set-up work (a weight_load phase) before MPI_Init
 *     late-coll   RANK sleeps 500 ms in a data_wait phase between MPI_Init and the
 *                 first collective (an MPI_Barrier): a sub-second job
 *     barrier     RANK sleeps 500 ms in a "save checkpoint" span after the steps, before
 *                 the final MPI_Barrier
 *     straggler   RANK does 4x the work in every step
 *     crash       RANK aborts (SIGABRT) in step 5; the others are stopped by mpirun
 *     kill        RANK is killed (SIGKILL) in step 5
 * Rank 1 always runs system("true") once, a child that inherits the rank's
 * launcher variables.
 *
 * Work is measured in CPU time, so an oversubscribed machine stretches it
 * but every rank does the amount it was given. Phases are declared through
 * phaseprof_annotate.h (no link dependency on phaseprof).
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "phaseprof_annotate.h"

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile double sink;
static void work(double ms)
{
	double end = cpu_ms() + ms;
	double x = 1.0;
	while (cpu_ms() < end)
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 1e-9;
	sink = x;
}

/* A step's compute as wall time: the test runs 4 ranks on 2 cores, where
 * ranks waiting in a collective busy-poll, so CPU-bound steps would make
 * whichever rank the scheduler starves a real straggler of that run */
static void step_compute(double ms)
{
	struct timespec ts = {0, (long)(ms * 1e6)};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int env_rank(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	return r ? atoi(r) : 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "balanced";
	int special = argc > 2 ? atoi(argv[2]) : 2;
	int me = env_rank();

	PPA_PHASE_BEGIN(PP_RUNTIME_INIT, "set-up");
	work(20);
	PPA_PHASE_END();
	if (strcmp(mode, "init-skew") == 0 && me == special) {
		PPA_PHASE_BEGIN(PP_WEIGHT_LOAD, "load shard");
		work(1500);
		PPA_PHASE_END();
	}
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (strcmp(mode, "late-coll") == 0 && rank == special) {
		PPA_PHASE_BEGIN(PP_DATA_WAIT, "build index");
		step_compute(500);
		PPA_PHASE_END();
	}
	MPI_Barrier(MPI_COMM_WORLD);
	/* a helper process inherits the launcher's variables: it must not be
	 * taken for rank 1 */
	if (rank == 1 && system("true") != 0)
		fprintf(stderr, "mpi_job: system(\"true\") failed\n");

	double grad[1024], sum[1024];
	for (int i = 0; i < 1024; i++)
		grad[i] = rank + i;
	for (int step = 0; step < 12; step++) {
		PPA_STEP_BEGIN(step);
		/* a balanced job's steps are long beside a collective on a starved
		 * host: under a CPU hog 4 ranks on 2 cores spent 30-70 ms in each
		 * 8 KiB allreduce (even the last to arrive), 75% of a 30 ms step,
		 * and rank_comm_share rightly fired */
		double ms = strcmp(mode, "balanced") == 0 ? 300 : 30;
		if (strcmp(mode, "straggler") == 0 && rank == special)
			ms *= 4;
		/* the failing rank fails well into its step: Open MPI's own SIGABRT
		 * handler re-raises before the agent can flush, so what that rank
		 * loses is its last writer period (50 ms) */
		if ((strcmp(mode, "crash") == 0 || strcmp(mode, "kill") == 0) && rank == special && step == 5)
			ms = 200;
		PPA_PHASE_BEGIN(PP_FORWARD, "compute");
		step_compute(ms);
		PPA_PHASE_END();
		if (strcmp(mode, "crash") == 0 && rank == special && step == 5)
			abort();
		if (strcmp(mode, "kill") == 0 && rank == special && step == 5)
			raise(SIGKILL); /* nothing runs after this: no handler, no flush */
		MPI_Allreduce(grad, sum, 1024, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		PPA_STEP_END();
	}
	if (strcmp(mode, "barrier") == 0 && rank == special) {
		PPA_PHASE_BEGIN(PP_SPAN, "save checkpoint");
		step_compute(500);
		PPA_PHASE_END();
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_job %s: %d ranks, sum[1] = %.0f\n", mode, size, sum[1]);
	MPI_Finalize();
	return 0;
}
