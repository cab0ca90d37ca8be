/* The statistics behind the rules, on inputs with known answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "diag_stats.h"
#include "testutil.h"

static void test_median_mad(void **state)
{
	(void)state;
	double odd[] = {5, 1, 3};
	double even[] = {4, 1, 3, 2};
	assert_float_equal(diag_median(odd, 3), 3, 1e-12);
	assert_float_equal(diag_median(even, 4), 2.5, 1e-12);
	assert_float_equal(odd[0], 5, 0); /* input left alone */
	/* One wild outlier moves neither the median nor the MAD much. */
	double x[] = {10, 11, 9, 10, 12, 8, 10, 1000};
	assert_float_equal(diag_median(x, 8), 10, 1e-12);
	assert_float_equal(diag_mad(x, 8), 1, 1e-12);
	assert_float_equal(diag_robust_sigma(x, 8), 1.4826, 1e-12);
	assert_float_equal(diag_median(x, 0), 0, 0);
}

static void test_distributions(void **state)
{
	(void)state;
	assert_float_equal(diag_normal_cdf(1.959964), 0.975, 1e-6);
	assert_float_equal(diag_normal_cdf(0), 0.5, 1e-12);
	assert_float_equal(diag_betai(2, 3, 0.5), 0.6875, 1e-10);
	/* Student t critical values: p = 0.05 at t(10) = 2.228139, p = 0.01 at t(5) = 4.032143 */
	assert_float_equal(diag_t_p_two_sided(2.228139, 10), 0.05, 1e-6);
	assert_float_equal(diag_t_p_two_sided(4.032143, 5), 0.01, 1e-6);
	assert_float_equal(diag_t_p_two_sided(0, 7), 1.0, 1e-12);
	assert_float_equal(diag_t_p_two_sided(INFINITY, 7), 0.0, 0);
}

static void test_linreg(void **state)
{
	(void)state;
	double x[50], y[50];
	for (int i = 0; i < 50; i++) {
		x[i] = i;
		y[i] = 3 + 0.5 * i;
	}
	diag_linreg f;
	assert_int_equal(diag_linreg_fit(x, y, 50, &f), 0);
	assert_float_equal(f.slope, 0.5, 1e-12);
	assert_float_equal(f.intercept, 3, 1e-9);
	assert_float_equal(f.r2, 1, 1e-12);
	assert_true(f.p_two_sided < 1e-12);
	/* Reference values from numpy.polyfit for this series. */
	double xs[] = {1, 2, 3, 4, 5, 6, 7, 8};
	double ys[] = {2.1, 3.9, 6.2, 7.8, 10.1, 12.2, 13.8, 16.1};
	assert_int_equal(diag_linreg_fit(xs, ys, 8, &f), 0);
	assert_float_equal(f.slope, 1.9976190476, 1e-8);
	assert_float_equal(f.intercept, 0.0357142857, 1e-8);
	assert_true(f.t > 50);
	/* Degenerate inputs are refused, not divided by zero. */
	double same[] = {1, 1, 1, 1};
	assert_int_equal(diag_linreg_fit(same, ys, 4, &f), -1);
	assert_int_equal(diag_linreg_fit(xs, ys, 2, &f), -1);
}

static void test_mann_kendall(void **state)
{
	(void)state;
	double up[10];
	for (int i = 0; i < 10; i++)
		up[i] = i;
	diag_mk m;
	assert_int_equal(diag_mann_kendall(up, 10, &m), 0);
	assert_float_equal(m.s, 45, 0);
	assert_float_equal(m.var_s, 125, 1e-9);
	assert_float_equal(m.z, 44 / sqrt(125), 1e-9);
	assert_float_equal(m.tau, 1, 1e-12);
	assert_true(m.p_up < 1e-4);
	assert_true(m.p_down > 0.999);
	/* Ties shrink the variance: [1 2 2 3]: S = 5, var = (156 - 18) / 18. */
	double t[] = {1, 2, 2, 3};
	assert_int_equal(diag_mann_kendall(t, 4, &m), 0);
	assert_float_equal(m.s, 5, 0);
	assert_float_equal(m.var_s, 138.0 / 18, 1e-12);
	/* All equal: no trend, no division by zero. */
	double flat[] = {7, 7, 7, 7, 7, 7};
	assert_int_equal(diag_mann_kendall(flat, 6, &m), 0);
	assert_float_equal(m.p_up, 1, 0);
	assert_int_equal(diag_mann_kendall(flat, 3, &m), -1);
}

static void test_mann_kendall_matches_pairs(void **state)
{
	(void)state;
	/* The O(n log n) S equals the O(n^2) definition, ties included. */
	uint64_t seed = 5;
	double y[257];
	for (int rep = 0; rep < 20; rep++) {
		int n = 4 + rep * 12;
		for (int i = 0; i < n; i++)
			y[i] = (double)(int)(trand_uniform(&seed) * (rep % 2 ? 5 : 1000)) + 0.01 * i * (rep % 3 == 0);
		double s = 0;
		for (int i = 0; i < n - 1; i++)
			for (int j = i + 1; j < n; j++)
				s += (y[j] > y[i]) - (y[j] < y[i]);
		diag_mk m;
		assert_int_equal(diag_mann_kendall(y, n, &m), 0);
		assert_float_equal(m.s, s, 0);
	}
}

static void test_mann_kendall_noise(void **state)
{
	(void)state;
	/* Pure noise over many seeds: the one-sided p stays above 0.001 (the
	 * growth rule's threshold) for all of them. */
	uint64_t seed = 42;
	double y[300];
	int significant = 0;
	for (int rep = 0; rep < 40; rep++) {
		for (int i = 0; i < 300; i++)
			y[i] = 1e6 * (1 + 0.2 * trand_normal(&seed));
		diag_mk m;
		diag_mann_kendall(y, 300, &m);
		significant += m.p_up < 0.001;
	}
	assert_int_equal(significant, 0);
}

static void test_theil_sen(void **state)
{
	(void)state;
	double x[100], y[100];
	for (int i = 0; i < 100; i++) {
		x[i] = i;
		y[i] = 10 + 2 * i;
	}
	/* 20% of the points are wild outliers: least squares would tilt,
	 * Theil-Sen does not. */
	for (int i = 0; i < 100; i += 5)
		y[i] = 5000;
	double b, a;
	assert_int_equal(diag_theil_sen(x, y, 100, 0, &b, &a), 0);
	assert_float_equal(b, 2, 0.05);
	assert_float_equal(a, 10, 2);
	/* A long series is reduced to block medians; the slope survives. */
	static double lx[5000], ly[5000];
	uint64_t seed = 7;
	for (int i = 0; i < 5000; i++) {
		lx[i] = i;
		ly[i] = 100 + 0.3 * i + trand_normal(&seed);
	}
	assert_int_equal(diag_theil_sen(lx, ly, 5000, 300, &b, &a), 0);
	assert_float_equal(b, 0.3, 0.01);
	assert_float_equal(a, 100, 3);
	assert_int_equal(diag_theil_sen(lx, ly, 2, 0, &b, &a), -1);
}

static void test_correlation(void **state)
{
	(void)state;
	double x[] = {1, 2, 3, 4, 5, 6}, y[] = {2, 4, 6, 8, 10, 12}, z[] = {1, 4, 9, 16, 25, 1e9};
	assert_true(fabs(diag_pearson(x, y, 6) - 1) < 1e-12);
	/* monotonic with a spike: Spearman 1, Pearson much less */
	assert_true(fabs(diag_spearman(x, z, 6) - 1) < 1e-12);
	assert_true(diag_pearson(x, z, 6) < 0.7);
	/* ties averaged: ranks of {1,1,2} are {1.5,1.5,3} */
	double t1[] = {1, 1, 2, 3}, t2[] = {1, 1, 2, 3};
	assert_true(fabs(diag_spearman(t1, t2, 4) - 1) < 1e-12);
	/* non-finite pairs dropped; fewer than 3 left or a constant side: NAN */
	double xn[] = {1, NAN, 3, 4}, yn[] = {2, 5, INFINITY, 8};
	assert_true(isnan(diag_spearman(xn, yn, 4)));
	double c[] = {3, 3, 3, 3};
	assert_true(isnan(diag_pearson(x, c, 4)));
	assert_true(isnan(diag_spearman(x, c, 4)));
	double rev[] = {6, 5, 4, 3, 2, 1};
	assert_true(fabs(diag_spearman(x, rev, 6) + 1) < 1e-12);
	assert_true(isnan(diag_spearman(x, y, 0)));
}

/* Mann-Whitney U against hand-computed values; the quantile as R's type 7. */
static void test_mann_whitney(void **state)
{
	(void)state;
	const double a[5] = {1, 2, 3, 4, 5}, b[5] = {6, 7, 8, 9, 10};
	diag_mw m;
	assert_int_equal(diag_mann_whitney(a, 5, b, 5, &m), 0);
	/* complete separation: U = 25, mean 12.5, var 25 * 11 / 12; z with the
	 * continuity correction (25 - 12.5 - 0.5) / 4.787 = 2.507, p = 0.0122 */
	assert_true(m.u == 25);
	assert_true(fabs(m.z - 2.5067) < 1e-3);
	assert_true(fabs(m.p_two_sided - 0.01218) < 2e-4);
	assert_true(m.hl_shift == 5);
	assert_int_equal(diag_mann_whitney(b, 5, a, 5, &m), 0);
	assert_true(m.u == 0 && m.z < 0 && m.hl_shift == -5);
	/* ties: every value equal is no evidence at all */
	const double c[4] = {3, 3, 3, 3};
	assert_int_equal(diag_mann_whitney(c, 4, c, 4, &m), 0);
	assert_true(m.p_two_sided == 1 && m.hl_shift == 0);
	/* a tie across the samples counts 1/2: a = {1, 2}, b = {2, 3}: pairs
	 * (1,2) (1,3) (2,3) count 1, (2,2) 1/2 */
	const double d[2] = {1, 2}, e[2] = {2, 3};
	assert_int_equal(diag_mann_whitney(d, 2, e, 2, &m), 0);
	assert_true(m.u == 3.5);
	assert_int_equal(diag_mann_whitney(d, 1, e, 2, &m), -1);
	const double q[4] = {4, 1, 3, 2};
	assert_true(fabs(diag_quantile(q, 4, 0.25) - 1.75) < 1e-12);
	assert_true(diag_quantile(q, 4, 0) == 1 && diag_quantile(q, 4, 1) == 4);
	assert_true(diag_quantile(q, 0, 0.5) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median_mad),
		cmocka_unit_test(test_mann_whitney),
		cmocka_unit_test(test_distributions),
		cmocka_unit_test(test_linreg),
		cmocka_unit_test(test_mann_kendall),
		cmocka_unit_test(test_mann_kendall_matches_pairs),
		cmocka_unit_test(test_mann_kendall_noise),
		cmocka_unit_test(test_theil_sen),
		cmocka_unit_test(test_correlation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
