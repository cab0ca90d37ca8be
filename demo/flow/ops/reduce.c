/*
 * reduce.c — reductions (Sum, Mean, Prod, Max, Min, All, Any,
 * EuclideanNorm), ArgMax/ArgMin, CumSum/CumProd, L2Loss.
 *
 * A reduction over any set of axes is done as passes over one contiguous
 * group of reduced axes at a time, each pass seeing the tensor as
 * (outer, R, inner): inner == 1 reduces contiguous rows, inner > 1 adds
 * rows into columns, so memory is read in order either way. Adjacent axes
 * of the same kind are merged first, so common cases are one pass.
 */
#include "ops_common.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>

typedef enum red_op { R_SUM, R_MEAN, R_PROD, R_MAX, R_MIN, R_ALL, R_ANY, R_EUCLID } red_op;

typedef struct red_job {
	red_op op;
	int first;            /* first pass: EuclideanNorm squares here */
	const void *in;
	void *out;
	int64_t outer, r, inner;
} red_job;

/* Accumulate one element; integer sums and products wrap. */
#define RED_LOOPS(T, UT, ISF, TMIN, TMAX)                                                   \
	static void red_range_##T(void *ud, int64_t lo, int64_t hi)                         \
	{                                                                                   \
		red_job *j = ud;                                                            \
		const T *in = j->in;                                                        \
		T *out = j->out;                                                            \
		const int sq = j->op == R_EUCLID && j->first;                               \
		/* items are (o, i) pairs flattened: o * inner + i */                       \
		for (int64_t it = lo; it < hi;) {                                           \
			int64_t o = it / j->inner, i0 = it % j->inner;                      \
			int64_t i1 = j->inner < i0 + (hi - it) ? j->inner : i0 + (hi - it); \
			T *dst = out + o * j->inner;                                        \
			const T *src = in + o * j->r * j->inner;                            \
			if (j->inner == 1) {                                                \
				double dacc = 0;                                            \
				T acc;                                                      \
				switch (j->op) {                                            \
				case R_SUM: case R_MEAN: case R_EUCLID:                     \
					if (ISF) {                                          \
						for (int64_t r = 0; r < j->r; r++)          \
							dacc += sq ? (double)src[r] * src[r] : (double)src[r]; \
						acc = (T)dacc;                              \
					} else {                                            \
						UT u = 0;                                   \
						for (int64_t r = 0; r < j->r; r++)          \
							u += (UT)src[r];                    \
						acc = (T)u;                                 \
					}                                                   \
					break;                                              \
				case R_PROD: {                                              \
					if (ISF) {                                          \
						acc = 1;                                    \
						for (int64_t r = 0; r < j->r; r++)          \
							acc = (T)(acc * src[r]);            \
					} else {                                            \
						UT u = 1;                                   \
						for (int64_t r = 0; r < j->r; r++)          \
							u *= (UT)src[r];                    \
						acc = (T)u;                                 \
					}                                                   \
					break;                                              \
				}                                                           \
				case R_MAX:                                                 \
					acc = TMIN;                                         \
					for (int64_t r = 0; r < j->r; r++)                  \
						if (src[r] > acc || src[r] != src[r])       \
							acc = src[r];                       \
					break;                                              \
				case R_MIN:                                                 \
					acc = TMAX;                                         \
					for (int64_t r = 0; r < j->r; r++)                  \
						if (src[r] < acc || src[r] != src[r])       \
							acc = src[r];                       \
					break;                                              \
				case R_ALL:                                                 \
					acc = 1;                                            \
					for (int64_t r = 0; r < j->r && acc; r++)           \
						acc = src[r] != 0;                          \
					break;                                              \
				default: /* R_ANY */                                        \
					acc = 0;                                            \
					for (int64_t r = 0; r < j->r && !acc; r++)          \
						acc = src[r] != 0;                          \
					break;                                              \
				}                                                           \
				dst[0] = acc;                                               \
				it++;                                                       \
				continue;                                                   \
			}                                                                   \
			for (int64_t i = i0; i < i1; i++) {                                 \
				switch (j->op) {                                            \
				case R_PROD: case R_ALL: dst[i] = 1; break;                 \
				case R_MAX: dst[i] = TMIN; break;                           \
				case R_MIN: dst[i] = TMAX; break;                           \
				default: dst[i] = 0; break;                                 \
				}                                                           \
			}                                                                   \
			for (int64_t r = 0; r < j->r; r++) {                                \
				const T *row = src + r * j->inner;                          \
				switch (j->op) {                                            \
				case R_SUM: case R_MEAN: case R_EUCLID:                     \
					if (sq)                                             \
						for (int64_t i = i0; i < i1; i++)           \
							dst[i] = (T)(dst[i] + row[i] * row[i]); \
					else                                                \
						for (int64_t i = i0; i < i1; i++)           \
							dst[i] = (T)((UT)dst[i] + (UT)row[i]); \
					break;                                              \
				case R_PROD:                                                \
					for (int64_t i = i0; i < i1; i++)                   \
						dst[i] = (T)((UT)dst[i] * (UT)row[i]);      \
					break;                                              \
				case R_MAX:                                                 \
					for (int64_t i = i0; i < i1; i++)                   \
						if (row[i] > dst[i] || row[i] != row[i])    \
							dst[i] = row[i];                    \
					break;                                              \
				case R_MIN:                                                 \
					for (int64_t i = i0; i < i1; i++)                   \
						if (row[i] < dst[i] || row[i] != row[i])    \
							dst[i] = row[i];                    \
					break;                                              \
				case R_ALL:                                                 \
					for (int64_t i = i0; i < i1; i++)                   \
						dst[i] = dst[i] && row[i];                  \
					break;                                              \
				default:                                                    \
					for (int64_t i = i0; i < i1; i++)                   \
						dst[i] = dst[i] || row[i];                  \
					break;                                              \
				}                                                           \
			}                                                                   \
			it += i1 - i0;                                                      \
		}                                                                           \
	}

/* For floats "UT" is the float type itself: (UT) casts are no-ops. */
RED_LOOPS(float, float, 1, -INFINITY, INFINITY)
RED_LOOPS(double, double, 1, -INFINITY, INFINITY)
RED_LOOPS(int32_t, uint32_t, 0, INT32_MIN, INT32_MAX)
RED_LOOPS(int64_t, uint64_t, 0, INT64_MIN, INT64_MAX)
RED_LOOPS(uint8_t, uint8_t, 0, 0, 1)

static void (*red_fn(flow_dtype dt))(void *, int64_t, int64_t)
{
	switch (dt) {
	case FLOW_F32: return red_range_float;
	case FLOW_F64: return red_range_double;
	case FLOW_I32: return red_range_int32_t;
	case FLOW_I64: return red_range_int64_t;
	default: return red_range_uint8_t;
	}
}

/* Axes from input 1 into a mask; -1 after failing. */
static int red_axes(flow_kernel_ctx *k, const flow_tensor *x, const flow_tensor *ax, int *mask)
{
	int64_t v[FLOW_MAX_DIMS * 2];
	int n = ops_read_ints(k, ax, v, FLOW_MAX_DIMS * 2, "reduction_indices");
	if (n < 0)
		return -1;
	memset(mask, 0, sizeof(int) * FLOW_MAX_DIMS);
	for (int i = 0; i < n; i++) {
		int a = ops_axis(v[i], x->ndim);
		if (a < 0) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT,
				      "reduction axis %lld out of range for a rank-%d input", (long long)v[i],
				      x->ndim);
			return -1;
		}
		mask[a] = 1;
	}
	return 0;
}

static void k_reduce(flow_kernel_ctx *k, red_op op)
{
	flow_tensor *x = flow_ctx_input(k, 0), *ax = flow_ctx_input(k, 1);
	int mask[FLOW_MAX_DIMS];
	if (red_axes(k, x, ax, mask))
		return;
	int keep = flow_ctx_attr_bool(k, "keep_dims", 0);
	int64_t odims[FLOW_MAX_DIMS];
	int ond = 0;
	int64_t count = 1;
	for (int d = 0; d < x->ndim; d++) {
		if (mask[d]) {
			count *= x->dims[d];
			if (keep)
				odims[ond++] = 1;
		} else {
			odims[ond++] = x->dims[d];
		}
	}
	flow_tensor *y = flow_ctx_output(k, 0, ond, odims);
	if (!y)
		return;
	size_t esz = flow_dtype_size(x->dtype);
	/* merged groups: sizes and kinds, size-1 axes dropped */
	int64_t gs[FLOW_MAX_DIMS];
	int gk[FLOW_MAX_DIMS], ng = 0;
	for (int d = 0; d < x->ndim; d++) {
		if (x->dims[d] == 1)
			continue;
		if (ng && gk[ng - 1] == mask[d])
			gs[ng - 1] *= x->dims[d];
		else {
			gs[ng] = x->dims[d];
			gk[ng++] = mask[d];
		}
	}
	const void *src = flow_tensor_cdata(x);
	void *tmp[2] = {NULL, NULL};
	int first = 1, passes = 0;
	for (int g = 0; g < ng; g++)
		passes += gk[g];
	if (x->nelem == 0 || passes == 0) {
		/* nothing to reduce (or empty input): one pass with R = 1 or 0 */
		red_job j = {op, 1, src, flow_tensor_ptr(y), y->nelem, x->nelem ? 1 : 0, 1};
		if (y->nelem)
			ops_parallel(k, y->nelem, OPS_GRAIN, red_fn(x->dtype), &j);
	} else {
		int done = 0;
		for (int g = 0; g < ng; g++) {
			if (!gk[g])
				continue;
			int64_t outer = 1, inner = 1;
			for (int h = 0; h < g; h++)
				outer *= gs[h];
			for (int h = g + 1; h < ng; h++)
				inner *= gs[h];
			void *dst;
			if (++done == passes) {
				dst = flow_tensor_ptr(y);
			} else {
				dst = malloc((size_t)(outer * inner) * esz);
				if (!dst) {
					flow_ctx_fail(k, FLOW_RESOURCE_EXHAUSTED, "out of memory for a reduction pass");
					free(tmp[0]);
					free(tmp[1]);
					return;
				}
				free(tmp[done & 1]);
				tmp[done & 1] = dst;
			}
			red_job j = {op, first, src, dst, outer, gs[g], inner};
			ops_parallel(k, outer * inner, inner == 1 ? ops_grain_for(gs[g]) : OPS_GRAIN,
				     red_fn(x->dtype), &j);
			first = 0;
			src = dst;
			gs[g] = 1; /* reduced: the next pass sees size 1 here */
		}
	}
	free(tmp[0]);
	free(tmp[1]);
	if (op == R_MEAN || op == R_EUCLID) {
		void *p = flow_tensor_ptr(y);
		for (int64_t i = 0; i < y->nelem; i++) {
			switch (x->dtype) {
			case FLOW_F32:
				((float *)p)[i] = op == R_MEAN ? ((float *)p)[i] / (float)count : sqrtf(((float *)p)[i]);
				break;
			case FLOW_F64:
				((double *)p)[i] = op == R_MEAN ? ((double *)p)[i] / (double)count : sqrt(((double *)p)[i]);
				break;
			case FLOW_I32:
				if (count)
					((int32_t *)p)[i] = (int32_t)(((int32_t *)p)[i] / count);
				break;
			case FLOW_I64:
				if (count) /* count > 0: no overflow */
					((int64_t *)p)[i] = ((int64_t *)p)[i] / count;
				break;
			default:
				break;
			}
		}
	}
}

#define RED_KERNEL(Name, OP) static void k_##Name(flow_kernel_ctx *k) { k_reduce(k, OP); }
RED_KERNEL(Sum, R_SUM)
RED_KERNEL(Mean, R_MEAN)
RED_KERNEL(Prod, R_PROD)
RED_KERNEL(Max, R_MAX)
RED_KERNEL(Min, R_MIN)
RED_KERNEL(All, R_ALL)
RED_KERNEL(Any, R_ANY)
RED_KERNEL(EuclideanNorm, R_EUCLID)

static int shape_reduce(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	const flow_tensor *ax = flow_shape_input_const(c, 1);
	int keep = flow_shape_attr_bool(c, "keep_dims", 0);
	flow_shape s;
	if (x->ndim < 0) {
		s = flow_shape_unknown();
		flow_shape_set_output(c, 0, &s);
		return 0;
	}
	int64_t v[FLOW_MAX_DIMS * 2];
	int n = ops_const_ints(ax, v, FLOW_MAX_DIMS * 2);
	if (n < 0) {
		s = keep ? ops_shape_unknown_rank(x->ndim) : flow_shape_unknown();
		flow_shape_set_output(c, 0, &s);
		return 0;
	}
	int mask[FLOW_MAX_DIMS] = {0};
	for (int i = 0; i < n; i++) {
		int a = ops_axis(v[i], x->ndim);
		if (a < 0)
			return flow_shape_error(c, "reduction axis %lld out of range for a rank-%d input",
						(long long)v[i], x->ndim);
		mask[a] = 1;
	}
	s.ndim = 0;
	for (int d = 0; d < x->ndim; d++) {
		if (!mask[d])
			s.dims[s.ndim++] = x->dims[d];
		else if (keep)
			s.dims[s.ndim++] = 1;
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- ArgMax / ArgMin, CumSum / CumProd: (outer, n, inner) along an axis ---- */
typedef struct axis_job {
	const void *in;
	void *out;
	int64_t outer, n, inner;
	int is_min, out64, exclusive, reverse, prod;
} axis_job;

#define ARG_LOOP(T)                                                                        \
	static void arg_range_##T(void *ud, int64_t lo, int64_t hi)                        \
	{                                                                                  \
		axis_job *j = ud;                                                          \
		const T *in = j->in;                                                       \
		for (int64_t it = lo; it < hi; it++) {                                     \
			int64_t o = it / j->inner, i = it % j->inner, best = 0;            \
			const T *p = in + o * j->n * j->inner + i;                         \
			T bv = p[0];                                                       \
			for (int64_t r = 1; r < j->n; r++) {                               \
				T v = p[r * j->inner];                                     \
				if (j->is_min ? v < bv : v > bv) {                         \
					bv = v;                                            \
					best = r;                                          \
				}                                                          \
			}                                                                  \
			if (j->out64)                                                      \
				((int64_t *)j->out)[it] = best;                            \
			else                                                               \
				((int32_t *)j->out)[it] = (int32_t)best;                   \
		}                                                                          \
	}
ARG_LOOP(float)
ARG_LOOP(double)
ARG_LOOP(int32_t)
ARG_LOOP(int64_t)
ARG_LOOP(uint8_t)

static int axis_layout(flow_kernel_ctx *k, const flow_tensor *x, const flow_tensor *axt, int *axis,
		       int64_t *outer, int64_t *n, int64_t *inner)
{
	int64_t v[1];
	if (ops_read_ints(k, axt, v, 1, "axis") != 1) {
		if (flow_ctx_ok(k))
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis must be a scalar");
		return -1;
	}
	int a = ops_axis(v[0], x->ndim);
	if (a < 0) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis %lld out of range for a rank-%d input",
			      (long long)v[0], x->ndim);
		return -1;
	}
	*axis = a;
	*outer = *inner = 1;
	for (int d = 0; d < a; d++)
		*outer *= x->dims[d];
	for (int d = a + 1; d < x->ndim; d++)
		*inner *= x->dims[d];
	*n = x->dims[a];
	return 0;
}

static void k_argminmax(flow_kernel_ctx *k, int is_min)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int a;
	int64_t outer, n, inner, od[FLOW_MAX_DIMS];
	if (axis_layout(k, x, flow_ctx_input(k, 1), &a, &outer, &n, &inner))
		return;
	if (n == 0) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "reduction axis %d is empty", a);
		return;
	}
	int ond = 0;
	for (int d = 0; d < x->ndim; d++)
		if (d != a)
			od[ond++] = x->dims[d];
	flow_tensor *y = flow_ctx_output(k, 0, ond, od);
	if (!y)
		return;
	axis_job j = {flow_tensor_cdata(x), flow_tensor_ptr(y), outer, n, inner, is_min,
		      y->dtype == FLOW_I64, 0, 0, 0};
	void (*fn)(void *, int64_t, int64_t) =
		x->dtype == FLOW_F32 ? arg_range_float : x->dtype == FLOW_F64 ? arg_range_double
		: x->dtype == FLOW_I32 ? arg_range_int32_t : x->dtype == FLOW_I64 ? arg_range_int64_t
		: arg_range_uint8_t;
	ops_parallel(k, outer * inner, ops_grain_for(n), fn, &j);
}
static void k_ArgMax(flow_kernel_ctx *k) { k_argminmax(k, 0); }
static void k_ArgMin(flow_kernel_ctx *k) { k_argminmax(k, 1); }

static int shape_argminmax(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	const flow_tensor *ax = flow_shape_input_const(c, 1);
	int64_t v[1];
	flow_shape s = flow_shape_unknown();
	if (x->ndim >= 0 && ops_const_ints(ax, v, 1) == 1) {
		int a = ops_axis(v[0], x->ndim);
		if (a < 0)
			return flow_shape_error(c, "axis %lld out of range for a rank-%d input",
						(long long)v[0], x->ndim);
		s.ndim = 0;
		for (int d = 0; d < x->ndim; d++)
			if (d != a)
				s.dims[s.ndim++] = x->dims[d];
	} else if (x->ndim > 0) {
		s = ops_shape_unknown_rank(x->ndim - 1);
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

#define CUM_LOOP(T, UT)                                                                    \
	static void cum_range_##T(void *ud, int64_t lo, int64_t hi)                        \
	{                                                                                  \
		axis_job *j = ud;                                                          \
		const T *in = j->in;                                                       \
		T *out = j->out;                                                           \
		for (int64_t it = lo; it < hi; it++) {                                     \
			int64_t o = it / j->inner, i = it % j->inner;                      \
			int64_t base = o * j->n * j->inner + i;                            \
			UT acc = j->prod ? (UT)1 : (UT)0;                                  \
			for (int64_t s = 0; s < j->n; s++) {                               \
				int64_t r = j->reverse ? j->n - 1 - s : s;                 \
				int64_t off = base + r * j->inner;                         \
				T v = in[off];                                             \
				if (j->exclusive)                                          \
					out[off] = (T)acc;                                 \
				acc = j->prod ? (UT)(acc * (UT)v) : (UT)(acc + (UT)v);     \
				if (!j->exclusive)                                         \
					out[off] = (T)acc;                                 \
			}                                                                  \
		}                                                                          \
	}
CUM_LOOP(float, float)
CUM_LOOP(double, double)
CUM_LOOP(int32_t, uint32_t)
CUM_LOOP(int64_t, uint64_t)

static void k_cum(flow_kernel_ctx *k, int prod)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int a;
	int64_t outer, n, inner;
	if (axis_layout(k, x, flow_ctx_input(k, 1), &a, &outer, &n, &inner))
		return;
	flow_tensor *y = flow_ctx_output(k, 0, x->ndim, x->dims);
	if (!y)
		return;
	axis_job j = {flow_tensor_cdata(x), flow_tensor_ptr(y), outer, n, inner, 0, 0,
		      flow_ctx_attr_bool(k, "exclusive", 0), flow_ctx_attr_bool(k, "reverse", 0), prod};
	void (*fn)(void *, int64_t, int64_t) =
		x->dtype == FLOW_F32 ? cum_range_float : x->dtype == FLOW_F64 ? cum_range_double
		: x->dtype == FLOW_I32 ? cum_range_int32_t : cum_range_int64_t;
	ops_parallel(k, outer * inner, ops_grain_for(n), fn, &j);
}
static void k_CumSum(flow_kernel_ctx *k) { k_cum(k, 0); }
static void k_CumProd(flow_kernel_ctx *k) { k_cum(k, 1); }

static void k_L2Loss(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	flow_tensor *y = flow_ctx_output(k, 0, 0, NULL);
	if (!y)
		return;
	double s = 0;
	if (x->dtype == FLOW_F32) {
		const float *p = flow_tensor_cdata(x);
		for (int64_t i = 0; i < x->nelem; i++)
			s += (double)p[i] * p[i];
		*FLOW_F32P(y) = (float)(s / 2);
	} else {
		const double *p = flow_tensor_cdata(x);
		for (int64_t i = 0; i < x->nelem; i++)
			s += p[i] * p[i];
		*FLOW_F64P(y) = s / 2;
	}
}

#define RED_DEF(NAME, TYPES)                                                                \
	{.name = #NAME, .inputs = "input: T, reduction_indices: Tidx", .outputs = "output: T",  \
	 .attrs = "T: {" TYPES "}; Tidx: {i32,i64} = i32; keep_dims: bool = false",             \
	 .shape_fn = shape_reduce}

static const flow_op_def reduce_ops[] = {
	RED_DEF(Sum, "f32,f64,i32,i64"), RED_DEF(Mean, "f32,f64,i32,i64"),
	RED_DEF(Prod, "f32,f64,i32,i64"), RED_DEF(Max, "f32,f64,i32,i64"),
	RED_DEF(Min, "f32,f64,i32,i64"), RED_DEF(EuclideanNorm, "f32,f64"),
	{.name = "All", .inputs = "input: bool, reduction_indices: Tidx", .outputs = "output: bool",
	 .attrs = "Tidx: {i32,i64} = i32; keep_dims: bool = false", .shape_fn = shape_reduce},
	{.name = "Any", .inputs = "input: bool, reduction_indices: Tidx", .outputs = "output: bool",
	 .attrs = "Tidx: {i32,i64} = i32; keep_dims: bool = false", .shape_fn = shape_reduce},
	{.name = "ArgMax", .inputs = "input: T, dimension: Tidx", .outputs = "output: output_type",
	 .attrs = "T: {f32,f64,i32,i64,bool}; Tidx: {i32,i64} = i32; output_type: {i32,i64} = i64",
	 .shape_fn = shape_argminmax},
	{.name = "ArgMin", .inputs = "input: T, dimension: Tidx", .outputs = "output: output_type",
	 .attrs = "T: {f32,f64,i32,i64,bool}; Tidx: {i32,i64} = i32; output_type: {i32,i64} = i64",
	 .shape_fn = shape_argminmax},
	{.name = "CumSum", .inputs = "x: T, axis: Tidx", .outputs = "out: T",
	 .attrs = "T: {f32,f64,i32,i64}; Tidx: {i32,i64} = i32; exclusive: bool = false; reverse: bool = false",
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "CumProd", .inputs = "x: T, axis: Tidx", .outputs = "out: T",
	 .attrs = "T: {f32,f64,i32,i64}; Tidx: {i32,i64} = i32; exclusive: bool = false; reverse: bool = false",
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "L2Loss", .inputs = "t: T", .outputs = "output: T", .attrs = "T: {f32,f64}",
	 .shape_fn = flow_shape_fn_scalar},
};

static const flow_kernel_def reduce_kernels[] = {
	KANYNUM("Sum", k_Sum), KANYNUM("Mean", k_Mean), KANYNUM("Prod", k_Prod),
	KANYNUM("Max", k_Max), KANYNUM("Min", k_Min),
	K1("EuclideanNorm", FLOW_F32, k_EuclideanNorm), K1("EuclideanNorm", FLOW_F64, k_EuclideanNorm),
	K1("All", FLOW_DT_INVALID, k_All), K1("Any", FLOW_DT_INVALID, k_Any),
	KANY("ArgMax", k_ArgMax), KANY("ArgMin", k_ArgMin),
	KANYNUM("CumSum", k_CumSum), KANYNUM("CumProd", k_CumProd),
	K1("L2Loss", FLOW_F32, k_L2Loss), K1("L2Loss", FLOW_F64, k_L2Loss),
};

FLOW_OP_LIBRARY(reduce, reduce_ops, reduce_kernels)
