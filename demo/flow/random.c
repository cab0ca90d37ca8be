/*
 * random.c — Philox4x32-10, TensorFlow's conversions and parallel fills.
 */
#include "random.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline void philox_round(uint32_t c[4], const uint32_t k[2])
{
	uint64_t p0 = (uint64_t)PHILOX_M0 * c[0];
	uint64_t p1 = (uint64_t)PHILOX_M1 * c[2];
	uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
	uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
	uint32_t n0 = hi1 ^ c[1] ^ k[0];
	uint32_t n2 = hi0 ^ c[3] ^ k[1];
	c[0] = n0;
	c[1] = lo1;
	c[2] = n2;
	c[3] = lo0;
}

void flow_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
	uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
	uint32_t k[2] = {key[0], key[1]};
	for (int r = 0; r < 10; r++) {
		if (r) {
			k[0] += PHILOX_W0;
			k[1] += PHILOX_W1;
		}
		philox_round(c, k);
	}
	memcpy(out, c, sizeof c);
}

void flow_philox_seed(flow_philox *p, uint64_t seed, uint64_t seed2)
{
	p->key[0] = (uint32_t)seed;
	p->key[1] = (uint32_t)(seed >> 32);
	p->ctr[0] = 0;
	p->ctr[1] = 0;
	p->ctr[2] = (uint32_t)seed2;
	p->ctr[3] = (uint32_t)(seed2 >> 32);
}

void flow_philox_skip(flow_philox *p, uint64_t n)
{
	uint64_t lo = ((uint64_t)p->ctr[1] << 32) | p->ctr[0];
	uint64_t nlo = lo + n;
	p->ctr[0] = (uint32_t)nlo;
	p->ctr[1] = (uint32_t)(nlo >> 32);
	if (nlo < lo) { /* carry into the high 64 bits */
		if (++p->ctr[2] == 0)
			++p->ctr[3];
	}
}

void flow_philox_next(flow_philox *p, uint32_t out[4])
{
	flow_philox4x32_10(p->ctr, p->key, out);
	flow_philox_skip(p, 1);
}

float flow_u32_to_float(uint32_t x)
{
	uint32_t bits = (127u << 23) | (x & 0x7fffffu);
	float f;
	memcpy(&f, &bits, sizeof f);
	return f - 1.0f;
}

double flow_u64_to_double(uint32_t lo, uint32_t hi)
{
	uint64_t man = ((uint64_t)(hi & 0xfffffu) << 32) | lo;
	uint64_t bits = (1023ull << 52) | man;
	double d;
	memcpy(&d, &bits, sizeof d);
	return d - 1.0;
}

void flow_box_muller_f32(uint32_t x0, uint32_t x1, float *f0, float *f1)
{
	const float eps = 1.0e-7f;
	float u1 = flow_u32_to_float(x0);
	if (u1 < eps)
		u1 = eps;
	float v1 = 6.2831853071795864769f * flow_u32_to_float(x1);
	float u2 = sqrtf(-2.0f * logf(u1));
	*f0 = sinf(v1) * u2;
	*f1 = cosf(v1) * u2;
}

void flow_box_muller_f64(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3,
			 double *d0, double *d1)
{
	const double eps = 1.0e-7;
	double u1 = flow_u64_to_double(x0, x1);
	if (u1 < eps)
		u1 = eps;
	double v1 = 6.2831853071795864769 * flow_u64_to_double(x2, x3);
	double u2 = sqrt(-2.0 * log(u1));
	*d0 = sin(v1) * u2;
	*d1 = cos(v1) * u2;
}

/* ---- fills ---- */

/* Below this many elements a thread costs more than it saves. */
#define FILL_MIN_PER_THREAD 16384
#define FILL_MAX_THREADS 64

int flow_random_threads_for(size_t n, int nthreads)
{
	if (nthreads <= 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		nthreads = c > 0 ? (int)c : 1;
	}
	if (nthreads > FILL_MAX_THREADS)
		nthreads = FILL_MAX_THREADS;
	size_t by_size = n / FILL_MIN_PER_THREAD;
	if (by_size < 1)
		by_size = 1;
	if ((size_t)nthreads > by_size)
		nthreads = (int)by_size;
	return nthreads;
}

typedef struct fill_job {
	void *out;
	size_t n;          /* elements */
	size_t group;      /* elements per group */
	uint64_t stride;   /* counter blocks per group */
	flow_philox base;
	int kind;          /* fill_kind */
	int dist;
	double a, b;
	int64_t ilo;
	uint64_t irange;
	size_t g0, g1;     /* this worker's group range */
} fill_job;

enum { FK_F32, FK_F64, FK_I32, FK_I64 };

/* One Philox block as the values of a group (PER below): 4 floats or 2
 * doubles, uniform in [0, 1) or standard normal. */
static void uniform_float(const uint32_t w[4], float v[4])
{
	for (int i = 0; i < 4; i++)
		v[i] = flow_u32_to_float(w[i]);
}

static void normal_float(const uint32_t w[4], float v[4])
{
	flow_box_muller_f32(w[0], w[1], &v[0], &v[1]);
	flow_box_muller_f32(w[2], w[3], &v[2], &v[3]);
}

static void uniform_double(const uint32_t w[4], double v[2])
{
	v[0] = flow_u64_to_double(w[0], w[1]);
	v[1] = flow_u64_to_double(w[2], w[3]);
}

static void normal_double(const uint32_t w[4], double v[2])
{
	flow_box_muller_f64(w[0], w[1], w[2], w[3], &v[0], &v[1]);
}

/* A group of a real fill, one function per type. Truncated normals reject
 * within the reserved budget; the budget (64 blocks = 256 normals for 4
 * outputs) runs out with probability ~0.046^250. If it ever did, the stream
 * continues in a counter region no other group uses (high counter word
 * flipped), so the result stays deterministic. */
#define DEFINE_REAL_GROUP(T, ABS, PER)                                                     \
	static void trunc_##T(flow_philox *p, T *o, size_t cnt, T a, T b)                  \
	{                                                                                  \
		size_t got = 0;                                                            \
		for (uint32_t used = 0; got < cnt; used++) {                               \
			uint32_t w[4];                                                     \
			T v[PER];                                                          \
			if (used == FLOW_TRUNC_BLOCKS)                                     \
				p->ctr[3] ^= 0x80000000u;                                  \
			flow_philox_next(p, w);                                            \
			normal_##T(w, v);                                                  \
			for (int i = 0; i < PER && got < cnt; i++)                         \
				if (ABS(v[i]) < (T)2)                                      \
					o[got++] = a + b * v[i];                           \
		}                                                                          \
	}                                                                                  \
	static void group_##T(const fill_job *j, flow_philox *p, T *o, size_t cnt)         \
	{                                                                                  \
		if (j->dist == FLOW_DIST_TRUNC_NORMAL) {                                   \
			trunc_##T(p, o, cnt, (T)j->a, (T)j->b);                            \
			return;                                                            \
		}                                                                          \
		T a = (T)j->a, b = (T)j->b, v[PER];                                        \
		uint32_t w[4];                                                             \
		flow_philox_next(p, w);                                                    \
		if (j->dist == FLOW_DIST_UNIFORM) {                                        \
			uniform_##T(w, v);                                                 \
			for (int i = 0; i < PER; i++)                                      \
				v[i] = a + (b - a) * v[i];                                 \
		} else {                                                                   \
			normal_##T(w, v);                                                  \
			for (int i = 0; i < PER; i++)                                      \
				v[i] = a + b * v[i];                                       \
		}                                                                          \
		memcpy(o, v, cnt * sizeof *o);                                             \
	}
DEFINE_REAL_GROUP(float, fabsf, 4)
DEFINE_REAL_GROUP(double, fabs, 2)

static void fill_range(fill_job *j)
{
	for (size_t g = j->g0; g < j->g1; g++) {
		flow_philox p = j->base;
		flow_philox_skip(&p, (uint64_t)g * j->stride);
		size_t e0 = g * j->group;
		size_t cnt = j->n - e0 < j->group ? j->n - e0 : j->group;
		uint32_t w[4];
		switch (j->kind) {
		case FK_F32:
			group_float(j, &p, (float *)j->out + e0, cnt);
			break;
		case FK_F64:
			group_double(j, &p, (double *)j->out + e0, cnt);
			break;
		case FK_I32: {
			int32_t *o = (int32_t *)j->out + e0;
			flow_philox_next(&p, w);
			for (size_t i = 0; i < cnt; i++)
				o[i] = (int32_t)(j->ilo + (int64_t)(w[i] % j->irange));
			break;
		}
		case FK_I64: {
			int64_t *o = (int64_t *)j->out + e0;
			flow_philox_next(&p, w);
			for (size_t i = 0; i < cnt; i++) {
				uint64_t x = ((uint64_t)w[2 * i + 1] << 32) | w[2 * i];
				o[i] = (int64_t)((uint64_t)j->ilo + x % j->irange);
			}
			break;
		}
		}
	}
}

static void *fill_worker(void *arg)
{
	fill_range(arg);
	return NULL;
}

static void fill_run(fill_job *proto, int nthreads)
{

	size_t groups = (proto->n + proto->group - 1) / proto->group;
	int nt = flow_random_threads_for(proto->n, nthreads);
	if (nt <= 1 || groups < 2) {
		proto->g0 = 0;
		proto->g1 = groups;
		fill_range(proto);
		return;
	}
	fill_job jobs[FILL_MAX_THREADS];
	pthread_t tids[FILL_MAX_THREADS];
	int started[FILL_MAX_THREADS] = {0};
	size_t per = (groups + (size_t)nt - 1) / (size_t)nt;
	for (int t = 0; t < nt; t++) {
		jobs[t] = *proto;
		jobs[t].g0 = (size_t)t * per < groups ? (size_t)t * per : groups;
		jobs[t].g1 = jobs[t].g0 + per < groups ? jobs[t].g0 + per : groups;
	}
	/* Worker 0 is the caller; a failed pthread_create runs its slice inline. */
	for (int t = 1; t < nt; t++)
		started[t] = pthread_create(&tids[t], NULL, fill_worker, &jobs[t]) == 0;
	fill_range(&jobs[0]);
	for (int t = 1; t < nt; t++) {
		if (started[t])
			pthread_join(tids[t], NULL);
		else
			fill_range(&jobs[t]);
	}
}

uint64_t flow_random_blocks(size_t n, int f64, flow_dist dist)
{
	size_t group = f64 ? 2 : 4;
	uint64_t groups = (n + group - 1) / group;
	return groups * (dist == FLOW_DIST_TRUNC_NORMAL ? FLOW_TRUNC_BLOCKS : 1);
}

/* Sets up j (out, n, kind and the distribution's parameters filled in) to
 * draw from (seed, seed2), offset counter blocks into the stream. */
static void fill_prepare(fill_job *j, uint64_t seed, uint64_t seed2, uint64_t offset)
{
	int real = j->kind == FK_F32 || j->kind == FK_F64;
	j->group = j->kind == FK_F32 || j->kind == FK_I32 ? 4 : 2;
	j->stride = real && j->dist == FLOW_DIST_TRUNC_NORMAL ? FLOW_TRUNC_BLOCKS : 1;
	flow_philox_seed(&j->base, seed, seed2);
	flow_philox_skip(&j->base, offset);
}

static void fill(fill_job j, uint64_t seed, uint64_t seed2, uint64_t offset, int nthreads)
{
	if (!j.n)
		return;
	fill_prepare(&j, seed, seed2, offset);
	fill_run(&j, nthreads);
}

/* Groups [g0, g1) of a fill, on the calling thread. */
static void fill_part(fill_job j, uint64_t seed, uint64_t seed2, uint64_t offset, size_t g0, size_t g1)
{
	fill_prepare(&j, seed, seed2, offset);
	j.g0 = g0;
	j.g1 = g1;
	fill_range(&j);
}

void flow_random_fill_f32_at(float *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			  flow_dist dist, float a, float b, int nthreads)
{
	fill((fill_job){.out = out, .n = n, .kind = FK_F32, .dist = dist, .a = a, .b = b}, seed, seed2,
	     offset, nthreads);
}

void flow_random_fill_f64_at(double *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			  flow_dist dist, double a, double b, int nthreads)
{
	fill((fill_job){.out = out, .n = n, .kind = FK_F64, .dist = dist, .a = a, .b = b}, seed, seed2,
	     offset, nthreads);
}

void flow_random_fill_i32_at(int32_t *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			  int32_t lo, int32_t hi, int nthreads)
{
	fill((fill_job){.out = out, .n = n, .kind = FK_I32, .ilo = lo,
			.irange = hi > lo ? (uint64_t)((int64_t)hi - lo) : 1},
	     seed, seed2, offset, nthreads);
}

void flow_random_fill_i64_at(int64_t *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			  int64_t lo, int64_t hi, int nthreads)
{
	fill((fill_job){.out = out, .n = n, .kind = FK_I64, .ilo = lo,
			.irange = hi > lo ? (uint64_t)hi - (uint64_t)lo : 1},
	     seed, seed2, offset, nthreads);
}

void flow_random_resolve_seeds(int64_t seed, int64_t seed2, uint64_t *s1, uint64_t *s2)
{
	static _Atomic uint64_t op_counter;
	if (seed == 0 && seed2 == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t c = atomic_fetch_add(&op_counter, 1) + 1;
		uint32_t in[4] = {(uint32_t)ts.tv_nsec, (uint32_t)ts.tv_sec, (uint32_t)c,
				  (uint32_t)getpid()};
		uint32_t key[2] = {0x5eed5eedu, (uint32_t)(c >> 32)}, o[4];
		flow_philox4x32_10(in, key, o);
		*s1 = ((uint64_t)o[1] << 32) | o[0];
		*s2 = ((uint64_t)o[3] << 32) | o[2];
		return;
	}
	*s1 = (uint64_t)seed;
	*s2 = (uint64_t)seed2;
}


void flow_random_fill_f32(float *out, size_t n, uint64_t seed, uint64_t seed2, flow_dist dist,
			  float a, float b, int nthreads)
{
	flow_random_fill_f32_at(out, n, seed, seed2, 0, dist, a, b, nthreads);
}

void flow_random_fill_f64(double *out, size_t n, uint64_t seed, uint64_t seed2, flow_dist dist,
			  double a, double b, int nthreads)
{
	flow_random_fill_f64_at(out, n, seed, seed2, 0, dist, a, b, nthreads);
}

void flow_random_fill_i32(int32_t *out, size_t n, uint64_t seed, uint64_t seed2, int32_t lo,
			  int32_t hi, int nthreads)
{
	flow_random_fill_i32_at(out, n, seed, seed2, 0, lo, hi, nthreads);
}

size_t flow_random_groups(size_t n, int f64)
{
	size_t g = f64 ? 2 : 4;
	return (n + g - 1) / g;
}

void flow_random_fill_part_f32(float *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			       flow_dist dist, float a, float b, size_t g0, size_t g1)
{
	fill_part((fill_job){.out = out, .n = n, .kind = FK_F32, .dist = dist, .a = a, .b = b}, seed, seed2,
		  offset, g0, g1);
}

void flow_random_fill_part_f64(double *out, size_t n, uint64_t seed, uint64_t seed2, uint64_t offset,
			       flow_dist dist, double a, double b, size_t g0, size_t g1)
{
	fill_part((fill_job){.out = out, .n = n, .kind = FK_F64, .dist = dist, .a = a, .b = b}, seed, seed2,
		  offset, g0, g1);
}
