/* store_system.c — reads of what the program did to the system: libraries
 * loaded, file I/O, allocations. */
#include "store.h"
#include "store_internal.h"
#include "pp_grow.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct cb_ctx { void *cb, *ud; } cb_ctx;

static int lib_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_library_row r = {.path = store_text(s, 0), .via = store_text(s, 7),
			    .open_ns = sqlite3_column_int64(s, 1), .end_ns = sqlite3_column_int64(s, 2),
			    .reloc_ns = sqlite3_column_int64(s, 3), .ctor_ns = sqlite3_column_int64(s, 4),
			    .size = sqlite3_column_int64(s, 5), .depth = sqlite3_column_int64(s, 6)};
	return ((int (*)(const pp_library_row *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_library(pp_store *st, int64_t run_id, int limit, int (*cb)(const pp_library_row *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud};
	return store_each(st,
			  limit > 0 ? "SELECT COALESCE(p.value, '?'), l.open_ns, l.end_ns, l.reloc_ns, l.ctor_ns,"
				      " l.size, l.depth, l.via FROM libraries l LEFT JOIN strings p ON p.id = l.path_id"
				      " WHERE l.run_id = ?1 ORDER BY l.end_ns - l.open_ns DESC LIMIT ?2"
				    : "SELECT p.value, l.open_ns, l.end_ns, l.reloc_ns, l.ctor_ns,"
				      " l.size, l.depth, l.via FROM libraries l LEFT JOIN strings p ON p.id = l.path_id"
				      " WHERE l.run_id = ?1",
			  run_id, limit, NULL, lib_row, &c);
}

static int three_i64(sqlite3_stmt *s, void *ud)
{
	int64_t *v = ud;
	for (int i = 0; i < 3 && i < sqlite3_column_count(s); i++)
		v[i] = sqlite3_column_int64(s, i);
	return 1;
}

int pp_store_library_totals(pp_store *st, int64_t run_id, int64_t *n_all, int64_t *n_top, int64_t *top_ns)
{
	int64_t v[3] = {0, 0, 0};
	int rc = store_each(st, "SELECT COUNT(*), COALESCE(SUM(depth <= 1), 0),"
				" COALESCE(SUM(CASE WHEN depth <= 1 THEN end_ns - open_ns END), 0)"
				" FROM libraries WHERE run_id = ?1",
			    run_id, 0, NULL, three_i64, v);
	*n_all = v[0];
	*n_top = v[1];
	*top_ns = v[2];
	return rc;
}

static int io_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_io_row r = {.path = store_text(s, 0), .op = store_text(s, 1), .calls = sqlite3_column_int64(s, 2),
		       .bytes = sqlite3_column_double(s, 3), .time_ns = sqlite3_column_int64(s, 4),
		       .small_calls = sqlite3_column_int64(s, 5)};
	return ((int (*)(const pp_io_row *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_io(pp_store *st, int64_t run_id, int limit, int (*cb)(const pp_io_row *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud};
	return store_each(st, "SELECT COALESCE(p.value, '?'), i.op, SUM(i.calls), SUM(i.bytes), SUM(i.time_ns),"
			      " SUM(i.small_calls) FROM io i LEFT JOIN strings p ON p.id = i.path_id WHERE i.run_id = ?1"
			      " GROUP BY i.path_id, i.op ORDER BY SUM(i.time_ns) DESC LIMIT ?2",
			  run_id, limit > 0 ? limit : -1, NULL, io_row, &c);
}

int pp_store_io_totals(pp_store *st, int64_t run_id, int64_t *rows, int64_t *time_ns)
{
	int64_t v[3] = {0, 0, 0};
	int rc = store_each(st, "SELECT COUNT(*), COALESCE(SUM(time_ns), 0) FROM io WHERE run_id = ?1", run_id,
			    0, NULL, three_i64, v);
	*rows = v[0];
	*time_ns = v[1];
	return rc;
}

int pp_store_io_op_totals(pp_store *st, int64_t run_id, const char *op, int64_t *calls, int64_t *bytes,
			  int64_t *small_calls)
{
	int64_t v[3] = {0, 0, 0};
	int rc = store_each(st, "SELECT COALESCE(SUM(calls),0), COALESCE(SUM(bytes),0), "
				"COALESCE(SUM(small_calls),0) FROM io WHERE run_id = ?1 AND op = ?3",
			    run_id, 0, op, three_i64, v);
	*calls = v[0];
	*bytes = v[1];
	*small_calls = v[2];
	return rc;
}

static void series_read(sqlite3_stmt *s, void *e)
{
	*(pp_counter_row *)e = (pp_counter_row){sqlite3_column_int64(s, 0), sqlite3_column_double(s, 1)};
}

int pp_store_alloc_in_use(pp_store *st, int64_t run_id, pp_counter_row **out, int *n)
{
	return store_rows(st, "SELECT ts_ns, in_use FROM allocations WHERE run_id = ?1 AND in_use IS NOT NULL"
			      " AND ts_ns IS NOT NULL ORDER BY ts_ns",
			  run_id, 0, NULL, sizeof **out, series_read, out, n);
}

static int alloc_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_alloc_source r = {.source = store_text(s, 0), .kind = store_text(s, 1),
			     .count = sqlite3_column_int64(s, 2), .bytes = sqlite3_column_double(s, 3),
			     .time_ns = sqlite3_column_int64(s, 4),
			     .has_in_use = sqlite3_column_type(s, 5) != SQLITE_NULL,
			     .in_use = sqlite3_column_double(s, 5),
			     .has_peak = sqlite3_column_type(s, 6) != SQLITE_NULL,
			     .peak = sqlite3_column_double(s, 6)};
	return ((int (*)(const pp_alloc_source *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_alloc_source(pp_store *st, int64_t run_id, int (*cb)(const pp_alloc_source *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud};
	return store_each(st, "SELECT COALESCE(s.value, '?'), a.kind, SUM(a.count), SUM(a.bytes), SUM(a.time_ns),"
			      " (SELECT b.in_use FROM allocations b WHERE b.run_id = a.run_id AND b.source_id IS a.source_id"
			      "   AND b.kind = a.kind AND b.in_use IS NOT NULL ORDER BY b.ts_ns DESC LIMIT 1), MAX(a.peak)"
			      " FROM allocations a LEFT JOIN strings s ON s.id = a.source_id WHERE a.run_id = ?1"
			      " GROUP BY a.source_id, a.kind ORDER BY SUM(a.bytes) DESC",
			  run_id, 0, NULL, alloc_row, &c);
}
