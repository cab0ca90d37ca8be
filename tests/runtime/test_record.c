/* Recording: after init, graph build, session runs with op timing, a
 * snapshot and close, every phase the runtime promises is in the recording
 * (ingested with the store, queried back). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "phaseprof.h"
#include "store.h"
#include "store_internal.h"
#include "ops_fixture.h"

static int count_cb(sqlite3_stmt *row, void *ud)
{
	*(int64_t *)ud = sqlite3_column_int64(row, 0);
	return 0;
}

static void test_phases_recorded(void **state)
{
	(void)state;
	char spool[] = "/tmp/flow_rec_XXXXXX";
	int fd = mkstemp(spool);
	assert_true(fd >= 0);
	close(fd);
	char db[300];
	snprintf(db, sizeof db, "%s.db", spool);
	pp_options po = {.spool_path = spool, .label = "flow-core test"};
	assert_int_equal(pp_open(&po), 0);

	flow_status *st = flow_status_new();
	flow_shutdown(); /* so init and registration happen inside the recording */
	flow_init_options io = {.registration = FLOW_REGISTER_FULL, .op_timing = 1};
	assert_int_equal(flow_init(&io, st), 0);
	test_ops_register();
	flow_graph *g = flow_graph_new();
	int64_t d[2] = {64, 64};
	flow_tensor *wt = flow_tensor_new(FLOW_F32, 2, d, st);
	flow_output w0 = flow_const(g, "w0", wt, st);
	flow_output w = flow_variable(g, "w", w0, st);
	flow_shape ps = flow_shape_make(2, d);
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &ps, st);
	flow_output in[2] = {x, w};
	flow_output y = flow_simple(g, "MatMul", "y", in, 2, st);
	flow_op *init = flow_global_variables_initializer(g, st);
	assert_true(flow_status_ok(st));
	flow_session *s = flow_session_new(g, NULL, st);
	assert_int_equal(flow_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, st), 0);
	for (int i = 0; i < 3; i++) {
		flow_tensor *out = NULL;
		assert_int_equal(flow_session_run(s, &x, &wt, 1, &y, &out, 1, NULL, 0, st), 0);
		flow_tensor_unref(out);
	}
	/* A caller recording its own steps still gets its initializer runs. */
	flow_session_options so = {.no_step_phase = 1};
	flow_session *s2 = flow_session_new(g, &so, st);
	assert_int_equal(flow_session_run(s2, NULL, NULL, 0, NULL, NULL, 0, &init, 1, st), 0);
	flow_op *wi = flow_variable_initializer(w.op);
	assert_int_equal(flow_session_run(s2, NULL, NULL, 0, NULL, NULL, 0, &wi, 1, st), 0);
	flow_tensor *o2 = NULL;
	assert_int_equal(flow_session_run(s2, &x, &wt, 1, &y, &o2, 1, NULL, 0, st), 0);
	flow_tensor_unref(o2);
	flow_session_free(s2);
	assert_int_equal(flow_graph_snapshot(g, "test"), 0);
	assert_int_equal(flow_session_close(s, st), 0);
	flow_session_free(s);
	flow_tensor_unref(wt);
	flow_graph_free(g);
	flow_status_free(st);

	pp_recorder_stats rs;
	pp_stats(&rs);
	assert_true(rs.events > 0);
	assert_int_equal(rs.events_lost, 0);
	assert_int_equal(pp_close(), 0);

	char err[512];
	unlink(db);
	pp_store *store = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	if (!store)
		fail_msg("%s", err);
	pp_ingest_result res;
	if (pp_store_ingest(store, spool, NULL, &res, err, sizeof err))
		fail_msg("%s", err);
	pp_phase_total *tot = NULL;
	int n = 0;
	assert_int_equal(pp_store_phase_totals(store, res.run_id, &tot, &n), 0);
	static const pp_kind want[] = {PP_RUNTIME_INIT, PP_OP_REGISTRATION, PP_GRAPH_BUILD,
				       PP_SHAPE_INFERENCE, PP_SESSION_CREATE, PP_VARIABLE_CREATE,
				       PP_VARIABLE_INIT, PP_MEMORY_ALLOC, PP_COMPILE, PP_STEP,
				       PP_SESSION_CLOSE};
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
		int found = 0;
		for (int i = 0; i < n; i++)
			if (tot[i].kind == (int)want[k] && tot[i].count > 0)
				found = 1;
		if (!found)
			fail_msg("phase %s missing from the recording", pp_kind_name(want[k]));
	}
	for (int i = 0; i < n; i++) {
		if (tot[i].kind == PP_STEP)
			assert_int_equal(tot[i].count, 3);
		if (tot[i].kind == PP_VARIABLE_INIT)
			assert_int_equal(tot[i].count, 3);
	}
	free(tot);
	/* Named after what they initialise. */
	pp_span_list sl;
	assert_int_equal(pp_store_spans(store, res.run_id, PP_VARIABLE_INIT, &sl), 0);
	int named_init = 0, named_var = 0;
	for (int i = 0; i < sl.n; i++) {
		named_init += !strcmp(sl.rows[i].name, "init");
		named_var += !strcmp(sl.rows[i].name, "w/Assign:w");
	}
	pp_span_list_free(&sl);
	assert_int_equal(named_init, 2);
	assert_int_equal(named_var, 1);
	/* Allocator counters: one sample per run (7 runs). */
	pp_counter_row *cr = NULL;
	int ncr = 0;
	assert_int_equal(pp_store_counter(store, res.run_id, "flow.bfc.allocs", &cr, &ncr), 0);
	assert_true(ncr >= 7);
	free(cr);
	int64_t c = 0;
	pp_store_query(store, "SELECT count(*) FROM ops WHERE run_id = ?1", res.run_id, count_cb, &c);
	assert_true(c >= 3); /* op timing on: at least the MatMul of each step */
	c = 0;
	pp_store_query(store, "SELECT count(*) FROM graphs WHERE run_id = ?1", res.run_id, count_cb, &c);
	assert_int_equal(c, 1);
	c = 0;
	pp_store_query(store, "SELECT count(*) FROM allocations WHERE run_id = ?1", res.run_id, count_cb, &c);
	assert_true(c >= 1);
	char **names = pp_store_counter_names(store, res.run_id);
	int has_bytes = 0;
	for (int i = 0; names && names[i]; i++)
		if (!strcmp(names[i], "flow.bfc.bytes_in_use"))
			has_bytes = 1;
	pp_store_free_names(names);
	assert_true(has_bytes);
	assert_int_equal(pp_store_close(store, err, sizeof err), 0);
	unlink(spool);
	unlink(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phases_recorded),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	flow_shutdown();
	return rc;
}
