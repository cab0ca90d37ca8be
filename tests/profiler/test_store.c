/* Store: refusing foreign and newer files with a clear message, findings,
 * query helper, SQL aggregates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "phaseprof.h"

#include "store.h"
#include "store_internal.h"
#include "pp_testutil.h"

static char tmpdir[256];

static void tmp(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", tmpdir, name); }

static void expect_open_error(const char *path, int mode, const char *needle)
{
	char err[512] = "";
	pp_store *st = pp_store_open(path, mode, err, sizeof err);
	if (st)
		fail_msg("%s opened, expected an error containing '%s'", path, needle);
	if (!strstr(err, needle) || !strstr(err, path))
		fail_msg("error '%s' lacks '%s' or the path", err, needle);
}

static void test_refusals(void **state)
{
	(void)state;
	char p[512];
	tmp(p, sizeof p, "missing.db");
	expect_open_error(p, PP_STORE_READ, "no such database");

	tmp(p, sizeof p, "text.db");
	FILE *f = fopen(p, "w");
	fputs("hello, I am a text file and certainly not a database, padded to be long enough "
	      "that sqlite reads a header from me.............................................",
	      f);
	fclose(f);
	expect_open_error(p, PP_STORE_READ, "not an SQLite database");
	expect_open_error(p, PP_STORE_WRITE, "not an SQLite database");

	tmp(p, sizeof p, "foreign.db");
	sqlite3 *db;
	sqlite3_open(p, &db);
	sqlite3_exec(db, "CREATE TABLE customers(id, name); INSERT INTO customers VALUES(1,'x');", 0, 0, 0);
	sqlite3_close(db);
	expect_open_error(p, PP_STORE_READ, "another program");
	expect_open_error(p, PP_STORE_WRITE, "another program");
	/* the foreign file is untouched */
	sqlite3_open(p, &db);
	sqlite3_stmt *s;
	sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &s, NULL);
	sqlite3_step(s);
	assert_int_equal(sqlite3_column_int(s, 0), 1);
	sqlite3_finalize(s);
	sqlite3_close(db);

	tmp(p, sizeof p, "newer.db");
	char err[512];
	pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	sqlite3_exec(pp_store_db(st), "UPDATE meta SET value='99' WHERE key='schema_version'", 0, 0, 0);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	expect_open_error(p, PP_STORE_READ, "newer phaseprof (schema version 99");

	tmp(p, sizeof p, "text.db/inside.db");
	expect_open_error(p, PP_STORE_WRITE, "not writable");
	expect_open_error(tmpdir, PP_STORE_READ, "is a directory");
}

static int64_t sql_int(const char *path, const char *sql);

/* record appends after reading 100 bytes: only a phaseprof file of a version
 * this build writes, at rest, passes; anything else goes the SQLite way. */
static void test_header_current(void **state)
{
	(void)state;
	char p[512], err[512];
	tmp(p, sizeof p, "hdr.db");
	pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	/* open for writing: a WAL file, another writer's */
	assert_int_equal(pp_store_header_current(p), 0);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(sql_int(p, "PRAGMA user_version"), PP_SCHEMA_VERSION);
	assert_int_equal(pp_store_header_current(p), 1);

	/* a file from before the version was in the header gets it at its next write */
	sqlite3 *db;
	sqlite3_open(p, &db);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=0", 0, 0, 0), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(pp_store_header_current(p), 0);
	st = pp_store_open(p, PP_STORE_CHECK, err, sizeof err);
	assert_non_null(st);
	pp_store_close(st, NULL, 0);
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(pp_store_header_current(p), 1);

	/* newer, foreign, not a database, missing */
	sqlite3_open(p, &db);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=99", 0, 0, 0), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(pp_store_header_current(p), 0);
	tmp(p, sizeof p, "foreign.db");
	assert_int_equal(pp_store_header_current(p), 0);
	tmp(p, sizeof p, "text.db");
	assert_int_equal(pp_store_header_current(p), 0);
	tmp(p, sizeof p, "missing.db");
	assert_int_equal(pp_store_header_current(p), 0);
}

/* record's early open gives up when told to: an existing file is left as it
 * was (no log beside it, still one file); a new one is made regardless. */
static void test_open_cancelled(void **state)
{
	(void)state;
	char p[512], wal[600], err[512];
	tmp(p, sizeof p, "cancel.db");
	pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	_Atomic int cancel = 1;
	st = pp_store_open_cancellable(p, PP_STORE_WRITE, &cancel, err, sizeof err);
	assert_null(st);
	assert_non_null(strstr(err, "interrupted"));
	assert_non_null(strstr(err, p));
	snprintf(wal, sizeof wal, "%s-wal", p);
	assert_int_equal(access(wal, F_OK), -1);
	assert_int_equal(pp_store_header_current(p), 1);
	cancel = 0;
	st = pp_store_open_cancellable(p, PP_STORE_WRITE, &cancel, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);

	tmp(p, sizeof p, "cancel-new.db");
	cancel = 1;
	st = pp_store_open_cancellable(p, PP_STORE_WRITE, &cancel, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
}

static int count_cb(sqlite3_stmt *row, void *ud)
{
	*(int64_t *)ud += sqlite3_column_int64(row, 0);
	return 0;
}

static void test_findings_and_query(void **state)
{
	(void)state;
	char p[512], err[512];
	tmp(p, sizeof p, "f.db");
	pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	pp_finding f = {.run_id = 7, .rule = "step-time-grows", .severity = "high", .score = 0.9,
			.title = "t", .evidence = "e", .fix = "x"};
	assert_int_equal(pp_store_add_finding(st, &f), 0);
	f.score = 0.2;
	strcpy(f.rule, "phase-share");
	strcpy(f.severity, "moderate");
	assert_int_equal(pp_store_add_finding(st, &f), 0);
	pp_finding *out;
	int n;
	assert_int_equal(pp_store_findings(st, 7, &out, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].rule, "step-time-grows"); /* by score */
	free(out);
	assert_int_equal(pp_store_clear_findings(st, 7), 0);
	assert_int_equal(pp_store_findings(st, 7, &out, &n), 0);
	assert_int_equal(n, 0);
	free(out);

	int64_t a = pp_store_intern(st, "MatMul"), b = pp_store_intern(st, "MatMul");
	assert_true(a > 0);
	assert_int_equal(a, b);
	/* read back by id from the cache, which knows nothing else */
	assert_string_equal(pp_store_intern_text(st, a), "MatMul");
	assert_null(pp_store_intern_text(st, a + 1000));
	int64_t sum = 0;
	assert_int_equal(pp_store_query(st, "SELECT ?1 + 1", 41, count_cb, &sum), 0);
	assert_int_equal(sum, 42);
	sum = 0;
	assert_int_equal(pp_store_query(st,
					"SELECT CAST(median(x) AS INTEGER) FROM (SELECT 1 AS x UNION "
					"ALL SELECT 5 UNION ALL SELECT 100)",
					0, count_cb, &sum),
			 0);
	assert_int_equal(sum, 5);
	assert_int_equal(pp_store_query(st, "SELECT nonsense FROM", 0, count_cb, &sum), -1);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);

	/* reopening read-only works and sees the schema version */
	st = pp_store_open(p, PP_STORE_READ, err, sizeof err);
	assert_non_null(st);
	pp_run_info *runs;
	assert_int_equal(pp_store_runs(st, &runs, &n), 0);
	assert_int_equal(n, 0);
	free(runs);
	pp_run_info one;
	assert_int_equal(pp_store_run(st, 12345, &one), -1);
	/* ingest into a read-only store is refused */
	assert_int_equal(pp_store_ingest(st, p, NULL, NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "read-only"));
	pp_store_close(st, NULL, 0);
	/* the file is one portable file after close: no -wal left behind */
	char wal[600];
	snprintf(wal, sizeof wal, "%s-wal", p);
	assert_int_not_equal(access(wal, F_OK), 0);
}

/* A full disk (simulated with RLIMIT_FSIZE) makes an ingest fail with a clear
 * message and loses nothing committed before; the recorder counts what its
 * spool could not take. */
static void test_disk_full(void **state)
{
	(void)state;
	char db[512], small[512], big[512], err[512];
	tmp(db, sizeof db, "full.db");
	tmp(small, sizeof small, "small.spool");
	tmp(big, sizeof big, "big.spool");
	assert_int_equal(pp_open(&(pp_options){.spool_path = small}), 0);
	pp_mark("first");
	assert_int_equal(pp_close(), 0);
	assert_int_equal(pp_open(&(pp_options){.spool_path = big, .max_buffers = 1024}), 0);
	for (int i = 0; i < 200000; i++)
		pp_counter("c", i);
	assert_int_equal(pp_close(), 0);
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_ingest(st, small, NULL, NULL, err, sizeof err), 0);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);

	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		struct stat sb;
		stat(db, &sb);
		struct rlimit rl = {(rlim_t)sb.st_size + 200000, RLIM_INFINITY};
		setrlimit(RLIMIT_FSIZE, &rl);
		pp_store *s2 = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
		if (!s2)
			_exit(10);
		int rc = pp_store_ingest(s2, big, NULL, NULL, err, sizeof err);
		pp_store_close(s2, NULL, 0);
		if (rc == 0)
			_exit(11);
		if (!strstr(err, "big.spool") || !strstr(err, "failed"))
			_exit(12);
		/* the spool of a recorder whose disk fills up */
		char sp[600];
		snprintf(sp, sizeof sp, "%s.rec", big);
		rl.rlim_cur = 100000;
		setrlimit(RLIMIT_FSIZE, &rl);
		if (pp_open(&(pp_options){.spool_path = sp, .max_buffers = 1024}) != 0)
			_exit(13);
		for (int i = 0; i < 100000; i++)
			pp_mark("m");
		pp_recorder_stats rs;
		if (pp_close() == 0)
			_exit(14);
		pp_stats(&rs);
		if (!strstr(pp_last_error(), "could not be written") || rs.events_lost == 0)
			_exit(15);
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* what was committed before is intact */
	st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
	assert_non_null(st);
	pp_run_info *runs;
	int n;
	assert_int_equal(pp_store_runs(st, &runs, &n), 0);
	assert_int_equal(n, 1);
	free(runs);
	pp_store_close(st, NULL, 0);
}

static void sql_file(const char *path, const char *sql)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg);
	sqlite3_close(db);
}

static int64_t sql_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* A version-2 file (before step_kept) opened for writing gets the table
 * and version 3, in meta and in the header; its rows stay; the kept
 * sites read back by site with their rise per step. */
static void test_upgrade_to_kept(void **state)
{
	(void)state;
	char p[512], err[512];
	tmp(p, sizeof p, "v2.db");
	pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	sql_file(p, "DROP TABLE step_kept; UPDATE meta SET value = '2' WHERE key = 'schema_version'; "
		    "UPDATE meta SET value = 'older' WHERE key = 'schema_digest'; PRAGMA user_version = 2; "
		    "INSERT INTO runs(label, status) VALUES('old', 'complete')");
	assert_int_equal(sql_int(p, "SELECT count(*) FROM sqlite_master WHERE name = 'step_kept'"), 0);
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM sqlite_master WHERE name = 'step_kept'"), 1);
	assert_int_equal(sql_int(p, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"), 3);
	assert_int_equal(sql_int(p, "PRAGMA user_version"), 3);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM runs WHERE label = 'old'"), 1);
	/* sites: one growing 1 MiB a step, one flat, one seen twice only */
	sql_file(p, "INSERT INTO strings(value) VALUES('grow (t.py:1)'), ('flat (t.py:2)'), ('brief (t.py:3)');"
		    "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9) "
		    "INSERT INTO step_kept SELECT 1, i, (SELECT id FROM strings WHERE value = 'grow (t.py:1)'), 0, "
		    "(i + 1) * 1048576, i + 1, 1048576 FROM n UNION ALL SELECT 1, i, (SELECT id FROM strings WHERE "
		    "value = 'flat (t.py:2)'), 0, 4194304, 4, 0 FROM n UNION ALL SELECT 1, i, (SELECT id FROM "
		    "strings WHERE value = 'brief (t.py:3)'), 0, 1 << 30, 1, 0 FROM n WHERE i < 2");
	st = pp_store_open(p, PP_STORE_READ, err, sizeof err);
	assert_non_null(st);
	pp_kept_site *k = NULL;
	int n = 0;
	assert_int_equal(pp_store_kept_sites(st, 1, 1, &k, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(k[0].site, "grow (t.py:1)");
	assert_true(k[0].per_step_bytes == 1048576.0);
	assert_int_equal(k[0].first_step, 1);
	assert_int_equal(k[0].last_step, 9);
	assert_int_equal(k[0].last_blocks, 10);
	assert_string_equal(k[1].site, "flat (t.py:2)");
	assert_true(k[1].per_step_bytes == 0.0);
	free(k);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
}

/* A database made before the taxonomy grew gets the new kinds (and so
 * spans_v shows their spans) the next time it is opened for writing; that
 * build's schema digest differs from ours, which is what makes the open
 * re-run the schema (a file with ours skips it). */
static void test_kinds_added(void **state)
{
	(void)state;
	char p[512], err[512];
	tmp(p, sizeof p, "kinds.db");
	pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM phase_kinds"), PP_KIND_COUNT);
	/* same digest: taken as this build's schema, nothing re-run */
	sql_file(p, "DELETE FROM phase_kinds WHERE id >= 22");
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM phase_kinds"), 22);
	/* an older build's digest: the kinds are added and the digest is ours */
	sql_file(p, "UPDATE meta SET value = 'older' WHERE key = 'schema_digest'");
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM phase_kinds"), PP_KIND_COUNT);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM meta WHERE key = 'schema_digest' AND value != 'older'"), 1);
	/* and one from before digests: the same */
	sql_file(p, "DELETE FROM phase_kinds WHERE id >= 22; DELETE FROM meta WHERE key = 'schema_digest'");
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM phase_kinds"), PP_KIND_COUNT);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM phase_kinds WHERE id = 29 AND name = 'comm_init'"), 1);
}

/* A new database has the indexes tables get from their first row (on
 * empty tables: free); tables read a few queries per run get theirs from
 * 1024 rows. Before a long first ingest the empty tables' indexes are
 * dropped, and the build after it makes those of the tables it filled. */
static void test_indexes_on_filled_tables(void **state)
{
	(void)state;
	char p[512], err[512];
	tmp(p, sizeof p, "indexes.db");
	const char *q = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ";
	char sql[256];
	pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	snprintf(sql, sizeof sql, "%s'spans_run'", q);
	assert_int_equal(sql_int(p, sql), 1);
	snprintf(sql, sizeof sql, "%s'io_run'", q);
	assert_int_equal(sql_int(p, sql), 0);
	remove(p);

	/* deferred: only the filled table's index comes back */
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_defer_indexes(st, err, sizeof err), 0);
	assert_int_equal(sqlite3_exec(pp_store_db(st), "INSERT INTO marks(run_id, ts_ns) VALUES (1, 5)", 0, 0, 0),
			 SQLITE_OK);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	snprintf(sql, sizeof sql, "%s'marks_run'", q);
	assert_int_equal(sql_int(p, sql), 1);
	snprintf(sql, sizeof sql, "%s'spans_run'", q);
	assert_int_equal(sql_int(p, sql), 0);
	/* a later writer that fills a table builds its index at its close */
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(sqlite3_exec(pp_store_db(st),
				      "INSERT INTO spans(run_id, tid, kind, start_ns, end_ns, depth) VALUES (1, 1, 0, 1, 2, 0)",
				      0, 0, 0),
			 SQLITE_OK);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(sql_int(p, sql), 1);
	snprintf(sql, sizeof sql, "%s'spans_kind'", q);
	assert_int_equal(sql_int(p, sql), 1);
	snprintf(sql, sizeof sql, "%s'gpu_run'", q);
	assert_int_equal(sql_int(p, sql), 0);
	/* a table read a few queries per run: indexed from 1024 rows on */
	snprintf(sql, sizeof sql, "%s'io_run'", q);
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(sqlite3_exec(pp_store_db(st), "INSERT INTO io(run_id, op, calls) VALUES (1, 'read', 1)", 0, 0, 0),
			 SQLITE_OK);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(sql_int(p, sql), 0);
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(sqlite3_exec(pp_store_db(st),
				      "WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 1024)"
				      " INSERT INTO io(run_id, op, calls) SELECT i, 'read', 1 FROM n",
				      0, 0, 0),
			 SQLITE_OK);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(sql_int(p, sql), 1);
}

/* Damaged pages: appending is refused with one line naming the file; a
 * reader gets an error, not a partial answer. */
static void test_corrupt_pages(void **state)
{
	(void)state;
	char p[512], err[512];
	tmp(p, sizeof p, "corrupt.db");
	pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	sql_file(p, "INSERT INTO runs(id, label, status) VALUES(1, 'r', 'complete');"
		    "INSERT INTO strings(id, value) VALUES(1, 'c');"
		    "WITH RECURSIVE i(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM i WHERE x < 19999) "
		    "INSERT INTO counters(run_id, tid, name_id, ts_ns, value) SELECT 1, 1, 1, x, x FROM i;");
	struct stat sb;
	assert_int_equal(stat(p, &sb), 0);
	/* small enough to be checked whole */
	assert_true(sb.st_size > 256 * 1024 && sb.st_size < 1024 * 1024);
	/* garbage over the second half of the file: the counters' b-trees
	 * (the first pages hold the schema and the small tables) */
	int64_t page = sql_int(p, "PRAGMA page_size");
	FILE *f = fopen(p, "r+b");
	assert_non_null(f);
	long pages = (long)(sb.st_size / page);
	for (long pg = pages / 2; pg < pages; pg++) {
		fseek(f, pg * page, SEEK_SET);
		for (int i = 0; i < page - 100; i++)
			fputc(0x5a, f);
	}
	fclose(f);
	expect_open_error(p, PP_STORE_WRITE, "damaged database, not appending to it");
	/* a reader that reaches the page says so */
	st = pp_store_open(p, PP_STORE_READ, err, sizeof err);
	assert_non_null(st);
	pp_counter_row *rows = NULL;
	int n = 0;
	assert_int_equal(pp_store_counter(st, 1, "c", &rows, &n), -1);
	assert_null(rows);
	assert_non_null(strstr(pp_store_error(st), "malformed"));
	pp_store_close(st, NULL, 0);
}

/* Over 1 MiB the check before an append reads the tables an append
 * writes in the middle of (runs, strings, metadata), not every event page:
 * damage there is refused; damage in the event rows is left for the
 * reader that reaches it. */
static void test_corrupt_pages_big(void **state)
{
	(void)state;
	char p[512], err[512];
	tmp(p, sizeof p, "corrupt-big.db");
	pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	sql_file(p, "INSERT INTO runs(id, label, status) VALUES(1, 'r', 'complete');"
		    "INSERT INTO strings(id, value) VALUES(1, 'c');"
		    "WITH RECURSIVE i(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM i WHERE x < 149999) "
		    "INSERT INTO counters(run_id, tid, name_id, ts_ns, value) SELECT 1, 1, 1, x, x FROM i;");
	struct stat sb;
	assert_int_equal(stat(p, &sb), 0);
	assert_true(sb.st_size > (1 << 20));
	int64_t page = sql_int(p, "PRAGMA page_size");
	int64_t strings_root = sql_int(p, "SELECT rootpage FROM sqlite_master WHERE name = 'strings'");
	/* garbage over the last quarter: counters' pages only */
	FILE *f = fopen(p, "r+b");
	assert_non_null(f);
	long pages = (long)(sb.st_size / page);
	for (long pg = pages - pages / 4; pg < pages - 1; pg++) {
		fseek(f, pg * page + 8, SEEK_SET); /* past the page header: the cells */
		for (int i = 0; i < page - 16; i++)
			fputc(0x5a, f);
	}
	fclose(f);
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	/* the strings table's root page: refused */
	f = fopen(p, "r+b");
	assert_non_null(f);
	fseek(f, (strings_root - 1) * page, SEEK_SET);
	for (int i = 0; i < page; i++)
		fputc(0x5a, f);
	fclose(f);
	expect_open_error(p, PP_STORE_WRITE, "damaged database, not appending to it");
}

/* Opening an existing file for writing switches it to WAL, which needs
 * the file to itself for a moment: the open waits while another connection
 * reads it. (The race it also waits out, another writer switching the file
 * back at its close, is what test_store_image's concurrent writers met.) */
static void test_open_waits_for_reader(void **state)
{
	(void)state;
	char p[512], err[512];
	tmp(p, sizeof p, "reader.db");
	pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		sqlite3 *db;
		sqlite3_stmt *s;
		if (sqlite3_open(p, &db) != SQLITE_OK || sqlite3_exec(db, "BEGIN", 0, 0, 0) != SQLITE_OK ||
		    sqlite3_prepare_v2(db, "SELECT count(*) FROM runs", -1, &s, NULL) != SQLITE_OK ||
		    sqlite3_step(s) != SQLITE_ROW)
			_exit(2);
		if (write(go[1], "r", 1) != 1)
			_exit(3);
		usleep(300000);
		sqlite3_finalize(s);
		sqlite3_exec(db, "COMMIT", 0, 0, 0);
		sqlite3_close(db);
		_exit(0);
	}
	char c;
	close(go[1]);
	assert_int_equal(read(go[0], &c, 1), 1);
	close(go[0]);
	st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
	if (!st)
		fail_msg("%s", err);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	int status;
	assert_int_equal(waitpid(kid, &status, 0), kid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	if (ppt_tmpdir(tmpdir, sizeof tmpdir, "pp-test-store") != 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_upgrade_to_kept),
		cmocka_unit_test(test_header_current),
		cmocka_unit_test(test_open_cancelled),
		cmocka_unit_test(test_findings_and_query),
		cmocka_unit_test(test_disk_full),
		cmocka_unit_test(test_kinds_added),
		cmocka_unit_test(test_indexes_on_filled_tables),
		cmocka_unit_test(test_corrupt_pages),
		cmocka_unit_test(test_corrupt_pages_big),
		cmocka_unit_test(test_open_waits_for_reader),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	return ppt_rmtree(tmpdir) != 0 ? 1 : rc;
}
