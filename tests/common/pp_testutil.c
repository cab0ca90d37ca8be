/*
 * pp_testutil.c — helpers shared by test suites (pp_testutil.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_internal.h"
#include "pp_testutil.h"

static sqlite3_stmt *prepare(pp_store *st, const char *sql)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(pp_store_db(st), sql, -1, &s, NULL) != SQLITE_OK)
		fail_msg("bad sql %s: %s", sql, sqlite3_errmsg(pp_store_db(st)));
	return s;
}

int64_t ppt_q_int(pp_store *st, const char *sql)
{
	sqlite3_stmt *s = prepare(st, sql);
	int64_t v = -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

double ppt_q_double(pp_store *st, const char *sql)
{
	sqlite3_stmt *s = prepare(st, sql);
	double v = -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_double(s, 0);
	sqlite3_finalize(s);
	return v;
}

char *ppt_q_text(pp_store *st, const char *sql, char *out, size_t n)
{
	sqlite3_stmt *s = prepare(st, sql);
	out[0] = 0;
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(out, n, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return out;
}

int ppt_run(char *const argv[], const char *const env[], int merge_stderr, char *out, size_t n)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		dup2(fd[1], 1);
		if (merge_stderr)
			dup2(fd[1], 2);
		close(fd[1]);
		for (int i = 0; env && env[i]; i += 2)
			setenv(env[i], env[i + 1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	size_t got = 0;
	ssize_t k;
	char spill[512]; /* past a full buffer: drained, so the child never blocks */
	while ((k = got + 1 < n ? read(fd[0], out + got, n - 1 - got) : read(fd[0], spill, sizeof spill)) > 0)
		if (got + 1 < n)
			got += (size_t)k;
	out[got] = 0;
	close(fd[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

char *ppt_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc(n > 0 ? (size_t)n + 1 : 1);
	size_t r = n > 0 ? fread(s, 1, (size_t)n, f) : 0;
	s[r] = 0;
	fclose(f);
	return s;
}

int ppt_sh(const char *dir, const char *fmt, ...)
{
	char line[4096], cmd[5200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "cd '%s' && { %s ; } >'%s/out' 2>'%s/err' </dev/null", dir, line, dir, dir);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int ppt_tmpdir(char *dir, size_t n, const char *prefix)
{
	snprintf(dir, n, "/tmp/%s-XXXXXX", prefix);
	return mkdtemp(dir) ? 0 : -1;
}

int ppt_rmtree(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

pp_store *ppt_ingest(const char *spool, const char *db, pp_ingest_result *res)
{
	char err[512];
	unlink(db);
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	if (!st)
		fail_msg("%s: %s", db, err);
	if (pp_store_ingest(st, spool, NULL, res, err, sizeof err) != 0)
		fail_msg("ingest %s: %s", spool, err);
	return st;
}
