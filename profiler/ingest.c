/*
 * Spool ingest: one spool file -> one run in the store.
 *
 * Pass 1 validates chunk framing and CRCs to find where trustworthy data
 * ends (a crashed process leaves a torn tail) and collects the clock
 * calibration points. Pass 2 converts and inserts, in one transaction, with
 * prepared multi-row INSERTs for the bulk tables.
 */
#include "store.h"
#include "store_internal.h"
#include "spool.h"
#include "phaseprof.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---------------------------------------------------------------- interning */

static uint32_t hash_bytes(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h ? h : 1;
}

void pp_store_intern_cache_free(pp_store *st)
{
	for (uint32_t i = 0; i < st->cap; i++)
		free(st->slots[i].text);
	free(st->slots);
	st->slots = NULL;
	st->cap = st->n = 0;
	sqlite3_finalize(st->ins_string);
	sqlite3_finalize(st->sel_string);
	st->ins_string = st->sel_string = NULL;
}

static int64_t intern_n(pp_store *st, const char *s, size_t len)
{
	if (st->n * 2 >= st->cap) {
		uint32_t cap = st->cap ? st->cap * 2 : 4096;
		intern_slot *t = calloc(cap, sizeof *t);
		if (!t)
			return -1;
		for (uint32_t i = 0; i < st->cap; i++) {
			if (!st->slots[i].text)
				continue;
			uint32_t j = st->slots[i].hash & (cap - 1);
			while (t[j].text)
				j = (j + 1) & (cap - 1);
			t[j] = st->slots[i];
		}
		free(st->slots);
		st->slots = t;
		st->cap = cap;
	}
	uint32_t h = hash_bytes(s, len);
	uint32_t j = h & (st->cap - 1);
	while (st->slots[j].text) {
		if (st->slots[j].hash == h && strlen(st->slots[j].text) == len &&
		    memcmp(st->slots[j].text, s, len) == 0)
			return st->slots[j].id;
		j = (j + 1) & (st->cap - 1);
	}
	if (!st->ins_string) {
		sqlite3_prepare_v2(st->db, "INSERT OR IGNORE INTO strings(value) VALUES(?)", -1,
				   &st->ins_string, NULL);
		sqlite3_prepare_v2(st->db, "SELECT id FROM strings WHERE value=?", -1,
				   &st->sel_string, NULL);
	}
	sqlite3_bind_text(st->ins_string, 1, s, (int)len, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st->ins_string);
	sqlite3_reset(st->ins_string);
	if (rc != SQLITE_DONE)
		return -1;
	int64_t id;
	if (sqlite3_changes(st->db) == 1) {
		id = sqlite3_last_insert_rowid(st->db);
	} else {
		sqlite3_bind_text(st->sel_string, 1, s, (int)len, SQLITE_TRANSIENT);
		if (sqlite3_step(st->sel_string) != SQLITE_ROW) {
			sqlite3_reset(st->sel_string);
			return -1;
		}
		id = sqlite3_column_int64(st->sel_string, 0);
		sqlite3_reset(st->sel_string);
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return id;
	memcpy(copy, s, len);
	copy[len] = 0;
	st->slots[j].text = copy;
	st->slots[j].hash = h;
	st->slots[j].id = id;
	st->n++;
	return id;
}

int64_t pp_store_intern(pp_store *st, const char *s)
{
	return intern_n(st, s ? s : "", s ? strlen(s) : 0);
}

/* ---------------------------------------------------------------- batched inserts */

typedef struct val {
	int type; /* 0 null, 1 int, 2 double */
	int64_t i;
	double d;
} val;

typedef struct batch {
	sqlite3_stmt *multi, *single;
	int ncols, per, pending;
	val *vals;
	int failed;
} batch;

#define BATCH_ROWS 64

static int batch_init(batch *b, sqlite3 *db, const char *table, int ncols)
{
	memset(b, 0, sizeof *b);
	b->ncols = ncols;
	b->per = BATCH_ROWS;
	b->vals = calloc((size_t)ncols * BATCH_ROWS, sizeof *b->vals);
	size_t cap = 64 + (size_t)BATCH_ROWS * (size_t)(ncols * 2 + 3);
	char *sql = malloc(cap);
	if (!b->vals || !sql) {
		free(sql);
		return -1;
	}
	for (int rows = 1; rows <= BATCH_ROWS; rows += BATCH_ROWS - 1) {
		size_t o = (size_t)snprintf(sql, cap, "INSERT INTO %s VALUES", table);
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
		sql[o] = 0;
		if (sqlite3_prepare_v2(db, sql, -1, rows == 1 ? &b->single : &b->multi, NULL) !=
		    SQLITE_OK) {
			free(sql);
			return -1;
		}
	}
	free(sql);
	return 0;
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

static void batch_flush(batch *b)
{
	if (!b->pending)
		return;
	if (b->pending == b->per) {
		for (int k = 0; k < b->per * b->ncols; k++)
			bind_val(b->multi, k + 1, &b->vals[k]);
		if (sqlite3_step(b->multi) != SQLITE_DONE)
			b->failed = 1;
		sqlite3_reset(b->multi);
	} else {
		for (int r = 0; r < b->pending; r++) {
			for (int c = 0; c < b->ncols; c++)
				bind_val(b->single, c + 1, &b->vals[r * b->ncols + c]);
			if (sqlite3_step(b->single) != SQLITE_DONE)
				b->failed = 1;
			sqlite3_reset(b->single);
		}
	}
	b->pending = 0;
}

/* Returns the slot array for one new row. */
static val *batch_row(batch *b)
{
	if (b->pending == b->per)
		batch_flush(b);
	return &b->vals[b->pending++ * b->ncols];
}

static void batch_free(batch *b)
{
	sqlite3_finalize(b->multi);
	sqlite3_finalize(b->single);
	free(b->vals);
}

#define VI(x) ((val){1, (int64_t)(x), 0})
#define VD(x) ((val){2, 0, (double)(x)})
#define VNULL ((val){0, 0, 0})

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

static void clock_finish(clockconv *c)
{
	if (c->kind != PP_CLOCK_TSC) {
		c->slope = 1.0;
		return;
	}
	if (c->n)
		qsort(c->pts, c->n, sizeof *c->pts, cmp_pt);
	if (c->n >= 2 && c->pts[c->n - 1].ticks > c->pts[0].ticks)
		c->slope = (double)(c->pts[c->n - 1].mono - c->pts[0].mono) /
			   (double)(c->pts[c->n - 1].ticks - c->pts[0].ticks);
	else {
		c->slope = nominal_ns_per_tick();
		c->guessed = 1;
	}
}

/* Ticks to nanoseconds since the run's start: piecewise linear between
 * calibration points, the overall slope outside them. */
static int64_t clock_ns(const clockconv *c, uint64_t t)
{
	if (c->kind != PP_CLOCK_TSC || c->n == 0)
		return (int64_t)t - (int64_t)c->start_mono;
	size_t lo = 0, hi = c->n;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (c->pts[mid].ticks <= t)
			lo = mid;
		else
			hi = mid;
	}
	const clock_pt *a = &c->pts[lo];
	double slope = c->slope;
	if (lo + 1 < c->n && t >= a->ticks) {
		const clock_pt *b = &c->pts[lo + 1];
		if (b->ticks > a->ticks)
			slope = (double)(b->mono - a->mono) / (double)(b->ticks - a->ticks);
	}
	double mono = (double)a->mono + ((double)t - (double)a->ticks) * slope;
	return (int64_t)(mono - (double)c->start_mono);
}

/* ---------------------------------------------------------------- per-thread state */

typedef struct open_span {
	int64_t id, start, step;
	uint32_t name;
	uint8_t kind;
} open_span;

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
	const unsigned char *data;
	size_t size;
	const char *path;
	int64_t run_id;
	clockconv clk;
	int64_t *strmap;          /* spool string id -> store id */
	size_t strmap_cap;
	tstate *threads;
	size_t nthreads, threads_cap;
	int64_t next_span_id;
	batch spans, counters, marks, ops;
	pp_ingest_result *res;
	int64_t max_ns;
	int64_t unmatched_ends, bad_names;
	int ended, exited, exit_code, exit_signal;
	int64_t *graphmap;        /* spool graph id -> store id */
	size_t graphmap_cap;
	sqlite3_stmt *row_stmt;
	char row_table[64];
	int row_ncols;
	char note[512];
	/* run fields from META */
	char *command, *host, *label, *scenario, *variant;
} ingest;

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

static tstate *thread_of(ingest *g, uint32_t tid)
{
	for (size_t i = 0; i < g->nthreads; i++)
		if (g->threads[i].tid == tid)
			return &g->threads[i];
	if (g->nthreads == g->threads_cap) {
		size_t cap = g->threads_cap ? g->threads_cap * 2 : 16;
		tstate *t = realloc(g->threads, cap * sizeof *t);
		if (!t)
			return NULL;
		g->threads = t;
		g->threads_cap = cap;
	}
	tstate *t = &g->threads[g->nthreads++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->first = -1;
	return t;
}

static int64_t map_string(ingest *g, uint32_t id)
{
	if (id < g->strmap_cap && g->strmap[id] > 0)
		return g->strmap[id];
	g->bad_names++;
	return pp_store_intern(g->st, "?");
}

static void span_insert(ingest *g, tstate *t, const open_span *o, int64_t end, int depth,
			int64_t parent)
{
	val *v = batch_row(&g->spans);
	v[0] = VI(o->id);
	v[1] = VI(g->run_id);
	v[2] = VI(t->tid);
	v[3] = VI(o->kind);
	v[4] = VI(map_string(g, o->name));
	v[5] = VI(o->start);
	v[6] = end >= 0 ? VI(end) : VNULL;
	v[7] = VI(depth);
	v[8] = parent ? VI(parent) : VNULL;
	v[9] = o->step >= 0 ? VI(o->step) : VNULL;
	g->res->spans++;
}

static void do_events(ingest *g, uint32_t tid, const pp_event *ev, size_t n)
{
	tstate *t = thread_of(g, tid);
	if (!t)
		return;
	for (size_t i = 0; i < n; i++) {
		const pp_event *e = &ev[i];
		/* op events carry pp_now() nanoseconds, not ticks */
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
			if (t->depth == t->cap) {
				int cap = t->cap ? t->cap * 2 : 16;
				open_span *s = realloc(t->stack, (size_t)cap * sizeof *s);
				if (!s)
					return;
				t->stack = s;
				t->cap = cap;
			}
			open_span *o = &t->stack[t->depth];
			o->id = g->next_span_id++;
			o->start = ts;
			o->name = e->name;
			o->kind = e->kind < PP_KIND_COUNT ? e->kind : PP_SPAN;
			/* a step's iteration number is inherited by what it contains */
			if (e->arg != UINT64_MAX)
				o->step = (int64_t)e->arg;
			else
				o->step = t->depth ? t->stack[t->depth - 1].step : -1;
			t->depth++;
			break;
		}
		case PP_EV_END:
			if (t->depth == 0) {
				g->unmatched_ends++;
				break;
			}
			t->depth--;
			span_insert(g, t, &t->stack[t->depth], ts, t->depth,
				    t->depth ? t->stack[t->depth - 1].id : 0);
			break;
		case PP_EV_MARK: {
			val *v = batch_row(&g->marks);
			v[0] = VI(g->run_id);
			v[1] = VI(tid);
			v[2] = VI(map_string(g, e->name));
			v[3] = VI(ts);
			break;
		}
		case PP_EV_COUNTER: {
			double d;
			memcpy(&d, &e->arg, sizeof d);
			val *v = batch_row(&g->counters);
			v[0] = VI(g->run_id);
			v[1] = VI(tid);
			v[2] = VI(map_string(g, e->name));
			v[3] = VI(ts);
			v[4] = VD(d);
			break;
		}
		case PP_EV_OP:
			t->op_open = 1;
			t->op_start = ts;
			t->op_name = map_string(g, e->name);
			t->op_type = map_string(g, (uint32_t)e->arg);
			break;
		case PP_EV_OP_END:
			if (t->op_open) {
				val *v = batch_row(&g->ops);
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
}

/* ---------------------------------------------------------------- rows */

typedef struct rd {
	const unsigned char *p;
	size_t n, o;
	int bad;
} rd;

static int rd_get(rd *r, void *dst, size_t n)
{
	if (r->o + n > r->n) {
		r->bad = 1;
		return -1;
	}
	memcpy(dst, r->p + r->o, n);
	r->o += n;
	return 0;
}

static const char *const row_tables[] = {
	"libraries", "io", "allocations", "frames", "stacks", "samples", "gpu_activity",
	"gpu_status", "losses", "run_meta", "threads", "counters", "marks", "py_frames", NULL,
};

static int table_ncols(sqlite3 *db, const char *table)
{
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s')", table);
	sqlite3_stmt *s;
	int n = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			n = sqlite3_column_int(s, 0);
		sqlite3_finalize(s);
	}
	return n;
}

static int64_t map_graph(ingest *g, int64_t local)
{
	if (local >= 0 && (size_t)local < g->graphmap_cap)
		return g->graphmap[local];
	return 0;
}

static void do_row(ingest *g, const unsigned char *p, size_t n, size_t offset)
{
	rd r = {p, n, 0, 0};
	uint32_t tl, nc;
	char table[64];
	if (rd_get(&r, &tl, 4) || tl == 0 || tl >= sizeof table || rd_get(&r, table, tl)) {
		note(g, "bad row at offset %zu", offset);
		return;
	}
	table[tl] = 0;
	if (rd_get(&r, &nc, 4) || nc > 64) {
		note(g, "bad row for %s at offset %zu", table, offset);
		return;
	}
	val vals[64];
	const char *texts[64];
	uint32_t tlens[64];
	for (uint32_t c = 0; c < nc; c++) {
		char tag;
		texts[c] = NULL;
		if (rd_get(&r, &tag, 1))
			break;
		switch (tag) {
		case 'i':
			vals[c].type = 1;
			rd_get(&r, &vals[c].i, 8);
			break;
		case 'd':
			vals[c].type = 2;
			rd_get(&r, &vals[c].d, 8);
			break;
		case 'n':
			vals[c].type = 0;
			break;
		case 's':
		case 't': {
			uint32_t l;
			if (rd_get(&r, &l, 4) || r.o + l > r.n) {
				r.bad = 1;
				break;
			}
			if (tag == 's') {
				vals[c] = VI(intern_n(g->st, (const char *)r.p + r.o, l));
			} else {
				vals[c].type = 3;
				texts[c] = (const char *)r.p + r.o;
				tlens[c] = l;
			}
			r.o += l;
			break;
		}
		default:
			r.bad = 1;
		}
		if (r.bad)
			break;
	}
	if (r.bad) {
		note(g, "malformed row for %s at offset %zu", table, offset);
		return;
	}
	int is_graph = strcmp(table, "graphs") == 0;
	int is_graph_part = strcmp(table, "graph_nodes") == 0 || strcmp(table, "graph_edges") == 0;
	if (!is_graph && !is_graph_part) {
		int ok = 0;
		for (int i = 0; row_tables[i]; i++)
			if (strcmp(row_tables[i], table) == 0)
				ok = 1;
		if (!ok) {
			note(g, "row for unknown table '%s' skipped", table);
			g->res->rows_lost++;
			return;
		}
	}
	if (is_graph) {
		/* (local id, label, version, ts, n_nodes, n_edges) */
		if (nc != 6 || vals[0].type != 1) {
			note(g, "bad graphs row at offset %zu", offset);
			return;
		}
		sqlite3_stmt *s;
		sqlite3_prepare_v2(g->st->db,
				   "INSERT INTO graphs(run_id,label,version,ts_ns,n_nodes,n_edges) "
				   "VALUES(?,?,?,?,?,?)",
				   -1, &s, NULL);
		sqlite3_bind_int64(s, 1, g->run_id);
		if (texts[1])
			sqlite3_bind_text(s, 2, texts[1], (int)tlens[1], SQLITE_TRANSIENT);
		for (int c = 2; c < 6; c++)
			bind_val(s, c + 1, &vals[c]);
		sqlite3_step(s);
		sqlite3_finalize(s);
		int64_t local = vals[0].i;
		if (local >= 0 && local < (1 << 24)) {
			if ((size_t)local >= g->graphmap_cap) {
				size_t cap = (size_t)local * 2 + 16;
				int64_t *m = realloc(g->graphmap, cap * sizeof *m);
				if (!m)
					return;
				memset(m + g->graphmap_cap, 0, (cap - g->graphmap_cap) * sizeof *m);
				g->graphmap = m;
				g->graphmap_cap = cap;
			}
			g->graphmap[local] = sqlite3_last_insert_rowid(g->st->db);
		}
		g->res->rows++;
		return;
	}
	/* prepared statement cached for runs of the same table */
	uint32_t total = is_graph_part ? nc : nc + 1;
	if (!g->row_stmt || strcmp(g->row_table, table) != 0 || g->row_ncols != (int)total) {
		sqlite3_finalize(g->row_stmt);
		g->row_stmt = NULL;
		int have = table_ncols(g->st->db, table);
		if (have != (int)total) {
			note(g, "row for %s has %u values, table has %d columns", table, total, have);
			g->res->rows_lost++;
			return;
		}
		char sql[512];
		size_t o = (size_t)snprintf(sql, sizeof sql, "INSERT INTO %s VALUES(", table);
		for (uint32_t c = 0; c < total; c++)
			o += (size_t)snprintf(sql + o, sizeof sql - o, c ? ",?" : "?");
		snprintf(sql + o, sizeof sql - o, ")");
		if (sqlite3_prepare_v2(g->st->db, sql, -1, &g->row_stmt, NULL) != SQLITE_OK) {
			note(g, "cannot insert into %s: %s", table, sqlite3_errmsg(g->st->db));
			return;
		}
		snprintf(g->row_table, sizeof g->row_table, "%s", table);
		g->row_ncols = (int)total;
	}
	sqlite3_stmt *s = g->row_stmt;
	int k = 1;
	if (!is_graph_part)
		sqlite3_bind_int64(s, k++, g->run_id);
	for (uint32_t c = 0; c < nc; c++, k++) {
		if (is_graph_part && c == 0)
			sqlite3_bind_int64(s, k, map_graph(g, vals[0].i));
		else if (vals[c].type == 3)
			sqlite3_bind_text(s, k, texts[c], (int)tlens[c], SQLITE_TRANSIENT);
		else
			bind_val(s, k, &vals[c]);
	}
	if (sqlite3_step(s) != SQLITE_DONE) {
		note(g, "insert into %s failed: %s", table, sqlite3_errmsg(g->st->db));
		g->res->rows_lost++;
	} else {
		g->res->rows++;
	}
	sqlite3_reset(s);
}

/* ---------------------------------------------------------------- meta */

static void set_field(char **f, const char *v)
{
	free(*f);
	*f = strdup(v);
}

static void do_meta(ingest *g, const char *p, size_t n)
{
	const char *k = p;
	size_t kl = strnlen(k, n);
	if (kl + 1 >= n)
		return;
	const char *v = p + kl + 1;
	size_t vl = strnlen(v, n - kl - 1);
	char *val = malloc(vl + 1);
	if (!val)
		return;
	memcpy(val, v, vl);
	val[vl] = 0;
	if (strcmp(k, "command") == 0)
		set_field(&g->command, val);
	else if (strcmp(k, "host") == 0)
		set_field(&g->host, val);
	else if (strcmp(k, "label") == 0)
		set_field(&g->label, val);
	else if (strcmp(k, "scenario") == 0)
		set_field(&g->scenario, val);
	else if (strcmp(k, "variant") == 0)
		set_field(&g->variant, val);
	sqlite3_stmt *s;
	sqlite3_prepare_v2(g->st->db, "INSERT INTO run_meta VALUES(?,?,?)", -1, &s, NULL);
	sqlite3_bind_int64(s, 1, g->run_id);
	sqlite3_bind_text(s, 2, k, (int)kl, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 3, val, -1, SQLITE_TRANSIENT);
	sqlite3_step(s);
	sqlite3_finalize(s);
	free(val);
}

/* ---------------------------------------------------------------- driver */

static int exec1(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static void free_ingest(ingest *g)
{
	for (size_t i = 0; i < g->nthreads; i++) {
		free(g->threads[i].stack);
		free(g->threads[i].name);
	}
	free(g->threads);
	free(g->strmap);
	free(g->graphmap);
	free(g->clk.pts);
	batch_free(&g->spans);
	batch_free(&g->counters);
	batch_free(&g->marks);
	batch_free(&g->ops);
	sqlite3_finalize(g->row_stmt);
	free(g->command);
	free(g->host);
	free(g->label);
	free(g->scenario);
	free(g->variant);
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

int pp_store_ingest(pp_store *st, const char *spool_path, const pp_ingest_opts *opts,
		    pp_ingest_result *res, char *err, size_t errlen)
{
	pp_ingest_result local_res;
	if (!res)
		res = &local_res;
	memset(res, 0, sizeof *res);
	pp_ingest_opts o = {0, NULL, -1, 0};
	if (opts)
		o = *opts;
	if (st->mode != PP_STORE_WRITE) {
		snprintf(err, errlen, "%s: opened read-only, cannot ingest", st->path);
		return -1;
	}
	int fd = open(spool_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open spool: %s", spool_path, strerror(errno));
		return -1;
	}
	struct stat sb;
	fstat(fd, &sb);
	size_t size = (size_t)sb.st_size;
	if (size < sizeof(pp_spool_header)) {
		close(fd);
		snprintf(err, errlen, "%s: not a phaseprof spool (%zu bytes, shorter than its header)",
			 spool_path, size);
		return -1;
	}
	const unsigned char *data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (data == MAP_FAILED) {
		snprintf(err, errlen, "%s: cannot map spool: %s", spool_path, strerror(errno));
		return -1;
	}
	pp_spool_header h;
	memcpy(&h, data, sizeof h);
	if (memcmp(h.magic, PP_SPOOL_MAGIC, 8) != 0) {
		munmap((void *)data, size);
		snprintf(err, errlen, "%s: not a phaseprof spool (bad magic at offset 0)", spool_path);
		return -1;
	}
	if (h.version != PP_SPOOL_VERSION || h.header_size != sizeof h) {
		munmap((void *)data, size);
		snprintf(err, errlen, "%s: spool version %u (header %u bytes) not supported by this build",
			 spool_path, h.version, h.header_size);
		return -1;
	}

	ingest G;
	memset(&G, 0, sizeof G);
	ingest *g = &G;
	g->st = st;
	g->data = data;
	g->size = size;
	g->path = spool_path;
	g->res = res;
	g->clk.kind = (int)h.clock;
	g->clk.start_mono = h.start_mono_ns;
	/* the header's own (ticks, mono) pair is the first calibration point */
	g->clk.pts = malloc(64 * sizeof *g->clk.pts);
	if (g->clk.pts) {
		g->clk.cap = 64;
		g->clk.pts[0].ticks = h.start_ticks;
		g->clk.pts[0].mono = h.start_mono_ns;
		g->clk.n = 1;
	}
	res->bytes = size;

	/* pass 1: framing, CRCs, clock points */
	size_t off = sizeof h, valid_end = off;
	while (off < size) {
		if (size - off < sizeof(pp_chunk_header)) {
			note(g, "incomplete chunk header at offset %zu", off);
			break;
		}
		pp_chunk_header ch;
		memcpy(&ch, data + off, sizeof ch);
		if (ch.magic != PP_CHUNK_MAGIC) {
			note(g, "bad chunk magic at offset %zu", off);
			break;
		}
		size_t padded = ((size_t)ch.size + 7) & ~(size_t)7;
		if (padded > size - off - sizeof ch) {
			note(g, "chunk at offset %zu runs past the end of the file (%u bytes)", off,
			     ch.size);
			break;
		}
		const unsigned char *p = data + off + sizeof ch;
		if ((uint32_t)crc32(crc32(0L, Z_NULL, 0), p, ch.size) != ch.crc) {
			note(g, "chunk at offset %zu fails its checksum", off);
			break;
		}
		if (ch.type == PP_CHUNK_CLOCK && ch.size == 16) {
			if (g->clk.n == g->clk.cap) {
				size_t cap = g->clk.cap ? g->clk.cap * 2 : 64;
				clock_pt *np = realloc(g->clk.pts, cap * sizeof *np);
				if (np) {
					g->clk.pts = np;
					g->clk.cap = cap;
				}
			}
			if (g->clk.n < g->clk.cap)
				memcpy(&g->clk.pts[g->clk.n++], p, 16);
		}
		off += sizeof ch + padded;
		valid_end = off;
	}
	if (valid_end < size) {
		res->truncated = 1;
		res->truncated_at = valid_end;
	}
	clock_finish(&g->clk);
	if (g->clk.guessed)
		note(g, "one clock calibration point: ticks converted at the CPU's nominal frequency");

	sqlite3 *db = st->db;
	if (exec1(db, "BEGIN") != 0) {
		snprintf(err, errlen, "%s: cannot start a transaction: %s", st->path, sqlite3_errmsg(db));
		free_ingest(g);
		munmap((void *)data, size);
		return -1;
	}
	int ok = 1;
	{
		sqlite3_stmt *s;
		sqlite3_prepare_v2(db,
				   "INSERT INTO runs(parent_run,pid,ppid,start_unix_ns,start_mono_ns,"
				   "status,spool_path,spool_bytes,clock) VALUES(?,?,?,?,?,'running',?,?,?)",
				   -1, &s, NULL);
		if (o.parent_run)
			sqlite3_bind_int64(s, 1, o.parent_run);
		else
			sqlite3_bind_null(s, 1);
		sqlite3_bind_int64(s, 2, h.pid);
		sqlite3_bind_int64(s, 3, h.ppid);
		sqlite3_bind_int64(s, 4, (int64_t)h.start_unix_ns);
		sqlite3_bind_int64(s, 5, (int64_t)h.start_mono_ns);
		sqlite3_bind_text(s, 6, spool_path, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(s, 7, (int64_t)size);
		sqlite3_bind_text(s, 8, h.clock == PP_CLOCK_TSC ? "tsc" : "monotonic", -1, SQLITE_STATIC);
		if (sqlite3_step(s) != SQLITE_DONE)
			ok = 0;
		sqlite3_finalize(s);
	}
	if (!ok) {
		snprintf(err, errlen, "%s: cannot add the run: %s", st->path, sqlite3_errmsg(db));
		exec1(db, "ROLLBACK");
		free_ingest(g);
		munmap((void *)data, size);
		return -1;
	}
	g->run_id = sqlite3_last_insert_rowid(db);
	res->run_id = g->run_id;
	{
		sqlite3_stmt *s;
		sqlite3_prepare_v2(db, "SELECT coalesce(max(id),0)+1 FROM spans", -1, &s, NULL);
		sqlite3_step(s);
		g->next_span_id = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	if (batch_init(&g->spans, db, "spans", 10) || batch_init(&g->counters, db, "counters", 5) ||
	    batch_init(&g->marks, db, "marks", 4) || batch_init(&g->ops, db, "ops", 7)) {
		snprintf(err, errlen, "%s: cannot prepare inserts: %s", st->path, sqlite3_errmsg(db));
		exec1(db, "ROLLBACK");
		free_ingest(g);
		munmap((void *)data, size);
		return -1;
	}

	/* pass 2 */
	for (off = sizeof h; off < valid_end;) {
		pp_chunk_header ch;
		memcpy(&ch, data + off, sizeof ch);
		const unsigned char *p = data + off + sizeof ch;
		size_t chunk_off = off;
		off += sizeof ch + (((size_t)ch.size + 7) & ~(size_t)7);
		res->chunks++;
		switch (ch.type) {
		case PP_CHUNK_STRING: {
			if (ch.size < 4)
				break;
			uint32_t id;
			memcpy(&id, p, 4);
			if (id >= (1u << 24))
				break;
			if (id >= g->strmap_cap) {
				size_t cap = (size_t)id * 2 + 256;
				int64_t *m = realloc(g->strmap, cap * sizeof *m);
				if (!m)
					break;
				memset(m + g->strmap_cap, 0, (cap - g->strmap_cap) * sizeof *m);
				g->strmap = m;
				g->strmap_cap = cap;
			}
			g->strmap[id] = intern_n(st, (const char *)p + 4, ch.size - 4);
			break;
		}
		case PP_CHUNK_EVENTS:
			do_events(g, ch.tid, (const pp_event *)(const void *)p,
				  ch.size / sizeof(pp_event));
			res->events += ch.size / sizeof(pp_event);
			break;
		case PP_CHUNK_THREAD: {
			tstate *t = thread_of(g, ch.tid);
			if (t) {
				free(t->name);
				t->name = strndup((const char *)p, ch.size);
			}
			break;
		}
		case PP_CHUNK_META:
			do_meta(g, (const char *)p, ch.size);
			break;
		case PP_CHUNK_LOSS: {
			if (ch.size < 8)
				break;
			uint64_t cnt;
			memcpy(&cnt, p, 8);
			char src[32] = "";
			memcpy(src, p + 8, ch.size - 8 < 31 ? ch.size - 8 : 31);
			if (strcmp(src, "rows") == 0)
				res->rows_lost += cnt;
			else
				res->events_lost += cnt;
			sqlite3_stmt *s;
			sqlite3_prepare_v2(db, "INSERT INTO losses VALUES(?,?,?,?)", -1, &s, NULL);
			sqlite3_bind_int64(s, 1, g->run_id);
			sqlite3_bind_text(s, 2, src, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(s, 3, (int64_t)cnt);
			char detail[64];
			snprintf(detail, sizeof detail, "thread %u", ch.tid);
			sqlite3_bind_text(s, 4, detail, -1, SQLITE_TRANSIENT);
			sqlite3_step(s);
			sqlite3_finalize(s);
			break;
		}
		case PP_CHUNK_ROW:
			do_row(g, p, ch.size, chunk_off);
			break;
		case PP_CHUNK_END:
			if (ch.size >= 8) {
				uint64_t t;
				memcpy(&t, p, 8);
				int64_t ns = clock_ns(&g->clk, t);
				if (ns > g->max_ns)
					g->max_ns = ns;
			}
			g->ended = 1;
			break;
		case PP_CHUNK_EXIT:
			if (ch.size >= 8) {
				int32_t v[2];
				memcpy(v, p, 8);
				g->exited = 1;
				g->exit_code = v[0];
				g->exit_signal = v[1];
			}
			break;
		default:
			break;
		}
	}

	/* spans still open at the end: kept, with no end */
	for (size_t i = 0; i < g->nthreads; i++) {
		tstate *t = &g->threads[i];
		for (int d = t->depth - 1; d >= 0; d--) {
			span_insert(g, t, &t->stack[d], -1, d, d ? t->stack[d - 1].id : 0);
			res->open_spans++;
		}
	}
	batch_flush(&g->spans);
	batch_flush(&g->counters);
	batch_flush(&g->marks);
	batch_flush(&g->ops);
	if (g->spans.failed || g->counters.failed || g->marks.failed || g->ops.failed)
		ok = 0;
	{
		sqlite3_stmt *s;
		sqlite3_prepare_v2(db, "INSERT INTO threads VALUES(?,?,?,?,?,?)", -1, &s, NULL);
		for (size_t i = 0; i < g->nthreads; i++) {
			tstate *t = &g->threads[i];
			sqlite3_bind_int64(s, 1, g->run_id);
			sqlite3_bind_int64(s, 2, t->tid);
			bind_text_or_null(s, 3, t->name);
			sqlite3_bind_int64(s, 4, t->first < 0 ? 0 : t->first);
			sqlite3_bind_int64(s, 5, t->last);
			sqlite3_bind_int64(s, 6, t->events);
			sqlite3_step(s);
			sqlite3_reset(s);
		}
		sqlite3_finalize(s);
	}
	if (g->unmatched_ends)
		note(g, "%lld phase ends without a begin ignored", (long long)g->unmatched_ends);
	if (res->open_spans)
		note(g, "%llu phases still open at the end (kept without an end)",
		     (unsigned long long)res->open_spans);
	if (g->bad_names)
		note(g, "%lld events named by unknown string ids", (long long)g->bad_names);
	if (res->events_lost)
		note(g, "%llu events lost in the recorder (buffers full)",
		     (unsigned long long)res->events_lost);

	const char *status = "complete";
	int exit_code = o.exit_code, sig = o.term_signal;
	if (g->exited && exit_code < 0 && !sig) {
		exit_code = g->exit_code;
		sig = g->exit_signal;
	}
	if (sig)
		status = (sig == SIGSEGV || sig == SIGABRT || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) ? "crashed"
											   : "killed";
	else if (res->truncated || !g->ended)
		status = "truncated";
	{
		sqlite3_stmt *s;
		sqlite3_prepare_v2(db,
				   "UPDATE runs SET label=?,scenario=?,variant=?,command=?,host=?,"
				   "duration_ns=?,status=?,exit_code=?,term_signal=?,events=?,"
				   "events_lost=?,rows_lost=?,truncated_at=?,note=? WHERE id=?",
				   -1, &s, NULL);
		bind_text_or_null(s, 1, g->label);
		bind_text_or_null(s, 2, g->scenario);
		bind_text_or_null(s, 3, g->variant);
		bind_text_or_null(s, 4, o.command ? o.command : g->command);
		bind_text_or_null(s, 5, g->host);
		sqlite3_bind_int64(s, 6, g->max_ns);
		sqlite3_bind_text(s, 7, status, -1, SQLITE_STATIC);
		if (exit_code >= 0)
			sqlite3_bind_int(s, 8, exit_code);
		else
			sqlite3_bind_null(s, 8);
		sqlite3_bind_int(s, 9, sig);
		sqlite3_bind_int64(s, 10, (int64_t)res->events);
		sqlite3_bind_int64(s, 11, (int64_t)res->events_lost);
		sqlite3_bind_int64(s, 12, (int64_t)res->rows_lost);
		if (res->truncated)
			sqlite3_bind_int64(s, 13, (int64_t)res->truncated_at);
		else
			sqlite3_bind_null(s, 13);
		bind_text_or_null(s, 14, g->note[0] ? g->note : NULL);
		sqlite3_bind_int64(s, 15, g->run_id);
		if (sqlite3_step(s) != SQLITE_DONE)
			ok = 0;
		sqlite3_finalize(s);
	}
	snprintf(res->note, sizeof res->note, "%.*s", (int)sizeof res->note - 1, g->note);
	int rc = 0;
	if (!ok || exec1(db, "COMMIT") != 0) {
		snprintf(err, errlen, "%s: ingest of %s failed: %s (nothing of this run was stored)",
			 st->path, spool_path, sqlite3_errmsg(db));
		exec1(db, "ROLLBACK");
		/* the cache may hold ids of rolled-back strings */
		pp_store_intern_cache_free(st);
		rc = -1;
	}
	free_ingest(g);
	munmap((void *)data, size);
	return rc;
}
