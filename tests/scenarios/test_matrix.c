/* test_matrix.c — one scenario through `phaseprof run --quick`: every slow
 * variant's top finding is its expected one, no fix shows any of the
 * scenario's findings nor any moderate or high finding at all, and the
 * issue's coarse ratios hold.
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
static char failure[4096]; /* what the current attempt got wrong ("" = nothing) */

#define CHECK_FAIL(...)                                                                \
	do {                                                                           \
		if (!failure[0])                                                       \
			snprintf(failure, sizeof failure, __VA_ARGS__);                \
	} while (0)

static int attempt_setup(void)
{
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

static void attempt_teardown(void)
{
	if (st)
		pp_store_close(st, NULL, 0);
	st = NULL;
	free(output);
	output = NULL;
	scn_t_rmdir(dir);
}

static int64_t run_of(const char *variant)
{
	int64_t id = scn_t_run_id(st, scenario, variant);
	if (id <= 0)
		CHECK_FAIL("no run for %s:%s", scenario, variant);
	return id;
}

static void check_findings(void)
{
	const pp_scenario *s = pp_scenario_find(scenario);
	if (!s) {
		CHECK_FAIL("no scenario %s", scenario);
		return;
	}
	int nr;
	const char *const *rules = pp_scenario_rules(s, &nr);
	for (int v = 0; v < pp_scenario_num_variants(s); v++) {
		const char *vn = pp_scenario_variant_name(s, v);
		int64_t id = run_of(vn);
		pp_finding *f;
		int n;
		if (id <= 0 || pp_store_findings(st, id, &f, &n) != 0)
			continue;
		int kind = pp_scenario_variant_kind(s, v);
		if (kind == PP_SCN_VARIANT_SLOW) {
			const char *want = pp_scenario_variant_expect(s, v);
			/* startup's cause is registration; where its own measurement
			 * says the write-up's claim does not hold on this machine
			 * (registration a small part of start-up: 185 ops, ~1 ms), the
			 * rule is not held to naming it — the verdict says so. */
			int unsupported = strcmp(scenario, "startup") == 0 &&
					  scn_t_has(output, "[not supported] registering operators");
			if ((n == 0 || strcmp(f[0].rule, want) != 0) && !unsupported)
				CHECK_FAIL("%s:%s: top finding %s, expected %s", scenario, vn,
					   n ? f[0].rule : "(none)", want);
		} else if (kind == PP_SCN_VARIANT_FIX) {
			for (int i = 0; i < n; i++)
				for (int r = 0; r < nr; r++)
					if (strcmp(f[i].rule, rules[r]) == 0)
						CHECK_FAIL("%s:%s (a fix) shows %s: %s", scenario, vn,
							   rules[r], f[i].title);
			/* A fix is a healthy program: whatever rule it is, a moderate
			 * or high finding on it is a false alarm. */
			for (int i = 0; i < n; i++)
				if (strcmp(f[i].severity, "info") != 0)
					CHECK_FAIL("%s:%s (a fix) has a %s finding %s: %s", scenario, vn,
						   f[i].severity, f[i].rule, f[i].title);
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
	*n_steps = 0;
	if (run <= 0 || scn_steps(st, run, &t) != 0)
		return NAN;
	*n_steps = t.n;
	if (from < 0)
		from = t.n + from;
	if (from < 0 || from + k > t.n) {
		CHECK_FAIL("run %lld has %d steps, a window [%d, %d) does not fit", (long long)run,
			   t.n, from, from + k);
		scn_series_free(&t);
		return NAN;
	}
	double m = t.v[from];
	for (int i = from + 1; i < from + k; i++)
		m = t.v[i] < m ? t.v[i] : m;
	scn_series_free(&t);
	return m;
}

static void ratio_at_least(const char *what, double a, double b, double min)
{
	if (!(a >= min * b))
		CHECK_FAIL("%s: %.0f ns vs %.0f ns, x%.2f < x%.2f", what, a, b, b > 0 ? a / b : 0,
			   min);
}

static void within(const char *what, double a, double b, double lo, double hi)
{
	double r = b > 0 ? a / b : 0;
	if (!(r >= lo && r <= hi))
		CHECK_FAIL("%s: %.0f ns vs %.0f ns, x%.2f outside [%.2f, %.2f]", what, a, b, r, lo, hi);
}

static void check_equal(const char *what, double got, double want)
{
	if (got != want)
		CHECK_FAIL("%s: %g, expected %g", what, got, want);
}

static void check_ratios(void)
{
	int n;
	if (strcmp(scenario, "repeated-init") == 0) {
		/* slow: the last iterations take at least 3x the first */
		int64_t r = run_of("slow");
		double first = window(r, 0, 5, &n), last = window(r, -5, 5, &n);
		check_equal("repeated-init slow iterations", n, 50);
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
		check_equal("growing-graph slow iterations", n, 1000);
		ratio_at_least("growing-graph slow, last 100 vs first 100", last, first, 3);
		static const char *const fixes[] = {"build-once", "traced", "finalized", "eager"};
		for (int i = 0; i < 4; i++) {
			int64_t f = run_of(fixes[i]);
			/* flat: steps of a few microseconds, so allow noise but no growth */
			double a = window(f, 1, 100, &n), b = window(f, -100, 100, &n);
			within(fixes[i], b, a, 0.0, 1.5);
		}
		/* the finalized graph refused the in-loop op with a clear error */
		if (!scn_t_has(output, "finalized"))
			CHECK_FAIL("no word of the finalized graph in the output");
	} else if (strcmp(scenario, "first-step") == 0) {
		pp_scn_measure m = {0};
		pp_scenario_measure(st, run_of("slow"), &m);
		ratio_at_least("first-step slow, first vs median later step", (double)m.first_step_ns,
			       (double)m.median_step_ns, 5);
		memset(&m, 0, sizeof m);
		pp_scenario_measure(st, run_of("warm-up"), &m);
		within("first-step warm-up, first vs median later step", (double)m.first_step_ns,
		       (double)m.median_step_ns, 0.0, 2.0);
	} else if (strcmp(scenario, "retracing") == 0) {
		int64_t r = run_of("slow");
		double calls = scn_meta_num(st, r, "retracing.calls", 0);
		if (calls < 10)
			CHECK_FAIL("retracing slow: %g calls", calls);
		/* a retrace per call, and the warning */
		check_equal("retracing slow: traces", scn_meta_num(st, r, "retracing.traces", 0), calls);
		if (scn_meta_num(st, r, "retracing.warnings", 0) < 1)
			CHECK_FAIL("retracing slow: no frequent-retracing warning");
		int64_t nt = 0;
		scn_kind_total(st, r, PP_RETRACE, &nt);
		check_equal("retracing slow: retrace phases", (double)nt, calls);
		/* the relaxed signature: one trace, no warning */
		check_equal("relaxed: traces", scn_meta_num(st, run_of("relaxed"), "retracing.traces", 0), 1);
		check_equal("relaxed: warnings",
			    scn_meta_num(st, run_of("relaxed"), "retracing.warnings", -1), 0);
	} else {
		/* model-init, startup, alloc-churn: no ratio in the issue; their
		 * measured figures and claims must be there */
		pp_scn_measure m = {0};
		pp_scenario_measure(st, run_of("slow"), &m);
		if (m.measured_ns <= 0)
			CHECK_FAIL("%s slow: no measured figure", scenario);
	}
	/* the summary names the claims with a verdict */
	if (!scn_t_has(output, "the write-up's claims:"))
		CHECK_FAIL("the summary has no claims section");
}

/* The timing checks depend on a machine other jobs share: an attempt that
 * fails is repeated (up to five attempts), and the test fails only if all
 * do (each failure is printed). Setup failures are not retried. */
#define ATTEMPTS 5
static void test_matrix(void **state)
{
	(void)state;
	char first[4096] = "";
	for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
		failure[0] = 0;
		if (attempt_setup() != 0)
			fail_msg("phaseprof run %s --quick failed (see above)", scenario);
		check_findings();
		check_ratios();
		if (!failure[0]) {
			attempt_teardown();
			if (first[0])
				fprintf(stderr, "note: attempt %d passed after: %s\n", attempt, first);
			return;
		}
		fprintf(stderr, "attempt %d: %s\n--- output ---\n%s--------------\n", attempt,
			failure, output);
		snprintf(first, sizeof first, "%s", failure);
		attempt_teardown();
	}
	fail_msg("%s: %s", scenario, failure);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s PHASEPROF SCENARIO\n", argv[0]);
		return 2;
	}
	bin = argv[1];
	scenario = argv[2];
	/* a scenario this machine cannot run (transfer without a GPU) is skipped,
	 * saying why, not passed */
	const pp_scenario *sc = pp_scenario_find(scenario);
	char why[512];
	if (sc && !pp_scenario_available(sc, why, sizeof why)) {
		printf("skipped: %s cannot run here: %s\n", scenario, why);
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
