/*
 * train_ops.c — the "train" op library: fused optimiser apply kernels,
 * gradient helper ops, and the loss / conv / pool forward ops when the
 * linked op library does not define them (TF semantics, so a later
 * runtime/ops version can take over without changing the gradients).
 *
 * Private ops start with '_' (TF's convention for internal ops) so they can
 * never collide with runtime/ops. The library is added at run time with
 * flow_registry_add_library because runtime/CMakeLists.txt only scans
 * runtime/ops and runtime/weights for FLOW_OP_LIBRARY lines.
 */
#include "train_internal.h"
#include "random.h"
#include "init.h"
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

static int shape_xent(flow_shape_ctx *c, int sparse)
{
	const flow_shape *f = flow_shape_input(c, 0), *l = flow_shape_input(c, 1);
	char a[64], b[64];
	if (f->ndim >= 0 && f->ndim != 2)
		return flow_shape_error(c, "logits must be [batch, classes], got %s",
					flow_shape_str(f, a, sizeof a));
	if (sparse) {
		if (l->ndim >= 0 && l->ndim != 1)
			return flow_shape_error(c, "labels must be [batch] class ids, got %s",
						flow_shape_str(l, b, sizeof b));
		if (f->ndim == 2 && l->ndim == 1 && f->dims[0] >= 0 && l->dims[0] >= 0 &&
		    f->dims[0] != l->dims[0])
			return flow_shape_error(c, "labels shape %s does not match logits %s (batch)",
						flow_shape_str(l, b, sizeof b),
						flow_shape_str(f, a, sizeof a));
	} else if (f->ndim == 2 && l->ndim >= 0) {
		int bad = l->ndim != 2;
		for (int i = 0; !bad && i < 2; i++)
			bad = f->dims[i] >= 0 && l->dims[i] >= 0 && f->dims[i] != l->dims[i];
		if (bad)
			return flow_shape_error(c, "labels shape %s does not match logits %s",
						flow_shape_str(l, b, sizeof b),
						flow_shape_str(f, a, sizeof a));
	}
	int64_t n = f->ndim == 2 ? f->dims[0] : -1;
	flow_shape s = flow_shape_make(1, &n);
	flow_shape_set_output(c, 0, &s);
	flow_shape_set_output(c, 1, f);
	return 0;
}
static int shape_sparse_xent(flow_shape_ctx *c) { return shape_xent(c, 1); }
static int shape_dense_xent(flow_shape_ctx *c) { return shape_xent(c, 0); }

/* Window geometry shared by Conv2D and MaxPool (TF's SAME/VALID rules). */
typedef struct win {
	int64_t n, h, w, c;        /* input NHWC */
	int64_t kh, kw, sh, sw;
	int64_t oh, ow, pt, pl;    /* output size, top/left padding */
} win;

static int win_out(int64_t in, int64_t k, int64_t s, int same, int64_t *out, int64_t *pad)
{
	if (in < 0) {
		*out = -1;
		*pad = 0;
		return 0;
	}
	if (same) {
		*out = (in + s - 1) / s;
		int64_t tot = (*out - 1) * s + k - in;
		*pad = tot > 0 ? tot / 2 : 0;
	} else {
		if (in < k)
			return -1;
		*out = (in - k) / s + 1;
		*pad = 0;
	}
	return 0;
}

static int padding_same(const char *p, int *same)
{
	if (!p)
		return -1;
	if (!strcmp(p, "SAME") || !strcmp(p, "same"))
		*same = 1;
	else if (!strcmp(p, "VALID") || !strcmp(p, "valid"))
		*same = 0;
	else
		return -1;
	return 0;
}

static int shape_window(flow_shape_ctx *c, int conv)
{
	const flow_shape *x = flow_shape_input(c, 0);
	const flow_attr_value *st = flow_shape_attr(c, "strides");
	const flow_attr_value *pd = flow_shape_attr(c, "padding");
	const flow_attr_value *ks = conv ? NULL : flow_shape_attr(c, "ksize");
	int same;
	if (!st || st->u.ints.n != 4)
		return flow_shape_error(c, "strides must have 4 entries [1, sh, sw, 1]");
	if (!pd || padding_same(pd->u.s, &same))
		return flow_shape_error(c, "padding must be SAME or VALID");
	if (!conv && (!ks || ks->u.ints.n != 4))
		return flow_shape_error(c, "ksize must have 4 entries [1, kh, kw, 1]");
	if (st->u.ints.v[1] < 1 || st->u.ints.v[2] < 1)
		return flow_shape_error(c, "strides must be >= 1");
	if (x->ndim >= 0 && x->ndim != 4)
		return flow_shape_error(c, "input must be NHWC (rank 4), got rank %d", x->ndim);
	int64_t kh, kw, oc = -1;
	if (conv) {
		const flow_shape *f = flow_shape_input(c, 1);
		if (f->ndim >= 0 && f->ndim != 4)
			return flow_shape_error(c, "filter must be [kh, kw, in, out], got rank %d",
						f->ndim);
		if (f->ndim != 4) {
			flow_shape u = flow_shape_unknown();
			flow_shape_set_output(c, 0, &u);
			return 0;
		}
		kh = f->dims[0];
		kw = f->dims[1];
		oc = f->dims[3];
		if (x->ndim == 4 && x->dims[3] >= 0 && f->dims[2] >= 0 && x->dims[3] != f->dims[2])
			return flow_shape_error(c, "input has %lld channels, filter expects %lld",
						(long long)x->dims[3], (long long)f->dims[2]);
	} else {
		kh = ks->u.ints.v[1];
		kw = ks->u.ints.v[2];
	}
	if (x->ndim != 4) {
		flow_shape u = flow_shape_unknown();
		flow_shape_set_output(c, 0, &u);
		return 0;
	}
	int64_t d[4] = {x->dims[0], 0, 0, conv ? oc : x->dims[3]}, p;
	if (win_out(x->dims[1], kh, st->u.ints.v[1], same, &d[1], &p) ||
	    win_out(x->dims[2], kw, st->u.ints.v[2], same, &d[2], &p))
		return flow_shape_error(c, "window %lldx%lld larger than the input", (long long)kh,
					(long long)kw);
	flow_shape o = flow_shape_make(4, d);
	flow_shape_set_output(c, 0, &o);
	return 0;
}
static int shape_conv(flow_shape_ctx *c) { return shape_window(c, 1); }
static int shape_pool(flow_shape_ctx *c) { return shape_window(c, 0); }

static int shape_bp_filter(flow_shape_ctx *c)
{
	flow_shape_set_output(c, 0, flow_shape_input(c, 1));
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

static int same_shape(const flow_tensor *a, const flow_tensor *b)
{
	if (a->ndim != b->ndim)
		return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->dims[i] != b->dims[i])
			return 0;
	return 1;
}

static int check_same(flow_kernel_ctx *k, const flow_tensor *a, const flow_tensor *b,
		      const char *what)
{
	if (same_shape(a, b))
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

static void k_zeros_like(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	flow_ctx_output_zeros(k, 0, x->ndim, x->dims);
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

/* A Keras initialiser as an op: the fill runs when the variable's
 * initialiser runs (variable_init), in parallel Philox as random.h does. */
static void k_initializer(flow_kernel_ctx *k)
{
	const flow_attr_value *a = flow_ctx_attr(k, "shape");
	const char *kind = flow_ctx_attr_string(k, "kind", "zeros");
	int ki = flow_init_from_name(kind);
	if (!a || !flow_shape_is_full(&a->u.shape) || ki < 0) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "initializer '%s' or its shape is not valid",
			      kind);
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, a->u.shape.ndim, a->u.shape.dims);
	if (!y || !y->nelem)
		return;
	flow_init_spec sp = flow_init_default((flow_init_kind)ki,
					     (uint64_t)flow_ctx_attr_int(k, "seed", 0));
	sp.value = flow_ctx_attr_float(k, "value", 0.0);
	sp.nthreads = (int)flow_ctx_attr_int(k, "threads", 0);
	char err[TRAIN_ERRLEN], name[256];
	/* "<initializer>:<variable>", the name the diagnostics group by. */
	const char *node = flow_ctx_node_name(k);
	size_t nl = strlen(node);
	if (nl > 12 && !strcmp(node + nl - 12, "/initializer"))
		nl -= 12;
	snprintf(name, sizeof name, "%s:%.*s", kind, (int)nl, node);
	pp_phase_begin(PP_VARIABLE_INIT, name);
	int rc = flow_init_fill_f32(&sp, a->u.shape.dims, a->u.shape.ndim, FLOW_F32P(y), err,
				    sizeof err);
	pp_phase_end();
	if (rc)
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", err);
}

static void k_ones_like(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *y = out_like(k, 0, x);
	if (!y)
		return;
	for (int64_t i = 0; i < y->nelem; i++)
		FLOW_F32P(y)[i] = 1.0f;
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

static void k_addn(flow_kernel_ctx *k)
{
	int n = flow_ctx_num_inputs(k);
	flow_tensor *a = flow_ctx_input(k, 0);
	for (int i = 1; i < n; i++)
		if (check_same(k, a, flow_ctx_input(k, i), "AddN"))
			return;
	flow_tensor *y = flow_ctx_output_inplace(k, 0, 0, a->ndim, a->dims);
	if (!y)
		return;
	float *yp = FLOW_F32P(y);
	const float *ap = FLOW_F32P(a);
	if (yp != ap)
		memcpy(yp, ap, sizeof(float) * (size_t)a->nelem);
	for (int i = 1; i < n; i++) {
		const float *b = FLOW_F32P(flow_ctx_input(k, i));
		for (int64_t j = 0; j < a->nelem; j++)
			yp[j] += b[j];
	}
}

/* Elementwise gradient kernels: out[i] = f(a[i], b[i]). */
/* Locals with restrict so the loops vectorise. */
static void ew_relu_grad(void *ud, int64_t b, int64_t e)
{
	const ew *w = ud;
	float *restrict o = w->out;
	const float *restrict dy = w->a, *restrict x = w->b;
	for (int64_t i = b; i < e; i++)
		o[i] = x[i] > 0 ? dy[i] : 0.0f;
}
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
static void k_relu_grad(flow_kernel_ctx *k) { k_ew2(k, ew_relu_grad); }
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

/* ------------------------------------------------------------ losses */

static void softmax_row(const float *x, float *p, int64_t c, double *lse)
{
	float mx = x[0];
	for (int64_t j = 1; j < c; j++)
		mx = x[j] > mx ? x[j] : mx;
	double s = 0;
	for (int64_t j = 0; j < c; j++)
		s += exp((double)x[j] - mx);
	*lse = mx + log(s);
	for (int64_t j = 0; j < c; j++)
		p[j] = (float)exp((double)x[j] - *lse);
}

static void k_xent(flow_kernel_ctx *k, int sparse)
{
	flow_tensor *f = flow_ctx_input(k, 0), *l = flow_ctx_input(k, 1);
	if (f->ndim != 2) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "logits must be rank 2, got rank %d", f->ndim);
		return;
	}
	int64_t n = f->dims[0], c = f->dims[1];
	if (sparse ? (l->ndim != 1 || l->dims[0] != n) : !same_shape(f, l)) {
		char a[64], b[64];
		flow_shape sl = flow_tensor_shape(l), sf = flow_tensor_shape(f);
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "labels shape %s does not match logits %s",
			      flow_shape_str(&sl, a, sizeof a), flow_shape_str(&sf, b, sizeof b));
		return;
	}
	flow_tensor *loss = flow_ctx_output(k, 0, 1, &n), *bp = out_like(k, 1, f);
	if (!loss || !bp)
		return;
	const float *x = FLOW_F32P(f);
	float *g = FLOW_F32P(bp);
	for (int64_t i = 0; i < n; i++) {
		double lse;
		softmax_row(x + i * c, g + i * c, c, &lse);
		if (sparse) {
			int64_t lab = (int64_t)flow_tensor_get(l, i);
			if (lab < 0 || lab >= c) {
				flow_ctx_fail(k, FLOW_INVALID_ARGUMENT,
					      "label %lld at row %lld outside [0, %lld)", (long long)lab,
					      (long long)i, (long long)c);
				return;
			}
			FLOW_F32P(loss)[i] = (float)(lse - x[i * c + lab]);
			g[i * c + lab] -= 1.0f;
		} else {
			const float *y = FLOW_F32P(l) + i * c;
			double s = 0;
			for (int64_t j = 0; j < c; j++) {
				s += y[j] * (lse - x[i * c + j]);
				g[i * c + j] -= y[j];
			}
			FLOW_F32P(loss)[i] = (float)s;
		}
	}
}
static void k_sparse_xent(flow_kernel_ctx *k) { k_xent(k, 1); }
static void k_dense_xent(flow_kernel_ctx *k) { k_xent(k, 0); }

/* ------------------------------------------------------- conv and pool */

static int win_from(flow_kernel_ctx *k, const flow_tensor *x, int64_t kh, int64_t kw, win *w)
{
	int n;
	const int64_t *s = flow_ctx_attr_ints(k, "strides", &n);
	int same;
	if (n != 4 || padding_same(flow_ctx_attr_string(k, "padding", NULL), &same)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "bad strides/padding attrs");
		return -1;
	}
	if (x->ndim != 4) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "input must be NHWC, got rank %d", x->ndim);
		return -1;
	}
	w->n = x->dims[0];
	w->h = x->dims[1];
	w->w = x->dims[2];
	w->c = x->dims[3];
	w->kh = kh;
	w->kw = kw;
	w->sh = s[1];
	w->sw = s[2];
	if (win_out(w->h, kh, w->sh, same, &w->oh, &w->pt) ||
	    win_out(w->w, kw, w->sw, same, &w->ow, &w->pl)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "window %lldx%lld larger than input %lldx%lld",
			      (long long)kh, (long long)kw, (long long)w->h, (long long)w->w);
		return -1;
	}
	return 0;
}

/* col[(n,oy,ox), (ky,kx,c)] = x[n, oy*sh+ky-pt, ox*sw+kx-pl, c] (0 outside). */
static void im2col(const win *w, const float *x, float *col)
{
	int64_t kc = w->kh * w->kw * w->c;
	for (int64_t n = 0; n < w->n; n++)
		for (int64_t oy = 0; oy < w->oh; oy++)
			for (int64_t ox = 0; ox < w->ow; ox++) {
				float *row = col + ((n * w->oh + oy) * w->ow + ox) * kc;
				for (int64_t ky = 0; ky < w->kh; ky++) {
					int64_t iy = oy * w->sh + ky - w->pt;
					for (int64_t kx = 0; kx < w->kw; kx++) {
						int64_t ix = ox * w->sw + kx - w->pl;
						float *dst = row + (ky * w->kw + kx) * w->c;
						if (iy < 0 || iy >= w->h || ix < 0 || ix >= w->w)
							memset(dst, 0, sizeof(float) * (size_t)w->c);
						else
							memcpy(dst,
							       x + ((n * w->h + iy) * w->w + ix) * w->c,
							       sizeof(float) * (size_t)w->c);
					}
				}
			}
}

static void col2im(const win *w, const float *col, float *x)
{
	int64_t kc = w->kh * w->kw * w->c;
	memset(x, 0, sizeof(float) * (size_t)(w->n * w->h * w->w * w->c));
	for (int64_t n = 0; n < w->n; n++)
		for (int64_t oy = 0; oy < w->oh; oy++)
			for (int64_t ox = 0; ox < w->ow; ox++) {
				const float *row = col + ((n * w->oh + oy) * w->ow + ox) * kc;
				for (int64_t ky = 0; ky < w->kh; ky++) {
					int64_t iy = oy * w->sh + ky - w->pt;
					if (iy < 0 || iy >= w->h)
						continue;
					for (int64_t kx = 0; kx < w->kw; kx++) {
						int64_t ix = ox * w->sw + kx - w->pl;
						if (ix < 0 || ix >= w->w)
							continue;
						const float *src = row + (ky * w->kw + kx) * w->c;
						float *dst = x + ((n * w->h + iy) * w->w + ix) * w->c;
						for (int64_t c = 0; c < w->c; c++)
							dst[c] += src[c];
					}
				}
			}
}

static float *col_alloc(flow_kernel_ctx *k, const win *w)
{
	size_t n = (size_t)(w->n * w->oh * w->ow * w->kh * w->kw * w->c);
	float *p = flow_allocator_alloc(flow_ctx_allocator(k), (n ? n : 1) * sizeof(float));
	if (!p)
		flow_ctx_fail(k, FLOW_RESOURCE_EXHAUSTED, "im2col buffer of %zu floats", n);
	return p;
}

static int conv_setup(flow_kernel_ctx *k, flow_tensor *x, flow_tensor *f, win *w)
{
	if (f->ndim != 4) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "filter must be rank 4, got %d", f->ndim);
		return -1;
	}
	if (win_from(k, x, f->dims[0], f->dims[1], w))
		return -1;
	if (f->dims[2] != w->c) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "input has %lld channels, filter %lld",
			      (long long)w->c, (long long)f->dims[2]);
		return -1;
	}
	return 0;
}

static void k_conv2d(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *f = flow_ctx_input(k, 1);
	win w;
	if (conv_setup(k, x, f, &w))
		return;
	int64_t oc = f->dims[3], d[4] = {w.n, w.oh, w.ow, oc};
	flow_tensor *y = flow_ctx_output(k, 0, 4, d);
	if (!y || !y->nelem)
		return;
	float *col = col_alloc(k, &w);
	if (!col)
		return;
	im2col(&w, FLOW_F32P(x), col);
	int64_t m = w.n * w.oh * w.ow, kc = w.kh * w.kw * w.c;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)oc, (int)kc, 1.0f, col,
		    (int)kc, FLOW_F32P(f), (int)oc, 0.0f, FLOW_F32P(y), (int)oc);
	flow_allocator_release(flow_ctx_allocator(k), col);
}

static int bp_setup(flow_kernel_ctx *k, flow_tensor **x, flow_tensor **f, flow_tensor **dy,
		    win *w)
{
	*x = flow_ctx_input(k, 0);
	*f = flow_ctx_input(k, 1);
	*dy = flow_ctx_input(k, 2);
	if (conv_setup(k, *x, *f, w))
		return -1;
	int64_t d[4] = {w->n, w->oh, w->ow, (*f)->dims[3]};
	flow_tensor want = {0};
	want.ndim = 4;
	memcpy(want.dims, d, sizeof d);
	return check_same(k, *dy, &want, "conv gradient");
}

static void k_conv_bp_input(flow_kernel_ctx *k)
{
	flow_tensor *x, *f, *dy;
	win w;
	if (bp_setup(k, &x, &f, &dy, &w))
		return;
	flow_tensor *dx = out_like(k, 0, x);
	if (!dx || !dx->nelem)
		return;
	float *col = col_alloc(k, &w);
	if (!col)
		return;
	int64_t m = w.n * w.oh * w.ow, kc = w.kh * w.kw * w.c, oc = f->dims[3];
	/* dcol = dy [m, oc] x W^T [oc, kc] */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)kc, (int)oc, 1.0f,
		    FLOW_F32P(dy), (int)oc, FLOW_F32P(f), (int)oc, 0.0f, col, (int)kc);
	col2im(&w, col, FLOW_F32P(dx));
	flow_allocator_release(flow_ctx_allocator(k), col);
}

static void k_conv_bp_filter(flow_kernel_ctx *k)
{
	flow_tensor *x, *f, *dy;
	win w;
	if (bp_setup(k, &x, &f, &dy, &w))
		return;
	flow_tensor *df = out_like(k, 0, f);
	if (!df || !df->nelem)
		return;
	float *col = col_alloc(k, &w);
	if (!col)
		return;
	im2col(&w, FLOW_F32P(x), col);
	int64_t m = w.n * w.oh * w.ow, kc = w.kh * w.kw * w.c, oc = f->dims[3];
	/* dW [kc, oc] = col^T [kc, m] x dy [m, oc] */
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)kc, (int)oc, (int)m, 1.0f, col,
		    (int)kc, FLOW_F32P(dy), (int)oc, 0.0f, FLOW_F32P(df), (int)oc);
	flow_allocator_release(flow_ctx_allocator(k), col);
}

static int pool_setup(flow_kernel_ctx *k, flow_tensor *x, win *w)
{
	int n;
	const int64_t *ks = flow_ctx_attr_ints(k, "ksize", &n);
	if (n != 4) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "ksize must have 4 entries");
		return -1;
	}
	return win_from(k, x, ks[1], ks[2], w);
}

/* Index into x of the max of window (n, oy, ox, c); -1 if all padding. */
static int64_t pool_argmax(const win *w, const float *x, int64_t n, int64_t oy, int64_t ox,
			   int64_t c)
{
	int64_t best = -1;
	for (int64_t ky = 0; ky < w->kh; ky++) {
		int64_t iy = oy * w->sh + ky - w->pt;
		if (iy < 0 || iy >= w->h)
			continue;
		for (int64_t kx = 0; kx < w->kw; kx++) {
			int64_t ix = ox * w->sw + kx - w->pl;
			if (ix < 0 || ix >= w->w)
				continue;
			int64_t i = ((n * w->h + iy) * w->w + ix) * w->c + c;
			if (best < 0 || x[i] > x[best])
				best = i;
		}
	}
	return best;
}

static void k_maxpool(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	win w;
	if (pool_setup(k, x, &w))
		return;
	int64_t d[4] = {w.n, w.oh, w.ow, w.c};
	flow_tensor *y = flow_ctx_output(k, 0, 4, d);
	if (!y)
		return;
	const float *xp = FLOW_F32P(x);
	float *yp = FLOW_F32P(y);
	for (int64_t n = 0; n < w.n; n++)
		for (int64_t oy = 0; oy < w.oh; oy++)
			for (int64_t ox = 0; ox < w.ow; ox++)
				for (int64_t c = 0; c < w.c; c++) {
					int64_t b = pool_argmax(&w, xp, n, oy, ox, c);
					*yp++ = b >= 0 ? xp[b] : 0.0f;
				}
}

static void k_maxpool_grad(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *dy = flow_ctx_input(k, 1);
	win w;
	if (pool_setup(k, x, &w))
		return;
	if (dy->nelem != w.n * w.oh * w.ow * w.c) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "pool gradient has %lld elements, want %lld",
			      (long long)dy->nelem, (long long)(w.n * w.oh * w.ow * w.c));
		return;
	}
	flow_tensor *dx = flow_ctx_output_zeros(k, 0, x->ndim, x->dims);
	if (!dx)
		return;
	const float *xp = FLOW_F32P(x), *g = FLOW_F32P(dy);
	float *o = FLOW_F32P(dx);
	for (int64_t n = 0; n < w.n; n++)
		for (int64_t oy = 0; oy < w.oh; oy++)
			for (int64_t ox = 0; ox < w.ow; ox++)
				for (int64_t c = 0; c < w.c; c++, g++) {
					int64_t b = pool_argmax(&w, xp, n, oy, ox, c);
					if (b >= 0)
						o[b] += *g;
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
	{.name = "_ZerosLike", .inputs = "x: T", .outputs = "y: T", .attrs = "T: type",
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_Zeros", .inputs = "", .outputs = "y: T", .attrs = "T: type; shape: shape",
	 .shape_fn = shape_zeros, .doc = "zeros of a static shape (slot initial values)"},
	{.name = "_Initializer", .inputs = "", .outputs = "y: T",
	 .attrs = F32 "; shape: shape; kind: string; seed: int = 0; value: float = 0; "
		  "threads: int = 0",
	 .shape_fn = shape_zeros, .flags = FLOW_OP_STATEFUL,
	 .doc = "Keras initialiser (glorot_uniform, he_normal, orthogonal, ...)"},
	{.name = "_OnesLike", .inputs = "x: T", .outputs = "y: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_FillLike", .inputs = "value: T, like: U", .outputs = "y: T",
	 .attrs = F32 "; U: type; scale: float = 1; mean: bool = false", .shape_fn = shape_like1},
	{.name = "_MeanAll", .inputs = "x: T", .outputs = "y: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_scalar},
	{.name = "_SumAll", .inputs = "x: T", .outputs = "y: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_scalar},
	{.name = "_AddN", .inputs = "values: N*T", .outputs = "sum: T", .attrs = "N: int >= 1; " F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_ReluGrad", .inputs = "dy: T, x: T", .outputs = "dx: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_SigmoidGrad", .inputs = "y: T, dy: T", .outputs = "dx: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_TanhGrad", .inputs = "y: T, dy: T", .outputs = "dx: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_SoftmaxGrad", .inputs = "y: T, dy: T", .outputs = "dx: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_ScaleRows", .inputs = "x: T, s: T", .outputs = "y: T", .attrs = F32,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_Conv2DBackpropInput", .inputs = "input: T, filter: T, dy: T", .outputs = "dx: T",
	 .attrs = F32 "; strides: ints; padding: string", .shape_fn = flow_shape_fn_unchanged},
	{.name = "_Conv2DBackpropFilter", .inputs = "input: T, filter: T, dy: T",
	 .outputs = "dfilter: T", .attrs = F32 "; strides: ints; padding: string",
	 .shape_fn = shape_bp_filter},
	{.name = "_MaxPoolGrad", .inputs = "input: T, dy: T", .outputs = "dx: T",
	 .attrs = F32 "; ksize: ints; strides: ints; padding: string",
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "_Dropout", .inputs = "x: T", .outputs = "y: T, mask: T",
	 .attrs = F32 "; rate: float; seed: int = 0", .shape_fn = shape_dropout,
	 .flags = FLOW_OP_STATEFUL | FLOW_OP_RANDOM, .doc = "inverted dropout; mask for the gradient"},
	/* TF forward ops, registered only when runtime/ops lacks them. */
	{.name = "SparseSoftmaxCrossEntropyWithLogits", .inputs = "features: T, labels: Tlabels",
	 .outputs = "loss: T, backprop: T", .attrs = F32 "; Tlabels: {i32,i64} = i64",
	 .shape_fn = shape_sparse_xent},
	{.name = "SoftmaxCrossEntropyWithLogits", .inputs = "features: T, labels: T",
	 .outputs = "loss: T, backprop: T", .attrs = F32, .shape_fn = shape_dense_xent},
	{.name = "Conv2D", .inputs = "input: T, filter: T", .outputs = "output: T",
	 .attrs = F32 "; strides: ints; padding: string", .shape_fn = shape_conv,
	 .doc = "NHWC x HWIO, im2col + GEMM"},
	{.name = "MaxPool", .inputs = "input: T", .outputs = "output: T",
	 .attrs = F32 "; ksize: ints; strides: ints; padding: string = \"VALID\"",
	 .shape_fn = shape_pool},
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
	{"_ZerosLike", FLOW_CPU, FLOW_DT_INVALID, k_zeros_like},
	{"_Zeros", FLOW_CPU, FLOW_DT_INVALID, k_zeros},
	{"_Initializer", FLOW_CPU, FLOW_F32, k_initializer},
	{"_OnesLike", FLOW_CPU, FLOW_F32, k_ones_like},
	{"_FillLike", FLOW_CPU, FLOW_F32, k_fill_like},
	{"_MeanAll", FLOW_CPU, FLOW_F32, k_mean_all},
	{"_SumAll", FLOW_CPU, FLOW_F32, k_sum_all},
	{"_AddN", FLOW_CPU, FLOW_F32, k_addn},
	{"_ReluGrad", FLOW_CPU, FLOW_F32, k_relu_grad},
	{"_SigmoidGrad", FLOW_CPU, FLOW_F32, k_sigmoid_grad},
	{"_TanhGrad", FLOW_CPU, FLOW_F32, k_tanh_grad},
	{"_SoftmaxGrad", FLOW_CPU, FLOW_F32, k_softmax_grad},
	{"_ScaleRows", FLOW_CPU, FLOW_F32, k_scale_rows},
	{"_Conv2DBackpropInput", FLOW_CPU, FLOW_F32, k_conv_bp_input},
	{"_Conv2DBackpropFilter", FLOW_CPU, FLOW_F32, k_conv_bp_filter},
	{"_MaxPoolGrad", FLOW_CPU, FLOW_F32, k_maxpool_grad},
	{"_Dropout", FLOW_CPU, FLOW_F32, k_dropout},
	{"SparseSoftmaxCrossEntropyWithLogits", FLOW_CPU, FLOW_F32, k_sparse_xent},
	{"SoftmaxCrossEntropyWithLogits", FLOW_CPU, FLOW_F32, k_dense_xent},
	{"Conv2D", FLOW_CPU, FLOW_F32, k_conv2d},
	{"MaxPool", FLOW_CPU, FLOW_F32, k_maxpool},
};
#define N_ALL_KERNELS ((int)(sizeof all_kernels / sizeof all_kernels[0]))

/* The library actually registered: all_ops minus the names the op library
 * already defines. Static: the registry keeps pointers into it. */
static flow_op_def lib_ops[N_ALL_OPS];
static flow_kernel_def lib_kernels[N_ALL_KERNELS];
static flow_op_lib lib = {"train", lib_ops, 0, lib_kernels, 0};
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
	if (!names || !name_in("_ApplyAdam", names, n)) {
		int no = 0, nk = 0;
		for (int i = 0; i < N_ALL_OPS; i++)
			if (!names || !name_in(all_ops[i].name, names, n))
				lib_ops[no++] = all_ops[i];
		for (int i = 0; i < N_ALL_KERNELS; i++)
			for (int j = 0; j < no; j++)
				if (!strcmp(lib_ops[j].name, all_kernels[i].op)) {
					lib_kernels[nk++] = all_kernels[i];
					break;
				}
		lib.n_ops = no;
		lib.n_kernels = nk;
		rc = flow_registry_add_library(&lib, st);
	}
	pthread_mutex_unlock(&lib_mu);
	return rc;
}
