/* Sessions: runs, feeds/fetches/targets, bad input, per-session variables,
 * plan caching and recompile after growth, each compile pass (plan before /
 * after, identical results), the on-disk plan cache, eager execution. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops_fixture.h"

#define OK() \
	do { if (!flow_status_ok(st)) fail_msg("unexpected error: %s", flow_status_message(st)); } while (0)

static flow_output cmat(flow_graph *g, const char *name, int64_t r, int64_t c, float v, float step)
{
	int64_t d[2] = {r, c};
	float *buf = malloc(sizeof(float) * (size_t)(r * c));
	for (int64_t i = 0; i < r * c; i++)
		buf[i] = v + step * (float)(i % 17) - 3.0f * step;
	flow_tensor *t = tf32(2, d, buf);
	free(buf);
	flow_output o = flow_const(g, name, t, st);
	flow_tensor_unref(t);
	return o;
}

static flow_output op2(flow_graph *g, const char *type, const char *name, flow_output a, flow_output b)
{
	flow_output in[2] = {a, b};
	return flow_simple(g, type, name, in, 2, st);
}

static flow_tensor *run1(flow_session *s, flow_output feed, flow_tensor *fv, flow_output fetch)
{
	flow_tensor *out = NULL;
	int rc = flow_session_run(s, feed.op ? &feed : NULL, feed.op ? &fv : NULL, feed.op ? 1 : 0, &fetch, &out,
				  1, NULL, 0, st);
	if (rc)
		fail_msg("run failed: %s", flow_status_message(st));
	return out;
}

static void assert_close(const flow_tensor *a, const flow_tensor *b, double tol)
{
	assert_int_equal(flow_tensor_nelem(a), flow_tensor_nelem(b));
	for (int64_t i = 0; i < flow_tensor_nelem(a); i++)
		if (fabs(flow_tensor_get(a, i) - flow_tensor_get(b, i)) > tol)
			fail_msg("element %lld: %g vs %g", (long long)i, flow_tensor_get(a, i), flow_tensor_get(b, i));
}

static void test_basic_run(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	int64_t d[2] = {2, 2};
	flow_shape ps = flow_shape_make(2, (int64_t[]){-1, 2});
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &ps, st);
	flow_tensor *wt = tf32(2, d, (float[]){1, 2, 3, 4});
	flow_output w = flow_const(g, "w", wt, st);
	flow_output y = op2(g, "MatMul", "y", x, w);
	OK();
	flow_session *s = flow_session_new(g, NULL, st);
	flow_tensor *xv = tf32(2, d, (float[]){1, 0, 0, 1});
	flow_tensor *out = run1(s, x, xv, y);
	assert_close(out, wt, 0);
	flow_tensor_unref(out);
	/* Feeding a batch of another size: the placeholder allows ?x2. */
	int64_t d3[2] = {3, 2};
	flow_tensor *x3 = tf32(2, d3, (float[]){1, 1, 2, 2, 0, 1});
	out = run1(s, x, x3, y);
	assert_int_equal(flow_tensor_dim(out, 0), 3);
	assert_true(flow_tensor_get(out, 0) == 4 && flow_tensor_get(out, 1) == 6);
	assert_true(flow_tensor_get(out, 4) == 3 && flow_tensor_get(out, 5) == 4);
	flow_tensor_unref(out);
	flow_tensor_unref(x3);
	flow_tensor_unref(xv);
	flow_tensor_unref(wt);
	/* Freeing the graph under an open session defers (TF_DeleteGraph): the
	 * session keeps working and the graph goes with its last session. */
	flow_graph_free(g);
	xv = tf32(2, d, (float[]){0, 1, 1, 0});
	out = run1(s, x, xv, y);
	assert_true(flow_tensor_get(out, 0) == 3 && flow_tensor_get(out, 3) == 2);
	flow_tensor_unref(out);
	flow_tensor_unref(xv);
	flow_session_free(s);
}

static void test_bad_runs(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new(), *g2 = flow_graph_new();
	flow_shape ps = flow_shape_make(2, (int64_t[]){2, 2});
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &ps, st);
	flow_output c = cmat(g, "c", 2, 2, 1, 1);
	flow_output y = op2(g, "Add", "y", x, c);
	flow_output z = cmat(g2, "z", 2, 2, 1, 1);
	flow_output v = flow_variable(g, "v", c, st);
	flow_output rv = flow_read_variable(g, "rv", v, st);
	flow_output use_v = op2(g, "Add", "use_v", v, c);
	OK();
	flow_session *s = flow_session_new(g, NULL, st);
	flow_tensor *t = flow_tensor_new(FLOW_F32, 2, (int64_t[]){2, 2}, st);
	flow_tensor *t3 = flow_tensor_new(FLOW_F32, 2, (int64_t[]){3, 2}, st);
	flow_tensor *ti = flow_tensor_new(FLOW_I32, 2, (int64_t[]){2, 2}, st);
	flow_tensor *out = NULL;
	/* Feeding a non-placeholder. */
	assert_int_equal(flow_session_run(s, &c, &t, 1, &y, &out, 1, NULL, 0, st), -1);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "node 'c' is a Const, not a Placeholder");
	/* Fetching from another graph. */
	assert_int_equal(flow_session_run(s, &x, &t, 1, &z, &out, 1, NULL, 0, st), -1);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "fetch 0 ('z:0') is from another graph");
	/* Placeholder not fed. */
	assert_int_equal(flow_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, st), -1);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "placeholder 'x' must be fed");
	/* Wrong feed shape / dtype. */
	assert_int_equal(flow_session_run(s, &x, &t3, 1, &y, &out, 1, NULL, 0, st), -1);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "placeholder shape 2x2, fed shape 3x2");
	assert_int_equal(flow_session_run(s, &x, &ti, 1, &y, &out, 1, NULL, 0, st), -1);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "placeholder is f32, fed i32");
	/* Uninitialised variable, read explicitly and through a plain input. */
	assert_int_equal(flow_session_run(s, NULL, NULL, 0, &rv, &out, 1, NULL, 0, st), -1);
	EXPECT_ERR(FLOW_FAILED_PRECONDITION, "node 'rv' (ReadVariable): reading an uninitialized variable");
	assert_int_equal(flow_session_run(s, NULL, NULL, 0, &use_v, &out, 1, NULL, 0, st), -1);
	EXPECT_ERR(FLOW_FAILED_PRECONDITION, "reads variable 'v', which is uninitialized");
	assert_null(out);
	/* A run that works, then close: later runs fail clearly. */
	assert_int_equal(flow_session_run(s, &x, &t, 1, &y, &out, 1, NULL, 0, st), 0);
	flow_tensor_unref(out);
	assert_int_equal(flow_session_close(s, st), 0);
	assert_int_equal(flow_session_run(s, &x, &t, 1, &y, &out, 1, NULL, 0, st), -1);
	EXPECT_ERR(FLOW_FAILED_PRECONDITION, "closed session");
	flow_session_free(s);
	flow_tensor_unref(t);
	flow_tensor_unref(t3);
	flow_tensor_unref(ti);
	flow_graph_free(g);
	flow_graph_free(g2);
}

static void test_variables_per_session(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	flow_output c = cmat(g, "c", 2, 2, 1, 0);     /* all 1 - 0 = 1 */
	flow_output v = flow_variable(g, "v", c, st);
	flow_output upd = flow_assign_add(g, "upd", v, c, st);
	flow_op *init = flow_global_variables_initializer(g, st);
	OK();
	flow_session *s1 = flow_session_new(g, NULL, st), *s2 = flow_session_new(g, NULL, st);
	assert_int_equal(flow_session_run(s1, NULL, NULL, 0, NULL, NULL, 0, &init, 1, st), 0);
	assert_int_equal(flow_session_run(s2, NULL, NULL, 0, NULL, NULL, 0, &init, 1, st), 0);
	flow_tensor *snap = flow_session_variable_value(s1, v.op, st);
	flow_tensor *o = NULL;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(flow_session_run(s1, NULL, NULL, 0, &upd, &o, 1, NULL, 0, st), 0);
		flow_tensor_unref(o);
	}
	flow_tensor *a = flow_session_variable_value(s1, v.op, st);
	flow_tensor *b = flow_session_variable_value(s2, v.op, st);
	OK();
	assert_true(flow_tensor_get(a, 0) == 4.0);  /* 1 + 3 */
	assert_true(flow_tensor_get(b, 0) == 1.0);  /* the other session is untouched */
	assert_true(flow_tensor_get(snap, 0) == 1.0); /* copy-on-write kept the snapshot */
	flow_tensor_unref(a);
	flow_tensor_unref(b);
	flow_tensor_unref(snap);
	/* With no reader holding the value, AssignAdd updates in place (the
	 * Ref input does not keep the Variable's output alive). */
	a = flow_session_variable_value(s1, v.op, st);
	void *before = flow_tensor_data(a);
	flow_tensor_unref(a);
	assert_int_equal(flow_session_run(s1, NULL, NULL, 0, NULL, NULL, 0, &upd.op, 1, st), 0);
	a = flow_session_variable_value(s1, v.op, st);
	assert_ptr_equal(flow_tensor_data(a), before);
	assert_true(flow_tensor_get(a, 0) == 5.0);
	flow_tensor_unref(a);
	/* Assign from a feed copies: the variable never aliases the caller's
	 * tensor (which may be external memory the caller frees). */
	flow_shape ps = flow_shape_make(2, (int64_t[]){2, 2});
	flow_output ph = flow_placeholder(g, "ph", FLOW_F32, &ps, st);
	flow_output as = flow_assign(g, "as", v, ph, st);
	OK();
	float ext[4] = {7, 7, 7, 7};
	flow_tensor *fv = flow_tensor_wrap(FLOW_F32, 2, ps.dims, ext, sizeof ext, NULL, NULL, st);
	assert_int_equal(flow_session_run(s1, &ph, &fv, 1, NULL, NULL, 0, &as.op, 1, st), 0);
	flow_tensor_unref(fv);
	ext[0] = -1;
	a = flow_session_variable_value(s1, v.op, st);
	assert_true(flow_tensor_get(a, 0) == 7.0);
	assert_ptr_not_equal(flow_tensor_data(a), ext);
	flow_tensor_unref(a);
	flow_session_free(s1);
	flow_session_free(s2);
	flow_graph_free(g);
}

static void test_cache_and_growth(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	flow_output a = cmat(g, "a", 4, 4, 1, 1);
	flow_output b = op2(g, "Mul", "b", a, a);
	OK();
	flow_session *s = flow_session_new(g, NULL, st);
	flow_output none = {0};
	for (int i = 0; i < 3; i++)
		flow_tensor_unref(run1(s, none, NULL, b));
	flow_session_stats ss;
	flow_session_stats_get(s, &ss);
	assert_int_equal(ss.runs, 3);
	assert_int_equal(ss.compiles, 1);
	assert_int_equal(ss.plan_cache_hits, 2);
	assert_int_equal(ss.revalidations, 1);
	/* Another signature compiles its own plan. */
	flow_tensor_unref(run1(s, none, NULL, a));
	flow_session_stats_get(s, &ss);
	assert_int_equal(ss.compiles, 2);
	/* The graph grows: the next run re-validates the whole graph and
	 * recompiles, even for a signature seen before. */
	op2(g, "Add", "c", b, a);
	flow_tensor_unref(run1(s, none, NULL, b));
	flow_session_stats_get(s, &ss);
	assert_int_equal(ss.revalidations, 2);
	assert_int_equal(ss.compiles, 3);
	flow_tensor_unref(run1(s, none, NULL, b));
	flow_session_stats_get(s, &ss);
	assert_int_equal(ss.compiles, 3);
	assert_int_equal(ss.revalidations, 2);
	flow_session_free(s);
	flow_graph_free(g);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Runs fetch with and without some passes; returns both plans' text and
 * checks identical results. */
static void compare(flow_graph *g, flow_output feed, flow_tensor *fv, flow_output fetch, int pass,
		    char **with, char **without, flow_session_stats *stats)
{
	flow_session_options on = {0}, off = {.disable_passes = pass};
	flow_session *s1 = flow_session_new(g, &on, st), *s0 = flow_session_new(g, &off, st);
	int nf = feed.op ? 1 : 0;
	*with = flow_session_plan_dump(s1, &feed, nf, &fetch, 1, NULL, 0, st);
	*without = flow_session_plan_dump(s0, &feed, nf, &fetch, 1, NULL, 0, st);
	OK();
	flow_tensor *r1 = run1(s1, feed, fv, fetch), *r0 = run1(s0, feed, fv, fetch);
	assert_close(r1, r0, 1e-4);
	flow_session_stats_get(s1, stats);
	flow_tensor_unref(r1);
	flow_tensor_unref(r0);
	flow_session_free(s1);
	flow_session_free(s0);
}

static void test_pass_constant_folding(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	flow_shape ps = flow_shape_make(2, (int64_t[]){3, 3});
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &ps, st);
	flow_output c1 = cmat(g, "c1", 3, 3, 1, 0.5f), c2 = cmat(g, "c2", 3, 3, 2, 0.25f);
	flow_output k = op2(g, "Add", "k", c1, c2);     /* foldable */
	flow_output k2 = op2(g, "Mul", "k2", k, c1);    /* foldable after k */
	flow_output y = op2(g, "Mul", "y", x, k2);      /* not: depends on x */
	OK();
	flow_tensor *xv = flow_tensor_new(FLOW_F32, 2, ps.dims, st);
	for (int i = 0; i < 9; i++)
		((float *)flow_tensor_data(xv))[i] = (float)i - 4;
	char *with, *without;
	flow_session_stats ss;
	compare(g, x, xv, y, FLOW_PASS_CONSTANT_FOLDING, &with, &without, &ss);
	/* Before: Add and two Muls; after: k and k2 became constants. */
	assert_int_equal(count(without, "= Add("), 1);
	assert_int_equal(count(without, "= Mul("), 2);
	assert_int_equal(count(with, "= Add("), 0);
	assert_int_equal(count(with, "= Mul("), 1);
	assert_non_null(strstr(with, "k2 = Const()"));
	assert_int_equal(ss.last_folded, 2);
	free(with);
	free(without);
	flow_tensor_unref(xv);
	flow_graph_free(g);
}

static void test_pass_cse(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	flow_shape ps = flow_shape_make(2, (int64_t[]){2, 3});
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &ps, st);
	flow_output c = cmat(g, "c", 2, 3, 1, 1);
	flow_output c_dup = cmat(g, "c_dup", 2, 3, 1, 1);  /* same contents */
	flow_output m1 = op2(g, "Mul", "m1", x, c);
	flow_output m2 = op2(g, "Mul", "m2", c_dup, x);    /* commutative duplicate */
	flow_output s = op2(g, "Add", "s", m1, m2);
	flow_shape rs = flow_shape_make(2, (int64_t[]){2, 3});
	flow_op_desc *d = flow_op_new(g, "_TestRandom", "r1");
	flow_op_set_attr_shape(d, "shape", &rs);
	flow_output r1 = {flow_op_finish(d, st), 0};
	d = flow_op_new(g, "_TestRandom", "r2");
	flow_op_set_attr_shape(d, "shape", &rs);
	flow_output r2 = {flow_op_finish(d, st), 0};
	flow_output rr = op2(g, "Add", "rr", r1, r2);
	flow_output y = op2(g, "Add", "y", s, rr);
	OK();
	(void)y;
	flow_tensor *xv = flow_tensor_new(FLOW_F32, 2, ps.dims, st);
	for (int i = 0; i < 6; i++)
		((float *)flow_tensor_data(xv))[i] = (float)i;
	char *with, *without;
	flow_session_stats ss;
	/* Fetch s (deterministic) for the identical-result check. */
	compare(g, x, xv, s, FLOW_PASS_CSE, &with, &without, &ss);
	assert_int_equal(count(without, "= Mul("), 2);
	assert_int_equal(count(with, "= Mul("), 1);
	assert_int_equal(count(with, "= Const("), 1);    /* c and c_dup merged */
	assert_int_equal(ss.last_cse_removed, 2);
	free(with);
	free(without);
	/* Stateful random ops are never merged. */
	flow_session *se = flow_session_new(g, NULL, st);
	char *p = flow_session_plan_dump(se, &x, 1, &y, 1, NULL, 0, st);
	OK();
	assert_int_equal(count(p, "= _TestRandom("), 2);
	free(p);
	flow_session_free(se);
	flow_tensor_unref(xv);
	flow_graph_free(g);
}

static void test_pass_fusion(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	flow_shape ps = flow_shape_make(2, (int64_t[]){-1, 5});
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &ps, st);
	flow_output w = cmat(g, "w", 5, 4, 0.1f, 0.07f);
	flow_tensor *bt = tf32(1, (int64_t[]){4}, (float[]){0.5f, -0.25f, 0.125f, -2});
	flow_output b = flow_const(g, "b", bt, st);
	flow_tensor_unref(bt);
	flow_output mm = op2(g, "MatMul", "mm", x, w);
	flow_output ba = op2(g, "BiasAdd", "ba", mm, b);
	flow_output r = flow_simple(g, "Relu", "relu", &ba, 1, st);
	OK();
	flow_tensor *xv = flow_tensor_new(FLOW_F32, 2, (int64_t[]){3, 5}, st);
	for (int i = 0; i < 15; i++)
		((float *)flow_tensor_data(xv))[i] = (float)(i % 7) - 3;
	char *with, *without;
	flow_session_stats ss;
	compare(g, x, xv, r, FLOW_PASS_FUSION, &with, &without, &ss);
	assert_non_null(strstr(without, "= MatMul("));
	assert_non_null(strstr(without, "= BiasAdd("));
	assert_non_null(strstr(without, "= Relu("));
	assert_null(strstr(with, "= MatMul("));
	assert_null(strstr(with, "= BiasAdd("));
	assert_non_null(strstr(with, "relu = _FusedMatMul(x:0, w:0, b:0)"));
	assert_non_null(strstr(with, "activation=\"Relu\""));
	assert_int_equal(ss.last_fused, 1);
	free(with);
	free(without);
	/* Fetching the BiasAdd as well keeps it: fusion stops there (no activation). */
	flow_session *s = flow_session_new(g, NULL, st);
	flow_output f2[2] = {ba, r};
	char *p = flow_session_plan_dump(s, &x, 1, f2, 2, NULL, 0, st);
	OK();
	assert_non_null(strstr(p, "ba = _FusedMatMul("));
	assert_non_null(strstr(p, "activation=\"none\""));
	assert_non_null(strstr(p, "relu = Relu(ba:0)"));
	flow_tensor *outs[2];
	assert_int_equal(flow_session_run(s, &x, &xv, 1, f2, outs, 2, NULL, 0, st), 0);
	for (int i = 0; i < 12; i++) {
		double v = flow_tensor_get(outs[0], i);
		assert_true(flow_tensor_get(outs[1], i) == (v > 0 ? v : 0));
	}
	flow_tensor_unref(outs[0]);
	flow_tensor_unref(outs[1]);
	free(p);
	flow_session_free(s);
	flow_tensor_unref(xv);
	flow_graph_free(g);
}

static void test_pass_memory_plan(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	int64_t n = 256 * 1024; /* 1 MiB of f32 per tensor */
	flow_shape ps = flow_shape_make(1, &n);
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &ps, st);
	flow_output h = x;
	flow_output one = flow_const_f32(g, "one", 1.0f, st);
	for (int i = 0; i < 12; i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "h%d", i);
		h = op2(g, i % 2 ? "Mul" : "Add", nm, h, one);
		snprintf(nm, sizeof nm, "r%d", i);
		h = flow_simple(g, "Relu", nm, &h, 1, st);
	}
	OK();
	flow_tensor *xv = flow_tensor_new(FLOW_F32, 1, &n, st);
	for (int64_t i = 0; i < n; i++)
		((float *)flow_tensor_data(xv))[i] = (float)(i % 5) - 2;
	flow_allocator *a1 = flow_allocator_new(NULL, st), *a0 = flow_allocator_new(NULL, st);
	flow_session_options on = {.allocator = a1}, off = {.allocator = a0, .disable_passes = FLOW_PASS_MEMORY_PLAN};
	flow_session *s1 = flow_session_new(g, &on, st), *s0 = flow_session_new(g, &off, st);
	flow_tensor *r1 = run1(s1, x, xv, h), *r0 = run1(s0, x, xv, h);
	assert_close(r1, r0, 0);
	flow_allocator_stats st1, st0;
	flow_allocator_stats_get(a1, &st1);
	flow_allocator_stats_get(a0, &st0);
	flow_session_stats ss;
	flow_session_stats_get(s1, &ss);
	/* With lifetimes: buffers are reused in place or freed after their last
	 * use, so the peak stays at a few tensors; without: all 24 live. */
	assert_true(ss.last_inplace > 0);
	assert_true(st1.peak_bytes_in_use <= 3 * (uint64_t)n * 4);
	assert_true(st0.peak_bytes_in_use >= 24 * (uint64_t)n * 4);
	assert_true(st1.num_allocs < st0.num_allocs);
	flow_tensor_unref(r1);
	flow_tensor_unref(r0);
	flow_session_free(s1);
	flow_session_free(s0);
	flow_allocator_free(a1);
	flow_allocator_free(a0);
	flow_tensor_unref(xv);
	flow_graph_free(g);
}

static void release_malloc(void *ctx, void *data, size_t n)
{
	(void)ctx, (void)n;
	free(data);
}

static void test_plan_cache_on_disk(void **state)
{
	(void)state;
	char dir[] = "/tmp/flow_plan_test_XXXXXX";
	assert_non_null(mkdtemp(dir));
	flow_tensor *ref = NULL; /* round 0's result, kept across the re-init */
	for (int round = 0; round < 4; round++) {
		/* Each round rebuilds the same graph, as a new process would; the
		 * later ones start a LITE runtime, so loading a plan registers the
		 * ops it names on demand. */
		if (round == 1) {
			flow_shutdown();
			flow_init_options lo = {.registration = FLOW_REGISTER_LITE};
			assert_int_equal(flow_init(&lo, st), 0);
			test_ops_register();
		}
		flow_graph *g = flow_graph_new();
		flow_shape ps = flow_shape_make(2, (int64_t[]){-1, 5});
		flow_output x = flow_placeholder(g, "x", FLOW_F32, &ps, st);
		/* Round 3 changes a weight: another graph hash, so no stale plan. */
		flow_output w = cmat(g, "w", 5, 4, round == 3 ? 0.3f : 0.1f, 0.07f);
		flow_output c = op2(g, "Add", "c", w, w); /* folded at compile */
		flow_tensor *bt = tf32(1, (int64_t[]){4}, (float[]){0.5f, -0.25f, 0.125f, -2});
		flow_output b = flow_const(g, "b", bt, st);
		flow_tensor_unref(bt);
		flow_output ba = op2(g, "BiasAdd", "ba", op2(g, "MatMul", "mm", x, c), b);
		flow_output r = flow_simple(g, "Relu", "relu", &ba, 1, st);
		OK();
		flow_session_options o = {.plan_cache_dir = dir};
		flow_session *s = flow_session_new(g, &o, st);
		flow_tensor *xv = flow_tensor_new(FLOW_F32, 2, (int64_t[]){2, 5}, st);
		for (int i = 0; i < 10; i++)
			((float *)flow_tensor_data(xv))[i] = (float)i - 5;
		flow_tensor *out = run1(s, x, xv, r);
		flow_session_stats ss;
		flow_session_stats_get(s, &ss);
		if (round == 0) {
			assert_int_equal(ss.compiles, 1);
			assert_int_equal(ss.plan_disk_hits, 0);
			ref = flow_tensor_wrap(FLOW_F32, out->ndim, out->dims, malloc(flow_tensor_nbytes(out)),
					       flow_tensor_nbytes(out), release_malloc, NULL, st);
			memcpy(flow_tensor_data(ref), flow_tensor_data(out), flow_tensor_nbytes(out));
		} else if (round == 1) {
			/* Loaded: no compile passes ran; same fused, folded plan. */
			assert_int_equal(ss.compiles, 0);
			assert_int_equal(ss.plan_disk_hits, 1);
			assert_int_equal(ss.last_fused, 1);
			assert_int_equal(ss.last_folded, 1);
			assert_close(out, ref, 0);
			flow_registry_stats rs;
			flow_registry_stats_get(&rs);
			assert_int_equal(rs.mode, FLOW_REGISTER_LITE);
			assert_true(rs.ops_registered < rs.ops_known);
			/* Damage the file: the next process must notice and compile. */
			DIR *dd = opendir(dir);
			struct dirent *e;
			while ((e = readdir(dd)))
				if (strstr(e->d_name, ".fplan")) {
					char path[512];
					snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
					FILE *f = fopen(path, "r+b");
					fseek(f, 40, SEEK_SET);
					fputc(0x5a, f);
					fclose(f);
				}
			closedir(dd);
		} else if (round == 2) {
			assert_int_equal(ss.plan_disk_hits, 0);
			assert_int_equal(ss.compiles, 1);
			assert_close(out, ref, 0);
		} else {
			assert_int_equal(ss.plan_disk_hits, 0);
			assert_int_equal(ss.compiles, 1);
			int differ = 0;
			for (int64_t i = 0; i < flow_tensor_nelem(out); i++)
				differ |= flow_tensor_get(out, i) != flow_tensor_get(ref, i);
			assert_true(differ);
		}
		flow_tensor_unref(out);
		flow_tensor_unref(xv);
		flow_session_free(s);
		flow_graph_free(g);
	}
	flow_tensor_unref(ref);
	DIR *dd = opendir(dir);
	struct dirent *e;
	while ((e = readdir(dd))) {
		char path[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.')
			unlink(path);
	}
	closedir(dd);
	rmdir(dir);
}

/* Random graphs of 4x4 f32 nodes (Add, Mul, Relu, MatMul, BiasAdd over
 * constants, duplicates and a placeholder): every pass on vs every pass off
 * give the same numbers. */
static uint64_t rs = 0x1234567;
static int rnd(int n)
{
	rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
	return (int)(rs % (uint64_t)n);
}

static void test_passes_random_graphs(void **state)
{
	(void)state;
	int folded = 0, cse = 0, fused = 0;
	for (int gi = 0; gi < 30; gi++) {
		flow_graph *g = flow_graph_new();
		flow_shape ps = flow_shape_make(2, (int64_t[]){4, 4});
		flow_output pool[64];
		int n = 0;
		pool[n++] = flow_placeholder(g, "x", FLOW_F32, &ps, st);
		for (int c = 0; c < 3; c++) {
			char nm[16];
			snprintf(nm, sizeof nm, "k%d", c);
			pool[n++] = cmat(g, nm, 4, 4, 0.1f * (float)(c + 1), c % 2 ? 0.05f : -0.03f);
		}
		flow_tensor *bt = tf32(1, (int64_t[]){4}, (float[]){0.1f, -0.2f, 0.3f, -0.4f});
		flow_output bias = flow_const(g, "bias", bt, st);
		flow_tensor_unref(bt);
		for (int i = 0; i < 24 && n < 64; i++) {
			flow_output a = pool[rnd(n)], b = pool[rnd(n)];
			switch (rnd(5)) {
			case 0: pool[n++] = op2(g, "Add", NULL, a, b); break;
			case 1: pool[n++] = op2(g, "Mul", NULL, a, b); break;
			case 2: pool[n++] = flow_simple(g, "Relu", NULL, &a, 1, st); break;
			case 3: pool[n++] = op2(g, "MatMul", NULL, a, b); break;
			default: pool[n++] = op2(g, "BiasAdd", NULL, op2(g, "MatMul", NULL, a, b), bias); break;
			}
		}
		OK();
		flow_output fetch[2] = {pool[n - 1], pool[n - 2]};
		flow_tensor *xv = flow_tensor_new(FLOW_F32, 2, ps.dims, st);
		for (int i = 0; i < 16; i++)
			((float *)flow_tensor_data(xv))[i] = (float)(i % 7) * 0.25f - 0.75f;
		flow_session_options off = {.disable_passes = FLOW_PASS_CONSTANT_FOLDING | FLOW_PASS_CSE |
								FLOW_PASS_FUSION | FLOW_PASS_MEMORY_PLAN};
		flow_session *s1 = flow_session_new(g, NULL, st), *s0 = flow_session_new(g, &off, st);
		flow_tensor *o1[2], *o0[2];
		assert_int_equal(flow_session_run(s1, pool, &xv, 1, fetch, o1, 2, NULL, 0, st), 0);
		assert_int_equal(flow_session_run(s0, pool, &xv, 1, fetch, o0, 2, NULL, 0, st), 0);
		OK();
		for (int f = 0; f < 2; f++) {
			for (int64_t i = 0; i < 16; i++) {
				double a = flow_tensor_get(o1[f], i), b = flow_tensor_get(o0[f], i);
				if (!isfinite(a) || !isfinite(b) || fabs(a - b) > 1e-4 * (1 + fabs(b)))
					fail_msg("graph %d fetch %d element %lld: %g with passes, %g without", gi, f,
						 (long long)i, a, b);
			}
			flow_tensor_unref(o1[f]);
			flow_tensor_unref(o0[f]);
		}
		flow_session_stats ss;
		flow_session_stats_get(s1, &ss);
		folded += ss.last_folded, cse += ss.last_cse_removed, fused += ss.last_fused;
		flow_tensor_unref(xv);
		flow_session_free(s1);
		flow_session_free(s0);
		flow_graph_free(g);
	}
	/* The graphs did exercise every pass. */
	assert_true(folded > 0 && cse > 0 && fused > 0);
}

typedef struct conc {
	flow_graph *g;
	flow_output x, y;
	int bad;
} conc;

static void *conc_runner(void *ud)
{
	conc *c = ud;
	flow_status *ls = flow_status_new();
	flow_session *s = flow_session_new(c->g, NULL, ls);
	flow_tensor *xv = flow_tensor_new(FLOW_F32, 2, (int64_t[]){4, 4}, ls);
	for (int r = 0; r < 200 && s; r++) {
		((float *)flow_tensor_data(xv))[0] = (float)r;
		flow_tensor *out = NULL;
		if (flow_session_run(s, &c->x, &xv, 1, &c->y, &out, 1, NULL, 0, ls) ||
		    flow_tensor_get(out, 0) != 2.0 * r + 1.0)
			c->bad++;
		flow_tensor_unref(out);
	}
	flow_tensor_unref(xv);
	flow_session_free(s);
	flow_status_free(ls);
	return NULL;
}

static void test_concurrent_sessions(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	flow_shape ps = flow_shape_make(2, (int64_t[]){4, 4});
	conc c = {g, flow_placeholder(g, "x", FLOW_F32, &ps, st), {0}, 0};
	flow_output two = flow_const_f32(g, "two", 2, st), one = flow_const_f32(g, "one", 1, st);
	c.y = op2(g, "Add", "y", op2(g, "Mul", "m", c.x, two), one);
	OK();
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, conc_runner, &c);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(c.bad, 0);
	flow_graph_free(g);
}

static void test_eager(void **state)
{
	(void)state;
	int64_t d[2] = {2, 2};
	flow_tensor *a = tf32(2, d, (float[]){1, 2, 3, 4}), *b = tf32(2, d, (float[]){10, 20, 30, 40});
	flow_op_desc *e = flow_eager_new("Add");
	flow_op_add_tensor(e, a);
	flow_op_add_tensor(e, b);
	flow_tensor *out = NULL;
	assert_int_equal(flow_execute(e, &out, 1, st), 0);
	OK();
	assert_true(flow_tensor_get(out, 3) == 44);
	flow_tensor_unref(out);
	e = flow_eager_new("MatMul");
	flow_op_add_tensor(e, a);
	flow_op_add_tensor(e, b);
	flow_op_set_attr_bool(e, "transpose_b", 1);
	assert_int_equal(flow_execute(e, &out, 1, st), 0);
	assert_true(flow_tensor_get(out, 0) == 1 * 10 + 2 * 20);
	flow_tensor_unref(out);
	/* Errors are the same as in graph mode. */
	flow_tensor *c = tf32(2, (int64_t[]){3, 1}, (float[]){1, 2, 3});
	e = flow_eager_new("MatMul");
	flow_op_add_tensor(e, a);
	flow_op_add_tensor(e, c);
	assert_int_equal(flow_execute(e, &out, 1, st), -1);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "inner dimensions differ");
	e = flow_eager_new("Nope");
	assert_int_equal(flow_execute(e, &out, 1, st), -1);
	EXPECT_ERR(FLOW_NOT_FOUND, "unknown op 'Nope'");
	flow_tensor_unref(a);
	flow_tensor_unref(b);
	flow_tensor_unref(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_run),
		cmocka_unit_test(test_bad_runs),
		cmocka_unit_test(test_variables_per_session),
		cmocka_unit_test(test_cache_and_growth),
		cmocka_unit_test(test_pass_constant_folding),
		cmocka_unit_test(test_pass_cse),
		cmocka_unit_test(test_pass_fusion),
		cmocka_unit_test(test_pass_memory_plan),
		cmocka_unit_test(test_passes_random_graphs),
		cmocka_unit_test(test_concurrent_sessions),
		cmocka_unit_test(test_plan_cache_on_disk),
		cmocka_unit_test(test_eager),
	};
	int rc = cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
	flow_shutdown();
	return rc;
}
