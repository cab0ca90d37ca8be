/* The torch.compile rules (rules_compile.c) on hand-built recordings shaped
 * as python/phaseprof/adapters/torch_compile.py records them: outermost
 * "compile <frame>" phases with their stages nested, recompile marks with
 * the guard that failed. Each rule fires on its pattern and stays quiet (or
 * info) on the healthy look-alike. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag_check.h"

static trec T;
static pp_diag_result R;

#define FRAME "Net.forward (prog.py:14)"

static int setup(void **state)
{
	(void)state;
	trec_open(&T, "rules_compile.db");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pp_diag_result_free(&R);
	trec_close(&T);
	return 0;
}

static void all_quiet(void)
{
	for (int i = 0; i < R.n; i++)
		if (strcmp(R.findings[i].severity, "info") != 0) {
			pp_diag_print(stderr, R.findings, R.n, 0);
			fail_msg("unexpected %s finding %s", R.findings[i].severity, R.findings[i].rule);
		}
}

/* One frame's compile as the adapter nests it, from t, lasting d:
 * capture 10%, aot_autograd 85% (inductor codegen 60%, its c++ build 40%). */
static void record_compile(const char *frame, int64_t t, int64_t d, int64_t parent, int64_t step)
{
	char n[160];
	snprintf(n, sizeof n, "compile %s", frame);
	int64_t c = trec_span(&T, PP_COMPILE, n, t, t + d, parent, step);
	snprintf(n, sizeof n, "dynamo capture %s", frame);
	trec_span(&T, PP_COMPILE, n, t, t + d / 10, c, step);
	snprintf(n, sizeof n, "aot_autograd %s", frame);
	int64_t a = trec_span(&T, PP_COMPILE, n, t + d / 10, t + d * 95 / 100, c, step);
	snprintf(n, sizeof n, "inductor codegen %s", frame);
	int64_t g = trec_span(&T, PP_COMPILE, n, t + d * 3 / 10, t + d * 9 / 10, a, step);
	snprintf(n, sizeof n, "c++ compile %s", frame);
	trec_span(&T, PP_COMPILE, n, t + d * 5 / 10, t + d * 9 / 10, g, step);
}

/* n steps of step_ns; the steps listed in comp[] (ncomp of them) begin with
 * a compile of comp_ns, every one after the first with a recompile mark
 * giving `guard`. */
static void record_loop(int n, int64_t step_ns, const int *comp, int ncomp, int64_t comp_ns,
			const char *guard)
{
	int64_t now = 10 * MS;
	int compiles = 0;
	for (int i = 0; i < n; i++) {
		int c = 0;
		for (int k = 0; k < ncomp; k++)
			c |= comp[k] == i;
		int64_t d = step_ns + (c ? comp_ns : 0) + (i % 3) * 10 * US;
		int64_t st = trec_span(&T, PP_STEP, "step", now, now + d, 0, i);
		int64_t t = now + 20 * US;
		if (c) {
			record_compile(FRAME, t, comp_ns, st, i);
			compiles++;
			if (compiles > 1) {
				char m[300];
				snprintf(m, sizeof m, "torch.compile recompile: %s #%d: %s", FRAME,
					 compiles, guard);
				trec_mark(&T, m, t + comp_ns);
			}
			t += comp_ns;
		}
		trec_span(&T, PP_FORWARD, "Net", t, t + step_ns / 3, st, i);
		trec_span(&T, PP_BACKWARD, "backward", t + step_ns / 3, t + 2 * step_ns / 3, st, i);
		trec_span(&T, PP_OPTIMIZER_STEP, "SGD.step", t + 2 * step_ns / 3, now + d - 10 * US,
			  st, i);
		trec_counter(&T, "step.rss_bytes", now + d - 5 * US, 300e6);
		now += d + 30 * US;
	}
}

static void test_storm(void **state)
{
	(void)state;
	/* six batch sizes, dynamic=False: a compile in each of steps 0-5 */
	const int comp[] = {0, 1, 2, 3, 4, 5};
	trec_run(&T, "six shapes", 0);
	record_loop(12, 2 * MS, comp, 6, 400 * MS,
		    "tensor 'x' size mismatch at index 0. expected 8, actual 12");
	tdiag_analyze(&T, &R);
	const pp_finding *f = tdiag_must(&R, "recompile_storm");
	tdiag_contains(f->title, "recompiled " FRAME " 5 times (6 compiles,");
	tdiag_contains(f->evidence, "size mismatch at index 0. expected 8, actual 12");
	tdiag_contains(f->evidence, "6 of the 6 compiles ran inside steps 0 to 5");
	tdiag_contains(f->fix, "dynamic=True");
	tdiag_contains(f->fix, "torch._dynamo.mark_dynamic(x, 0)");
	tdiag_contains(f->fix, "shape buckets");
	assert_string_equal(f->severity, "high");
	/* the compile time in the loop is the storm's, not a generic share */
	for (int i = 0; i < R.n; i++)
		assert_null(strstr(R.findings[i].rule, "phase_share"));
	assert_int_equal(pp_diag_find(R.findings, R.n, "recompile_storm"), 0);
}

static void test_storm_other_guard(void **state)
{
	(void)state;
	/* 0.6 s of recompiles in a 4.9 s run: moderate */
	const int comp[] = {0, 3, 6};
	trec_run(&T, "python float changes", 0);
	record_loop(200, 20 * MS, comp, 3, 300 * MS, "L['scale'] == 0.5");
	tdiag_analyze(&T, &R);
	const pp_finding *f = tdiag_must(&R, "recompile_storm");
	tdiag_contains(f->title, "2 times (3 compiles,");
	tdiag_contains(f->evidence, "L['scale'] == 0.5");
	tdiag_contains(f->fix, "Pass a changing Python number as a tensor");
	assert_string_equal(f->severity, "moderate");
}

/* Automatic dynamic shapes: one recompile, then the dynamic graph serves
 * every size. Nothing to fix. */
static void test_one_recompile_quiet(void **state)
{
	(void)state;
	const int comp[] = {0, 1};
	trec_run(&T, "automatic dynamic", 0);
	record_loop(12, 2 * MS, comp, 2, 400 * MS, "tensor 'x' size mismatch at index 0. expected 8, actual 12");
	tdiag_analyze(&T, &R);
	tdiag_quiet(&R, "recompile_storm");
}

/* A healthy compiled training run: the compile in step 0, Dynamo's one
 * recompile with dynamic shapes in step 1, 500 steps of 50 ms. The 1.5 s
 * recompile is 6% of the steady steps: a one-time cost, no phase_share. */
static void test_compiled_run_healthy(void **state)
{
	(void)state;
	const int comp[] = {0, 1};
	trec_run(&T, "healthy compiled loop", 0);
	record_loop(500, 50 * MS, comp, 2, 1500 * MS,
		    "tensor 'x' size mismatch at index 0. expected 8, actual 12");
	tdiag_analyze(&T, &R);
	tdiag_quiet(&R, "recompile_storm");
	assert_string_equal(tdiag_must(&R, "first_step_compile")->severity, "info");
	all_quiet();
}

static void test_first_step_compile(void **state)
{
	(void)state;
	const int comp[] = {0};
	trec_run(&T, "compile in step 0", 0);
	record_loop(200, 5 * MS, comp, 1, 2900 * MS, "");
	trec_counter(&T, "torch.compile.fx_graph_cache_hits", 2000 * MS, 0);
	trec_counter(&T, "torch.compile.fx_graph_cache_misses", 2000 * MS, 2);
	trec_mark(&T, "torch.compile graph break: " FRAME ": Unsupported Tensor.item() call (x2)",
		  1000 * MS);
	/* a later hit (a recompile of the same graph) is not the first step's */
	trec_counter(&T, "torch.compile.fx_graph_cache_hits", 3500 * MS, 1);
	tdiag_analyze(&T, &R);
	const pp_finding *f = tdiag_must(&R, "first_step_compile");
	tdiag_contains(f->title, "The first step is 100% compilation: torch.compile took 2.90 s");
	tdiag_contains(f->title, "(1 frame)");
	tdiag_contains(f->evidence, "compile " FRAME " 2.90 s");
	tdiag_contains(f->evidence, "dynamo capture 290");
	tdiag_contains(f->evidence, "c++ compile 1.16 s");
	tdiag_contains(f->evidence, "0 hits, 2 misses (cold start)");
	tdiag_contains(f->evidence, "2 graph breaks");
	tdiag_contains(f->fix, "Warm up before timing");
	tdiag_contains(f->fix, "mode=");
	tdiag_contains(f->fix, "TORCHINDUCTOR_CACHE_DIR");
	assert_string_equal(f->severity, "high");
	/* first_step_slow defers to it; one compile is not a recompile storm */
	tdiag_quiet(&R, "first_step_slow");
	tdiag_quiet(&R, "recompile_storm");
}

/* One compile of 1 s at the start of a 50 s run: the price of compiling,
 * information only. */
static void test_first_step_compile_long_run_info(void **state)
{
	(void)state;
	const int comp[] = {0};
	trec_run(&T, "long run", 0);
	record_loop(1000, 50 * MS, comp, 1, 1000 * MS, "");
	tdiag_analyze(&T, &R);
	assert_string_equal(tdiag_must(&R, "first_step_compile")->severity, "info");
	all_quiet();
}

/* The flow runtime's own "compile" phase is not torch.compile. */
static void test_runtime_compile_not_torch(void **state)
{
	(void)state;
	trec_run(&T, "runtime compile", 0);
	int64_t now = 10 * MS;
	for (int i = 0; i < 20; i++) {
		int64_t d = i ? 2 * MS : 300 * MS;
		int64_t st = trec_span(&T, PP_STEP, "step", now, now + d, 0, i);
		if (!i)
			trec_span(&T, PP_COMPILE, "compile", now + 10 * US, now + 290 * MS, st, i);
		now += d + 30 * US;
	}
	tdiag_analyze(&T, &R);
	tdiag_quiet(&R, "first_step_compile");
	tdiag_must(&R, "first_step_slow");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_storm),
		cmocka_unit_test(test_storm_other_guard),
		cmocka_unit_test(test_one_recompile_quiet),
		cmocka_unit_test(test_compiled_run_healthy),
		cmocka_unit_test(test_first_step_compile),
		cmocka_unit_test(test_first_step_compile_long_run_info),
		cmocka_unit_test(test_runtime_compile_not_torch),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
