/* The one step summary (diag_steps.h) on steps with known answers, and
 * from a store: what the report, stats, diff and the scenarios read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "diag_stats.h"
#include "diag_steps.h"
#include "testutil.h"

static pp_step_row *rows_of(const int64_t *dur, int n)
{
	pp_step_row *s = calloc((size_t)(n ? n : 1), sizeof *s);
	int64_t t = 0;
	for (int i = 0; i < n; i++) {
		s[i] = (pp_step_row){.step = i, .start_ns = t, .dur_ns = dur[i], .kind = PP_STEP};
		t += dur[i];
	}
	return s;
}

static void test_empty_and_one(void **state)
{
	(void)state;
	pp_step_summary ss;
	assert_int_equal(diag_step_summary_rows(NULL, 0, DIAG_STEPS_TREND, &ss), 0);
	assert_int_equal(ss.n, 0);
	assert_int_equal(ss.first_ns, -1);
	assert_true(ss.steady_median_ns < 0);
	assert_true(ss.head_median_ns < 0);
	int64_t one[] = {7 * MS};
	pp_step_row *s = rows_of(one, 1);
	assert_int_equal(diag_step_summary_rows(s, 1, DIAG_STEPS_TREND, &ss), 0);
	assert_int_equal(ss.n, 1);
	assert_int_equal(ss.n_steady, 0);
	assert_int_equal(ss.first_ns, 7 * MS);
	assert_true(ss.steady_median_ns < 0); /* no steady step: none */
	assert_int_equal(ss.steady_max_ns, 0);
	assert_int_equal(ss.has_trend, 0);
	assert_float_equal(ss.head_median_ns, 7 * MS, 0);
	free(s);
}

static void test_median_first_excluded(void **state)
{
	(void)state;
	/* first step 100 ms; steady 3, 1, 4, 2 ms: median 2.5 ms, printed whole */
	int64_t d[] = {100 * MS, 3 * MS, 1 * MS, 4 * MS, 2 * MS + 1};
	pp_step_row *s = rows_of(d, 5);
	pp_step_summary ss;
	assert_int_equal(diag_step_summary_rows(s, 5, DIAG_STEPS_TREND, &ss), 0);
	assert_int_equal(ss.n, 5);
	assert_int_equal(ss.n_steady, 4);
	assert_int_equal(ss.first_ns, 100 * MS);
	assert_float_equal(ss.steady_median_ns, 2.5 * MS + 0.5, 0);
	assert_int_equal((int64_t)ss.steady_median_ns, 2500000); /* (a + b) / 2 in whole ns */
	assert_int_equal(ss.steady_min_ns, 1 * MS);
	assert_int_equal(ss.steady_max_ns, 4 * MS);
	assert_int_equal(ss.steady_p99_ns, 4 * MS); /* fewer than 20 steady steps: the longest */
	assert_int_equal(ss.has_trend, 1);
	/* without the trend: the same numbers, no fit */
	pp_step_summary cheap;
	assert_int_equal(diag_step_summary_rows(s, 5, 0, &cheap), 0);
	assert_int_equal(cheap.has_trend, 0);
	assert_float_equal(cheap.slope_ns, 0, 0);
	assert_float_equal(cheap.steady_median_ns, ss.steady_median_ns, 0);
	assert_int_equal(cheap.steady_p99_ns, ss.steady_p99_ns);
	assert_int_equal(cheap.first_ns, ss.first_ns);
	free(s);
}

static void test_trend_p99_growth(void **state)
{
	(void)state;
	/* 1 + 200 steps growing 10 us per step from 1 ms, one preempted step */
	enum { N = 201 };
	int64_t d[N];
	d[0] = 50 * MS;
	for (int i = 1; i < N; i++)
		d[i] = 1 * MS + (i - 1) * 10 * US;
	d[100] = 80 * MS;
	pp_step_row *s = rows_of(d, N);
	pp_step_summary ss;
	assert_int_equal(diag_step_summary_rows(s, N, DIAG_STEPS_TREND, &ss), 0);
	assert_int_equal(ss.has_trend, 1);
	/* Theil-Sen ignores the spike: slope 10 us/step, line through step 1 at 1 ms */
	assert_float_equal(ss.slope_ns, 10 * US, 1e-6);
	assert_float_equal(ss.intercept_ns + ss.slope_ns * 1, 1 * MS, 1e-3);
	/* from step 2 (1 ms) to step 200 (2.99 ms): +199% */
	assert_float_equal(ss.growth_pct, 199.0, 1e-6);
	/* p99 of 200 steady steps: the 2nd longest (the 1st is the spike) */
	assert_int_equal(ss.steady_p99_ns, 1 * MS + 199 * 10 * US);
	assert_int_equal(ss.steady_max_ns, 80 * MS);
	/* the growth rule fits x = 0..m-1 over the same values: same slope */
	double *x = malloc((N - 1) * sizeof *x), *y = malloc((N - 1) * sizeof *y), b, a;
	for (int i = 0; i < N - 1; i++) {
		x[i] = i;
		y[i] = (double)d[i + 1];
	}
	assert_int_equal(diag_theil_sen(x, y, N - 1, DIAG_THEIL_SEN_CAP, &b, &a), 0);
	assert_float_equal(ss.slope_ns, b, 1e-9);
	/* first and last tenth of all 201 steps (20 each), first step included */
	double head[20], tail[20];
	for (int i = 0; i < 20; i++) {
		head[i] = (double)d[i];
		tail[i] = (double)d[N - 20 + i];
	}
	assert_float_equal(ss.head_median_ns, diag_median(head, 20), 0);
	assert_float_equal(ss.tail_median_ns, diag_median(tail, 20), 0);
	free(x);
	free(y);
	free(s);
}

static void test_from_store(void **state)
{
	(void)state;
	trec t;
	trec_open(&t, "step_summary");
	int64_t run = trec_run(&t, "steps", 1000 * MS);
	int64_t d[] = {40 * MS, 5 * MS, 6 * MS, 7 * MS, 8 * MS};
	trec_steps(&t, 10 * MS, d, 5, 1 * MS, NULL, NULL);
	int64_t quiet = trec_run(&t, "no steps", 10 * MS);
	pp_step_summary ss;
	assert_int_equal(diag_step_summary(t.st, run, DIAG_STEPS_TREND, &ss), 0);
	assert_int_equal(ss.n, 5);
	assert_int_equal(ss.first_ns, 40 * MS);
	assert_float_equal(ss.steady_median_ns, 6.5 * MS, 0);
	assert_float_equal(ss.slope_ns, 1 * MS, 1e-6);
	assert_int_equal(diag_step_summary(t.st, quiet, DIAG_STEPS_TREND, &ss), 0);
	assert_int_equal(ss.n, 0);
	assert_int_equal(ss.first_ns, -1);
	trec_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_and_one),
		cmocka_unit_test(test_median_first_excluded),
		cmocka_unit_test(test_trend_p99_growth),
		cmocka_unit_test(test_from_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
