/* The conventions of diag/README.md through the real recording path:
 * recorder API -> spool -> pp_store_ingest -> rules. Counts decide these
 * rules, so the test does not depend on how fast the machine is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diagnostics.h"
#include "phaseprof.h"
#include "testutil.h"

static volatile double sink;

/* Some real arithmetic so steps have a duration. */
static void work(int n)
{
	double s = 0;
	for (int i = 1; i <= n; i++)
		s += 1.0 / i;
	sink = s;
}

static void snapshot(int n_nodes, int version)
{
	pp_graph_node nodes[64];
	char names[64][16];
	for (int i = 0; i < n_nodes && i < 64; i++) {
		snprintf(names[i], sizeof names[i], "n%d", i);
		nodes[i] = (pp_graph_node){names[i], i ? "Mul" : "Placeholder", NULL, NULL, 0};
	}
	pp_graph_snapshot("default", version, nodes, n_nodes, NULL, 0);
}

/* slow = 1: a session, a retrace and a new op per iteration. */
static int64_t record(trec *t, const char *name, int slow)
{
	char spool[512];
	snprintf(spool, sizeof spool, "%s/%s.spool", ttmpdir(), name);
	pp_options o = {.spool_path = spool, .scenario = "unit", .variant = name};
	assert_int_equal(pp_open(&o), 0);
	pp_phase_begin(PP_RUNTIME_INIT, "init");
	work(20000);
	pp_phase_end();
	if (!slow) {
		pp_phase_begin(PP_SESSION_CREATE, "session");
		work(5000);
		pp_phase_end();
		pp_phase_begin(PP_RETRACE, "step_fn(f32[?,4])");
		work(5000);
		pp_phase_end();
		snapshot(8, 0);
		pp_counter("graph.nodes", 8);
	}
	for (int i = 0; i < 24; i++) {
		pp_step_begin(i);
		if (slow) {
			pp_phase_begin(PP_SESSION_CREATE, "session");
			work(5000);
			pp_phase_end();
			char sig[64];
			snprintf(sig, sizeof sig, "step_fn(f32[%d,4])", i + 1);
			pp_phase_begin(PP_RETRACE, sig);
			work(5000);
			pp_phase_end();
			pp_phase_begin(PP_GRAPH_BUILD, "add op");
			work(1000);
			pp_phase_end();
			snapshot(8 + i, i);
			pp_counter("graph.nodes", 8 + i);
		}
		work(50000);
		pp_step_end();
	}
	assert_int_equal(pp_close(), 0);
	pp_ingest_result res;
	char err[512];
	if (pp_store_ingest(t->st, spool, NULL, &res, err, sizeof err) != 0)
		fail_msg("ingest: %s", err);
	return res.run_id;
}

static void test_recorded_slow_and_fixed(void **state)
{
	(void)state;
	trec t;
	trec_open(&t, "recorded.db");
	int64_t slow = record(&t, "slow", 1);
	int64_t fixed = record(&t, "fixed", 0);

	pp_diag_result r;
	if (pp_diag_run(t.st, slow, &r) != 0)
		fail_msg("%s", r.error);
	const char *want[] = {"session_per_iteration", "repeated_retracing", "graph_grows"};
	for (int i = 0; i < 3; i++)
		if (pp_diag_find(r.findings, r.n, want[i]) < 0) {
			pp_diag_print(stderr, r.findings, r.n, 0);
			fail_msg("slow recording: no %s finding", want[i]);
		}
	int g = pp_diag_find(r.findings, r.n, "graph_grows");
	assert_non_null(strstr(r.findings[g].evidence, "graph 'default': 24 snapshots, 8 -> 31 nodes"));
	assert_non_null(strstr(r.findings[g].evidence, "graph.nodes: 9 -> 31"));
	int s = pp_diag_find(r.findings, r.n, "session_per_iteration");
	assert_non_null(strstr(r.findings[s].title, "23 of 23 iterations"));
	pp_diag_result_free(&r);

	if (pp_diag_run(t.st, fixed, &r) != 0)
		fail_msg("%s", r.error);
	for (int i = 0; i < 3; i++)
		if (pp_diag_find(r.findings, r.n, want[i]) >= 0) {
			pp_diag_print(stderr, r.findings, r.n, 0);
			fail_msg("fixed recording: unexpected %s finding", want[i]);
		}
	pp_diag_result_free(&r);

	/* What pp_diag_run stored is what the store gives back. */
	pp_finding *f;
	int n;
	assert_int_equal(pp_store_findings(t.st, slow, &f, &n), 0);
	assert_true(n >= 3);
	free(f);
	trec_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded_slow_and_fixed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
