/* testutil.c — see testutil.h. */
#include "testutil.h"
#include "store_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp[256];

static void rm_tmp(void)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
}

const char *ttmpdir(void)
{
	if (!tmp[0]) {
		const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		snprintf(tmp, sizeof tmp, "%s/ppdiag-XXXXXX", base);
		if (!mkdtemp(tmp))
			fail_msg("mkdtemp %s failed", tmp);
		if (!getenv("PP_DIAG_KEEP")) /* keep the databases to look at them */
			atexit(rm_tmp);
		else
			fprintf(stderr, "keeping %s\n", tmp);
	}
	return tmp;
}

void trec_open(trec *t, const char *name)
{
	memset(t, 0, sizeof *t);
	snprintf(t->path, sizeof t->path, "%s/%s", ttmpdir(), name);
	unlink(t->path);
	char err[512];
	t->st = pp_store_open(t->path, PP_STORE_WRITE, err, sizeof err);
	if (!t->st)
		fail_msg("pp_store_open: %s", err);
}

void trec_close(trec *t)
{
	char err[512];
	if (t->st && pp_store_close(t->st, err, sizeof err) != 0)
		fail_msg("pp_store_close: %s", err);
	t->st = NULL;
}

static sqlite3_stmt *prep(trec *t, const char *sql)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(pp_store_db(t->st), sql, -1, &s, NULL) != SQLITE_OK)
		fail_msg("prepare %s: %s", sql, sqlite3_errmsg(pp_store_db(t->st)));
	return s;
}

static void done(trec *t, sqlite3_stmt *s)
{
	if (sqlite3_step(s) != SQLITE_DONE)
		fail_msg("insert: %s", sqlite3_errmsg(pp_store_db(t->st)));
	sqlite3_finalize(s);
}

void trec_exec(trec *t, const char *sql)
{
	char *e = NULL;
	if (sqlite3_exec(pp_store_db(t->st), sql, NULL, NULL, &e) != SQLITE_OK)
		fail_msg("%s: %s", sql, e);
}

int64_t trec_run(trec *t, const char *label, int64_t duration_ns)
{
	sqlite3_stmt *s = prep(t, "INSERT INTO runs(label, scenario, variant, duration_ns, status, "
				  "pid, start_unix_ns, clock) VALUES(?1, 'unit', ?1, ?2, 'complete', 1, 0, 'mono')");
	sqlite3_bind_text(s, 1, label, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 2, duration_ns);
	done(t, s);
	t->run = sqlite3_last_insert_rowid(pp_store_db(t->st));
	return t->run;
}

int64_t trec_span(trec *t, int kind, const char *name, int64_t start, int64_t end,
		  int64_t parent, int64_t step)
{
	int depth = 0;
	if (parent) {
		sqlite3_stmt *q = prep(t, "SELECT depth FROM spans WHERE id = ?1");
		sqlite3_bind_int64(q, 1, parent);
		if (sqlite3_step(q) == SQLITE_ROW)
			depth = sqlite3_column_int(q, 0) + 1;
		sqlite3_finalize(q);
	}
	sqlite3_stmt *s = prep(t, "INSERT INTO spans(run_id, tid, kind, name_id, start_ns, end_ns, "
				  "depth, parent_id, step) VALUES(?1, 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
	sqlite3_bind_int64(s, 1, t->run);
	sqlite3_bind_int(s, 2, kind);
	sqlite3_bind_int64(s, 3, pp_store_intern(t->st, name ? name : ""));
	sqlite3_bind_int64(s, 4, start);
	if (end >= 0)
		sqlite3_bind_int64(s, 5, end);
	else
		sqlite3_bind_null(s, 5);
	sqlite3_bind_int(s, 6, depth);
	if (parent)
		sqlite3_bind_int64(s, 7, parent);
	else
		sqlite3_bind_null(s, 7);
	if (step >= 0)
		sqlite3_bind_int64(s, 8, step);
	else
		sqlite3_bind_null(s, 8);
	done(t, s);
	return sqlite3_last_insert_rowid(pp_store_db(t->st));
}

void trec_counter(trec *t, const char *name, int64_t ts, double value)
{
	sqlite3_stmt *s = prep(t, "INSERT INTO counters(run_id, tid, name_id, ts_ns, value) "
				  "VALUES(?1, 1, ?2, ?3, ?4)");
	sqlite3_bind_int64(s, 1, t->run);
	sqlite3_bind_int64(s, 2, pp_store_intern(t->st, name));
	sqlite3_bind_int64(s, 3, ts);
	sqlite3_bind_double(s, 4, value);
	done(t, s);
}

void trec_mark(trec *t, const char *name, int64_t ts)
{
	sqlite3_stmt *s = prep(t, "INSERT INTO marks(run_id, tid, name_id, ts_ns) VALUES(?1, 1, ?2, ?3)");
	sqlite3_bind_int64(s, 1, t->run);
	sqlite3_bind_int64(s, 2, pp_store_intern(t->st, name));
	sqlite3_bind_int64(s, 3, ts);
	done(t, s);
}

int64_t trec_graph(trec *t, const char *label, int64_t version, int64_t ts, int64_t n_nodes)
{
	sqlite3_stmt *s = prep(t, "INSERT INTO graphs(run_id, label, version, ts_ns, n_nodes, n_edges) "
				  "VALUES(?1, ?2, ?3, ?4, ?5, 0)");
	sqlite3_bind_int64(s, 1, t->run);
	sqlite3_bind_text(s, 2, label, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, version);
	sqlite3_bind_int64(s, 4, ts);
	sqlite3_bind_int64(s, 5, n_nodes);
	done(t, s);
	return sqlite3_last_insert_rowid(pp_store_db(t->st));
}

void trec_graph_node(trec *t, int64_t graph_id, int idx, const char *name, const char *op)
{
	sqlite3_stmt *s = prep(t, "INSERT INTO graph_nodes(graph_id, idx, name_id, op_id) "
				  "VALUES(?1, ?2, ?3, ?4)");
	sqlite3_bind_int64(s, 1, graph_id);
	sqlite3_bind_int(s, 2, idx);
	sqlite3_bind_int64(s, 3, pp_store_intern(t->st, name));
	sqlite3_bind_int64(s, 4, pp_store_intern(t->st, op));
	done(t, s);
}

void trec_io(trec *t, const char *path, const char *op, int64_t calls, int64_t bytes,
	     int64_t time_ns, int64_t small_calls)
{
	sqlite3_stmt *s = prep(t, "INSERT INTO io(run_id, tid, path_id, op, calls, bytes, time_ns, "
				  "small_calls) VALUES(?1, 1, ?2, ?3, ?4, ?5, ?6, ?7)");
	sqlite3_bind_int64(s, 1, t->run);
	sqlite3_bind_int64(s, 2, pp_store_intern(t->st, path));
	sqlite3_bind_text(s, 3, op, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 4, calls);
	sqlite3_bind_int64(s, 5, bytes);
	sqlite3_bind_int64(s, 6, time_ns);
	sqlite3_bind_int64(s, 7, small_calls);
	done(t, s);
}

void trec_lib(trec *t, const char *path, int64_t open_ns, int64_t end_ns, int64_t size,
	      int64_t ctor_ns)
{
	sqlite3_stmt *s = prep(t, "INSERT INTO libraries(run_id, path_id, base, size, open_ns, "
				  "mapped_ns, end_ns, reloc_ns, ctor_ns, depth, via) "
				  "VALUES(?1, ?2, 0, ?3, ?4, ?4, ?5, 0, ?6, 0, 'dlopen')");
	sqlite3_bind_int64(s, 1, t->run);
	sqlite3_bind_int64(s, 2, pp_store_intern(t->st, path));
	sqlite3_bind_int64(s, 3, size);
	sqlite3_bind_int64(s, 4, open_ns);
	sqlite3_bind_int64(s, 5, end_ns);
	sqlite3_bind_int64(s, 6, ctor_ns);
	done(t, s);
}

void trec_gpu(trec *t, const char *kind, int64_t start, int64_t end, int device, int64_t corr,
	      const char *name, int64_t bytes, const char *copy_kind, const char *src_kind,
	      const char *dst_kind)
{
	sqlite3_stmt *s = prep(t, "INSERT INTO gpu_activity(run_id, kind, start_ns, end_ns, device, "
				  "context, stream, correlation_id, name_id, bytes, copy_kind, "
				  "src_kind, dst_kind) VALUES(?1, ?2, ?3, ?4, ?5, 1, 7, ?6, ?7, ?8, "
				  "?9, ?10, ?11)");
	sqlite3_bind_int64(s, 1, t->run);
	sqlite3_bind_text(s, 2, kind, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, start);
	sqlite3_bind_int64(s, 4, end);
	sqlite3_bind_int(s, 5, device);
	sqlite3_bind_int64(s, 6, corr);
	if (name)
		sqlite3_bind_int64(s, 7, pp_store_intern(t->st, name));
	sqlite3_bind_int64(s, 8, bytes);
	if (copy_kind)
		sqlite3_bind_text(s, 9, copy_kind, -1, SQLITE_TRANSIENT);
	if (src_kind)
		sqlite3_bind_text(s, 10, src_kind, -1, SQLITE_TRANSIENT);
	if (dst_kind)
		sqlite3_bind_text(s, 11, dst_kind, -1, SQLITE_TRANSIENT);
	done(t, s);
}

int64_t trec_steps(trec *t, int64_t t0, const int64_t *dur, int n, int64_t gap, int64_t *ids,
		   int64_t *starts)
{
	int64_t now = t0;
	for (int i = 0; i < n; i++) {
		int64_t id = trec_span(t, PP_STEP, "step", now, now + dur[i], 0, i);
		if (ids)
			ids[i] = id;
		if (starts)
			starts[i] = now;
		now += dur[i] + gap;
	}
	return now;
}

/* splitmix64 */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

double trand_uniform(uint64_t *s)
{
	return (double)(next(s) >> 11) / 9007199254740992.0;
}

double trand_normal(uint64_t *s)
{
	double u = trand_uniform(s), v = trand_uniform(s);
	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}
