/* store_startup.c — the start-up figures `record` prints for a run. */
#include "phaseprof.h"
#include "store.h"
#include "store_internal.h"
#include "pp_grow.h"

#include <stdio.h>
#include <stdlib.h>
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

static int cmp_i64(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return (*x > *y) - (*x < *y);
}

/* File I/O (pipes, sockets and devices left out) summed here from the
 * run's rows: the same sums as SQL with a COUNT(DISTINCT) and CASE per
 * column cost several thousand instructions a row, most of the summary. */
static void io_summary(sqlite3 *db, int64_t run, pp_startup_summary *o, int *rc)
{
	sqlite3_stmt *s = NULL;
	int64_t *opened = NULL;
	int n = 0, cap = 0;
	if (sqlite3_prepare_v2(db, "SELECT i.op, i.path_id, i.calls, i.bytes, i.small_calls, i.time_ns"
				   " FROM io i JOIN strings p ON p.id = i.path_id WHERE i.run_id = ?1"
				   " AND p.value NOT LIKE 'pipe:%' AND p.value NOT LIKE 'socket:%'"
				   " AND p.value NOT LIKE '/dev/%'",
			       -1, &s, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_int64(s, 1, run);
	int r;
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		const char *op = (const char *)sqlite3_column_text(s, 0);
		op = op ? op : "";
		int64_t calls = sqlite3_column_int64(s, 2);
		o->io_ns += sqlite3_column_int64(s, 5);
		if (strcmp(op, "open") == 0) {
			if (PP_GROW(opened, n + 1, cap) != 0)
				goto fail;
			opened[n++] = sqlite3_column_int64(s, 1);
		} else if (strcmp(op, "read") == 0 || strcmp(op, "fread") == 0) {
			o->reads += calls;
			o->read_bytes += sqlite3_column_int64(s, 3);
			o->small_reads += sqlite3_column_int64(s, 4);
		} else if (strcmp(op, "open_failed") == 0) {
			o->failed_opens += calls;
		}
	}
	if (r != SQLITE_DONE)
		goto fail;
	if (n)
		qsort(opened, (size_t)n, sizeof *opened, cmp_i64);
	for (int i = 0; i < n; i++)
		o->files_opened += i == 0 || opened[i] != opened[i - 1];
	goto out;
fail:
	*rc = -1;
out:
	sqlite3_finalize(s);
	free(opened);
}

typedef struct pyspan {
	int64_t id, parent_id, name_id, start_ns, end_ns;   /* end_ns -1: still open */
	int kind;
} pyspan;

static int cmp_pyspan_id(const void *a, const void *b)
{
	const pyspan *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

typedef struct name_dur { int64_t name_id, ns; } name_dur;

static int cmp_name_dur(const void *a, const void *b)
{
	const name_dur *x = a, *y = b;
	return (x->name_id > y->name_id) - (x->name_id < y->name_id);
}

/* The Python lines of the summary in one read of the run's spans, no
 * strings joined: outermost process_start and import time counted as
 * pp_store_phase_totals does (an open span runs to the run's end), closed
 * imports and the module with the most cumulative time as
 * pp_store_import_times orders them. Both of those read every span with
 * its name; the import tree's query joined spans to themselves, which
 * before the indexes are built (record prints before it builds them) was
 * quadratic in the run's spans. */
static void python_summary(sqlite3 *db, int64_t run, pp_startup_summary *o, int *rc)
{
	o->py_startup_ns = o->imports_ns = -1;
	sqlite3_stmt *s = NULL;
	pyspan *v = NULL;
	name_dur *nd = NULL;
	int n = 0, cap = 0, nn = 0, ncap = 0, any = 0;
	if (sqlite3_prepare_v2(db, "SELECT id, coalesce(parent_id, 0), kind, name_id, start_ns,"
				   " coalesce(end_ns, -1) FROM spans WHERE run_id = ?1 ORDER BY id",
			       -1, &s, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_int64(s, 1, run);
	int r;
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		if (PP_GROW(v, n + 1, cap) != 0)
			goto fail;
		v[n] = (pyspan){sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 3),
				sqlite3_column_int64(s, 4), sqlite3_column_int64(s, 5), sqlite3_column_int(s, 2)};
		any |= v[n].kind == PP_PROCESS_START || v[n].kind == PP_IMPORT;
		n++;
	}
	if (r != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(s);
	s = NULL;
	int64_t run_end = -1;
	for (int i = 0; any && i < n; i++) {
		const pyspan *p = &v[i];
		if (p->kind != PP_PROCESS_START && p->kind != PP_IMPORT)
			continue;
		int64_t end = p->end_ns;
		if (end < 0) {
			if (run_end < 0) {
				int64_t d = 0;
				row_i64(db, run, "SELECT duration_ns FROM runs WHERE id = ?1", &d, 1, rc);
				run_end = d;
			}
			end = run_end;
		}
		int64_t dur = end > p->start_ns ? end - p->start_ns : 0;
		int nested = 0;
		int64_t pid = p->parent_id;
		for (int guard = 0; pid && guard < 256; guard++) {
			pyspan key = {.id = pid};
			const pyspan *hit = bsearch(&key, v, (size_t)n, sizeof *v, cmp_pyspan_id);
			if (!hit)
				break;
			if (hit->kind == p->kind) {
				nested = 1;
				break;
			}
			pid = hit->parent_id;
		}
		int64_t *total = p->kind == PP_IMPORT ? &o->imports_ns : &o->py_startup_ns;
		if (*total < 0)
			*total = 0;
		if (!nested)
			*total += dur;
		if (p->kind == PP_IMPORT && p->end_ns >= 0) {
			if (PP_GROW(nd, nn + 1, ncap) != 0)
				goto fail;
			nd[nn++] = (name_dur){p->name_id, p->end_ns - p->start_ns};
			o->imports++;
		}
	}
	/* cumulative time per module name: ties go to the first name id */
	if (nn)
		qsort(nd, (size_t)nn, sizeof *nd, cmp_name_dur);
	int64_t best = -1, best_ns = 0;
	for (int i = 0; i < nn;) {
		int64_t sum = 0;
		int j = i;
		for (; j < nn && nd[j].name_id == nd[i].name_id; j++)
			sum += nd[j].ns;
		if (best < 0 || sum > best_ns) {
			best = nd[i].name_id;
			best_ns = sum;
		}
		i = j;
	}
	if (best >= 0) {
		o->slowest_import_ns = best_ns;
		snprintf(o->slowest_import, sizeof o->slowest_import, "?");
		if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
			goto fail;
		sqlite3_bind_int64(s, 1, best);
		if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
			snprintf(o->slowest_import, sizeof o->slowest_import, "%s",
				 (const char *)sqlite3_column_text(s, 0));
	}
	goto out;
fail:
	*rc = -1;
out:
	sqlite3_finalize(s);
	free(v);
	free(nd);
}

int pp_store_startup_summary(pp_store *st, int64_t run, pp_startup_summary *o)
{
	sqlite3 *db = st->db;
	int rc = 0;
	int64_t v[11];
	memset(o, 0, sizeof *o);
	o->loader_ns = meta_i64(db, run, "agent.loader_start_ns", &rc);
	/* main's first instruction when the agent saw it, else la_preinit */
	o->main_ns = meta_i64(db, run, "agent.main_ns", &rc);
	if (o->main_ns == INT64_MIN)
		o->main_ns = meta_i64(db, run, "agent.preinit_ns", &rc);
	o->end_ns = meta_i64(db, run, "agent.end_ns", &rc);
	/* libraries in one statement (each statement costs its compile):
	 * start-up batch: the exec row; dlopen batches: depth-1 rows */
	row_i64(db, run,
		"SELECT COUNT(*), SUM(via IN ('dlopen','dependency','dlmopen')),"
		" SUM(CASE WHEN via = 'exec' AND end_ns IS NOT NULL THEN mapped_ns - open_ns END),"
		" SUM(CASE WHEN via = 'exec' AND end_ns IS NOT NULL THEN end_ns - mapped_ns END),"
		" COUNT(CASE WHEN via = 'exec' AND end_ns IS NOT NULL THEN 1 END),"
		" SUM(CASE WHEN depth = 1 AND end_ns IS NOT NULL THEN mapped_ns - open_ns END),"
		" SUM(CASE WHEN depth = 1 AND end_ns IS NOT NULL THEN end_ns - mapped_ns END),"
		" COUNT(CASE WHEN depth = 1 AND end_ns IS NOT NULL THEN 1 END),"
		" SUM(CASE WHEN depth <= 1 THEN reloc_ns END), SUM(CASE WHEN depth <= 1 THEN ctor_ns END),"
		" COUNT(CASE WHEN depth <= 1 THEN reloc_ns END)"
		" FROM libraries WHERE run_id = ?1", v, 11, &rc);
	o->libs = v[0];
	o->libs_dlopen = v[1];
	o->startup_map_ns = v[2];
	o->startup_init_ns = v[3];
	o->startup_batches = v[4];
	o->dlopen_map_ns = v[5];
	o->dlopen_init_ns = v[6];
	o->dlopen_calls = v[7];
	o->reloc_ns = v[8];
	o->ctor_ns = v[9];
	o->split_loads = v[10];
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
	io_summary(db, run, o, &rc);
	python_summary(db, run, o, &rc);
	return rc;
}
