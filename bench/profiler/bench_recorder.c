/* Recorder cost per event (a begin or an end), 1 and 2 threads, against an
 * empty loop. Prints figures; asserts nothing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "phaseprof.h"

#define PAIRS 2000000

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *site_loop(void *arg)
{
	(void)arg;
	for (int i = 0; i < PAIRS; i++) {
		PP_BEGIN(PP_SPAN, "bench");
		pp_phase_end();
	}
	return NULL;
}

static void *named_loop(void *arg)
{
	(void)arg;
	for (int i = 0; i < PAIRS; i++) {
		pp_phase_begin(PP_COMPILE, "compile");
		pp_phase_end();
	}
	return NULL;
}

/* Opens the recorder with o, runs fn on `threads` threads, closes; the wall
 * time in seconds and the recorder's statistics at the end. */
static double run_threads(pp_options o, const char *name, int threads, void *(*fn)(void *),
			  pp_recorder_stats *rs)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/pp-bench-%s%d.spool", name, (int)getpid());
	o.spool_path = path;
	if (pp_open(&o) != 0) {
		fprintf(stderr, "%s\n", pp_last_error());
		exit(1);
	}
	pthread_t th[8];
	double t0 = now_s();
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, fn, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	double t = now_s() - t0;
	pp_stats(rs);
	pp_close();
	unlink(path);
	return t;
}

static double run(int threads, void *(*fn)(void *), uint64_t *lost)
{
	pp_recorder_stats rs;
	double t = run_threads((pp_options){.max_buffers = 4096}, "", threads, fn, &rs);
	*lost = rs.events_lost;
	/* per event, per thread: wall time of each thread's own loop */
	return t * 1e9 / (2.0 * PAIRS);
}

/* 10^7 events from 8 threads on this 2-core machine at the DEFAULT settings
 * (256 buffers in flight): the writer cannot keep up, so threads drain the
 * spool themselves; nothing may be lost. */
#define LOAD_THREADS 8
#define LOAD_PAIRS (10000000 / 2 / LOAD_THREADS)
static void *load_loop(void *arg)
{
	(void)arg;
	for (int i = 0; i < LOAD_PAIRS; i++) {
		PP_BEGIN(PP_SPAN, "load");
		pp_phase_end();
	}
	return NULL;
}

static void load_test(int policy)
{
	pp_recorder_stats rs;
	double t = run_threads((pp_options){.full_policy = policy}, "load-", LOAD_THREADS, load_loop, &rs);
	printf("  8 threads x 10^7 events, default buffers, %s: %.2f s, lost %llu (%.2f%%), "
	       "self-drains %llu\n", policy == PP_FULL_DRAIN ? "drain (default)" : "drop   ", t,
	       (unsigned long long)rs.events_lost, 100.0 * (double)rs.events_lost / 1e7,
	       (unsigned long long)rs.self_drains);
}

/* Minimum over many short batches: the cost without interference from other
 * processes on a shared 2-core machine (the mean above includes it). */
static double min_batch(void)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/pp-bench-min-%d.spool", (int)getpid());
	pp_open(&(pp_options){.spool_path = path, .max_buffers = 4096});
	double best = 1e9;
	for (int b = 0; b < 2000; b++) {
		double t0 = now_s();
		for (int i = 0; i < 500; i++) {
			PP_BEGIN(PP_SPAN, "bench");
			pp_phase_end();
		}
		double t = (now_s() - t0) * 1e9 / 1000.0;
		if (t < best)
			best = t;
	}
	pp_close();
	unlink(path);
	return best;
}

int main(void)
{
	uint64_t lost;
	printf("recorder cost per event (begin or end), %d pairs per thread\n", PAIRS);
	for (int rep = 0; rep < 2; rep++) {
		double a = run(1, site_loop, &lost);
		printf("  static call site, 1 thread : %6.1f ns/event (lost %llu)\n", a,
		       (unsigned long long)lost);
		double b = run(2, site_loop, &lost);
		printf("  static call site, 2 threads: %6.1f ns/event per thread (lost %llu)\n", b,
		       (unsigned long long)lost);
		double c = run(1, named_loop, &lost);
		printf("  name by content,  1 thread : %6.1f ns/event (lost %llu)\n", c,
		       (unsigned long long)lost);
	}
	load_test(PP_FULL_DRAIN);
	load_test(PP_FULL_DROP);
	printf("  static call site, 1 thread, best batch of 1000 events: %.1f ns/event\n", min_batch());
	double t0 = now_s();
	for (int i = 0; i < PAIRS; i++) {
		PP_BEGIN(PP_SPAN, "closed"); /* recorder closed: the cost of an unused probe */
		pp_phase_end();
	}
	printf("  recorder closed            : %6.1f ns/event\n", (now_s() - t0) * 1e9 / (2.0 * PAIRS));
	return 0;
}
