/* A new database from the built-in image is the database the schema's SQL
 * makes: same schema, rows and settings; it is put in place whole, once,
 * and never over a file or beside a leftover -wal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "phaseprof.h"

#include "store.h"
#include "store_internal.h"
#include "pp_testutil.h"

static char tmpdir[256];

static void tmp(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", tmpdir, name); }

/* Everything a database made by record's open holds before ingest, as text:
 * the schema rows, meta, phase_kinds and the settings in the header. */
static char *describe(const char *path)
{
	static const char *const q[] = {
		"SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master ORDER BY rowid",
		"SELECT key, value FROM meta ORDER BY key",
		"SELECT id, name FROM phase_kinds ORDER BY id",
		"PRAGMA application_id", "PRAGMA user_version", "PRAGMA schema_version",
		"PRAGMA page_size", "PRAGMA page_count", "PRAGMA freelist_count",
		"PRAGMA auto_vacuum", "PRAGMA encoding", "PRAGMA journal_mode", "PRAGMA integrity_check",
	};
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	out[0] = 0;
	for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
		sqlite3_stmt *s;
		assert_int_equal(sqlite3_prepare_v2(db, q[i], -1, &s, NULL), SQLITE_OK);
		while (sqlite3_step(s) == SQLITE_ROW)
			for (int c = 0; c < sqlite3_column_count(s); c++) {
				const char *t = (const char *)sqlite3_column_text(s, c);
				size_t need = len + (t ? strlen(t) : 4) + 64;
				while (need > cap)
					assert_non_null(out = realloc(out, cap *= 2));
				len += (size_t)snprintf(out + len, cap - len, "%s%s", t ? t : "NULL",
							c + 1 < sqlite3_column_count(s) ? "|" : "\n");
			}
		sqlite3_finalize(s);
		len += (size_t)snprintf(out + len, cap - len, "--\n");
	}
	sqlite3_close(db);
	return out;
}

static pp_store *open_new(const char *path, int *created)
{
	char err[512];
	pp_store *st = pp_store_open(path, PP_STORE_WRITE, err, sizeof err);
	if (!st)
		fail_msg("%s", err);
	*created = pp_store_created(st);
	return st;
}

static void close_ok(pp_store *st)
{
	char err[512] = "";
	if (pp_store_close(st, err, sizeof err) != 0)
		fail_msg("close: %s", err);
}

static int count_new_files(void)
{
	DIR *d = opendir(tmpdir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += strstr(e->d_name, ".new") != NULL;
	if (d)
		closedir(d);
	return n;
}

static void test_same_as_sql(void **state)
{
	(void)state;
	/* a native build always has the image: no silent fallback */
	assert_true(pp_store_image_len > 4096);
	assert_memory_equal(pp_store_image, "SQLite format 3", 16);
	char a[512], b[512];
	int created;
	tmp(a, sizeof a, "image.db");
	pp_store *st = open_new(a, &created);
	assert_int_equal(created, 1);
	/* the image is in WAL mode already, written without syncs like any new file */
	char mode[16];
	assert_non_null(ppt_q_text(st, "PRAGMA journal_mode", mode, sizeof mode));
	assert_string_equal(mode, "wal");
	assert_int_equal(ppt_q_int(st, "PRAGMA synchronous"), 0);
	close_ok(st);
	/* an empty file: SQLite opens it, create_schema runs the schema */
	tmp(b, sizeof b, "sql.db");
	FILE *f = fopen(b, "w");
	assert_non_null(f);
	fclose(f);
	st = open_new(b, &created);
	assert_int_equal(created, 1);
	close_ok(st);
	char *da = describe(a), *db = describe(b);
	assert_string_equal(da, db);
	assert_non_null(strstr(da, "schema_version|3\n"));
	assert_non_null(strstr(da, "CREATE TABLE phase_kinds"));
	free(da);
	free(db);
	assert_int_equal(count_new_files(), 0);

	/* and opened again, it is an existing database like the other */
	st = open_new(a, &created);
	assert_int_equal(created, 0);
	close_ok(st);
}

static void test_place_once(void **state)
{
	(void)state;
	char p[512];
	tmp(p, sizeof p, "placed.db");
	assert_int_equal(store_image_place(p), 0);
	struct stat s1, s2;
	assert_int_equal(stat(p, &s1), 0);
	assert_int_equal((size_t)s1.st_size, pp_store_image_len);
	/* a second writer finds it made: nothing replaced */
	assert_int_equal(store_image_place(p), 1);
	assert_int_equal(stat(p, &s2), 0);
	assert_int_equal(s1.st_ino, s2.st_ino);
	assert_int_equal(count_new_files(), 0);
	/* a folder it cannot write into: not made, the SQL way reports why */
	tmp(p, sizeof p, "nowhere/x.db");
	assert_int_equal(store_image_place(p), -1);
}

/* A -wal left by a database since deleted would be replayed onto the
 * image; through the SQL way SQLite discards it (the file is empty). */
static void test_leftover_wal(void **state)
{
	(void)state;
	char other[512], p[512], wal[600];
	tmp(other, sizeof other, "other.db");
	tmp(p, sizeof p, "fresh.db");
	sqlite3 *h;
	assert_int_equal(sqlite3_open(other, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h,
				      "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
				      "CREATE TABLE customers(id, name); INSERT INTO customers VALUES(1, 'x');"
				      "PRAGMA application_id=7;",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	char cmd[1400];
	snprintf(cmd, sizeof cmd, "cp '%s-wal' '%s-wal'", other, p);
	assert_int_equal(system(cmd), 0);
	sqlite3_close(h);
	assert_int_equal(store_image_place(p), -1);
	int created;
	pp_store *st = open_new(p, &created);
	assert_int_equal(created, 1);
	assert_int_equal(ppt_q_int(st, "PRAGMA application_id"), PP_APPLICATION_ID);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM sqlite_master WHERE name = 'customers'"), 0);
	close_ok(st);
	snprintf(wal, sizeof wal, "%s-wal", p);
	assert_int_equal(access(wal, F_OK), -1);
}

/* Writers creating one database at once: exactly one made it, every one
 * opens it, and it is whole. */
static void test_concurrent(void **state)
{
	(void)state;
	enum { WRITERS = 4, ROUNDS = 10 };
	char p[512];
	tmp(p, sizeof p, "race.db");
	for (int r = 0; r < ROUNDS; r++) {
		char cmd[1700];
		snprintf(cmd, sizeof cmd, "rm -f '%s' '%s-wal' '%s-shm'", p, p, p);
		assert_int_equal(system(cmd), 0);
		int go[2];
		assert_int_equal(pipe(go), 0);
		pid_t kids[WRITERS];
		for (int k = 0; k < WRITERS; k++) {
			kids[k] = fork();
			assert_true(kids[k] >= 0);
			if (kids[k] == 0) {
				char c, err[512];
				close(go[1]);
				if (read(go[0], &c, 1) != 0)
					_exit(9);
				pp_store *st = pp_store_open(p, PP_STORE_WRITE, err, sizeof err);
				if (!st) {
					fprintf(stderr, "writer %d: %s\n", k, err);
					_exit(2);
				}
				int made = pp_store_created(st);
				int64_t kinds = ppt_q_int(st, "SELECT count(*) FROM phase_kinds");
				_exit(pp_store_close(st, err, sizeof err) != 0 ? 3 : kinds != PP_KIND_COUNT ? 4 : made);
			}
		}
		close(go[0]);
		close(go[1]); /* all start */
		int made = 0;
		for (int k = 0; k < WRITERS; k++) {
			int status;
			assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
			assert_true(WIFEXITED(status));
			int code = WEXITSTATUS(status);
			if (code > 1)
				fail_msg("round %d writer %d: exit %d", r, k, code);
			made += code;
		}
		assert_int_equal(made, 1);
		int created;
		pp_store *st = open_new(p, &created);
		assert_int_equal(created, 0);
		char ok[16];
		assert_non_null(ppt_q_text(st, "PRAGMA integrity_check", ok, sizeof ok));
		assert_string_equal(ok, "ok");
		close_ok(st);
	}
	assert_int_equal(count_new_files(), 0);
}

int main(void)
{
	if (ppt_tmpdir(tmpdir, sizeof tmpdir, "pp-test-store-image") != 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_sql),
		cmocka_unit_test(test_place_once),
		cmocka_unit_test(test_leftover_wal),
		cmocka_unit_test(test_concurrent),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	ppt_rmtree(tmpdir);
	return rc;
}
