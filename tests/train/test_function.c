/*
 * Traced functions: one trace per new signature, retrace counting, the
 * frequent-retracing warning (5 of the last 10 calls), relaxed shapes,
 * declared signatures with unknown dims, incompatible dtype/shape errors,
 * results equal to a direct computation, and a function sharing a graph's
 * variables.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "flow_train.h"

static flow_status *S;
static const float W[4 * 3] = {0.5f, -1, 0.25f, 1, 2, -0.5f, -1, 0.5f, 1, 0.1f, 0.2f, 0.3f};
static int body_calls;

/* y = relu(x @ W) */
static int body(flow_graph *g, const flow_output *in, int n_in, flow_output *out, int n_out,
		void *ud, flow_status *st)
{
	(void)n_in, (void)n_out, (void)ud;
	body_calls++;
	int64_t d[2] = {4, 3};
	flow_tensor *w = flow_tensor_from_data(FLOW_F32, 2, d, W, st);
	flow_output wc = flow_const(g, NULL, w, st);
	flow_tensor_unref(w);
	flow_output mm[2] = {in[0], wc};
	flow_output p = flow_simple(g, "MatMul", NULL, mm, 2, st);
	out[0] = flow_simple(g, "Relu", NULL, &p, 1, st);
	return out[0].op ? 0 : -1;
}

static flow_tensor *batch(int n, flow_dtype dt)
{
	int64_t d[2] = {n, 4};
	flow_tensor *t = flow_tensor_new(dt, 2, d, S);
	for (int i = 0; i < n * 4; i++) {
		if (dt == FLOW_F32)
			((float *)flow_tensor_data(t))[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
		else
			((int32_t *)flow_tensor_data(t))[i] = i;
	}
	return t;
}

static void check_result(flow_tensor *x, flow_tensor *y)
{
	int n = (int)flow_tensor_dim(x, 0);
	assert_int_equal(flow_tensor_dim(y, 0), n);
	assert_int_equal(flow_tensor_dim(y, 1), 3);
	const float *xp = flow_tensor_cdata(x);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < 3; j++) {
			double s = 0;
			for (int k = 0; k < 4; k++)
				s += xp[i * 4 + k] * W[k * 3 + j];
			assert_float_equal(flow_tensor_get(y, i * 3 + j), s > 0 ? s : 0, 1e-5);
		}
}

static flow_function *make(int relax, const flow_shape *sig)
{
	flow_function_options o = {.name = "dense_fn", .n_inputs = 1, .n_outputs = 1,
				   .reduce_retracing = relax, .warn_to_stderr = -1};
	flow_dtype dt = FLOW_F32;
	if (sig) {
		o.sig_dtypes = &dt;
		o.sig_shapes = sig;
	}
	flow_function *f = flow_function_new(body, NULL, &o, S);
	if (!f)
		fail_msg("function_new: %s", flow_status_message(S));
	return f;
}

static int call(flow_function *f, int n, flow_dtype dt)
{
	flow_tensor *x = batch(n, dt), *y = NULL;
	int rc = flow_function_call(f, &x, &y, S);
	if (!rc)
		check_result(x, y);
	flow_tensor_unref(x);
	flow_tensor_unref(y);
	return rc;
}

/* A new batch size every call: a trace per call, and TF's warning. */
static void test_retrace_per_shape(void **state)
{
	(void)state;
	flow_function *f = make(0, NULL);
	body_calls = 0;
	for (int n = 1; n <= 8; n++)
		assert_int_equal(call(f, n, FLOW_F32), 0);
	assert_int_equal(call(f, 3, FLOW_F32), 0);   /* cached: no trace */
	flow_function_stats s;
	flow_function_stats_get(f, &s);
	assert_int_equal(s.calls, 9);
	assert_int_equal(s.traces, 8);
	assert_int_equal(s.retraces, 7);
	assert_int_equal(body_calls, 8);
	assert_int_equal(s.warnings, 2);   /* at the 5th trace and the next, then capped */
	const char *w = flow_function_last_warning(f);
	assert_non_null(strstr(w, "out of the last"));
	assert_non_null(strstr(w, "dense_fn"));
	assert_non_null(strstr(w, "reduce_retracing"));
	flow_function_free(f);
}

/* Fewer than 5 traces in the last 10 calls: no warning. */
static void test_no_warning_when_rare(void **state)
{
	(void)state;
	flow_function *f = make(0, NULL);
	for (int i = 0; i < 20; i++)
		assert_int_equal(call(f, i % 4 + 1, FLOW_F32), 0);
	flow_function_stats s;
	flow_function_stats_get(f, &s);
	assert_int_equal(s.traces, 4);
	assert_int_equal(s.warnings, 0);
	assert_string_equal(flow_function_last_warning(f), "");
	flow_function_free(f);
}

/* reduce_retracing: the second shape relaxes the batch dim to unknown. */
static void test_relaxed(void **state)
{
	(void)state;
	flow_function *f = make(1, NULL);
	for (int n = 1; n <= 8; n++)
		assert_int_equal(call(f, n, FLOW_F32), 0);
	flow_function_stats s;
	flow_function_stats_get(f, &s);
	assert_int_equal(s.traces, 2);
	assert_int_equal(s.warnings, 0);
	flow_function_free(f);
}

/* A declared signature [?, 4] traces once; a wrong dtype or feature count
 * is refused naming the argument. */
static void test_signature(void **state)
{
	(void)state;
	int64_t d[2] = {-1, 4};
	flow_shape sig = flow_shape_make(2, d);
	flow_function *f = make(0, &sig);
	for (int n = 1; n <= 8; n++)
		assert_int_equal(call(f, n, FLOW_F32), 0);
	flow_function_stats s;
	flow_function_stats_get(f, &s);
	assert_int_equal(s.traces, 1);
	assert_int_equal(call(f, 4, FLOW_I32), -1);
	assert_non_null(strstr(flow_status_message(S), "argument 0 has dtype i32"));
	assert_non_null(strstr(flow_status_message(S), "f32"));
	flow_status_clear(S);
	int64_t bd[2] = {2, 5};
	flow_tensor *x = flow_tensor_new(FLOW_F32, 2, bd, S), *y = NULL;
	assert_int_equal(flow_function_call(f, &x, &y, S), -1);
	assert_non_null(strstr(flow_status_message(S), "2x5"));
	flow_status_clear(S);
	flow_tensor_unref(x);
	/* still works after the refusals */
	assert_int_equal(call(f, 2, FLOW_F32), 0);
	flow_function_stats_get(f, &s);
	assert_int_equal(s.traces, 1);
	flow_function_free(f);
}

/* Without a signature an i32 input makes a new trace whose body fails
 * (MatMul of i32 by an f32 constant): the error comes back, nothing cached. */
static void test_incompatible_dtype_without_signature(void **state)
{
	(void)state;
	flow_function *f = make(0, NULL);
	assert_int_equal(call(f, 2, FLOW_F32), 0);
	assert_int_equal(call(f, 2, FLOW_I32), -1);
	assert_int_not_equal(flow_status_code(S), FLOW_OK);
	flow_status_clear(S);
	flow_function_stats s;
	flow_function_stats_get(f, &s);
	assert_int_equal(s.cached, 1);
	assert_int_equal(call(f, 2, FLOW_F32), 0);
	flow_function_free(f);
}

/* A function traced into a model's graph and session reads its variables. */
typedef struct shared_ud {
	flow_output var;
} shared_ud;

static int body_var(flow_graph *g, const flow_output *in, int n_in, flow_output *out, int n_out,
		    void *ud, flow_status *st)
{
	(void)n_in, (void)n_out;
	shared_ud *u = ud;
	flow_output a[2] = {in[0], u->var};
	out[0] = flow_simple(g, "Mul", NULL, a, 2, st);
	return out[0].op ? 0 : -1;
}

static void test_shared_graph(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	shared_ud u;
	u.var = flow_variable(g, "scale", flow_const_f32(g, NULL, 3.0f, S), S);
	flow_session *s = flow_session_new(g, NULL, S);
	flow_op *init = flow_global_variables_initializer(g, S);
	assert_int_equal(flow_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, S), 0);
	flow_function_options o = {.name = "scaled", .n_inputs = 1, .n_outputs = 1, .graph = g,
				   .session = s};
	flow_function *f = flow_function_new(body_var, &u, &o, S);
	assert_non_null(f);
	flow_tensor *x = flow_tensor_scalar_f32(2.0f), *y = NULL;
	assert_int_equal(flow_function_call(f, &x, &y, S), 0);
	assert_float_equal(flow_tensor_get(y, 0), 6.0, 1e-6);
	flow_tensor_unref(x);
	flow_tensor_unref(y);
	flow_function_free(f);
	flow_session_free(s);
	flow_graph_free(g);
}

/* After flow_shutdown the runtime forgets run-time libraries; the training
 * ops come back on the next flow_train_init. */
static void test_after_shutdown(void **state)
{
	(void)state;
	flow_tape_cache_clear();
	flow_shutdown();
	assert_int_equal(flow_train_init(S), 0);
	assert_true(flow_gradient_known("MatMul"));
	flow_function *f = make(0, NULL);
	assert_int_equal(call(f, 3, FLOW_F32), 0);
	flow_function_free(f);
}

static int clear_status(void **state)
{
	(void)state;
	flow_status_clear(S);
	return 0;
}

int main(void)
{
	S = flow_status_new();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_retrace_per_shape, clear_status),
		cmocka_unit_test_setup(test_no_warning_when_rare, clear_status),
		cmocka_unit_test_setup(test_relaxed, clear_status),
		cmocka_unit_test_setup(test_signature, clear_status),
		cmocka_unit_test_setup(test_incompatible_dtype_without_signature, clear_status),
		cmocka_unit_test_setup(test_shared_graph, clear_status),
		cmocka_unit_test_setup(test_after_shutdown, clear_status),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	flow_status_free(S);
	return rc;
}
