/* Test-only op library: the few math ops the core tests need (MatMul,
 * BiasAdd, Relu, Add, Mul, _TestRandom). Each is registered only when the
 * linked op libraries do not already define it, so the tests run both before
 * and after flow-ops' kernels land (and then exercise the real ones). */
#ifndef OPS_FIXTURE_H
#define OPS_FIXTURE_H
#include "flow_internal.h"
void test_ops_register(void);
/* The status the tests of a suite share (test_graph, test_session): made,
 * with the test ops registered, by the group setup, freed by its teardown. */
extern flow_status *st;
int fixture_setup(void **state);
int fixture_teardown(void **state);
/* The error st holds: its code and a part of its message; then cleared. */
#define EXPECT_ERR(code, needle)                                                             \
	do {                                                                                 \
		assert_int_equal(flow_status_code(st), (code));                              \
		if (!strstr(flow_status_message(st), (needle)))                              \
			fail_msg("message '%s' lacks '%s'", flow_status_message(st), (needle)); \
		flow_status_clear(st);                                                       \
	} while (0)
/* Builds a row-major f32 tensor from values. */
flow_tensor *tf32(int ndim, const int64_t *dims, const float *v);
#endif
