/* store_ops.c — reads of op executions: per-op statistics, the rows for the
 * timeline, op time per node name. */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct op_acc { pp_op_stat *v; int n, cap, failed; } op_acc;

static int op_stat_row(sqlite3_stmt *s, void *ud)
{
	op_acc *a = ud;
	if (a->n == a->cap) {
		int nc = a->cap ? a->cap * 2 : 64;
		pp_op_stat *nv = realloc(a->v, (size_t)nc * sizeof *nv);
		if (!nv) {
			a->failed = 1;
			return 1;
		}
		a->v = nv;
		a->cap = nc;
	}
	pp_op_stat *o = &a->v[a->n++];
	memset(o, 0, sizeof *o);
	const char *nm = store_text(s, 0), *ty = store_text(s, 1);
	snprintf(o->name, sizeof o->name, "%s", nm ? nm : "");
	snprintf(o->type, sizeof o->type, "%.63s", ty ? ty : "");
	o->name_id = sqlite3_column_int64(s, 2);
	o->calls = sqlite3_column_int64(s, 3);
	o->total_ns = sqlite3_column_int64(s, 4);
	o->max_ns = sqlite3_column_int64(s, 5);
	o->first_ns = sqlite3_column_int64(s, 6);
	o->steady_calls = sqlite3_column_int64(s, 7);
	o->steady_ns = sqlite3_column_int64(s, 8);
	return 0;
}

static int two_i64(sqlite3_stmt *s, void *ud)
{
	int64_t *v = ud;
	v[0] = store_i64_or(s, 0, -1);
	v[1] = sqlite3_column_int64(s, 1);
	return 1;
}

int pp_store_ops(pp_store *st, int64_t run_id, int limit, pp_op_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	/* s0 = the run's first step; steady = every later step */
	int64_t first[2] = {-1, 0};
	if (store_each(st, "SELECT MIN(step), 0 FROM ops WHERE run_id = ?1 AND end_ns IS NOT NULL AND step >= 0",
		       run_id, 0, NULL, two_i64, first) != 0)
		return -1;
	int64_t later[2] = {0, 0};
	if (first[0] >= 0 &&
	    store_each(st, "SELECT 0, COUNT(DISTINCT step) FROM ops WHERE run_id = ?1 AND end_ns IS NOT NULL AND step > ?2",
		       run_id, first[0], NULL, two_i64, later) != 0)
		return -1;
	/* The scan reads the table in row order (ops rows of a run are
	 * contiguous); grouping in a temporary b-tree is cheaper than an index
	 * lookup per row through ops_run. */
	op_acc a = {0};
	char sql[1024];
	snprintf(sql, sizeof sql,
			    "SELECT n.value, t.value, g.name_id, g.calls, g.total, g.mx, g.first, g.scalls, g.sns"
			    " FROM (SELECT name_id, type_id, COUNT(*) calls, SUM(d) total, MAX(d) mx,"
			    "   COALESCE(SUM(CASE WHEN step = ?2 THEN d END), 0) first,"
			    "   COALESCE(SUM(step > ?2), 0) scalls,"
			    "   COALESCE(SUM(CASE WHEN step > ?2 THEN d END), 0) sns"
			    "   FROM (SELECT name_id, type_id, end_ns - start_ns d, step FROM ops NOT INDEXED"
			    "     WHERE run_id = ?1 AND end_ns IS NOT NULL)"
			    "   GROUP BY name_id, type_id) g"
			    " LEFT JOIN strings n ON n.id = g.name_id LEFT JOIN strings t ON t.id = g.type_id"
			    " ORDER BY g.total DESC, g.name_id, g.type_id LIMIT %d", limit > 0 ? limit : -1);
	int rc = store_each(st, sql, run_id, first[0] >= 0 ? first[0] : INT64_MAX, NULL, op_stat_row, &a);
	if (rc != 0 || a.failed) {
		free(a.v);
		return -1;
	}
	for (int i = 0; i < a.n; i++) {
		a.v[i].steady_steps = later[1];
		a.v[i].first_step = first[0];
		if (first[0] < 0) {
			a.v[i].first_ns = 0;
			a.v[i].steady_calls = 0;
			a.v[i].steady_ns = 0;
		}
	}
	*out = a.v;
	*n = a.n;
	return 0;
}

typedef struct cb_ctx { void *cb, *ud; } cb_ctx;

static int op_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_op_row r = {sqlite3_column_int64(s, 0), store_text(s, 1), sqlite3_column_int64(s, 2),
		       store_i64_or(s, 3, -1), store_i64_or(s, 4, -1)};
	return ((int (*)(const pp_op_row *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_op(pp_store *st, int64_t run_id, int (*cb)(const pp_op_row *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud};
	return store_each(st, "SELECT o.tid, n.value, o.start_ns, o.end_ns, o.step FROM ops o"
			      " LEFT JOIN strings n ON n.id = o.name_id WHERE o.run_id = ?1",
			  run_id, 0, NULL, op_row, &c);
}

typedef struct time_acc { pp_op_time *v; int n, cap, failed; } time_acc;

static int time_row(sqlite3_stmt *s, void *ud)
{
	time_acc *a = ud;
	if (a->n == a->cap) {
		int nc = a->cap ? a->cap * 2 : 64;
		pp_op_time *nv = realloc(a->v, (size_t)nc * sizeof *nv);
		if (!nv) {
			a->failed = 1;
			return 1;
		}
		a->v = nv;
		a->cap = nc;
	}
	a->v[a->n++] = (pp_op_time){sqlite3_column_int64(s, 0), sqlite3_column_double(s, 1)};
	return 0;
}

int pp_store_op_times(pp_store *st, int64_t run_id, pp_op_time **out, int *n)
{
	time_acc a = {0};
	int rc = store_each(st, "SELECT name_id, SUM(end_ns - start_ns) FROM ops WHERE run_id = ?1"
				" AND end_ns IS NOT NULL GROUP BY name_id ORDER BY name_id",
			    run_id, 0, NULL, time_row, &a);
	if (rc != 0 || a.failed) {
		free(a.v);
		*out = NULL;
		*n = 0;
		return -1;
	}
	*out = a.v;
	*n = a.n;
	return 0;
}
