/* test_cli.c — `phaseprof list` and `phaseprof run`: output, bad input,
 * every scenario end to end at smoke size, and a crashing variant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scn_testutil.h"

static const char *bin;

#define RUN(out, env, ...)                                                             \
	({                                                                             \
		const char *a_[] = {__VA_ARGS__, NULL};                                \
		scn_t_run(bin, a_, env, out);                                          \
	})

static void expect(const char *out, const char *sub)
{
	if (!scn_t_has(out, sub))
		fail_msg("expected \"%s\" in:\n%s", sub, out ? out : "(null)");
}

static void test_list(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(RUN(&out, NULL, "list"), 0);
	for (int i = 0; i < pp_scenario_count(); i++) {
		const pp_scenario *s = pp_scenario_at(i);
		expect(out, pp_scenario_name(s));
		expect(out, pp_scenario_complaint(s));
		for (int v = 0; v < pp_scenario_num_variants(s); v++)
			expect(out, pp_scenario_variant_name(s, v));
	}
	/* the GPU scenario says why it cannot run here */
	char why[512];
	if (!pp_scenario_available(pp_scenario_find("transfer"), why, sizeof why))
		expect(out, "unavailable: ");
	free(out);
	out = NULL;
	assert_int_equal(RUN(&out, NULL, "list", "--json"), 0);
	assert_true(out[0] == '[');
	expect(out, "\"name\": \"repeated-init\"");
	expect(out, "\"kind\": \"slow\"");
	free(out);
	out = NULL;
	assert_int_equal(RUN(&out, NULL, "list", "--bogus"), 2);
	expect(out, "unknown option '--bogus'");
	free(out);
}

static void test_run_bad_input(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(RUN(&out, NULL, "run"), 2);
	expect(out, "name at least one scenario");
	expect(out, "valid scenarios: ");
	free(out);
	out = NULL;
	assert_int_equal(RUN(&out, NULL, "run", "nosuch"), 2);
	expect(out, "unknown scenario 'nosuch'");
	expect(out, "repeated-init");
	expect(out, "growing-graph");
	free(out);
	out = NULL;
	assert_int_equal(RUN(&out, NULL, "run", "repeated-init:nosuch"), 2);
	expect(out, "has no variant 'nosuch'");
	expect(out, "one-session");
	free(out);
	out = NULL;
	assert_int_equal(RUN(&out, NULL, "run", "--frobnicate", "startup"), 2);
	expect(out, "unknown option '--frobnicate'");
	expect(out, "--all");
	free(out);
	out = NULL;
	assert_int_equal(RUN(&out, NULL, "run", "--all", "startup"), 2);
	expect(out, "not both");
	free(out);
	out = NULL;
	assert_int_equal(RUN(&out, NULL, "run", "startup", "-o"), 2);
	expect(out, "needs a database path");
	free(out);
	out = NULL;
	/* a database that cannot be created: one line naming it */
	assert_int_equal(RUN(&out, NULL, "run", "startup", "-o", "/nonexistent-dir/x.db"), 1);
	expect(out, "/nonexistent-dir/x.db");
	free(out);
	out = NULL;
	/* the hidden child mode refuses a bad request too */
	assert_int_equal(RUN(&out, NULL, "run", "--child", "nosuch:slow", "--spool", "/tmp/x",
			     "--workdir", "/tmp"),
			 2);
	expect(out, "unknown scenario variant 'nosuch:slow'");
	free(out);
}

static void test_unavailable(void **state)
{
	(void)state;
	char why[512];
	if (pp_scenario_available(pp_scenario_find("transfer"), why, sizeof why))
		skip(); /* a GPU machine: covered by the matrix instead */
	char *dir = scn_t_tmpdir(), db[128], *out = NULL;
	snprintf(db, sizeof db, "%s/t.db", dir);
	assert_int_equal(RUN(&out, NULL, "run", "transfer", "-o", db), 1);
	expect(out, "skipped: cannot run here: ");
	free(out);
	scn_t_rmdir(dir);
}

/* Every scenario, every variant, smallest size: all run in their own
 * process and land in one database, one complete run each, with claims. */
static void test_smoke_all(void **state)
{
	(void)state;
	char dirbuf[64];
	snprintf(dirbuf, sizeof dirbuf, "%s", scn_t_tmpdir());
	char db[128], *out = NULL;
	snprintf(db, sizeof db, "%s/all.db", dirbuf);
	int rc = RUN(&out, NULL, "run", "--all", "--size", "smoke", "-o", db);
	if (rc != 0)
		fail_msg("run --all --size smoke exited %d:\n%s", rc, out);
	expect(out, "database: ");
	char err[256];
	pp_store *st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
	assert_non_null(st);
	for (int i = 0; i < pp_scenario_count(); i++) {
		const pp_scenario *s = pp_scenario_at(i);
		char why[512];
		if (!pp_scenario_available(s, why, sizeof why))
			continue;
		for (int v = 0; v < pp_scenario_num_variants(s); v++) {
			int64_t id = scn_t_run_id(st, pp_scenario_name(s), pp_scenario_variant_name(s, v));
			if (id <= 0)
				fail_msg("no run for %s:%s\n%s", pp_scenario_name(s),
					 pp_scenario_variant_name(s, v), out);
			pp_run_info ri;
			assert_int_equal(pp_store_run(st, id, &ri), 0);
			assert_string_equal(ri.status, "complete");
			pp_scn_measure m;
			assert_int_equal(pp_scenario_measure(st, id, &m), 0);
			assert_true(m.measured_ns > 0);
		}
	}
	pp_store_close(st, NULL, 0);
	free(out);
	scn_t_rmdir(dirbuf);
}

/* A variant that crashes is reported, the others still run, and what it
 * recorded before the crash is kept. */
static void test_crash(void **state)
{
	(void)state;
	char dirbuf[64];
	snprintf(dirbuf, sizeof dirbuf, "%s", scn_t_tmpdir());
	char db[128], *out = NULL;
	snprintf(db, sizeof db, "%s/crash.db", dirbuf);
	/* growing-graph:slow runs long enough (hundreds of ms) for the
	 * recorder to have drained its buffers before the abort */
	int rc = RUN(&out, "PHASEPROF_SCN_CRASH=growing-graph/slow", "run", "growing-graph:slow",
		     "growing-graph:build-once", "--quick", "--no-diag", "-o", db);
	assert_int_equal(rc, 1);
	expect(out, "crashed (signal 6");
	expect(out, "1 variant failed or crashed");
	char err[256];
	pp_store *st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
	assert_non_null(st);
	static const char *const vs[] = {"slow", "build-once"};
	for (int i = 0; i < 2; i++) {
		int64_t id = scn_t_run_id(st, "growing-graph", vs[i]);
		assert_true(id > 0);
		pp_run_info ri;
		assert_int_equal(pp_store_run(st, id, &ri), 0);
		assert_string_equal(ri.status, i == 0 ? "crashed" : "complete");
		if (i == 0) {
			assert_int_equal(ri.term_signal, 6);
			/* the partial recording: the steps done before the abort */
			pp_step_row *steps;
			int n;
			assert_int_equal(pp_store_steps(st, id, &steps, &n), 0);
			if (n < 100)
				fail_msg("only %d steps kept of the crashed run\n%s", n, out);
			free(steps);
		}
	}
	pp_store_close(st, NULL, 0);
	free(out);
	scn_t_rmdir(dirbuf);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PHASEPROF\n", argv[0]);
		return 2;
	}
	bin = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_run_bad_input),
		cmocka_unit_test(test_unavailable),
		cmocka_unit_test(test_smoke_all),
		cmocka_unit_test(test_crash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
