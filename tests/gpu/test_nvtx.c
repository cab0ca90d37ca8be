/* NVTX ranges from an unmodified nvtx3 program, captured by injection.
 *   test_nvtx inject APP LIB     NVTX_INJECTION64_PATH=LIB, recorder in LIB
 *   test_nvtx record APP PHASEPROF   through `phaseprof record`
 * Ingests the recording and checks spans, marks, counters, start/end ranges
 * and thread names against what the program did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store.h"
#include "store_internal.h"

static int failures;
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			failures++;                                            \
		}                                                              \
	} while (0)

static int64_t q1(pp_store *st, const char *sql)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(pp_store_db(st), sql, -1, &s, NULL) != SQLITE_OK) {
		fprintf(stderr, "bad sql %s: %s\n", sql, sqlite3_errmsg(pp_store_db(st)));
		failures++;
		return -999;
	}
	int64_t v = -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static double qd(pp_store *st, const char *sql)
{
	sqlite3_stmt *s;
	double v = -1;
	if (sqlite3_prepare_v2(pp_store_db(st), sql, -1, &s, NULL) != SQLITE_OK) {
		fprintf(stderr, "bad sql %s: %s\n", sql, sqlite3_errmsg(pp_store_db(st)));
		failures++;
		return v;
	}
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_double(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* Runs argv with extra environment, stdout into out. Returns exit status. */
static int run(char *const argv[], const char *const env[], char *out, size_t n)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		dup2(fd[1], 1);
		for (int i = 0; env[i]; i += 2)
			setenv(env[i], env[i + 1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	size_t got = 0;
	ssize_t k;
	while (got + 1 < n && (k = read(fd[0], out + got, n - 1 - got)) > 0)
		got += (size_t)k;
	out[got] = 0;
	close(fd[0]);
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void check_store(pp_store *st)
{
	CHECK(q1(st, "SELECT count(*) FROM spans_v WHERE name='outer' AND kind=0") == 1, "outer span");
	CHECK(q1(st, "SELECT c.depth - p.depth FROM spans_v c JOIN spans p ON p.id=c.parent_id "
		     "WHERE c.name='inner'") == 1, "inner nested in outer");
	CHECK(q1(st, "SELECT count(*) FROM spans_v p JOIN spans c ON c.parent_id=p.id "
		     "JOIN strings n ON n.id=c.name_id WHERE p.name='outer' AND n.value='inner'") == 1,
	      "inner's parent is outer");
	CHECK(q1(st, "SELECT count(*) FROM spans_v WHERE name='wide-r\xc3\xa4nge'") == 1, "wide string as UTF-8");
	CHECK(q1(st, "SELECT count(*) FROM spans_v WHERE name='trainer:registered-step'") == 1,
	      "domain range with registered string");
	CHECK(q1(st, "SELECT count(*) FROM spans_v WHERE name='ex-range'") == 1, "RangePushEx");
	CHECK(q1(st, "SELECT count(*) FROM spans_v WHERE name='worker-range'") == 1, "worker thread range");
	CHECK(q1(st, "SELECT count(DISTINCT tid) FROM spans_v WHERE name IN ('outer','worker-range')") == 2,
	      "worker range on its own thread");
	CHECK(q1(st, "SELECT count(*) FROM spans WHERE end_ns IS NULL") == 0, "no span left open by the stray pop");
	CHECK(q1(st, "SELECT count(*) FROM marks m JOIN strings n ON n.id=m.name_id WHERE n.value='checkpoint'") == 1,
	      "mark");
	CHECK(q1(st, "SELECT count(*) FROM marks m JOIN strings n ON n.id=m.name_id WHERE n.value='trainer:loss'") == 1,
	      "domain mark");
	CHECK(qd(st, "SELECT c.value FROM counters c JOIN strings n ON n.id=c.name_id WHERE n.value='trainer:loss'") == 0.25,
	      "mark payload as counter");
	CHECK(q1(st, "SELECT end_ns > start_ns FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE kind='marker' AND n.value='async-range'") == 1, "start/end range row");
	CHECK(q1(st, "SELECT g.tid = (SELECT tid FROM spans_v WHERE name='outer') FROM gpu_activity g "
		     "WHERE kind='marker'") == 1, "start/end range on the starting thread");
	CHECK(q1(st, "SELECT count(*) FROM threads WHERE name='nvtx-main'") == 1, "thread named by NVTX");
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s inject APP LIB | record APP PHASEPROF\n", argv[0]);
		return 2;
	}
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char spool[512], db[512], out[4096];
	snprintf(spool, sizeof spool, "%s/ppgpu-nvtx-%d.spool", dir, (int)getpid());
	snprintf(db, sizeof db, "%s/ppgpu-nvtx-%d.db", dir, (int)getpid());
	unlink(db);
	char err[512];
	pp_store *st = NULL;
	if (strcmp(argv[1], "inject") == 0) {
		char *av[] = {argv[2], NULL};
		/* Preloaded as well, as `phaseprof record` does with the agent: the
		 * recorder's initial-exec TLS cannot be placed by a late dlopen, and
		 * NVTX's dlopen of a preloaded library returns the same handle. */
		char asan[512];
		snprintf(asan, sizeof asan, "%s%sverify_asan_link_order=0",
			 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "", getenv("ASAN_OPTIONS") ? ":" : "");
		const char *env[] = {"NVTX_INJECTION64_PATH", argv[3], "LD_PRELOAD", argv[3],
				     "PHASEPROF_OUT", spool, "ASAN_OPTIONS", asan, NULL};
		int rc = run(av, env, out, sizeof out);
		CHECK(rc == 0, "app exited %d", rc);
		st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
		if (!st) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		pp_ingest_result res;
		if (pp_store_ingest(st, spool, NULL, &res, err, sizeof err) != 0) {
			fprintf(stderr, "ingest: %s\n", err);
			return 1;
		}
	} else {
		char *av[] = {argv[3], "record", "-o", db, "--", argv[2], NULL};
		const char *env[] = {NULL};
		int rc = run(av, env, out, sizeof out);
		CHECK(rc == 0, "phaseprof record exited %d", rc);
		st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
		if (!st) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
	}
	/* NVTX's own return values: levels of pushed/popped ranges, -1 for a stray pop */
	CHECK(strstr(out, "levels 0 1 pops 1 0 stray -1") != NULL, "program printed '%s'", out);
	check_store(st);
	pp_store_close(st, err, sizeof err);
	unlink(spool);
	unlink(db);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	else
		printf("nvtx %s: ok\n", argv[1]);
	return failures ? 1 : 0;
}
