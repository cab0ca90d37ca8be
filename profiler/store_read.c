/* The store's read API: what viewers, diagnostics and the CLI need, so they
 * do not repeat SQL over the raw tables. */
#include "store.h"
#include "store_internal.h"
#include "phaseprof.h"
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

int pp_store_spans(pp_store *st, int64_t run_id, int kind_filter, pp_span_list *out)
{
	memset(out, 0, sizeof *out);
	const char *sql =
		kind_filter < 0
			? "SELECT s.id,coalesce(s.parent_id,0),s.tid,s.kind,n.value,s.start_ns,"
			  "coalesce(s.end_ns,-1),s.depth,coalesce(s.step,-1) FROM spans s LEFT JOIN "
			  "strings n ON n.id=s.name_id WHERE s.run_id=?1 ORDER BY s.tid,s.start_ns,s.depth"
			: "SELECT s.id,coalesce(s.parent_id,0),s.tid,s.kind,n.value,s.start_ns,"
			  "coalesce(s.end_ns,-1),s.depth,coalesce(s.step,-1) FROM spans s LEFT JOIN "
			  "strings n ON n.id=s.name_id WHERE s.run_id=?1 AND s.kind=?2 ORDER BY "
			  "s.tid,s.start_ns,s.depth";
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	if (kind_filter >= 0)
		sqlite3_bind_int(s, 2, kind_filter);
	int cap = 0, cap_off = 0;
	size_t scap = 0, sn = 0;
	/* names are stored as offsets while the string pool may move */
	size_t *name_off = NULL;
	int src;
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		if (PP_GROW(out->rows, out->n + 1, cap) != 0 || PP_GROW(name_off, out->n + 1, cap_off) != 0) {
			src = SQLITE_NOMEM;
			break;
		}
		pp_span_row *r = &out->rows[out->n];
		r->id = sqlite3_column_int64(s, 0);
		r->parent_id = sqlite3_column_int64(s, 1);
		r->tid = sqlite3_column_int64(s, 2);
		r->kind = sqlite3_column_int(s, 3);
		const char *nm = (const char *)sqlite3_column_text(s, 4);
		if (!nm)
			nm = "";
		size_t l = strlen(nm) + 1;
		if (PP_GROW(out->strings, sn + l, scap) != 0) {
			src = SQLITE_NOMEM;
			break;
		}
		memcpy(out->strings + sn, nm, l);
		name_off[out->n] = sn;
		sn += l;
		r->start_ns = sqlite3_column_int64(s, 5);
		r->end_ns = sqlite3_column_int64(s, 6);
		r->depth = sqlite3_column_int(s, 7);
		r->step = sqlite3_column_int64(s, 8);
		out->n++;
	}
	sqlite3_finalize(s);
	if (src != SQLITE_DONE) {
		free(name_off);
		pp_span_list_free(out);
		return -1;
	}
	for (int i = 0; i < out->n; i++)
		out->rows[i].name = out->strings + name_off[i];
	free(name_off);
	return 0;
}

void pp_span_list_free(pp_span_list *l)
{
	free(l->rows);
	free(l->strings);
	memset(l, 0, sizeof *l);
}

static int cmp_id(const void *a, const void *b)
{
	const pp_span_row *x = *(pp_span_row *const *)a, *y = *(pp_span_row *const *)b;
	return x->id < y->id ? -1 : x->id > y->id;
}

int pp_store_phase_totals(pp_store *st, int64_t run_id, pp_phase_total **out, int *n)
{
	*out = NULL;
	*n = 0;
	pp_span_list l;
	if (pp_store_spans(st, run_id, -1, &l) != 0)
		return -1;
	pp_run_info run;
	int64_t run_end = pp_store_run(st, run_id, &run) == 0 ? run.duration_ns : 0;
	pp_phase_total *tot = calloc(PP_KIND_COUNT, sizeof *tot);
	pp_span_row **byid = malloc(((size_t)l.n + 1) * sizeof *byid);
	if (!tot || !byid) {
		free(tot);
		free(byid);
		pp_span_list_free(&l);
		return -1;
	}
	for (int i = 0; i < l.n; i++)
		byid[i] = &l.rows[i];
	qsort(byid, (size_t)l.n, sizeof *byid, cmp_id);
	for (int i = 0; i < l.n; i++) {
		pp_span_row *r = &l.rows[i];
		if (r->kind < 0 || r->kind >= PP_KIND_COUNT)
			continue;
		int64_t end = r->end_ns >= 0 ? r->end_ns : run_end;
		int64_t dur = end > r->start_ns ? end - r->start_ns : 0;
		/* count only the outermost span of a kind */
		int nested = 0;
		int64_t pid = r->parent_id;
		for (int guard = 0; pid && guard < 256; guard++) {
			pp_span_row key = {.id = pid}, *kp = &key;
			pp_span_row **hit = bsearch(&kp, byid, (size_t)l.n, sizeof *byid, cmp_id);
			if (!hit)
				break;
			if ((*hit)->kind == r->kind) {
				nested = 1;
				break;
			}
			pid = (*hit)->parent_id;
		}
		pp_phase_total *t = &tot[r->kind];
		if (!nested) {
			t->count++;
			t->total_ns += dur;
		}
		if (dur > t->max_ns)
			t->max_ns = dur;
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
	free(byid);
	pp_span_list_free(&l);
	*out = tot;
	*n = k;
	return 0;
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
	/* per thread by start, the outer span first when two start together */
	if (sqlite3_prepare_v2(st->db,
			       "SELECT tid,kind,step,start_ns,end_ns FROM spans WHERE run_id=?1 AND "
			       "kind IN (?2,?3) ORDER BY tid,start_ns,depth,end_ns DESC",
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
	sqlite3_bind_text(s, 2, name, -1, SQLITE_TRANSIENT);
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
	sqlite3_bind_text(s, 2, f->rule, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 3, f->severity, -1, SQLITE_TRANSIENT);
	sqlite3_bind_double(s, 4, f->score);
	sqlite3_bind_text(s, 5, f->title, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 6, f->evidence, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 7, f->fix, -1, SQLITE_TRANSIENT);
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
	int rc = store_each(st, "SELECT COALESCE(SUM(s.end_ns - s.start_ns), 0), COUNT(*) FROM spans s "
				"JOIN strings n ON n.id = s.name_id WHERE s.run_id = ?1 AND n.value = ?3 "
				"AND s.end_ns IS NOT NULL",
			    run_id, 0, name, two_i64, v);
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
