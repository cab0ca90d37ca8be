/* store_python.c: imports by self and cumulative time from a recording with
 * known times, and the python status line. Runs under ASan too. */
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

static char dir[] = "/tmp/pp-store-python-XXXXXX";

static const pp_import_time *find(const pp_import_time *v, int n, const char *m)
{
	for (int i = 0; i < n; i++)
		if (strcmp(v[i].module, m) == 0)
			return &v[i];
	return NULL;
}

/* Nesting comes from begin/end order on a thread: record with pp_phase_begin
 * and pp_phase_end and compare times relative to each other. */
static void test_import_tree(void **state)
{
	(void)state;
	char spool[128], db[128], err[512];
	snprintf(spool, sizeof spool, "%s/t.spool", dir);
	snprintf(db, sizeof db, "%s/t.db", dir);
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool}), 0);
	pp_meta("python", "CPython 3.11.2: start-up, imports, phaseprof module");
	pp_phase_begin(PP_IMPORT, "a");
	pp_phase_begin(PP_IMPORT, "b");
	pp_phase_begin(PP_IMPORT, "d");
	usleep(2000);
	pp_phase_end();
	pp_phase_end();
	pp_phase_begin(PP_IMPORT, "c");
	pp_phase_begin(PP_LIBRARY_LOAD, "c.so");
	usleep(3000);
	pp_phase_end();
	pp_phase_end();
	usleep(1000);
	pp_phase_end();
	pp_phase_begin(PP_IMPORT, "e");
	pp_phase_end();
	pp_phase_begin(PP_IMPORT, "e");
	pp_phase_end();
	pp_close();
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_ingest(st, spool, NULL, NULL, err, sizeof err), 0);
	pp_store_close(st, NULL, 0);
	st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
	assert_non_null(st);

	pp_import_time *v = NULL;
	int n = 0;
	assert_int_equal(pp_store_import_times(st, 1, 0, 0, &v, &n), 0);
	assert_int_equal(n, 5); /* a b c d e: grouped by module */
	assert_string_equal(v[0].module, "a"); /* by cumulative time */
	const pp_import_time *a = find(v, n, "a"), *b = find(v, n, "b"), *c = find(v, n, "c"),
			     *d = find(v, n, "d"), *e = find(v, n, "e");
	assert_true(a && b && c && d && e);
	assert_int_equal(e->count, 2);
	assert_int_equal(a->depth, 0);
	assert_int_equal(d->depth, 2);
	/* self = cumulative less the direct child imports, exactly */
	assert_int_equal(a->self_ns, a->cumulative_ns - b->cumulative_ns - c->cumulative_ns);
	assert_int_equal(b->self_ns, b->cumulative_ns - d->cumulative_ns);
	/* the library load inside c stays in c's self time */
	assert_int_equal(c->self_ns, c->cumulative_ns);
	assert_true(c->self_ns >= 3000000);
	assert_true(a->self_ns >= 1000000);
	free(v);

	assert_int_equal(pp_store_import_times(st, 1, 1, 2, &v, &n), 0);
	assert_int_equal(n, 2); /* the limit */
	assert_true(v[0].self_ns >= v[1].self_ns);
	free(v);

	char line[256];
	assert_int_equal(pp_store_python_status(st, 1, line, sizeof line), 1);
	assert_string_equal(line, "CPython 3.11.2: start-up, imports, phaseprof module");
	assert_int_equal(pp_store_python_status(st, 99, line, sizeof line), 0);
	assert_string_equal(line, "");
	assert_int_equal(pp_store_import_times(st, 99, 0, 0, &v, &n), 0);
	assert_int_equal(n, 0);
	free(v);
	pp_store_close(st, NULL, 0);
}

/* record's summary (pp_store_startup_summary) reads the Python figures in
 * one pass before the indexes exist: the same numbers as phase totals and
 * the import tree, with an import under a library load under an import
 * (nested through another kind) and a start-up phase. */
static void test_startup_summary_python(void **state)
{
	(void)state;
	char spool[128], db[128], err[512];
	snprintf(spool, sizeof spool, "%s/s.spool", dir);
	snprintf(db, sizeof db, "%s/s.db", dir);
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool}), 0);
	pp_phase_begin(PP_PROCESS_START, "python");
	usleep(1000);
	pp_phase_end();
	pp_phase_begin(PP_IMPORT, "a");
	pp_phase_begin(PP_LIBRARY_LOAD, "a.so");
	pp_phase_begin(PP_IMPORT, "b");
	usleep(2000);
	pp_phase_end();
	pp_phase_end();
	pp_phase_end();
	pp_phase_begin(PP_IMPORT, "c");
	usleep(500);
	pp_phase_end();
	pp_phase_begin(PP_IMPORT, "c");
	usleep(3000);
	pp_phase_end();
	pp_close();
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_ingest(st, spool, NULL, NULL, err, sizeof err), 0);
	pp_startup_summary s;
	assert_int_equal(pp_store_startup_summary(st, 1, &s), 0);
	pp_phase_total *pt = NULL;
	int np = 0;
	int64_t startup = -1, imports = -1;
	assert_int_equal(pp_store_phase_totals(st, 1, &pt, &np), 0);
	for (int k = 0; k < np; k++) {
		if (pt[k].kind == PP_PROCESS_START)
			startup = pt[k].total_ns;
		if (pt[k].kind == PP_IMPORT)
			imports = pt[k].total_ns;
	}
	free(pt);
	assert_true(startup > 0 && imports > 0);
	assert_int_equal(s.py_startup_ns, startup);
	assert_int_equal(s.imports_ns, imports);
	pp_import_time *v = NULL;
	int n = 0;
	assert_int_equal(pp_store_import_times(st, 1, 0, 0, &v, &n), 0);
	int64_t count = 0;
	for (int i = 0; i < n; i++)
		count += v[i].count;
	assert_int_equal(s.imports, count);
	assert_int_equal(s.imports, 4);
	assert_string_equal(s.slowest_import, v[0].module);
	assert_int_equal(s.slowest_import_ns, v[0].cumulative_ns);
	free(v);
	/* a run without Python: no figures */
	assert_int_equal(pp_store_startup_summary(st, 99, &s), 0);
	assert_int_equal(s.py_startup_ns, -1);
	assert_int_equal(s.imports_ns, -1);
	assert_int_equal(s.imports, 0);
	pp_store_close(st, NULL, 0);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_import_tree),
		cmocka_unit_test(test_startup_summary_python),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		rc = rc ? rc : 1;
	return rc;
}
