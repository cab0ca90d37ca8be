/* Graph builder: names, versions, attrs, shape inference errors, finalize,
 * default graph, variables and the global initializer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "ops_fixture.h"

static flow_output cmat(flow_graph *g, const char *name, int64_t r, int64_t c, float v)
{
	int64_t d[2] = {r, c};
	float *buf = malloc(sizeof(float) * (size_t)(r * c));
	for (int64_t i = 0; i < r * c; i++)
		buf[i] = v + (float)i;
	flow_tensor *t = tf32(2, d, buf);
	free(buf);
	flow_output o = flow_const(g, name, t, st);
	flow_tensor_unref(t);
	return o;
}

static void test_names_and_versions(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	assert_int_equal(flow_graph_version(g), 0);
	flow_output a = cmat(g, "a", 2, 3, 1);
	flow_output b = cmat(g, NULL, 2, 3, 1);
	assert_true(flow_status_ok(st));
	assert_string_equal(flow_op_name(b.op), "Const");
	flow_output c = cmat(g, NULL, 2, 3, 1);
	assert_string_not_equal(flow_op_name(c.op), "Const");
	assert_int_equal(flow_graph_version(g), 3);
	assert_int_equal(flow_graph_num_ops(g), 3);
	assert_ptr_equal(flow_graph_op_by_name(g, "a"), a.op);
	assert_ptr_equal(flow_graph_op_at(g, 1), b.op);
	/* Duplicate name. */
	cmat(g, "a", 1, 1, 0);
	EXPECT_ERR(FLOW_ALREADY_EXISTS, "'a' is already used");
	assert_int_equal(flow_graph_version(g), 3); /* failed adds do not count */
	flow_output in[2] = {a, b};
	flow_output s = flow_simple(g, "Add", "sum", in, 2, st);
	assert_non_null(s.op);
	flow_shape sh = flow_op_output_shape(s.op, 0);
	assert_int_equal(sh.ndim, 2);
	assert_int_equal(sh.dims[0], 2);
	assert_int_equal(sh.dims[1], 3);
	assert_int_equal(flow_op_output_dtype(s.op, 0), FLOW_F32);
	flow_dtype T;
	assert_int_equal(flow_op_get_attr_type(s.op, "T", &T), 0); /* inferred */
	assert_int_equal(T, FLOW_F32);
	char *dot = flow_graph_to_dot(g);
	assert_non_null(strstr(dot, "sum"));
	free(dot);
	flow_graph_free(g);
}

static void test_bad_input(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new(), *g2 = flow_graph_new();
	flow_output a = cmat(g, "a", 2, 3, 1), b = cmat(g, "b", 4, 5, 1), x = cmat(g2, "x", 2, 3, 1);
	/* Shape mismatch at build time, naming the node. */
	flow_output in[2] = {a, b};
	flow_simple(g, "MatMul", "mm", in, 2, st);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "node 'mm' (MatMul)");
	flow_simple(g, "Add", "bad_add", in, 2, st);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "bad_add");
	/* Unknown op. */
	flow_simple(g, "NoSuchOp", "n", &a, 1, st);
	EXPECT_ERR(FLOW_NOT_FOUND, "unknown op 'NoSuchOp'");
	/* Unknown attr. */
	flow_op_desc *d = flow_op_new(g, "Identity", "id");
	flow_op_add_input(d, a);
	flow_op_set_attr_int(d, "bogus", 3);
	assert_null(flow_op_finish(d, st));
	EXPECT_ERR(FLOW_NOT_FOUND, "unknown attr 'bogus'");
	/* Attr of the wrong kind. */
	d = flow_op_new(g, "MatMul", "mm2");
	flow_op_add_input(d, a);
	flow_op_add_input(d, a);
	flow_op_set_attr_int(d, "transpose_b", 1);
	assert_null(flow_op_finish(d, st));
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "attr 'transpose_b' is bool, got int");
	/* Wrong input count. */
	flow_simple(g, "MatMul", "mm3", &a, 1, st);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "expects 2 inputs (a, b), got 1");
	/* Input from another graph. */
	flow_output mixed[2] = {a, x};
	flow_simple(g, "Add", "mix", mixed, 2, st);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "another graph");
	/* Missing required attr. */
	d = flow_op_new(g, "Placeholder", "p");
	assert_null(flow_op_finish(d, st));
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "missing attr 'dtype'");
	/* dtype not allowed / mismatched inputs. */
	flow_tensor *i32 = flow_tensor_scalar_i32(1);
	flow_output ci = flow_const(g, "ci", i32, st);
	flow_tensor_unref(i32);
	flow_output m2[2] = {a, ci};
	flow_simple(g, "Add", "dt", m2, 2, st);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "input 'y' has dtype i32 but T is f32");
	flow_tensor *bt = flow_tensor_new(FLOW_BOOL, 0, NULL, st);
	flow_output vb = flow_variable(g, "vb", flow_const(g, "cb", bt, st), st);
	flow_tensor_unref(bt);
	assert_non_null(vb.op);
	flow_assign_add(g, "aab", vb, flow_out(flow_graph_op_by_name(g, "cb"), 0), st);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "attr 'T' = bool not in allowed {f32,f64,i32,i64}");
	/* Assign to something that is not a variable. */
	flow_assign(g, "as", a, a, st);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "must come from a Variable");
	/* Variable shape vs value shape. */
	flow_output v = flow_variable(g, "v", a, st);
	assert_non_null(v.op);
	flow_assign(g, "as2", v, b, st);
	EXPECT_ERR(FLOW_INVALID_ARGUMENT, "does not match value shape 4x5");
	flow_graph_free(g);
	flow_graph_free(g2);
}

static void test_finalize(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	cmat(g, "a", 1, 1, 0);
	flow_graph_finalize(g);
	assert_true(flow_graph_is_finalized(g));
	uint64_t v = flow_graph_version(g);
	cmat(g, "b", 1, 1, 0);
	EXPECT_ERR(FLOW_FAILED_PRECONDITION, "graph is finalized and cannot be modified");
	assert_int_equal(flow_graph_version(g), v);
	flow_graph_free(g);
}

static void test_default_graph_and_init(void **state)
{
	(void)state;
	flow_reset_default_graph();
	flow_graph *g = flow_default_graph();
	assert_ptr_equal(g, flow_default_graph());
	flow_output w = flow_variable(g, "w", cmat(g, "w0", 3, 3, 0), st);
	flow_output b = flow_variable(g, "b", cmat(g, "b0", 1, 3, 0), st);
	assert_true(flow_status_ok(st));
	assert_int_equal(flow_graph_num_variables(g), 2);
	assert_non_null(flow_variable_initializer(w.op));
	assert_non_null(flow_variable_initializer(b.op));
	int n0 = flow_graph_num_ops(g);
	flow_op *i1 = flow_global_variables_initializer(g, st);
	flow_op *i2 = flow_global_variables_initializer(g, st);
	/* Each call adds a new op, as in TF1 — the graph grows. */
	assert_ptr_not_equal(i1, i2);
	assert_int_equal(flow_graph_num_ops(g), n0 + 2);
	assert_int_equal(flow_op_num_control_inputs(i1), 2);
	assert_string_equal(flow_op_name(i1), "init");
	flow_reset_default_graph();
	assert_int_equal(flow_graph_num_ops(flow_default_graph()), 0);
}

static void test_group_and_lists(void **state)
{
	(void)state;
	flow_graph *g = flow_graph_new();
	flow_op *a = flow_noop(g, "a", st), *b = flow_noop(g, "b", st);
	flow_op *ops[2] = {a, b};
	flow_op *grp = flow_group(g, "grp", ops, 2, st);
	assert_non_null(grp);
	assert_int_equal(flow_op_num_control_inputs(grp), 2);
	assert_ptr_equal(flow_op_control_input(grp, 1), b);
	assert_int_equal(flow_op_num_outputs(grp), 0);
	flow_graph_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_and_versions),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_finalize),
		cmocka_unit_test(test_default_graph_and_init),
		cmocka_unit_test(test_group_and_lists),
	};
	int rc = cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
	flow_shutdown();
	return rc;
}
