/* Each weight-file read is a weight_load phase in the recording, with that
 * load's read calls, bytes and small reads as counters (the names the
 * weight_load_small_reads rule reads). */
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
#include "weights.h"

static void test_weight_load_phases(void **state)
{
	(void)state;
	char dir[] = "/tmp/flow_wphase_XXXXXX", spool[256], db[256], st_path[256], txt[256], err[512];
	assert_non_null(mkdtemp(dir));
	snprintf(spool, sizeof spool, "%s/run.spool", dir);
	snprintf(db, sizeof db, "%s/run.db", dir);
	snprintf(st_path, sizeof st_path, "%s/m.safetensors", dir);
	snprintf(txt, sizeof txt, "%s/m.txt", dir);
	float v[2000];
	for (int i = 0; i < 2000; i++)
		v[i] = (float)i / 7;
	flow_weight t = {.name = "w", .dtype = FLOW_WD_F32, .rank = 2, .shape = {20, 100}, .data = v, .nbytes = sizeof v};
	assert_int_equal(flow_safetensors_write(st_path, &t, 1, NULL, 0, err, sizeof err), 0);
	assert_int_equal(flow_text_weights_write(txt, &t, 1, err, sizeof err), 0);

	pp_options o = {0};
	o.spool_path = spool;
	assert_int_equal(pp_open(&o), 0);
	flow_weights *w = flow_weights_open_any(st_path, err, sizeof err);
	assert_non_null(w);
	flow_weights_close(w);
	w = flow_weights_open_any(txt, err, sizeof err);
	assert_non_null(w);
	flow_weights_close(w);
	/* a failed open is still a (short) phase, and loses nothing */
	assert_null(flow_weights_open_any("/nonexistent/x.npy", err, sizeof err));
	assert_int_equal(pp_close(), 0);

	pp_store *s = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(s);
	pp_ingest_result r;
	assert_int_equal(pp_store_ingest(s, spool, NULL, &r, err, sizeof err), 0);
	pp_span_list l;
	assert_int_equal(pp_store_spans(s, r.run_id, PP_WEIGHT_LOAD, &l), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.rows[0].name, "safetensors:m.safetensors");
	assert_string_equal(l.rows[1].name, "text:m.txt");
	assert_string_equal(l.rows[2].name, "npy:x.npy");
	for (int i = 0; i < 3; i++)
		assert_true(l.rows[i].end_ns >= l.rows[i].start_ns);
	pp_span_list_free(&l);
	pp_counter_row *rows;
	int n;
	/* one value per load: safetensors (mmap: 1 large read), text (a small read per line) */
	assert_int_equal(pp_store_counter(s, r.run_id, "weights.read_calls", &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_true(rows[0].value == 1);
	assert_true(rows[1].value >= 2001);
	free(rows);
	assert_int_equal(pp_store_counter(s, r.run_id, "weights.small_reads", &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_true(rows[0].value == 0 && rows[1].value >= 2001);
	free(rows);
	assert_int_equal(pp_store_counter(s, r.run_id, "weights.read_bytes", &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_true(rows[0].value > 4000 && rows[1].value > rows[0].value);
	free(rows);
	assert_int_equal(pp_store_counter(s, r.run_id, "weights.reads", &rows, &n), 0);
	assert_int_equal(n, 2);
	free(rows);
	assert_int_equal(pp_store_close(s, err, sizeof err), 0);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_weight_load_phases)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
