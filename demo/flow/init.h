/*
 * init.h — variable initialisers (Keras semantics) over plain buffers.
 *
 * Keras' VarianceScaling family: glorot_* = fan_avg, he_* = fan_in with
 * scale 2; *_normal draws a truncated normal whose stddev is divided by
 * 0.87962566103423978 (the stddev of a unit normal truncated at 2). Fans
 * come from Keras' compute_fans. Random draws use random.h, so they are
 * reproducible for a seed and fill in parallel.
 *
 * Private to the runtime; the Variable/initialiser ops call these.
 */
#ifndef FLOW_INIT_H
#define FLOW_INIT_H

#include <stddef.h>
#include <stdint.h>

typedef enum flow_init_kind {
	FLOW_INIT_ZEROS = 0,
	FLOW_INIT_ONES,
	FLOW_INIT_CONSTANT,          /* value */
	FLOW_INIT_RANDOM_UNIFORM,    /* [minval, maxval) */
	FLOW_INIT_RANDOM_NORMAL,     /* mean, stddev */
	FLOW_INIT_TRUNCATED_NORMAL,  /* mean, stddev, within 2 stddev */
	FLOW_INIT_GLOROT_UNIFORM,
	FLOW_INIT_GLOROT_NORMAL,
	FLOW_INIT_HE_UNIFORM,
	FLOW_INIT_HE_NORMAL,
	FLOW_INIT_LECUN_UNIFORM,
	FLOW_INIT_LECUN_NORMAL,
	FLOW_INIT_ORTHOGONAL,        /* gain */
	FLOW_INIT_KIND_COUNT
} flow_init_kind;

typedef struct flow_init_spec {
	flow_init_kind kind;
	double value;                /* constant */
	double minval, maxval;       /* uniform */
	double mean, stddev;         /* normal, truncated normal */
	double gain;                 /* orthogonal; 0 means 1 */
	uint64_t seed, seed2;
	int nthreads;                /* <= 0: all cores */
} flow_init_spec;

/* Defaults as Keras: uniform [-0.05, 0.05), normal stddev 0.05, gain 1. */
flow_init_spec flow_init_default(flow_init_kind kind, uint64_t seed);

const char *flow_init_name(flow_init_kind kind);  /* "glorot_uniform" */
int flow_init_from_name(const char *name);         /* -1 if unknown */

/* Keras compute_fans: rank 0 -> 1,1; rank 1 -> n,n; rank 2 -> rows, cols;
 * higher ranks multiply by the receptive field prod(shape[:-2]). */
void flow_init_fans(const int64_t *shape, int rank, double *fan_in, double *fan_out);

/* The uniform limit / normal stddev a variance-scaling kind uses for this
 * shape (0 for other kinds). */
double flow_init_scale(flow_init_kind kind, const int64_t *shape, int rank);

/* Fill n = prod(shape) elements. Returns 0, or -1 with a one-line reason
 * in err (bad shape, orthogonal QR failure, out of memory). */
int flow_init_fill_f32(const flow_init_spec *spec, const int64_t *shape, int rank,
		       float *out, char *err, size_t errlen);
int flow_init_fill_f64(const flow_init_spec *spec, const int64_t *shape, int rank,
		       double *out, char *err, size_t errlen);

#endif /* FLOW_INIT_H */
