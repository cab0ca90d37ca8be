/* Registry: FULL builds and validates every op and kernel at init, LITE
 * only what is used, on first use; malformed op libraries give clear
 * errors naming the library, op and field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "ops_fixture.h"

static void k_nop(flow_kernel_ctx *k) { (void)k; }

static void test_full_vs_lite(void **state)
{
	(void)state;
	flow_shutdown();
	flow_init_options lo = {.registration = FLOW_REGISTER_LITE};
	assert_int_equal(flow_init(&lo, NULL), 0);
	flow_registry_stats rs;
	flow_registry_stats_get(&rs);
	assert_int_equal(rs.mode, FLOW_REGISTER_LITE);
	assert_true(rs.ops_known >= 10);
	assert_int_equal(rs.ops_registered, 0);
	/* Using an op registers it and only it. */
	flow_graph *g = flow_graph_new();
	flow_status *st = flow_status_new();
	flow_noop(g, "n", st);
	assert_true(flow_status_ok(st));
	flow_registry_stats_get(&rs);
	assert_int_equal(rs.ops_registered, 1);
	assert_int_equal(rs.kernels_registered, 1);
	flow_const_f32(g, "c", 1, st);
	flow_registry_stats_get(&rs);
	assert_int_equal(rs.ops_registered, 2);
	flow_graph_free(g);
	/* A FULL request completes the registry. */
	flow_init_options fo = {.registration = FLOW_REGISTER_FULL};
	assert_int_equal(flow_init(&fo, st), 0);
	flow_registry_stats_get(&rs);
	assert_int_equal(rs.ops_registered, rs.ops_known);
	assert_int_equal(rs.kernels_registered, rs.kernels_known);
	int n = 0;
	const char *const *names = flow_op_names(&n);
	assert_int_equal(n, rs.ops_known);
	int found = 0;
	for (int i = 0; i < n; i++)
		found |= !strcmp(names[i], "Variable");
	assert_true(found);
	flow_status_free(st);

	flow_shutdown();
	assert_int_equal(flow_init(&fo, NULL), 0);
	flow_registry_stats_get(&rs);
	assert_int_equal(rs.mode, FLOW_REGISTER_FULL);
	assert_int_equal(rs.ops_registered, rs.ops_known);
	assert_true(rs.registration_ns > 0);
}

typedef struct bad_case {
	flow_op_def def;
	flow_kernel_def ker;
	const char *needle;
} bad_case;

static void test_malformed_libraries(void **state)
{
	(void)state;
	flow_shutdown();
	flow_init_options fo = {.registration = FLOW_REGISTER_FULL};
	assert_int_equal(flow_init(&fo, NULL), 0);
	static bad_case cases[] = {
		{{.name = "BadKind", .attrs = "T: flaot"}, {"BadKind", FLOW_CPU, 0, k_nop}, "unknown kind 'flaot'"},
		{{.name = "BadType", .inputs = "x: U", .attrs = "T: type"}, {"BadType", FLOW_CPU, 0, k_nop},
		 "type 'U' is neither a dtype nor a type attr"},
		{{.name = "BadDefault", .attrs = "n: int = abc"}, {"BadDefault", FLOW_CPU, 0, k_nop}, "bad default 'abc'"},
		{{.name = "BadSet", .attrs = "T: {f32,f17}"}, {"BadSet", FLOW_CPU, 0, k_nop}, "unknown dtype 'f17'"},
		{{.name = "DupArg", .inputs = "x: f32, x: f32"}, {"DupArg", FLOW_CPU, 0, k_nop}, "argument 'x' declared twice"},
		{{.name = "BadKer", .inputs = "x: T", .attrs = "T: {f32}"}, {"BadKer", FLOW_CPU, FLOW_I64, k_nop},
		 "registered for i64, which attr 'T' does not allow"},
		{{.name = "Orphan"}, {"NotAnOp", FLOW_CPU, 0, k_nop}, "unknown op 'NotAnOp'"},
		{{.name = "NoOp"}, {"NoOp", FLOW_CPU, 0, k_nop}, "op 'NoOp' defined twice"},
		{{.name = "ListLen", .inputs = "v: N*f32", .attrs = "N: float"}, {"ListLen", FLOW_CPU, 0, k_nop},
		 "list length 'N' is not an int attr"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		flow_op_lib *lib = malloc(sizeof *lib);
		*lib = (flow_op_lib){"badlib", &cases[i].def, 1, &cases[i].ker, 1};
		flow_status *st = flow_status_new();
		assert_int_equal(flow_registry_add_library(lib, st), -1);
		if (!strstr(flow_status_message(st), cases[i].needle))
			fail_msg("case %zu: '%s' lacks '%s'", i, flow_status_message(st), cases[i].needle);
		flow_status_free(st);
		/* A rejected library is rolled back: the registry stays whole. */
		free(lib);
		flow_registry_stats rs;
		flow_registry_stats_get(&rs);
		assert_int_equal(rs.ops_registered, rs.ops_known);
		assert_int_equal(rs.kernels_registered, rs.kernels_known);
	}
	/* A good library with list inputs and defaults registers and works. */
	static const flow_op_def good = {.name = "GoodList", .inputs = "v: N*T", .outputs = "o: T",
					 .attrs = "T: {f32,f64} = f32; N: int >= 1; scale: float = 0.5; dims: ints = [1,2]"};
	static const flow_kernel_def gk = {"GoodList", FLOW_CPU, FLOW_F32, k_nop};
	static const flow_op_lib glib = {"goodlib", &good, 1, &gk, 1};
	flow_status *st = flow_status_new();
	assert_int_equal(flow_registry_add_library(&glib, st), 0);
	const flow_registered_op *r = flow_registry_lookup("GoodList", st);
	assert_non_null(r);
	assert_int_equal(r->n_attrs, 4);
	assert_int_equal(r->inputs[0].list_attr, 1);
	assert_int_equal(r->attrs[2].def.kind, FLOW_ATTR_FLOAT);
	assert_true(r->attrs[2].def.u.f == 0.5);
	assert_int_equal(r->attrs[3].def.u.ints.n, 2);
	flow_graph *g = flow_graph_new();
	flow_output c[3] = {flow_const_f32(g, "a", 1, st), flow_const_f32(g, "b", 2, st), flow_const_f32(g, "c", 3, st)};
	flow_op_desc *d = flow_op_new(g, "GoodList", "gl");
	flow_op_add_input_list(d, c, 3);
	flow_op *op = flow_op_finish(d, st);
	assert_non_null(op);
	int64_t nv = 0;
	assert_int_equal(flow_op_get_attr_int(op, "N", &nv), 0);
	assert_int_equal(nv, 3);
	/* N below its minimum. */
	d = flow_op_new(g, "GoodList", "gl0");
	flow_op_add_input_list(d, c, 0);
	assert_null(flow_op_finish(d, st));
	assert_non_null(strstr(flow_status_message(st), "attr 'N' = 0 below minimum 1"));
	flow_graph_free(g);
	flow_status_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_vs_lite),
		cmocka_unit_test(test_malformed_libraries),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	flow_shutdown();
	return rc;
}
