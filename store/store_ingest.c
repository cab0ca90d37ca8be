/*
 * Spool ingest: one spool file -> one run in the store, in stages:
 *
 *   scan     walk the spool once through the reader (framing, CRCs), find
 *            where trustworthy data ends, collect the clock calibration
 *   begin    open the transaction, add the run, prepare the statements
 *   chunks   second walk: strings, events -> spans/counters/marks/ops,
 *            structured rows, metadata, losses
 *   samples  third walk, only if the spool has raw CPU samples: symbolise
 *            them into frames/stacks and insert samples as stack ids
 *   finish   spans still open, folded span groups, threads, the run's
 *            totals and status; commit
 *
 * Every SQLite result is checked: a failed write fails the whole ingest
 * (rolled back, nothing of the run stored) with a message naming the spool.
 * Memory is bounded by the spool's structure, not its length: the spool is
 * mapped and released behind the cursor, rows go out in batches, and the
 * maps from spool ids grow only with what the file holds.
 */
#include "store.h"
#include "store_internal.h"
#include "spool_reader.h"
#include "idmap.h"
#include "symbols.h"
#include "phaseprof.h"
#include "pp_rows.h"
#include "pp_grow.h"
#include "pp_assert.h"
#include "pp_debug.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Leaf spans of the high-volume kinds (op, span) beyond this many per
 * (thread, kind, name) are folded into span_groups unless every span is
 * asked for (pp_ingest_opts.keep_all_spans). */
#define PP_KEEP_PER_NAME PP_SPANS_KEPT_PER_NAME

/* ---------------------------------------------------------------- batched inserts */

typedef struct val {
	int type; /* 0 null, 1 int, 2 double, 3 text (rows only) */
	int64_t i;
	double d;
} val;

typedef struct batch {
	sqlite3_stmt *multi, *single;
	sqlite3 *db;
	char *multi_sql;             /* prepared once MULTI_AFTER batches were full */
	int full_batches;
	int ncols, pending;
	val *vals;
} batch;

#define BATCH_ROWS 64
/* ~10^5 events: from here a first ingest defers the indexes */
#define DEFER_INDEXES_BYTES (4u << 20)
/* Parsing the 64-row statement costs about as much as inserting ~250 rows
 * one by one: a short program's few hundred spans go in one by one. */
#define MULTI_AFTER 4
#define VI(x) ((val){1, (int64_t)(x), 0})
#define VD(x) ((val){2, 0, (double)(x)})
#define VNULL ((val){0, 0, 0})

/* "INSERT INTO table(cols) VALUES(…)" for one row now, and for BATCH_ROWS
 * rows once a table has filled MULTI_AFTER batches: parsing the 64-row
 * statement of every table cost more than a short program's whole ingest. */
static int batch_init(batch *b, sqlite3 *db, const char *table, const char *cols, int ncols)
{
	memset(b, 0, sizeof *b);
	b->ncols = ncols;
	b->db = db;
	b->vals = calloc((size_t)ncols * BATCH_ROWS, sizeof *b->vals);
	size_t cap = 128 + strlen(cols) + (size_t)BATCH_ROWS * (size_t)(ncols * 2 + 3);
	char *sql = malloc(cap);
	int rc = -1;
	if (!b->vals || !sql)
		goto out;
	for (int rows = 1; rows <= BATCH_ROWS; rows += BATCH_ROWS - 1) {
		size_t o = (size_t)snprintf(sql, cap, "INSERT INTO %s(%s) VALUES", table, cols);
		for (int r = 0; r < rows; r++) {
			sql[o++] = r ? ',' : ' ';
			sql[o++] = '(';
			for (int c = 0; c < ncols; c++) {
				sql[o++] = '?';
				if (c + 1 < ncols)
					sql[o++] = ',';
			}
			sql[o++] = ')';
		}
		/* cap counts ncols * 2 + 3 bytes a row */
		PP_ASSERT(o < cap);
		sql[o] = 0;
		if (rows == 1 && sqlite3_prepare_v2(db, sql, -1, &b->single, NULL) != SQLITE_OK)
			goto out;
	}
	b->multi_sql = sql;
	sql = NULL;
	rc = 0;
out:
	free(sql);
	return rc;
}

static void bind_val(sqlite3_stmt *s, int idx, const val *v)
{
	if (v->type == 1)
		sqlite3_bind_int64(s, idx, v->i);
	else if (v->type == 2)
		sqlite3_bind_double(s, idx, v->d);
	else
		sqlite3_bind_null(s, idx);
}

static int step_done(sqlite3_stmt *s)
{
	/* every statement is reset after its step: one still mid-step here
	 * would have ignored the binds just made (SQLITE_MISUSE) */
	PP_ASSERT(!sqlite3_stmt_busy(s));
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int batch_flush(batch *b)
{
	int rc = 0;
	PP_ASSERT(b->pending >= 0 && b->pending <= BATCH_ROWS);
	int multi = b->pending == BATCH_ROWS && ++b->full_batches > MULTI_AFTER;
	if (multi && !b->multi && sqlite3_prepare_v2(b->db, b->multi_sql, -1, &b->multi, NULL) != SQLITE_OK)
		return -1;
	if (multi) {
		for (int k = 0; k < BATCH_ROWS * b->ncols; k++)
			bind_val(b->multi, k + 1, &b->vals[k]);
		rc = step_done(b->multi);
	} else {
		for (int r = 0; r < b->pending && rc == 0; r++) {
			for (int c = 0; c < b->ncols; c++)
				bind_val(b->single, c + 1, &b->vals[r * b->ncols + c]);
			rc = step_done(b->single);
		}
	}
	b->pending = 0;
	return rc;
}

/* The slots of one new row, or NULL when writing the previous batch failed. */
static val *batch_row(batch *b)
{
	if (b->pending == BATCH_ROWS && batch_flush(b) != 0)
		return NULL;
	PP_ASSERT(b->pending < BATCH_ROWS);
	return &b->vals[b->pending++ * b->ncols];
}

static void batch_free(batch *b)
{
	sqlite3_finalize(b->multi);
	sqlite3_finalize(b->single);
	free(b->multi_sql);
	free(b->vals);
}

/* ---------------------------------------------------------------- clock */

typedef struct clock_pt {
	uint64_t ticks, mono;
} clock_pt;

typedef struct clockconv {
	int kind;
	clock_pt *pts;
	size_t n, cap;
	double slope;             /* ns per tick, overall */
	uint64_t start_mono;
	int guessed;              /* slope from the CPU's nominal frequency */
	size_t hint;              /* segment of the last lookup: events come in time order */
} clockconv;

static int cmp_pt(const void *a, const void *b)
{
	const clock_pt *x = a, *y = b;
	return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

static double nominal_ns_per_tick(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	double mhz = 0;
	char line[512];
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
			break;
	if (f)
		fclose(f);
	return mhz > 0 ? 1000.0 / mhz : 1.0;
}

static int clock_add(clockconv *c, uint64_t ticks, uint64_t mono)
{
	if (PP_GROW(c->pts, c->n + 1, c->cap) != 0)
		return -1;
	c->pts[c->n++] = (clock_pt){ticks, mono};
	return 0;
}

static void clock_finish(clockconv *c)
{
	if (c->kind != PP_CLOCK_TSC) {
		c->slope = 1.0;
		return;
	}
	if (c->n)
		qsort(c->pts, c->n, sizeof *c->pts, cmp_pt);
	if (c->n >= 2 && c->pts[c->n - 1].ticks > c->pts[0].ticks)
		c->slope = ((double)c->pts[c->n - 1].mono - (double)c->pts[0].mono) /
			   (double)(c->pts[c->n - 1].ticks - c->pts[0].ticks);
	else {
		c->slope = nominal_ns_per_tick();
		c->guessed = 1;
	}
	if (!isfinite(c->slope))
		c->slope = 1.0;
}

/* A double to int64 without undefined behaviour: clamped, NaN -> 0. */
static int64_t clamp_i64(double v)
{
	if (!(v == v))
		return 0;
	if (v >= 9.2e18)
		return INT64_MAX;
	if (v <= -9.2e18)
		return INT64_MIN;
	return (int64_t)v;
}

/* Ticks to nanoseconds since the run's start: piecewise linear between
 * calibration points, the overall slope outside them. */
static int64_t clock_ns(clockconv *c, uint64_t t)
{
	if (c->kind != PP_CLOCK_TSC || c->n == 0)
		return (int64_t)(t - c->start_mono); /* two's complement: no overflow */
	size_t lo = 0, hi = c->n;
	if (c->pts[c->hint].ticks <= t && (c->hint + 1 == c->n || t < c->pts[c->hint + 1].ticks))
		lo = hi = c->hint;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->pts[mid].ticks <= t)
			lo = mid;
		else
			hi = mid;
	}
	c->hint = lo;
	const clock_pt *a = &c->pts[lo];
	double slope = c->slope;
	if (lo + 1 < c->n && t >= a->ticks) {
		const clock_pt *b = &c->pts[lo + 1];
		if (b->ticks > a->ticks)
			slope = ((double)b->mono - (double)a->mono) / (double)(b->ticks - a->ticks);
	}
	double mono = (double)a->mono + ((double)t - (double)a->ticks) * slope;
	return clamp_i64(mono - (double)c->start_mono);
}

/* ---------------------------------------------------------------- state */

typedef struct open_span {
	int64_t id, start, step;
	uint32_t name;
	uint8_t kind;
	uint8_t has_child;
} open_span;

/* Leaf spans folded into one row per (parent span, kind, name). */
typedef struct span_group {
	int64_t parent, step, tid;
	uint32_t name;
	uint8_t kind;
	int depth;
	int64_t count, total, min, max, first, last;
} span_group;

typedef struct tstate {
	uint32_t tid;
	open_span *stack;
	int depth, cap;
	int64_t first, last, events;
	int64_t op_start, op_name, op_type;
	int op_open;
	char *name;
} tstate;

typedef struct ingest {
	pp_store *st;
	sqlite3 *db;
	pp_spool_reader *rd;
	pp_spool_header h;
	pp_ingest_opts o;
	pp_ingest_result *res;
	char *err;
	size_t errlen;
	int in_tx;
	int64_t run_id;
	clockconv clk;
	pp_idmap strings;         /* spool string id -> store id */
	pp_idmap graphs;          /* spool graph id -> store id */
	pp_idmap kept;            /* (tid, kind/name) -> spans kept individually */
	pp_idmap group_of;        /* (parent span, kind/name, tid) -> index in groups + 1 */
	span_group *groups;
	size_t ngroups, groups_cap;
	tstate *threads;
	size_t nthreads, threads_cap;
	tstate *last_thread;
	int64_t next_span_id, unknown_name;
	batch spans, counters, marks, ops, samples;
	sqlite3_stmt *row_stmt, *ins_meta, *ins_loss, *ins_graph;
	const struct row_spec *row_spec; /* what row_stmt inserts */
	int64_t max_ns, unmatched_ends, bad_names, raw_samples;
	uint64_t unwritten;       /* events lost because the spool could not be written */
	int ended, exited, exit_code, exit_signal;
	uint64_t walked;          /* bytes walked, for progress */
	struct timespec t0;
	char note[512];
	char *command, *host, *label, *scenario, *variant;
} ingest;

static void note(ingest *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(ingest *g, const char *fmt, ...)
{
	size_t o = strlen(g->note);
	if (o + 3 >= sizeof g->note)
		return;
	if (o)
		o += (size_t)snprintf(g->note + o, sizeof g->note - o, "; ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->note + o, sizeof g->note - o, fmt, ap);
	va_end(ap);
}

/* Records why the ingest failed (the first reason wins); returns -1. */
static int fail(ingest *g, const char *what)
{
	if (!g->err[0])
		snprintf(g->err, g->errlen, "%s: ingest of %s failed while %s: %s (nothing of this run was stored)",
			 g->st->path, pp_spool_reader_name(g->rd), what, sqlite3_errmsg(g->db));
	return -1;
}

static void progress(ingest *g, uint64_t offset)
{
	if (!g->o.progress)
		return;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	double s = (double)(t.tv_sec - g->t0.tv_sec) + (double)(t.tv_nsec - g->t0.tv_nsec) * 1e-9;
	uint64_t size = pp_spool_reader_size(g->rd);
	/* a skim, the main walk, and a walk for samples if there are any */
	uint64_t total = size / 8 + size + (g->raw_samples ? size : 0);
	g->o.progress(g->o.progress_ud, pp_spool_reader_name(g->rd), g->walked + offset, total, s);
}

static tstate *thread_of(ingest *g, uint32_t tid)
{
	if (g->last_thread && g->last_thread->tid == tid)
		return g->last_thread;
	for (size_t i = 0; i < g->nthreads; i++)
		if (g->threads[i].tid == tid)
			return g->last_thread = &g->threads[i];
	if (PP_GROW(g->threads, g->nthreads + 1, g->threads_cap) != 0)
		return NULL;
	tstate *t = &g->threads[g->nthreads++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->first = -1;
	return g->last_thread = t;
}

/* Store id of a spool string id; unknown ids become "?" (counted). */
static int64_t map_string(ingest *g, uint32_t id)
{
	int64_t v = pp_idmap_get(&g->strings, id, 0);
	if (v > 0)
		return v;
	g->bad_names++;
	if (!g->unknown_name)
		g->unknown_name = pp_store_intern(g->st, "?");
	return g->unknown_name;
}

/* ---------------------------------------------------------------- events */

static int span_insert(ingest *g, tstate *t, const open_span *o, int64_t end, int depth,
		       int64_t parent)
{
	val *v = batch_row(&g->spans);
	int64_t name = map_string(g, o->name);
	if (!v || name < 0)
		return fail(g, "writing spans");
	v[0] = VI(o->id);
	v[1] = VI(g->run_id);
	v[2] = VI(t->tid);
	v[3] = VI(o->kind);
	v[4] = VI(name);
	v[5] = VI(o->start);
	v[6] = end >= 0 ? VI(end) : VNULL;
	v[7] = VI(depth);
	v[8] = parent ? VI(parent) : VNULL;
	v[9] = o->step >= 0 ? VI(o->step) : VNULL;
	g->res->spans++;
	return 0;
}

/* A closed leaf span of a high-volume kind past its quota joins its
 * parent's group instead of getting a row. Returns 1 if folded. */
static int fold_span(ingest *g, tstate *t, const open_span *o, int64_t end, int64_t parent)
{
	if (g->o.keep_all_spans || o->has_child || (o->kind != PP_OP && o->kind != PP_SPAN))
		return 0;
	uint64_t key = (uint64_t)o->kind << 32 | o->name;
	int64_t *kept = pp_idmap_at(&g->kept, t->tid, key);
	if (!kept || *kept < PP_KEEP_PER_NAME) {
		if (kept)
			++*kept;
		return 0;
	}
	int64_t gi = pp_idmap_get(&g->group_of, (uint64_t)parent, key ^ ((uint64_t)t->tid << 40));
	span_group *s;
	if (gi > 0 && g->groups[gi - 1].tid == t->tid && g->groups[gi - 1].parent == parent &&
	    g->groups[gi - 1].name == o->name && g->groups[gi - 1].kind == o->kind) {
		s = &g->groups[gi - 1];
	} else {
		if (PP_GROW(g->groups, g->ngroups + 1, g->groups_cap) != 0)
			return 0;
		if (pp_idmap_put(&g->group_of, (uint64_t)parent, key ^ ((uint64_t)t->tid << 40),
				 (int64_t)g->ngroups + 1) != 0)
			return 0;
		s = &g->groups[g->ngroups++];
		*s = (span_group){parent, o->step, t->tid, o->name, o->kind, t->depth, 0, 0, INT64_MAX, 0, o->start, end};
	}
	int64_t d = end - o->start;
	s->count++;
	s->total += d;
	if (d < s->min)
		s->min = d;
	if (d > s->max)
		s->max = d;
	if (o->start < s->first)
		s->first = o->start;
	if (end > s->last)
		s->last = end;
	g->res->spans_folded++;
	return 1;
}

static int do_events(ingest *g, uint32_t tid, const unsigned char *p, size_t n)
{
	tstate *t = thread_of(g, tid);
	if (!t)
		return fail(g, "tracking threads (out of memory)");
	for (size_t i = 0; i < n; i++) {
		pp_event ev;
		memcpy(&ev, p + i * sizeof ev, sizeof ev);
		const pp_event *e = &ev;
		/* op events and explicit-time phases carry pp_now() nanoseconds */
		int ns = ((e->type == PP_EV_OP || e->type == PP_EV_OP_END) && e->kind == 1) ||
			 ((e->type == PP_EV_BEGIN || e->type == PP_EV_END) && e->reserved == 1);
		int64_t ts = ns ? (int64_t)e->ts : clock_ns(&g->clk, e->ts);
		if (t->first < 0)
			t->first = ts;
		t->last = ts;
		t->events++;
		if (ts > g->max_ns)
			g->max_ns = ts;
		switch (e->type) {
		case PP_EV_BEGIN: {
			if (PP_GROW(t->stack, t->depth + 1, t->cap) != 0)
				return fail(g, "tracking open spans (out of memory)");
			open_span *o = &t->stack[t->depth];
			o->id = g->next_span_id++;
			o->start = ts;
			o->name = e->name;
			o->kind = e->kind < PP_KIND_COUNT ? e->kind : PP_SPAN;
			o->has_child = 0;
			/* a step's iteration number is inherited by what it contains */
			if (e->arg != UINT64_MAX)
				o->step = (int64_t)e->arg;
			else
				o->step = t->depth ? t->stack[t->depth - 1].step : -1;
			if (t->depth)
				t->stack[t->depth - 1].has_child = 1;
			t->depth++;
			break;
		}
		case PP_EV_END: {
			if (t->depth == 0) {
				g->unmatched_ends++;
				break;
			}
			t->depth--;
			int64_t parent = t->depth ? t->stack[t->depth - 1].id : 0;
			if (!fold_span(g, t, &t->stack[t->depth], ts, parent) &&
			    span_insert(g, t, &t->stack[t->depth], ts, t->depth, parent) != 0)
				return -1;
			break;
		}
		case PP_EV_MARK: {
			val *v = batch_row(&g->marks);
			int64_t name = map_string(g, e->name);
			if (!v || name < 0)
				return fail(g, "writing marks");
			v[0] = VI(g->run_id);
			v[1] = VI(tid);
			v[2] = VI(name);
			v[3] = VI(ts);
			break;
		}
		case PP_EV_COUNTER: {
			double d;
			memcpy(&d, &e->arg, sizeof d);
			val *v = batch_row(&g->counters);
			int64_t name = map_string(g, e->name);
			if (!v || name < 0)
				return fail(g, "writing counters");
			v[0] = VI(g->run_id);
			v[1] = VI(tid);
			v[2] = VI(name);
			v[3] = VI(ts);
			v[4] = VD(d);
			break;
		}
		case PP_EV_OP:
			t->op_open = 1;
			t->op_start = ts;
			t->op_name = map_string(g, e->name);
			t->op_type = map_string(g, (uint32_t)e->arg);
			if (t->op_name < 0 || t->op_type < 0)
				return fail(g, "interning op names");
			break;
		case PP_EV_OP_END:
			if (t->op_open) {
				val *v = batch_row(&g->ops);
				if (!v)
					return fail(g, "writing ops");
				v[0] = VI(g->run_id);
				v[1] = VI(tid);
				v[2] = VI(t->op_name);
				v[3] = VI(t->op_type);
				v[4] = VI(t->op_start);
				v[5] = VI(ts);
				v[6] = (int64_t)e->arg >= 0 ? VI((int64_t)e->arg) : VNULL;
				t->op_open = 0;
			}
			break;
		default:
			break;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- rows */

typedef struct rd {
	const unsigned char *p;
	size_t n, o;
	int bad;
} rd;

static int rd_get(rd *r, void *dst, size_t n)
{
	if (n > r->n - r->o) {
		r->bad = 1;
		return -1;
	}
	memcpy(dst, r->p + r->o, n);
	r->o += n;
	return 0;
}

/* The row tables a recorder may write, from the one spec (pp_rows.h):
 * name, format string (its length is the column count) and column names. */
typedef struct row_spec {
	const char *table, *fmt, *cols;
	enum pp_row_how how;
} row_spec;

static const row_spec row_specs[] = {
#define ROW_SPEC(id, table, how) {table, PP_ROW_FMT(id), PP_ROW_NAMES(id), PP_ROW_##how},
	PP_ROW_TABLES(ROW_SPEC)
#undef ROW_SPEC
};

/* The spec of a row's table; NULL if no recorder writes that table. The
 * agent's raw samples share "samples" and are told apart (is_raw_sample). */
static const row_spec *row_spec_find(const char *table)
{
	for (size_t i = 0; i < sizeof row_specs / sizeof row_specs[0]; i++)
		if (strcmp(row_specs[i].table, table) == 0)
			return &row_specs[i];
	return NULL;
}

#define MAX_ROW_COLS 64

typedef struct row {
	char table[64];
	uint32_t nc;
	val v[MAX_ROW_COLS];
	const char *text[MAX_ROW_COLS];
	uint32_t tlen[MAX_ROW_COLS];
} row;

/* Decodes a ROW payload (spool.h). 's' values are interned; 't' kept as
 * pointers into the payload. 0, 1 if malformed (noted), -1 on a db error. */
static int row_decode(ingest *g, const pp_spool_chunk *c, row *w, int intern)
{
	rd r = {c->data, c->size, 0, 0};
	uint32_t tl;
	if (rd_get(&r, &tl, 4) || tl == 0 || tl >= sizeof w->table || rd_get(&r, w->table, tl)) {
		note(g, "bad row at offset %llu", (unsigned long long)c->offset);
		return 1;
	}
	w->table[tl] = 0;
	if (rd_get(&r, &w->nc, 4) || w->nc > MAX_ROW_COLS) {
		note(g, "bad row for %s at offset %llu", w->table, (unsigned long long)c->offset);
		return 1;
	}
	for (uint32_t k = 0; k < w->nc && !r.bad; k++) {
		char tag;
		w->text[k] = NULL;
		w->v[k] = VNULL;
		if (rd_get(&r, &tag, 1))
			break;
		switch (tag) {
		case 'i':
			w->v[k].type = 1;
			rd_get(&r, &w->v[k].i, 8);
			break;
		case 'd':
			w->v[k].type = 2;
			rd_get(&r, &w->v[k].d, 8);
			break;
		case 'n':
			break;
		case 's':
		case 't': {
			uint32_t l;
			if (rd_get(&r, &l, 4) || l > r.n - r.o) {
				r.bad = 1;
				break;
			}
			if (tag == 's' && intern) {
				int64_t id = pp_store_intern_n(g->st, (const char *)r.p + r.o, l);
				if (id < 0)
					return fail(g, "interning row strings");
				w->v[k] = VI(id);
			} else {
				w->v[k].type = 3;
			}
			w->text[k] = (const char *)r.p + r.o;
			w->tlen[k] = l;
			r.o += l;
			break;
		}
		default:
			r.bad = 1;
		}
	}
	if (r.bad) {
		note(g, "malformed row for %s at offset %llu", w->table, (unsigned long long)c->offset);
		return 1;
	}
	return 0;
}

/* A raw CPU sample from the agent: (tid, ts, "ip,ip,…" text), symbolised later. */
static int is_raw_sample(const row *w)
{
	return w->nc == sizeof PP_ROW_FMT(samples_raw) - 1 && strcmp(w->table, "samples") == 0 &&
	       w->v[2].type == 3;
}

/* "INSERT INTO t(run_id,<the spec's columns>) VALUES(?,…)" (graph parts:
 * no run_id). -1 on a db error, 1 (noted) when the database's table lacks a
 * spec column: a database from before that column; the ctest
 * profiler.test_rows keeps the spec and schema.sql in step. */
static int prepare_row_insert(ingest *g, const row_spec *sp)
{
	char sql[1024];
	int run = sp->how == PP_ROW_RUN;
	size_t o = (size_t)snprintf(sql, sizeof sql, "INSERT INTO %s(%s%s) VALUES(", sp->table,
				    run ? "run_id" : "", run ? sp->cols : sp->cols + 1);
	size_t total = strlen(sp->fmt) + (size_t)run;
	for (size_t c = 0; c < total && o < sizeof sql - 4; c++)
		o += (size_t)snprintf(sql + o, sizeof sql - o, c ? ",?" : "?");
	snprintf(sql + o, sizeof sql - o, ")");
	sqlite3_finalize(g->row_stmt);
	g->row_stmt = NULL;
	g->row_spec = NULL;
	if (sqlite3_prepare_v2(g->db, sql, -1, &g->row_stmt, NULL) != SQLITE_OK) {
		if (sqlite3_errcode(g->db) != SQLITE_ERROR)
			return fail(g, "preparing a row insert");
		note(g, "rows for %s skipped: %s", sp->table, sqlite3_errmsg(g->db));
		return 1;
	}
	g->row_spec = sp;
	return 0;
}

static int do_graph(ingest *g, const row *w, uint64_t offset)
{
	/* (local id, label, version, ts, n_nodes, n_edges) */
	if (w->nc != sizeof PP_ROW_FMT(graphs) - 1 || w->v[0].type != 1) {
		note(g, "bad graphs row at offset %llu", (unsigned long long)offset);
		g->res->rows_lost++;
		return 0;
	}
	sqlite3_stmt *s = g->ins_graph;
	sqlite3_bind_int64(s, 1, g->run_id);
	if (w->text[1])
		sqlite3_bind_text(s, 2, w->text[1], (int)w->tlen[1], SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 2);
	for (int c = 2; c < 6; c++)
		bind_val(s, c + 1, &w->v[c]);
	if (step_done(s) != 0)
		return fail(g, "writing graphs");
	sqlite3_clear_bindings(s);
	if (pp_idmap_put(&g->graphs, (uint64_t)w->v[0].i, 0, sqlite3_last_insert_rowid(g->db)) != 0)
		return fail(g, "mapping graph ids (out of memory)");
	g->res->rows++;
	return 0;
}

static int do_row(ingest *g, const pp_spool_chunk *c)
{
	row w;
	int rc = row_decode(g, c, &w, 1);
	if (rc < 0)
		return -1;
	if (rc > 0) {
		g->res->rows_lost++;
		return 0;
	}
	if (is_raw_sample(&w)) {
		g->raw_samples++;
		return 0;
	}
	const row_spec *sp = row_spec_find(w.table);
	if (!sp) {
		note(g, "row for unknown table '%s' skipped", w.table);
		g->res->rows_lost++;
		return 0;
	}
	if (sp->how == PP_ROW_OWN) /* graphs (raw samples were taken above) */
		return do_graph(g, &w, c->offset);
	int graph_part = sp->how == PP_ROW_GRAPH;
	uint32_t cols = (uint32_t)strlen(sp->fmt) + !graph_part, total = graph_part ? w.nc : w.nc + 1;
	if (total != cols) {
		note(g, "row for %s has %u values, table has %u columns", w.table, total, cols);
		g->res->rows_lost++;
		return 0;
	}
	if (g->row_spec != sp) {
		rc = prepare_row_insert(g, sp);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			g->res->rows_lost++;
			return 0;
		}
	}
	sqlite3_stmt *s = g->row_stmt;
	int k = 1;
	if (!graph_part)
		sqlite3_bind_int64(s, k++, g->run_id);
	for (uint32_t i = 0; i < w.nc; i++, k++) {
		if (graph_part && i == 0) {
			int64_t gid = w.v[0].type == 1 ? pp_idmap_get(&g->graphs, (uint64_t)w.v[0].i, 0) : 0;
			sqlite3_bind_int64(s, k, gid);
		} else if (w.v[i].type == 3) {
			sqlite3_bind_text(s, k, w.text[i], (int)w.tlen[i], SQLITE_STATIC);
		} else {
			bind_val(s, k, &w.v[i]);
		}
	}
	if (step_done(s) != 0)
		return fail(g, "writing structured rows");
	g->res->rows++;
	return 0;
}

/* ---------------------------------------------------------------- meta, losses */

static int set_field(char **f, const char *v, size_t n)
{
	free(*f);
	*f = strndup(v, n);
	return *f ? 0 : -1;
}

static int do_meta(ingest *g, const pp_spool_chunk *c)
{
	const char *k = (const char *)c->data;
	size_t kl = strnlen(k, c->size);
	if (kl + 1 >= c->size)
		return 0;
	const char *v = k + kl + 1;
	size_t vl = strnlen(v, c->size - kl - 1);
	static const char *const keys[] = {"command", "host", "label", "scenario", "variant"};
	char **fields[] = {&g->command, &g->host, &g->label, &g->scenario, &g->variant};
	for (int i = 0; i < 5; i++)
		if (strcmp(k, keys[i]) == 0 && set_field(fields[i], v, vl) != 0)
			return fail(g, "keeping metadata (out of memory)");
	sqlite3_stmt *s = g->ins_meta;
	sqlite3_bind_int64(s, 1, g->run_id);
	sqlite3_bind_text(s, 2, k, (int)kl, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, v, (int)vl, SQLITE_STATIC);
	return step_done(s) == 0 ? 0 : fail(g, "writing run metadata");
}

static int do_loss(ingest *g, const pp_spool_chunk *c)
{
	if (c->size < 8)
		return 0;
	uint64_t cnt;
	memcpy(&cnt, c->data, 8);
	char src[32];
	size_t sl = strnlen((const char *)c->data + 8, c->size - 8);
	snprintf(src, sizeof src, "%.*s", (int)(sl < 31 ? sl : 31), (const char *)c->data + 8);
	if (strcmp(src, "rows") == 0)
		g->res->rows_lost += cnt;
	else
		g->res->events_lost += cnt;
	if (strcmp(src, "unwritten") == 0)
		g->unwritten += cnt;
	char detail[64];
	snprintf(detail, sizeof detail, "thread %u", c->tid);
	sqlite3_stmt *s = g->ins_loss;
	sqlite3_bind_int64(s, 1, g->run_id);
	sqlite3_bind_text(s, 2, src, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, cnt > INT64_MAX ? INT64_MAX : (int64_t)cnt);
	sqlite3_bind_text(s, 4, detail, -1, SQLITE_STATIC);
	return step_done(s) == 0 ? 0 : fail(g, "writing the losses record");
}

/* ---------------------------------------------------------------- stages */

static int exec1(ingest *g, const char *sql, const char *what)
{
	return sqlite3_exec(g->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : fail(g, what);
}

/* A packed chunk: unpacked a batch at a time into do_events. */
static int do_packed_events(ingest *g, uint32_t tid, const unsigned char *p, size_t n,
			    unsigned long long offset)
{
	pp_event ev[512];
	pp_unpack u = {.p = p, .len = n};
	long k;
	while ((k = pp_events_unpack(&u, ev, sizeof ev / sizeof ev[0])) > 0) {
		g->res->events += (uint64_t)k;
		if (do_events(g, tid, (const unsigned char *)ev, (size_t)k) != 0)
			return -1;
	}
	/* only a crafted or damaged file (the CRC held) gets here: keep what
	 * came before, say so */
	if (k < 0)
		note(g, "a packed events chunk at offset %llu is malformed: the rest of it was skipped",
		     (unsigned long long)offset);
	return 0;
}

/* Pass 1: framing and CRCs (by the reader), clock points, how it ended. */
static int stage_scan(ingest *g)
{
	g->clk.kind = (int)g->h.clock;
	g->clk.start_mono = g->h.start_mono_ns;
	/* the header's own (ticks, mono) pair is the first calibration point */
	if (clock_add(&g->clk, g->h.start_ticks, g->h.start_mono_ns) != 0)
		goto oom;
	/* framing only: CRCs are checked as the chunks are ingested */
	pp_spool_chunk c;
	while (pp_spool_reader_skim(g->rd, &c)) {
		if (c.type == PP_CHUNK_CLOCK && c.size == 16 && pp_spool_chunk_intact(&c)) {
			uint64_t v[2];
			memcpy(v, c.data, 16);
			if (clock_add(&g->clk, v[0], v[1]) != 0)
				goto oom;
		}
		if ((c.offset & 0xffffff) < 64)
			progress(g, c.offset);
	}
	g->walked += pp_spool_reader_size(g->rd) / 8; /* a skim costs little */
	clock_finish(&g->clk);
	if (g->clk.guessed)
		note(g, "one clock calibration point: ticks converted at the CPU's nominal frequency");
	return 0;
oom:
	snprintf(g->err, g->errlen, "%s: out of memory reading clock points", pp_spool_reader_name(g->rd));
	return -1;
}

static const char spans_cols[] = "id,run_id,tid,kind,name_id,start_ns,end_ns,depth,parent_id,step";

/* The run of a spool already stored (the same process started at the same
 * instant: `ingest` after a kill between record's commit and its clean-up,
 * or run twice): its id, 0 if none, -1 on error. */
static int64_t stored_run(ingest *g)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(g->db,
			       "SELECT id FROM runs WHERE pid=?1 AND ppid=?2 AND start_unix_ns=?3 AND start_mono_ns=?4"
			       " AND status <> 'running' LIMIT 1",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, g->h.pid);
	sqlite3_bind_int64(s, 2, g->h.ppid);
	sqlite3_bind_int64(s, 3, (int64_t)(g->h.start_unix_ns & INT64_MAX));
	sqlite3_bind_int64(s, 4, (int64_t)(g->h.start_mono_ns & INT64_MAX));
	int rc = sqlite3_step(s);
	int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : rc == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(s);
	return id;
}

static int stage_begin(ingest *g)
{
	if (exec1(g, "BEGIN", "starting a transaction") != 0)
		return -1;
	g->in_tx = 1;
	sqlite3_stmt *s;
	int64_t dup = g->o.refuse_stored ? stored_run(g) : 0;
	if (dup < 0)
		return fail(g, "looking for the run");
	if (dup) {
		snprintf(g->err, g->errlen, "%s: already stored as run %lld (same process, same start): not stored twice",
			 pp_spool_reader_name(g->rd), (long long)dup);
		return -1;
	}
	if (sqlite3_prepare_v2(g->db,
			       "INSERT INTO runs(parent_run,pid,ppid,start_unix_ns,start_mono_ns,"
			       "status,spool_path,spool_bytes,clock) VALUES(?,?,?,?,?,'running',?,?,?)",
			       -1, &s, NULL) != SQLITE_OK)
		return fail(g, "adding the run");
	if (g->o.parent_run)
		sqlite3_bind_int64(s, 1, g->o.parent_run);
	else
		sqlite3_bind_null(s, 1);
	sqlite3_bind_int64(s, 2, g->h.pid);
	sqlite3_bind_int64(s, 3, g->h.ppid);
	sqlite3_bind_int64(s, 4, (int64_t)(g->h.start_unix_ns & INT64_MAX));
	sqlite3_bind_int64(s, 5, (int64_t)(g->h.start_mono_ns & INT64_MAX));
	sqlite3_bind_text(s, 6, pp_spool_reader_name(g->rd), -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 7, (int64_t)pp_spool_reader_size(g->rd));
	sqlite3_bind_text(s, 8, g->h.clock == PP_CLOCK_TSC ? "tsc" : "monotonic", -1, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return fail(g, "adding the run");
	g->run_id = sqlite3_last_insert_rowid(g->db);
	g->res->run_id = g->run_id;
	if (sqlite3_prepare_v2(g->db, "SELECT coalesce(max(id),0)+1 FROM spans", -1, &s, NULL) != SQLITE_OK)
		return fail(g, "numbering spans");
	rc = sqlite3_step(s);
	g->next_span_id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW)
		return fail(g, "numbering spans");
	if (batch_init(&g->spans, g->db, "spans", spans_cols, 10) ||
	    batch_init(&g->counters, g->db, "counters", "run_id,tid,name_id,ts_ns,value", 5) ||
	    batch_init(&g->marks, g->db, "marks", "run_id,tid,name_id,ts_ns", 4) ||
	    batch_init(&g->ops, g->db, "ops", "run_id,tid,name_id,type_id,start_ns,end_ns,step", 7) ||
	    batch_init(&g->samples, g->db, "samples", "run_id,tid,ts_ns,stack", 4) ||
	    sqlite3_prepare_v2(g->db, "INSERT INTO run_meta(run_id,key,value) VALUES(?,?,?)", -1,
			       &g->ins_meta, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(g->db, "INSERT INTO losses(run_id,source,count,detail) VALUES(?,?,?,?)",
			       -1, &g->ins_loss, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(g->db,
			       "INSERT INTO graphs(run_id,label,version,ts_ns,n_nodes,n_edges) "
			       "VALUES(?,?,?,?,?,?)",
			       -1, &g->ins_graph, NULL) != SQLITE_OK)
		return fail(g, "preparing inserts");
	return 0;
}

/* Pass 2: everything but raw CPU samples. */
static int stage_chunks(ingest *g)
{
	pp_spool_chunk c;
	pp_spool_reader_rewind(g->rd);
	while (pp_spool_reader_next(g->rd, &c)) {
		int rc = 0;
		g->res->chunks++;
		if ((g->res->chunks & 255) == 0)
			progress(g, c.offset);
		switch (c.type) {
		case PP_CHUNK_STRING: {
			if (c.size < 4)
				break;
			uint32_t id;
			memcpy(&id, c.data, 4);
			int64_t sid = pp_store_intern_n(g->st, (const char *)c.data + 4, c.size - 4);
			if (sid < 0)
				rc = fail(g, "writing strings");
			else if (pp_idmap_put(&g->strings, id, 0, sid) != 0)
				rc = fail(g, "mapping string ids (out of memory)");
			break;
		}
		case PP_CHUNK_EVENTS:
			rc = do_events(g, c.tid, c.data, c.size / sizeof(pp_event));
			g->res->events += c.size / sizeof(pp_event);
			break;
		case PP_CHUNK_PAD:
			break; /* the room kept after the header, or what is left of it */
		case PP_CHUNK_EVENTS_PACKED:
			rc = do_packed_events(g, c.tid, c.data, c.size, (unsigned long long)c.offset);
			break;
		case PP_CHUNK_THREAD: {
			tstate *t = thread_of(g, c.tid);
			if (!t || set_field(&t->name, (const char *)c.data, c.size) != 0)
				rc = fail(g, "naming threads (out of memory)");
			break;
		}
		case PP_CHUNK_META:
			rc = do_meta(g, &c);
			break;
		case PP_CHUNK_LOSS:
			rc = do_loss(g, &c);
			break;
		case PP_CHUNK_ROW:
			rc = do_row(g, &c);
			break;
		case PP_CHUNK_END:
			if (c.size >= 8) {
				uint64_t t;
				memcpy(&t, c.data, 8);
				int64_t ns = clock_ns(&g->clk, t);
				if (ns > g->max_ns)
					g->max_ns = ns;
			}
			g->ended = 1;
			break;
		case PP_CHUNK_EXIT:
			if (c.size >= 8) {
				int32_t v[2];
				memcpy(v, c.data, 8);
				g->exited = 1;
				g->exit_code = v[0];
				g->exit_signal = v[1];
			}
			break;
		default:
			break;
		}
		if (rc != 0)
			return -1;
	}
	g->walked += pp_spool_reader_size(g->rd);
	uint64_t end = pp_spool_reader_end(g->rd);
	if (end < pp_spool_reader_size(g->rd)) {
		g->res->truncated = 1;
		g->res->truncated_at = end;
		note(g, "%s", pp_spool_reader_damage(g->rd));
	}
	return 0;
}

/* ---------------------------------------------------------------- samples */

/* A Python frame ("p<id>" in the sample text, a py_frames row) among the
 * native addresses: no user-space address has bit 63 set. */
#define PY_TAG (1ull << 63)

typedef struct stack_tree {
	pp_symbols *syms;
	pp_py_frames py;          /* the run's py_frames rows, by id */
	pp_idmap frame_of_ip;     /* ip -> frame id */
	pp_idmap frame_of_sym;    /* (symbol id, module id) -> frame id */
	pp_idmap node;            /* (parent node, frame) -> node id */
	int64_t next_frame, next_node;
	sqlite3_stmt *ins_frame, *ins_stack;
} stack_tree;

static int load_modules(ingest *g, stack_tree *k)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(g->db,
			       "SELECT p.value, l.base FROM libraries l JOIN strings p ON p.id = l.path_id"
			       " WHERE l.run_id = ?1 ORDER BY l.base DESC",
			       -1, &s, NULL) != SQLITE_OK)
		return fail(g, "reading the run's libraries");
	sqlite3_bind_int64(s, 1, g->run_id);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (pp_symbols_add_module(k->syms, (const char *)sqlite3_column_text(s, 0),
					  (uint64_t)sqlite3_column_int64(s, 1)) != 0)
			break;
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : fail(g, "reading the run's libraries");
}

static int64_t frame_for(ingest *g, stack_tree *k, uint64_t ip, int leaf)
{
	int64_t f = pp_idmap_get(&k->frame_of_ip, ip, 0);
	if (f)
		return f;
	int64_t sid, mid;
	if (ip & PY_TAG) {
		const pp_py_frame *p = pp_py_frames_find(&k->py, (int64_t)(ip & ~PY_TAG));
		sid = p ? p->symbol_id : pp_store_intern(g->st, "[python frame unreadable]");
		mid = p ? p->module_id : pp_store_intern(g->st, "python");
	} else {
		/* return addresses point after the call: look up ip-1 */
		uint64_t look = leaf ? ip : ip - 1;
		const char *name, *module;
		char buf[512];
		pp_symbols_lookup(k->syms, look, &name, &module, buf, sizeof buf);
		if (strcmp(module, "?") == 0)
			snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)ip);
		sid = pp_store_intern(g->st, name);
		mid = pp_store_intern(g->st, module);
	}
	if (sid < 0 || mid < 0)
		return fail(g, "writing symbol names");
	f = pp_idmap_get(&k->frame_of_sym, (uint64_t)sid, (uint64_t)mid);
	if (!f) {
		f = k->next_frame++;
		sqlite3_stmt *s = k->ins_frame;
		sqlite3_bind_int64(s, 1, f);
		sqlite3_bind_int64(s, 2, g->run_id);
		if (ip & PY_TAG)
			sqlite3_bind_null(s, 3);
		else
			sqlite3_bind_int64(s, 3, (int64_t)ip);
		sqlite3_bind_int64(s, 4, sid);
		sqlite3_bind_int64(s, 5, mid);
		if (step_done(s) != 0)
			return fail(g, "writing frames");
		if (pp_idmap_put(&k->frame_of_sym, (uint64_t)sid, (uint64_t)mid, f) != 0)
			return fail(g, "mapping frames (out of memory)");
	}
	if (pp_idmap_put(&k->frame_of_ip, ip, 0, f) != 0)
		return fail(g, "mapping frames (out of memory)");
	return f;
}

/* The stack node of "ip,ip,…" (leaf first; hex addresses, p<decimal id>
 * for Python frames), building the tree as needed; 0 for an empty stack,
 * -1 on error. */
static int64_t stack_for(ingest *g, stack_tree *k, const char *text, size_t len)
{
	uint64_t ips[192];
	int n = 0;
	for (size_t i = 0; i < len && n < 192;) {
		uint64_t v = 0;
		int digits = 0, py = text[i] == 'p';
		for (i += (size_t)py; i < len && text[i] != ','; i++, digits++) {
			char ch = text[i];
			int d = ch >= '0' && ch <= '9' ? ch - '0' : py ? -1 : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
				: ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
			if (d < 0)
				break;
			v = py ? v * 10 + (uint64_t)d : v << 4 | (uint64_t)d;
		}
		if (digits)
			ips[n++] = py ? PY_TAG | v : v;
		while (i < len && text[i] != ',')
			i++;
		i++;
	}
	int64_t parent = 0;
	for (int j = n - 1; j >= 0; j--) { /* root first */
		int64_t f = frame_for(g, k, ips[j], j == 0);
		if (f < 0)
			return -1;
		int64_t node = pp_idmap_get(&k->node, (uint64_t)parent, (uint64_t)f);
		if (!node) {
			node = k->next_node++;
			sqlite3_stmt *s = k->ins_stack;
			sqlite3_bind_int64(s, 1, node);
			sqlite3_bind_int64(s, 2, g->run_id);
			if (parent)
				sqlite3_bind_int64(s, 3, parent);
			else
				sqlite3_bind_null(s, 3);
			sqlite3_bind_int64(s, 4, f);
			if (step_done(s) != 0)
				return fail(g, "writing stacks");
			if (pp_idmap_put(&k->node, (uint64_t)parent, (uint64_t)f, node) != 0)
				return fail(g, "mapping stacks (out of memory)");
		}
		parent = node;
	}
	return parent;
}

/* Splits each load batch's "relocation + constructors" time with the CPU
 * samples taken inside it: a sample whose innermost frame is in the dynamic
 * loader is relocation / symbol lookup; one with the loader further up the
 * stack (call_init into the object) is a constructor. Rows keep NULL where
 * fewer than 3 samples fell into the window. */
static const char split_sql[] =
	"WITH RECURSIVE up(sample, ts, node, leaf) AS ("
	"  SELECT s.rowid, s.ts_ns, s.stack, 1 FROM samples s WHERE s.run_id = ?1 AND s.ts_ns BETWEEN ?2 AND ?3"
	"  UNION ALL SELECT up.sample, up.ts, k.parent, 0 FROM up JOIN stacks k ON k.run_id = ?1 AND k.id = up.node"
	"  WHERE k.parent IS NOT NULL),"
	" cls AS (SELECT up.sample,"
	"  MAX(up.leaf = 1 AND m.value LIKE '%/ld-linux%') AS leaf_ld, MAX(m.value LIKE '%/ld-linux%') AS any_ld"
	"  FROM up JOIN stacks k ON k.run_id = ?1 AND k.id = up.node"
	"  JOIN frames f ON f.run_id = ?1 AND f.id = k.frame JOIN strings m ON m.id = f.module_id GROUP BY up.sample)"
	" SELECT COALESCE(SUM(leaf_ld), 0), COALESCE(SUM(any_ld AND NOT leaf_ld), 0) FROM cls";

static int split_load_time(ingest *g)
{
	sqlite3_stmt *rows = NULL, *cnt = NULL, *upd = NULL;
	int rc = -1, r;
	if (sqlite3_prepare_v2(g->db, "SELECT rowid, mapped_ns, end_ns FROM libraries WHERE run_id = ?1"
				      " AND depth <= 1 AND end_ns > mapped_ns", -1, &rows, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(g->db, split_sql, -1, &cnt, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(g->db, "UPDATE libraries SET reloc_ns = ?1, ctor_ns = ?2 WHERE rowid = ?3",
			       -1, &upd, NULL) != SQLITE_OK) {
		fail(g, "splitting load times by samples");
		goto out;
	}
	sqlite3_bind_int64(rows, 1, g->run_id);
	while ((r = sqlite3_step(rows)) == SQLITE_ROW) {
		int64_t rowid = sqlite3_column_int64(rows, 0);
		int64_t mapped = sqlite3_column_int64(rows, 1), end = sqlite3_column_int64(rows, 2);
		sqlite3_bind_int64(cnt, 1, g->run_id);
		sqlite3_bind_int64(cnt, 2, mapped);
		sqlite3_bind_int64(cnt, 3, end);
		if (sqlite3_step(cnt) != SQLITE_ROW) {
			sqlite3_reset(cnt);
			fail(g, "splitting load times by samples");
			goto out;
		}
		int64_t reloc = sqlite3_column_int64(cnt, 0), ctor = sqlite3_column_int64(cnt, 1);
		sqlite3_reset(cnt);
		if (reloc < 0 || ctor < 0 || reloc + ctor < 3)
			continue;
		/* in double: span * reloc may not fit in int64 */
		double span = (double)end - (double)mapped;
		int64_t rl = clamp_i64(span * (double)reloc / (double)(reloc + ctor));
		sqlite3_bind_int64(upd, 1, rl);
		sqlite3_bind_int64(upd, 2, clamp_i64(span - (double)rl));
		sqlite3_bind_int64(upd, 3, rowid);
		if (step_done(upd) != 0) {
			fail(g, "writing load-time splits");
			goto out;
		}
	}
	if (r != SQLITE_DONE) {
		fail(g, "splitting load times by samples");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(rows);
	sqlite3_finalize(cnt);
	sqlite3_finalize(upd);
	return rc;
}

/* Pass 3: raw samples -> frames, a stack tree, samples as stack ids. */
static int stage_samples(ingest *g)
{
	if (!g->raw_samples)
		return 0;
	stack_tree k = {0};
	int rc = -1;
	k.next_frame = k.next_node = 1;
	k.syms = pp_symbols_new();
	if (!k.syms) {
		snprintf(g->err, g->errlen, "%s: out of memory symbolising samples", pp_spool_reader_name(g->rd));
		goto out;
	}
	if (load_modules(g, &k) != 0)
		goto out;
	if (pp_store_py_frames(g->st, g->run_id, &k.py) != 0) {
		fail(g, "reading the run's Python frames");
		goto out;
	}
	if (sqlite3_prepare_v2(g->db, "INSERT INTO frames(id,run_id,ip,symbol_id,module_id) VALUES(?,?,?,?,?)",
			       -1, &k.ins_frame, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(g->db, "INSERT INTO stacks(id,run_id,parent,frame) VALUES(?,?,?,?)", -1,
			       &k.ins_stack, NULL) != SQLITE_OK) {
		fail(g, "preparing sample inserts");
		goto out;
	}
	pp_spool_chunk c;
	pp_spool_reader_rewind(g->rd);
	uint64_t n = 0;
	while (pp_spool_reader_next(g->rd, &c)) {
		if (c.type != PP_CHUNK_ROW || c.size < 12 || memcmp(c.data + 4, "samples", 7) != 0)
			continue;
		row w;
		if (row_decode(g, &c, &w, 0) != 0 || !is_raw_sample(&w))
			continue;
		int64_t node = stack_for(g, &k, w.text[2], w.tlen[2]);
		if (node < 0)
			goto out;
		val *v = batch_row(&g->samples);
		if (!v) {
			fail(g, "writing samples");
			goto out;
		}
		v[0] = VI(g->run_id);
		v[1] = w.v[0];
		v[2] = w.v[1];
		v[3] = node ? VI(node) : VNULL;
		if ((++n & 1023) == 0)
			progress(g, c.offset);
	}
	if (batch_flush(&g->samples) != 0) {
		fail(g, "writing samples");
		goto out;
	}
	g->res->samples = n;
	rc = split_load_time(g);
out:
	sqlite3_finalize(k.ins_frame);
	sqlite3_finalize(k.ins_stack);
	pp_idmap_free(&k.frame_of_ip);
	pp_idmap_free(&k.frame_of_sym);
	pp_idmap_free(&k.node);
	pp_symbols_free(k.syms);
	pp_py_frames_free(&k.py);
	return rc;
}

/* ---------------------------------------------------------------- finish */

/* Every string ingest binds outlives its statement's step, so all binds are
 * SQLITE_STATIC: a TRANSIENT copy that fails for memory binds NULL without a
 * word, and the row went in with a NULL (tests/oom: create + ingest N=1566,
 * a run_meta value stored as NULL). */
static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

static int write_groups(ingest *g)
{
	if (!g->ngroups)
		return 0;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(g->db,
			       "INSERT INTO span_groups(run_id,tid,kind,name_id,parent_id,depth,step,count,"
			       "total_ns,min_ns,max_ns,first_start_ns,last_end_ns) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &s, NULL) != SQLITE_OK)
		return fail(g, "preparing span groups");
	int rc = 0;
	for (size_t i = 0; i < g->ngroups && rc == 0; i++) {
		const span_group *x = &g->groups[i];
		int64_t name = map_string(g, x->name);
		sqlite3_bind_int64(s, 1, g->run_id);
		sqlite3_bind_int64(s, 2, x->tid);
		sqlite3_bind_int(s, 3, x->kind);
		sqlite3_bind_int64(s, 4, name);
		if (x->parent)
			sqlite3_bind_int64(s, 5, x->parent);
		else
			sqlite3_bind_null(s, 5);
		sqlite3_bind_int(s, 6, x->depth);
		if (x->step >= 0)
			sqlite3_bind_int64(s, 7, x->step);
		else
			sqlite3_bind_null(s, 7);
		sqlite3_bind_int64(s, 8, x->count);
		sqlite3_bind_int64(s, 9, x->total);
		sqlite3_bind_int64(s, 10, x->min);
		sqlite3_bind_int64(s, 11, x->max);
		sqlite3_bind_int64(s, 12, x->first);
		sqlite3_bind_int64(s, 13, x->last);
		if (name < 0 || step_done(s) != 0)
			rc = fail(g, "writing span groups");
	}
	sqlite3_finalize(s);
	return rc;
}

static int write_threads(ingest *g)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(g->db, "INSERT INTO threads(run_id,tid,name,first_ns,last_ns,events) VALUES(?,?,?,?,?,?)",
			       -1, &s, NULL) != SQLITE_OK)
		return fail(g, "writing threads");
	int rc = 0;
	for (size_t i = 0; i < g->nthreads && rc == 0; i++) {
		tstate *t = &g->threads[i];
		sqlite3_bind_int64(s, 1, g->run_id);
		sqlite3_bind_int64(s, 2, t->tid);
		bind_text_or_null(s, 3, t->name);
		sqlite3_bind_int64(s, 4, t->first < 0 ? 0 : t->first);
		sqlite3_bind_int64(s, 5, t->last);
		sqlite3_bind_int64(s, 6, t->events);
		if (step_done(s) != 0)
			rc = fail(g, "writing threads");
	}
	sqlite3_finalize(s);
	return rc;
}

static const char *signal_status(int sig)
{
	return (sig == SIGSEGV || sig == SIGABRT || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) ? "crashed"
														 : "killed";
}

int pp_store_run_set_exit(pp_store *st, int64_t run_id, int exit_code, int term_signal, char *err, size_t errlen)
{
	sqlite3 *db = pp_store_db(st);
	sqlite3_stmt *s;
	int rc = sqlite3_prepare_v2(db,
				    "UPDATE runs SET exit_code=?1,term_signal=?2,"
				    "status=CASE WHEN ?2 THEN ?3 ELSE status END WHERE id=?4",
				    -1, &s, NULL);
	if (rc == SQLITE_OK) {
		if (exit_code >= 0)
			sqlite3_bind_int(s, 1, exit_code);
		sqlite3_bind_int(s, 2, term_signal);
		sqlite3_bind_text(s, 3, signal_status(term_signal), -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 4, run_id);
		rc = sqlite3_step(s);
		sqlite3_finalize(s);
	}
	if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s: run %lld: cannot set how it ended: %s", pp_store_path(st),
			 (long long)run_id, sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/* How the process ended, from the caller (it waited for it) or the spool. */
static const char *run_status(ingest *g, int *exit_code, int *sig)
{
	*exit_code = g->o.exit_code;
	*sig = g->o.term_signal;
	if (g->exited && *exit_code < 0 && !*sig) {
		*exit_code = g->exit_code;
		*sig = g->exit_signal;
	}
	if (*sig)
		return signal_status(*sig);
	if (g->res->truncated)
		return "truncated";
	if (!g->ended && !g->exited && *exit_code < 0) {
		/* whole chunks up to the end, but no close, exit or crash record:
		 * the process was stopped by a signal it could not catch */
		note(g, "the process ended without closing its recording (killed by SIGKILL or similar)");
		return "killed";
	}
	if (!g->ended)
		return "truncated";
	return "complete";
}

static int stage_finish(ingest *g)
{
	pp_ingest_result *res = g->res;
	/* spans still open at the end: kept, with no end */
	for (size_t i = 0; i < g->nthreads; i++) {
		tstate *t = &g->threads[i];
		for (int d = t->depth - 1; d >= 0; d--) {
			if (span_insert(g, t, &t->stack[d], -1, d, d ? t->stack[d - 1].id : 0) != 0)
				return -1;
			res->open_spans++;
		}
	}
	if (batch_flush(&g->spans) || batch_flush(&g->counters) || batch_flush(&g->marks) ||
	    batch_flush(&g->ops))
		return fail(g, "writing events");
	if (write_groups(g) != 0 || write_threads(g) != 0)
		return -1;
	if (g->unmatched_ends)
		note(g, "%lld phase ends without a begin ignored", (long long)g->unmatched_ends);
	if (res->open_spans)
		note(g, "%llu phases still open at the end (kept without an end)",
		     (unsigned long long)res->open_spans);
	if (g->bad_names)
		note(g, "%lld events named by unknown string ids", (long long)g->bad_names);
	if (g->unwritten)
		note(g, "%llu events lost: the spool could not be written to its end (disk full or file size limit)",
		     (unsigned long long)g->unwritten);
	if (res->events_lost > g->unwritten)
		note(g, "%llu events lost in the recorder (buffers full)",
		     (unsigned long long)(res->events_lost - g->unwritten));
	if (res->spans_folded)
		note(g, "%llu short leaf spans kept as per-name groups (span_groups)",
		     (unsigned long long)res->spans_folded);
	int exit_code, sig;
	const char *status = run_status(g, &exit_code, &sig);
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(g->db,
			       "UPDATE runs SET label=?,scenario=?,variant=?,command=?,host=?,"
			       "duration_ns=?,status=?,exit_code=?,term_signal=?,events=?,"
			       "events_lost=?,rows_lost=?,truncated_at=?,note=? WHERE id=?",
			       -1, &s, NULL) != SQLITE_OK)
		return fail(g, "finishing the run");
	bind_text_or_null(s, 1, g->label);
	bind_text_or_null(s, 2, g->scenario);
	bind_text_or_null(s, 3, g->variant);
	bind_text_or_null(s, 4, g->o.command ? g->o.command : g->command);
	bind_text_or_null(s, 5, g->host);
	sqlite3_bind_int64(s, 6, g->max_ns);
	sqlite3_bind_text(s, 7, status, -1, SQLITE_STATIC);
	if (exit_code >= 0)
		sqlite3_bind_int(s, 8, exit_code);
	else
		sqlite3_bind_null(s, 8);
	sqlite3_bind_int(s, 9, sig);
	sqlite3_bind_int64(s, 10, (int64_t)res->events);
	sqlite3_bind_int64(s, 11, (int64_t)(res->events_lost & INT64_MAX));
	sqlite3_bind_int64(s, 12, (int64_t)(res->rows_lost & INT64_MAX));
	if (res->truncated)
		sqlite3_bind_int64(s, 13, (int64_t)res->truncated_at);
	else
		sqlite3_bind_null(s, 13);
	bind_text_or_null(s, 14, g->note[0] ? g->note : NULL);
	sqlite3_bind_int64(s, 15, g->run_id);
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return fail(g, "finishing the run");
	snprintf(res->note, sizeof res->note, "%.*s", (int)sizeof res->note - 1, g->note);
	if (exec1(g, "COMMIT", "committing") != 0)
		return -1;
	g->in_tx = 0;
	return 0;
}

static void free_ingest(ingest *g)
{
	for (size_t i = 0; i < g->nthreads; i++) {
		free(g->threads[i].stack);
		free(g->threads[i].name);
	}
	free(g->threads);
	free(g->groups);
	pp_idmap_free(&g->strings);
	pp_idmap_free(&g->graphs);
	pp_idmap_free(&g->kept);
	pp_idmap_free(&g->group_of);
	free(g->clk.pts);
	batch_free(&g->spans);
	batch_free(&g->counters);
	batch_free(&g->marks);
	batch_free(&g->ops);
	batch_free(&g->samples);
	sqlite3_finalize(g->row_stmt);
	sqlite3_finalize(g->ins_meta);
	sqlite3_finalize(g->ins_loss);
	sqlite3_finalize(g->ins_graph);
	free(g->command);
	free(g->host);
	free(g->label);
	free(g->scenario);
	free(g->variant);
	pp_spool_reader_close(g->rd);
}

int pp_store_ingest(pp_store *st, const char *spool_path, const pp_ingest_opts *opts,
		    pp_ingest_result *res, char *err, size_t errlen)
{
	pp_ingest_result local_res;
	char local_err[512];
	if (!res)
		res = &local_res;
	if (!err) {
		err = local_err;
		errlen = sizeof local_err;
	}
	memset(res, 0, sizeof *res);
	err[0] = 0;
	if (st->mode != PP_STORE_WRITE) {
		snprintf(err, errlen, "%s: opened read-only, cannot ingest", st->path);
		return -1;
	}
	ingest G;
	memset(&G, 0, sizeof G);
	ingest *g = &G;
	g->st = st;
	g->db = st->db;
	g->res = res;
	g->err = err;
	g->errlen = errlen;
	g->o = (pp_ingest_opts){0, NULL, -1, 0, 0, NULL, NULL, 0};
	if (opts)
		g->o = *opts;
	clock_gettime(CLOCK_MONOTONIC, &g->t0);
	int rc = -1;
	g->rd = pp_spool_reader_open(spool_path, err, errlen);
	if (!g->rd)
		goto out;
	g->h = *pp_spool_reader_header(g->rd);
	res->bytes = pp_spool_reader_size(g->rd);
	/* a long first ingest into a database this store made goes in without
	 * the indexes of its empty tables, built after in bulk; a shorter one
	 * writes straight into them (if the drop fails: slower, same rows) */
	char derr[512];
	if (res->bytes >= DEFER_INDEXES_BYTES && pp_store_created(st))
		(void)pp_store_defer_indexes(st, derr, sizeof derr);
	if (stage_scan(g) != 0 || stage_begin(g) != 0 || stage_chunks(g) != 0 ||
	    stage_samples(g) != 0 || stage_finish(g) != 0)
		goto out;
	rc = 0;
out:
	if (rc != 0 && g->in_tx) {
		sqlite3_exec(g->db, "ROLLBACK", NULL, NULL, NULL);
		/* the cache may hold ids of rolled-back strings */
		pp_store_intern_cache_free(st);
		res->run_id = 0;
	}
	if (pp_debug_on("ingest")) {
		struct timespec t1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double ms =
			(double)(t1.tv_sec - g->t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - g->t0.tv_nsec) / 1e6;
		if (rc == 0)
			pp_debug(
				"ingest",
				"%s: run %lld: %llu bytes, %llu chunks, %llu events, %llu spans (%llu grouped, %llu open), "
				"%llu rows, %llu samples, %llu events and %llu rows lost%s, %.1f ms",
				spool_path, (long long)res->run_id, (unsigned long long)res->bytes,
				(unsigned long long)res->chunks, (unsigned long long)res->events,
				(unsigned long long)res->spans, (unsigned long long)res->spans_folded,
				(unsigned long long)res->open_spans, (unsigned long long)res->rows,
				(unsigned long long)res->samples, (unsigned long long)res->events_lost,
				(unsigned long long)res->rows_lost, res->truncated ? ", truncated" : "", ms);
		else
			pp_debug("ingest", "%s: not stored (%s), %.1f ms", spool_path, err, ms);
	}
	free_ingest(g);
	return rc;
}
