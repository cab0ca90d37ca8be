/* Ingest rate (rows/s) of a recorded spool against a plain SQLite loop of
 * prepared multi-row INSERTs into the same table shapes, same pragmas, in the
 * same run. Prints figures; asserts nothing. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "phaseprof.h"
#include "store.h"
#include "store_internal.h"

#define SPANS 500000
#define COUNTERS 500000

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double plain_loop(const char *path)
{
	unlink(path);
	sqlite3 *db;
	sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	sqlite3_exec(db,
		     "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
		     "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-65536;"
		     "CREATE TABLE spans(id INTEGER PRIMARY KEY, run_id, tid, kind, name_id, start_ns,"
		     " end_ns, depth, parent_id, step);"
		     "CREATE TABLE counters(run_id, tid, name_id, ts_ns, value REAL);",
		     0, 0, 0);
	double t0 = now_s();
	sqlite3_exec(db, "BEGIN", 0, 0, 0);
	/* 64 rows per statement, as ingest uses */
	char sql[65536];
	int o = sprintf(sql, "INSERT INTO spans VALUES");
	for (int r = 0; r < 64; r++)
		o += sprintf(sql + o, "%s(?,?,?,?,?,?,?,?,?,?)", r ? "," : "");
	sqlite3_stmt *s;
	sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	for (int i = 0; i < SPANS; i += 64) {
		for (int r = 0; r < 64; r++) {
			int b = r * 10;
			int64_t id = i + r + 1;
			sqlite3_bind_int64(s, b + 1, id);
			sqlite3_bind_int64(s, b + 2, 1);
			sqlite3_bind_int64(s, b + 3, 1234);
			sqlite3_bind_int64(s, b + 4, 16);
			sqlite3_bind_int64(s, b + 5, 3);
			sqlite3_bind_int64(s, b + 6, id * 100);
			sqlite3_bind_int64(s, b + 7, id * 100 + 50);
			sqlite3_bind_int64(s, b + 8, 0);
			sqlite3_bind_null(s, b + 9);
			sqlite3_bind_int64(s, b + 10, id);
		}
		sqlite3_step(s);
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	o = sprintf(sql, "INSERT INTO counters VALUES");
	for (int r = 0; r < 64; r++)
		o += sprintf(sql + o, "%s(?,?,?,?,?)", r ? "," : "");
	sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	for (int i = 0; i < COUNTERS; i += 64) {
		for (int r = 0; r < 64; r++) {
			int b = r * 5;
			sqlite3_bind_int64(s, b + 1, 1);
			sqlite3_bind_int64(s, b + 2, 1234);
			sqlite3_bind_int64(s, b + 3, 4);
			sqlite3_bind_int64(s, b + 4, (int64_t)(i + r) * 100);
			sqlite3_bind_double(s, b + 5, i + r);
		}
		sqlite3_step(s);
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	sqlite3_exec(db, "COMMIT", 0, 0, 0);
	double t = now_s() - t0;
	sqlite3_close(db);
	return (SPANS + COUNTERS) / t;
}

int main(void)
{
	char spool[64], db[64], plain[64];
	snprintf(spool, sizeof spool, "/tmp/pp-bi-%d.spool", (int)getpid());
	snprintf(db, sizeof db, "/tmp/pp-bi-%d.db", (int)getpid());
	snprintf(plain, sizeof plain, "/tmp/pp-bi-plain-%d.db", (int)getpid());
	pp_open(&(pp_options){.spool_path = spool, .max_buffers = 4096});
	for (int i = 0; i < SPANS; i++) {
		pp_step_begin(i);
		pp_counter("alloc.bytes_in_use", i);
		pp_step_end();
	}
	pp_close();
	/* interleaved repetitions; best of each (the machine is shared) */
	double best_ours = 0, best_peer = 0;
	pp_ingest_result res;
	for (int rep = 0; rep < 4; rep++) {
		unlink(db);
		char err[512];
		pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
		double t0 = now_s();
		if (pp_store_ingest(st, spool, NULL, &res, err, sizeof err) != 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		double t = now_s() - t0;
		pp_store_close(st, NULL, 0);
		double ours = (double)(res.spans + COUNTERS) / t;
		double peer = plain_loop(plain);
		printf("  rep %d: ingest %.0f rows/s, plain loop %.0f rows/s (%.0f%%)\n", rep + 1, ours, peer,
		       100.0 * ours / peer);
		if (ours > best_ours)
			best_ours = ours;
		if (peer > best_peer)
			best_peer = peer;
	}
	printf("ingest: %llu spans + %d counters from a %.1f MB spool: best %.0f rows/s; plain SQLite "
	       "multi-row loop best %.0f rows/s; ratio %.0f%%\n",
	       (unsigned long long)res.spans, COUNTERS, (double)res.bytes / 1e6, best_ours, best_peer,
	       100.0 * best_ours / best_peer);
	unlink(spool);
	unlink(db);
	unlink(plain);
	char wal[80];
	snprintf(wal, sizeof wal, "%s-wal", plain);
	unlink(wal);
	snprintf(wal, sizeof wal, "%s-shm", plain);
	unlink(wal);
	return 0;
}
