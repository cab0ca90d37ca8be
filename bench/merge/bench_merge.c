/*
 * bench_merge.c — `phaseprof merge` of N synthetic rank databases of E
 * events (spans) each: time, peak memory of the merge process, output size.
 *
 *   bench_merge PHASEPROF_BIN DIR [RANKS=256] [EVENTS=100000]
 *
 * Each rank: MPI_Init, then steps of (step, forward, backward, MPI_Allreduce)
 * spans; its wall clock is shifted by a pseudo-random offset (+-50 ms) that
 * merge has to recover. One template database is written through the store,
 * then copied per rank with its rank and clock changed.
 */
#include <errno.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "phaseprof.h"
#include "store.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int exec_ok(sqlite3 *db, const char *sql)
{
	char *m = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &m) != SQLITE_OK) {
		fprintf(stderr, "bench_merge: %s: %s\n", sql, m ? m : "?");
		sqlite3_free(m);
		return -1;
	}
	return 0;
}

static int make_template(const char *path, int events)
{
	char err[512];
	unlink(path);
	/* the store creates the schema; rows go in through SQLite directly */
	pp_store *st = pp_store_open(path, PP_STORE_WRITE, err, sizeof err);
	if (!st || pp_store_close(st, err, sizeof err) != 0) {
		fprintf(stderr, "bench_merge: %s\n", err);
		return -1;
	}
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	if (exec_ok(db, "INSERT OR IGNORE INTO strings(id, value) VALUES(1001,'MPI_Init'),(1002,'step'),"
			"(1003,'forward'),(1004,'backward'),(1005,'MPI_Allreduce')"))
		return -1;
	int64_t n_init = 1001, n_step = 1002, n_fwd = 1003, n_bwd = 1004, n_ar = 1005;
	if (exec_ok(db, "BEGIN") ||
	    exec_ok(db, "INSERT INTO runs(id, command, host, pid, start_unix_ns, start_mono_ns, duration_ns, status,"
			" events, events_lost, rows_lost, clock) VALUES(1, './train', 'node', 1, 1700000000000000000, 0,"
			" 0, 'complete', 0, 0, 0, 'tsc')") ||
	    exec_ok(db, "INSERT INTO run_meta VALUES(1,'rank','0'),(1,'world_size','256'),(1,'local_rank','0'),"
			"(1,'job','openmpi:bench'),(1,'rank.source','openmpi')"))
		return -1;
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(db, "INSERT INTO spans(id, run_id, tid, kind, name_id, start_ns, end_ns, depth, parent_id, step)"
				   " VALUES(?,1,1,?,?,?,?,?,?,?)", -1, &s, NULL) != SQLITE_OK)
		return -1;
	int64_t id = 0, t = 100000000;
#define SPAN(kind, name, a, b, depth, parent, step)                                         \
	do {                                                                                 \
		sqlite3_reset(s);                                                            \
		sqlite3_bind_int64(s, 1, ++id);                                              \
		sqlite3_bind_int(s, 2, kind);                                                \
		sqlite3_bind_int64(s, 3, name);                                              \
		sqlite3_bind_int64(s, 4, a);                                                 \
		sqlite3_bind_int64(s, 5, b);                                                 \
		sqlite3_bind_int(s, 6, depth);                                               \
		if (parent) sqlite3_bind_int64(s, 7, parent); else sqlite3_bind_null(s, 7);  \
		if (step >= 0) sqlite3_bind_int64(s, 8, step); else sqlite3_bind_null(s, 8); \
		if (sqlite3_step(s) != SQLITE_DONE) return -1;                               \
	} while (0)
	SPAN(PP_COMM_INIT, n_init, t, t + 500000000, 0, 0, -1);
	t += 500000000;
	for (int64_t step = 0; id + 4 <= events; step++) {
		int64_t p = id + 1;
		SPAN(PP_STEP, n_step, t, t + 10000000, 0, 0, step);
		SPAN(PP_FORWARD, n_fwd, t, t + 3000000, 1, p, step);
		SPAN(PP_BACKWARD, n_bwd, t + 3000000, t + 8000000, 1, p, step);
		SPAN(PP_COMM, n_ar, t + 8000000, t + 10000000, 1, p, step);
		t += 10000000;
	}
	sqlite3_finalize(s);
	char sql[160];
	snprintf(sql, sizeof sql, "UPDATE runs SET duration_ns = %lld, events = %lld; COMMIT", (long long)t,
		 (long long)id * 2);
	if (exec_ok(db, sql) != 0)
		return -1;
	return sqlite3_close(db) == SQLITE_OK ? 0 : -1;
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char buf[1 << 16];
	ssize_t n;
	int rc = in >= 0 && out >= 0 ? 0 : -1;
	while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_merge PHASEPROF_BIN DIR [RANKS] [EVENTS]\n");
		return 2;
	}
	const char *bin = argv[1], *dir = argv[2];
	int ranks = argc > 3 ? atoi(argv[3]) : 256, events = argc > 4 ? atoi(argv[4]) : 100000;
	char tpl[4096], path[4096], out[4096];
	snprintf(tpl, sizeof tpl, "%s/bench-merge-template.db", dir);
	double t0 = now_s();
	if (make_template(tpl, events) != 0) {
		fprintf(stderr, "bench_merge: cannot write %s\n", tpl);
		return 1;
	}
	srand(12345);
	char **args = calloc((size_t)ranks + 8, sizeof *args);
	int na = 0;
	args[na++] = (char *)bin;
	args[na++] = "merge";
	args[na++] = "--no-diag";
	for (int r = 0; r < ranks; r++) {
		snprintf(path, sizeof path, "%s/bench-rank-%d.db", dir, r);
		sqlite3 *db;
		char sql[256];
		long long off = r ? (long long)(rand() % 100000001) - 50000000 : 0;
		snprintf(sql, sizeof sql,
			 "UPDATE run_meta SET value = '%d' WHERE key IN ('rank','local_rank');"
			 "UPDATE runs SET start_unix_ns = start_unix_ns + %lld;", r, off);
		if (copy_file(tpl, path) != 0 || sqlite3_open(path, &db) != SQLITE_OK || exec_ok(db, sql) != 0) {
			fprintf(stderr, "bench_merge: %s: %s\n", path, strerror(errno));
			return 1;
		}
		sqlite3_close(db);
		args[na++] = strdup(path);
	}
	snprintf(out, sizeof out, "%s/bench-merged.db", dir);
	unlink(out);
	args[na++] = "-o";
	args[na++] = out;
	args[na] = NULL;
	struct stat sb;
	stat(tpl, &sb);
	printf("inputs: %d rank databases of %d spans (%.1f MB each), made in %.1f s\n", ranks, events,
	       sb.st_size / 1e6, now_s() - t0);
	fflush(stdout);
	double t1 = now_s();
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		execv(bin, args);
		_exit(127);
	}
	int status;
	struct rusage ru;
	wait4(pid, &status, 0, &ru);
	double dt = now_s() - t1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench_merge: merge failed (status %d)\n", status);
		return 1;
	}
	stat(out, &sb);
	double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	printf("merge --no-diag of %d ranks x %d spans: %.2f s wall, %.2f s CPU (%.2f M spans per CPU second), "
	       "peak RSS %.1f MB, output %.0f MB\n",
	       ranks, events, dt, cpu, (double)ranks * events / cpu / 1e6, ru.ru_maxrss / 1024.0, sb.st_size / 1e6);
	/* the recovered offsets: same template, so the true offset of rank r is known */
	sqlite3 *db;
	if (sqlite3_open(out, &db) == SQLITE_OK) {
		sqlite3_stmt *s;
		if (sqlite3_prepare_v2(db, "SELECT max(CAST(value AS INTEGER)) FROM run_meta WHERE key='clock.uncertainty_ns'",
				       -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
			printf("worst clock uncertainty after alignment: %.3f ms\n", sqlite3_column_int64(s, 0) / 1e6);
		sqlite3_finalize(s);
		sqlite3_close(db);
	}
	if (getenv("BENCH_KEEP"))
		return 0; /* inputs and output left for a closer look */
	for (int r = 0; r < ranks; r++) {
		snprintf(path, sizeof path, "%s/bench-rank-%d.db", dir, r);
		unlink(path);
	}
	unlink(tpl);
	unlink(out);
	return 0;
}
