/*
 * grad_fns.c — gradient functions for the op library's ops and ours, with
 * TensorFlow's semantics (tensorflow/python/ops/math_grad.py, nn_grad.py,
 * array_grad.py). Binary elementwise ops broadcast, so each input's gradient
 * is summed back to that input's shape (_SumToShape).
 */
#include "train_internal.h"

#include <string.h>

#define NONE ((flow_output){NULL, 0})
#define X(i) flow_op_input(op, (i))
#define Y(i) flow_out(op, (i))

static int ok(flow_status *st, flow_output o)
{
	return o.op && flow_status_ok(st);
}

/* TF's grad functions return 0 for "no gradient" and an error only when the
 * builder failed; a builder failure leaves st set. */
static int done(flow_status *st)
{
	return flow_status_ok(st) ? 0 : -1;
}

static const char *div_op(void)
{
	return train_op_exists("RealDiv") ? "RealDiv" : "Div";
}

static flow_output sum_to(flow_graph *g, flow_output v, flow_output like, flow_status *st)
{
	if (!v.op)
		return NONE;
	/* Same static full shape: nothing was broadcast. */
	flow_shape a = flow_op_output_shape(v.op, v.index);
	flow_shape b = flow_op_output_shape(like.op, like.index);
	if (flow_shape_is_full(&a) && flow_shape_is_full(&b) && a.ndim == b.ndim) {
		int same = 1;
		for (int i = 0; i < a.ndim; i++)
			same &= a.dims[i] == b.dims[i];
		if (same)
			return v;
	}
	return tb_op2(g, "_SumToShape", v, like, st);
}

/* ---- linear algebra ---- */

static int g_matmul(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		    flow_status *st)
{
	int ta = 0, tb = 0;
	flow_op_get_attr_bool(op, "transpose_a", &ta);
	flow_op_get_attr_bool(op, "transpose_b", &tb);
	flow_output a = X(0), b = X(1), d = dy[0];
	if (!ta && !tb) {
		dx[0] = tb_matmul(g, d, b, 0, 1, st);
		dx[1] = tb_matmul(g, a, d, 1, 0, st);
	} else if (!ta && tb) {
		dx[0] = tb_matmul(g, d, b, 0, 0, st);
		dx[1] = tb_matmul(g, d, a, 1, 0, st);
	} else if (ta && !tb) {
		dx[0] = tb_matmul(g, b, d, 0, 1, st);
		dx[1] = tb_matmul(g, a, d, 0, 0, st);
	} else {
		dx[0] = tb_matmul(g, b, d, 1, 1, st);
		dx[1] = tb_matmul(g, d, a, 1, 1, st);
	}
	return done(st);
}

static int g_bias_add(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		      flow_status *st)
{
	dx[0] = dy[0];
	dx[1] = tb_op2(g, "_SumToShape", dy[0], X(1), st);
	return done(st);
}

/* ---- elementwise ---- */

static int g_add(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		 flow_status *st)
{
	dx[0] = sum_to(g, dy[0], X(0), st);
	dx[1] = sum_to(g, dy[0], X(1), st);
	return done(st);
}

static int g_sub(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		 flow_status *st)
{
	dx[0] = sum_to(g, dy[0], X(0), st);
	flow_output n = tb_op1(g, "Neg", dy[0], st);
	if (ok(st, n))
		dx[1] = sum_to(g, n, X(1), st);
	return done(st);
}

static int g_mul(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		 flow_status *st)
{
	const char *t = flow_op_type(op);
	flow_output a = tb_op2(g, t, dy[0], X(1), st);
	flow_output b = ok(st, a) ? tb_op2(g, t, X(0), dy[0], st) : NONE;
	if (ok(st, b)) {
		dx[0] = sum_to(g, a, X(0), st);
		dx[1] = sum_to(g, b, X(1), st);
	}
	return done(st);
}

/* z = x / y: dx = dy / y, dy_ = -dy * z / y */
static int g_div(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		 flow_status *st)
{
	const char *d = flow_op_type(op);
	flow_output a = tb_op2(g, d, dy[0], X(1), st);
	flow_output b = ok(st, a) ? tb_op2(g, "Mul", a, Y(0), st) : NONE;
	flow_output c = ok(st, b) ? tb_op1(g, "Neg", b, st) : NONE;
	if (ok(st, c)) {
		dx[0] = sum_to(g, a, X(0), st);
		dx[1] = sum_to(g, c, X(1), st);
	}
	return done(st);
}

static int g_neg(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		 flow_status *st)
{
	(void)op;
	dx[0] = tb_op1(g, "Neg", dy[0], st);
	return done(st);
}

static int g_identity(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		      flow_status *st)
{
	(void)g, (void)op, (void)st;
	dx[0] = dy[0];
	return 0;
}

/* AddN: every input gets dy. */
static int g_addn(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		  flow_status *st)
{
	(void)g, (void)st;
	for (int j = 0; j < flow_op_num_inputs(op); j++)
		dx[j] = dy[0];
	return 0;
}

static int g_exp(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		 flow_status *st)
{
	dx[0] = tb_op2(g, "Mul", dy[0], Y(0), st);
	return done(st);
}

static int g_log(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		 flow_status *st)
{
	dx[0] = tb_op2(g, div_op(), dy[0], X(0), st);
	return done(st);
}

static int g_square(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		    flow_status *st)
{
	flow_output two = flow_scalar(g, 2.0f, st);
	flow_output a = ok(st, two) ? tb_op2(g, "Mul", X(0), two, st) : NONE;
	if (ok(st, a))
		dx[0] = tb_op2(g, "Mul", dy[0], a, st);
	return done(st);
}

/* y = sqrt(x): dx = dy * 0.5 / y */
static int g_sqrt(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		  flow_status *st)
{
	flow_output h = flow_scalar(g, 0.5f, st);
	flow_output a = ok(st, h) ? tb_op2(g, "Mul", dy[0], h, st) : NONE;
	if (ok(st, a))
		dx[0] = tb_op2(g, div_op(), a, Y(0), st);
	return done(st);
}

static void copy_window_attrs(flow_op_desc *d, flow_op *op, int pool);
static int ints_of(flow_op *op, const char *const *attrs, int input, int64_t *out, int max);

/* Ops whose TF gradient op takes (dy, input) or (dy, output) / (output, dy). */
static int g_via(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		 flow_status *st, const char *gop, int use_out, int dy_first)
{
	flow_output v = use_out ? Y(0) : X(0);
	flow_op_desc *d = tb_new(g, gop);
	flow_op_add_input(d, dy_first ? dy[0] : v);
	flow_op_add_input(d, dy_first ? v : dy[0]);
	double alpha;
	if (!flow_op_get_attr_float(op, "alpha", &alpha))
		flow_op_set_attr_float(d, "alpha", alpha);
	dx[0] = flow_out(flow_op_finish(d, st), 0);
	return done(st);
}
#define VIA(name, gop, use_out, dy_first)                                                   \
	static int name(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,  \
			flow_status *st)                                                     \
	{                                                                                    \
		return g_via(g, op, dy, dx, st, gop, use_out, dy_first);                     \
	}
VIA(g_relu, "ReluGrad", 0, 1)
VIA(g_sigmoid, "_SigmoidGrad", 1, 0)
VIA(g_tanh, "_TanhGrad", 1, 0)
VIA(g_softmax, "_SoftmaxGrad", 1, 0)
VIA(g_relu6, "Relu6Grad", 0, 1)
VIA(g_leaky_relu, "LeakyReluGrad", 0, 1)
VIA(g_elu, "EluGrad", 1, 1)
VIA(g_selu, "SeluGrad", 1, 1)
VIA(g_softplus, "SoftplusGrad", 0, 1)
VIA(g_softsign, "SoftsignGrad", 0, 1)
VIA(g_rsqrt, "RsqrtGrad", 1, 0)
VIA(g_reciprocal, "ReciprocalGrad", 1, 0)

/* dx = dy * f(x), f a unary op: the gradients of Abs (Sign) and Sin (Cos). */
static int g_mul_by(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		    flow_status *st, const char *f)
{
	flow_output s = tb_op1(g, f, X(0), st);
	if (ok(st, s))
		dx[0] = tb_op2(g, "Mul", dy[0], s, st);
	return done(st);
}
#define MUL_BY(name, f)                                                                      \
	static int name(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,  \
			flow_status *st)                                                     \
	{                                                                                    \
		return g_mul_by(g, op, dy, dx, st, f);                                       \
	}
MUL_BY(g_abs, "Sign")
MUL_BY(g_sin, "Cos")

/* z = (x - y)^2: dx = 2 (x - y) dy, dy_ = -dx */
static int g_squared_difference(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
				flow_status *st)
{
	flow_output d = tb_op2(g, "Sub", X(0), X(1), st);
	flow_output two = ok(st, d) ? flow_scalar(g, 2.0f, st) : NONE;
	flow_output t = ok(st, two) ? tb_op2(g, "Mul", d, two, st) : NONE;
	flow_output a = ok(st, t) ? tb_op2(g, "Mul", t, dy[0], st) : NONE;
	flow_output n = ok(st, a) ? tb_op1(g, "Neg", a, st) : NONE;
	if (ok(st, n)) {
		dx[0] = sum_to(g, a, X(0), st);
		dx[1] = sum_to(g, n, X(1), st);
	}
	return done(st);
}

/* y = log_softmax(x): dx = dy - exp(y) * sum(dy, last axis) */
static int g_log_softmax(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
			 flow_status *st)
{
	int64_t ax = -1;
	flow_output axis = tb_const_i64s(g, &ax, 1, st);
	flow_op_desc *d = axis.op ? tb_new(g, "Sum") : NULL;
	flow_output s = NONE;
	if (d) {
		flow_op_add_input(d, dy[0]);
		flow_op_add_input(d, axis);
		flow_op_set_attr_bool(d, "keep_dims", 1);
		s = flow_out(flow_op_finish(d, st), 0);
	}
	flow_output p = ok(st, s) ? tb_op1(g, "Exp", Y(0), st) : NONE;
	flow_output ps = ok(st, p) ? tb_op2(g, "Mul", p, s, st) : NONE;
	if (ok(st, ps))
		dx[0] = tb_op2(g, "Sub", dy[0], ps, st);
	return done(st);
}

/* AvgPool: TF's AvgPoolGrad(orig_input_shape, grad) with the static shape. */
static int g_avgpool(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		     flow_status *st)
{
	flow_shape s = flow_op_output_shape(X(0).op, X(0).index);
	if (!flow_shape_is_full(&s)) {
		flow_status_set(st, FLOW_UNIMPLEMENTED,
				"gradient of '%s' (AvgPool): input shape must be known", flow_op_name(op));
		return -1;
	}
	int32_t v[FLOW_MAX_DIMS];
	for (int i = 0; i < s.ndim; i++)
		v[i] = (int32_t)s.dims[i];
	int64_t n = s.ndim;
	flow_tensor *t = flow_tensor_from_data(FLOW_I32, 1, &n, v, st);
	if (!t)
		return -1;
	char nb[200];
	flow_output shp = flow_const(g, tb_name("Const", nb, sizeof nb), t, st);
	flow_tensor_unref(t);
	if (!shp.op)
		return -1;
	flow_op_desc *d = tb_new(g, "AvgPoolGrad");
	flow_op_add_input(d, shp);
	flow_op_add_input(d, dy[0]);
	copy_window_attrs(d, op, 1);
	dx[0] = flow_out(flow_op_finish(d, st), 0);
	return done(st);
}

static int g_cos(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		 flow_status *st)
{
	flow_output s = tb_op1(g, "Sin", X(0), st);
	flow_output m = ok(st, s) ? tb_op2(g, "Mul", dy[0], s, st) : NONE;
	if (ok(st, m))
		dx[0] = tb_op1(g, "Neg", m, st);
	return done(st);
}

/* Maximum/Minimum: the gradient goes to the selected side (ties: x). */
static int g_minmax(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		    flow_status *st)
{
	const char *cmp = !strcmp(flow_op_type(op), "Maximum") ? "GreaterEqual" : "LessEqual";
	flow_output mask = tb_op2(g, cmp, X(0), X(1), st);
	flow_output z = ok(st, mask) ? tb_op1(g, "ZerosLike", dy[0], st) : NONE;
	flow_output a = ok(st, z) ? tb_op3(g, "SelectV2", mask, dy[0], z, st) : NONE;
	flow_output b = ok(st, a) ? tb_op3(g, "SelectV2", mask, z, dy[0], st) : NONE;
	if (ok(st, b)) {
		dx[0] = sum_to(g, a, X(0), st);
		dx[1] = sum_to(g, b, X(1), st);
	}
	return done(st);
}

static int g_select(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		    flow_status *st)
{
	flow_output z = tb_op1(g, "ZerosLike", dy[0], st);
	flow_output a = ok(st, z) ? tb_op3(g, flow_op_type(op), X(0), dy[0], z, st) : NONE;
	flow_output b = ok(st, a) ? tb_op3(g, flow_op_type(op), X(0), z, dy[0], st) : NONE;
	if (ok(st, b)) {
		dx[1] = sum_to(g, a, X(1), st);
		dx[2] = sum_to(g, b, X(2), st);
	}
	return done(st);
}

static int g_cast(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		  flow_status *st)
{
	flow_dtype src = flow_op_output_dtype(X(0).op, X(0).index);
	if (src != FLOW_F32 && src != FLOW_F64)
		return 0;   /* integer source: no gradient */
	flow_op_desc *d = tb_new(g, "Cast");
	flow_op_add_input(d, dy[0]);
	flow_op_set_attr_type(d, "DstT", src);
	dx[0] = flow_out(flow_op_finish(d, st), 0);
	return done(st);
}

static flow_output tb_bmm(flow_graph *g, const char *type, flow_output a, flow_output b, int ax,
			  int ay, flow_status *st)
{
	flow_op_desc *d = tb_new(g, type);
	flow_op_add_input(d, a);
	flow_op_add_input(d, b);
	flow_op_set_attr_bool(d, "adj_x", ax);
	flow_op_set_attr_bool(d, "adj_y", ay);
	return flow_out(flow_op_finish(d, st), 0);
}

/* BatchMatMul(V2): MatMul's rules per batch; broadcast batch dims summed. */
static int g_batch_matmul(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
			  flow_status *st)
{
	int ax = 0, ay = 0;
	flow_op_get_attr_bool(op, "adj_x", &ax);
	flow_op_get_attr_bool(op, "adj_y", &ay);
	const char *t = flow_op_type(op);
	flow_output x = X(0), y = X(1), d = dy[0], a, b;
	if (!ax && !ay) {
		a = tb_bmm(g, t, d, y, 0, 1, st);
		b = ok(st, a) ? tb_bmm(g, t, x, d, 1, 0, st) : NONE;
	} else if (!ax && ay) {
		a = tb_bmm(g, t, d, y, 0, 0, st);
		b = ok(st, a) ? tb_bmm(g, t, d, x, 1, 0, st) : NONE;
	} else if (ax && !ay) {
		a = tb_bmm(g, t, y, d, 0, 1, st);
		b = ok(st, a) ? tb_bmm(g, t, x, d, 0, 0, st) : NONE;
	} else {
		a = tb_bmm(g, t, y, d, 1, 1, st);
		b = ok(st, a) ? tb_bmm(g, t, d, x, 1, 1, st) : NONE;
	}
	if (ok(st, b)) {
		dx[0] = sum_to(g, a, x, st);
		dx[1] = sum_to(g, b, y, st);
	}
	return done(st);
}

/* ConcatV2: each input's gradient is its slice of dy (static shapes). */
static int g_concat(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		    flow_status *st)
{
	int n = flow_op_num_inputs(op) - 1;
	static const char *const none[] = {NULL};
	int64_t axv;
	if (ints_of(op, none, n, &axv, 1) != 1) {
		flow_status_set(st, FLOW_UNIMPLEMENTED,
				"gradient of '%s' (ConcatV2): the axis is not a constant",
				flow_op_name(op));
		return -1;
	}
	flow_shape out = flow_op_output_shape(op, 0);
	int r = out.ndim;
	int64_t ax = axv < 0 ? axv + r : axv, off = 0;
	for (int j = 0; j < n; j++) {
		flow_shape s = flow_op_output_shape(X(j).op, X(j).index);
		if (!flow_shape_is_full(&s) || ax < 0 || ax >= r) {
			flow_status_set(st, FLOW_UNIMPLEMENTED,
					"gradient of '%s' (ConcatV2): input %d needs a known shape",
					flow_op_name(op), j);
			return -1;
		}
		int64_t begin[FLOW_MAX_DIMS] = {0}, size[FLOW_MAX_DIMS];
		for (int k = 0; k < r; k++)
			size[k] = k == ax ? s.dims[k] : -1;
		begin[ax] = off;
		off += s.dims[ax];
		flow_output bc = tb_const_i64s(g, begin, r, st);
		flow_output sc = bc.op ? tb_const_i64s(g, size, r, st) : NONE;
		if (!sc.op)
			return -1;
		if (flow_op_output_dtype(X(j).op, X(j).index) == FLOW_F32 ||
		    flow_op_output_dtype(X(j).op, X(j).index) == FLOW_F64) {
			flow_op_desc *d = tb_new(g, "Slice");
			flow_op_add_input(d, dy[0]);
			flow_op_add_input(d, bc);
			flow_op_add_input(d, sc);
			dx[j] = flow_out(flow_op_finish(d, st), 0);
			if (!dx[j].op)
				return -1;
		}
	}
	return 0;
}

/* ---- array ---- */

static int g_reshape(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		     flow_status *st)
{
	dx[0] = tb_op2(g, "_ReshapeLike", dy[0], X(0), st);
	return done(st);
}

/* Axes or a permutation given either as an ints attr or as a Const input. */
static int ints_of(flow_op *op, const char *const *attrs, int input, int64_t *out, int max)
{
	const int64_t *v;
	int n;
	for (int i = 0; attrs[i]; i++)
		if (!flow_op_get_attr_ints(op, attrs[i], &v, &n)) {
			for (int k = 0; k < n && k < max; k++)
				out[k] = v[k];
			return n;
		}
	if (input >= 0 && input < flow_op_num_inputs(op)) {
		flow_op *c = flow_op_input(op, input).op;
		const flow_tensor *t = flow_op_get_attr_tensor(c, "value");
		if (!t)
			return -1;
		n = (int)flow_tensor_nelem(t);
		for (int k = 0; k < n && k < max; k++)
			out[k] = (int64_t)flow_tensor_get(t, k);
		return n;
	}
	return -2;   /* no axes at all: every axis */
}

static int g_transpose(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		       flow_status *st)
{
	static const char *const names[] = {"perm", NULL};
	int64_t p[FLOW_MAX_DIMS], inv[FLOW_MAX_DIMS];
	int n = ints_of(op, names, 1, p, FLOW_MAX_DIMS);
	if (n < 0 || n > FLOW_MAX_DIMS) {
		flow_status_set(st, FLOW_UNIMPLEMENTED,
				"gradient of '%s' (Transpose): permutation is not a constant",
				flow_op_name(op));
		return -1;
	}
	for (int i = 0; i < n; i++)
		inv[p[i]] = i;
	flow_op_desc *d = tb_new(g, "Transpose");
	flow_op_add_input(d, dy[0]);
	if (flow_op_num_inputs(op) > 1) {
		flow_output c = tb_const_i64s(g, inv, n, st);
		if (!c.op) {
			flow_op_finish(d, NULL);
			return -1;
		}
		flow_op_add_input(d, c);
	} else {
		flow_op_set_attr_ints(d, "perm", inv, n);
	}
	dx[0] = flow_out(flow_op_finish(d, st), 0);
	return done(st);
}

/* Sum / Mean over axes: broadcast dy back over the reduced axes. */
static int g_reduce(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		    flow_status *st, int mean)
{
	static const char *const names[] = {"axis", "axes", "reduction_indices", "dims", NULL};
	int64_t ax[FLOW_MAX_DIMS];
	int n = ints_of(op, names, 1, ax, FLOW_MAX_DIMS);
	if (n == -1 || n > FLOW_MAX_DIMS) {
		flow_status_set(st, FLOW_UNIMPLEMENTED,
				"gradient of '%s' (%s): reduction axes are not a constant",
				flow_op_name(op), flow_op_type(op));
		return -1;
	}
	flow_op_desc *d = tb_new(g, "_BroadcastLike");
	flow_op_add_input(d, dy[0]);
	flow_op_add_input(d, X(0));
	flow_op_set_attr_ints(d, "axes", ax, n < 0 ? 0 : n);
	flow_op_set_attr_bool(d, "all", n == -2);
	flow_op_set_attr_bool(d, "mean", mean);
	dx[0] = flow_out(flow_op_finish(d, st), 0);
	return done(st);
}
static int g_sum(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		 flow_status *st)
{
	return g_reduce(g, op, dy, dx, st, 0);
}
static int g_mean(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		  flow_status *st)
{
	return g_reduce(g, op, dy, dx, st, 1);
}

static int g_mean_all(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		      flow_status *st)
{
	flow_op_desc *d = tb_new(g, "_FillLike");
	flow_op_add_input(d, dy[0]);
	flow_op_add_input(d, X(0));
	flow_op_set_attr_bool(d, "mean", !strcmp(flow_op_type(op), "_MeanAll"));
	dx[0] = flow_out(flow_op_finish(d, st), 0);
	return done(st);
}

/* ---- nn ---- */

static int g_xent(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		  flow_status *st)
{
	if (dy[1].op) {
		flow_status_set(st, FLOW_UNIMPLEMENTED,
				"gradient of '%s' (%s): the backprop output is not differentiable "
				"(second derivative)", flow_op_name(op), flow_op_type(op));
		return -1;
	}
	dx[0] = tb_op2(g, "_ScaleRows", Y(1), dy[0], st);
	/* Dense labels get -log_softmax(features) * dloss (TF's _v2 semantics);
	 * sparse labels are integers: no gradient. */
	if (ok(st, dx[0]) && !strcmp(flow_op_type(op), "SoftmaxCrossEntropyWithLogits")) {
		flow_output ls = tb_op1(g, "LogSoftmax", X(0), st);
		flow_output n = ok(st, ls) ? tb_op1(g, "Neg", ls, st) : NONE;
		if (ok(st, n))
			dx[1] = tb_op2(g, "_ScaleRows", n, dy[0], st);
	}
	return done(st);
}

static void copy_window_attrs(flow_op_desc *d, flow_op *op, int pool)
{
	const int64_t *v;
	int n;
	if (!flow_op_get_attr_ints(op, "strides", &v, &n))
		flow_op_set_attr_ints(d, "strides", v, n);
	if (pool && !flow_op_get_attr_ints(op, "ksize", &v, &n))
		flow_op_set_attr_ints(d, "ksize", v, n);
	const char *p = flow_op_get_attr_string(op, "padding");
	if (p)
		flow_op_set_attr_string(d, "padding", p);
}

/* A shape as an i32 Const when it is known at build time (shape inference
 * then knows the gradient's shape), else a Shape op evaluated per run. */
static flow_output sizes_of(flow_graph *g, flow_output x, flow_status *st)
{
	flow_shape s = flow_op_output_shape(x.op, x.index);
	if (!flow_shape_is_full(&s)) {
		flow_op_desc *d = tb_new(g, "Shape");
		flow_op_add_input(d, x);
		flow_op_set_attr_type(d, "out_type", FLOW_I32);
		return flow_out(flow_op_finish(d, st), 0);
	}
	int32_t v[FLOW_MAX_DIMS];
	for (int i = 0; i < s.ndim; i++)
		v[i] = (int32_t)s.dims[i];
	int64_t n = s.ndim;
	flow_tensor *t = flow_tensor_from_data(FLOW_I32, 1, &n, v, st);
	if (!t)
		return NONE;
	char nb[200];
	flow_output o = flow_const(g, tb_name("Const", nb, sizeof nb), t, st);
	flow_tensor_unref(t);
	return o;
}

/* Conv2DBackpropInput(input_sizes, filter, dy), Conv2DBackpropFilter(input, filter_sizes, dy). */
static int g_conv2d(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		    flow_status *st)
{
	static const char *const types[2] = {"Conv2DBackpropInput", "Conv2DBackpropFilter"};
	for (int k = 0; k < 2; k++) {
		flow_output sizes = sizes_of(g, X(k), st);
		if (!sizes.op)
			return -1;
		flow_op_desc *d = tb_new(g, types[k]);
		flow_op_add_input(d, k == 0 ? sizes : X(0));
		flow_op_add_input(d, k == 0 ? X(1) : sizes);
		flow_op_add_input(d, dy[0]);
		copy_window_attrs(d, op, 0);
		dx[k] = flow_out(flow_op_finish(d, st), 0);
		if (!dx[k].op)
			return -1;
	}
	return 0;
}

static int g_maxpool(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		     flow_status *st)
{
	flow_op_desc *d = tb_new(g, "MaxPoolGrad");
	flow_op_add_input(d, X(0));
	flow_op_add_input(d, Y(0));
	flow_op_add_input(d, dy[0]);
	copy_window_attrs(d, op, 1);
	dx[0] = flow_out(flow_op_finish(d, st), 0);
	return done(st);
}

static int g_dropout(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
		     flow_status *st)
{
	dx[0] = tb_op2(g, "Mul", dy[0], Y(1), st);
	return done(st);
}

void train_grads_register_builtin(void)
{
	static const struct {
		const char *op;
		flow_train_grad_fn fn;
	} t[] = {
		{"MatMul", g_matmul},
		{"BiasAdd", g_bias_add},
		{"Add", g_add},
		{"AddV2", g_add},
		{"Sub", g_sub},
		{"Mul", g_mul},
		{"Div", g_div},
		{"RealDiv", g_div},
		{"Neg", g_neg},
		{"Identity", g_identity},
		{"AddN", g_addn},
		{"Relu", g_relu},
		{"Sigmoid", g_sigmoid},
		{"Tanh", g_tanh},
		{"Softmax", g_softmax},
		{"Exp", g_exp},
		{"Log", g_log},
		{"Square", g_square},
		{"Sqrt", g_sqrt},
		{"Reshape", g_reshape},
		{"_ReshapeLike", g_reshape},
		{"_Flatten", g_reshape},
		{"ExpandDims", g_reshape},
		{"Squeeze", g_reshape},
		{"Relu6", g_relu6},
		{"LeakyRelu", g_leaky_relu},
		{"Elu", g_elu},
		{"Selu", g_selu},
		{"Softplus", g_softplus},
		{"Softsign", g_softsign},
		{"Rsqrt", g_rsqrt},
		{"Reciprocal", g_reciprocal},
		{"SquaredDifference", g_squared_difference},
		{"LogSoftmax", g_log_softmax},
		{"Abs", g_abs},
		{"AvgPool", g_avgpool},
		{"Sin", g_sin},
		{"Cos", g_cos},
		{"Maximum", g_minmax},
		{"Minimum", g_minmax},
		{"Select", g_select},
		{"SelectV2", g_select},
		{"Cast", g_cast},
		{"BatchMatMul", g_batch_matmul},
		{"BatchMatMulV2", g_batch_matmul},
		{"ConcatV2", g_concat},
		{"Transpose", g_transpose},
		{"Sum", g_sum},
		{"Mean", g_mean},
		{"_SumAll", g_mean_all},
		{"_MeanAll", g_mean_all},
		{"SparseSoftmaxCrossEntropyWithLogits", g_xent},
		{"SoftmaxCrossEntropyWithLogits", g_xent},
		{"Conv2D", g_conv2d},
		{"MaxPool", g_maxpool},
		{"_Dropout", g_dropout},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		flow_gradient_register(t[i].op, t[i].fn);
}
