/*
 * test_pystack.c — Python frames in CPU samples, end to end: `phaseprof
 * record --sample` on pystack_target.py under /usr/bin/python3 (CPython
 * 3.11), then the folded export. Groups (one ctest case each):
 *   frames   outer;middle;inner_busy with file:line in order, native frames
 *            under the Python frame that called them (sorted → lambda,
 *            numpy.dot → _multiarray_umath), the eval loop replaced; the
 *            same stacks in the Chrome trace (samples + stackFrames)
 *   unknown  a CPython version whose layout was not checked (simulated),
 *            a 3.13 without debug offsets (simulated) and --no-python:
 *            native frames only and the one line that says why
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pp_testutil.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	return ppt_tmpdir(dir, sizeof dir, "pp-pystack-test");
}

static int teardown(void **state)
{
	(void)state;
	return ppt_rmtree(dir);
}

/* A file of the test's folder, whole. */
static char *slurp(const char *name)
{
	char path[400];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return ppt_slurp(path);
}

static char *q_text(const char *sql)
{
	char p[300];
	snprintf(p, sizeof p, "%s/run.db", dir);
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	char *r = strdup(sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)
			 ? (const char *)sqlite3_column_text(s, 0) : "");
	sqlite3_finalize(s);
	sqlite3_close(db);
	return r;
}

/* folded export of run.db into dir/folded */
static char *folded(void)
{
	assert_int_equal(ppt_sh(dir, PP_BIN " export --format folded -o folded run.db"), 0);
	return slurp("folded");
}

/* sum of the counts of the folded lines that contain every string in
 * `all` (in that order) and none of `none` */
static long count_lines(const char *text, const char *const *all, const char *none)
{
	long total = 0;
	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		char *line = strndup(l, n);
		const char *at = line;
		int ok = 1;
		for (int i = 0; all[i] && ok; i++) {
			const char *h = strstr(at, all[i]);
			if (h)
				at = h + strlen(all[i]);
			else
				ok = 0;
		}
		if (ok && none && strstr(line, none))
			ok = 0;
		if (ok) {
			const char *sp = strrchr(line, ' ');
			total += sp ? atol(sp + 1) : 0;
		}
		free(line);
		l += n + (e ? 1 : 0);
	}
	return total;
}

#define T "pystack_target.py"

static void test_frames(void **state)
{
	(void)state;
	/* one BLAS thread: the matmul's samples then carry the Python line that called it.
	 * The sampler fires at most once per tick of the thread's CPU time (250 Hz
	 * here). Each part of the target runs for 0.4 s of its thread's CPU time
	 * (not a fixed amount of work; the numpy part 1 s), so it gets its
	 * samples however loaded the machine is: 45-75 per 0.4 s beside a CPU
	 * hog, ~100 quiet. Numpy's own code under its Python line, beside a hog:
	 * 7-41 samples in 16 runs at 0.4 s (median 30), 2.5x that at 1 s; >= 3
	 * asserted. The fixed 12 products of 400x400 it replaces gave 1-5 in 8
	 * runs (their time is in OpenBLAS's kernel, whose samples do not unwind
	 * past it): 0 in 3 of 15 runs under load */
	assert_int_equal(ppt_sh(dir, "OPENBLAS_NUM_THREADS=1 " PP_BIN " record -o run.db --sample 1000 -- "
				"/usr/bin/python3 " PP_SRC "/" T " 0.4"),
			 0);
	char *o = slurp("out");
	assert_string_equal(o, "done\n");
	free(o);
	char *m = q_text("SELECT value FROM run_meta WHERE key = 'agent.python_frames'");
	assert_string_equal(m, "on: CPython 3.11.2");
	free(m);
	char *f = folded();
	/* Python callers in order, each at its call line, the leaf in the loop */
	const char *chain[] = {"<module> (" T ":50);run_for (" T ":45);outer (" T ":19);middle (" T ":15);inner_busy (" T ":",
			       NULL};
	long busy = count_lines(f, chain, NULL);
	assert_true(busy >= 20);
	/* the hot loop's lines */
	const char *loop[] = {"inner_busy (" T ":9)", NULL}, *body[] = {"inner_busy (" T ":10)", NULL};
	assert_true(count_lines(f, loop, NULL) + count_lines(f, body, NULL) >= busy * 9 / 10);
	/* each eval-loop frame replaced by the Python frames it ran */
	long eval_left = busy - count_lines(f, chain, "_PyEval_EvalFrameDefault");
	assert_true(eval_left * 10 <= busy);
	/* Python → native (sorted) → Python (the key lambda) */
	const char *cb[] = {"sorter (" T ":25);", "PyObject_", "sorter.<locals>.<lambda> (" T ":25)", NULL};
	assert_true(count_lines(f, cb, NULL) >= 5);
	/* numpy's native code under the Python line that called it */
	const char *np[] = {"matmul_caller (" T ":33);", "_multiarray_umath", NULL};
	assert_true(count_lines(f, np, NULL) >= 3);
	/* Python frames in the frames table: symbol "qualname (file:line)", module the .py path */
	char *mod = q_text("SELECT m.value FROM frames f JOIN strings s ON s.id = f.symbol_id"
			   " JOIN strings m ON m.id = f.module_id WHERE s.value = 'middle (" T ":15)'");
	assert_string_equal(mod, PP_SRC "/" T);
	free(mod);
	char *ip = q_text("SELECT count(*) FROM frames f JOIN strings s ON s.id = f.symbol_id"
			  " WHERE s.value LIKE '%(" T ":%)' AND f.ip IS NOT NULL");
	assert_string_equal(ip, "0");
	free(ip);
	free(f);
	/* Chrome trace: sample events named after the innermost Python frame,
	 * the stack in stackFrames with Python and native frames */
	assert_int_equal(ppt_sh(dir, PP_BIN " export --format chrome -o trace.json run.db"), 0);
	char *tr = slurp("trace.json");
	assert_non_null(strstr(tr, "\"cat\":\"sample\""));
	assert_non_null(strstr(tr, "\"name\":\"inner_busy (" T ":10)\",\"sf\":\"r1n"));
	assert_non_null(strstr(tr, "\"category\":\"python\",\"name\":\"middle (" T ":15)\",\"parent\":\"r1n"));
	assert_non_null(strstr(tr, "\"category\":\"native\",\"name\":\"PyEval_EvalCode\""));
	free(tr);
	/* info says it in one line */
	assert_int_equal(ppt_sh(dir, PP_BIN " info run.db"), 0);
	o = slurp("out");
	assert_non_null(strstr(o, "python frames in samples: on: CPython 3.11.2\n"));
	/* periods the kernel merged (1000 Hz asked, a tick rate below it) are said, not hidden */
	char *merged = q_text("SELECT count(*) FROM run_meta WHERE key = 'agent.sample_periods_merged'");
	if (strcmp(merged, "0") != 0)
		assert_non_null(strstr(o, "timer periods merged by the kernel"));
	free(merged);
	free(o);
}

static void test_unknown(void **state)
{
	(void)state;
	assert_int_equal(ppt_sh(dir, "PHASEPROF_PYSTACK_FAKE_VERSION=3.99.0 " PP_BIN
			    " record -o run.db --sample 1000 -- /usr/bin/python3 " PP_SRC "/" T " 0.1"), 0);
	char *o = slurp("out");
	assert_string_equal(o, "done\n");
	free(o);
	char *m = q_text("SELECT group_concat(value, '|') FROM run_meta WHERE key = 'agent.python_frames'");
	assert_string_equal(m, "off: CPython 3.99.0 frame layout not known to this build (3.11, 3.12: "
			       "checked tables; 3.13: its debug offsets); native frames only");
	free(m);
	char *n = q_text("SELECT count(*) FROM py_frames");
	assert_string_equal(n, "0");
	free(n);
	char *f = folded();
	const char *eval[] = {"_PyEval_EvalFrameDefault", NULL};
	assert_true(count_lines(f, eval, NULL) > 0);
	const char *py[] = {".py:", NULL};
	assert_int_equal(count_lines(f, py, NULL), 0);
	free(f);
	assert_int_equal(ppt_sh(dir, PP_BIN " info run.db"), 0);
	o = slurp("out");
	assert_non_null(strstr(o, "python frames in samples: off: CPython 3.99.0 frame layout not known"));
	free(o);
	/* a 3.13 (simulated) whose _PyRuntime does not start with the debug
	 * offsets: refused, said so */
	assert_int_equal(ppt_sh(dir, "rm -f run.db && PHASEPROF_PYSTACK_FAKE_VERSION=3.13.0 " PP_BIN
			    " record -o run.db --sample 1000 -- /usr/bin/python3 " PP_SRC "/" T " 0.1"), 0);
	m = q_text("SELECT group_concat(value, '|') FROM run_meta WHERE key = 'agent.python_frames'");
	assert_string_equal(m, "off: CPython 3.13.0: no _Py_DebugOffsets (cookie \"xdebugpy\") at the start of "
			       "_PyRuntime; native frames only");
	free(m);
	n = q_text("SELECT count(*) FROM py_frames");
	assert_string_equal(n, "0");
	free(n);
	/* record --no-python: off too, said so */
	assert_int_equal(ppt_sh(dir, "rm -f run.db && " PP_BIN " record -o run.db --no-python --sample 1000 -- /usr/bin/python3 "
			    PP_SRC "/" T " 0.1"), 0);
	m = q_text("SELECT group_concat(value, '|') FROM run_meta WHERE key = 'agent.python_frames'");
	assert_string_equal(m, "off (--no-python): CPython 3.11.2; native frames only");
	free(m);
	n = q_text("SELECT count(*) FROM py_frames");
	assert_string_equal(n, "0");
	free(n);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
		cmocka_unit_test_setup_teardown(test_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown, setup, teardown),
	};
	if (argc > 1) {
		for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
			if (strstr(all[i].name, argv[1]))
				return _cmocka_run_group_tests(argv[1], &all[i], 1, NULL, NULL);
		fprintf(stderr, "test_pystack: no group '%s'\n", argv[1]);
		return 2;
	}
	return cmocka_run_group_tests(all, NULL, NULL);
}
