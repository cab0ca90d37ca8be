/*
 * core_ops.c — the ops the core itself owns: Const, Placeholder, Variable,
 * ReadVariable, Assign/AssignAdd/AssignSub, Identity, NoOp, and the
 * compile-time fusion target _FusedMatMul (MatMul + BiasAdd + activation).
 * Placeholder and Variable have no kernel: the executor fills their
 * outputs from the feeds and from the session's variable values.
 */
#include "core.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

static int shape_const(flow_shape_ctx *c)
{
	const flow_attr_value *v = flow_shape_attr(c, "value");
	const flow_attr_value *dt = flow_shape_attr(c, "dtype");
	if (v && dt && v->u.tensor->dtype != dt->u.type)
		return flow_shape_error(c, "value is %s but dtype is %s", flow_dtype_name(v->u.tensor->dtype),
					flow_dtype_name(dt->u.type));
	flow_shape s = flow_tensor_shape(v->u.tensor);
	flow_shape_set_output(c, 0, &s);
	return 0;
}

static int shape_from_attr(flow_shape_ctx *c)
{
	const flow_attr_value *v = flow_shape_attr(c, "shape");
	flow_shape_set_output(c, 0, &v->u.shape);
	return 0;
}

static int shape_assign(flow_shape_ctx *c)
{
	const flow_shape *a = flow_shape_input(c, 0), *b = flow_shape_input(c, 1);
	int strict = flow_shape_attr_bool(c, "validate_shape", 1);
	if (strict && a->ndim >= 0 && b->ndim >= 0) {
		int bad = a->ndim != b->ndim;
		for (int i = 0; !bad && i < a->ndim; i++)
			bad = a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i];
		if (bad) {
			char sa[96], sb[96];
			return flow_shape_error(c, "variable shape %s does not match value shape %s",
						flow_shape_str(a, sa, sizeof sa), flow_shape_str(b, sb, sizeof sb));
		}
	}
	flow_shape_set_output(c, 0, strict && a->ndim >= 0 ? a : b);
	return 0;
}

static int shape_assign_update(flow_shape_ctx *c)
{
	const flow_shape *a = flow_shape_input(c, 0), *b = flow_shape_input(c, 1);
	if (a->ndim >= 0 && b->ndim >= 0) {
		int bad = a->ndim != b->ndim;
		for (int i = 0; !bad && i < a->ndim; i++)
			bad = a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i];
		if (bad) {
			char sa[96], sb[96];
			return flow_shape_error(c, "variable shape %s does not match update shape %s",
						flow_shape_str(a, sa, sizeof sa), flow_shape_str(b, sb, sizeof sb));
		}
	}
	flow_shape_set_output(c, 0, a);
	return 0;
}

static int shape_fused_matmul(flow_shape_ctx *c)
{
	const flow_shape *a = flow_shape_input(c, 0), *b = flow_shape_input(c, 1);
	int ta = flow_shape_attr_bool(c, "transpose_a", 0), tb = flow_shape_attr_bool(c, "transpose_b", 0);
	if ((a->ndim >= 0 && a->ndim != 2) || (b->ndim >= 0 && b->ndim != 2))
		return flow_shape_error(c, "inputs must be matrices");
	int64_t m = a->ndim == 2 ? a->dims[ta ? 1 : 0] : -1;
	int64_t ka = a->ndim == 2 ? a->dims[ta ? 0 : 1] : -1;
	int64_t kb = b->ndim == 2 ? b->dims[tb ? 1 : 0] : -1;
	int64_t n = b->ndim == 2 ? b->dims[tb ? 0 : 1] : -1;
	if (ka >= 0 && kb >= 0 && ka != kb)
		return flow_shape_error(c, "inner dimensions differ: %lld vs %lld", (long long)ka, (long long)kb);
	int64_t d[2] = {m, n};
	flow_shape s = flow_shape_make(2, d);
	flow_shape_set_output(c, 0, &s);
	return 0;
}

static void k_const(flow_kernel_ctx *k)
{
	flow_ctx_set_output(k, 0, flow_ctx_attr(k, "value")->u.tensor);
}

static void k_identity(flow_kernel_ctx *k)
{
	flow_ctx_set_output(k, 0, flow_ctx_input(k, 0));
}

static void k_noop(flow_kernel_ctx *k)
{
	(void)k;
}

static void k_read_variable(flow_kernel_ctx *k)
{
	flow_tensor **slot = flow_ctx_var(k, 0);
	if (!slot)
		return;
	if (!*slot) {
		flow_ctx_fail(k, FLOW_FAILED_PRECONDITION, "reading an uninitialized variable");
		return;
	}
	flow_ctx_set_output(k, 0, *slot);
}

static void k_assign(flow_kernel_ctx *k)
{
	flow_tensor **slot = flow_ctx_var(k, 0);
	flow_tensor *v = flow_ctx_input(k, 1);
	if (!slot)
		return;
	if (*slot && flow_ctx_attr_bool(k, "validate_shape", 1) && !flow_tensor_same_shape(*slot, v)) {
		char a[96], b[96];
		flow_shape sa = flow_tensor_shape(*slot), sb = flow_tensor_shape(v);
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "variable shape %s does not match value shape %s",
			      flow_shape_str(&sa, a, sizeof a), flow_shape_str(&sb, b, sizeof b));
		return;
	}
	/* As TF's Assign: forward the value's buffer when nobody else can see it
	 * (produced by this step, dead after this node, sole owner, from our
	 * allocator); otherwise copy, so the variable never aliases a caller's
	 * feed, a Const's value or external (mmap'd) memory. */
	flow_tensor *nv = flow_ctx_output_inplace(k, 0, 1, v->ndim, v->dims);
	if (!nv)
		return;
	if (nv->buf != v->buf && v->nelem)
		memcpy(flow_tensor_ptr(nv), flow_tensor_cdata(v), flow_tensor_nbytes(v));
	flow_ctx_var_set(k, 0, nv);
}

typedef struct upd {
	void *dst;
	const void *src;
	flow_dtype dt;
	int sub;
} upd;

static void upd_range(void *ud, int64_t b, int64_t e)
{
	upd *u = ud;
	switch (u->dt) {
	case FLOW_F32: {
		float *d = u->dst;
		const float *s = u->src;
		if (u->sub)
			for (int64_t i = b; i < e; i++) d[i] -= s[i];
		else
			for (int64_t i = b; i < e; i++) d[i] += s[i];
		break;
	}
	case FLOW_F64: {
		double *d = u->dst;
		const double *s = u->src;
		if (u->sub)
			for (int64_t i = b; i < e; i++) d[i] -= s[i];
		else
			for (int64_t i = b; i < e; i++) d[i] += s[i];
		break;
	}
	case FLOW_I32: {
		int32_t *d = u->dst;
		const int32_t *s = u->src;
		if (u->sub)
			for (int64_t i = b; i < e; i++) d[i] = (int32_t)((uint32_t)d[i] - (uint32_t)s[i]);
		else
			for (int64_t i = b; i < e; i++) d[i] = (int32_t)((uint32_t)d[i] + (uint32_t)s[i]);
		break;
	}
	case FLOW_I64: {
		int64_t *d = u->dst;
		const int64_t *s = u->src;
		if (u->sub)
			for (int64_t i = b; i < e; i++) d[i] = (int64_t)((uint64_t)d[i] - (uint64_t)s[i]);
		else
			for (int64_t i = b; i < e; i++) d[i] = (int64_t)((uint64_t)d[i] + (uint64_t)s[i]);
		break;
	}
	default:
		break;
	}
}

static void assign_update(flow_kernel_ctx *k, int sub)
{
	flow_tensor **slot = flow_ctx_var(k, 0);
	if (!slot)
		return;
	if (!*slot) {
		flow_ctx_fail(k, FLOW_FAILED_PRECONDITION, "updating an uninitialized variable");
		return;
	}
	flow_tensor *v = flow_ctx_input(k, 1);
	if (!flow_tensor_same_shape(*slot, v)) {
		char a[96], b[96];
		flow_shape sa = flow_tensor_shape(*slot), sb = flow_tensor_shape(v);
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "variable shape %s does not match update shape %s",
			      flow_shape_str(&sa, a, sizeof a), flow_shape_str(&sb, b, sizeof b));
		return;
	}
	flow_tensor *t = flow_ctx_var_mutable(k, 0);
	if (!t)
		return;
	upd u = {flow_tensor_ptr(t), flow_tensor_cdata(v), t->dtype, sub};
	flow_parallel_for(flow_ctx_pool(k), t->nelem, 1 << 15, upd_range, &u);
	flow_ctx_set_output(k, 0, t);
}

static void k_assign_add(flow_kernel_ctx *k) { assign_update(k, 0); }
static void k_assign_sub(flow_kernel_ctx *k) { assign_update(k, 1); }

/* ---- _FusedMatMul: one GEMM with the bias pre-loaded into C (beta = 1),
 * then the activation in the same pass over the output. ---- */
typedef struct fused {
	flow_tensor *out;
	int act;    /* 0 none, 1 relu, 2 sigmoid, 3 tanh */
	int64_t n;
} fused;

static int act_code(const char *s)
{
	if (!s || !strcmp(s, "none") || !*s)
		return 0;
	if (!strcmp(s, "Relu"))
		return 1;
	if (!strcmp(s, "Sigmoid"))
		return 2;
	if (!strcmp(s, "Tanh"))
		return 3;
	return -1;
}

static void act_f32(void *ud, int64_t b, int64_t e)
{
	fused *f = ud;
	float *p = FLOW_F32P(f->out);
	switch (f->act) {
	case 1: for (int64_t i = b; i < e; i++) p[i] = p[i] > 0.f ? p[i] : 0.f; break;
	case 2: for (int64_t i = b; i < e; i++) p[i] = 1.f / (1.f + expf(-p[i])); break;
	case 3: for (int64_t i = b; i < e; i++) p[i] = tanhf(p[i]); break;
	default: break;
	}
}

static void act_f64(void *ud, int64_t b, int64_t e)
{
	fused *f = ud;
	double *p = FLOW_F64P(f->out);
	switch (f->act) {
	case 1: for (int64_t i = b; i < e; i++) p[i] = p[i] > 0. ? p[i] : 0.; break;
	case 2: for (int64_t i = b; i < e; i++) p[i] = 1. / (1. + exp(-p[i])); break;
	case 3: for (int64_t i = b; i < e; i++) p[i] = tanh(p[i]); break;
	default: break;
	}
}

static void k_fused_matmul(flow_kernel_ctx *k)
{
	flow_tensor *a = flow_ctx_input(k, 0), *b = flow_ctx_input(k, 1), *bias = flow_ctx_input(k, 2);
	int ta = flow_ctx_attr_bool(k, "transpose_a", 0), tb = flow_ctx_attr_bool(k, "transpose_b", 0);
	int act = act_code(flow_ctx_attr_string(k, "activation", "none"));
	if (a->ndim != 2 || b->ndim != 2) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "inputs must be matrices");
		return;
	}
	if (act < 0) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "unknown activation '%s'",
			      flow_ctx_attr_string(k, "activation", ""));
		return;
	}
	int64_t m = a->dims[ta ? 1 : 0], kk = a->dims[ta ? 0 : 1];
	int64_t kb = b->dims[tb ? 1 : 0], n = b->dims[tb ? 0 : 1];
	if (kk != kb) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "inner dimensions differ: %lld vs %lld",
			      (long long)kk, (long long)kb);
		return;
	}
	if (bias->ndim != 1 || bias->dims[0] != n) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "bias has %lld elements, output has %lld columns",
			      (long long)(bias->ndim == 1 ? bias->dims[0] : bias->nelem), (long long)n);
		return;
	}
	int64_t d[2] = {m, n};
	flow_tensor *o = flow_ctx_output(k, 0, 2, d);
	if (!o)
		return;
	fused f = {o, act, m * n};
	if (a->dtype == FLOW_F32) {
		float *c = FLOW_F32P(o);
		const float *bv = flow_tensor_cdata(bias);
		for (int64_t i = 0; i < m; i++)
			memcpy(c + i * n, bv, sizeof(float) * (size_t)n);
		if (m && n)
			cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
				    (int)m, (int)n, (int)kk, 1.0f, flow_tensor_cdata(a), (int)a->dims[1],
				    flow_tensor_cdata(b), (int)b->dims[1], 1.0f, c, (int)n);
		if (act)
			flow_parallel_for(flow_ctx_pool(k), m * n, 1 << 14, act_f32, &f);
	} else {
		double *c = FLOW_F64P(o);
		const double *bv = flow_tensor_cdata(bias);
		for (int64_t i = 0; i < m; i++)
			memcpy(c + i * n, bv, sizeof(double) * (size_t)n);
		if (m && n)
			cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
				    (int)m, (int)n, (int)kk, 1.0, flow_tensor_cdata(a), (int)a->dims[1],
				    flow_tensor_cdata(b), (int)b->dims[1], 1.0, c, (int)n);
		if (act)
			flow_parallel_for(flow_ctx_pool(k), m * n, 1 << 14, act_f64, &f);
	}
}

static int grad_identity(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
			 flow_status *st)
{
	(void)g, (void)op, (void)st;
	dx[0] = dy[0];
	return 0;
}

static const flow_op_def core_ops[] = {
	{.name = "Const", .outputs = "output: dtype", .attrs = "value: tensor; dtype: type",
	 .shape_fn = shape_const, .doc = "A constant tensor."},
	{.name = "Placeholder", .outputs = "output: dtype", .attrs = "dtype: type; shape: shape = ?",
	 .shape_fn = shape_from_attr, .flags = FLOW_OP_STATEFUL | FLOW_OP_NO_KERNEL,
	 .doc = "A value fed at run time."},
	{.name = "Variable", .outputs = "ref: dtype", .attrs = "dtype: type; shape: shape = ?",
	 .shape_fn = shape_from_attr, .flags = FLOW_OP_STATEFUL | FLOW_OP_NO_KERNEL,
	 .doc = "A variable; its value lives in each session."},
	{.name = "ReadVariable", .inputs = "ref: Ref(T)", .outputs = "value: T", .attrs = "T: type",
	 .shape_fn = flow_shape_fn_unchanged, .grad_fn = grad_identity, .flags = FLOW_OP_STATEFUL,
	 .doc = "A snapshot of a variable's value."},
	{.name = "Assign", .inputs = "ref: Ref(T), value: T", .outputs = "output_ref: T",
	 .attrs = "T: type; validate_shape: bool = true", .shape_fn = shape_assign,
	 .flags = FLOW_OP_STATEFUL, .doc = "ref = value."},
	{.name = "AssignAdd", .inputs = "ref: Ref(T), value: T", .outputs = "output_ref: T",
	 .attrs = "T: {f32,f64,i32,i64}", .shape_fn = shape_assign_update, .flags = FLOW_OP_STATEFUL,
	 .doc = "ref += value."},
	{.name = "AssignSub", .inputs = "ref: Ref(T), value: T", .outputs = "output_ref: T",
	 .attrs = "T: {f32,f64,i32,i64}", .shape_fn = shape_assign_update, .flags = FLOW_OP_STATEFUL,
	 .doc = "ref -= value."},
	{.name = "Identity", .inputs = "input: T", .outputs = "output: T", .attrs = "T: type",
	 .shape_fn = flow_shape_fn_unchanged, .grad_fn = grad_identity, .doc = "Forwards its input."},
	{.name = "NoOp", .doc = "Does nothing; a target for control dependencies."},
	{.name = "_FusedMatMul", .inputs = "a: T, b: T, bias: T", .outputs = "product: T",
	 .attrs = "T: {f32,f64}; transpose_a: bool = false; transpose_b: bool = false; "
		  "activation: string = \"none\"",
	 .shape_fn = shape_fused_matmul, .doc = "MatMul + BiasAdd + activation, made by the fusion pass."},
};

static const flow_kernel_def core_kernels[] = {
	{"Const", FLOW_CPU, 0, k_const},
	{"ReadVariable", FLOW_CPU, 0, k_read_variable},
	{"Assign", FLOW_CPU, 0, k_assign},
	{"AssignAdd", FLOW_CPU, FLOW_F32, k_assign_add},
	{"AssignAdd", FLOW_CPU, FLOW_F64, k_assign_add},
	{"AssignAdd", FLOW_CPU, FLOW_I32, k_assign_add},
	{"AssignAdd", FLOW_CPU, FLOW_I64, k_assign_add},
	{"AssignSub", FLOW_CPU, FLOW_F32, k_assign_sub},
	{"AssignSub", FLOW_CPU, FLOW_F64, k_assign_sub},
	{"AssignSub", FLOW_CPU, FLOW_I32, k_assign_sub},
	{"AssignSub", FLOW_CPU, FLOW_I64, k_assign_sub},
	{"Identity", FLOW_CPU, 0, k_identity},
	{"NoOp", FLOW_CPU, 0, k_noop},
	{"_FusedMatMul", FLOW_CPU, FLOW_F32, k_fused_matmul},
	{"_FusedMatMul", FLOW_CPU, FLOW_F64, k_fused_matmul},
};

FLOW_OP_LIBRARY(core, core_ops, core_kernels)
