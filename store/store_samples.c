/* store_samples.c — reads of CPU samples: the stack tree with its frames'
 * symbols, and sample counts per stack. */
#include "store.h"
#include "store_internal.h"

typedef struct cb_ctx { void *cb, *ud; } cb_ctx;

static int stack_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_stack_row r = {sqlite3_column_int64(s, 0), store_i64_or(s, 1, -1), store_text(s, 2),
			  store_text(s, 4), sqlite3_column_int64(s, 3)};
	return ((int (*)(const pp_stack_row *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_stack(pp_store *st, int64_t run_id, int (*cb)(const pp_stack_row *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud};
	return store_each(st, "SELECT s.id, s.parent, sym.value, f.ip, mo.value"
			      " FROM stacks s LEFT JOIN frames f ON f.run_id = s.run_id AND f.id = s.frame"
			      " LEFT JOIN strings sym ON sym.id = f.symbol_id LEFT JOIN strings mo ON mo.id = f.module_id"
			      " WHERE s.run_id = ?1",
			  run_id, 0, NULL, stack_row, &c);
}

static int count_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	return ((int (*)(int64_t, int64_t, void *))c->cb)(sqlite3_column_int64(s, 0),
							   sqlite3_column_int64(s, 1), c->ud);
}

int pp_store_each_sample_count(pp_store *st, int64_t run_id, int (*cb)(int64_t stack, int64_t count, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud};
	return store_each(st, "SELECT stack, COUNT(*) FROM samples WHERE run_id = ?1 GROUP BY stack", run_id, 0,
			  NULL, count_row, &c);
}

static int yes_row(sqlite3_stmt *s, void *ud)
{
	(void)s;
	*(int *)ud = 1;
	return 1;
}

int pp_store_has_samples(pp_store *st, int64_t run_id, int *has)
{
	*has = 0;
	return store_each(st, "SELECT 1 FROM samples WHERE run_id = ?1 LIMIT 1", run_id, 0, NULL, yes_row, has);
}

/* Per-sample reads for the Chrome trace: the tree with a Python flag per
 * node, and each sample with its thread and time. */
typedef struct node_cb { pp_stack_node_fn fn; void *ud; int stopped; } node_cb;

static int node_row(sqlite3_stmt *q, void *ud)
{
	node_cb *c = ud;
	pp_stack_node n;
	n.id = sqlite3_column_int64(q, 0);
	n.parent = sqlite3_column_type(q, 1) == SQLITE_NULL ? 0 : sqlite3_column_int64(q, 1);
	n.symbol = (const char *)sqlite3_column_text(q, 2);
	n.python = sqlite3_column_int(q, 3);
	return c->stopped = c->fn(c->ud, &n) != 0;
}

int pp_store_stack_nodes(pp_store *st, int64_t run_id, pp_stack_node_fn fn, void *ud)
{
	node_cb c = {fn, ud, 0};
	int rc = store_each(st, "SELECT s.id, s.parent, coalesce(y.value, '?'), f.ip IS NULL AND f.symbol_id IS NOT NULL"
				" FROM stacks s LEFT JOIN frames f ON f.run_id = s.run_id AND f.id = s.frame"
				" LEFT JOIN strings y ON y.id = f.symbol_id WHERE s.run_id = ?1 ORDER BY s.id",
			    run_id, 0, NULL, node_row, &c);
	return c.stopped ? -1 : rc;
}

typedef struct sample_cb { pp_sample_fn fn; void *ud; int stopped; } sample_cb;

static int sample_row(sqlite3_stmt *q, void *ud)
{
	sample_cb *c = ud;
	return c->stopped = c->fn(c->ud, sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
				  sqlite3_column_int64(q, 2)) != 0;
}

int pp_store_samples(pp_store *st, int64_t run_id, pp_sample_fn fn, void *ud)
{
	sample_cb c = {fn, ud, 0};
	int rc = store_each(st, "SELECT tid, ts_ns, stack FROM samples WHERE run_id = ?1 AND typeof(stack) = 'integer'"
				" ORDER BY ts_ns",
			    run_id, 0, NULL, sample_row, &c);
	return c.stopped ? -1 : rc;
}
