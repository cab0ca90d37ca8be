/* Initialisers: Keras fans and limits, statistics, orthogonality, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "init.h"

static void stats(const float *x, size_t n, double *mean, double *var, double *amax)
{
	double s = 0, s2 = 0, a = 0;
	for (size_t i = 0; i < n; i++) {
		s += x[i];
		s2 += (double)x[i] * x[i];
		if (fabs(x[i]) > a)
			a = fabs(x[i]);
	}
	*mean = s / n;
	*var = s2 / n - *mean * *mean;
	*amax = a;
}

static void test_fans(void **state)
{
	(void)state;
	double fi, fo;
	int64_t d2[] = {784, 1024}, d4[] = {3, 3, 16, 32}, d1[] = {7};
	flow_init_fans(d2, 2, &fi, &fo);
	assert_true(fi == 784 && fo == 1024);
	flow_init_fans(d4, 4, &fi, &fo);
	assert_true(fi == 144 && fo == 288);
	flow_init_fans(d1, 1, &fi, &fo);
	assert_true(fi == 7 && fo == 7);
	flow_init_fans(NULL, 0, &fi, &fo);
	assert_true(fi == 1 && fo == 1);
	/* glorot limit sqrt(6/(fan_in+fan_out)) */
	assert_true(fabs(flow_init_scale(FLOW_INIT_GLOROT_UNIFORM, d2, 2) - 0.05761) < 5e-6);
	int64_t d3[] = {1024, 10};
	assert_true(fabs(flow_init_scale(FLOW_INIT_GLOROT_UNIFORM, d3, 2) - 0.07618) < 5e-6);
	assert_true(fabs(flow_init_scale(FLOW_INIT_HE_UNIFORM, d2, 2) - sqrt(6.0 / 784)) < 1e-12);
	assert_true(flow_init_scale(FLOW_INIT_ZEROS, d2, 2) == 0);
	assert_int_equal(flow_init_from_name("he_normal"), FLOW_INIT_HE_NORMAL);
	assert_int_equal(flow_init_from_name("nope"), -1);
	assert_string_equal(flow_init_name(FLOW_INIT_ORTHOGONAL), "orthogonal");
}

static void test_glorot_uniform(void **state)
{
	(void)state;
	int64_t shape[] = {784, 1024};
	size_t n = 784 * 1024;
	float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
	char err[160];
	double m, v, a, lim = sqrt(6.0 / (784 + 1024));
	assert_non_null(x); assert_non_null(y);
	flow_init_spec s = flow_init_default(FLOW_INIT_GLOROT_UNIFORM, 1234);
	s.nthreads = 1;
	assert_int_equal(flow_init_fill_f32(&s, shape, 2, x, err, sizeof err), 0);
	stats(x, n, &m, &v, &a);
	assert_true(a <= lim);
	assert_true(a > lim * 0.999);
	assert_true(fabs(m) < 1e-3);
	assert_true(fabs(v - lim * lim / 3) / (lim * lim / 3) < 0.01);
	s.nthreads = 2;
	assert_int_equal(flow_init_fill_f32(&s, shape, 2, y, err, sizeof err), 0);
	assert_memory_equal(x, y, n * sizeof *x);
	free(x); free(y);
}

static void test_normals(void **state)
{
	(void)state;
	int64_t shape[] = {512, 256};
	size_t n = 512 * 256;
	float *x = malloc(n * sizeof *x);
	char err[160];
	double m, v, a;
	assert_non_null(x);
	struct { flow_init_kind k; double var; } cases[] = {
		{FLOW_INIT_GLOROT_NORMAL, 2.0 / (512 + 256)},
		{FLOW_INIT_HE_NORMAL, 2.0 / 512},
		{FLOW_INIT_LECUN_NORMAL, 1.0 / 512},
	};
	for (int c = 0; c < 3; c++) {
		flow_init_spec s = flow_init_default(cases[c].k, 77);
		assert_int_equal(flow_init_fill_f32(&s, shape, 2, x, err, sizeof err), 0);
		stats(x, n, &m, &v, &a);
		double sd = flow_init_scale(cases[c].k, shape, 2);
		assert_true(a < 2 * sd);               /* truncated at 2 stddev */
		assert_true(fabs(v - cases[c].var) / cases[c].var < 0.02);
		assert_true(fabs(m) < 3 * sqrt(cases[c].var / n) + 1e-4);
	}
	flow_init_spec s = flow_init_default(FLOW_INIT_HE_UNIFORM, 3);
	assert_int_equal(flow_init_fill_f32(&s, shape, 2, x, err, sizeof err), 0);
	stats(x, n, &m, &v, &a);
	assert_true(a <= sqrt(6.0 / 512));
	assert_true(fabs(v - 2.0 / 512) / (2.0 / 512) < 0.02);
	s = flow_init_default(FLOW_INIT_RANDOM_NORMAL, 3);
	s.mean = 2;
	s.stddev = 0.5;
	assert_int_equal(flow_init_fill_f32(&s, shape, 2, x, err, sizeof err), 0);
	stats(x, n, &m, &v, &a);
	assert_true(fabs(m - 2) < 0.01 && fabs(v - 0.25) < 0.01);
	s = flow_init_default(FLOW_INIT_TRUNCATED_NORMAL, 3);
	s.stddev = 1;
	assert_int_equal(flow_init_fill_f32(&s, shape, 2, x, err, sizeof err), 0);
	stats(x, n, &m, &v, &a);
	assert_true(a < 2 && fabs(v - 0.773741) < 0.02);
	s = flow_init_default(FLOW_INIT_RANDOM_UNIFORM, 3);
	assert_int_equal(flow_init_fill_f32(&s, shape, 2, x, err, sizeof err), 0);
	stats(x, n, &m, &v, &a);
	assert_true(a <= 0.05 && fabs(v - 0.01 / 12) < 1e-4);
	free(x);
}

static void test_constants(void **state)
{
	(void)state;
	int64_t shape[] = {3, 5};
	float x[15];
	double d[15];
	char err[160];
	flow_init_spec s = flow_init_default(FLOW_INIT_ONES, 0);
	assert_int_equal(flow_init_fill_f32(&s, shape, 2, x, err, sizeof err), 0);
	for (int i = 0; i < 15; i++)
		assert_true(x[i] == 1.0f);
	s.kind = FLOW_INIT_CONSTANT;
	s.value = -2.5;
	assert_int_equal(flow_init_fill_f64(&s, shape, 2, d, err, sizeof err), 0);
	for (int i = 0; i < 15; i++)
		assert_true(d[i] == -2.5);
	s.kind = FLOW_INIT_ZEROS;
	assert_int_equal(flow_init_fill_f32(&s, shape, 2, x, err, sizeof err), 0);
	for (int i = 0; i < 15; i++)
		assert_true(x[i] == 0.0f);
}

static void check_orthogonal_f32(int64_t rows, int64_t cols, double gain)
{
	int64_t shape[] = {rows, cols};
	float *q = malloc((size_t)(rows * cols) * sizeof *q);
	char err[160];
	assert_non_null(q);
	flow_init_spec s = flow_init_default(FLOW_INIT_ORTHOGONAL, 11);
	s.gain = gain;
	assert_int_equal(flow_init_fill_f32(&s, shape, 2, q, err, sizeof err), 0);
	/* the smaller Gram matrix is gain^2 * I */
	int byrows = rows < cols;
	int64_t k = byrows ? rows : cols, len = byrows ? cols : rows;
	for (int64_t i = 0; i < k; i++)
		for (int64_t j = 0; j < k; j++) {
			double dot = 0;
			for (int64_t t = 0; t < len; t++) {
				double a = byrows ? q[i * cols + t] : q[t * cols + i];
				double b = byrows ? q[j * cols + t] : q[t * cols + j];
				dot += a * b;
			}
			assert_true(fabs(dot - (i == j ? gain * gain : 0)) < 1e-4 * gain * gain * 10);
		}
	free(q);
}

static void test_orthogonal(void **state)
{
	(void)state;
	check_orthogonal_f32(64, 32, 1.0);
	check_orthogonal_f32(32, 64, 1.0);
	check_orthogonal_f32(40, 40, 2.0);
	int64_t conv[] = {3, 3, 4, 8};
	double d[3 * 3 * 4 * 8];
	char err[160];
	flow_init_spec s = flow_init_default(FLOW_INIT_ORTHOGONAL, 2);
	assert_int_equal(flow_init_fill_f64(&s, conv, 4, d, err, sizeof err), 0);
	/* 36 rows x 8 cols: columns orthonormal */
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 8; j++) {
			double dot = 0;
			for (int t = 0; t < 36; t++)
				dot += d[t * 8 + i] * d[t * 8 + j];
			assert_true(fabs(dot - (i == j)) < 1e-10);
		}
	int64_t v[] = {5};
	assert_int_equal(flow_init_fill_f64(&s, v, 1, d, err, sizeof err), -1);
	assert_non_null(strstr(err, "rank >= 2"));
}

static void test_errors(void **state)
{
	(void)state;
	char err[160];
	float x[4];
	int64_t bad[] = {2, -1};
	flow_init_spec s = flow_init_default(FLOW_INIT_GLOROT_UNIFORM, 0);
	assert_int_equal(flow_init_fill_f32(&s, bad, 2, x, err, sizeof err), -1);
	assert_non_null(strstr(err, "dimension 1 is negative"));
	int64_t ok[] = {2, 2};
	s = flow_init_default(FLOW_INIT_RANDOM_UNIFORM, 0);
	s.minval = 1;
	s.maxval = 1;
	assert_int_equal(flow_init_fill_f32(&s, ok, 2, x, err, sizeof err), -1);
	assert_non_null(strstr(err, "maxval"));
	s.kind = (flow_init_kind)99;
	assert_int_equal(flow_init_fill_f32(&s, ok, 2, x, err, sizeof err), -1);
	assert_non_null(strstr(err, "unknown initialiser"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fans),
		cmocka_unit_test(test_glorot_uniform),
		cmocka_unit_test(test_normals),
		cmocka_unit_test(test_constants),
		cmocka_unit_test(test_orthogonal),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
