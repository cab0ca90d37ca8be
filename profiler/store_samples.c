/* store_samples.c — CPU samples as the viewers read them: the stack tree
 * (one node per distinct path, with its frame's symbol) and the samples
 * pointing at leaf nodes. */
#include "store.h"
#include "store_internal.h"

static int step_all(sqlite3_stmt *q, int (*row)(sqlite3_stmt *q, void *ud), void *ud)
{
	int s;
	while ((s = sqlite3_step(q)) == SQLITE_ROW)
		if (row(q, ud) != 0)
			return -1;
	return s == SQLITE_DONE ? 0 : -1;
}

typedef struct node_cb { pp_stack_node_fn fn; void *ud; } node_cb;

static int node_row(sqlite3_stmt *q, void *ud)
{
	node_cb *c = ud;
	pp_stack_node n;
	n.id = sqlite3_column_int64(q, 0);
	n.parent = sqlite3_column_type(q, 1) == SQLITE_NULL ? 0 : sqlite3_column_int64(q, 1);
	n.symbol = (const char *)sqlite3_column_text(q, 2);
	n.python = sqlite3_column_int(q, 3);
	return c->fn(c->ud, &n);
}

int pp_store_stack_nodes(pp_store *st, int64_t run_id, pp_stack_node_fn fn, void *ud)
{
	sqlite3_stmt *q = NULL;
	int rc = -1;
	node_cb c = {fn, ud};
	if (sqlite3_prepare_v2(st->db,
			       "SELECT s.id, s.parent, coalesce(y.value, '?'), f.ip IS NULL AND f.symbol_id IS NOT NULL"
			       " FROM stacks s LEFT JOIN frames f ON f.run_id = s.run_id AND f.id = s.frame"
			       " LEFT JOIN strings y ON y.id = f.symbol_id WHERE s.run_id = ?1 ORDER BY s.id",
			       -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(q, 1, run_id);
		rc = step_all(q, node_row, &c);
	}
	sqlite3_finalize(q);
	return rc;
}

typedef struct sample_cb { pp_sample_fn fn; void *ud; } sample_cb;

static int sample_row(sqlite3_stmt *q, void *ud)
{
	sample_cb *c = ud;
	return c->fn(c->ud, sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2));
}

int pp_store_samples(pp_store *st, int64_t run_id, pp_sample_fn fn, void *ud)
{
	sqlite3_stmt *q = NULL;
	int rc = -1;
	sample_cb c = {fn, ud};
	if (sqlite3_prepare_v2(st->db,
			       "SELECT tid, ts_ns, stack FROM samples WHERE run_id = ?1 AND typeof(stack) = 'integer'"
			       " ORDER BY ts_ns", -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(q, 1, run_id);
		rc = step_all(q, sample_row, &c);
	}
	sqlite3_finalize(q);
	return rc;
}
