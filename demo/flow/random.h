/*
 * random.h — Philox4x32-10 and the distributions flow's random ops and
 * initialisers draw from.
 *
 * Counter-based (Salmon et al., SC11): output block b of a stream is
 * philox(counter0 + b, key), so any thread can compute any slice of the
 * stream without touching the others. That is what makes the parallel
 * fills below give the same numbers for the same seed whatever the thread
 * count. Seeding follows TensorFlow's PhiloxRandom(seed_lo, seed_hi):
 * key = seed, counter words 2..3 = seed2.
 *
 * Private to the runtime (not part of flow.h).
 */
#ifndef FLOW_RANDOM_H
#define FLOW_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* One Philox4x32-10 block: out = philox(ctr, key). */
void flow_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

typedef struct flow_philox {
	uint32_t ctr[4];
	uint32_t key[2];
} flow_philox;

void flow_philox_seed(flow_philox *p, uint64_t seed, uint64_t seed2);
/* Advances the 128-bit counter by n blocks. */
void flow_philox_skip(flow_philox *p, uint64_t n);
/* Returns the next block and advances the counter by one. */
void flow_philox_next(flow_philox *p, uint32_t out[4]);

/* TensorFlow's conversions: 23 random mantissa bits into [1,2), minus 1. */
float flow_u32_to_float(uint32_t x);
/* 52 mantissa bits from two words, in [0,1). */
double flow_u64_to_double(uint32_t lo, uint32_t hi);
/* Box-Muller over two words, TensorFlow's epsilon clamp on u1. */
void flow_box_muller_f32(uint32_t x0, uint32_t x1, float *f0, float *f1);
void flow_box_muller_f64(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3,
			 double *d0, double *d1);

typedef enum flow_dist {
	FLOW_DIST_UNIFORM = 0,   /* [a, b) */
	FLOW_DIST_NORMAL,        /* mean a, stddev b */
	FLOW_DIST_TRUNC_NORMAL,  /* mean a, stddev b, redrawn outside 2 stddev */
} flow_dist;

/*
 * Element layout of a fill (fixed, independent of threads): elements are
 * taken in groups (4 per block for f32, 2 for f64); group g uses counter
 * blocks starting at g * stride, stride 1 for uniform/normal and
 * FLOW_TRUNC_BLOCKS for truncated normal (its rejection loop needs a
 * reserved budget, as TF's kReservedSamplesPerOutput).
 */
#define FLOW_TRUNC_BLOCKS 64

/* nthreads <= 0 picks the machine's core count; small fills stay on the
 * caller's thread. Same (seed, seed2) => same output for any nthreads. */
void flow_random_fill_f32(float *out, size_t n, uint64_t seed, uint64_t seed2,
			  flow_dist dist, float a, float b, int nthreads);
void flow_random_fill_f64(double *out, size_t n, uint64_t seed, uint64_t seed2,
			  flow_dist dist, double a, double b, int nthreads);
/* Uniform integers in [lo, hi) (hi > lo), one word (i32) or two (i64) each. */
void flow_random_fill_i32(int32_t *out, size_t n, uint64_t seed, uint64_t seed2, int32_t lo, int32_t hi,
			  int nthreads);

/* The same fills starting `offset` counter blocks into the stream, and the
 * number of blocks a fill of n elements consumes (to advance an offset). */
void flow_random_fill_f32_at(float *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			     flow_dist dist, float a, float b, int nthreads);
void flow_random_fill_f64_at(double *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			     flow_dist dist, double a, double b, int nthreads);
void flow_random_fill_i32_at(int32_t *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			     int32_t lo, int32_t hi, int nthreads);
void flow_random_fill_i64_at(int64_t *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			     int64_t lo, int64_t hi, int nthreads);
uint64_t flow_random_blocks(size_t n, int f64, flow_dist dist);

/* For callers with their own thread pool (the random op kernels): fill only
 * element groups [g0, g1) of the layout of an n-element fill; any split of
 * [0, flow_random_groups(n)) gives the same tensor. */
size_t flow_random_groups(size_t n, int f64);
void flow_random_fill_part_f32(float *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			       flow_dist dist, float a, float b, size_t g0, size_t g1);
void flow_random_fill_part_f64(double *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			       flow_dist dist, double a, double b, size_t g0, size_t g1);

/* Threads a fill uses for n elements (for tests and the op kernels). */
int flow_random_threads_for(size_t n, int nthreads);

/* Seeds for an op with (seed, seed2) attrs: TF semantics — both zero means
 * "nondeterministic", here a process-wide counter mixed with the time. */
void flow_random_resolve_seeds(int64_t seed, int64_t seed2, uint64_t *s1, uint64_t *s2);

#endif /* FLOW_RANDOM_H */
