/*
 * test_session.c — pp_session (session/include/pp_session.h) on its own:
 * a program that exits 0, one that exits 3, one killed by a signal; each
 * recorded into a fresh database with one run carrying how it ended, the
 * spool folder gone after; and the refusals before anything runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pp_session.h"
#include "pp_testutil.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[PATH_MAX];

/* What the session said, one line after the other. */
typedef struct heard { char text[8192]; int lines, announced; } heard;

static void on_report(void *ud, const char *msg)
{
	heard *h = ud;
	size_t l = strlen(h->text);
	snprintf(h->text + l, sizeof h->text - l, "%s\n", msg);
	h->lines++;
}

static void on_announce(void *ud)
{
	((heard *)ud)->announced++;
}

typedef struct outcome {
	int wait_status;
	pp_session_result r;      /* after pp_session_free */
	int64_t runs, run_exit, run_signal;
	char run_status[32];
	int dir_left;
	heard h;
} outcome;

/* Records argv into a new tmp/name.db with start, wait, finish. */
static void record(const char *name, char *const argv[], outcome *oc)
{
	memset(oc, 0, sizeof *oc);
	char db[PATH_MAX + 64], path[PATH_MAX], err[4096];
	snprintf(db, sizeof db, "%s/%s.db", tmp, name);
	assert_int_equal(pp_session_check_command(argv[0], path, sizeof path, err, sizeof err), 0);
	assert_int_equal(pp_session_check_db(db, err, sizeof err), 0);
	pp_session_opts o = {
		.path = path, .argv = argv, .db = db, .agent = PP_AGENT, .follow_fork = 1, .python = 1,
		.announce = on_announce, .report = on_report, .ud = &oc->h,
	};
	pp_session *s = NULL;
	int rc = pp_session_start(&o, &s, err, sizeof err);
	if (rc)
		print_error("start: %s\n", err);
	assert_int_equal(rc, 0);
	assert_non_null(s);
	assert_int_equal(oc->h.announced, 1);
	oc->wait_status = pp_session_wait(s);
	assert_int_equal(pp_session_finish(s, &oc->r), 0);
	/* the store stays open for the caller's summary until free */
	assert_non_null(oc->r.store);
	assert_int_equal(oc->r.nspools, 1);
	assert_true(oc->r.spools[0].run_id > 0);
	assert_int_equal(oc->r.top_run, oc->r.spools[0].run_id);
	assert_int_equal(oc->r.last_top, oc->r.top_run);
	assert_non_null(oc->r.diag);
	char dir[sizeof oc->r.spool_dir];
	snprintf(dir, sizeof dir, "%s", oc->r.spool_dir);
	pp_session_free(s, &oc->r);
	assert_null(oc->r.store);
	struct stat sb;
	oc->dir_left = stat(dir, &sb) == 0;

	pp_store *st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
	assert_non_null(st);
	oc->runs = ppt_q_int(st, "SELECT count(*) FROM runs");
	pp_run_info ri;
	assert_int_equal(pp_store_run(st, oc->r.top_run, &ri), 0);
	oc->run_exit = ri.exit_code;
	oc->run_signal = ri.term_signal;
	snprintf(oc->run_status, sizeof oc->run_status, "%s", ri.status);
	pp_store_close(st, NULL, 0);
	if (oc->h.lines)
		print_message("session said:\n%s", oc->h.text);
}

static void exits_0(void **state)
{
	(void)state;
	char *argv[] = {"true", NULL};
	outcome oc;
	record("true", argv, &oc);
	assert_int_equal(oc.wait_status, 0);
	assert_int_equal(oc.r.status, 0);
	assert_int_equal(oc.r.exit_code, 0);
	assert_int_equal(oc.r.term_signal, 0);
	assert_int_equal(oc.r.ingested, 1);
	assert_int_equal(oc.r.failed, 0);
	assert_true(oc.r.wall_ns > 0);
	assert_int_equal(oc.runs, 1);
	assert_int_equal(oc.run_exit, 0);
	assert_int_equal(oc.run_signal, 0);
	assert_false(oc.r.spools_kept);
	assert_false(oc.dir_left);
}

static void exits_3(void **state)
{
	(void)state;
	char *argv[] = {"/bin/sh", "-c", "exit 3", NULL};
	outcome oc;
	record("exit3", argv, &oc);
	assert_int_equal(oc.wait_status, 3);
	assert_int_equal(oc.r.status, 3);
	assert_int_equal(oc.r.exit_code, 3);
	assert_int_equal(oc.r.ingested, 1);
	assert_int_equal(oc.runs, 1);
	assert_int_equal(oc.run_exit, 3);
	assert_int_equal(oc.run_signal, 0);
	assert_false(oc.dir_left);
}

static void killed(void **state)
{
	(void)state;
	char *argv[] = {"/bin/sh", "-c", "kill -KILL $$", NULL};
	outcome oc;
	record("killed", argv, &oc);
	assert_int_equal(oc.wait_status, 128 + SIGKILL);
	assert_int_equal(oc.r.status, 128 + SIGKILL);
	assert_int_equal(oc.r.exit_code, -1);
	assert_int_equal(oc.r.term_signal, SIGKILL);
	assert_int_equal(oc.r.ingested, 1);
	assert_int_equal(oc.runs, 1);
	assert_int_equal(oc.run_signal, SIGKILL);
	assert_false(oc.dir_left);
}

/* --keep-spools: the folder stays for the caller to name */
static void keeps_spools(void **state)
{
	(void)state;
	char db[PATH_MAX + 64], path[PATH_MAX], err[4096];
	snprintf(db, sizeof db, "%s/keep.db", tmp);
	char *argv[] = {"true", NULL};
	assert_int_equal(pp_session_check_command(argv[0], path, sizeof path, err, sizeof err), 0);
	pp_session_opts o = {.path = path, .argv = argv, .db = db, .agent = PP_AGENT, .follow_fork = 1,
			     .python = 1, .keep_spools = 1};
	pp_session *s;
	assert_int_equal(pp_session_start(&o, &s, err, sizeof err), 0);
	pp_session_result r;
	assert_int_equal(pp_session_finish(s, &r), 0); /* waits itself */
	assert_int_equal(r.status, 0);
	pp_session_free(s, &r);
	assert_true(r.spools_kept);
	char spool[PATH_MAX + 32];
	snprintf(spool, sizeof spool, "%s", r.spool_dir);
	struct stat sb;
	assert_int_equal(stat(spool, &sb), 0);
	assert_int_equal(ppt_rmtree(spool), 0);
}

static void refusals(void **state)
{
	(void)state;
	char path[PATH_MAX], err[4096];
	assert_int_equal(pp_session_check_command("phaseprof-no-such-command", path, sizeof path, err, sizeof err), -1);
	assert_string_equal(err, "record: phaseprof-no-such-command: command not found");
	assert_int_equal(pp_session_check_db("/nonexistent-folder/x.db", err, sizeof err), -1);
	assert_non_null(strstr(err, "record: cannot create /nonexistent-folder/x.db: folder /nonexistent-folder is not writable"));
}

/* the PMPI layer's default: launchers by name, programs by libmpi */
static void mpi_detection(void **state)
{
	(void)state;
	assert_int_equal(pp_session_is_mpi_command("/opt/x/bin/mpirun"), 1);
	assert_int_equal(pp_session_is_mpi_command("/usr/bin/srun"), 1);
	assert_int_equal(pp_session_is_mpi_command("/bin/true"), 0);
}

int main(void)
{
	if (ppt_tmpdir(tmp, sizeof tmp, "pp-session") != 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exits_0),
		cmocka_unit_test(exits_3),
		cmocka_unit_test(killed),
		cmocka_unit_test(keeps_spools),
		cmocka_unit_test(refusals),
		cmocka_unit_test(mpi_detection),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	ppt_rmtree(tmp);
	return rc;
}
