/* NVTX ranges from an unmodified nvtx3 program, captured by injection.
 *   test_nvtx inject APP LIB     NVTX_INJECTION64_PATH=LIB, recorder in LIB
 *   test_nvtx record APP PHASEPROF   through `phaseprof record`
 * Ingests the recording and checks spans, marks, counters, start/end ranges
 * and thread names against what the program did. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pp_testutil.h"

static void check_store(pp_store *st)
{
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE name='outer' AND kind=0"), 1);
	/* inner nested in outer, and outer its parent */
	assert_int_equal(ppt_q_int(st, "SELECT c.depth - p.depth FROM spans_v c JOIN spans p ON p.id=c.parent_id "
				       "WHERE c.name='inner'"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v p JOIN spans c ON c.parent_id=p.id "
				       "JOIN strings n ON n.id=c.name_id WHERE p.name='outer' AND n.value='inner'"), 1);
	/* a wide string as UTF-8 */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE name='wide-r\xc3\xa4nge'"), 1);
	/* a domain range with a registered string */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE name='trainer:registered-step'"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE name='ex-range'"), 1); /* RangePushEx */
	/* the worker thread's range, on its own thread */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE name='worker-range'"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(DISTINCT tid) FROM spans_v WHERE name IN ('outer','worker-range')"), 2);
	/* no span left open by the stray pop */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans WHERE end_ns IS NULL"), 0);
	/* marks, a domain mark, its payload as a counter */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM marks m JOIN strings n ON n.id=m.name_id "
				       "WHERE n.value='checkpoint'"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM marks m JOIN strings n ON n.id=m.name_id "
				       "WHERE n.value='trainer:loss'"), 1);
	assert_true(ppt_q_double(st, "SELECT c.value FROM counters c JOIN strings n ON n.id=c.name_id "
				     "WHERE n.value='trainer:loss'") == 0.25);
	/* a start/end range: one row, on the starting thread */
	assert_int_equal(ppt_q_int(st, "SELECT end_ns > start_ns FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
				       "WHERE kind='marker' AND n.value='async-range'"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT g.tid = (SELECT tid FROM spans_v WHERE name='outer') FROM gpu_activity g "
				       "WHERE kind='marker'"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM threads WHERE name='nvtx-main'"), 1); /* named by NVTX */
}

static char **args; /* argv: mode, APP, LIB or PHASEPROF */
static char spool[512], db[512];

static int setup(void **state)
{
	(void)state;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(spool, sizeof spool, "%s/ppgpu-nvtx-%d.spool", dir, (int)getpid());
	snprintf(db, sizeof db, "%s/ppgpu-nvtx-%d.db", dir, (int)getpid());
	unlink(db);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(spool);
	unlink(db);
	return 0;
}

/* NVTX's own return values: levels of pushed/popped ranges, -1 for a stray pop */
static void check_output(const char *out)
{
	if (!strstr(out, "levels 0 1 pops 1 0 stray -1"))
		fail_msg("program printed '%s'", out);
}

static void test_inject(void **state)
{
	(void)state;
	char out[4096], err[512];
	char *av[] = {args[2], NULL};
	/* Preloaded as well, as `phaseprof record` does with the agent: the
	 * recorder's initial-exec TLS cannot be placed by a late dlopen, and
	 * NVTX's dlopen of a preloaded library returns the same handle. */
	char asan[512];
	snprintf(asan, sizeof asan, "%s%sverify_asan_link_order=0",
		 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "", getenv("ASAN_OPTIONS") ? ":" : "");
	const char *env[] = {"NVTX_INJECTION64_PATH", args[3], "LD_PRELOAD", args[3],
			     "PHASEPROF_OUT", spool, "ASAN_OPTIONS", asan, NULL};
	assert_int_equal(ppt_run(av, env, 0, out, sizeof out), 0);
	check_output(out);
	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	check_store(st);
	pp_store_close(st, err, sizeof err);
}

static void test_record(void **state)
{
	(void)state;
	char out[4096], err[512];
	char *av[] = {args[3], "record", "-o", db, "--", args[2], NULL};
	assert_int_equal(ppt_run(av, NULL, 0, out, sizeof out), 0);
	check_output(out);
	pp_store *st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
	if (!st)
		fail_msg("%s", err);
	check_store(st);
	pp_store_close(st, err, sizeof err);
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "inject") && strcmp(argv[1], "record"))) {
		fprintf(stderr, "usage: %s inject APP LIB | record APP PHASEPROF\n", argv[0]);
		return 2;
	}
	args = argv;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_inject, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record, setup, teardown),
	};
	char filter[32];
	snprintf(filter, sizeof filter, "test_%s", argv[1]);
	cmocka_set_test_filter(filter);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
