/* test_unit.c — the scenario table and the framework's read-back helpers on a
 * hand-built recording (no workload runs here). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "phaseprof.h"
#include "scn_internal.h"
#include "scn_testutil.h"
#include "store_internal.h"

static void test_table(void **state)
{
	(void)state;
	int n = pp_scenario_count();
	assert_true(n >= 8);
	static const char *const must[] = {"startup", "model-init", "repeated-init",
					   "growing-graph", "first-step", "retracing",
					   "alloc-churn", "transfer"};
	for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
		assert_non_null(pp_scenario_find(must[i]));
	assert_null(pp_scenario_find("no-such-scenario"));
	assert_null(pp_scenario_at(n));
	for (int i = 0; i < n; i++) {
		const pp_scenario *s = pp_scenario_at(i);
		assert_ptr_equal(pp_scenario_find(pp_scenario_name(s)), s);
		assert_true(strlen(pp_scenario_complaint(s)) > 0);
		assert_true(pp_scenario_num_variants(s) >= 2);
		/* variant 0 is a slow one, and there is at least one fix */
		assert_int_equal(pp_scenario_variant_kind(s, 0), PP_SCN_VARIANT_SLOW);
		int fixes = 0, nr;
		const char *const *rules = pp_scenario_rules(s, &nr);
		assert_true(nr >= 1);
		for (int v = 0; v < pp_scenario_num_variants(s); v++) {
			const char *vn = pp_scenario_variant_name(s, v);
			assert_int_equal(pp_scenario_variant_find(s, vn), v);
			int k = pp_scenario_variant_kind(s, v);
			fixes += k == PP_SCN_VARIANT_FIX;
			const char *want = pp_scenario_variant_expect(s, v);
			if (k != PP_SCN_VARIANT_SLOW) {
				assert_null(want);
				continue;
			}
			/* a slow variant's expected finding is one of the scenario's rules */
			int found = 0;
			for (int r = 0; r < nr; r++)
				found |= strcmp(rules[r], want) == 0;
			assert_true(found);
		}
		assert_true(fixes >= 1);
		assert_int_equal(pp_scenario_variant_find(s, "no-such-variant"), -1);
		assert_null(pp_scenario_variant_name(s, pp_scenario_num_variants(s)));
	}
	for (int z = PP_SCN_FULL; z <= PP_SCN_SMOKE; z++)
		assert_int_equal(pp_scn_size_from_name(pp_scn_size_name(z)), z);
	assert_int_equal(pp_scn_size_from_name("huge"), -1);
}

static void test_stats(void **state)
{
	(void)state;
	double a[] = {5, 1, 4, 2, 3};
	assert_float_equal(scn_median(a, 5), 3, 1e-12);
	assert_float_equal(scn_median_range(a, 1, 4), 2.5, 1e-12);
	assert_true(isnan(scn_median(a, 0)));
	double x[8], y[8], z[8];
	for (int i = 0; i < 8; i++) {
		x[i] = i;
		y[i] = exp(i); /* monotone, far from linear: rank correlation is 1 */
		z[i] = -i * i;
	}
	assert_float_equal(scn_correlation(x, y, 8), 1.0, 1e-12);
	assert_float_equal(scn_correlation(x, z, 8), -1.0, 1e-12);
	/* NaN pairs are left out; a constant series has no correlation */
	y[3] = NAN;
	assert_float_equal(scn_correlation(x, y, 8), 1.0, 1e-12);
	double c[8] = {2, 2, 2, 2, 2, 2, 2, 2};
	assert_true(isnan(scn_correlation(x, c, 8)));
	/* growth fully explained by a proportional driver */
	double t[20], d[20];
	for (int i = 0; i < 20; i++) {
		d[i] = 10 + i;
		t[i] = 3 * d[i];
	}
	assert_float_equal(scn_explained_growth(d, t, 20), 1.0, 1e-9);
	char b[32];
	assert_string_equal(pp_fmt_dur(b, sizeof b, 1.5e6), "1.50 ms");
	assert_string_equal(pp_fmt_dur(b, sizeof b, -2e3), "-2.0 us");
	assert_string_equal(pp_fmt_bytes(b, sizeof b, 3 * 1048576.0), "3.0 MiB");
}

/* A recording made by hand: 10 outer steps (one with a nested step), a
 * compile phase in the even ones, graph.nodes rising, a measured span. */
static void test_readback(void **state)
{
	(void)state;
	char *dir = scn_t_tmpdir();
	assert_non_null(dir);
	char spool[128], db[128];
	snprintf(spool, sizeof spool, "%s/r.spool", dir);
	snprintf(db, sizeof db, "%s/r.db", dir);
	pp_options o = {0};
	o.spool_path = spool;
	o.scenario = "repeated-init";
	o.variant = "slow";
	assert_int_equal(pp_open(&o), 0);
	pp_meta("answer", "42");
	scn_measured_begin();
	volatile double sink = 0;
	for (int i = 0; i < 10; i++) {
		pp_step_begin(i);
		if (i % 2 == 0) {
			pp_phase_begin(PP_COMPILE, "compile");
			for (int k = 0; k < 20000; k++)
				sink += k;
			pp_phase_end();
		}
		if (i == 3) { /* a traced function's own step inside the loop's */
			pp_step_begin(100);
			pp_step_end();
		}
		pp_counter("graph.nodes", 10.0 * (i + 1));
		pp_step_end();
	}
	scn_measured_end();
	assert_int_equal(pp_close(), 0);

	char err[256];
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	pp_ingest_result res;
	pp_ingest_opts io = {.exit_code = 0};
	assert_int_equal(pp_store_ingest(st, spool, &io, &res, err, sizeof err), 0);
	int64_t run = res.run_id;
	assert_int_equal(scn_t_run_id(st, "repeated-init", "slow"), run);

	pp_scn_measure m;
	assert_int_equal(pp_scenario_measure(st, run, &m), 0);
	assert_int_equal(m.n_steps, 10); /* the nested step is not an iteration */
	assert_true(m.measured_ns > 0);
	assert_true(m.measured_ns <= m.total_ns);

	scn_series s;
	assert_int_equal(scn_counter_at_steps(st, run, "graph.nodes", &s), 0);
	assert_int_equal(s.n, 10);
	for (int i = 0; i < 10; i++)
		assert_float_equal(s.v[i], 10.0 * (i + 1), 1e-9);
	scn_series_free(&s);

	assert_int_equal(scn_kind_per_step(st, run, PP_COMPILE, &s), 0);
	assert_int_equal(s.n, 10);
	for (int i = 0; i < 10; i++) {
		if (i % 2 == 0)
			assert_true(s.v[i] > 0);
		else
			assert_float_equal(s.v[i], 0, 0);
	}
	scn_series_free(&s);
	assert_float_equal(scn_meta_num(st, run, "answer", -1), 42, 0);
	assert_float_equal(scn_meta_num(st, run, "missing", -1), -1, 0);
	int64_t cnt;
	assert_true(scn_span_total(st, run, "measured", &cnt) > 0);
	assert_int_equal(cnt, 1);

	/* claims are returned and stored on the slow run */
	int64_t ids[3] = {run, 0, 0};
	pp_scn_claim c[8];
	int n = pp_scenario_claims(pp_scenario_find("repeated-init"), st, ids, c, 8);
	assert_true(n >= 4);
	for (int i = 0; i < n; i++) {
		assert_true(c[i].id[0] && c[i].claim[0] && c[i].evidence[0]);
		char key[48];
		snprintf(key, sizeof key, "claim.%.32s", c[i].id);
		char *sql = sqlite3_mprintf("SELECT count(*) FROM run_meta WHERE run_id=%lld AND key=%Q",
					    (long long)run, key);
		sqlite3_stmt *q;
		assert_int_equal(sqlite3_prepare_v2(pp_store_db(st), sql, -1, &q, NULL), SQLITE_OK);
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int(q, 0), 1);
		sqlite3_finalize(q);
		sqlite3_free(sql);
	}
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	scn_t_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_readback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
