/*
 * nn.c — MatMul and BatchMatMul on OpenBLAS, BiasAdd(+Grad), Softmax,
 * LogSoftmax, the two softmax cross-entropies, Conv2D (im2col + GEMM),
 * MaxPool and AvgPool. Images are NHWC, as TensorFlow's CPU default.
 */
#include "ops_common.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- MatMul ---- */
static int shape_matmul(flow_shape_ctx *c)
{
	const flow_shape *a = flow_shape_input(c, 0), *b = flow_shape_input(c, 1);
	int ta = flow_shape_attr_bool(c, "transpose_a", 0), tb = flow_shape_attr_bool(c, "transpose_b", 0);
	if ((a->ndim >= 0 && a->ndim != 2) || (b->ndim >= 0 && b->ndim != 2))
		return flow_shape_error(c, "MatMul needs matrices, got ranks %d and %d", a->ndim, b->ndim);
	int64_t m = a->ndim == 2 ? a->dims[ta] : -1, ka = a->ndim == 2 ? a->dims[!ta] : -1;
	int64_t kb = b->ndim == 2 ? b->dims[tb] : -1, n = b->ndim == 2 ? b->dims[!tb] : -1;
	if (ka >= 0 && kb >= 0 && ka != kb)
		return flow_shape_error(c, "inner dimensions differ: a has %lld, b has %lld (transpose_a=%d, transpose_b=%d)",
					(long long)ka, (long long)kb, ta, tb);
	int64_t d[2] = {m, n};
	flow_shape s = flow_shape_make(2, d);
	flow_shape_set_output(c, 0, &s);
	return 0;
}

typedef struct imm_job {
	const void *a, *b;
	void *c;
	int64_t m, n, kk;
	int ta, tb, is64;
} imm_job;

/* Integer matmul (no BLAS): rows in parallel, wrapping arithmetic. */
static void imm_range(void *ud, int64_t lo, int64_t hi)
{
	imm_job *j = ud;
	for (int64_t i = lo; i < hi; i++)
		for (int64_t c = 0; c < j->n; c++) {
			uint64_t s = 0;
			for (int64_t p = 0; p < j->kk; p++) {
				int64_t ai = j->ta ? p * j->m + i : i * j->kk + p;
				int64_t bi = j->tb ? c * j->kk + p : p * j->n + c;
				int64_t av = j->is64 ? ((const int64_t *)j->a)[ai] : ((const int32_t *)j->a)[ai];
				int64_t bv = j->is64 ? ((const int64_t *)j->b)[bi] : ((const int32_t *)j->b)[bi];
				s += (uint64_t)av * (uint64_t)bv;
			}
			if (j->is64)
				((int64_t *)j->c)[i * j->n + c] = (int64_t)s;
			else
				((int32_t *)j->c)[i * j->n + c] = (int32_t)(uint32_t)s;
		}
}

/* One (m x k) * (k x n) product in row-major with optional transposes. */
static void gemm(flow_dtype dt, int ta, int tb, int64_t m, int64_t n, int64_t kk, const void *a,
		 const void *b, void *c, flow_kernel_ctx *k)
{
	if (m == 0 || n == 0)
		return;
	if (kk == 0) {
		memset(c, 0, (size_t)(m * n) * flow_dtype_size(dt));
		return;
	}
	int lda = (int)(ta ? m : kk), ldb = (int)(tb ? kk : n);
	if (dt == FLOW_F32)
		cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
			    (int)m, (int)n, (int)kk, 1.0f, a, lda, b, ldb, 0.0f, c, (int)n);
	else if (dt == FLOW_F64)
		cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
			    (int)m, (int)n, (int)kk, 1.0, a, lda, b, ldb, 0.0, c, (int)n);
	else {
		imm_job j = {a, b, c, m, n, kk, ta, tb, dt == FLOW_I64};
		if (k)
			ops_parallel(k, m, ops_grain_for(n * kk), imm_range, &j);
		else
			imm_range(&j, 0, m);
	}
}

static void k_MatMul(flow_kernel_ctx *k)
{
	flow_tensor *a = flow_ctx_input(k, 0), *b = flow_ctx_input(k, 1);
	int ta = flow_ctx_attr_bool(k, "transpose_a", 0), tb = flow_ctx_attr_bool(k, "transpose_b", 0);
	if (a->ndim != 2 || b->ndim != 2) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "MatMul needs matrices, got ranks %d and %d", a->ndim, b->ndim);
		return;
	}
	int64_t m = a->dims[ta], ka = a->dims[!ta], kb = b->dims[tb], n = b->dims[!tb];
	if (ka != kb) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "inner dimensions differ: a has %lld, b has %lld",
			      (long long)ka, (long long)kb);
		return;
	}
	if (m > INT32_MAX || n > INT32_MAX || ka > INT32_MAX) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "matrix dimension exceeds 2^31-1 (BLAS limit)");
		return;
	}
	int64_t d[2] = {m, n};
	flow_tensor *c = flow_ctx_output(k, 0, 2, d);
	if (!c)
		return;
	gemm(a->dtype, ta, tb, m, n, ka, flow_tensor_cdata(a), flow_tensor_cdata(b), flow_tensor_ptr(c), k);
}

/* ---- BatchMatMul(V2): batch dims broadcast (V2) or must match (V1) ---- */
static int shape_batch_matmul(flow_shape_ctx *c)
{
	const flow_shape *a = flow_shape_input(c, 0), *b = flow_shape_input(c, 1);
	int ax = flow_shape_attr_bool(c, "adj_x", 0), ay = flow_shape_attr_bool(c, "adj_y", 0);
	flow_shape s;
	if (a->ndim < 0 || b->ndim < 0) {
		s = flow_shape_unknown();
		flow_shape_set_output(c, 0, &s);
		return 0;
	}
	if (a->ndim < 2 || b->ndim < 2)
		return flow_shape_error(c, "inputs need rank >= 2, got %d and %d", a->ndim, b->ndim);
	flow_shape ba = flow_shape_make(a->ndim - 2, a->dims), bb = flow_shape_make(b->ndim - 2, b->dims);
	char msg[200];
	if (flow_shape_broadcast(&ba, &bb, &s, msg, sizeof msg))
		return flow_shape_error(c, "batch dimensions: %s", msg);
	int64_t ka = a->dims[a->ndim - (ax ? 2 : 1)], kb = b->dims[b->ndim - (ay ? 1 : 2)];
	if (ka >= 0 && kb >= 0 && ka != kb)
		return flow_shape_error(c, "inner dimensions differ: %lld vs %lld", (long long)ka, (long long)kb);
	if (s.ndim + 2 > FLOW_MAX_DIMS)
		return flow_shape_error(c, "result rank exceeds %d", FLOW_MAX_DIMS);
	s.dims[s.ndim++] = a->dims[a->ndim - (ax ? 1 : 2)];
	s.dims[s.ndim++] = b->dims[b->ndim - (ay ? 2 : 1)];
	flow_shape_set_output(c, 0, &s);
	return 0;
}

static void k_BatchMatMul(flow_kernel_ctx *k)
{
	flow_tensor *a = flow_ctx_input(k, 0), *b = flow_ctx_input(k, 1);
	int ax = flow_ctx_attr_bool(k, "adj_x", 0), ay = flow_ctx_attr_bool(k, "adj_y", 0);
	if (a->ndim < 2 || b->ndim < 2) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "inputs need rank >= 2, got %d and %d", a->ndim, b->ndim);
		return;
	}
	int64_t m = a->dims[a->ndim - (ax ? 1 : 2)], ka = a->dims[a->ndim - (ax ? 2 : 1)];
	int64_t kb = b->dims[b->ndim - (ay ? 1 : 2)], n = b->dims[b->ndim - (ay ? 2 : 1)];
	if (ka != kb) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "inner dimensions differ: %lld vs %lld", (long long)ka,
			      (long long)kb);
		return;
	}
	/* batch shapes as tensors-without-data for the broadcasting helper */
	flow_tensor ta = {0}, tb = {0};
	ta.ndim = a->ndim - 2;
	tb.ndim = b->ndim - 2;
	ta.nelem = tb.nelem = 1;
	for (int d = 0; d < ta.ndim; d++)
		ta.nelem *= (ta.dims[d] = a->dims[d]);
	for (int d = 0; d < tb.ndim; d++)
		tb.nelem *= (tb.dims[d] = b->dims[d]);
	ops_bcast bc;
	char msg[200];
	if (ops_bcast_init(&bc, &ta, &tb, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "batch dimensions: %s", msg);
		return;
	}
	int64_t od[FLOW_MAX_DIMS];
	memcpy(od, bc.dims, sizeof(int64_t) * (size_t)bc.ndim);
	od[bc.ndim] = m;
	od[bc.ndim + 1] = n;
	flow_tensor *c = flow_ctx_output(k, 0, bc.ndim + 2, od);
	if (!c)
		return;
	size_t esz = flow_dtype_size(a->dtype);
	const char *pa = flow_tensor_cdata(a), *pb = flow_tensor_cdata(b);
	char *pc = flow_tensor_ptr(c);
	for (int64_t bi = 0; bi < bc.nelem; bi++) {
		/* batch index -> offsets in a and b (element strides of the batch dims) */
		int64_t oa = 0, ob = 0, r = bi;
		for (int d = bc.ndim - 1; d >= 0; d--) {
			int64_t i = r % bc.dims[d];
			r /= bc.dims[d];
			oa += i * bc.sa[d];
			ob += i * bc.sb[d];
		}
		gemm(a->dtype, ax, ay, m, n, ka, pa + (size_t)(oa * m * ka) * esz, pb + (size_t)(ob * ka * n) * esz,
		     pc + (size_t)(bi * m * n) * esz, k);
	}
}

/* ---- BiasAdd / BiasAddGrad ---- */
static int bias_channel_dim(int ndim, const char *fmt)
{
	return fmt && strcmp(fmt, "NCHW") == 0 ? (ndim >= 3 ? 1 : ndim - 1) : ndim - 1;
}

static int shape_bias_add(flow_shape_ctx *c)
{
	const flow_shape *v = flow_shape_input(c, 0), *b = flow_shape_input(c, 1);
	const flow_attr_value *f = flow_shape_attr(c, "data_format");
	if (b->ndim >= 0 && b->ndim != 1)
		return flow_shape_error(c, "bias must be a vector, got rank %d", b->ndim);
	if (v->ndim >= 0 && v->ndim < 2)
		return flow_shape_error(c, "value must have rank >= 2, got %d", v->ndim);
	if (v->ndim >= 0 && b->ndim == 1) {
		int cd = bias_channel_dim(v->ndim, f ? f->u.s : NULL);
		if (v->dims[cd] >= 0 && b->dims[0] >= 0 && v->dims[cd] != b->dims[0])
			return flow_shape_error(c, "bias has %lld elements but value's channel dimension has %lld",
						(long long)b->dims[0], (long long)v->dims[cd]);
	}
	flow_shape_set_output(c, 0, v);
	return 0;
}

typedef struct bias_job {
	const void *v, *b;
	void *o;
	int64_t outer, ch, inner;
	flow_dtype dt;
} bias_job;

static void bias_range(void *ud, int64_t lo, int64_t hi)
{
	bias_job *j = ud;
	for (int64_t r = lo; r < hi; r++) { /* r: one (outer, channel) row of `inner` */
		int64_t ch = r % j->ch, base = r * j->inner;
		switch (j->dt) {
		case FLOW_F32: {
			const float *v = (const float *)j->v + base;
			float *o = (float *)j->o + base, bv = ((const float *)j->b)[ch];
			for (int64_t i = 0; i < j->inner; i++)
				o[i] = v[i] + bv;
			break;
		}
		case FLOW_F64: {
			const double *v = (const double *)j->v + base;
			double *o = (double *)j->o + base, bv = ((const double *)j->b)[ch];
			for (int64_t i = 0; i < j->inner; i++)
				o[i] = v[i] + bv;
			break;
		}
		case FLOW_I32: {
			const int32_t *v = (const int32_t *)j->v + base;
			int32_t *o = (int32_t *)j->o + base, bv = ((const int32_t *)j->b)[ch];
			for (int64_t i = 0; i < j->inner; i++)
				o[i] = (int32_t)((uint32_t)v[i] + (uint32_t)bv);
			break;
		}
		default: {
			const int64_t *v = (const int64_t *)j->v + base;
			int64_t *o = (int64_t *)j->o + base, bv = ((const int64_t *)j->b)[ch];
			for (int64_t i = 0; i < j->inner; i++)
				o[i] = (int64_t)((uint64_t)v[i] + (uint64_t)bv);
			break;
		}
		}
	}
}

/* NHWC: rows of C with inner 1 would be slow; treat [outer, C] as rows of
 * C elements instead (inner = C, one bias vector per row). */
static void bias_rows_range(void *ud, int64_t lo, int64_t hi)
{
	bias_job *j = ud;
	for (int64_t r = lo; r < hi; r++) {
		int64_t base = r * j->ch;
		switch (j->dt) {
		case FLOW_F32: {
			const float *v = (const float *)j->v + base, *b = j->b;
			float *o = (float *)j->o + base;
			for (int64_t i = 0; i < j->ch; i++)
				o[i] = v[i] + b[i];
			break;
		}
		case FLOW_F64: {
			const double *v = (const double *)j->v + base, *b = j->b;
			double *o = (double *)j->o + base;
			for (int64_t i = 0; i < j->ch; i++)
				o[i] = v[i] + b[i];
			break;
		}
		case FLOW_I32: {
			const int32_t *v = (const int32_t *)j->v + base, *b = j->b;
			int32_t *o = (int32_t *)j->o + base;
			for (int64_t i = 0; i < j->ch; i++)
				o[i] = (int32_t)((uint32_t)v[i] + (uint32_t)b[i]);
			break;
		}
		default: {
			const int64_t *v = (const int64_t *)j->v + base, *b = j->b;
			int64_t *o = (int64_t *)j->o + base;
			for (int64_t i = 0; i < j->ch; i++)
				o[i] = (int64_t)((uint64_t)v[i] + (uint64_t)b[i]);
			break;
		}
		}
	}
}

static void k_BiasAdd(flow_kernel_ctx *k)
{
	flow_tensor *v = flow_ctx_input(k, 0), *b = flow_ctx_input(k, 1);
	const char *fmt = flow_ctx_attr_string(k, "data_format", "NHWC");
	if (v->ndim < 2 || b->ndim != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "need value of rank >= 2 and a bias vector, got ranks %d and %d",
			      v->ndim, b->ndim);
		return;
	}
	int cd = bias_channel_dim(v->ndim, fmt);
	if (v->dims[cd] != b->dims[0]) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "bias has %lld elements but value's channel dimension has %lld",
			      (long long)b->dims[0], (long long)v->dims[cd]);
		return;
	}
	flow_tensor *o = flow_ctx_output_inplace(k, 0, 0, v->ndim, v->dims);
	if (!o)
		return;
	bias_job j = {flow_tensor_cdata(v), flow_tensor_cdata(b), flow_tensor_ptr(o), 1, b->dims[0], 1, v->dtype};
	for (int d = 0; d < cd; d++)
		j.outer *= v->dims[d];
	for (int d = cd + 1; d < v->ndim; d++)
		j.inner *= v->dims[d];
	if (j.ch == 0 || v->nelem == 0)
		return;
	if (j.inner == 1)
		ops_parallel(k, j.outer, ops_grain_for(j.ch), bias_rows_range, &j);
	else
		ops_parallel(k, j.outer * j.ch, ops_grain_for(j.inner), bias_range, &j);
}

static int shape_bias_add_grad(flow_shape_ctx *c)
{
	const flow_shape *g = flow_shape_input(c, 0);
	const flow_attr_value *f = flow_shape_attr(c, "data_format");
	flow_shape s = ops_shape_unknown_rank(1);
	if (g->ndim >= 0 && g->ndim < 2)
		return flow_shape_error(c, "out_backprop must have rank >= 2, got %d", g->ndim);
	if (g->ndim >= 2)
		s.dims[0] = g->dims[bias_channel_dim(g->ndim, f ? f->u.s : NULL)];
	flow_shape_set_output(c, 0, &s);
	return 0;
}

static void k_BiasAddGrad(flow_kernel_ctx *k)
{
	flow_tensor *g = flow_ctx_input(k, 0);
	const char *fmt = flow_ctx_attr_string(k, "data_format", "NHWC");
	if (g->ndim < 2) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "out_backprop must have rank >= 2, got %d", g->ndim);
		return;
	}
	int cd = bias_channel_dim(g->ndim, fmt);
	int64_t ch = g->dims[cd], outer = 1, inner = 1;
	for (int d = 0; d < cd; d++)
		outer *= g->dims[d];
	for (int d = cd + 1; d < g->ndim; d++)
		inner *= g->dims[d];
	flow_tensor *o = flow_ctx_output(k, 0, 1, &ch);
	if (!o)
		return;
	/* one pass in memory order, double accumulators per channel */
	double *acc = calloc((size_t)(ch ? ch : 1), sizeof *acc);
	if (!acc) {
		flow_ctx_fail(k, FLOW_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	const float *gf = flow_tensor_cdata(g);
	const double *gd = flow_tensor_cdata(g);
	int f32 = g->dtype == FLOW_F32;
	for (int64_t a = 0; a < outer; a++)
		for (int64_t c = 0; c < ch; c++) {
			int64_t base = (a * ch + c) * inner;
			double s = 0;
			for (int64_t i = 0; i < inner; i++)
				s += f32 ? (double)gf[base + i] : gd[base + i];
			acc[c] += s;
		}
	for (int64_t c = 0; c < ch; c++) {
		if (f32)
			FLOW_F32P(o)[c] = (float)acc[c];
		else
			FLOW_F64P(o)[c] = acc[c];
	}
	free(acc);
}

/* ---- Softmax / LogSoftmax over the last axis ---- */
typedef struct sm_job {
	const void *x;
	void *y;
	int64_t n;
	int log, f64;
} sm_job;

#define SM_ROW(T, EXP, LOG)                                                                \
	static void sm_row_##T(const T *x, T *y, int64_t n, int lg)                        \
	{                                                                                  \
		T mx = x[0];                                                               \
		for (int64_t i = 1; i < n; i++)                                            \
			if (x[i] > mx)                                                     \
				mx = x[i];                                                 \
		double s = 0;                                                              \
		if (lg) {                                                                  \
			for (int64_t i = 0; i < n; i++)                                    \
				s += EXP(x[i] - mx);                                       \
			T ls = (T)LOG(s);                                                  \
			for (int64_t i = 0; i < n; i++)                                    \
				y[i] = x[i] - mx - ls;                                     \
		} else { /* one exp per element: y holds exp, then scaled */       \
			for (int64_t i = 0; i < n; i++) {                                  \
				T e = EXP(x[i] - mx);                                      \
				y[i] = e;                                                  \
				s += e;                                                    \
			}                                                                  \
			T inv = (T)(1.0 / s);                                              \
			for (int64_t i = 0; i < n; i++)                                    \
				y[i] *= inv;                                               \
		}                                                                          \
	}
SM_ROW(float, expf, log)
SM_ROW(double, exp, log)

static void sm_range(void *ud, int64_t lo, int64_t hi)
{
	sm_job *j = ud;
	for (int64_t r = lo; r < hi; r++) {
		if (j->f64)
			sm_row_double((const double *)j->x + r * j->n, (double *)j->y + r * j->n, j->n, j->log);
		else
			sm_row_float((const float *)j->x + r * j->n, (float *)j->y + r * j->n, j->n, j->log);
	}
}

static void softmax_common(flow_kernel_ctx *k, int lg)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	if (x->ndim < 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "logits must have rank >= 1");
		return;
	}
	flow_tensor *y = flow_ctx_output_inplace(k, 0, 0, x->ndim, x->dims);
	if (!y)
		return;
	int64_t n = x->dims[x->ndim - 1];
	if (n == 0 || x->nelem == 0)
		return;
	sm_job j = {flow_tensor_cdata(x), flow_tensor_ptr(y), n, lg, x->dtype == FLOW_F64};
	ops_parallel(k, x->nelem / n, ops_grain_for(3 * n), sm_range, &j);
}
static void k_Softmax(flow_kernel_ctx *k) { softmax_common(k, 0); }
static void k_LogSoftmax(flow_kernel_ctx *k) { softmax_common(k, 1); }

static int shape_softmax(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	if (x->ndim == 0)
		return flow_shape_error(c, "logits must have rank >= 1");
	flow_shape_set_output(c, 0, x);
	return 0;
}

/* ---- cross-entropies: loss [B] and backprop [B, C] ---- */
static int shape_xent(flow_shape_ctx *c, int sparse)
{
	const flow_shape *f = flow_shape_input(c, 0), *l = flow_shape_input(c, 1);
	if (f->ndim >= 0 && f->ndim != 2)
		return flow_shape_error(c, "logits must be [batch, classes], got rank %d", f->ndim);
	if (sparse && l->ndim >= 0 && l->ndim != 1)
		return flow_shape_error(c, "labels must be a vector [batch], got rank %d", l->ndim);
	if (!sparse && l->ndim >= 0 && l->ndim != 2)
		return flow_shape_error(c, "labels must be [batch, classes], got rank %d", l->ndim);
	if (f->ndim == 2 && l->ndim >= 1 && f->dims[0] >= 0 && l->dims[0] >= 0 && f->dims[0] != l->dims[0])
		return flow_shape_error(c, "logits batch %lld differs from labels batch %lld",
					(long long)f->dims[0], (long long)l->dims[0]);
	if (!sparse && f->ndim == 2 && l->ndim == 2 && f->dims[1] >= 0 && l->dims[1] >= 0 &&
	    f->dims[1] != l->dims[1])
		return flow_shape_error(c, "logits have %lld classes, labels %lld", (long long)f->dims[1],
					(long long)l->dims[1]);
	int64_t b = f->ndim == 2 ? f->dims[0] : (l->ndim >= 1 ? l->dims[0] : -1);
	int64_t cl = f->ndim == 2 ? f->dims[1] : -1;
	int64_t d2[2] = {b, cl};
	flow_shape s0 = flow_shape_make(1, &b), s1 = flow_shape_make(2, d2);
	flow_shape_set_output(c, 0, &s0);
	flow_shape_set_output(c, 1, &s1);
	return 0;
}

static int shape_xent_dense(flow_shape_ctx *c) { return shape_xent(c, 0); }
static int shape_xent_sparse(flow_shape_ctx *c) { return shape_xent(c, 1); }

typedef struct xent_job {
	const void *f, *l;
	void *loss, *bp;
	int64_t c;
	int f64, sparse, l64;
} xent_job;

static void xent_range(void *ud, int64_t lo, int64_t hi)
{
	xent_job *j = ud;
	for (int64_t r = lo; r < hi; r++) {
		double mx = -INFINITY, s = 0;
		for (int64_t i = 0; i < j->c; i++) {
			double v = j->f64 ? ((const double *)j->f)[r * j->c + i] : ((const float *)j->f)[r * j->c + i];
			if (v > mx)
				mx = v;
		}
		for (int64_t i = 0; i < j->c; i++) {
			double v = j->f64 ? ((const double *)j->f)[r * j->c + i] : ((const float *)j->f)[r * j->c + i];
			s += exp(v - mx);
		}
		double lse = mx + log(s), loss = 0;
		int64_t lab = -1;
		if (j->sparse)
			lab = j->l64 ? ((const int64_t *)j->l)[r] : ((const int32_t *)j->l)[r];
		for (int64_t i = 0; i < j->c; i++) {
			double v = j->f64 ? ((const double *)j->f)[r * j->c + i] : ((const float *)j->f)[r * j->c + i];
			double p = exp(v - lse), y;
			if (j->sparse)
				y = i == lab ? 1.0 : 0.0;
			else
				y = j->f64 ? ((const double *)j->l)[r * j->c + i] : ((const float *)j->l)[r * j->c + i];
			if (y != 0)
				loss -= y * (v - lse);
			if (j->f64)
				((double *)j->bp)[r * j->c + i] = p - y;
			else
				((float *)j->bp)[r * j->c + i] = (float)(p - y);
		}
		if (j->f64)
			((double *)j->loss)[r] = loss;
		else
			((float *)j->loss)[r] = (float)loss;
	}
}

static void xent_common(flow_kernel_ctx *k, int sparse)
{
	flow_tensor *f = flow_ctx_input(k, 0), *l = flow_ctx_input(k, 1);
	if (f->ndim != 2) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "logits must be [batch, classes], got rank %d", f->ndim);
		return;
	}
	int64_t b = f->dims[0], c = f->dims[1];
	if (sparse) {
		if (l->ndim != 1 || l->dims[0] != b) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "labels must be a vector of %lld, got rank %d",
				      (long long)b, l->ndim);
			return;
		}
		for (int64_t i = 0; i < b; i++) {
			int64_t v = l->dtype == FLOW_I64 ? FLOW_I64P(l)[i] : FLOW_I32P(l)[i];
			if (v < 0 || v >= c) {
				flow_ctx_fail(k, FLOW_INVALID_ARGUMENT,
					      "received a label value of %lld at index %lld, outside the valid range [0, %lld)",
					      (long long)v, (long long)i, (long long)c);
				return;
			}
		}
	} else if (l->ndim != 2 || l->dims[0] != b || l->dims[1] != c) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "labels must have the logits' shape [%lld, %lld]",
			      (long long)b, (long long)c);
		return;
	}
	int64_t d2[2] = {b, c};
	flow_tensor *loss = flow_ctx_output(k, 0, 1, &b);
	flow_tensor *bp = loss ? flow_ctx_output(k, 1, 2, d2) : NULL;
	if (!bp)
		return;
	xent_job j = {flow_tensor_cdata(f), flow_tensor_cdata(l), flow_tensor_ptr(loss), flow_tensor_ptr(bp), c,
		      f->dtype == FLOW_F64, sparse, l->dtype == FLOW_I64};
	if (c > 0)
		ops_parallel(k, b, ops_grain_for(4 * c), xent_range, &j);
	else
		memset(flow_tensor_ptr(loss), 0, (size_t)b * flow_dtype_size(f->dtype));
}
static void k_SoftmaxXent(flow_kernel_ctx *k) { xent_common(k, 0); }
static void k_SparseSoftmaxXent(flow_kernel_ctx *k) { xent_common(k, 1); }

/* ---- Conv2D / pooling: NHWC, padding SAME or VALID ---- */
typedef struct win2d {
	int64_t n, h, w, c;          /* input */
	int64_t kh, kw, sh, sw, dh, dw;
	int64_t oh, ow, pt, pl;      /* output size, top/left padding */
} win2d;

static int window_out(int64_t in, int64_t k, int64_t s, int64_t d, int same, int64_t *out, int64_t *pad)
{
	int64_t eff = (k - 1) * d + 1;
	if (same) {
		*out = (in + s - 1) / s;
		int64_t total = (*out - 1) * s + eff - in;
		*pad = total > 0 ? total / 2 : 0;
	} else {
		*out = in >= eff ? (in - eff) / s + 1 : 0;
		*pad = 0;
	}
	return 0;
}

/* Reads strides/ksize/dilations/padding; -1 with a message on bad attrs. */
static int win_attrs(const int64_t *strides, int ns, const int64_t *dil, int nd, const char *padding,
		     int64_t kh, int64_t kw, const int64_t *in, win2d *w, char *msg, size_t msglen)
{
	if (ns != 4 || strides[0] != 1 || strides[3] != 1 || strides[1] < 1 || strides[2] < 1) {
		snprintf(msg, msglen, "strides must be [1, h, w, 1] with h, w >= 1");
		return -1;
	}
	if (nd && (nd != 4 || dil[0] != 1 || dil[3] != 1 || dil[1] < 1 || dil[2] < 1)) {
		snprintf(msg, msglen, "dilations must be [1, h, w, 1] with h, w >= 1");
		return -1;
	}
	int same;
	if (padding && strcmp(padding, "SAME") == 0)
		same = 1;
	else if (padding && strcmp(padding, "VALID") == 0)
		same = 0;
	else {
		snprintf(msg, msglen, "padding must be \"SAME\" or \"VALID\", got \"%s\"", padding ? padding : "");
		return -1;
	}
	if (kh < 1 || kw < 1) {
		snprintf(msg, msglen, "window must be at least 1x1");
		return -1;
	}
	w->n = in[0];
	w->h = in[1];
	w->w = in[2];
	w->c = in[3];
	w->kh = kh;
	w->kw = kw;
	w->sh = strides[1];
	w->sw = strides[2];
	w->dh = nd ? dil[1] : 1;
	w->dw = nd ? dil[2] : 1;
	window_out(w->h, kh, w->sh, w->dh, same, &w->oh, &w->pt);
	window_out(w->w, kw, w->sw, w->dw, same, &w->ow, &w->pl);
	return 0;
}

static int shape_conv2d(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0), *f = flow_shape_input(c, 1);
	const flow_attr_value *st = flow_shape_attr(c, "strides"), *dl = flow_shape_attr(c, "dilations");
	const flow_attr_value *pd = flow_shape_attr(c, "padding"), *df = flow_shape_attr(c, "data_format");
	if (df && strcmp(df->u.s, "NHWC") != 0)
		return flow_shape_error(c, "data_format %s is not supported on CPU (use NHWC)", df->u.s);
	if ((x->ndim >= 0 && x->ndim != 4) || (f->ndim >= 0 && f->ndim != 4))
		return flow_shape_error(c, "input and filter must be rank 4, got %d and %d", x->ndim, f->ndim);
	if (x->ndim == 4 && f->ndim == 4 && x->dims[3] >= 0 && f->dims[2] >= 0 && x->dims[3] != f->dims[2])
		return flow_shape_error(c, "input has %lld channels but the filter expects %lld",
					(long long)x->dims[3], (long long)f->dims[2]);
	flow_shape s = ops_shape_unknown_rank(4);
	if (x->ndim == 4)
		s.dims[0] = x->dims[0];
	if (f->ndim == 4)
		s.dims[3] = f->dims[3];
	if (x->ndim == 4 && f->ndim == 4 && x->dims[1] >= 0 && x->dims[2] >= 0 && f->dims[0] >= 0 &&
	    f->dims[1] >= 0) {
		win2d w;
		char msg[160];
		if (win_attrs(st ? st->u.ints.v : NULL, st ? st->u.ints.n : 0, dl ? dl->u.ints.v : NULL,
			      dl ? dl->u.ints.n : 0, pd ? pd->u.s : NULL, f->dims[0], f->dims[1], x->dims, &w,
			      msg, sizeof msg))
			return flow_shape_error(c, "%s", msg);
		s.dims[1] = w.oh;
		s.dims[2] = w.ow;
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

typedef struct im2col_job {
	const win2d *w;
	const void *x;   /* one image */
	void *col;
	size_t esz;
} im2col_job;

/* One row of the column matrix per output pixel: KH*KW*C values, zeros
 * where the window hangs over the padding. */
static void im2col_range(void *ud, int64_t lo, int64_t hi)
{
	im2col_job *j = ud;
	const win2d *w = j->w;
	int64_t rowlen = w->kh * w->kw * w->c;
	size_t cbytes = (size_t)w->c * j->esz;
	for (int64_t p = lo; p < hi; p++) {
		int64_t oy = p / w->ow, ox = p % w->ow;
		char *dst = (char *)j->col + (size_t)(p * rowlen) * j->esz;
		for (int64_t ky = 0; ky < w->kh; ky++) {
			int64_t iy = oy * w->sh - w->pt + ky * w->dh;
			for (int64_t kx = 0; kx < w->kw; kx++, dst += cbytes) {
				int64_t ix = ox * w->sw - w->pl + kx * w->dw;
				if (iy < 0 || iy >= w->h || ix < 0 || ix >= w->w)
					memset(dst, 0, cbytes);
				else
					memcpy(dst, (const char *)j->x + (size_t)((iy * w->w + ix) * w->c) * j->esz, cbytes);
			}
		}
	}
}

static void k_Conv2D(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *f = flow_ctx_input(k, 1);
	int ns, nd;
	const int64_t *st = flow_ctx_attr_ints(k, "strides", &ns), *dl = flow_ctx_attr_ints(k, "dilations", &nd);
	const char *fmt = flow_ctx_attr_string(k, "data_format", "NHWC");
	win2d w;
	char msg[160];
	if (strcmp(fmt, "NHWC") != 0) {
		flow_ctx_fail(k, FLOW_UNIMPLEMENTED, "data_format %s is not supported on CPU (use NHWC)", fmt);
		return;
	}
	if (x->ndim != 4 || f->ndim != 4 || x->dims[3] != f->dims[2]) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT,
			      "need input [N,H,W,C] and filter [KH,KW,C,OC] with matching C");
		return;
	}
	if (win_attrs(st, ns, dl, nd, flow_ctx_attr_string(k, "padding", NULL), f->dims[0], f->dims[1], x->dims,
		      &w, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	int64_t oc = f->dims[3], od[4] = {w.n, w.oh, w.ow, oc};
	flow_tensor *y = flow_ctx_output(k, 0, 4, od);
	if (!y || y->nelem == 0)
		return;
	size_t esz = flow_dtype_size(x->dtype);
	int64_t npix = w.oh * w.ow, rowlen = w.kh * w.kw * w.c;
	/* 1x1, stride 1, no padding: the image already is the column matrix */
	int direct = w.kh == 1 && w.kw == 1 && w.sh == 1 && w.sw == 1 && w.pt == 0 && w.pl == 0;
	void *col = NULL;
	if (!direct) {
		col = malloc((size_t)(npix * rowlen) * esz);
		if (!col) {
			flow_ctx_fail(k, FLOW_RESOURCE_EXHAUSTED, "out of memory for the im2col buffer (%lld bytes)",
				      (long long)(npix * rowlen * (int64_t)esz));
			return;
		}
	}
	for (int64_t n = 0; n < w.n; n++) {
		const char *img = (const char *)flow_tensor_cdata(x) + (size_t)(n * w.h * w.w * w.c) * esz;
		const void *a = img;
		if (!direct) {
			im2col_job j = {&w, img, col, esz};
			ops_parallel(k, npix, ops_grain_for(rowlen), im2col_range, &j);
			a = col;
		}
		gemm(x->dtype, 0, 0, npix, oc, rowlen, a, flow_tensor_cdata(f),
		     (char *)flow_tensor_ptr(y) + (size_t)(n * npix * oc) * esz, k);
	}
	free(col);
}

static int shape_pool(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	const flow_attr_value *ks = flow_shape_attr(c, "ksize"), *st = flow_shape_attr(c, "strides");
	const flow_attr_value *pd = flow_shape_attr(c, "padding");
	if (x->ndim >= 0 && x->ndim != 4)
		return flow_shape_error(c, "input must be rank 4 [N,H,W,C], got %d", x->ndim);
	if (!ks || ks->u.ints.n != 4 || ks->u.ints.v[0] != 1 || ks->u.ints.v[3] != 1)
		return flow_shape_error(c, "ksize must be [1, h, w, 1]");
	flow_shape s = ops_shape_unknown_rank(4);
	if (x->ndim == 4) {
		s.dims[0] = x->dims[0];
		s.dims[3] = x->dims[3];
		if (x->dims[1] >= 0 && x->dims[2] >= 0) {
			win2d w;
			char msg[160];
			if (win_attrs(st ? st->u.ints.v : NULL, st ? st->u.ints.n : 0, NULL, 0, pd ? pd->u.s : NULL,
				      ks->u.ints.v[1], ks->u.ints.v[2], x->dims, &w, msg, sizeof msg))
				return flow_shape_error(c, "%s", msg);
			s.dims[1] = w.oh;
			s.dims[2] = w.ow;
		}
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

typedef struct pool_job {
	const win2d *w;
	const void *x;
	void *y;
	int avg, f64;
} pool_job;

static void pool_range(void *ud, int64_t lo, int64_t hi)
{
	pool_job *j = ud;
	const win2d *w = j->w;
	for (int64_t row = lo; row < hi; row++) { /* row = n * oh + oy */
		int64_t n = row / w->oh, oy = row % w->oh;
		int64_t y0 = oy * w->sh - w->pt, y1 = y0 + w->kh;
		if (y0 < 0) y0 = 0;
		if (y1 > w->h) y1 = w->h;
		for (int64_t ox = 0; ox < w->ow; ox++) {
			int64_t x0 = ox * w->sw - w->pl, x1 = x0 + w->kw;
			if (x0 < 0) x0 = 0;
			if (x1 > w->w) x1 = w->w;
			int64_t cnt = (y1 - y0) * (x1 - x0);
			int64_t obase = ((n * w->oh + oy) * w->ow + ox) * w->c;
			for (int64_t c = 0; c < w->c; c++) {
				double acc = j->avg ? 0 : -INFINITY;
				for (int64_t iy = y0; iy < y1; iy++)
					for (int64_t ix = x0; ix < x1; ix++) {
						int64_t idx = ((n * w->h + iy) * w->w + ix) * w->c + c;
						double v = j->f64 ? ((const double *)j->x)[idx] : ((const float *)j->x)[idx];
						if (j->avg)
							acc += v;
						else if (v > acc || v != v)
							acc = v;
					}
				if (j->avg)
					acc = cnt ? acc / (double)cnt : 0;
				if (j->f64)
					((double *)j->y)[obase + c] = acc;
				else
					((float *)j->y)[obase + c] = (float)acc;
			}
		}
	}
}

static void pool_common(flow_kernel_ctx *k, int avg)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int nk, ns;
	const int64_t *ks = flow_ctx_attr_ints(k, "ksize", &nk), *st = flow_ctx_attr_ints(k, "strides", &ns);
	win2d w;
	char msg[160];
	if (x->ndim != 4) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "input must be rank 4 [N,H,W,C], got %d", x->ndim);
		return;
	}
	if (nk != 4 || ks[0] != 1 || ks[3] != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "ksize must be [1, h, w, 1]");
		return;
	}
	if (win_attrs(st, ns, NULL, 0, flow_ctx_attr_string(k, "padding", NULL), ks[1], ks[2], x->dims, &w, msg,
		      sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	int64_t od[4] = {w.n, w.oh, w.ow, w.c};
	flow_tensor *y = flow_ctx_output(k, 0, 4, od);
	if (!y)
		return;
	pool_job j = {&w, flow_tensor_cdata(x), flow_tensor_ptr(y), avg, x->dtype == FLOW_F64};
	ops_parallel(k, w.n * w.oh, ops_grain_for(w.ow * w.c * w.kh * w.kw), pool_range, &j);
}
static void k_MaxPool(flow_kernel_ctx *k) { pool_common(k, 0); }
static void k_AvgPool(flow_kernel_ctx *k) { pool_common(k, 1); }


/* ---- gradients of Conv2D and pooling (for flow_gradients) ---- */
static int sizes4(flow_kernel_ctx *k, const flow_tensor *t, int64_t *out, const char *what)
{
	int n = ops_read_ints(k, t, out, 4, what);
	if (n < 0)
		return -1;
	if (n != 4 || out[0] < 0 || out[1] < 0 || out[2] < 0 || out[3] < 0) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s must be 4 non-negative sizes", what);
		return -1;
	}
	return 0;
}

/* col2im: adds each column row back onto the pixels its window covers. */
static void col2im_add(const win2d *w, const float *col, float *dx)
{
	int64_t rowlen = w->kh * w->kw * w->c;
	for (int64_t p = 0; p < w->oh * w->ow; p++) {
		int64_t oy = p / w->ow, ox = p % w->ow;
		const float *src = col + p * rowlen;
		for (int64_t ky = 0; ky < w->kh; ky++) {
			int64_t iy = oy * w->sh - w->pt + ky * w->dh;
			for (int64_t kx = 0; kx < w->kw; kx++, src += w->c) {
				int64_t ix = ox * w->sw - w->pl + kx * w->dw;
				if (iy < 0 || iy >= w->h || ix < 0 || ix >= w->w)
					continue;
				float *d = dx + (iy * w->w + ix) * w->c;
				for (int64_t c = 0; c < w->c; c++)
					d[c] += src[c];
			}
		}
	}
}

static int conv_grad_setup(flow_kernel_ctx *k, const int64_t *in_sz, const int64_t *f_sz, const flow_tensor *dy,
			   win2d *w)
{
	int ns, nd;
	const int64_t *st = flow_ctx_attr_ints(k, "strides", &ns), *dl = flow_ctx_attr_ints(k, "dilations", &nd);
	char msg[160];
	if (strcmp(flow_ctx_attr_string(k, "data_format", "NHWC"), "NHWC") != 0) {
		flow_ctx_fail(k, FLOW_UNIMPLEMENTED, "only NHWC is supported on CPU");
		return -1;
	}
	if (in_sz[3] != f_sz[2]) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "input has %lld channels but the filter expects %lld",
			      (long long)in_sz[3], (long long)f_sz[2]);
		return -1;
	}
	if (win_attrs(st, ns, dl, nd, flow_ctx_attr_string(k, "padding", NULL), f_sz[0], f_sz[1], in_sz, w, msg,
		      sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
		return -1;
	}
	if (dy->ndim != 4 || dy->dims[0] != w->n || dy->dims[1] != w->oh || dy->dims[2] != w->ow ||
	    dy->dims[3] != f_sz[3]) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "out_backprop must have shape [%lld, %lld, %lld, %lld]",
			      (long long)w->n, (long long)w->oh, (long long)w->ow, (long long)f_sz[3]);
		return -1;
	}
	return 0;
}

static void k_Conv2DBackpropInput(flow_kernel_ctx *k)
{
	flow_tensor *f = flow_ctx_input(k, 1), *dy = flow_ctx_input(k, 2);
	int64_t in_sz[4];
	win2d w;
	if (sizes4(k, flow_ctx_input(k, 0), in_sz, "input_sizes"))
		return;
	if (f->ndim != 4 || conv_grad_setup(k, in_sz, f->dims, dy, &w))
		return;
	flow_tensor *dx = flow_ctx_output_zeros(k, 0, 4, in_sz);
	if (!dx || dx->nelem == 0 || dy->nelem == 0)
		return;
	int64_t npix = w.oh * w.ow, rowlen = w.kh * w.kw * w.c, oc = f->dims[3];
	float *col = malloc((size_t)(npix * rowlen) * sizeof *col);
	if (!col) {
		flow_ctx_fail(k, FLOW_RESOURCE_EXHAUSTED, "out of memory for the column buffer");
		return;
	}
	for (int64_t n = 0; n < w.n; n++) {
		/* dcol = dy_n (npix x oc) * filter^T (oc x rowlen) */
		gemm(FLOW_F32, 0, 1, npix, rowlen, oc, FLOW_F32P(dy) + n * npix * oc, FLOW_F32P(f), col, k);
		col2im_add(&w, col, FLOW_F32P(dx) + n * w.h * w.w * w.c);
	}
	free(col);
}

static void k_Conv2DBackpropFilter(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *dy = flow_ctx_input(k, 2);
	int64_t f_sz[4];
	win2d w;
	if (sizes4(k, flow_ctx_input(k, 1), f_sz, "filter_sizes"))
		return;
	if (x->ndim != 4) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "input must be rank 4, got %d", x->ndim);
		return;
	}
	if (conv_grad_setup(k, x->dims, f_sz, dy, &w))
		return;
	flow_tensor *df = flow_ctx_output_zeros(k, 0, 4, f_sz);
	if (!df || df->nelem == 0 || dy->nelem == 0)
		return;
	int64_t npix = w.oh * w.ow, rowlen = w.kh * w.kw * w.c, oc = f_sz[3];
	float *col = malloc((size_t)(npix * rowlen) * sizeof *col), *part = malloc((size_t)(rowlen * oc) * sizeof *part);
	if (!col || !part) {
		free(col);
		free(part);
		flow_ctx_fail(k, FLOW_RESOURCE_EXHAUSTED, "out of memory for the column buffer");
		return;
	}
	for (int64_t n = 0; n < w.n; n++) {
		im2col_job j = {&w, FLOW_F32P(x) + n * w.h * w.w * w.c, col, sizeof(float)};
		ops_parallel(k, npix, ops_grain_for(rowlen), im2col_range, &j);
		/* dW += col^T (rowlen x npix) * dy_n (npix x oc) */
		gemm(FLOW_F32, 1, 0, rowlen, oc, npix, col, FLOW_F32P(dy) + n * npix * oc, part, k);
		for (int64_t i = 0; i < rowlen * oc; i++)
			FLOW_F32P(df)[i] += part[i];
	}
	free(col);
	free(part);
}

static int shape_from_sizes(flow_shape_ctx *c, int in)
{
	int64_t d[4];
	flow_shape s = ops_shape_unknown_rank(4);
	if (ops_const_ints(flow_shape_input_const(c, in), d, 4) == 4)
		s = flow_shape_make(4, d);
	flow_shape_set_output(c, 0, &s);
	return 0;
}
static int shape_conv_bp_input(flow_shape_ctx *c) { return shape_from_sizes(c, 0); }
static int shape_conv_bp_filter(flow_shape_ctx *c) { return shape_from_sizes(c, 1); }

static int pool_grad_setup(flow_kernel_ctx *k, const int64_t *in, win2d *w)
{
	int nk, ns;
	const int64_t *ks = flow_ctx_attr_ints(k, "ksize", &nk), *st = flow_ctx_attr_ints(k, "strides", &ns);
	char msg[160];
	if (nk != 4 || ks[0] != 1 || ks[3] != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "ksize must be [1, h, w, 1]");
		return -1;
	}
	if (win_attrs(st, ns, NULL, 0, flow_ctx_attr_string(k, "padding", NULL), ks[1], ks[2], in, w, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
		return -1;
	}
	return 0;
}

/* The gradient goes to the first maximum of each window (TF's choice). */
static void k_MaxPoolGrad(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *g = flow_ctx_input(k, 2);
	win2d w;
	if (x->ndim != 4) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "orig_input must be rank 4");
		return;
	}
	if (pool_grad_setup(k, x->dims, &w))
		return;
	if (g->ndim != 4 || g->dims[0] != w.n || g->dims[1] != w.oh || g->dims[2] != w.ow || g->dims[3] != w.c) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "grad must have the pooled shape [%lld, %lld, %lld, %lld]",
			      (long long)w.n, (long long)w.oh, (long long)w.ow, (long long)w.c);
		return;
	}
	flow_tensor *dx = flow_ctx_output_zeros(k, 0, 4, x->dims);
	if (!dx)
		return;
	const float *xv = FLOW_F32P(x), *gv = FLOW_F32P(g);
	float *d = FLOW_F32P(dx);
	for (int64_t n = 0; n < w.n; n++)
		for (int64_t oy = 0; oy < w.oh; oy++)
			for (int64_t ox = 0; ox < w.ow; ox++) {
				int64_t y0 = oy * w.sh - w.pt, x0 = ox * w.sw - w.pl;
				for (int64_t c = 0; c < w.c; c++) {
					int64_t best = -1;
					float bv = -INFINITY;
					for (int64_t iy = y0 < 0 ? 0 : y0; iy < y0 + w.kh && iy < w.h; iy++)
						for (int64_t ix = x0 < 0 ? 0 : x0; ix < x0 + w.kw && ix < w.w; ix++) {
							int64_t idx = ((n * w.h + iy) * w.w + ix) * w.c + c;
							if (best < 0 || xv[idx] > bv) {
								bv = xv[idx];
								best = idx;
							}
						}
					if (best >= 0)
						d[best] += gv[((n * w.oh + oy) * w.ow + ox) * w.c + c];
				}
			}
}

static void k_AvgPoolGrad(flow_kernel_ctx *k)
{
	flow_tensor *g = flow_ctx_input(k, 1);
	int64_t in[4];
	win2d w;
	if (sizes4(k, flow_ctx_input(k, 0), in, "orig_input_shape") || pool_grad_setup(k, in, &w))
		return;
	if (g->ndim != 4 || g->dims[0] != w.n || g->dims[1] != w.oh || g->dims[2] != w.ow || g->dims[3] != w.c) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "grad must have the pooled shape");
		return;
	}
	flow_tensor *dx = flow_ctx_output_zeros(k, 0, 4, in);
	if (!dx)
		return;
	const float *gv = FLOW_F32P(g);
	float *d = FLOW_F32P(dx);
	for (int64_t n = 0; n < w.n; n++)
		for (int64_t oy = 0; oy < w.oh; oy++)
			for (int64_t ox = 0; ox < w.ow; ox++) {
				int64_t y0 = oy * w.sh - w.pt, x0 = ox * w.sw - w.pl;
				int64_t ya = y0 < 0 ? 0 : y0, yb = y0 + w.kh < w.h ? y0 + w.kh : w.h;
				int64_t xa = x0 < 0 ? 0 : x0, xb = x0 + w.kw < w.w ? x0 + w.kw : w.w;
				int64_t cnt = (yb - ya) * (xb - xa);
				if (cnt <= 0)
					continue;
				for (int64_t c = 0; c < w.c; c++) {
					float v = gv[((n * w.oh + oy) * w.ow + ox) * w.c + c] / (float)cnt;
					for (int64_t iy = ya; iy < yb; iy++)
						for (int64_t ix = xa; ix < xb; ix++)
							d[((n * w.h + iy) * w.w + ix) * w.c + c] += v;
				}
			}
}

static int shape_max_pool_grad(flow_shape_ctx *c)
{
	flow_shape_set_output(c, 0, flow_shape_input(c, 0));
	return 0;
}
static int shape_avg_pool_grad(flow_shape_ctx *c) { return shape_from_sizes(c, 0); }

static const flow_op_def nn_ops[] = {
	{.name = "MatMul", .inputs = "a: T, b: T", .outputs = "product: T",
	 .attrs = "T: {f32,f64,i32,i64}; transpose_a: bool = false; transpose_b: bool = false",
	 .shape_fn = shape_matmul},
	{.name = "BatchMatMul", .inputs = "x: T, y: T", .outputs = "output: T",
	 .attrs = "T: {f32,f64,i32,i64}; adj_x: bool = false; adj_y: bool = false",
	 .shape_fn = shape_batch_matmul},
	{.name = "BatchMatMulV2", .inputs = "x: T, y: T", .outputs = "output: T",
	 .attrs = "T: {f32,f64,i32,i64}; adj_x: bool = false; adj_y: bool = false",
	 .shape_fn = shape_batch_matmul},
	{.name = "BiasAdd", .inputs = "value: T, bias: T", .outputs = "output: T",
	 .attrs = "T: {f32,f64,i32,i64}; data_format: string = \"NHWC\"", .shape_fn = shape_bias_add},
	{.name = "BiasAddGrad", .inputs = "out_backprop: T", .outputs = "output: T",
	 .attrs = "T: {f32,f64}; data_format: string = \"NHWC\"", .shape_fn = shape_bias_add_grad},
	{.name = "Softmax", .inputs = "logits: T", .outputs = "softmax: T", .attrs = "T: {f32,f64}",
	 .shape_fn = shape_softmax},
	{.name = "LogSoftmax", .inputs = "logits: T", .outputs = "logsoftmax: T", .attrs = "T: {f32,f64}",
	 .shape_fn = shape_softmax},
	{.name = "SoftmaxCrossEntropyWithLogits", .inputs = "features: T, labels: T",
	 .outputs = "loss: T, backprop: T", .attrs = "T: {f32,f64}", .shape_fn = shape_xent_dense},
	{.name = "SparseSoftmaxCrossEntropyWithLogits", .inputs = "features: T, labels: Tlabels",
	 .outputs = "loss: T, backprop: T", .attrs = "T: {f32,f64}; Tlabels: {i32,i64} = i64",
	 .shape_fn = shape_xent_sparse},
	{.name = "Conv2D", .inputs = "input: T, filter: T", .outputs = "output: T",
	 .attrs = "T: {f32,f64}; strides: ints; padding: string; data_format: string = \"NHWC\"; "
		  "dilations: ints = [1,1,1,1]",
	 .shape_fn = shape_conv2d},
	{.name = "MaxPool", .inputs = "input: T", .outputs = "output: T",
	 .attrs = "T: {f32,f64}; ksize: ints; strides: ints; padding: string; data_format: string = \"NHWC\"",
	 .shape_fn = shape_pool},
	{.name = "AvgPool", .inputs = "value: T", .outputs = "output: T",
	 .attrs = "T: {f32,f64}; ksize: ints; strides: ints; padding: string; data_format: string = \"NHWC\"",
	 .shape_fn = shape_pool},
	{.name = "Conv2DBackpropInput", .inputs = "input_sizes: i32, filter: T, out_backprop: T", .outputs = "output: T",
	 .attrs = "T: {f32}; strides: ints; padding: string; data_format: string = \"NHWC\"; dilations: ints = [1,1,1,1]",
	 .shape_fn = shape_conv_bp_input},
	{.name = "Conv2DBackpropFilter", .inputs = "input: T, filter_sizes: i32, out_backprop: T", .outputs = "output: T",
	 .attrs = "T: {f32}; strides: ints; padding: string; data_format: string = \"NHWC\"; dilations: ints = [1,1,1,1]",
	 .shape_fn = shape_conv_bp_filter},
	{.name = "MaxPoolGrad", .inputs = "orig_input: T, orig_output: T, grad: T", .outputs = "output: T",
	 .attrs = "T: {f32}; ksize: ints; strides: ints; padding: string; data_format: string = \"NHWC\"",
	 .shape_fn = shape_max_pool_grad},
	{.name = "AvgPoolGrad", .inputs = "orig_input_shape: i32, grad: T", .outputs = "output: T",
	 .attrs = "T: {f32}; ksize: ints; strides: ints; padding: string; data_format: string = \"NHWC\"",
	 .shape_fn = shape_avg_pool_grad},
};

static const flow_kernel_def nn_kernels[] = {
	KANYNUM("MatMul", k_MatMul), KANYNUM("BatchMatMul", k_BatchMatMul),
	KANYNUM("BatchMatMulV2", k_BatchMatMul), KANYNUM("BiasAdd", k_BiasAdd),
	K1("BiasAddGrad", FLOW_F32, k_BiasAddGrad), K1("BiasAddGrad", FLOW_F64, k_BiasAddGrad),
	K1("Softmax", FLOW_F32, k_Softmax), K1("Softmax", FLOW_F64, k_Softmax),
	K1("LogSoftmax", FLOW_F32, k_LogSoftmax), K1("LogSoftmax", FLOW_F64, k_LogSoftmax),
	K1("SoftmaxCrossEntropyWithLogits", FLOW_F32, k_SoftmaxXent),
	K1("SoftmaxCrossEntropyWithLogits", FLOW_F64, k_SoftmaxXent),
	K1("SparseSoftmaxCrossEntropyWithLogits", FLOW_F32, k_SparseSoftmaxXent),
	K1("SparseSoftmaxCrossEntropyWithLogits", FLOW_F64, k_SparseSoftmaxXent),
	K1("Conv2D", FLOW_F32, k_Conv2D), K1("Conv2D", FLOW_F64, k_Conv2D),
	K1("MaxPool", FLOW_F32, k_MaxPool), K1("MaxPool", FLOW_F64, k_MaxPool),
	K1("AvgPool", FLOW_F32, k_AvgPool), K1("AvgPool", FLOW_F64, k_AvgPool),
	K1("Conv2DBackpropInput", FLOW_F32, k_Conv2DBackpropInput),
	K1("Conv2DBackpropFilter", FLOW_F32, k_Conv2DBackpropFilter),
	K1("MaxPoolGrad", FLOW_F32, k_MaxPoolGrad), K1("AvgPoolGrad", FLOW_F32, k_AvgPoolGrad),
};

FLOW_OP_LIBRARY(nn, nn_ops, nn_kernels)
