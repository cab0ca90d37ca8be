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
