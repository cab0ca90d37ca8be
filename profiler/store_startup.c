/* store_startup.c — the start-up figures `record` prints for a run. */
#include "store.h"
#include "store_internal.h"

#include <string.h>

static int64_t meta_i64(sqlite3 *db, int64_t run, const char *key, int *rc)
{
	sqlite3_stmt *s;
	int64_t v = INT64_MIN;
	if (sqlite3_prepare_v2(db, "SELECT CAST(value AS INTEGER) FROM run_meta WHERE run_id = ?1 AND key = ?2",
			       -1, &s, NULL) != SQLITE_OK) {
		*rc = -1;
		return v;
	}
	sqlite3_bind_int64(s, 1, run);
	sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
	int r = sqlite3_step(s);
	if (r == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	else if (r != SQLITE_DONE)
		*rc = -1;
	sqlite3_finalize(s);
	return v;
}

/* One row of integers (NULL -> 0) into out[0..n). */
static void row_i64(sqlite3 *db, int64_t run, const char *sql, int64_t *out, int n, int *rc)
{
	sqlite3_stmt *s;
	memset(out, 0, (size_t)n * sizeof *out);
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
		*rc = -1;
		return;
	}
	sqlite3_bind_int64(s, 1, run);
	int r = sqlite3_step(s);
	if (r == SQLITE_ROW)
		for (int i = 0; i < n && i < sqlite3_column_count(s); i++)
			out[i] = sqlite3_column_int64(s, i);
	else if (r != SQLITE_DONE)
		*rc = -1;
	sqlite3_finalize(s);
}

int pp_store_startup_summary(pp_store *st, int64_t run, pp_startup_summary *o)
{
	sqlite3 *db = st->db;
	int rc = 0;
	int64_t v[6];
	memset(o, 0, sizeof *o);
	o->loader_ns = meta_i64(db, run, "agent.loader_start_ns", &rc);
	/* main's first instruction when the agent saw it, else la_preinit */
	o->main_ns = meta_i64(db, run, "agent.main_ns", &rc);
	if (o->main_ns == INT64_MIN)
		o->main_ns = meta_i64(db, run, "agent.preinit_ns", &rc);
	o->end_ns = meta_i64(db, run, "agent.end_ns", &rc);
	row_i64(db, run, "SELECT COUNT(*), SUM(via IN ('dlopen','dependency','dlmopen'))"
			 " FROM libraries WHERE run_id = ?1", v, 2, &rc);
	o->libs = v[0];
	o->libs_dlopen = v[1];
	/* start-up batch: the exec row; dlopen batches: depth-1 rows */
	row_i64(db, run, "SELECT SUM(mapped_ns - open_ns), SUM(end_ns - mapped_ns), COUNT(*)"
			 " FROM libraries WHERE run_id = ?1 AND via = 'exec' AND end_ns IS NOT NULL", v, 3, &rc);
	o->startup_map_ns = v[0];
	o->startup_init_ns = v[1];
	o->startup_batches = v[2];
	row_i64(db, run, "SELECT SUM(mapped_ns - open_ns), SUM(end_ns - mapped_ns), COUNT(*)"
			 " FROM libraries WHERE run_id = ?1 AND depth = 1 AND end_ns IS NOT NULL", v, 3, &rc);
	o->dlopen_map_ns = v[0];
	o->dlopen_init_ns = v[1];
	o->dlopen_calls = v[2];
	row_i64(db, run, "SELECT SUM(reloc_ns), SUM(ctor_ns), COUNT(reloc_ns)"
			 " FROM libraries WHERE run_id = ?1 AND depth <= 1", v, 3, &rc);
	o->reloc_ns = v[0];
	o->ctor_ns = v[1];
	o->split_loads = v[2];
	row_i64(db, run, "SELECT a.count, a.bytes, a.time_ns, a.peak FROM allocations a"
			 " JOIN strings s ON s.id = a.source_id"
			 " WHERE a.run_id = ?1 AND a.kind = 'total' AND s.value = 'malloc'", v, 4, &rc);
	o->allocs = v[0];
	o->alloc_bytes = v[1];
	o->alloc_ns = v[2];
	o->alloc_peak = v[3];
	row_i64(db, run, "SELECT SUM(a.count) FROM allocations a JOIN strings s ON s.id = a.source_id"
			 " WHERE a.run_id = ?1 AND a.kind = 'free' AND s.value = 'malloc'", v, 1, &rc);
	o->frees = v[0];
	row_i64(db, run, "SELECT COUNT(DISTINCT CASE WHEN i.op = 'open' THEN i.path_id END),"
			 " SUM(CASE WHEN i.op IN ('read','fread') THEN i.calls END),"
			 " SUM(CASE WHEN i.op IN ('read','fread') THEN i.bytes END),"
			 " SUM(CASE WHEN i.op IN ('read','fread') THEN i.small_calls END),"
			 " SUM(i.time_ns),"
			 " SUM(CASE WHEN i.op = 'open_failed' THEN i.calls END)"
			 " FROM io i JOIN strings p ON p.id = i.path_id WHERE i.run_id = ?1"
			 " AND p.value NOT LIKE 'pipe:%' AND p.value NOT LIKE 'socket:%' AND p.value NOT LIKE '/dev/%'",
		v, 6, &rc);
	o->files_opened = v[0];
	o->reads = v[1];
	o->read_bytes = v[2];
	o->small_reads = v[3];
	o->io_ns = v[4];
	o->failed_opens = v[5];
	return rc;
}
