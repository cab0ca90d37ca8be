/* PHASEPROF_DEBUG: the CLI-side modules' debug lines on stderr, by area,
 * and none without the variable. Runs the phaseprof binary given as
 * argv[1] on a small recorded run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "phaseprof.h"
#include "store.h"
#include "pp_testutil.h"

static const char *phaseprof;
static char dir[256], spool[512], db[512];

static int setup(void **state)
{
	(void)state;
	unsetenv("PHASEPROF_DEBUG");
	if (ppt_tmpdir(dir, sizeof dir, "pp-debug") != 0)
		return -1;
	snprintf(spool, sizeof spool, "%s/run.spool", dir);
	snprintf(db, sizeof db, "%s/run.db", dir);
	pid_t pid = fork();
	if (pid == 0) {
		if (pp_open(&(pp_options){.spool_path = spool, .flush_ms = 5}) != 0)
			_exit(2);
		pp_phase_begin(PP_RUNTIME_INIT, "init");
		pp_phase_end();
		for (int i = 0; i < 4; i++) {
			pp_step_begin(i);
			pp_step_end();
		}
		_exit(pp_close() == 0 ? 0 : 3);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	pp_ingest_result r;
	pp_store *st = ppt_ingest(spool, db, &r);
	return st && pp_store_close(st, NULL, 0) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return ppt_rmtree(dir);
}

/* `phaseprof ARGS…` with PHASEPROF_DEBUG=value (NULL: unset), stdout and stderr together */
static char *run(const char *value, char *const args[])
{
	static char out[1 << 16];
	char *argv[8] = {(char *)phaseprof};
	for (int i = 0; args[i] && i < 6; i++)
		argv[i + 1] = args[i];
	const char *env[] = {"PHASEPROF_DEBUG", value, NULL};
	int rc = ppt_run(argv, value ? env : NULL, 1, out, sizeof out);
	if (rc != 0)
		fail_msg("phaseprof %s exited %d: %s", args[0], rc, out);
	return out;
}

static void test_stats(void **state)
{
	(void)state;
	char *stats[] = {"stats", db, NULL};
	char line[700];

	char *out = run(NULL, stats);
	assert_null(strstr(out, "phaseprof[debug"));
	out = run("0", stats);
	assert_null(strstr(out, "phaseprof[debug"));

	out = run("store", stats);
	snprintf(line, sizeof line,
		 "phaseprof[debug store]: %s: opened for reading: existing phaseprof database", db);
	if (!strstr(out, line))
		fail_msg("no '%s' in:\n%s", line, out);
	assert_null(strstr(out, "phaseprof[debug diag]"));

	out = run("ingest,diag", stats);
	assert_null(strstr(out, "phaseprof[debug store]"));
	if (!strstr(out, "phaseprof[debug diag]: run 1: never diagnosed; running the rules now") ||
	    !strstr(out, "phaseprof[debug diag]: run 1: rule phase_share: "))
		fail_msg("no diag lines in:\n%s", out);

	out = run("1", stats);
	assert_non_null(strstr(out, "phaseprof[debug store]"));
	assert_non_null(strstr(out, "phaseprof[debug diag]"));
}

static void test_ingest(void **state)
{
	(void)state;
	char db2[600];
	snprintf(db2, sizeof db2, "%s/ingested.db", dir);
	char *ingest[] = {"ingest", "-o", db2, spool, NULL};
	char *out = run("ingest", ingest);
	char line[700];
	snprintf(line, sizeof line, "phaseprof[debug ingest]: %s: run 1: ", spool);
	if (!strstr(out, line) || !strstr(out, " spans ("))
		fail_msg("no '%s' in:\n%s", line, out);
	assert_null(strstr(out, "phaseprof[debug store]"));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_debug PHASEPROF\n");
		return 2;
	}
	phaseprof = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_ingest),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
