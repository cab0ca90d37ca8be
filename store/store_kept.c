/* store_kept.c — memory kept across steps (step_kept), per allocation
 * site: what the memory rule names as holding a growing heap. */
#include "store.h"
#include "store_internal.h"
#include "pp_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_rate(const void *a, const void *b)
{
	double x = ((const pp_kept_site *)a)->per_step_bytes, y = ((const pp_kept_site *)b)->per_step_bytes;
	return x < y ? 1 : x > y ? -1 : 0;
}

int pp_store_kept_sites(pp_store *st, int64_t run_id, int64_t from, pp_kept_site **out, int *n)
{
	int rc = -1, cap = 0, seen = 0;
	sqlite3_stmt *q = NULL;
	*out = NULL;
	*n = 0;
	/* one pass in (site, step) order: a site's rows are consecutive */
	if (sqlite3_prepare_v2(st->db,
			       "SELECT k.site_id, COALESCE(s.value, '?'), k.step, SUM(k.bytes), SUM(k.blocks) "
			       "FROM step_kept k LEFT JOIN strings s ON s.id = k.site_id "
			       "WHERE k.run_id = ?1 AND k.step >= ?2 GROUP BY k.site_id, k.step "
			       "ORDER BY k.site_id, k.step",
			       -1, &q, NULL) != SQLITE_OK)
		goto done;
	if (sqlite3_bind_int64(q, 1, run_id) != SQLITE_OK || sqlite3_bind_int64(q, 2, from) != SQLITE_OK)
		goto done;
	int64_t cur = -1;
	pp_kept_site *k = NULL;
	int s;
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t site = sqlite3_column_int64(q, 0);
		if (site != cur || !k) {
			if (k && seen < 3)
				(*n)--; /* too few steps to speak of a rise */
			if (PP_GROW(*out, *n + 1, cap) != 0)
				goto done;
			k = &(*out)[(*n)++];
			memset(k, 0, sizeof *k);
			snprintf(k->site, sizeof k->site, "%s", (const char *)sqlite3_column_text(q, 1));
			k->first_step = sqlite3_column_int64(q, 2);
			k->first_bytes = sqlite3_column_int64(q, 3);
			cur = site;
			seen = 0;
		}
		k->last_step = sqlite3_column_int64(q, 2);
		k->last_bytes = sqlite3_column_int64(q, 3);
		k->last_blocks = sqlite3_column_int64(q, 4);
		seen++;
	}
	if (s != SQLITE_DONE)
		goto done;
	if (k && seen < 3)
		(*n)--;
	for (int i = 0; i < *n; i++) {
		pp_kept_site *e = &(*out)[i];
		e->per_step_bytes = e->last_step > e->first_step
			? (double)(e->last_bytes - e->first_bytes) / (double)(e->last_step - e->first_step) : 0;
	}
	if (*n > 1)
		qsort(*out, (size_t)*n, sizeof **out, by_rate);
	rc = 0;
done:
	if (rc != 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	sqlite3_finalize(q);
	return rc;
}
