/* The diff engine: regressions beyond step noise, noise-only changes, runs
 * without steps, two databases, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "diagnostics.h"
#include "fixtures.h"

static trec T;

static const pp_diff_row *row(const pp_diff *d, const char *name)
{
	for (int i = 0; i < d->n; i++)
		if (strcmp(d->rows[i].name, name) == 0)
			return &d->rows[i];
	fail_msg("no row %s", name);
	return NULL;
}

static void test_regression_and_improvement(void **state)
{
	(void)state;
	int64_t a = fixture_run(&T, "base", 40, 2 * MS, 0.03, 10 * MS, 20 * MS, 1);
	int64_t b = fixture_run(&T, "slower", 40, 3 * MS, 0.03, 10200 * US, 8 * MS, 2);
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	assert_true(d.noise_from_steps);
	assert_true(d.noise_rel > 0.01 && d.noise_rel < 0.06);
	assert_int_equal(d.n_steps_a, 40);
	/* first rows: total, then step median, then kinds by size */
	assert_string_equal(d.rows[0].name, "total");
	assert_string_equal(d.rows[1].name, "step median");
	assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_REGRESSION);
	assert_true(row(&d, "step median")->ratio > 1.4 && row(&d, "step median")->ratio < 1.6);
	assert_int_equal(row(&d, "total")->verdict, PP_DIFF_REGRESSION);
	assert_int_equal(row(&d, "weight_load")->verdict, PP_DIFF_IMPROVEMENT);
	assert_int_equal(row(&d, "compile")->verdict, PP_DIFF_SAME); /* +2% */
	assert_int_equal(row(&d, "runtime_init")->verdict, PP_DIFF_SAME);
	assert_int_equal(d.regressions, 2);
	assert_int_equal(d.improvements, 1);
	assert_string_equal(pp_diff_verdict_name(PP_DIFF_REGRESSION), "regression");
	pp_diff_free(&d);
}

static void test_noise_only(void **state)
{
	(void)state;
	/* The same program twice with 10% step noise: nothing is flagged. */
	for (uint64_t seed = 10; seed < 20; seed += 2) {
		int64_t a = fixture_run(&T, "again 1", 60, 2 * MS, 0.1, 10 * MS, 20 * MS, seed);
		int64_t b = fixture_run(&T, "again 2", 60, 2 * MS, 0.1, 10 * MS, 20 * MS, seed + 1);
		pp_diff d;
		assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
		for (int i = 0; i < d.n; i++)
			if (d.rows[i].verdict != PP_DIFF_SAME)
				fail_msg("seed %d: %s flagged %s (%lld -> %lld, threshold %lld)", (int)seed,
					 d.rows[i].name, pp_diff_verdict_name(d.rows[i].verdict),
					 (long long)d.rows[i].ns_a, (long long)d.rows[i].ns_b,
					 (long long)d.rows[i].threshold_ns);
		pp_diff_free(&d);
	}
}

static void test_noisy_steps_hide_small_change(void **state)
{
	(void)state;
	/* A 10% slower phase is flagged when steps are steady (1% noise) but not
	 * when they swing by 20%: the threshold follows the measured noise. */
	int64_t a = fixture_run(&T, "quiet a", 50, 2 * MS, 0.01, 10 * MS, 20 * MS, 40);
	int64_t b = fixture_run(&T, "quiet b", 50, 2 * MS, 0.01, 11 * MS, 20 * MS, 41);
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	assert_int_equal(row(&d, "compile")->verdict, PP_DIFF_REGRESSION);
	pp_diff_free(&d);
	a = fixture_run(&T, "loud a", 50, 2 * MS, 0.2, 10 * MS, 20 * MS, 42);
	b = fixture_run(&T, "loud b", 50, 2 * MS, 0.2, 11 * MS, 20 * MS, 43);
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	assert_int_equal(row(&d, "compile")->verdict, PP_DIFF_SAME);
	assert_true(row(&d, "compile")->threshold_ns > 1 * MS);
	pp_diff_free(&d);
}

static void test_noise_ignores_trend(void **state)
{
	(void)state;
	/* B's steps grow 1 -> 3 ms with 2% noise: the spread of its step times
	 * is large, but the noise between consecutive steps is still ~2%. */
	int64_t a = fixture_run(&T, "flat", 100, 1 * MS, 0.02, 10 * MS, 20 * MS, 70);
	trec_run(&T, "growing", 0);
	uint64_t seed = 71;
	int64_t now = 0;
	for (int i = 0; i < 100; i++) {
		int64_t d = (int64_t)(MS * (1 + 2.0 * i / 99) * (1 + 0.02 * trand_normal(&seed)));
		trec_span(&T, PP_STEP, "step", now, now + d, 0, i);
		now += d;
	}
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, T.st, T.run, &d), 0);
	assert_true(d.noise_rel < 0.05);
	assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_REGRESSION);
	pp_diff_free(&d);
}

static void test_no_steps(void **state)
{
	(void)state;
	int64_t a = fixture_run(&T, "no steps a", 0, 0, 0, 10 * MS, 20 * MS, 50);
	int64_t b = fixture_run(&T, "no steps b", 0, 0, 0, 10 * MS, 40 * MS, 51);
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	assert_false(d.noise_from_steps);
	assert_int_equal(row(&d, "weight_load")->verdict, PP_DIFF_REGRESSION);
	assert_int_equal(row(&d, "compile")->verdict, PP_DIFF_SAME);
	for (int i = 0; i < d.n; i++)
		assert_string_not_equal(d.rows[i].name, "step median");
	pp_diff_free(&d);
}

static void test_two_databases_and_errors(void **state)
{
	(void)state;
	int64_t a = fixture_run(&T, "here", 20, 2 * MS, 0.02, 10 * MS, 0, 60);
	trec other;
	trec_open(&other, "other.db");
	int64_t b = fixture_run(&other, "there", 20, 2 * MS, 0.02, 10 * MS, 5 * MS, 61);
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, other.st, b, &d), 0);
	/* a phase only B has is a regression with no ratio */
	assert_int_equal(row(&d, "weight_load")->count_a, 0);
	assert_int_equal(row(&d, "weight_load")->verdict, PP_DIFF_REGRESSION);
	assert_true(row(&d, "weight_load")->ratio == 0);
	pp_diff_free(&d);
	assert_int_equal(pp_diag_diff(T.st, a, other.st, 4242, &d), -1);
	assert_non_null(strstr(d.error, "other.db: no run 4242"));
	pp_diff_free(&d);
	assert_int_equal(pp_diag_diff(T.st, 4343, other.st, b, &d), -1);
	assert_non_null(strstr(d.error, "no run 4343"));
	pp_diff_free(&d);
	trec_close(&other);
}

/* The gate: a rule fails only on the diff's own regression verdict AND a
 * growth above the user's limit; noise never fails it. */
static void test_gate(void **state)
{
	(void)state;
	int64_t a = fixture_run(&T, "base", 40, 2 * MS, 0.03, 10 * MS, 20 * MS, 1);
	int64_t b = fixture_run(&T, "slower", 40, 3 * MS, 0.03, 10200 * US, 8 * MS, 2);
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	pp_gate_rule rules[PP_GATE_MAX];
	int n = 0;
	char err[256];
	assert_int_equal(pp_gate_parse("step=20,compile=0", rules, PP_GATE_MAX, &n, err, sizeof err), 0);
	assert_int_equal(pp_gate_parse("weight_load=5%", rules, PP_GATE_MAX, &n, err, sizeof err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(rules[2].name, "weight_load");
	assert_true(rules[2].limit_pct == 5);
	pp_gate_check c[16];
	int nc = 0;
	/* step median +50% > 20%: fails; compile +2% is noise even at limit 0;
	 * weight_load improved: passes */
	assert_int_equal(pp_gate_eval(&d, rules, n, c, 16, &nc), 1);
	assert_int_equal(nc, 3);
	assert_string_equal(c[0].name, "step median");
	assert_true(c[0].failed && c[0].change_pct > 40 && c[0].change_pct < 60);
	assert_string_equal(c[1].name, "compile");
	assert_false(c[1].failed);
	assert_int_equal(c[1].verdict, PP_DIFF_SAME);
	assert_false(c[2].failed);
	/* a limit above the change passes the same regression */
	n = 0;
	assert_int_equal(pp_gate_parse("step=80", rules, PP_GATE_MAX, &n, err, sizeof err), 0);
	assert_int_equal(pp_gate_eval(&d, rules, n, c, 16, &nc), 0);
	/* a phase in neither run: a check that passes, marked absent */
	n = 0;
	assert_int_equal(pp_gate_parse("data_transfer=1", rules, PP_GATE_MAX, &n, err, sizeof err), 0);
	assert_int_equal(pp_gate_eval(&d, rules, n, c, 16, &nc), 0);
	assert_int_equal(nc, 1);
	assert_false(c[0].present);
	/* any: every row; total and step regressed by more than 10% */
	n = 0;
	assert_int_equal(pp_gate_parse("any=10", rules, PP_GATE_MAX, &n, err, sizeof err), 0);
	assert_int_equal(pp_gate_eval(&d, rules, n, c, 16, &nc), 2);
	assert_int_equal(nc, d.n);
	pp_diff_free(&d);

	/* the same program twice: nothing fails even at a 0% limit */
	int64_t a2 = fixture_run(&T, "again 1", 60, 2 * MS, 0.1, 10 * MS, 20 * MS, 10);
	int64_t b2 = fixture_run(&T, "again 2", 60, 2 * MS, 0.1, 10 * MS, 20 * MS, 11);
	assert_int_equal(pp_diag_diff(T.st, a2, T.st, b2, &d), 0);
	assert_int_equal(pp_gate_eval(&d, rules, n, c, 16, &nc), 0);
	pp_diff_free(&d);

	/* bad specs: one line naming what is wrong */
	const char *bad[] = {"", "total", "=5", "bogus=5", "step_median=5", "total=x", "total=-1",
			     "total=5,", "total=5%%", "total=nan", "step=5,,compile=1"};
	const char *why[] = {"needs KIND=PCT", "is not KIND=PCT", "is not KIND=PCT",
			     "unknown phase 'bogus'", "unknown phase", "not a percentage",
			     "not a percentage", NULL, "not a percentage", "not a percentage",
			     "is not KIND=PCT"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		n = 0;
		err[0] = 0;
		int rc = pp_gate_parse(bad[i], rules, PP_GATE_MAX, &n, err, sizeof err);
		if (!why[i]) { /* a trailing comma is harmless */
			assert_int_equal(rc, 0);
			continue;
		}
		if (rc != -1 || !strstr(err, why[i]))
			fail_msg("'%s': rc %d, error '%s', wanted '%s'", bad[i], rc, err, why[i]);
		assert_null(strchr(err, '\n'));
	}
}

static int setup(void **state)
{
	(void)state;
	trec_open(&T, "diff.db");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	trec_close(&T);
	return 0;
}

/* A run on a loaded machine: n steps of base ns (3% noise), a share
 * `loaded` of them stretched by one preemption of 40-100% of a step (load
 * adds time, never removes it). */
static int64_t loaded_run(const char *label, int n, double base, double loaded, uint64_t seed)
{
	trec_run(&T, label, 0);
	int64_t *dur = malloc((size_t)n * sizeof *dur);
	for (int i = 0; i < n; i++) {
		double d = base * (1 + 0.03 * trand_normal(&seed));
		if (trand_uniform(&seed) < loaded)
			d += base * (0.4 + 0.6 * trand_uniform(&seed));
		dur[i] = (int64_t)d;
	}
	trec_steps(&T, 0, dur, n, 10 * US, NULL, NULL);
	free(dur);
	return T.run;
}

/* The same program recorded twice, once beside a CPU hog: more of B's steps
 * are stretched, so its median moved by ~30%, far beyond the standard error
 * of a median of 60 steps (the old test flagged it). Its faster steps did not
 * move: not a regression. Each seed is a different load pattern. */
static void test_load_is_not_a_regression(void **state)
{
	(void)state;
	for (uint64_t seed = 100; seed < 120; seed += 2) {
		int64_t a = loaded_run("quiet", 60, 10 * MS, 0.1, seed);
		int64_t b = loaded_run("beside a hog", 60, 10 * MS, 0.45, seed + 1);
		pp_diff d;
		assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
		const pp_diff_row *r = row(&d, "step median");
		if (r->verdict != PP_DIFF_SAME)
			fail_msg("seed %d: step median %s (%lld -> %lld, p=%.2g, shift %.0f, q25 %.0f -> %.0f, "
				 "min effect %.0f)",
				 (int)seed, pp_diff_verdict_name(r->verdict), (long long)r->ns_a,
				 (long long)r->ns_b, d.step_p, d.step_shift_ns, d.step_q25_a, d.step_q25_b,
				 d.step_min_effect_ns);
		assert_int_equal(d.step_test, PP_DIFF_TEST_MANN_WHITNEY);
		pp_diff_free(&d);
	}
}

/* A genuinely slower program (2x step) under the same load patterns is
 * flagged, and 2x faster is an improvement; a 3% shift on quiet steps is
 * significant for the test with 200 steps but below the minimum effect. */
static void test_step_regression_beyond_load(void **state)
{
	(void)state;
	for (uint64_t seed = 200; seed < 210; seed += 2) {
		int64_t a = loaded_run("quiet", 60, 10 * MS, 0.1, seed);
		int64_t b = loaded_run("2x, beside a hog", 60, 20 * MS, 0.45, seed + 1);
		pp_diff d;
		assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
		assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_REGRESSION);
		assert_true(d.step_p < PP_DIFF_MW_ALPHA);
		assert_true(d.step_shift_ns > 9 * MS && d.step_shift_ns < 20 * MS); /* 10 ms, and load */
		pp_diff_free(&d);
		assert_int_equal(pp_diag_diff(T.st, b, T.st, a, &d), 0);
		assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_IMPROVEMENT);
		pp_diff_free(&d);
	}
	int64_t a = loaded_run("quiet", 200, 10 * MS, 0, 300);
	int64_t b = loaded_run("3% slower", 200, 10.3 * MS, 0, 301);
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	assert_true(d.step_p < PP_DIFF_MW_ALPHA);
	assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_SAME);
	pp_diff_free(&d);
}

/* Too few steps for the test: the row is judged by the thresholds, and the
 * diff says so. */
static void test_few_steps_no_test(void **state)
{
	(void)state;
	int64_t a = fixture_run(&T, "4 steps", 5, 2 * MS, 0.02, 10 * MS, 20 * MS, 80);
	int64_t b = fixture_run(&T, "4 slow steps", 5, 4 * MS, 0.02, 10 * MS, 20 * MS, 81);
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	assert_int_equal(d.step_test, PP_DIFF_TEST_THRESHOLD);
	assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_REGRESSION);
	pp_diff_free(&d);
}

/* A run whose steps carry their CPU time (step.cpu_ns, as pp_step_end
 * emits it): n steps of wall ns (3% noise) doing cpu ns of work, after a
 * weight_load of weight ns; with_cpu 0 leaves the counter out. */
static int64_t cpu_run(const char *label, int n, double wall, double cpu, int64_t weight, int with_cpu,
		       uint64_t seed)
{
	trec_run(&T, label, 0);
	int64_t now = 0;
	trec_span(&T, PP_WEIGHT_LOAD, "weights", now, now + weight, 0, -1);
	now += weight;
	for (int i = 0; i < n; i++) {
		int64_t d = (int64_t)(wall * (1 + 0.03 * trand_normal(&seed)));
		trec_span(&T, PP_STEP, "step", now, now + d, 0, i);
		if (with_cpu)
			trec_counter(&T, "step.cpu_ns", now + d - 1, cpu * (1 + 0.01 * trand_normal(&seed)));
		now += d + 5 * US;
	}
	char sql[128];
	snprintf(sql, sizeof sql, "UPDATE runs SET duration_ns = %lld WHERE id = %lld", (long long)now,
		 (long long)T.run);
	trec_exec(&T, sql);
	return T.run;
}

/* A hog that takes the program's CPU for the whole recording stretches
 * every step (the fast ones too) and every phase by the same factor: wall
 * time alone calls it a regression; the steps' CPU time says the program
 * did the same work, and the other rows are compared after the load. */
static void test_cpu_time_tells_load_from_regression(void **state)
{
	(void)state;
	int64_t a = cpu_run("quiet", 40, 10 * MS, 9 * MS, 20 * MS, 1, 400);
	int64_t b = cpu_run("beside a hog", 40, 18 * MS, 9 * MS, 36 * MS, 1, 401);
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	assert_true(d.step_cpu);
	assert_int_equal(d.step_wall_verdict, PP_DIFF_REGRESSION);
	assert_int_equal(d.step_cpu_verdict, PP_DIFF_SAME);
	assert_true(d.load_factor > 1.7 && d.load_factor < 1.9);
	for (int i = 0; i < d.n; i++)
		if (d.rows[i].verdict != PP_DIFF_SAME)
			fail_msg("beside a hog: %s flagged %s", d.rows[i].name,
				 pp_diff_verdict_name(d.rows[i].verdict));
	pp_diff_free(&d);

	/* twice the work per step: CPU and wall agree, no load */
	int64_t c = cpu_run("2x work", 40, 20 * MS, 18 * MS, 20 * MS, 1, 402);
	assert_int_equal(pp_diag_diff(T.st, a, T.st, c, &d), 0);
	assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_REGRESSION);
	assert_int_equal(d.step_cpu_verdict, PP_DIFF_REGRESSION);
	assert_true(d.load_factor > 0.9 && d.load_factor < 1.1);
	assert_int_equal(row(&d, "weight_load")->verdict, PP_DIFF_SAME);
	pp_diff_free(&d);

	/* a slower weight load beside the same load is still flagged */
	int64_t e = cpu_run("hog, 3x load", 40, 18 * MS, 9 * MS, 108 * MS, 1, 403);
	assert_int_equal(pp_diag_diff(T.st, a, T.st, e, &d), 0);
	assert_int_equal(row(&d, "weight_load")->verdict, PP_DIFF_REGRESSION);
	assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_SAME);
	pp_diff_free(&d);

	/* without CPU times the wall-time test alone decides */
	int64_t f = cpu_run("quiet, no cpu", 40, 10 * MS, 9 * MS, 20 * MS, 0, 404);
	int64_t g = cpu_run("hog, no cpu", 40, 18 * MS, 9 * MS, 36 * MS, 0, 405);
	assert_int_equal(pp_diag_diff(T.st, f, T.st, g, &d), 0);
	assert_false(d.step_cpu);
	assert_true(d.load_factor == 1);
	assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_REGRESSION);
	pp_diff_free(&d);
}

/* One torch MLP recorded twice, once beside two busy loops (A): its steps'
 * wall time 8.2 -> 4.1 ms and, from contention alone, their CPU time 3.8 ->
 * 2.7 ms. Both tests agreed on an "improvement" the program never had. With
 * the loads this different (wall per CPU x0.7), a CPU time that moved less
 * than contention makes (x1.5) is no evidence: the row is same, and the
 * header says why. A real halving of the work still is one. */
static void test_load_differs_contention_same(void **state)
{
	(void)state;
	int64_t a = cpu_run("beside two busy loops", 40, 8.2 * MS, 3.8 * MS, 20 * MS, 1, 410);
	int64_t b = cpu_run("quiet", 40, 4.1 * MS, 2.7 * MS, 20 * MS, 1, 411);
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	assert_int_equal(d.step_wall_verdict, PP_DIFF_IMPROVEMENT);
	assert_int_equal(d.step_cpu_verdict, PP_DIFF_IMPROVEMENT);
	assert_true(d.step_contention);
	assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_SAME);
	pp_diff_free(&d);

	int64_t c = cpu_run("half the work, quiet", 40, 2.0 * MS, 1.5 * MS, 20 * MS, 1, 412);
	assert_int_equal(pp_diag_diff(T.st, a, T.st, c, &d), 0);
	assert_false(d.step_contention);
	assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_IMPROVEMENT);
	pp_diff_free(&d);

	/* The loaded run the faster one: contention cannot have made the
	 * quiet run slower. A baseline recorded while other tests loaded the
	 * machine (wall per CPU 1.45) against more work recorded quietly (1.15):
	 * CPU x1.45, wall x1.15. A regression still. */
	int64_t e = cpu_run("baseline, loaded", 40, 10 * MS, 6.9 * MS, 20 * MS, 1, 413);
	int64_t f = cpu_run("more work, quiet", 40, 11.5 * MS, 10 * MS, 20 * MS, 1, 414);
	assert_int_equal(pp_diag_diff(T.st, e, T.st, f, &d), 0);
	assert_false(d.step_contention);
	assert_int_equal(row(&d, "step median")->verdict, PP_DIFF_REGRESSION);
	pp_diff_free(&d);
}

/* A PyTorch-like run: steps, one-off start-up phases (library loads,
 * imports) and per-step phases, every time scaled by slow (a busy machine),
 * and the library loads alone by lib_slow on top. */
static int64_t machine_run(const char *label, double slow, double lib_slow)
{
	int64_t run = trec_run(&T, label, 0);
	int64_t now = 0;
	int64_t lib = (int64_t)(900 * MS * slow * lib_slow), imp = (int64_t)(1500 * MS * slow);
	trec_span(&T, PP_LIBRARY_LOAD, "torch/_C.so", now, now + lib, 0, -1);
	now += lib;
	trec_span(&T, PP_IMPORT, "torch", now, now + imp, 0, -1);
	now += imp;
	int64_t ob = (int64_t)(80 * MS * slow);
	trec_span(&T, PP_MODEL_BUILD, "Net", now, now + ob, 0, -1);
	now += ob;
	for (int i = 0; i < 40; i++) {
		int64_t f = (int64_t)(4 * MS * slow), b = (int64_t)(6 * MS * slow);
		int64_t st = trec_span(&T, PP_STEP, "step", now, now + f + b, 0, i);
		trec_span(&T, PP_FORWARD, "Net", now, now + f, st, i);
		trec_span(&T, PP_BACKWARD, "backward", now + f, now + f + b, st, i);
		now += f + b;
	}
	(void)run;
	return T.run;
}

/* Every phase 2.3x as long, one-off ones included: the machine, not the
 * program (a phase measured once has no step noise to be judged by). Only
 * the library loads 2.3x while the rest holds: a regression. */
static void test_common_slowdown(void **state)
{
	(void)state;
	int64_t a = machine_run("quiet machine", 1, 1);
	int64_t b = machine_run("busy machine", 2.3, 1);
	pp_diff d;
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	assert_int_equal(row(&d, "library_load")->verdict, PP_DIFF_SAME);
	assert_int_equal(row(&d, "import")->verdict, PP_DIFF_SAME);
	assert_int_equal(row(&d, "forward")->verdict, PP_DIFF_SAME);
	assert_true(d.common_rows > 0 && d.common_min > 2.2 && d.common_max < 2.4);
	pp_diff_free(&d);
	b = machine_run("slower library load", 1, 2.3);
	assert_int_equal(pp_diag_diff(T.st, a, T.st, b, &d), 0);
	assert_int_equal(row(&d, "library_load")->verdict, PP_DIFF_REGRESSION);
	assert_int_equal(row(&d, "import")->verdict, PP_DIFF_SAME);
	pp_diff_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regression_and_improvement),
		cmocka_unit_test(test_noise_only),
		cmocka_unit_test(test_noisy_steps_hide_small_change),
		cmocka_unit_test(test_noise_ignores_trend),
		cmocka_unit_test(test_no_steps),
		cmocka_unit_test(test_two_databases_and_errors),
		cmocka_unit_test(test_gate),
		cmocka_unit_test(test_load_is_not_a_regression),
		cmocka_unit_test(test_step_regression_beyond_load),
		cmocka_unit_test(test_few_steps_no_test),
		cmocka_unit_test(test_cpu_time_tells_load_from_regression),
		cmocka_unit_test(test_load_differs_contention_same),
		cmocka_unit_test(test_common_slowdown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
