/* bench_common.h — timing helpers for the op-library benchmarks. */
#ifndef BENCH_OPS_COMMON_H
#define BENCH_OPS_COMMON_H

#include <stdint.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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

#endif
