/* Test-only op library: the few math ops the core tests need (MatMul,
 * BiasAdd, Relu, Add, Mul, _TestRandom). Each is registered only when the
 * linked op libraries do not already define it, so the tests run both before
 * and after flow-ops' kernels land (and then exercise the real ones). */
#ifndef OPS_FIXTURE_H
#define OPS_FIXTURE_H
#include "flow_internal.h"
void test_ops_register(void);
/* Builds a row-major f32 tensor from values. */
flow_tensor *tf32(int ndim, const int64_t *dims, const float *v);
#endif
