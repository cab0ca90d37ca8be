/* The store's read API: what viewers, diagnostics and the CLI need, so they
 * do not repeat SQL over the raw tables. */
#include "store.h"
#include "store_internal.h"
#include "phaseprof.h"
#include "idmap.h"
#include "pp_grow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_col(char *dst, size_t n, sqlite3_stmt *s, int col)
{
	const unsigned char *t = sqlite3_column_text(s, col);
	snprintf(dst, n, "%s", t ? (const char *)t : "");
}

#define RUN_COLS                                                                               \
	"id,coalesce(parent_run,0),label,scenario,variant,status,command,host,clock,pid,ppid,"  \
	"start_unix_ns,coalesce(duration_ns,0),coalesce(exit_code,-1),coalesce(term_signal,0),"\
	"coalesce(events,0),coalesce(events_lost,0),coalesce(rows_lost,0),note"

static void read_run(sqlite3_stmt *s, pp_run_info *r)
{
	memset(r, 0, sizeof *r);
	r->id = sqlite3_column_int64(s, 0);
	r->parent_run = sqlite3_column_int64(s, 1);
	copy_col(r->label, sizeof r->label, s, 2);
	copy_col(r->scenario, sizeof r->scenario, s, 3);
	copy_col(r->variant, sizeof r->variant, s, 4);
	copy_col(r->status, sizeof r->status, s, 5);
	copy_col(r->command, sizeof r->command, s, 6);
	copy_col(r->host, sizeof r->host, s, 7);
	copy_col(r->clock, sizeof r->clock, s, 8);
	r->pid = sqlite3_column_int64(s, 9);
	r->ppid = sqlite3_column_int64(s, 10);
	r->start_unix_ns = sqlite3_column_int64(s, 11);
	r->duration_ns = sqlite3_column_int64(s, 12);
	r->exit_code = sqlite3_column_int(s, 13);
	r->term_signal = sqlite3_column_int(s, 14);
	r->events = sqlite3_column_int64(s, 15);
	r->events_lost = sqlite3_column_int64(s, 16);
	r->rows_lost = sqlite3_column_int64(s, 17);
	copy_col(r->note, sizeof r->note, s, 18);
}

int pp_store_runs(pp_store *st, pp_run_info **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "SELECT " RUN_COLS " FROM runs ORDER BY id", -1, &s, NULL) !=
	    SQLITE_OK)
		return -1;
	int cap = 0, rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (PP_GROW(*out, *n + 1, cap) != 0) {
			rc = SQLITE_NOMEM;
			break;
		}
		read_run(s, &(*out)[(*n)++]);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

int pp_store_run(pp_store *st, int64_t run_id, pp_run_info *out)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "SELECT " RUN_COLS " FROM runs WHERE id=?", -1, &s, NULL) !=
	    SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	int rc = -1;
	if (sqlite3_step(s) == SQLITE_ROW) { /* missing and unreadable: -1 */
		read_run(s, out);
		rc = 0;
	}
	sqlite3_finalize(s);
	return rc;
}

int pp_store_run_has(pp_store *st, int64_t run_id, unsigned *flags)
{
	sqlite3_stmt *s;
	*flags = 0;
	if (sqlite3_prepare_v2(st->db,
			       "SELECT EXISTS(SELECT 1 FROM gpu_activity WHERE run_id=?1),"
			       " EXISTS(SELECT 1 FROM run_meta WHERE run_id=?1 AND key='rank')",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	int rc = -1;
	if (sqlite3_step(s) == SQLITE_ROW) {
		*flags = (sqlite3_column_int(s, 0) ? PP_RUN_HAS_GPU : 0u) |
			 (sqlite3_column_int(s, 1) ? PP_RUN_IS_RANK : 0u);
		rc = 0;
	}
	sqlite3_finalize(s);
	return rc;
}

/* store_each with ?1 = run, ?2..?3 = a range of ids. */
static int store_range(pp_store *st, const char *sql, int64_t run_id, int64_t lo, int64_t hi,
		       int (*row)(sqlite3_stmt *s, void *ud), void *ud)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	sqlite3_bind_int64(s, 2, lo);
	sqlite3_bind_int64(s, 3, hi);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (row(s, ud) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* The first and last span id of a run (lo > hi: none). Ingest and merge
 * number a run's spans in one block, so a scan of rowids lo..hi reads the
 * run's rows in id order, each row once: through spans_kind the same scan
 * looks every row up again (1.7 s against 1.1 s at 5*10^6 spans) and
 * comes kind by kind. Found per kind in spans_kind, which holds each
 * kind's ids in order; odd kinds (a damaged or foreign row) too. */
static int run_span_ids(pp_store *st, int64_t run_id, int64_t *lo, int64_t *hi)
{
	static const char *const odd[] = {
		"SELECT min(id), max(id) FROM spans WHERE run_id=?1 AND kind IS NULL AND ?2 >= 0",
		"SELECT min(id), max(id) FROM spans WHERE run_id=?1 AND kind < 0 AND ?2 >= 0",
		"SELECT min(id), max(id) FROM spans WHERE run_id=?1 AND kind >= ?2",
	};
	*lo = INT64_MAX;
	*hi = INT64_MIN;
	sqlite3_stmt *s = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(st->db,
			       "SELECT (SELECT id FROM spans WHERE run_id=?1 AND kind=?2 ORDER BY id LIMIT 1),"
			       "(SELECT id FROM spans WHERE run_id=?1 AND kind=?2 ORDER BY id DESC LIMIT 1)",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	for (int k = 0; k < PP_KIND_COUNT + 3; k++) {
		if (k == PP_KIND_COUNT) {
			sqlite3_finalize(s);
			s = NULL;
		}
		if (k >= PP_KIND_COUNT &&
		    sqlite3_prepare_v2(st->db, odd[k - PP_KIND_COUNT], -1, &s, NULL) != SQLITE_OK)
			goto out;
		sqlite3_bind_int64(s, 1, run_id);
		sqlite3_bind_int(s, 2, k < PP_KIND_COUNT ? k : PP_KIND_COUNT);
		if (sqlite3_step(s) != SQLITE_ROW)
			goto out;
		if (sqlite3_column_type(s, 0) != SQLITE_NULL) {
			int64_t a = sqlite3_column_int64(s, 0), b = sqlite3_column_int64(s, 1);
			if (a < *lo)
				*lo = a;
			if (b > *hi)
				*hi = b;
		}
		if (k >= PP_KIND_COUNT) {
			sqlite3_finalize(s);
			s = NULL;
		} else {
			sqlite3_reset(s);
		}
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

/* Same thread and start: the span opened first (the smaller id, ids being
 * given at the begin) comes first, so a parent precedes its children. */
static int cmp_span_order(const void *a, const void *b)
{
	const pp_span_row *x = a, *y = b;
	if (x->tid != y->tid)
		return (x->tid > y->tid) - (x->tid < y->tid);
	if (x->start_ns != y->start_ns)
		return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
	return (x->id > y->id) - (x->id < y->id);
}

static int cmp_tid(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* One thread's rows, sorted unless they are in order already. */
static void sort_if_needed(pp_span_row *v, int64_t n)
{
	for (int64_t i = 1; i < n; i++)
		if (cmp_span_order(&v[i - 1], &v[i]) > 0) {
			qsort(v, (size_t)n, sizeof *v, cmp_span_order);
			return;
		}
}

/* Rows read in id order are each thread's spans in begin order, the
 * threads interleaved: a stable split by thread puts them in order without
 * moving 10^7 rows through a comparison sort; a thread whose rows are still
 * out of order (clock steps, a merged run) is sorted on its own. */
static int order_spans(pp_span_list *l)
{
	pp_idmap slot = {0};     /* tid -> index in tids + 1 */
	int64_t *tids = NULL, *at = NULL;
	int nt = 0, cap = 0, rc = -1;
	int *dest = NULL;
	if (l->n == 0)
		return 0;
	for (int i = 0; i < l->n; i++) {
		if (pp_idmap_get(&slot, (uint64_t)l->rows[i].tid, 0) > 0)
			continue;
		if (PP_GROW(tids, nt + 1, cap) != 0 || pp_idmap_put(&slot, (uint64_t)l->rows[i].tid, 0, nt + 1) != 0)
			goto out;
		tids[nt++] = l->rows[i].tid;
	}
	if (nt > 1)
		qsort(tids, (size_t)nt, sizeof *tids, cmp_tid);
	at = calloc((size_t)nt + 1, sizeof *at);
	dest = malloc((size_t)l->n * sizeof *dest);
	if (!at || !dest)
		goto out;
	for (int k = 0; k < nt; k++)
		if (pp_idmap_put(&slot, (uint64_t)tids[k], 0, k + 1) != 0)
			goto out;
	for (int i = 0; i < l->n; i++)
		at[pp_idmap_get(&slot, (uint64_t)l->rows[i].tid, 0)]++;
	for (int k = 1; k <= nt; k++)
		at[k] += at[k - 1];  /* at[k]: where thread k (1-based) ends; at[k - 1]: starts */
	int64_t *next = tids;        /* reused: the next free place of each thread */
	for (int k = 0; k < nt; k++)
		next[k] = at[k];
	for (int i = 0; i < l->n; i++)
		dest[i] = (int)next[pp_idmap_get(&slot, (uint64_t)l->rows[i].tid, 0) - 1]++;
	/* move the rows in place, cycle by cycle: no second copy of 10^7 rows */
	pp_span_row *v = l->rows;
	for (int i = 0; i < l->n; i++) {
		while (dest[i] != i) {
			int d = dest[i];
			pp_span_row r = v[d];
			v[d] = v[i];
			v[i] = r;
			dest[i] = dest[d];
			dest[d] = d;
		}
	}
	for (int k = 0; k < nt; k++)
		sort_if_needed(v + at[k], at[k + 1] - at[k]);
	rc = 0;
out:
	free(dest);
	free(at);
	free(tids);
	pp_idmap_free(&slot);
	return rc;
}

typedef struct span_acc {
	pp_store *st;
	pp_span_list *out;
	int cap;
	size_t scap, sn;
	pp_idmap name_at;         /* name id -> offset in out->strings + 1 */
	sqlite3_stmt *name_q;
	int failed, sorted;
	/* placed by thread: rows of thread k (tid slot k + 1) go to
	 * rows[next[k]] up to first[k + 1], counted beforehand */
	pp_idmap slot;
	int64_t *first, *next;
	int nt, misplaced;
} span_acc;

/* Offset of a name in the list's string pool, each distinct name stored
 * once (a recording has few names and many spans). */
static int64_t span_name(span_acc *a, int64_t name_id)
{
	int64_t at = pp_idmap_get(&a->name_at, (uint64_t)name_id, 0);
	if (at > 0)
		return at - 1;
	/* just ingested on this connection: no query */
	const char *nm = pp_store_intern_text(a->st, name_id);
	if (!nm) {
		sqlite3_bind_int64(a->name_q, 1, name_id);
		int rc = sqlite3_step(a->name_q);
		nm = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(a->name_q, 0) : NULL;
		if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
			sqlite3_reset(a->name_q);
			return -1;
		}
	}
	if (!nm)
		nm = "";
	size_t l = strlen(nm) + 1;
	if (PP_GROW(a->out->strings, a->sn + l, a->scap) != 0) {
		sqlite3_reset(a->name_q);
		return -1;
	}
	memcpy(a->out->strings + a->sn, nm, l);
	sqlite3_reset(a->name_q);
	at = (int64_t)a->sn;
	a->sn += l;
	if (pp_idmap_put(&a->name_at, (uint64_t)name_id, 0, at + 1) != 0)
		return -1;
	return at;
}

static int span_row(sqlite3_stmt *s, void *ud)
{
	span_acc *a = ud;
	pp_span_list *out = a->out;
	pp_span_row *r;
	int64_t k = -1;
	if (a->first) {
		int64_t tid = sqlite3_column_int64(s, 2);
		k = pp_idmap_get(&a->slot, (uint64_t)tid, 0) - 1;
		if (k < 0 || a->next[k] == a->first[k + 1]) {
			a->misplaced = 1;   /* rows written since they were counted */
			return 1;
		}
		r = &out->rows[a->next[k]];
	} else {
		if (PP_GROW(out->rows, out->n + 1, a->cap) != 0) {
			a->failed = 1;
			return 1;
		}
		r = &out->rows[out->n];
	}
	r->id = sqlite3_column_int64(s, 0);
	r->parent_id = sqlite3_column_int64(s, 1);
	r->tid = sqlite3_column_int64(s, 2);
	r->kind = sqlite3_column_int(s, 3);
	int64_t at = span_name(a, sqlite3_column_int64(s, 4));
	if (at < 0) {
		a->failed = 1;
		return 1;
	}
	/* an offset while the pool may still move; made a pointer at the end */
	r->name = (const char *)(intptr_t)at;
	r->start_ns = sqlite3_column_int64(s, 5);
	r->end_ns = sqlite3_column_int64(s, 6);
	r->depth = sqlite3_column_int(s, 7);
	r->step = sqlite3_column_int64(s, 8);
	if (k >= 0) {
		if (a->next[k] > a->first[k] && cmp_span_order(r - 1, r) > 0)
			a->sorted = 0;
		a->next[k]++;
	} else if (out->n && a->sorted && cmp_span_order(r - 1, r) > 0) {
		a->sorted = 0;
	}
	out->n++;
	return 0;
}

/* Counts the run's spans per thread (from spans_run alone) and makes room
 * for each thread's rows in tid order, so the scan puts every row in its
 * place: no pass that moves 10^7 rows afterwards. */
static int span_places(pp_store *st, int64_t run_id, span_acc *a)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "SELECT tid, count(*) FROM spans WHERE run_id=?1 GROUP BY tid ORDER BY tid",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	int rc, cap = 0, cap2 = 0;
	int64_t total = 0;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (PP_GROW(a->first, a->nt + 2, cap) != 0 || PP_GROW(a->next, a->nt + 1, cap2) != 0 ||
		    pp_idmap_put(&a->slot, (uint64_t)sqlite3_column_int64(s, 0), 0, a->nt + 1) != 0) {
			rc = SQLITE_NOMEM;
			break;
		}
		a->first[a->nt] = a->next[a->nt] = total;
		total += sqlite3_column_int64(s, 1);
		a->first[++a->nt] = total;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE || total > INT32_MAX)
		return -1;
	a->out->rows = malloc(((size_t)total + 1) * sizeof *a->out->rows);
	return a->out->rows ? 0 : -1;
}

static void span_places_free(span_acc *a)
{
	free(a->first);
	free(a->next);
	a->first = a->next = NULL;
	a->nt = 0;
	pp_idmap_free(&a->slot);
}

/* The span columns a pp_span_row needs, of one run's id range, read
 * without an index (run_span_ids gives the range). */
static const char SPAN_SCAN[] = "SELECT id,COALESCE(parent_id,0),tid,kind,name_id,start_ns,"
				"COALESCE(end_ns,-1),depth,COALESCE(step,-1) FROM spans NOT INDEXED "
				"WHERE id BETWEEN ?2 AND ?3 AND run_id=?1";

static int span_names_prepare(span_acc *a)
{
	return sqlite3_prepare_v2(a->st->db, "SELECT value FROM strings WHERE id=?1", -1, &a->name_q,
				  NULL) == SQLITE_OK
		       ? 0
		       : -1;
}

/* The run's span rows in id order through row(ud), a's name query
 * prepared for them: 0, or -1 (also when a row set a->failed). */
static int span_scan(span_acc *a, int64_t run_id, int (*row)(sqlite3_stmt *, void *), void *ud)
{
	int64_t lo, hi;
	if (span_names_prepare(a) != 0 || run_span_ids(a->st, run_id, &lo, &hi) != 0)
		return -1;
	if (lo <= hi && (store_range(a->st, SPAN_SCAN, run_id, lo, hi, row, ud) != 0 || a->failed))
		return -1;
	return 0;
}

/* The rows are read in table order and sorted here: an ORDER BY through
 * spans_run looks every row up again and sorts each run of equal starts
 * (6,400 instructions a span at 10^6 spans, callgrind), the scan and one
 * sort take a fraction of that. */
int pp_store_spans(pp_store *st, int64_t run_id, int kind_filter, pp_span_list *out)
{
	memset(out, 0, sizeof *out);
	span_acc a = {.st = st, .out = out, .sorted = 1};
	int rc = -1;
	int64_t lo, hi;
	if (span_names_prepare(&a) != 0)
		goto out;
	if (kind_filter >= 0) {
		/* one kind: its rows through spans_kind, already in id order */
		if (store_each(st, "SELECT id,COALESCE(parent_id,0),tid,kind,name_id,start_ns,COALESCE(end_ns,-1),"
				   "depth,COALESCE(step,-1) FROM spans WHERE run_id=?1 AND kind=?2",
			       run_id, kind_filter, NULL, span_row, &a) != 0 || a.failed)
			goto out;
	} else {
		if (run_span_ids(st, run_id, &lo, &hi) != 0 || span_places(st, run_id, &a) != 0)
			goto out;
		if (lo <= hi && (store_range(st, SPAN_SCAN, run_id, lo, hi, span_row, &a) != 0 || a.failed))
			goto out;
		if (a.misplaced || out->n != (a.nt ? a.first[a.nt] : 0)) {
			/* the run changed between the count and the scan: read it again,
			 * sorting afterwards */
			span_places_free(&a);
			free(out->rows);
			out->rows = NULL;
			out->n = 0;
			a.sorted = 1;
			a.misplaced = 0;
			if (lo <= hi && (store_range(st, SPAN_SCAN, run_id, lo, hi, span_row, &a) != 0 || a.failed))
				goto out;
		}
	}
	for (int i = 0; i < out->n; i++)
		out->rows[i].name = out->strings + (intptr_t)out->rows[i].name;
	if (!a.sorted && a.first) {
		/* each thread in place already; a thread out of order (clock steps,
		 * a merged run) is sorted on its own */
		for (int k = 0; k < a.nt; k++)
			sort_if_needed(out->rows + a.first[k], a.first[k + 1] - a.first[k]);
	} else if (!a.sorted && order_spans(out) != 0) {
		goto out;
	}
	rc = 0;
out:
	span_places_free(&a);
	sqlite3_finalize(a.name_q);
	pp_idmap_free(&a.name_at);
	if (rc != 0)
		pp_span_list_free(out);
	return rc;
}

/* pp_store_each_span: one row at a time, nothing held but the names. */
typedef struct span_stream {
	span_acc a;               /* names only: a.out holds the string pool */
	pp_span_list pool;
	int (*cb)(const pp_span_row *, void *);
	void *ud;
	int stopped;
} span_stream;

static int span_stream_row(sqlite3_stmt *s, void *ud)
{
	span_stream *ss = ud;
	pp_span_row r;
	int64_t at = span_name(&ss->a, sqlite3_column_int64(s, 4));
	if (at < 0) {
		ss->a.failed = 1;
		return 1;
	}
	r.id = sqlite3_column_int64(s, 0);
	r.parent_id = sqlite3_column_int64(s, 1);
	r.tid = sqlite3_column_int64(s, 2);
	r.kind = sqlite3_column_int(s, 3);
	r.name = ss->pool.strings + at;
	r.start_ns = sqlite3_column_int64(s, 5);
	r.end_ns = sqlite3_column_int64(s, 6);
	r.depth = sqlite3_column_int(s, 7);
	r.step = sqlite3_column_int64(s, 8);
	if (ss->cb(&r, ss->ud) != 0) {
		ss->stopped = 1;
		return 1;
	}
	return 0;
}

int pp_store_each_span(pp_store *st, int64_t run_id, int (*cb)(const pp_span_row *, void *), void *ud)
{
	span_stream ss = {.a = {.st = st}, .cb = cb, .ud = ud};
	ss.a.out = &ss.pool;
	int rc = -1;
	if (span_scan(&ss.a, run_id, span_stream_row, &ss) != 0)
		goto out;
	rc = 0;
out:
	sqlite3_finalize(ss.a.name_q);
	pp_idmap_free(&ss.a.name_at);
	pp_span_list_free(&ss.pool);
	return rc;
}

/* pp_store_spans_kept: the stream filtered as a default ingest folds.
 * A span's children are the spans its thread begins next, so whether an
 * op/span row is a leaf is known at its thread's next row: until then it
 * waits in its thread's slot. */
typedef struct kept_thread { int64_t tid; pp_span_row row; int64_t name_id; int waiting; } kept_thread;
typedef struct kept_scan {
	span_acc a;
	int64_t cap, left_out;
	pp_idmap slot;            /* tid -> index in th + 1 */
	pp_idmap count;           /* (tid, kind << 32 | name id) -> leaves seen */
	kept_thread *th;
	int nth, cap_th;
	int rows_cap;
} kept_scan;

static int kept_add(kept_scan *k, const pp_span_row *r)
{
	pp_span_list *out = k->a.out;
	if (PP_GROW(out->rows, out->n + 1, k->rows_cap) != 0)
		return -1;
	out->rows[out->n++] = *r;
	return 0;
}

/* The waiting row of a thread, now known to be a leaf or not. */
static int kept_settle(kept_scan *k, kept_thread *t, int has_child)
{
	if (!t->waiting)
		return 0;
	t->waiting = 0;
	if (!has_child) {
		int64_t *n = pp_idmap_at(&k->count, (uint64_t)t->tid, (uint64_t)t->row.kind << 32 | (uint64_t)t->name_id);
		if (!n)
			return -1;
		if (++*n > k->cap) {
			k->left_out++;
			return 0;
		}
	}
	return kept_add(k, &t->row);
}

static int kept_row(sqlite3_stmt *s, void *ud)
{
	kept_scan *k = ud;
	pp_span_row r;
	int64_t name_id = sqlite3_column_int64(s, 4);
	int64_t at = span_name(&k->a, name_id);
	if (at < 0)
		goto fail;
	r.id = sqlite3_column_int64(s, 0);
	r.parent_id = sqlite3_column_int64(s, 1);
	r.tid = sqlite3_column_int64(s, 2);
	r.kind = sqlite3_column_int(s, 3);
	r.name = (const char *)(intptr_t)at;
	r.start_ns = sqlite3_column_int64(s, 5);
	r.end_ns = sqlite3_column_int64(s, 6);
	r.depth = sqlite3_column_int(s, 7);
	r.step = sqlite3_column_int64(s, 8);
	int64_t i = pp_idmap_get(&k->slot, (uint64_t)r.tid, 0) - 1;
	if (i < 0) {
		if (PP_GROW(k->th, k->nth + 1, k->cap_th) != 0 ||
		    pp_idmap_put(&k->slot, (uint64_t)r.tid, 0, k->nth + 1) != 0)
			goto fail;
		i = k->nth++;
		k->th[i] = (kept_thread){.tid = r.tid};
	}
	kept_thread *t = &k->th[i];
	if (kept_settle(k, t, t->waiting && r.parent_id == t->row.id) != 0)
		goto fail;
	if (r.kind == PP_OP || r.kind == PP_SPAN) {
		t->row = r;
		t->name_id = name_id;
		t->waiting = 1;
		return 0;
	}
	if (kept_add(k, &r) == 0)
		return 0;
fail:
	k->a.failed = 1;
	return 1;
}

int pp_store_spans_kept(pp_store *st, int64_t run_id, int64_t per_name, pp_span_list *out, int64_t *left_out)
{
	memset(out, 0, sizeof *out);
	*left_out = 0;
	kept_scan k = {.a = {.st = st, .out = out}, .cap = per_name};
	int rc = -1;
	if (span_scan(&k.a, run_id, kept_row, &k) != 0)
		goto out;
	for (int i = 0; i < k.nth; i++)
		if (kept_settle(&k, &k.th[i], 0) != 0)
			goto out;
	for (int i = 0; i < out->n; i++)
		out->rows[i].name = out->strings + (intptr_t)out->rows[i].name;
	if (order_spans(out) != 0)
		goto out;
	*left_out = k.left_out;
	rc = 0;
out:
	sqlite3_finalize(k.a.name_q);
	pp_idmap_free(&k.a.name_at);
	pp_idmap_free(&k.slot);
	pp_idmap_free(&k.count);
	free(k.th);
	if (rc != 0)
		pp_span_list_free(out);
	return rc;
}

void pp_span_list_free(pp_span_list *l)
{
	free(l->rows);
	free(l->strings);
	memset(l, 0, sizeof *l);
}

/* Phase totals are aggregated without holding the run's spans: one scan
 * sums the spans per (kind, parent), span_groups adds its folded leaf spans
 * to the same keys, and only the parents are then looked up to learn which
 * kinds enclose them. A full GROUP BY in SQLite sorts every row (2.4 s at
 * 5*10^6 spans, measured); the scan and a hash over the few distinct
 * parents take ~0.6 s. */
_Static_assert(PP_KIND_COUNT < 63, "a kind mask is one uint64_t");
typedef struct kp_agg { int kind; int64_t parent, count, total, max; } kp_agg;
typedef struct kp_scan {
	pp_idmap key;             /* (parent, kind) -> index in v + 1 */
	kp_agg *v;
	int64_t n, cap, run_end;
	int failed;
} kp_scan;

static kp_agg *kp_get(kp_scan *a, int kind, int64_t parent)
{
	int64_t i = pp_idmap_get(&a->key, (uint64_t)parent, (uint64_t)kind);
	if (i > 0)
		return &a->v[i - 1];
	if (PP_GROW(a->v, a->n + 1, a->cap) != 0 ||
	    pp_idmap_put(&a->key, (uint64_t)parent, (uint64_t)kind, a->n + 1) != 0)
		return NULL;
	kp_agg *g = &a->v[a->n++];
	*g = (kp_agg){kind, parent, 0, 0, 0};
	return g;
}

/* Adds count spans of total time (the longest max) under (kind, parent). */
static int kp_add(kp_scan *a, int kind, int64_t parent, int64_t count, int64_t total, int64_t max)
{
	if (kind < 0 || kind >= PP_KIND_COUNT)
		return 0;
	kp_agg *g = kp_get(a, kind, parent);
	if (!g) {
		a->failed = 1;
		return 1;
	}
	g->count += count;
	g->total += total;
	if (max > g->max)
		g->max = max;
	return 0;
}

/* row: kind, parent (0 none), count, total, max */
static int kp_row(sqlite3_stmt *s, void *ud)
{
	return kp_add(ud, sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2),
		      sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4));
}

/* one span: kind, parent, start, end (NULL: open until the run's end) */
static int kp_span(sqlite3_stmt *s, void *ud)
{
	kp_scan *a = ud;
	int64_t start = sqlite3_column_int64(s, 2);
	int64_t end = store_i64_or(s, 3, a->run_end);
	int64_t dur = end > start ? end - start : 0;
	return kp_add(a, sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1), 1, dur, dur);
}

/* Bit k set when the span or one of its ancestors is of kind k (memoised;
 * the walk is bounded in case a damaged recording has a parent cycle). */
static int enclosing_kinds(sqlite3_stmt *q, pp_idmap *memo, int64_t id, uint64_t *mask)
{
	int64_t chain[256];
	int depth = 0;
	uint64_t m = 0;
	while (id > 0 && depth < 256) {
		int64_t v = pp_idmap_get(memo, (uint64_t)id, 0);
		if (v > 0) {
			m = (uint64_t)(v - 1);
			break;
		}
		chain[depth++] = id;
		sqlite3_bind_int64(q, 1, id);
		int rc = sqlite3_step(q);
		int64_t parent = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
		int kind = rc == SQLITE_ROW ? sqlite3_column_int(q, 1) : -1;
		sqlite3_reset(q);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return -1;
		if (kind >= 0 && kind < PP_KIND_COUNT)
			m = 1ull << kind; /* own kind; ancestors' bits added on the way back */
		else
			m = 0;
		/* park the span's own bit until its ancestors are known */
		if (pp_idmap_put(memo, (uint64_t)id, 1, (int64_t)m + 1) != 0)
			return -1;
		id = parent;
	}
	/* m holds the bits of the first memoised ancestor (or 0): fold down */
	for (int i = depth - 1; i >= 0; i--) {
		m |= (uint64_t)(pp_idmap_get(memo, (uint64_t)chain[i], 1) - 1);
		if (pp_idmap_put(memo, (uint64_t)chain[i], 0, (int64_t)m + 1) != 0)
			return -1;
	}
	*mask = m;
	return 0;
}

int pp_store_phase_totals(pp_store *st, int64_t run_id, pp_phase_total **out, int *n)
{
	*out = NULL;
	*n = 0;
	pp_run_info run;
	kp_scan a = {.run_end = pp_store_run(st, run_id, &run) == 0 ? run.duration_ns : 0};
	pp_idmap memo = {0};
	sqlite3_stmt *q = NULL;
	pp_phase_total *tot = NULL;
	int rc = -1;
	int64_t lo, hi;
	if (run_span_ids(st, run_id, &lo, &hi) != 0)
		goto out;
	if (lo <= hi && (store_range(st, "SELECT kind, COALESCE(parent_id, 0), start_ns, end_ns FROM spans "
					 "NOT INDEXED WHERE id BETWEEN ?2 AND ?3 AND run_id = ?1",
				 run_id, lo, hi, kp_span, &a) != 0 || a.failed))
		goto out;
	if (st->has_span_groups &&
	    (store_each(st, "SELECT kind, COALESCE(parent_id, 0), count, total_ns, max_ns FROM span_groups "
			    "WHERE run_id = ?1", run_id, 0, NULL, kp_row, &a) != 0 || a.failed))
		goto out;
	tot = calloc(PP_KIND_COUNT, sizeof *tot);
	if (!tot || sqlite3_prepare_v2(st->db, "SELECT COALESCE(parent_id, 0), kind FROM spans WHERE id = ?1", -1,
				       &q, NULL) != SQLITE_OK)
		goto out;
	for (int64_t i = 0; i < a.n; i++) {
		const kp_agg *g = &a.v[i];
		uint64_t around = 0;
		if (enclosing_kinds(q, &memo, g->parent, &around) != 0)
			goto out;
		pp_phase_total *t = &tot[g->kind];
		/* count only the outermost spans of a kind */
		if (!(around >> g->kind & 1)) {
			t->count += g->count;
			t->total_ns += g->total;
		}
		if (g->max > t->max_ns)
			t->max_ns = g->max;
	}
	int k = 0;
	for (int i = 0; i < PP_KIND_COUNT; i++) {
		if (!tot[i].count && !tot[i].max_ns)
			continue;
		tot[k] = tot[i];
		tot[k].kind = i;
		tot[k].kind_name = pp_kind_name((pp_kind)i);
		k++;
	}
	*out = tot;
	*n = k;
	tot = NULL;
	rc = 0;
out:
	sqlite3_finalize(q);
	free(tot);
	free(a.v);
	pp_idmap_free(&a.key);
	pp_idmap_free(&memo);
	return rc;
}

static int cmp_step_start(const void *a, const void *b)
{
	const pp_step_row *x = a, *y = b;
	if (x->start_ns != y->start_ns)
		return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
	return (x->step > y->step) - (x->step < y->step);
}

/* The one definition of a step: a closed `step` or `first_step` phase that
 * is not inside another step phase on its thread. A session or a traced
 * function opens steps of its own inside the loop's steps; counting those
 * would double the step count and mix two distributions. */
int pp_store_steps(pp_store *st, int64_t run_id, pp_step_row **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s;
	/* per thread by start, the outer span first when two start together;
	 * "+tid" keeps SQLite from walking spans_run (every span of the run,
	 * 1.2 s at 5*10^6 spans) to skip sorting the few step rows */
	if (sqlite3_prepare_v2(st->db,
			       "SELECT tid,kind,step,start_ns,end_ns FROM spans WHERE run_id=?1 AND "
			       "kind IN (?2,?3) ORDER BY +tid,start_ns,depth,end_ns DESC",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	sqlite3_bind_int(s, 2, PP_STEP);
	sqlite3_bind_int(s, 3, PP_FIRST_STEP);
	int cap = 0, rc;
	int64_t tid = 0, outer_end = -1;
	int have_tid = 0;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t t = sqlite3_column_int64(s, 0);
		int open = sqlite3_column_type(s, 4) == SQLITE_NULL;
		int64_t start = sqlite3_column_int64(s, 3);
		int64_t end = open ? INT64_MAX : sqlite3_column_int64(s, 4);
		if (have_tid && t == tid && start < outer_end && end <= outer_end)
			continue; /* nested in the thread's current outer step */
		have_tid = 1;
		tid = t;
		outer_end = end;
		if (open)
			continue; /* still open at the run's end: no duration */
		if (PP_GROW(*out, *n + 1, cap) != 0) {
			rc = SQLITE_NOMEM;
			break;
		}
		pp_step_row *r = &(*out)[(*n)++];
		r->kind = sqlite3_column_int(s, 1);
		r->step = sqlite3_column_type(s, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 2);
		r->start_ns = start;
		r->dur_ns = end - start;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -1;
	}
	if (*n > 1)
		qsort(*out, (size_t)*n, sizeof **out, cmp_step_start);
	/* a first-step phase carries no iteration: it is the one before the next */
	for (int i = 0; i < *n; i++) {
		pp_step_row *r = &(*out)[i];
		if (r->kind == PP_FIRST_STEP && r->step < 0) {
			int64_t it = i + 1 < *n ? (*out)[i + 1].step - 1 : 0;
			r->step = it < 0 ? 0 : it;
		}
	}
	return 0;
}

char **pp_store_counter_names(pp_store *st, int64_t run_id)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db,
			       "SELECT DISTINCT n.value FROM counters c JOIN strings n ON "
			       "n.id=c.name_id WHERE c.run_id=? ORDER BY n.value",
			       -1, &s, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(s, 1, run_id);
	size_t n = 0, cap = 8;
	char **names = calloc(cap, sizeof *names);
	int rc = SQLITE_NOMEM;
	while (names && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (PP_GROW(names, n + 2, cap) != 0) {
			rc = SQLITE_NOMEM;
			break;
		}
		const char *t = (const char *)sqlite3_column_text(s, 0);
		names[n] = strdup(t ? t : "");
		if (!names[n]) {
			rc = SQLITE_NOMEM;
			break;
		}
		names[++n] = NULL;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		pp_store_free_names(names);
		return NULL;
	}
	return names;
}

void pp_store_free_names(char **names)
{
	for (char **p = names; p && *p; p++)
		free(*p);
	free(names);
}

int pp_store_counter(pp_store *st, int64_t run_id, const char *name, pp_counter_row **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db,
			       "SELECT c.ts_ns,c.value FROM counters c JOIN strings n ON "
			       "n.id=c.name_id WHERE c.run_id=? AND n.value=? ORDER BY c.ts_ns",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	/* STATIC: name outlives the statement, and a TRANSIENT copy that fails
	 * for memory binds NULL without a word: no rows, a short answer
	 * (tests/oom, open + read N=2714) */
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	int cap = 0, rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (PP_GROW(*out, *n + 1, cap) != 0) {
			rc = SQLITE_NOMEM;
			break;
		}
		(*out)[*n].ts_ns = sqlite3_column_int64(s, 0);
		(*out)[*n].value = sqlite3_column_double(s, 1);
		(*n)++;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

int pp_store_add_finding(pp_store *st, const pp_finding *f)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db,
			       "INSERT INTO findings(run_id,rule,severity,score,title,evidence,fix) "
			       "VALUES(?,?,?,?,?,?,?)",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, f->run_id);
	sqlite3_bind_text(s, 2, f->rule, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, f->severity, -1, SQLITE_STATIC);
	sqlite3_bind_double(s, 4, f->score);
	sqlite3_bind_text(s, 5, f->title, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, f->evidence, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, f->fix, -1, SQLITE_STATIC);
	int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(s);
	return rc;
}

int pp_store_clear_findings(pp_store *st, int64_t run_id)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "DELETE FROM findings WHERE run_id=?", -1, &s, NULL) !=
	    SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(s);
	return rc;
}

int pp_store_findings(pp_store *st, int64_t run_id, pp_finding **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s;
	const char *sql = run_id ? "SELECT run_id,rule,severity,score,title,evidence,fix FROM "
				   "findings WHERE run_id=?1 ORDER BY score DESC, id"
				 : "SELECT run_id,rule,severity,score,title,evidence,fix FROM "
				   "findings ORDER BY run_id, score DESC, id";
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (run_id)
		sqlite3_bind_int64(s, 1, run_id);
	int cap = 0, rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (PP_GROW(*out, *n + 1, cap) != 0) {
			rc = SQLITE_NOMEM;
			break;
		}
		pp_finding *f = &(*out)[(*n)++];
		f->run_id = sqlite3_column_int64(s, 0);
		copy_col(f->rule, sizeof f->rule, s, 1);
		copy_col(f->severity, sizeof f->severity, s, 2);
		f->score = sqlite3_column_double(s, 3);
		copy_col(f->title, sizeof f->title, s, 4);
		copy_col(f->evidence, sizeof f->evidence, s, 5);
		copy_col(f->fix, sizeof f->fix, s, 6);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

/* ---- SQL aggregates median() and stdev(), as nsys registers for its
 * report queries, so ad-hoc SQL over a recording can use them too. */
typedef struct agg {
	double *v;
	size_t n, cap;
} agg;

static void agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
		return;
	agg *a = sqlite3_aggregate_context(ctx, sizeof *a);
	if (!a)
		return;
	if (PP_GROW(a->v, a->n + 1, a->cap) != 0) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	a->v[a->n++] = sqlite3_value_double(argv[0]);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void median_final(sqlite3_context *ctx)
{
	agg *a = sqlite3_aggregate_context(ctx, 0);
	if (!a || !a->n) {
		sqlite3_result_null(ctx);
		return;
	}
	qsort(a->v, a->n, sizeof *a->v, cmp_d);
	double m = a->n % 2 ? a->v[a->n / 2] : (a->v[a->n / 2 - 1] + a->v[a->n / 2]) / 2;
	free(a->v);
	sqlite3_result_double(ctx, m);
}

static void stdev_final(sqlite3_context *ctx)
{
	agg *a = sqlite3_aggregate_context(ctx, 0);
	if (!a || a->n < 2) {
		if (a)
			free(a->v);
		sqlite3_result_null(ctx);
		return;
	}
	double mean = 0, ss = 0;
	for (size_t i = 0; i < a->n; i++)
		mean += a->v[i];
	mean /= (double)a->n;
	for (size_t i = 0; i < a->n; i++)
		ss += (a->v[i] - mean) * (a->v[i] - mean);
	free(a->v);
	sqlite3_result_double(ctx, sqrt(ss / (double)(a->n - 1)));
}

void pp_store_register_functions(sqlite3 *db)
{
	sqlite3_create_function(db, "median", 1, SQLITE_UTF8, NULL, NULL, agg_step, median_final);
	sqlite3_create_function(db, "stdev", 1, SQLITE_UTF8, NULL, NULL, agg_step, stdev_final);
}

/* ---- run metadata, losses, threads, marks, counters ---- */

typedef struct text_buf { char *buf; size_t len; int found; } text_buf;

static int text_row(sqlite3_stmt *s, void *ud)
{
	text_buf *t = ud;
	const char *v = store_text(s, 0);
	snprintf(t->buf, t->len, "%s", v ? v : "");
	t->found = 1;
	return 1;
}

int pp_store_run_meta(pp_store *st, int64_t run_id, const char *key, char *buf, size_t len)
{
	text_buf t = {buf, len, 0};
	if (len)
		buf[0] = 0;
	if (store_each(st, "SELECT value FROM run_meta WHERE run_id = ?1 AND key = ?3 ORDER BY rowid DESC LIMIT 1",
		       run_id, 0, key, text_row, &t) != 0)
		return -1;
	return t.found ? 0 : 1;
}

int pp_store_set_run_meta(pp_store *st, int64_t run_id, const char *key, const char *value)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "INSERT INTO run_meta(run_id, key, value) VALUES(?1, ?2, ?3)", -1,
			       &s, NULL) != SQLITE_OK)
		return -1;
	int rc = sqlite3_bind_int64(s, 1, run_id);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(s, 2, key, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(s, 3, value, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

typedef struct cb_ctx { void *cb, *ud; int failed; } cb_ctx;

static int kv_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_kv_row r = {store_text(s, 0), store_text(s, 1)};
	return ((int (*)(const pp_kv_row *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_run_meta(pp_store *st, int64_t run_id, int (*cb)(const pp_kv_row *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud, 0};
	return store_each(st, "SELECT key, value FROM run_meta WHERE run_id = ?1 ORDER BY rowid", run_id, 0,
			  NULL, kv_row, &c);
}

static int loss_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_loss_row r = {store_text(s, 0), sqlite3_column_int64(s, 1), store_text(s, 2)};
	return ((int (*)(const pp_loss_row *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_loss(pp_store *st, int64_t run_id, int (*cb)(const pp_loss_row *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud, 0};
	return store_each(st, "SELECT source, count, detail FROM losses WHERE run_id = ?1 ORDER BY rowid",
			  run_id, 0, NULL, loss_row, &c);
}

typedef struct thr_acc { pp_thread_row *v; int n, cap, failed; } thr_acc;

static int thr_row(sqlite3_stmt *s, void *ud)
{
	thr_acc *a = ud;
	if (PP_GROW(a->v, a->n + 1, a->cap) != 0) {
		a->failed = 1;
		return 1;
	}
	pp_thread_row *t = &a->v[a->n++];
	t->tid = sqlite3_column_int64(s, 0);
	copy_col(t->name, sizeof t->name, s, 1);
	return 0;
}

int pp_store_threads(pp_store *st, int64_t run_id, pp_thread_row **out, int *n)
{
	thr_acc a = {0};
	int rc = store_each(st, "SELECT tid, name FROM threads WHERE run_id = ?1 ORDER BY first_ns", run_id,
			    0, NULL, thr_row, &a);
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

static int mark_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_mark_row r = {sqlite3_column_int64(s, 0), store_text(s, 1)};
	return ((int (*)(const pp_mark_row *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_mark(pp_store *st, int64_t run_id, int limit, int (*cb)(const pp_mark_row *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud, 0};
	return store_each(st, "SELECT m.ts_ns, n.value FROM marks m LEFT JOIN strings n ON n.id = m.name_id"
			      " WHERE m.run_id = ?1 ORDER BY m.ts_ns LIMIT ?2",
			  run_id, limit > 0 ? limit : -1, NULL, mark_row, &c);
}

static int counter_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_counter_sample r = {store_text(s, 0), sqlite3_column_int64(s, 1),
			       sqlite3_column_type(s, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 2)};
	return ((int (*)(const pp_counter_sample *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_counter(pp_store *st, int64_t run_id, int (*cb)(const pp_counter_sample *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud, 0};
	return store_each(st, "SELECT n.value, c.ts_ns, c.value FROM counters c"
			      " LEFT JOIN strings n ON n.id = c.name_id WHERE c.run_id = ?1 ORDER BY c.ts_ns",
			  run_id, 0, NULL, counter_row, &c);
}

static int two_i64(sqlite3_stmt *s, void *ud)
{
	int64_t *v = ud;
	v[0] = sqlite3_column_int64(s, 0);
	v[1] = sqlite3_column_int64(s, 1);
	return 1;
}

int pp_store_span_name_total(pp_store *st, int64_t run_id, const char *name, int64_t *total_ns, int64_t *count)
{
	int64_t v[2] = {0, 0};
	/* spans folded into span_groups count too */
#define SPAN_NAME_TOTAL(GROUPED)                                                                          \
	"WITH n AS (SELECT id FROM strings WHERE value = ?3) "                                            \
	"SELECT COALESCE(SUM(t), 0), COALESCE(SUM(c), 0) FROM ("                                          \
	"SELECT SUM(s.end_ns - s.start_ns) t, COUNT(*) c FROM spans s JOIN n ON n.id = s.name_id "         \
	"WHERE s.run_id = ?1 AND s.end_ns IS NOT NULL" GROUPED ")"
	int rc = store_each(st,
			    st->has_span_groups
				    ? SPAN_NAME_TOTAL(" UNION ALL SELECT SUM(g.total_ns), SUM(g.count) FROM span_groups g "
						      "JOIN n ON n.id = g.name_id WHERE g.run_id = ?1")
				    : SPAN_NAME_TOTAL(""),
			    run_id, 0, name, two_i64, v);
#undef SPAN_NAME_TOTAL
	if (total_ns)
		*total_ns = v[0];
	if (count)
		*count = v[1];
	return rc;
}

int pp_store_kind_first_step_total(pp_store *st, int64_t run_id, int kind, int other_kind,
				   int64_t *in_first_step_ns, int64_t *total_ns)
{
	char sql[768];
	snprintf(sql, sizeof sql,
		 "WITH f AS (SELECT start_ns a, end_ns b FROM spans WHERE run_id = ?1 "
		 "AND kind = %d AND end_ns IS NOT NULL ORDER BY start_ns LIMIT 1) "
		 "SELECT COALESCE(SUM(CASE WHEN v.start_ns >= f.a AND v.end_ns <= f.b "
		 "THEN v.end_ns - v.start_ns END), 0), COALESCE(SUM(v.end_ns - v.start_ns), 0) "
		 "FROM spans v JOIN f LEFT JOIN spans p ON p.id = v.parent_id "
		 "WHERE v.run_id = ?1 AND v.kind = ?2 AND v.end_ns IS NOT NULL "
		 "AND COALESCE(p.kind, -1) NOT IN (?2, %d)",
		 PP_STEP, other_kind);
	int64_t v[2] = {0, 0};
	int rc = store_each(st, sql, run_id, kind, NULL, two_i64, v);
	*in_first_step_ns = v[0];
	*total_ns = v[1];
	return rc;
}

static const char *const info_tables[] = {"spans", "counters", "marks", "ops", "graphs",
					  "allocations", "libraries", "io", "samples",
					  "gpu_activity", "findings", NULL};

static int one_i64(sqlite3_stmt *s, void *ud)
{
	*(int64_t *)ud = sqlite3_column_int64(s, 0);
	return 1;
}

int pp_store_table_rows(pp_store *st, const char *const **names, int64_t **counts)
{
	size_t n = sizeof info_tables / sizeof *info_tables;
	int64_t *c = calloc(n, sizeof *c);
	if (!c)
		return -1;
	for (size_t i = 0; info_tables[i]; i++) {
		char sql[96];
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", info_tables[i]);
		if (store_each(st, sql, 0, 0, NULL, one_i64, &c[i]) != 0) {
			free(c);
			return -1;
		}
	}
	*names = info_tables;
	*counts = c;
	return 0;
}
