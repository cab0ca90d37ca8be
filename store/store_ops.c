/* store_ops.c — reads of op executions: per-op statistics, the rows for the
 * timeline, op time per node name. */
#include "store.h"
#include "store_internal.h"

#include "pp_assert.h"
#include "pp_grow.h"
#include "pp_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ops of a run aggregated in C from one scan of the run's rows. SQLite has
 * no hash aggregate: its GROUP BY sorts every row (twice the scan's time at
 * 5*10^6 ops, measured) or looks each row up through ops_run (about a
 * second at 5*10^5 ops); the scan and a hash index over the few distinct
 * (name, type) keys take ~0.1 s at 5*10^5. */
typedef struct op_raw { int64_t name_id, type_id, dur, step; } op_raw;
typedef struct op_raw_list { op_raw *v; int n; } op_raw_list;

static void op_raw_read(sqlite3_stmt *row, void *e)
{
	op_raw *r = e;
	r->name_id = sqlite3_column_int64(row, 0);
	r->type_id = sqlite3_column_int64(row, 1);
	r->dur = sqlite3_column_int64(row, 3) - sqlite3_column_int64(row, 2);
	r->step = sqlite3_column_type(row, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(row, 4);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_op_total(const void *a, const void *b)
{
	const pp_op_stat *x = a, *y = b;
	return (y->total_ns > x->total_ns) - (y->total_ns < x->total_ns);
}

static int name_row(sqlite3_stmt *row, void *ud)
{
	const unsigned char *s = sqlite3_column_text(row, 0);
	snprintf(ud, 128, "%s", s ? (const char *)s : "");
	return 1;
}

int pp_store_ops(pp_store *st, int64_t run_id, int limit, pp_op_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	op_raw_list sc;
	if (store_rows(st, "SELECT name_id, type_id, start_ns, end_ns, step FROM ops"
			   " WHERE run_id = ?1 AND end_ns IS NOT NULL", run_id, 0, NULL, sizeof *sc.v, op_raw_read,
		       &sc.v, &sc.n) != 0)
		return -1;
	if (sc.n == 0) {
		free(sc.v);
		return 0;
	}
	/* s0 = the run's first step; steady = every later step */
	int64_t *steps = malloc((size_t)sc.n * sizeof *steps), ns = 0;
	if (!steps) {
		free(sc.v);
		return -1;
	}
	for (int64_t i = 0; i < sc.n; i++)
		if (sc.v[i].step >= 0)
			steps[ns++] = sc.v[i].step;
	if (ns > 1)
		qsort(steps, (size_t)ns, sizeof *steps, cmp_i64);
	int64_t s0 = ns ? steps[0] : -1, distinct_later = 0;
	for (int64_t i = 0; i < ns; i++)
		if (steps[i] > s0 && (i == 0 || steps[i] != steps[i - 1]))
			distinct_later++;
	free(steps);
	/* (name, type) → aggregate */
	pp_hash index;
	pp_hash_init(&index, NULL);
	pp_op_stat *agg = NULL;
	int64_t (*keys)[2] = NULL;
	int nagg = 0, cap = 0, cap_keys = 0;
	int rc = -1;
	for (int64_t i = 0; i < sc.n; i++) {
		const op_raw *r = &sc.v[i];
		uint32_t h = pp_hash_u64x2((uint64_t)r->name_id, (uint64_t)r->type_id), id;
		int k = -1;
		for (uint32_t it = 0; k < 0 && pp_hash_next(&index, h, &it, &id);) {
			PP_ASSERT(id < (uint32_t)nagg);
			if (keys[id][0] == r->name_id && keys[id][1] == r->type_id)
				k = (int)id;
		}
		if (k < 0) {
			if (PP_GROW(agg, nagg + 1, cap) != 0 || PP_GROW(keys, nagg + 1, cap_keys) != 0 ||
			    pp_hash_add(&index, h, (uint32_t)nagg) != 0)
				goto done;
			k = nagg++;
			memset(&agg[k], 0, sizeof agg[k]);
			keys[k][0] = r->name_id;
			keys[k][1] = r->type_id;
		}
		pp_op_stat *o = &agg[k];
		o->calls++;
		o->total_ns += r->dur;
		if (r->dur > o->max_ns)
			o->max_ns = r->dur;
		if (r->step >= 0 && r->step == s0)
			o->first_ns += r->dur;
		else if (r->step > s0) {
			o->steady_calls++;
			o->steady_ns += r->dur;
		}
	}
	for (int k = 0; k < nagg; k++) {
		agg[k].steady_steps = distinct_later;
		agg[k].first_step = s0;
		/* remember the ids in the name fields until the top-N is known */
		memcpy(agg[k].name, &keys[k][0], sizeof(int64_t));
		memcpy(agg[k].type, &keys[k][1], sizeof(int64_t));
	}
	if (nagg > 1)
		qsort(agg, (size_t)nagg, sizeof *agg, cmp_op_total);
	if (limit > 0 && nagg > limit)
		nagg = limit;
	for (int k = 0; k < nagg; k++) {
		int64_t nid, tid;
		memcpy(&nid, agg[k].name, sizeof nid);
		memcpy(&tid, agg[k].type, sizeof tid);
		agg[k].name[0] = agg[k].type[0] = 0;
		agg[k].name_id = nid;
		char t[128] = "";
		if (store_each(st, "SELECT value FROM strings WHERE id = ?1", nid, 0, NULL, name_row, agg[k].name) != 0 ||
		    store_each(st, "SELECT value FROM strings WHERE id = ?1", tid, 0, NULL, name_row, t) != 0)
			goto done;
		snprintf(agg[k].type, sizeof agg[k].type, "%.63s", t);
	}
	*out = agg;
	*n = nagg;
	agg = NULL;
	rc = 0;
done:
	free(agg);
	free(keys);
	pp_hash_free(&index);
	free(sc.v);
	return rc;
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

static void time_read(sqlite3_stmt *s, void *e)
{
	*(pp_op_time *)e = (pp_op_time){sqlite3_column_int64(s, 0), sqlite3_column_double(s, 1)};
}

int pp_store_op_times(pp_store *st, int64_t run_id, pp_op_time **out, int *n)
{
	return store_rows(st, "SELECT name_id, SUM(end_ns - start_ns) FROM ops WHERE run_id = ?1"
			      " AND end_ns IS NOT NULL GROUP BY name_id ORDER BY name_id",
			  run_id, 0, NULL, sizeof **out, time_read, out, n);
}
