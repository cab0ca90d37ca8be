#include "ops_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

flow_tensor *tf32(int ndim, const int64_t *dims, const float *v)
{
	return flow_tensor_from_data(FLOW_F32, ndim, dims, v, NULL);
}

static int shape_matmul(flow_shape_ctx *c)
{
	const flow_shape *a = flow_shape_input(c, 0), *b = flow_shape_input(c, 1);
	int ta = flow_shape_attr_bool(c, "transpose_a", 0), tb = flow_shape_attr_bool(c, "transpose_b", 0);
	if (a->ndim != 2 || b->ndim != 2)
		return flow_shape_error(c, "inputs must be matrices");
	int64_t ka = a->dims[ta ? 0 : 1], kb = b->dims[tb ? 1 : 0];
	if (ka >= 0 && kb >= 0 && ka != kb)
		return flow_shape_error(c, "inner dimensions differ: %lld vs %lld", (long long)ka, (long long)kb);
	int64_t d[2] = {a->dims[ta ? 1 : 0], b->dims[tb ? 0 : 1]};
	flow_shape s = flow_shape_make(2, d);
	flow_shape_set_output(c, 0, &s);
	return 0;
}

static void k_matmul(flow_kernel_ctx *k)
{
	flow_tensor *a = flow_ctx_input(k, 0), *b = flow_ctx_input(k, 1);
	int ta = flow_ctx_attr_bool(k, "transpose_a", 0), tb = flow_ctx_attr_bool(k, "transpose_b", 0);
	int64_t m = a->dims[ta ? 1 : 0], kk = a->dims[ta ? 0 : 1], n = b->dims[tb ? 0 : 1];
	int64_t d[2] = {m, n};
	flow_tensor *o = flow_ctx_output(k, 0, 2, d);
	if (!o)
		return;
	const float *A = flow_tensor_cdata(a), *B = flow_tensor_cdata(b);
	float *C = FLOW_F32P(o);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			float s = 0;
			for (int64_t p = 0; p < kk; p++)
				s += (ta ? A[p * m + i] : A[i * kk + p]) * (tb ? B[j * kk + p] : B[p * n + j]);
			C[i * n + j] = s;
		}
}

static void k_biasadd(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *b = flow_ctx_input(k, 1);
	int64_t n = x->dims[x->ndim - 1];
	if (b->nelem != n) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "bias size %lld vs %lld", (long long)b->nelem, (long long)n);
		return;
	}
	flow_tensor *o = flow_ctx_output_inplace(k, 0, 0, x->ndim, x->dims);
	if (!o)
		return;
	const float *X = flow_tensor_cdata(x), *B = flow_tensor_cdata(b);
	float *O = FLOW_F32P(o);
	for (int64_t i = 0; i < x->nelem; i++)
		O[i] = X[i] + B[i % n];
}

static void k_relu(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	flow_tensor *o = flow_ctx_output_inplace(k, 0, 0, x->ndim, x->dims);
	if (!o)
		return;
	const float *X = flow_tensor_cdata(x);
	float *O = FLOW_F32P(o);
	for (int64_t i = 0; i < x->nelem; i++)
		O[i] = X[i] > 0 ? X[i] : 0;
}

static void binary(flow_kernel_ctx *k, int mul)
{
	flow_tensor *x = flow_ctx_input(k, 0), *y = flow_ctx_input(k, 1);
	flow_tensor *big = x->nelem >= y->nelem ? x : y;
	if (x->nelem != y->nelem && x->nelem != 1 && y->nelem != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "test op supports same shape or scalar only");
		return;
	}
	flow_tensor *o = flow_ctx_output_inplace(k, 0, big == x ? 0 : 1, big->ndim, big->dims);
	if (!o)
		return;
	const float *X = flow_tensor_cdata(x), *Y = flow_tensor_cdata(y);
	float *O = FLOW_F32P(o);
	for (int64_t i = 0; i < big->nelem; i++) {
		float a = X[x->nelem == 1 ? 0 : i], b = Y[y->nelem == 1 ? 0 : i];
		O[i] = mul ? a * b : a + b;
	}
}
static void k_add(flow_kernel_ctx *k) { binary(k, 0); }
static void k_mul(flow_kernel_ctx *k) { binary(k, 1); }

static int shape_random(flow_shape_ctx *c)
{
	const flow_attr_value *v = flow_shape_attr(c, "shape");
	flow_shape_set_output(c, 0, &v->u.shape);
	return 0;
}

static void k_random(flow_kernel_ctx *k)
{
	const flow_attr_value *v = flow_ctx_attr(k, "shape");
	flow_tensor *o = flow_ctx_output(k, 0, v->u.shape.ndim, v->u.shape.dims);
	if (!o)
		return;
	uint64_t *st = flow_ctx_state(k);
	uint64_t x = (uint64_t)flow_ctx_attr_int(k, "seed", 1) * 0x9E3779B97F4A7C15ull + (st ? (*st)++ : 0);
	float *O = FLOW_F32P(o);
	for (int64_t i = 0; i < o->nelem; i++) {
		x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
		O[i] = (float)((x * 0x2545F4914F6CDD1Dull) >> 40) / (float)(1 << 24);
	}
}

static const flow_op_def t_ops[] = {
	{.name = "MatMul", .inputs = "a: T, b: T", .outputs = "product: T",
	 .attrs = "T: {f32,f64}; transpose_a: bool = false; transpose_b: bool = false",
	 .shape_fn = shape_matmul},
	{.name = "BiasAdd", .inputs = "value: T, bias: T", .outputs = "output: T",
	 .attrs = "T: {f32,f64}; data_format: string = \"NHWC\"", .shape_fn = flow_shape_fn_unchanged},
	{.name = "Relu", .inputs = "features: T", .outputs = "activations: T", .attrs = "T: {f32,f64}",
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "Add", .inputs = "x: T, y: T", .outputs = "z: T", .attrs = "T: {f32,f64,i32,i64}",
	 .shape_fn = flow_shape_fn_broadcast, .flags = FLOW_OP_COMMUTATIVE},
	{.name = "Mul", .inputs = "x: T, y: T", .outputs = "z: T", .attrs = "T: {f32,f64,i32,i64}",
	 .shape_fn = flow_shape_fn_broadcast, .flags = FLOW_OP_COMMUTATIVE},
	{.name = "_TestRandom", .outputs = "output: f32", .attrs = "shape: shape; seed: int = 1",
	 .shape_fn = shape_random, .flags = FLOW_OP_STATEFUL | FLOW_OP_RANDOM},
};
static const flow_kernel_def t_kernels[] = {
	{"MatMul", FLOW_CPU, FLOW_F32, k_matmul},
	{"BiasAdd", FLOW_CPU, FLOW_F32, k_biasadd},
	{"Relu", FLOW_CPU, FLOW_F32, k_relu},
	{"Add", FLOW_CPU, FLOW_F32, k_add},
	{"Mul", FLOW_CPU, FLOW_F32, k_mul},
	{"_TestRandom", FLOW_CPU, 0, k_random},
};
#define N_T ((int)(sizeof t_ops / sizeof t_ops[0]))
static flow_op_lib t_libs[N_T];

void test_ops_register(void)
{
	for (int i = 0; i < N_T; i++) {
		flow_status st = {0};
		if (flow_registry_lookup(t_ops[i].name, NULL))
			continue; /* the real op library has it */
		t_libs[i] = (flow_op_lib){"test", &t_ops[i], 1, &t_kernels[i], 1};
		if (flow_registry_add_library(&t_libs[i], &st))
			fprintf(stderr, "test_ops: %s\n", st.msg);
	}
}

flow_status *st;

int fixture_setup(void **state)
{
	(void)state;
	st = flow_status_new();
	test_ops_register();
	return 0;
}

int fixture_teardown(void **state)
{
	(void)state;
	flow_status_free(st);
	return 0;
}
