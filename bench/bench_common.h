/* bench_common.h — timing helpers shared by the benchmarks (figures, no
 * asserts). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Best of `reps` timings of `stmt` (seconds). */
#define BENCH_BEST(reps, out, stmt)                          \
	do {                                                 \
		double best_ = 1e300;                        \
		for (int r_ = 0; r_ < (reps); r_++) {        \
			double t0_ = bench_now();            \
			stmt;                                \
			double t1_ = bench_now() - t0_;      \
			if (t1_ < best_)                     \
				best_ = t1_;                 \
		}                                            \
		(out) = best_;                               \
	} while (0)

/* For the flow benchmarks: exits on a failed flow_status. */
#define BENCH_CHECK(st)                                                                    \
	do {                                                                               \
		if (!flow_status_ok(st)) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, flow_status_message(st)); \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

#endif
