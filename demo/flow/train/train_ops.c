/*
 * train_ops.c — the "train" op library: fused optimiser apply kernels,
 * gradient helper ops, and the loss / conv / pool forward ops when the
 * linked op library does not define them (TF semantics, so a later
 * demo/flow/ops version can take over without changing the gradients).
 *
 * Private ops start with '_' (TF's convention for internal ops) so they can
 * never collide with demo/flow/ops. The library is added at run time with
 * flow_registry_add_library because demo/flow/CMakeLists.txt only scans
 * demo/flow/ops and demo/flow/weights for FLOW_OP_LIBRARY lines.
 */
#include "train_internal.h"
#include "random.h"
#include "phaseprof.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- shapes */

static int shape_like1(flow_shape_ctx *c)
{
	flow_shape_set_output(c, 0, flow_shape_input(c, 1));
	return 0;
}

static int shape_none(flow_shape_ctx *c)
{
	(void)c;
	return 0;
}

static int shape_flatten(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	flow_shape o = flow_shape_unknown();
	if (x->ndim >= 1) {
		int64_t n = 1;
		for (int i = 1; i < x->ndim; i++)
			n = (n < 0 || x->dims[i] < 0) ? -1 : n * x->dims[i];
		int64_t d[2] = {x->dims[0], n};
		o = flow_shape_make(2, d);
	} else if (x->ndim == 0) {
		return flow_shape_error(c, "Flatten needs rank >= 1, got a scalar");
	}
	flow_shape_set_output(c, 0, &o);
	return 0;
}







static int shape_zeros(flow_shape_ctx *c)
{
	const flow_attr_value *a = flow_shape_attr(c, "shape");
	if (!a || !flow_shape_is_full(&a->u.shape))
		return flow_shape_error(c, "shape attr must be fully known");
	flow_shape_set_output(c, 0, &a->u.shape);
	return 0;
}

static int shape_dropout(flow_shape_ctx *c)
{
	flow_shape_set_output(c, 0, flow_shape_input(c, 0));
	flow_shape_set_output(c, 1, flow_shape_input(c, 0));
	return 0;
}

/* --------------------------------------------------------------- helpers */

typedef struct ew {
	float *out;
	const float *a, *b, *c;
	float f0, f1;
} ew;

#define GRAIN 16384
#define PFOR(k, n, fn, ud) flow_parallel_for(flow_ctx_pool(k), (n), GRAIN, (fn), (ud))

static flow_tensor *out_like(flow_kernel_ctx *k, int i, const flow_tensor *t)
{
	return flow_ctx_output(k, i, t->ndim, t->dims);
}

static int check_same(flow_kernel_ctx *k, const flow_tensor *a, const flow_tensor *b,
		      const char *what)
{
	if (flow_tensor_same_shape(a, b))
		return 0;
	char x[64], y[64];
	flow_shape sa = flow_tensor_shape(a), sb = flow_tensor_shape(b);
	flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s: shapes %s and %s differ", what,
		      flow_shape_str(&sa, x, sizeof x), flow_shape_str(&sb, y, sizeof y));
	return -1;
}

/* ------------------------------------------------------- optimiser kernels */

static flow_tensor *ref_var(flow_kernel_ctx *k, int in, const char *what)
{
	flow_tensor *t = flow_ctx_var_mutable(k, in);
	if (!t)
		flow_ctx_fail(k, FLOW_FAILED_PRECONDITION, "%s is not initialised", what);
	return t;
}

static void k_apply(flow_kernel_ctx *k, int kind)
{
	train_opt_hp hp = {0};
	hp.kind = kind;
	hp.lr = (float)flow_ctx_attr_float(k, "lr", 0.01);
	hp.momentum = (float)flow_ctx_attr_float(k, "momentum", 0.9);
	hp.nesterov = flow_ctx_attr_bool(k, "nesterov", 0);
	hp.rho = (float)flow_ctx_attr_float(k, "rho", 0.9);
	hp.beta1 = (float)flow_ctx_attr_float(k, "beta1", 0.9);
	hp.beta2 = (float)flow_ctx_attr_float(k, "beta2", 0.999);
	hp.eps = (float)flow_ctx_attr_float(k, "epsilon", 1e-7);
	int nslots = kind == FLOW_OPT_SGD ? 0 : kind == FLOW_OPT_ADAM ? 2 : 1;
	flow_tensor *var = ref_var(k, 0, "variable");
	if (!var)
		return;
	flow_tensor *m = NULL, *v = NULL;
	if (nslots >= 1 && !(m = ref_var(k, 1, "slot 0")))
		return;
	if (nslots >= 2 && !(v = ref_var(k, 2, "slot 1")))
		return;
	flow_tensor *g = flow_ctx_input(k, 1 + nslots);
	if (check_same(k, var, g, "gradient") || (m && check_same(k, var, m, "slot")) ||
	    (v && check_same(k, var, v, "slot")))
		return;
	int64_t t = 1;
	if (kind == FLOW_OPT_ADAM) {
		flow_tensor *it = flow_ctx_input(k, 4);
		t = (int64_t)flow_tensor_get(it, 0) + 1;
	}
	train_update_f32(&hp, t, FLOW_F32P(var), m ? FLOW_F32P(m) : NULL, v ? FLOW_F32P(v) : NULL,
			 FLOW_F32P(g), var->nelem, flow_ctx_pool(k));
}
static void k_apply_sgd(flow_kernel_ctx *k) { k_apply(k, FLOW_OPT_SGD); }
static void k_apply_momentum(flow_kernel_ctx *k) { k_apply(k, FLOW_OPT_MOMENTUM); }
static void k_apply_rmsprop(flow_kernel_ctx *k) { k_apply(k, FLOW_OPT_RMSPROP); }
static void k_apply_adam(flow_kernel_ctx *k) { k_apply(k, FLOW_OPT_ADAM); }

static void k_increment(flow_kernel_ctx *k)
{
	flow_tensor *t = ref_var(k, 0, "counter");
	if (t)
		FLOW_I64P(t)[0] += 1;
}

/* -------------------------------------------------- gradient helper kernels */

/* Sum x (a broadcast result) down to like's shape: numpy broadcasting run
 * backwards, the "reduce over broadcast dims" every binary op's gradient
 * needs. */
static void k_sum_to_shape(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *like = flow_ctx_input(k, 1);
	int r = x->ndim, q = like->ndim;
	if (q > r) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "target rank %d above source rank %d", q, r);
		return;
	}
	int64_t ld[FLOW_MAX_DIMS];
	for (int i = 0; i < r; i++) {
		ld[i] = i < r - q ? 1 : like->dims[i - (r - q)];
		if (ld[i] != 1 && ld[i] != x->dims[i]) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT,
				      "cannot reduce dim %d of size %lld to %lld", i,
				      (long long)x->dims[i], (long long)ld[i]);
			return;
		}
	}
	flow_tensor *y = flow_ctx_output_zeros(k, 0, like->ndim, like->dims);
	if (!y)
		return;
	const float *xp = FLOW_F32P(x);
	float *yp = FLOW_F32P(y);
	if (!x->nelem)
		return;
	if (y->nelem == x->nelem) {
		memcpy(yp, xp, sizeof(float) * (size_t)x->nelem);
		return;
	}
	/* Fast path: like is a suffix of x (bias gradient): sum the rows. */
	int lead = 0;
	while (lead < r && ld[lead] == 1)
		lead++;
	int suffix = 1;
	for (int i = lead; i < r; i++)
		suffix &= ld[i] == x->dims[i];
	if (suffix) {
		int64_t inner = y->nelem, rows = x->nelem / inner;
		for (int64_t i = 0; i < rows; i++) {
			const float *row = xp + i * inner;
			for (int64_t j = 0; j < inner; j++)
				yp[j] += row[j];
		}
		return;
	}
	int64_t ostr[FLOW_MAX_DIMS], idx[FLOW_MAX_DIMS] = {0}, s = 1;
	for (int i = r - 1; i >= 0; i--) {
		ostr[i] = ld[i] == 1 ? 0 : s;
		s *= ld[i];
	}
	int64_t o = 0;
	for (int64_t e = 0; e < x->nelem; e++) {
		yp[o] += xp[e];
		for (int d = r - 1; d >= 0; d--) {
			idx[d]++;
			o += ostr[d];
			if (idx[d] < x->dims[d])
				break;
			o -= ostr[d] * idx[d];
			idx[d] = 0;
		}
	}
}

/* The gradient of Sum/Mean: dy (reduced over `axes`, kept dims or not)
 * broadcast back to like's shape, divided by the reduced count for Mean. */
static void k_broadcast_like(flow_kernel_ctx *k)
{
	flow_tensor *dy = flow_ctx_input(k, 0), *like = flow_ctx_input(k, 1);
	int n, r = like->ndim;
	const int64_t *ax = flow_ctx_attr_ints(k, "axes", &n);
	int all = flow_ctx_attr_bool(k, "all", 0);
	unsigned char red[FLOW_MAX_DIMS] = {0};
	for (int i = 0; i < n; i++) {
		int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
		if (a < 0 || a >= r) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis %lld outside rank %d",
				      (long long)ax[i], r);
			return;
		}
		red[a] = 1;
	}
	int64_t cnt = 1, str[FLOW_MAX_DIMS], s = 1;
	for (int i = r - 1; i >= 0; i--) {
		if (all)
			red[i] = 1;
		if (red[i])
			cnt *= like->dims[i];
		str[i] = red[i] ? 0 : s;
		s *= red[i] ? 1 : like->dims[i];
	}
	if (dy->nelem != s) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "gradient has %lld elements, reduced shape %lld",
			      (long long)dy->nelem, (long long)s);
		return;
	}
	flow_tensor *y = out_like(k, 0, like);
	if (!y || !y->nelem)
		return;
	float scale = flow_ctx_attr_bool(k, "mean", 0) && cnt ? 1.0f / (float)cnt : 1.0f;
	const float *g = FLOW_F32P(dy);
	float *o = FLOW_F32P(y);
	int64_t idx[FLOW_MAX_DIMS] = {0}, in = 0;
	for (int64_t e = 0; e < y->nelem; e++) {
		o[e] = g[in] * scale;
		for (int d = r - 1; d >= 0; d--) {
			idx[d]++;
			in += str[d];
			if (idx[d] < like->dims[d])
				break;
			in -= str[d] * idx[d];
			idx[d] = 0;
		}
	}
}

static void k_reshape_like(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *like = flow_ctx_input(k, 1);
	if (x->nelem != like->nelem) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "cannot reshape %lld elements to %lld",
			      (long long)x->nelem, (long long)like->nelem);
		return;
	}
	flow_status st = {0};
	flow_tensor *a = flow_tensor_alias(x, like->ndim, like->dims, &st);
	if (!a) {
		flow_ctx_fail(k, st.code, "%s", st.msg);
		return;
	}
	flow_ctx_set_output(k, 0, a);
	flow_tensor_unref(a);
}

static void k_flatten(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	if (x->ndim < 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "Flatten needs rank >= 1");
		return;
	}
	int64_t d[2] = {x->dims[0], x->dims[0] ? x->nelem / x->dims[0] : 0};
	if (!x->dims[0]) {
		d[1] = 1;
		for (int i = 1; i < x->ndim; i++)
			d[1] *= x->dims[i];
	}
	flow_status st = {0};
	flow_tensor *a = flow_tensor_alias(x, 2, d, &st);
	if (!a) {
		flow_ctx_fail(k, st.code, "%s", st.msg);
		return;
	}
	flow_ctx_set_output(k, 0, a);
	flow_tensor_unref(a);
}


static void k_zeros(flow_kernel_ctx *k)
{
	const flow_attr_value *a = flow_ctx_attr(k, "shape");
	if (!a || !flow_shape_is_full(&a->u.shape)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "shape attr must be fully known");
		return;
	}
	flow_ctx_output_zeros(k, 0, a->u.shape.ndim, a->u.shape.dims);
}

static void k_fill_like(flow_kernel_ctx *k)
{
	flow_tensor *dy = flow_ctx_input(k, 0), *like = flow_ctx_input(k, 1);
	if (dy->nelem != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "fill value must be a scalar, has %lld elements",
			      (long long)dy->nelem);
		return;
	}
	flow_tensor *y = out_like(k, 0, like);
	if (!y)
		return;
	/* mean: the gradient of a mean over every element (count known only now). */
	double scale = flow_ctx_attr_float(k, "scale", 1.0);
	if (flow_ctx_attr_bool(k, "mean", 0))
		scale = like->nelem ? scale / (double)like->nelem : 0.0;
	float v = (float)(FLOW_F32P(dy)[0] * scale);
	for (int64_t i = 0; i < y->nelem; i++)
		FLOW_F32P(y)[i] = v;
}

static void k_reduce_all(flow_kernel_ctx *k, int mean)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	flow_tensor *y = flow_ctx_output(k, 0, 0, NULL);
	if (!y)
		return;
	double s = 0;
	const float *p = FLOW_F32P(x);
	for (int64_t i = 0; i < x->nelem; i++)
		s += p[i];
	if (mean)
		s = x->nelem ? s / (double)x->nelem : NAN;
	FLOW_F32P(y)[0] = (float)s;
}
static void k_mean_all(flow_kernel_ctx *k) { k_reduce_all(k, 1); }
static void k_sum_all(flow_kernel_ctx *k) { k_reduce_all(k, 0); }


static void ew_sigmoid_grad(void *ud, int64_t b, int64_t e)
{
	const ew *w = ud;
	float *restrict o = w->out;
	const float *restrict y = w->a, *restrict dy = w->b;
	for (int64_t i = b; i < e; i++)
		o[i] = dy[i] * y[i] * (1.0f - y[i]);
}
static void ew_tanh_grad(void *ud, int64_t b, int64_t e)
{
	const ew *w = ud;
	float *restrict o = w->out;
	const float *restrict y = w->a, *restrict dy = w->b;
	for (int64_t i = b; i < e; i++)
		o[i] = dy[i] * (1.0f - y[i] * y[i]);
}

static void k_ew2(flow_kernel_ctx *k, void (*fn)(void *, int64_t, int64_t))
{
	flow_tensor *a = flow_ctx_input(k, 0), *b = flow_ctx_input(k, 1);
	if (check_same(k, a, b, flow_ctx_node_name(k)))
		return;
	flow_tensor *y = flow_ctx_output(k, 0, a->ndim, a->dims);
	if (!y)
		return;
	ew w = {FLOW_F32P(y), FLOW_F32P(a), FLOW_F32P(b), NULL, 0, 0};
	PFOR(k, a->nelem, fn, &w);
}
static void k_sigmoid_grad(flow_kernel_ctx *k) { k_ew2(k, ew_sigmoid_grad); }
static void k_tanh_grad(flow_kernel_ctx *k) { k_ew2(k, ew_tanh_grad); }

/* dx = y * (dy - sum(dy * y)) over the last axis. */
static void k_softmax_grad(flow_kernel_ctx *k)
{
	flow_tensor *y = flow_ctx_input(k, 0), *dy = flow_ctx_input(k, 1);
	if (check_same(k, y, dy, "SoftmaxGrad"))
		return;
	flow_tensor *dx = out_like(k, 0, y);
	if (!dx || !y->nelem)
		return;
	int64_t c = y->ndim ? y->dims[y->ndim - 1] : 1, rows = y->nelem / c;
	const float *yp = FLOW_F32P(y), *gp = FLOW_F32P(dy);
	float *o = FLOW_F32P(dx);
	for (int64_t r = 0; r < rows; r++) {
		double s = 0;
		for (int64_t j = 0; j < c; j++)
			s += (double)gp[r * c + j] * yp[r * c + j];
		for (int64_t j = 0; j < c; j++)
			o[r * c + j] = yp[r * c + j] * (gp[r * c + j] - (float)s);
	}
}

/* y[i, ...] = x[i, ...] * s[i]: the per-example loss gradient times the
 * cross-entropy backprop. */
static void k_scale_rows(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *s = flow_ctx_input(k, 1);
	if (x->ndim < 1 || s->nelem != x->dims[0]) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%lld scales for %lld rows",
			      (long long)s->nelem, x->ndim ? (long long)x->dims[0] : 0ll);
		return;
	}
	flow_tensor *y = out_like(k, 0, x);
	if (!y || !x->nelem)
		return;
	int64_t inner = x->nelem / x->dims[0];
	for (int64_t i = 0; i < x->dims[0]; i++) {
		float f = FLOW_F32P(s)[i];
		for (int64_t j = 0; j < inner; j++)
			FLOW_F32P(y)[i * inner + j] = FLOW_F32P(x)[i * inner + j] * f;
	}
}

/* ---------------------------------------------------------- dropout */

/* Inverted dropout: y = x * mask, mask = (u >= rate) / (1 - rate). A new
 * mask every run: the per-node state word is the Philox stream offset. */
static void k_dropout(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	double rate = flow_ctx_attr_float(k, "rate", 0.5);
	if (rate < 0 || rate >= 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "rate %g outside [0, 1)", rate);
		return;
	}
	flow_tensor *y = out_like(k, 0, x), *m = out_like(k, 1, x);
	if (!y || !m || !x->nelem)
		return;
	uint64_t *state = flow_ctx_state(k);
	uint64_t seed = (uint64_t)flow_ctx_attr_int(k, "seed", 0);
	float *mp = FLOW_F32P(m);
	flow_random_fill_f32(mp, (size_t)x->nelem, seed, state ? (*state)++ : 0, FLOW_DIST_UNIFORM,
			     0.0f, 1.0f, 0);
	float keep = (float)(1.0 / (1.0 - rate));
	for (int64_t i = 0; i < x->nelem; i++) {
		mp[i] = mp[i] >= (float)rate ? keep : 0.0f;
		FLOW_F32P(y)[i] = FLOW_F32P(x)[i] * mp[i];
	}
}

/* ----------------------------------------------------------- tables */

#define F32 "T: {f32}"
static const flow_op_def all_ops[] = {
	{.name = "_ApplySGD", .inputs = "var: Ref(T), grad: T", .outputs = "",
	 .attrs = F32 "; lr: float", .shape_fn = shape_none, .flags = FLOW_OP_STATEFUL,
	 .doc = "var -= lr * grad"},
	{.name = "_ApplyMomentum", .inputs = "var: Ref(T), momentum_slot: Ref(T), grad: T",
	 .outputs = "", .attrs = F32 "; lr: float; momentum: float = 0.9; nesterov: bool = false",
	 .shape_fn = shape_none, .flags = FLOW_OP_STATEFUL, .doc = "Keras SGD with momentum"},
	{.name = "_ApplyRMSProp", .inputs = "var: Ref(T), ms: Ref(T), grad: T", .outputs = "",
	 .attrs = F32 "; lr: float; rho: float = 0.9; epsilon: float = 1e-7",
	 .shape_fn = shape_none, .flags = FLOW_OP_STATEFUL, .doc = "Keras RMSprop"},
	{.name = "_ApplyAdam", .inputs = "var: Ref(T), m: Ref(T), v: Ref(T), grad: T, iterations: i64",
	 .outputs = "",
	 .attrs = F32 "; lr: float; beta1: float = 0.9; beta2: float = 0.999; epsilon: float = 1e-7",
	 .shape_fn = shape_none, .flags = FLOW_OP_STATEFUL,
	 .doc = "Keras Adam, t = iterations + 1"},
	{.name = "_Increment", .inputs = "counter: Ref(i64)", .outputs = "", .attrs = "",
	 .shape_fn = shape_none, .flags = FLOW_OP_STATEFUL, .doc = "counter += 1"},
	{.name = "_SumToShape", .inputs = "x: T, like: U", .outputs = "y: T",
	 .attrs = F32 "; U: type", .shape_fn = shape_like1,
	 .doc = "sum a broadcast result down to like's shape"},
	{.name = "_BroadcastLike", .inputs = "dy: T, like: U", .outputs = "y: T",
	 .attrs = F32 "; U: type; axes: ints = []; all: bool = false; mean: bool = false",
	 .shape_fn = shape_like1, .doc = "gradient of Sum/Mean"},
	{.name = "_ReshapeLike", .inputs = "x: T, like: U", .outputs = "y: T",
	 .attrs = "T: type; U: type", .shape_fn = shape_like1},
	{.name = "_Flatten", .inputs = "x: T", .outputs = "y: T", .attrs = "T: type",
	 .shape_fn = shape_flatten, .doc = "[N, ...] -> [N, prod(...)]"},
	{.name = "_Zeros", .inputs = "", .outputs = "y: T", .attrs = "T: type; shape: shape",
	 .shape_fn = shape_zeros, .doc = "zeros of a static shape (slot initial values)"},
	{.name = "_FillLike", .inputs = "value: T, like: U", .outputs = "y: T",
	 .attrs = F32 "; U: type; scale: float = 1; mean: bool = false", .shape_fn = shape_like1},
	{.name = "_MeanAll", .inputs = "x: T", .outputs = "y: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_scalar},
	{.name = "_SumAll", .inputs = "x: T", .outputs = "y: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_scalar},
	{.name = "_SigmoidGrad", .inputs = "y: T, dy: T", .outputs = "dx: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_TanhGrad", .inputs = "y: T, dy: T", .outputs = "dx: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_SoftmaxGrad", .inputs = "y: T, dy: T", .outputs = "dx: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_ScaleRows", .inputs = "x: T, s: T", .outputs = "y: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_Dropout", .inputs = "x: T", .outputs = "y: T, mask: T",
	 .attrs = F32 "; rate: float; seed: int = 0", .shape_fn = shape_dropout,
	 .flags = FLOW_OP_STATEFUL | FLOW_OP_RANDOM, .doc = "inverted dropout; mask for the gradient"},
};
#define N_ALL_OPS ((int)(sizeof all_ops / sizeof all_ops[0]))

static const flow_kernel_def all_kernels[] = {
	{"_ApplySGD", FLOW_CPU, FLOW_F32, k_apply_sgd},
	{"_ApplyMomentum", FLOW_CPU, FLOW_F32, k_apply_momentum},
	{"_ApplyRMSProp", FLOW_CPU, FLOW_F32, k_apply_rmsprop},
	{"_ApplyAdam", FLOW_CPU, FLOW_F32, k_apply_adam},
	{"_Increment", FLOW_CPU, FLOW_DT_INVALID, k_increment},
	{"_SumToShape", FLOW_CPU, FLOW_F32, k_sum_to_shape},
	{"_BroadcastLike", FLOW_CPU, FLOW_F32, k_broadcast_like},
	{"_ReshapeLike", FLOW_CPU, FLOW_DT_INVALID, k_reshape_like},
	{"_Flatten", FLOW_CPU, FLOW_DT_INVALID, k_flatten},
	{"_Zeros", FLOW_CPU, FLOW_DT_INVALID, k_zeros},
	{"_FillLike", FLOW_CPU, FLOW_F32, k_fill_like},
	{"_MeanAll", FLOW_CPU, FLOW_F32, k_mean_all},
	{"_SumAll", FLOW_CPU, FLOW_F32, k_sum_all},
	{"_SigmoidGrad", FLOW_CPU, FLOW_F32, k_sigmoid_grad},
	{"_TanhGrad", FLOW_CPU, FLOW_F32, k_tanh_grad},
	{"_SoftmaxGrad", FLOW_CPU, FLOW_F32, k_softmax_grad},
	{"_ScaleRows", FLOW_CPU, FLOW_F32, k_scale_rows},
	{"_Dropout", FLOW_CPU, FLOW_F32, k_dropout},
};
#define N_ALL_KERNELS ((int)(sizeof all_kernels / sizeof all_kernels[0]))

static flow_op_lib lib = {"train", all_ops, N_ALL_OPS, all_kernels, N_ALL_KERNELS};
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

static int name_in(const char *name, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], name))
			return 1;
	return 0;
}

int train_op_exists(const char *op_type)
{
	int n = 0;
	const char *const *names = flow_op_names(&n);
	return names && name_in(op_type, names, n);
}

int train_ops_register(flow_status *st)
{
	flow_status tmp = {0};
	if (flow_registry_lookup("_ApplyAdam", &tmp))
		return 0;   /* the common case: a hash lookup */
	pthread_mutex_lock(&lib_mu);
	int n = 0, rc = 0;
	const char *const *names = flow_op_names(&n);
	/* After flow_shutdown the registry forgot us: "_ApplyAdam" tells. */
	if (!names || !name_in("_ApplyAdam", names, n))
		rc = flow_registry_add_library(&lib, st);
	pthread_mutex_unlock(&lib_mu);
	return rc;
}
