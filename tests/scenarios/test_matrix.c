/* test_matrix.c — one scenario through `phaseprof run --quick`: every slow
 * variant's top finding is its expected one, no fix shows any of the
 * scenario's findings, and the coarse ratios hold.
 *
 *   test_scn_matrix PHASEPROF SCENARIO
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scn_internal.h"
#include "scn_testutil.h"

static const char *bin, *scenario;
static char *output;      /* the run's console output, shown on failure */
static pp_store *st;
static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "%s", scn_t_tmpdir());
	char db[128];
	snprintf(db, sizeof db, "%s/m.db", dir);
	const char *args[] = {"run", scenario, "--quick", "-o", db, NULL};
	int rc = scn_t_run(bin, args, NULL, &output);
	if (rc != 0) {
		fprintf(stderr, "phaseprof run %s --quick exited %d:\n%s", scenario, rc, output);
		return -1;
	}
	char err[256];
	st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
	if (!st) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (st)
		pp_store_close(st, NULL, 0);
	free(output);
	scn_t_rmdir(dir);
	return 0;
}

static int64_t run_of(const char *variant)
{
	int64_t id = scn_t_run_id(st, scenario, variant);
	if (id <= 0)
		fail_msg("no run for %s:%s\n%s", scenario, variant, output);
	return id;
}

static void test_findings(void **state)
{
	(void)state;
	const pp_scenario *s = pp_scenario_find(scenario);
	assert_non_null(s);
	int nr;
	const char *const *rules = pp_scenario_rules(s, &nr);
	for (int v = 0; v < pp_scenario_num_variants(s); v++) {
		const char *vn = pp_scenario_variant_name(s, v);
		int64_t id = run_of(vn);
		pp_finding *f;
		int n;
		assert_int_equal(pp_store_findings(st, id, &f, &n), 0);
		int kind = pp_scenario_variant_kind(s, v);
		if (kind == PP_SCN_VARIANT_SLOW) {
			const char *want = pp_scenario_variant_expect(s, v);
			if (n == 0 || strcmp(f[0].rule, want) != 0)
				fail_msg("%s:%s: top finding %s, expected %s\n%s", scenario, vn,
					 n ? f[0].rule : "(none)", want, output);
		} else if (kind == PP_SCN_VARIANT_FIX) {
			for (int i = 0; i < n; i++)
				for (int r = 0; r < nr; r++)
					if (strcmp(f[i].rule, rules[r]) == 0)
						fail_msg("%s:%s (a fix) shows %s: %s\n%s", scenario, vn,
							 rules[r], f[i].title, output);
		}
		free(f);
	}
}

/* The cost of steps [from, from+k) of a run (outermost steps, in order):
 * their minimum. On a loaded 2-core machine preemption only ever adds time
 * to a step, so the fastest of a window is the robust estimate of what the
 * window's steps cost (as benchmark tools report minimums). */
static double window(int64_t run, int from, int k, int *n_steps)
{
	scn_series t;
	assert_int_equal(scn_steps(st, run, &t), 0);
	*n_steps = t.n;
	if (from < 0)
		from = t.n + from;
	assert_true(from >= 0 && from + k <= t.n);
	double m = t.v[from];
	for (int i = from + 1; i < from + k; i++)
		m = t.v[i] < m ? t.v[i] : m;
	scn_series_free(&t);
	return m;
}

static void ratio_at_least(const char *what, double a, double b, double min)
{
	if (!(a >= min * b))
		fail_msg("%s: %.0f ns vs %.0f ns, x%.2f < x%.2f\n%s", what, a, b, b > 0 ? a / b : 0,
			 min, output);
}

static void within(const char *what, double a, double b, double lo, double hi)
{
	double r = b > 0 ? a / b : 0;
	if (r < lo || r > hi)
		fail_msg("%s: %.0f ns vs %.0f ns, x%.2f outside [%.2f, %.2f]\n%s", what, a, b, r, lo, hi,
			 output);
}

static void test_ratios(void **state)
{
	(void)state;
	int n;
	if (strcmp(scenario, "repeated-init") == 0) {
		/* slow: the last iterations take at least 3x the first */
		int64_t r = run_of("slow");
		double first = window(r, 0, 5, &n), last = window(r, -5, 5, &n);
		assert_int_equal(n, 50);
		ratio_at_least("repeated-init slow, last 5 vs first 5", last, first, 3);
		/* fixes: flat, last 10 vs first 10 within +-30% */
		static const char *const fixes[] = {"one-session", "traced"};
		for (int i = 0; i < 2; i++) {
			int64_t f = run_of(fixes[i]);
			double a = window(f, 0, 10, &n), b = window(f, -10, 10, &n);
			within(fixes[i], b, a, 0.7, 1.3);
		}
	} else if (strcmp(scenario, "growing-graph") == 0) {
		int64_t r = run_of("slow");
		double first = window(r, 0, 100, &n), last = window(r, -100, 100, &n);
		assert_int_equal(n, 1000);
		ratio_at_least("growing-graph slow, last 100 vs first 100", last, first, 3);
		static const char *const fixes[] = {"build-once", "traced", "finalized", "eager"};
		for (int i = 0; i < 4; i++) {
			int64_t f = run_of(fixes[i]);
			/* flat: steps of a few microseconds, so allow noise but no growth */
			double a = window(f, 1, 100, &n), b = window(f, -100, 100, &n);
			within(fixes[i], b, a, 0.0, 1.5);
		}
		/* the finalized graph refused the in-loop op with a clear error */
		assert_true(scn_t_has(output, "finalized"));
	} else if (strcmp(scenario, "first-step") == 0) {
		pp_scn_measure m;
		assert_int_equal(pp_scenario_measure(st, run_of("slow"), &m), 0);
		ratio_at_least("first-step slow, first vs median later step", (double)m.first_step_ns,
			       (double)m.median_step_ns, 5);
		assert_int_equal(pp_scenario_measure(st, run_of("warm-up"), &m), 0);
		within("first-step warm-up, first vs median later step", (double)m.first_step_ns,
		       (double)m.median_step_ns, 0.0, 2.0);
	} else if (strcmp(scenario, "retracing") == 0) {
		int64_t r = run_of("slow");
		double calls = scn_meta_num(st, r, "retracing.calls", 0);
		assert_true(calls >= 10);
		/* a retrace per call, and the warning */
		assert_float_equal(scn_meta_num(st, r, "retracing.traces", 0), calls, 0);
		assert_true(scn_meta_num(st, r, "retracing.warnings", 0) >= 1);
		int64_t nt = 0;
		scn_kind_total(st, r, PP_RETRACE, &nt);
		assert_int_equal(nt, (int64_t)calls);
		/* the relaxed signature: one trace */
		assert_float_equal(scn_meta_num(st, run_of("relaxed"), "retracing.traces", 0), 1, 0);
		assert_float_equal(scn_meta_num(st, run_of("relaxed"), "retracing.warnings", -1), 0, 0);
	} else {
		/* model-init, startup, alloc-churn: no ratio in the issue; their
		 * measured figures and claims must be there */
		int64_t r = run_of("slow");
		pp_scn_measure m;
		assert_int_equal(pp_scenario_measure(st, r, &m), 0);
		assert_true(m.measured_ns > 0);
	}
	/* the summary names the claims with a verdict */
	assert_true(scn_t_has(output, "the write-up's claims:") ||
		    strcmp(scenario, "transfer") == 0);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s PHASEPROF SCENARIO\n", argv[0]);
		return 2;
	}
	bin = argv[1];
	scenario = argv[2];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_findings),
		cmocka_unit_test(test_ratios),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
