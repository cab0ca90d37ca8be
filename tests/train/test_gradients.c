/*
 * Gradient checks: every op with a gradient function against central finite
 * differences of a random projection of its output, plus the bad-input
 * cases of flow_gradients.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow_train.h"

#define MAXIN 3

typedef flow_output (*build_fn)(flow_graph *g, const flow_output *in, flow_status *st);

static uint64_t rng = 88172645463325252ull;
static float frand(float lo, float hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + (hi - lo) * (float)((rng >> 11) * (1.0 / 9007199254740992.0));
}

static flow_output op1(flow_graph *g, const char *t, flow_output a, flow_status *st)
{
	return flow_simple(g, t, NULL, &a, 1, st);
}

static flow_output op2(flow_graph *g, const char *t, flow_output a, flow_output b, flow_status *st)
{
	flow_output in[2] = {a, b};
	return flow_simple(g, t, NULL, in, 2, st);
}

static flow_output const_i32(flow_graph *g, const int32_t *v, int n, flow_status *st)
{
	int64_t d = n;
	flow_tensor *t = flow_tensor_from_data(FLOW_I32, 1, &d, v, st);
	flow_output o = flow_const(g, NULL, t, st);
	flow_tensor_unref(t);
	return o;
}

/* loss = sum(y * R) with R fixed random, so no output direction cancels. */
static flow_output project(flow_graph *g, flow_output y, flow_status *st)
{
	flow_shape s = flow_op_output_shape(y.op, y.index);
	assert_true(flow_shape_is_full(&s));
	flow_tensor *r = flow_tensor_new(FLOW_F32, s.ndim, s.dims, st);
	for (int64_t i = 0; i < flow_tensor_nelem(r); i++)
		((float *)flow_tensor_data(r))[i] = frand(-1, 1);
	flow_output rc = flow_const(g, NULL, r, st);
	flow_tensor_unref(r);
	return op1(g, "_SumAll", op2(g, "Mul", y, rc, st), st);
}

static double run_loss(flow_session *s, flow_output *ph, flow_tensor **vals, int n,
		       flow_output loss)
{
	flow_status *st = flow_status_new();
	flow_tensor *out = NULL;
	int rc = flow_session_run(s, ph, vals, n, &loss, &out, 1, NULL, 0, st);
	if (rc)
		fail_msg("run: %s", flow_status_message(st));
	double v = flow_tensor_get(out, 0);
	flow_tensor_unref(out);
	flow_status_free(st);
	return v;
}

/* MaxPool: distinct values 0.05 apart, so a +-h probe never changes which
 * element is the window's max. */
static int spaced;
/* Maximum/Minimum: inputs on interleaved grids 0.05 apart, so no x/y tie. */
static int no_ties;

/* Checks d loss / d input[i] for inputs with diff[i] set. mink: keep |x|
 * above this (kinks of Relu, ties of MaxPool are avoided by the data). */
static void gradcheck(const char *what, int n, const flow_shape *shapes, const int *diff,
		      build_fn fn, float lo, float hi, float mink)
{
	flow_status *st = flow_status_new();
	flow_graph *g = flow_graph_new();
	flow_output ph[MAXIN];
	flow_tensor *vals[MAXIN];
	for (int i = 0; i < n; i++) {
		ph[i] = flow_placeholder(g, NULL, FLOW_F32, &shapes[i], st);
		vals[i] = flow_tensor_new(FLOW_F32, shapes[i].ndim, shapes[i].dims, st);
		float *p = flow_tensor_data(vals[i]);
		int64_t ne = flow_tensor_nelem(vals[i]);
		if (spaced) {
			for (int64_t k = 0; k < ne; k++)
				p[k] = 0.05f * (float)(k - ne / 2);
			for (int64_t k = ne - 1; k > 0; k--) {
				int64_t j = (int64_t)(frand(0, 1) * (float)(k + 1)) % (k + 1);
				float t = p[k];
				p[k] = p[j];
				p[j] = t;
			}
			continue;
		}
		for (int64_t k = 0; k < ne; k++) {
			float v;
			do
				v = frand(lo, hi);
			while (fabsf(v) < mink);
			if (no_ties)
				v = roundf(v * 10) / 10 + (i ? 0.08f : 0.03f);
			p[k] = v;
		}
	}
	flow_output y = fn(g, ph, st);
	if (!y.op)
		fail_msg("%s: build: %s", what, flow_status_message(st));
	flow_output loss = project(g, y, st);
	flow_output xs[MAXIN], dx[MAXIN];
	int nx = 0;
	for (int i = 0; i < n; i++)
		if (diff[i])
			xs[nx++] = ph[i];
	if (flow_gradients(g, &loss, 1, NULL, xs, nx, dx, st))
		fail_msg("%s: gradients: %s", what, flow_status_message(st));
	flow_session *s = flow_session_new(g, NULL, st);
	assert_non_null(s);
	flow_tensor *an[MAXIN] = {0};
	if (flow_session_run(s, ph, vals, n, dx, an, nx, NULL, 0, st))
		fail_msg("%s: run gradients: %s", what, flow_status_message(st));
	int k = 0;
	double worst = 0;
	for (int i = 0; i < n; i++) {
		if (!diff[i])
			continue;
		float *p = flow_tensor_data(vals[i]);
		int64_t ne = flow_tensor_nelem(vals[i]);
		assert_int_equal(flow_tensor_nelem(an[k]), ne);
		int64_t step = ne > 24 ? ne / 24 : 1;
		for (int64_t e = 0; e < ne; e += step) {
			const float h = 1e-2f;
			float x0 = p[e];
			p[e] = x0 + h;
			double lp = run_loss(s, ph, vals, n, loss);
			p[e] = x0 - h;
			double lm = run_loss(s, ph, vals, n, loss);
			p[e] = x0;
			double num = (lp - lm) / (2 * h), a = flow_tensor_get(an[k], e);
			double err = fabs(num - a) / (1.0 + fabs(num));
			if (err > worst)
				worst = err;
			if (err > 2e-2)
				fail_msg("%s: d/dx%d[%lld]: analytic %g, numeric %g", what, i,
					 (long long)e, a, num);
		}
		flow_tensor_unref(an[k]);
		k++;
	}
	for (int i = 0; i < n; i++)
		flow_tensor_unref(vals[i]);
	flow_session_free(s);
	flow_graph_free(g);
	flow_status_free(st);
}

static flow_shape sh(int nd, ...)
{
	va_list ap;
	va_start(ap, nd);
	flow_shape s;
	s.ndim = nd;
	for (int i = 0; i < nd; i++)
		s.dims[i] = va_arg(ap, int);
	va_end(ap);
	return s;
}

/* ---- the ops ---- */

static int cur_ta, cur_tb;
static flow_output b_matmul(flow_graph *g, const flow_output *in, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "MatMul", NULL);
	flow_op_add_input(d, in[0]);
	flow_op_add_input(d, in[1]);
	flow_op_set_attr_bool(d, "transpose_a", cur_ta);
	flow_op_set_attr_bool(d, "transpose_b", cur_tb);
	return flow_out(flow_op_finish(d, st), 0);
}

static void test_matmul(void **state)
{
	(void)state;
	int diff[2] = {1, 1};
	for (cur_ta = 0; cur_ta < 2; cur_ta++)
		for (cur_tb = 0; cur_tb < 2; cur_tb++) {
			flow_shape s[2] = {cur_ta ? sh(2, 4, 3) : sh(2, 3, 4),
					   cur_tb ? sh(2, 5, 4) : sh(2, 4, 5)};
			char w[64];
			snprintf(w, sizeof w, "MatMul ta=%d tb=%d", cur_ta, cur_tb);
			gradcheck(w, 2, s, diff, b_matmul, -1, 1, 0);
		}
}

static const char *cur_op;
static flow_output b_unary(flow_graph *g, const flow_output *in, flow_status *st)
{
	return op1(g, cur_op, in[0], st);
}
static flow_output b_binary(flow_graph *g, const flow_output *in, flow_status *st)
{
	return op2(g, cur_op, in[0], in[1], st);
}

static void test_unary(void **state)
{
	(void)state;
	static const struct {
		const char *op;
		float lo, hi, mink;
	} t[] = {{"Relu", -2, 2, 0.05f},  {"Sigmoid", -3, 3, 0}, {"Tanh", -2, 2, 0},
		 {"Softmax", -2, 2, 0},   {"Exp", -1, 1, 0},     {"Log", 0.5f, 2, 0},
		 {"Square", -2, 2, 0},    {"Sqrt", 0.5f, 2, 0},  {"Neg", -1, 1, 0},
		 {"Identity", -1, 1, 0},  {"_Flatten", -1, 1, 0}, {"_MeanAll", -1, 1, 0},
		 {"_SumAll", -1, 1, 0},   {"Relu6", -1, 5.5f, 0.05f}, {"LeakyRelu", -2, 2, 0.05f},
		 {"Elu", -2, 2, 0.05f},   {"Selu", -2, 2, 0.05f},  {"Softplus", -2, 2, 0},
		 {"Softsign", -2, 2, 0},  {"Rsqrt", 0.5f, 2, 0},   {"Reciprocal", 0.5f, 2, 0},
		 {"LogSoftmax", -2, 2, 0}, {"Abs", -2, 2, 0.05f}, {"Sin", -2, 2, 0},
		 {"Cos", -2, 2, 0}};
	int diff[1] = {1};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		cur_op = t[i].op;
		flow_shape s[1] = {!strcmp(cur_op, "_Flatten") ? sh(3, 2, 3, 4) : sh(2, 3, 5)};
		gradcheck(cur_op, 1, s, diff, b_unary, t[i].lo, t[i].hi, t[i].mink);
	}
}

static void test_binary_broadcast(void **state)
{
	(void)state;
	static const char *const ops[] = {"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div",
					  "SquaredDifference", "Maximum", "Minimum"};
	/* same shapes, row vector, column vector, scalar: the reduce-to-shape paths */
	flow_shape b_shapes[4] = {sh(2, 3, 4), sh(1, 4), sh(2, 3, 1), sh(0)};
	int diff[2] = {1, 1};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		for (int k = 0; k < 4; k++) {
			cur_op = ops[i];
			flow_shape s[2] = {sh(2, 3, 4), b_shapes[k]};
			char w[64];
			snprintf(w, sizeof w, "%s broadcast %d", cur_op, k);
			/* division: keep the divisor away from 0 */
			no_ties = !strcmp(cur_op, "Maximum") || !strcmp(cur_op, "Minimum");
			gradcheck(w, 2, s, diff, b_binary, 0.5f, 2, 0);
			no_ties = 0;
		}
}

static flow_output b_bias(flow_graph *g, const flow_output *in, flow_status *st)
{
	return op2(g, "BiasAdd", in[0], in[1], st);
}

static flow_output b_addn(flow_graph *g, const flow_output *in, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, cur_op, NULL);
	flow_output l[3] = {in[0], in[1], in[0]};
	flow_op_add_input_list(d, l, 3);
	return flow_out(flow_op_finish(d, st), 0);
}

static void test_addn(void **state)
{
	(void)state;
	flow_shape s[2] = {sh(2, 3, 4), sh(2, 3, 4)};
	int diff[2] = {1, 1};
	cur_op = "AddN";
	gradcheck("AddN", 2, s, diff, b_addn, -1, 1, 0);
}

static flow_output b_select(flow_graph *g, const flow_output *in, flow_status *st)
{
	flow_output c = op2(g, "Greater", in[0], in[1], st);
	flow_output a[3] = {c, in[0], in[1]};
	return flow_simple(g, "SelectV2", NULL, a, 3, st);
}

static flow_output b_cast(flow_graph *g, const flow_output *in, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "Cast", NULL);
	flow_op_add_input(d, in[0]);
	flow_op_set_attr_type(d, "DstT", FLOW_F64);
	flow_output x64 = flow_out(flow_op_finish(d, st), 0);
	flow_output sq = op2(g, "Mul", x64, x64, st);
	d = flow_op_new(g, "Cast", NULL);
	flow_op_add_input(d, sq);
	flow_op_set_attr_type(d, "DstT", FLOW_F32);
	return flow_out(flow_op_finish(d, st), 0);
}

static flow_output b_bmm(flow_graph *g, const flow_output *in, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "BatchMatMulV2", NULL);
	flow_op_add_input(d, in[0]);
	flow_op_add_input(d, in[1]);
	flow_op_set_attr_bool(d, "adj_x", cur_ta);
	flow_op_set_attr_bool(d, "adj_y", cur_tb);
	return flow_out(flow_op_finish(d, st), 0);
}

static flow_output b_concat(flow_graph *g, const flow_output *in, flow_status *st)
{
	int32_t ax = 1;
	flow_op_desc *d = flow_op_new(g, "ConcatV2", NULL);
	flow_output l[3] = {in[0], in[1], in[0]};
	flow_op_add_input_list(d, l, 3);
	flow_op_add_input(d, const_i32(g, &ax, 1, st));
	return flow_out(flow_op_finish(d, st), 0);
}

static void test_more_ops(void **state)
{
	(void)state;
	int diff2[2] = {1, 1}, diff1[1] = {1};
	flow_shape s2[2] = {sh(2, 3, 4), sh(2, 3, 4)};
	gradcheck("SelectV2", 2, s2, diff2, b_select, -1, 1, 0);
	gradcheck("Cast", 1, s2, diff1, b_cast, -1, 1, 0);
	for (cur_ta = 0; cur_ta < 2; cur_ta++)
		for (cur_tb = 0; cur_tb < 2; cur_tb++) {
			/* batch 2 against a broadcast batch of 1 */
			flow_shape s[2] = {cur_ta ? sh(3, 2, 4, 3) : sh(3, 2, 3, 4),
					   cur_tb ? sh(3, 1, 5, 4) : sh(3, 1, 4, 5)};
			char w[64];
			snprintf(w, sizeof w, "BatchMatMulV2 adj_x=%d adj_y=%d", cur_ta, cur_tb);
			gradcheck(w, 2, s, diff2, b_bmm, -1, 1, 0);
		}
	flow_shape sc[2] = {sh(2, 3, 2), sh(2, 3, 4)};
	gradcheck("ConcatV2", 2, sc, diff2, b_concat, -1, 1, 0);
}

static void test_bias_add(void **state)
{
	(void)state;
	flow_shape s[2] = {sh(2, 6, 5), sh(1, 5)};
	int diff[2] = {1, 1};
	gradcheck("BiasAdd", 2, s, diff, b_bias, -1, 1, 0);
	flow_shape s4[2] = {sh(4, 2, 3, 3, 4), sh(1, 4)};
	gradcheck("BiasAdd NHWC", 2, s4, diff, b_bias, -1, 1, 0);
}

static int cur_keep, cur_axis;
static flow_output b_reduce(flow_graph *g, const flow_output *in, flow_status *st)
{
	int32_t ax = cur_axis;
	flow_op_desc *d = flow_op_new(g, cur_op, NULL);
	flow_op_add_input(d, in[0]);
	flow_op_add_input(d, const_i32(g, &ax, 1, st));
	flow_op_set_attr_bool(d, "keep_dims", cur_keep);
	return flow_out(flow_op_finish(d, st), 0);
}

static void test_reductions(void **state)
{
	(void)state;
	static const char *const ops[] = {"Sum", "Mean"};
	int diff[1] = {1};
	flow_shape s[1] = {sh(3, 2, 3, 4)};
	for (int i = 0; i < 2; i++)
		for (cur_axis = -1; cur_axis < 3; cur_axis++)
			for (cur_keep = 0; cur_keep < 2; cur_keep++) {
				cur_op = ops[i];
				char w[64];
				snprintf(w, sizeof w, "%s axis %d keep %d", cur_op, cur_axis, cur_keep);
				gradcheck(w, 1, s, diff, b_reduce, -1, 1, 0);
			}
}

static flow_output b_reshape(flow_graph *g, const flow_output *in, flow_status *st)
{
	int32_t shp[2] = {4, 6};
	return op2(g, "Reshape", in[0], const_i32(g, shp, 2, st), st);
}

static flow_output b_transpose(flow_graph *g, const flow_output *in, flow_status *st)
{
	int32_t perm[3] = {2, 0, 1};
	return op2(g, "Transpose", in[0], const_i32(g, perm, 3, st), st);
}

static flow_output b_expand_squeeze(flow_graph *g, const flow_output *in, flow_status *st)
{
	int32_t ax = 1;
	flow_output e = op2(g, "ExpandDims", in[0], const_i32(g, &ax, 1, st), st);
	return op1(g, "Squeeze", e, st);
}

static void test_array(void **state)
{
	(void)state;
	int diff[1] = {1};
	flow_shape s[1] = {sh(3, 2, 3, 4)};
	gradcheck("Reshape", 1, s, diff, b_reshape, -1, 1, 0);
	gradcheck("Transpose", 1, s, diff, b_transpose, -1, 1, 0);
	gradcheck("ExpandDims+Squeeze", 1, s, diff, b_expand_squeeze, -1, 1, 0);
}

static flow_output b_sparse_xent(flow_graph *g, const flow_output *in, flow_status *st)
{
	int32_t lab[4] = {1, 0, 4, 2};
	return op2(g, "SparseSoftmaxCrossEntropyWithLogits", in[0], const_i32(g, lab, 4, st), st);
}

static flow_output b_dense_xent(flow_graph *g, const flow_output *in, flow_status *st)
{
	/* labels: a softmax of the second input, so they are a distribution */
	flow_output lab = op1(g, "Softmax", in[1], st);
	return op2(g, "SoftmaxCrossEntropyWithLogits", in[0], lab, st);
}

static void test_xent(void **state)
{
	(void)state;
	int diff1[1] = {1}, diff2[2] = {1, 1};
	flow_shape s1[1] = {sh(2, 4, 5)};
	gradcheck("SparseSoftmaxCrossEntropyWithLogits", 1, s1, diff1, b_sparse_xent, -2, 2, 0);
	flow_shape s2[2] = {sh(2, 4, 5), sh(2, 4, 5)};
	gradcheck("SoftmaxCrossEntropyWithLogits", 2, s2, diff2, b_dense_xent, -2, 2, 0);
}

static int cur_stride;
static const char *cur_pad;
static flow_output b_conv(flow_graph *g, const flow_output *in, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "Conv2D", NULL);
	flow_op_add_input(d, in[0]);
	flow_op_add_input(d, in[1]);
	int64_t s[4] = {1, cur_stride, cur_stride, 1};
	flow_op_set_attr_ints(d, "strides", s, 4);
	flow_op_set_attr_string(d, "padding", cur_pad);
	return flow_out(flow_op_finish(d, st), 0);
}

/* a 2x2 pooling window of type (MaxPool, AvgPool) */
static flow_output b_window(flow_graph *g, const char *type, const flow_output *in, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, type, NULL);
	flow_op_add_input(d, in[0]);
	int64_t s[4] = {1, cur_stride, cur_stride, 1}, k[4] = {1, 2, 2, 1};
	flow_op_set_attr_ints(d, "strides", s, 4);
	flow_op_set_attr_ints(d, "ksize", k, 4);
	flow_op_set_attr_string(d, "padding", cur_pad);
	return flow_out(flow_op_finish(d, st), 0);
}

static flow_output b_pool(flow_graph *g, const flow_output *in, flow_status *st)
{
	return b_window(g, "MaxPool", in, st);
}

static flow_output b_avgpool(flow_graph *g, const flow_output *in, flow_status *st)
{
	return b_window(g, "AvgPool", in, st);
}

static void test_conv_pool(void **state)
{
	(void)state;
	int diff[2] = {1, 1};
	static const char *const pads[2] = {"SAME", "VALID"};
	for (int p = 0; p < 2; p++)
		for (cur_stride = 1; cur_stride <= 2; cur_stride++) {
			cur_pad = pads[p];
			char w[64];
			snprintf(w, sizeof w, "Conv2D %s stride %d", cur_pad, cur_stride);
			flow_shape s[2] = {sh(4, 2, 5, 5, 3), sh(4, 3, 3, 3, 4)};
			gradcheck(w, 2, s, diff, b_conv, -1, 1, 0);
			snprintf(w, sizeof w, "MaxPool %s stride %d", cur_pad, cur_stride);
			flow_shape sp[1] = {sh(4, 2, 5, 5, 3)};
			spaced = 1;
			gradcheck(w, 1, sp, diff, b_pool, -1, 1, 0);
			spaced = 0;
			snprintf(w, sizeof w, "AvgPool %s stride %d", cur_pad, cur_stride);
			gradcheck(w, 1, sp, diff, b_avgpool, -1, 1, 0);
		}
}

/* Dropout's mask changes every run, so check the identity dx = dy * mask. */
static void test_dropout_grad(void **state)
{
	(void)state;
	flow_status *st = flow_status_new();
	flow_graph *g = flow_graph_new();
	int64_t d[2] = {8, 16};
	flow_shape s = flow_shape_make(2, d);
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &s, st);
	flow_op_desc *dd = flow_op_new(g, "_Dropout", "drop");
	flow_op_add_input(dd, x);
	flow_op_set_attr_float(dd, "rate", 0.5);
	flow_op_set_attr_int(dd, "seed", 7);
	flow_op *drop = flow_op_finish(dd, st);
	assert_non_null(drop);
	flow_output loss = op1(g, "_SumAll", flow_out(drop, 0), st), dx;
	assert_int_equal(flow_gradients(g, &loss, 1, NULL, &x, 1, &dx, st), 0);
	flow_session *ss = flow_session_new(g, NULL, st);
	flow_tensor *xv = flow_tensor_new(FLOW_F32, 2, d, st), *out[2];
	for (int i = 0; i < 128; i++)
		((float *)flow_tensor_data(xv))[i] = 1.0f + (float)i;
	flow_output f[2] = {dx, flow_out(drop, 1)};
	assert_int_equal(flow_session_run(ss, &x, &xv, 1, f, out, 2, NULL, 0, st), 0);
	int zeros = 0;
	for (int i = 0; i < 128; i++) {
		assert_float_equal(flow_tensor_get(out[0], i), flow_tensor_get(out[1], i), 1e-6);
		zeros += flow_tensor_get(out[1], i) == 0;
	}
	assert_true(zeros > 30 && zeros < 98);   /* rate 0.5 of 128 */
	flow_tensor_unref(out[0]);
	flow_tensor_unref(out[1]);
	flow_tensor_unref(xv);
	flow_session_free(ss);
	flow_graph_free(g);
	flow_status_free(st);
}

/* A gradient through an op without one names the op. */
static void test_no_gradient_error(void **state)
{
	(void)state;
	flow_status *st = flow_status_new();
	flow_graph *g = flow_graph_new();
	int64_t d[1] = {4};
	flow_shape s = flow_shape_make(1, d);
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &s, st);
	flow_output f = flow_simple(g, "Floor", "my_floor", &x, 1, st);
	assert_non_null(f.op);
	assert_false(flow_gradient_known("Floor"));
	flow_output loss = op1(g, "_SumAll", f, st), dx = {NULL, 0};
	assert_int_equal(flow_gradients(g, &loss, 1, NULL, &x, 1, &dx, st), -1);
	assert_non_null(strstr(flow_status_message(st), "my_floor"));
	assert_non_null(strstr(flow_status_message(st), "Floor"));
	/* the graph is still usable: nothing half-built is run */
	flow_status_clear(st);
	flow_session *ss = flow_session_new(g, NULL, st);
	flow_tensor *xv = flow_tensor_new(FLOW_F32, 1, d, st), *out = NULL;
	assert_int_equal(flow_session_run(ss, &x, &xv, 1, &loss, &out, 1, NULL, 0, st), 0);
	flow_tensor_unref(out);
	flow_tensor_unref(xv);
	flow_session_free(ss);
	flow_graph_free(g);
	flow_status_free(st);
}

/* An x that the loss does not depend on gets zeros; sums of two paths add. */
static void test_unconnected_and_fanout(void **state)
{
	(void)state;
	flow_status *st = flow_status_new();
	flow_graph *g = flow_graph_new();
	int64_t d[1] = {3};
	flow_shape s = flow_shape_make(1, d);
	flow_output a = flow_placeholder(g, "a", FLOW_F32, &s, st);
	flow_output b = flow_placeholder(g, "b", FLOW_F32, &s, st);
	/* loss = sum(a*a + a) : d/da = 2a + 1 */
	flow_output loss = op1(g, "_SumAll", op2(g, "Add", op2(g, "Mul", a, a, st), a, st), st);
	flow_output xs[2] = {a, b}, dx[2];
	assert_int_equal(flow_gradients(g, &loss, 1, NULL, xs, 2, dx, st), 0);
	flow_session *ss = flow_session_new(g, NULL, st);
	float av[3] = {1, -2, 0.5f};
	flow_tensor *vals[2] = {flow_tensor_from_data(FLOW_F32, 1, d, av, st),
				flow_tensor_new(FLOW_F32, 1, d, st)};
	flow_tensor *out[2];
	assert_int_equal(flow_session_run(ss, xs, vals, 2, dx, out, 2, NULL, 0, st), 0);
	for (int i = 0; i < 3; i++) {
		assert_float_equal(flow_tensor_get(out[0], i), 2 * av[i] + 1, 1e-6);
		assert_float_equal(flow_tensor_get(out[1], i), 0, 0);
	}
	for (int i = 0; i < 2; i++) {
		flow_tensor_unref(out[i]);
		flow_tensor_unref(vals[i]);
	}
	flow_session_free(ss);
	flow_graph_free(g);
	flow_status_free(st);
}

/* Mismatched label shapes fail at graph build with both shapes named. */
static void test_label_shape_mismatch(void **state)
{
	(void)state;
	flow_status *st = flow_status_new();
	flow_graph *g = flow_graph_new();
	int64_t d[2] = {8, 10}, ld[1] = {6};
	flow_shape s = flow_shape_make(2, d), ls = flow_shape_make(1, ld);
	flow_output x = flow_placeholder(g, "logits", FLOW_F32, &s, st);
	flow_output y = flow_placeholder(g, "labels", FLOW_I32, &ls, st);
	flow_output in[2] = {x, y};
	flow_output l = flow_simple(g, "SparseSoftmaxCrossEntropyWithLogits", "xent", in, 2, st);
	assert_null(l.op);
	assert_int_not_equal(flow_status_code(st), FLOW_OK);
	assert_non_null(strstr(flow_status_message(st), "xent"));
	flow_graph_free(g);
	flow_status_free(st);
}

int main(void)
{
	flow_status *st = flow_status_new();
	if (flow_train_init(st)) {
		fprintf(stderr, "flow_train_init: %s\n", flow_status_message(st));
		return 1;
	}
	flow_status_free(st);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matmul),
		cmocka_unit_test(test_unary),
		cmocka_unit_test(test_binary_broadcast),
		cmocka_unit_test(test_bias_add),
		cmocka_unit_test(test_addn),
		cmocka_unit_test(test_more_ops),
		cmocka_unit_test(test_reductions),
		cmocka_unit_test(test_array),
		cmocka_unit_test(test_xent),
		cmocka_unit_test(test_conv_pool),
		cmocka_unit_test(test_dropout_grad),
		cmocka_unit_test(test_no_gradient_error),
		cmocka_unit_test(test_unconnected_and_fanout),
		cmocka_unit_test(test_label_shape_mismatch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
