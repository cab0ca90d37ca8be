/*
 * ops_common.h — helpers shared by the op libraries in demo/flow/ops/:
 * numpy broadcasting, reading small integer tensors (axes, shapes, perms),
 * parallel loops on the intra-op pool, and kernel-table macros.
 *
 * Conventions: every kernel validates what its shape function could not
 * (values known only at run time) and reports through flow_ctx_fail with a
 * message that names the input; signed integer arithmetic wraps (done in
 * unsigned) so no input can trigger undefined behaviour.
 */
#ifndef FLOW_OPS_COMMON_H
#define FLOW_OPS_COMMON_H

#include "flow_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Elements per parallel chunk for cheap elementwise work. */
#define OPS_GRAIN 32768
/* Rows (e.g. softmax, matmul rows) per chunk are sized by their cost. */
static inline int64_t ops_grain_for(int64_t cost_per_item)
{
	int64_t g = OPS_GRAIN / (cost_per_item > 0 ? cost_per_item : 1);
	return g > 0 ? g : 1;
}

void ops_parallel(flow_kernel_ctx *k, int64_t n, int64_t grain,
		  void (*fn)(void *ud, int64_t b, int64_t e), void *ud);

/* Kernel tables: one registration per dtype. */
#define K1(op, dt, fn) {op, FLOW_CPU, dt, fn}
#define KFLOAT(op, fn) K1(op, FLOW_F32, fn##_f32), K1(op, FLOW_F64, fn##_f64)
#define KNUM(op, fn) KFLOAT(op, fn), K1(op, FLOW_I32, fn##_i32), K1(op, FLOW_I64, fn##_i64)
#define KINT(op, fn) K1(op, FLOW_I32, fn##_i32), K1(op, FLOW_I64, fn##_i64)
#define KALL(op, fn) KNUM(op, fn), K1(op, FLOW_BOOL, fn##_bool)
/* Same function for every dtype (byte-moving kernels). */
#define KANY(op, fn) K1(op, FLOW_F32, fn), K1(op, FLOW_F64, fn), K1(op, FLOW_I32, fn), \
		     K1(op, FLOW_I64, fn), K1(op, FLOW_BOOL, fn)
#define KANYNUM(op, fn) K1(op, FLOW_F32, fn), K1(op, FLOW_F64, fn), K1(op, FLOW_I32, fn), \
			K1(op, FLOW_I64, fn)

/* ---- broadcasting ---- */
enum { BC_SAME = 0, BC_SCALAR_A, BC_SCALAR_B, BC_GENERAL };

typedef struct ops_bcast {
	int mode;
	int ndim;                    /* of the output */
	int64_t dims[FLOW_MAX_DIMS];
	int64_t nelem;
	/* BC_GENERAL: output rows of `inner` elements; element strides of a
	 * and b per output dim (0 where broadcast) */
	int64_t inner, rows;
	int64_t sa[FLOW_MAX_DIMS], sb[FLOW_MAX_DIMS];
} ops_bcast;

/* numpy broadcast of a and b; -1 with msg on mismatch. */
int ops_bcast_init(ops_bcast *bc, const flow_tensor *a, const flow_tensor *b, char *msg,
		   size_t msglen);
/* Offsets of output row r in a and b. */
static inline void ops_bcast_row(const ops_bcast *bc, int64_t r, int64_t *oa, int64_t *ob)
{
	int64_t a = 0, b = 0;
	for (int d = bc->ndim - 2; d >= 0 && r; d--) {
		int64_t i = r % bc->dims[d];
		r /= bc->dims[d];
		a += i * bc->sa[d];
		b += i * bc->sb[d];
	}
	*oa = a;
	*ob = b;
}

/* ---- small integer tensors ---- */
/* Reads up to max ints of an i32/i64 tensor into out; returns the count or
 * -1 (wrong dtype / too many) after flow_ctx_fail naming `what`. */
int ops_read_ints(flow_kernel_ctx *k, const flow_tensor *t, int64_t *out, int max, const char *what);
/* Same for a build-time constant in a shape function; -1 if not an int tensor. */
int ops_const_ints(const flow_tensor *t, int64_t *out, int max);
/* Normalises axis into [0, ndim); -1 when out of range. */
static inline int ops_axis(int64_t axis, int ndim)
{
	if (axis < 0)
		axis += ndim;
	return axis >= 0 && axis < ndim ? (int)axis : -1;
}

/* Shape helpers for shape functions. */
static inline flow_shape ops_shape_unknown_rank(int ndim)
{
	flow_shape s;
	s.ndim = ndim;
	for (int i = 0; i < FLOW_MAX_DIMS; i++)
		s.dims[i] = -1;
	return s;
}

/* Wrapping integer arithmetic (no UB on overflow). */
#define WADD(T, UT, x, y) ((T)((UT)(x) + (UT)(y)))
#define WSUB(T, UT, x, y) ((T)((UT)(x) - (UT)(y)))
#define WMUL(T, UT, x, y) ((T)((UT)(x) * (UT)(y)))

#endif /* FLOW_OPS_COMMON_H */
