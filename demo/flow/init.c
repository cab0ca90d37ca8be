/*
 * init.c — initialisers: constants, random, variance scaling, orthogonal.
 */
#include "init.h"
#include "random.h"

#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* stddev of a unit normal truncated to (-2, 2): Keras divides by it so the
 * truncated draw has the requested variance. */
#define TRUNC_STDDEV_CORR 0.87962566103423978

static const char *const init_names[FLOW_INIT_KIND_COUNT] = {
	"zeros", "ones", "constant", "random_uniform", "random_normal",
	"truncated_normal", "glorot_uniform", "glorot_normal", "he_uniform",
	"he_normal", "lecun_uniform", "lecun_normal", "orthogonal",
};

const char *flow_init_name(flow_init_kind kind)
{
	return (unsigned)kind < FLOW_INIT_KIND_COUNT ? init_names[kind] : "?";
}

int flow_init_from_name(const char *name)
{
	for (int i = 0; i < FLOW_INIT_KIND_COUNT; i++)
		if (name && strcmp(name, init_names[i]) == 0)
			return i;
	return -1;
}

flow_init_spec flow_init_default(flow_init_kind kind, uint64_t seed)
{
	flow_init_spec s;
	memset(&s, 0, sizeof s);
	s.kind = kind;
	s.minval = -0.05;
	s.maxval = 0.05;
	s.stddev = 0.05;
	s.gain = 1.0;
	s.seed = seed;
	return s;
}

void flow_init_fans(const int64_t *shape, int rank, double *fan_in, double *fan_out)
{
	if (rank < 1) {
		*fan_in = *fan_out = 1;
	} else if (rank == 1) {
		*fan_in = *fan_out = (double)shape[0];
	} else if (rank == 2) {
		*fan_in = (double)shape[0];
		*fan_out = (double)shape[1];
	} else {
		double receptive = 1;
		for (int i = 0; i < rank - 2; i++)
			receptive *= (double)shape[i];
		*fan_in = (double)shape[rank - 2] * receptive;
		*fan_out = (double)shape[rank - 1] * receptive;
	}
}

/* VarianceScaling: scale / fan, fan chosen by mode. */
static int vs_params(flow_init_kind kind, double *scale, int *mode, int *uniform)
{
	switch (kind) {
	case FLOW_INIT_GLOROT_UNIFORM: *scale = 1; *mode = 2; *uniform = 1; return 1;
	case FLOW_INIT_GLOROT_NORMAL:  *scale = 1; *mode = 2; *uniform = 0; return 1;
	case FLOW_INIT_HE_UNIFORM:     *scale = 2; *mode = 0; *uniform = 1; return 1;
	case FLOW_INIT_HE_NORMAL:      *scale = 2; *mode = 0; *uniform = 0; return 1;
	case FLOW_INIT_LECUN_UNIFORM:  *scale = 1; *mode = 0; *uniform = 1; return 1;
	case FLOW_INIT_LECUN_NORMAL:   *scale = 1; *mode = 0; *uniform = 0; return 1;
	default: return 0;
	}
}

double flow_init_scale(flow_init_kind kind, const int64_t *shape, int rank)
{
	double scale, fi, fo, fan;
	int mode, uniform;
	if (!vs_params(kind, &scale, &mode, &uniform))
		return 0;
	flow_init_fans(shape, rank, &fi, &fo);
	fan = mode == 0 ? fi : mode == 1 ? fo : (fi + fo) / 2;
	if (fan < 1)
		fan = 1;
	scale /= fan;
	return uniform ? sqrt(3.0 * scale) : sqrt(scale) / TRUNC_STDDEV_CORR;
}

static int shape_count(const int64_t *shape, int rank, size_t *n, char *err, size_t errlen)
{
	size_t c = 1;
	if (rank < 0 || rank > 8) {
		snprintf(err, errlen, "initialiser: rank %d out of range 0..8", rank);
		return -1;
	}
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0) {
			snprintf(err, errlen, "initialiser: dimension %d is negative (%lld)", i,
				 (long long)shape[i]);
			return -1;
		}
		if (shape[i] && c > SIZE_MAX / 16 / (size_t)shape[i]) {
			snprintf(err, errlen, "initialiser: shape too large at dimension %d", i);
			return -1;
		}
		c *= (size_t)shape[i];
	}
	*n = c;
	return 0;
}

/* Orthogonal (Keras): QR of a normal (max(r,c) x min(r,c)) matrix, Q's
 * columns sign-corrected by diag(R), transposed when rows < cols. */
#define DEFINE_ORTHO(NAME, T, GEQRF, ORGQR, FILL)                                   \
static int NAME(const flow_init_spec *s, const int64_t *shape, int rank, T *out,    \
		size_t n, char *err, size_t errlen)                                  \
{                                                                                    \
	if (rank < 2) {                                                              \
		snprintf(err, errlen, "orthogonal initialiser needs rank >= 2, got %d", rank); \
		return -1;                                                           \
	}                                                                            \
	if (n == 0)                                                                  \
		return 0;                                                            \
	size_t cols = (size_t)shape[rank - 1], rows = n / cols;                      \
	size_t m = rows > cols ? rows : cols, k = rows > cols ? cols : rows;         \
	T *a = malloc(m * k * sizeof(T)), *tau = malloc(k * sizeof(T));             \
	if (!a || !tau) {                                                            \
		free(a); free(tau);                                                  \
		snprintf(err, errlen, "orthogonal initialiser: out of memory (%zux%zu)", m, k); \
		return -1;                                                           \
	}                                                                            \
	FILL(a, m * k, s->seed, s->seed2, FLOW_DIST_NORMAL, 0, 1, s->nthreads);     \
	lapack_int info = GEQRF(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)k, a,  \
				(lapack_int)k, tau);                                 \
	T *sign = NULL;                                                              \
	if (info == 0) {                                                             \
		sign = malloc(k * sizeof(T));                                        \
		if (!sign)                                                           \
			info = -1000;                                                \
	}                                                                            \
	if (info == 0) {                                                             \
		for (size_t i = 0; i < k; i++)                                       \
			sign[i] = a[i * k + i] < 0 ? -1 : 1;                         \
		info = ORGQR(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)k,         \
			     (lapack_int)k, a, (lapack_int)k, tau);                  \
	}                                                                            \
	if (info != 0) {                                                             \
		free(a); free(tau); free(sign);                                      \
		snprintf(err, errlen, "orthogonal initialiser: LAPACK QR failed (info %d)", (int)info); \
		return -1;                                                           \
	}                                                                            \
	T gain = (T)(s->gain != 0 ? s->gain : 1.0);                                 \
	if (rows >= cols) {                                                          \
		for (size_t i = 0; i < m; i++)                                       \
			for (size_t j = 0; j < k; j++)                               \
				out[i * k + j] = a[i * k + j] * sign[j] * gain;      \
	} else { /* q is cols x rows; out = q^T */                                  \
		for (size_t i = 0; i < rows; i++)                                    \
			for (size_t j = 0; j < cols; j++)                            \
				out[i * cols + j] = a[j * k + i] * sign[i] * gain;   \
	}                                                                            \
	free(a); free(tau); free(sign);                                              \
	return 0;                                                                    \
}

DEFINE_ORTHO(ortho_f32, float, LAPACKE_sgeqrf, LAPACKE_sorgqr, flow_random_fill_f32)
DEFINE_ORTHO(ortho_f64, double, LAPACKE_dgeqrf, LAPACKE_dorgqr, flow_random_fill_f64)

#define DEFINE_FILL(NAME, T, FILL, ORTHO)                                           \
int NAME(const flow_init_spec *s, const int64_t *shape, int rank, T *out,           \
	 char *err, size_t errlen)                                                   \
{                                                                                    \
	size_t n;                                                                    \
	double scale;                                                                \
	int mode, uniform;                                                           \
	if (shape_count(shape, rank, &n, err, errlen))                               \
		return -1;                                                           \
	switch (s->kind) {                                                           \
	case FLOW_INIT_ZEROS:                                                        \
		memset(out, 0, n * sizeof(T));                                       \
		return 0;                                                            \
	case FLOW_INIT_ONES:                                                         \
	case FLOW_INIT_CONSTANT: {                                                   \
		T v = (T)(s->kind == FLOW_INIT_ONES ? 1.0 : s->value);               \
		for (size_t i = 0; i < n; i++)                                       \
			out[i] = v;                                                  \
		return 0;                                                            \
	}                                                                            \
	case FLOW_INIT_RANDOM_UNIFORM:                                               \
		if (!(s->maxval > s->minval)) {                                      \
			snprintf(err, errlen, "random_uniform: maxval %g must exceed minval %g", \
				 s->maxval, s->minval);                              \
			return -1;                                                   \
		}                                                                    \
		FILL(out, n, s->seed, s->seed2, FLOW_DIST_UNIFORM, (T)s->minval,     \
		     (T)s->maxval, s->nthreads);                                     \
		return 0;                                                            \
	case FLOW_INIT_RANDOM_NORMAL:                                                \
	case FLOW_INIT_TRUNCATED_NORMAL:                                             \
		if (!(s->stddev >= 0)) {                                             \
			snprintf(err, errlen, "%s: stddev %g must be >= 0",          \
				 flow_init_name(s->kind), s->stddev);                \
			return -1;                                                   \
		}                                                                    \
		FILL(out, n, s->seed, s->seed2,                                      \
		     s->kind == FLOW_INIT_RANDOM_NORMAL ? FLOW_DIST_NORMAL : FLOW_DIST_TRUNC_NORMAL, \
		     (T)s->mean, (T)s->stddev, s->nthreads);                         \
		return 0;                                                            \
	case FLOW_INIT_ORTHOGONAL:                                                   \
		return ORTHO(s, shape, rank, out, n, err, errlen);                   \
	default:                                                                     \
		break;                                                               \
	}                                                                            \
	if (!vs_params(s->kind, &scale, &mode, &uniform)) {                          \
		snprintf(err, errlen, "unknown initialiser kind %d", (int)s->kind); \
		return -1;                                                           \
	}                                                                            \
	scale = flow_init_scale(s->kind, shape, rank);                               \
	if (uniform)                                                                 \
		FILL(out, n, s->seed, s->seed2, FLOW_DIST_UNIFORM, (T)-scale, (T)scale, \
		     s->nthreads);                                                   \
	else                                                                         \
		FILL(out, n, s->seed, s->seed2, FLOW_DIST_TRUNC_NORMAL, 0, (T)scale,  \
		     s->nthreads);                                                   \
	return 0;                                                                    \
}

DEFINE_FILL(flow_init_fill_f32, float, flow_random_fill_f32, ortho_f32)
DEFINE_FILL(flow_init_fill_f64, double, flow_random_fill_f64, ortho_f64)
