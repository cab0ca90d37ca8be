/* Recorder cost per event (a begin or an end), 1 and 2 threads, against an
 * empty loop. Prints figures; asserts nothing. `bench_recorder THREADS [RUNS]`
 * runs only the static-call-site loop: wall time per event per thread, the
 * loop threads' own CPU time, and the whole process's CPU time per event
 * (writer and kernel included: with as many threads as cores, the wall
 * time a machine nobody else uses would show). */
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
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

static double thread_cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double process_cpu_s(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

/* CPU time of the whole process (writer and kernel included) over the last
 * run_threads, in seconds */
static double last_process_cpu;

/* CPU time of the site loops' threads (the cost a thread pays, without the
 * time it waits for a core the writer or a neighbour holds) */
static double loop_cpu[8];
static int loop_slot;

static void *site_loop(void *arg)
{
	(void)arg;
	double c0 = thread_cpu_s();
	for (int i = 0; i < PAIRS; i++) {
		PP_BEGIN(PP_SPAN, "bench");
		pp_phase_end();
	}
	loop_cpu[__atomic_fetch_add(&loop_slot, 1, __ATOMIC_RELAXED) & 7] = thread_cpu_s() - c0;
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
	loop_slot = 0;
	double c0 = process_cpu_s();
	double t0 = now_s();
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, fn, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	double t = now_s() - t0;
	pp_stats(rs);
	pp_close();
	last_process_cpu = process_cpu_s() - c0;
	unlink(path);
	return t;
}

static double run(int threads, void *(*fn)(void *), uint64_t *lost)
{
	pp_recorder_stats rs;
	/* buffer settings to compare by hand: PP_BENCH_MAX_BUFFERS, PP_BENCH_BUFFER_EVENTS */
	const char *mb = getenv("PP_BENCH_MAX_BUFFERS"), *be = getenv("PP_BENCH_BUFFER_EVENTS");
	pp_options o = {.max_buffers = mb ? (uint32_t)atoi(mb) : 4096,
			.buffer_events = be ? (uint32_t)atoi(be) : 0};
	double t = run_threads(o, "", threads, fn, &rs);
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

/* per event of the last run of `threads` site loops: the loops' own CPU
 * time, and the whole process's */
static double cpu_per_event(int threads)
{
	double s = 0;
	for (int i = 0; i < threads; i++)
		s += loop_cpu[i];
	return s * 1e9 / (2.0 * PAIRS * threads);
}

static double process_cpu_per_event(int threads)
{
	return last_process_cpu * 1e9 / (2.0 * PAIRS * threads);
}

int main(int argc, char **argv)
{
	uint64_t lost;
	if (argc > 1) {
		/* `bench_recorder THREADS [RUNS]`: only the static-call-site loop,
		 * one line per run (for profilers and interleaved comparisons) */
		int threads = atoi(argv[1]), runs = argc > 2 ? atoi(argv[2]) : 1;
		if (threads < 1 || threads > 8)
			threads = 2;
		for (int r = 0; r < runs; r++) {
			double w = run(threads, site_loop, &lost);
			printf("%d threads: %6.1f ns/event per thread wall, thread cpu %5.1f, process "
			       "cpu %5.1f per event (lost %llu)\n", threads, w, cpu_per_event(threads),
			       process_cpu_per_event(threads), (unsigned long long)lost);
		}
		return 0;
	}
	printf("recorder cost per event (begin or end), %d pairs per thread\n", PAIRS);
	for (int rep = 0; rep < 2; rep++) {
		double a = run(1, site_loop, &lost);
		printf("  static call site, 1 thread : %6.1f ns/event (lost %llu)\n", a,
		       (unsigned long long)lost);
		double b = run(2, site_loop, &lost);
		printf("  static call site, 2 threads: %6.1f ns/event per thread (thread cpu %.1f, "
		       "process cpu %.1f per event; lost %llu)\n", b, cpu_per_event(2),
		       process_cpu_per_event(2), (unsigned long long)lost);
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
