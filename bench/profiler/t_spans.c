/* Benchmark workload: N span events (begin + end pairs) from T threads,
 * through the annotation API, so it runs under `phaseprof record` unchanged.
 * Prints its own wall time in ms on stdout.  Usage: t_spans [N] [T] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "phaseprof_annotate.h"

static long per_thread;

static void *work(void *arg)
{
	static const char *const names[8] = {"conv", "relu", "pool", "matmul",
					     "add", "softmax", "loss", "update"};
	(void)arg;
	/* a step span every 1000 inner spans, as an op-level trace has */
	for (long i = 0; i < per_thread / 2; i++) {
		if (i % 1000 == 0) {
			if (i)
				PPA_STEP_END();
			PPA_STEP_BEGIN(i / 1000);
		}
		PPA_PHASE_BEGIN(PP_OP, names[i & 7]);
		PPA_PHASE_END();
	}
	PPA_STEP_END();
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	int nt = argc > 2 ? atoi(argv[2]) : 2;
	if (nt < 1 || nt > 64)
		nt = 2;
	per_thread = n / nt;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pthread_t th[64];
	for (int i = 0; i < nt; i++)
		pthread_create(&th[i], NULL, work, NULL);
	for (int i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
	return 0;
}
