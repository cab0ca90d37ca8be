/* store_pyframes.c — the Python frames the agent resolved in CPU samples
 * (py_frames), for symbolisation: a sample's "p<id>" entry becomes a frame
 * with that row's symbol and module. */
#include "store.h"
#include "store_internal.h"
#include "pp_grow.h"

#include <stdio.h>
#include <stdlib.h>

int pp_store_py_frames(pp_store *st, int64_t run_id, pp_py_frames *out)
{
	int rc = -1;
	sqlite3_stmt *q = NULL;
	out->v = NULL;
	out->n = 0;
	int cap = 0;
	if (sqlite3_prepare_v2(st->db,
			       "SELECT id, symbol_id, module_id FROM py_frames WHERE run_id = ?1 ORDER BY id",
			       -1, &q, NULL) != SQLITE_OK)
		goto done;
	sqlite3_bind_int64(q, 1, run_id);
	int s;
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		if (PP_GROW(out->v, out->n + 1, cap) != 0)
			goto done;
		pp_py_frame *f = &out->v[out->n++];
		f->id = sqlite3_column_int64(q, 0);
		f->symbol_id = sqlite3_column_int64(q, 1);
		f->module_id = sqlite3_column_int64(q, 2);
	}
	if (s == SQLITE_DONE)
		rc = 0;
done:
	sqlite3_finalize(q);
	if (rc != 0)
		pp_py_frames_free(out);
	return rc;
}

const pp_py_frame *pp_py_frames_find(const pp_py_frames *f, int64_t id)
{
	int lo = 0, hi = f->n;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (f->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->n && f->v[lo].id == id ? &f->v[lo] : NULL;
}

void pp_py_frames_free(pp_py_frames *f)
{
	free(f->v);
	f->v = NULL;
	f->n = 0;
}

int pp_store_python_frames_state(pp_store *st, int64_t run_id, char *buf, size_t len)
{
	return pp_store_run_meta(st, run_id, "agent.python_frames", buf, len);
}
