/*
 * store_python.c — the store's reads for recorded Python programs: the
 * import tree's slowest modules.
 */
#include "phaseprof.h"
#include "store_internal.h"
#include "pp_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Self time: the import's own duration less its direct child imports, as
 * `python -X importtime` counts it (library loads it caused stay in it).
 * Each child import subtracts its time from its parent's row (found by
 * rowid): a subquery per import read every import of the run again, which
 * was quadratic and most of record's own time after `import numpy`. */
static const char import_sql[] =
	"WITH imp AS (SELECT id, parent_id, name_id, end_ns - start_ns AS d, depth FROM spans"
	"   WHERE run_id = ?1 AND kind = ?2 AND end_ns IS NOT NULL),"
	" r AS (SELECT name_id, 1 AS cnt, d AS cum, d AS self, depth FROM imp"
	"   UNION ALL SELECT p.name_id, 0, 0, -c.d, NULL FROM imp c JOIN spans p ON p.id = c.parent_id"
	"   WHERE p.run_id = ?1 AND p.kind = ?2 AND p.end_ns IS NOT NULL)"
	" SELECT n.value, SUM(cnt), SUM(cum), SUM(self), MIN(depth)"
	" FROM r JOIN strings n ON n.id = r.name_id"
	" GROUP BY n.value ORDER BY %s DESC, n.value LIMIT ?3";

int pp_store_import_times(pp_store *st, int64_t run_id, int by_self, int limit,
			  pp_import_time **out, int *n)
{
	*out = NULL;
	*n = 0;
	char sql[sizeof import_sql + 16];
	snprintf(sql, sizeof sql, import_sql, by_self ? "4" : "3");
	sqlite3_stmt *s = NULL;
	pp_import_time *v = NULL;
	int rc = -1, cap = 0, k = 0;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_bind_int64(s, 1, run_id) != SQLITE_OK ||
	    sqlite3_bind_int(s, 2, PP_IMPORT) != SQLITE_OK ||
	    sqlite3_bind_int(s, 3, limit > 0 ? limit : -1) != SQLITE_OK)
		goto out;
	int r;
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		if (PP_GROW(v, k + 1, cap) != 0)
			goto out;
		pp_import_time *t = &v[k];
		memset(t, 0, sizeof *t);
		const unsigned char *name = sqlite3_column_text(s, 0);
		snprintf(t->module, sizeof t->module, "%s", name ? (const char *)name : "?");
		t->count = sqlite3_column_int64(s, 1);
		t->cumulative_ns = sqlite3_column_int64(s, 2);
		t->self_ns = sqlite3_column_int64(s, 3);
		t->depth = sqlite3_column_int(s, 4);
		k++;
	}
	if (r != SQLITE_DONE)
		goto out;
	*out = v;
	*n = k;
	v = NULL;
	rc = 0;
out:
	free(v);
	sqlite3_finalize(s);
	return rc;
}

int pp_store_python_status(pp_store *st, int64_t run_id, char *out, size_t n)
{
	int rc = pp_store_run_meta(st, run_id, "python", out, n);
	return rc < 0 ? -1 : rc == 0;
}
