/* export_chrome.c — Chrome Trace Event JSON (Perfetto, chrome://tracing).
 * One process per run, one thread track per (thread, lane) of the model so
 * X slices nest strictly, GPU streams on their own tracks, C events for
 * counters, flow arrows from CUDA launches to kernels by correlation id.
 * ts/dur are exact decimal microseconds relative to otherData's
 * baseTimeNanoseconds (the earliest run start), as Kineto writes them.
 * CPU samples: an instant event per sample on a "CPU samples" track of its
 * thread, named after the innermost Python frame (else the leaf frame),
 * with "sf" pointing into the stackFrames dictionary (whole stack, Python
 * frames interleaved with native ones). */
#include "view_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cnode { int64_t run, id, parent; char *name; int python; } cnode;

typedef struct chrome_state {
	int first;                /* no comma before the first event */
	cnode *nodes;             /* CPU-sample stack nodes of every run, for stackFrames */
	int64_t n_nodes, cap_nodes, run_first;  /* run_first: this run's first node */
} chrome_state;

static void ev_sep(pp_view_ctx *c)
{
	chrome_state *s = c->priv;
	pp_out_puts(c->out, s->first ? "\n" : ",\n");
	s->first = 0;
}

/* Opens an event: `{<fields>,"pid":…,"tid":…,"ts":…` (ts_ns printed in
 * µs); the caller writes the rest and the closing brace. */
static void ev_open(pp_view_ctx *c, const char *fields, int64_t pid, int64_t tid, int64_t ts_ns)
{
	ev_sep(c);
	pp_out_putc(c->out, '{');
	pp_out_puts(c->out, fields);
	pp_out_puts(c->out, ",\"pid\":");
	pp_out_i64(c->out, pid);
	pp_out_puts(c->out, ",\"tid\":");
	pp_out_i64(c->out, tid);
	pp_out_puts(c->out, ",\"ts\":");
	pp_out_us(c->out, ts_ns);
}

static void ev_meta(pp_view_ctx *c, int64_t pid, int64_t tid, const char *what, const char *name, int64_t sort)
{
	ev_open(c, "\"ph\":\"M\"", pid, tid, 0);
	pp_out_puts(c->out, ",\"name\":\"");
	pp_out_puts(c->out, what);
	pp_out_puts(c->out, "\",\"args\":{");
	if (name) {
		pp_out_puts(c->out, "\"name\":");
		pp_out_json_str(c->out, name);
	} else {
		pp_out_puts(c->out, "\"sort_index\":");
		pp_out_i64(c->out, sort);
	}
	pp_out_puts(c->out, "}}");
}

static int chrome_begin(pp_view_ctx *c)
{
	chrome_state *s = calloc(1, sizeof *s);
	if (!s)
		return pp_view_fail(c, "out of memory");
	s->first = 1;
	c->priv = s;
	pp_out_puts(c->out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"phaseprof\",\"database\":");
	pp_out_json_str(c->out, pp_store_path(c->st));
	pp_out_puts(c->out, ",\"baseTimeNanoseconds\":");
	pp_out_i64(c->out, c->base_unix_ns);
	pp_out_puts(c->out, "},\"traceEvents\":[");
	return 0;
}

typedef struct counter_ctx {
	pp_view_ctx *c;
	int64_t pid, off;
} counter_ctx;

/* A process-wide event (thread 0) up to its name. */
static void ev_process(counter_ctx *k, const char *ph_fields, int64_t ts_ns, const char *name)
{
	pp_view_ctx *c = k->c;
	ev_open(c, ph_fields, k->pid, 0, ts_ns + k->off);
	pp_out_puts(c->out, ",\"name\":");
	pp_out_json_str(c->out, name);
}

static int counter_row(const pp_counter_sample *row, void *ud)
{
	counter_ctx *k = ud;
	pp_view_ctx *c = k->c;
	ev_process(k, "\"ph\":\"C\"", row->ts_ns, row->name);
	double v = row->value;
	if (isfinite(v))   /* SQLite stores NaN as NULL */
		pp_out_printf(c->out, ",\"args\":{\"value\":%.17g}}", v);
	else   /* JSON has no NaN/inf */
		pp_out_puts(c->out, ",\"args\":{\"value\":null}}");
	return 0;
}

static int mark_row(const pp_mark_row *row, void *ud)
{
	counter_ctx *k = ud;
	ev_process(k, "\"ph\":\"i\",\"s\":\"p\",\"cat\":\"mark\"", row->ts_ns, row->name);
	pp_out_puts(k->c->out, "}");
	return 0;
}

typedef struct launch { int64_t corr, ts, tid; } launch;

static int cmp_launch(const void *a, const void *b)
{
	const launch *x = a, *y = b;
	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

static int chrome_samples(pp_view_ctx *c, const pp_run_info *run, int64_t pid, int64_t off);

static const char *const cat_names[] = {"span", "op", "cuda_api", "gpu"};
static const char *const gpu_kinds[] = {"kernel", "memcpy", "memset"};

/* ---- a big run's spans, streamed ----
 * Past CHROME_STREAM_EVENTS recorded events a run's spans are not loaded
 * into the model: they come one row at a time (pp_store_each_span, begin
 * order) and go out as X events at once, each thread split into lanes as
 * the model splits it (a span that overlaps without nesting moves to the
 * next lane, " +k"), so memory holds each lane's open spans, not the run.
 * Their tracks follow the model's (ops, GPU); ops then sit on tracks of
 * their own instead of inside their thread's spans. */
#define CHROME_STREAM_EVENTS 1000000

typedef struct slane { int64_t *ends; int depth, cap; int64_t last_start, tid; } slane;
typedef struct sthread { int64_t tid; char name[96]; slane *lanes; int n_lanes, cap_lanes; } sthread;
typedef struct stream_ctx {
	pp_view_ctx *c;
	int64_t pid, off, run_end, next_tid;
	const pp_thread_row *thr;
	int n_thr;
	sthread *th;
	int n_th, cap_th, last;
	int failed;
} stream_ctx;

static sthread *stream_thread(stream_ctx *k, int64_t tid)
{
	if (k->last >= 0 && k->th[k->last].tid == tid)
		return &k->th[k->last];
	for (int i = 0; i < k->n_th; i++)
		if (k->th[i].tid == tid)
			return &k->th[k->last = i];
	if (PP_GROW(k->th, k->n_th + 1, k->cap_th) != 0)
		return NULL;
	sthread *t = &k->th[k->n_th];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	snprintf(t->name, sizeof t->name, "thread %lld", (long long)tid);
	for (int i = 0; i < k->n_thr; i++)
		if (k->thr[i].tid == tid && k->thr[i].name[0])
			snprintf(t->name, sizeof t->name, "%s (%lld)", k->thr[i].name, (long long)tid);
	return &k->th[k->last = k->n_th++];
}

static int stream_span(const pp_span_row *r, void *ud)
{
	stream_ctx *k = ud;
	pp_view_ctx *c = k->c;
	sthread *t = stream_thread(k, r->tid);
	if (!t)
		goto oom;
	int64_t start = r->start_ns, end = r->end_ns < 0 ? (k->run_end > start ? k->run_end : start) : r->end_ns;
	if (end < start)
		end = start;
	slane *l = NULL;
	for (int i = 0; i < t->n_lanes && !l; i++) {
		slane *x = &t->lanes[i];
		while (x->depth && x->ends[x->depth - 1] <= start)
			x->depth--;
		if (start >= x->last_start && (!x->depth || x->ends[x->depth - 1] >= end))
			l = x;
	}
	if (!l) {
		if (PP_GROW(t->lanes, t->n_lanes + 1, t->cap_lanes) != 0)
			goto oom;
		l = &t->lanes[t->n_lanes];
		memset(l, 0, sizeof *l);
		l->last_start = INT64_MIN;
		l->tid = k->next_tid++;
		char nm[128];
		if (t->n_lanes)
			snprintf(nm, sizeof nm, "%s +%d", t->name, t->n_lanes);
		else
			snprintf(nm, sizeof nm, "%s", t->name);
		ev_meta(c, k->pid, l->tid, "thread_name", nm, 0);
		ev_meta(c, k->pid, l->tid, "thread_sort_index", NULL, l->tid - 1);
		t->n_lanes++;
	}
	if (PP_GROW(l->ends, l->depth + 1, l->cap) != 0)
		goto oom;
	l->ends[l->depth++] = end;
	l->last_start = start;
	ev_open(c, "\"ph\":\"X\"", k->pid, l->tid, start + k->off);
	pp_out_puts(c->out, ",\"dur\":");
	pp_out_us(c->out, end - start);
	pp_out_puts(c->out, ",\"name\":");
	pp_out_json_str(c->out, r->name && *r->name ? r->name : pp_kind_name((pp_kind)r->kind));
	pp_out_puts(c->out, ",\"cat\":\"");
	pp_out_puts(c->out, r->kind ? "phase" : "span");
	pp_out_puts(c->out, "\",\"args\":{\"kind\":\"");
	pp_out_puts(c->out, pp_kind_name((pp_kind)r->kind));
	pp_out_puts(c->out, "\"");
	if (r->step >= 0) {
		pp_out_puts(c->out, ",\"step\":");
		pp_out_i64(c->out, r->step);
	}
	pp_out_puts(c->out, "}}");
	return 0;
oom:
	k->failed = 1;
	return 1;
}

static int chrome_stream_spans(pp_view_ctx *c, const pp_run_info *run, int64_t pid, int64_t off, int first_tid)
{
	stream_ctx k = {.c = c, .pid = pid, .off = off, .run_end = run->duration_ns, .next_tid = first_tid,
			.last = -1};
	pp_thread_row *thr = NULL;
	int rc = -1;
	if (pp_store_threads(c->st, run->id, &thr, &k.n_thr) != 0) {
		pp_view_fail(c, "%s: cannot read threads of run %lld", pp_store_path(c->st), (long long)run->id);
		goto out;
	}
	k.thr = thr;
	if (pp_store_each_span(c->st, run->id, stream_span, &k) != 0) {
		pp_view_fail(c, "%s: cannot read spans of run %lld", pp_store_path(c->st), (long long)run->id);
		goto out;
	}
	if (k.failed) {
		pp_view_fail(c, "out of memory writing the spans of run %lld", (long long)run->id);
		goto out;
	}
	rc = 0;
out:
	for (int i = 0; i < k.n_th; i++) {
		for (int j = 0; j < k.th[i].n_lanes; j++)
			free(k.th[i].lanes[j].ends);
		free(k.th[i].lanes);
	}
	free(k.th);
	free(thr);
	return rc;
}

static int chrome_run(pp_view_ctx *c, const pp_run_info *run)
{
	pp_model m;
	int stream = run->events > CHROME_STREAM_EVENTS;
	if ((stream ? pp_model_load_no_spans(c->st, run, &m, c->err, c->errlen)
		    : pp_model_load(c->st, run, &m, c->err, c->errlen)) != 0)
		return -1;
	int64_t pid = run->id;
	int64_t off = run->start_unix_ns - c->base_unix_ns;
	char pname[300];
	if (run->scenario[0])
		snprintf(pname, sizeof pname, "run %lld: %s / %s", (long long)run->id, run->scenario, run->variant);
	else
		snprintf(pname, sizeof pname, "run %lld: %.200s", (long long)run->id,
			 run->label[0] ? run->label : run->command);
	/* a rank of a distributed job: one process per rank, in rank order */
	pp_rank_run rk;
	int64_t sort = pid;
	if (pp_store_rank_of(c->st, run->id, &rk) == 0) {
		snprintf(pname, sizeof pname, "rank %d (run %lld, %.60s)", rk.rank, (long long)run->id, rk.host);
		sort = rk.rank - 1000000000LL;
	}
	ev_meta(c, pid, 0, "process_name", pname, 0);
	ev_meta(c, pid, 0, "process_sort_index", NULL, sort);

	launch *ln = NULL;
	int64_t n_ln = 0, cap_ln = 0;
	for (int t = 0; t < m.n_tracks; t++) {
		const pp_track *tr = &m.tracks[t];
		int64_t tid = t + 1;
		ev_meta(c, pid, tid, "thread_name", tr->name, 0);
		ev_meta(c, pid, tid, "thread_sort_index", NULL, t);
		for (int i = 0; i < tr->n; i++) {
			const pp_item *it = &tr->items[i];
			ev_open(c, "\"ph\":\"X\"", pid, tid, it->start + off);
			pp_out_puts(c->out, ",\"dur\":");
			pp_out_us(c->out, it->end - it->start);
			pp_out_puts(c->out, ",\"name\":");
			pp_out_json_str(c->out, m.names.s[it->name]);
			pp_out_puts(c->out, ",\"cat\":\"");
			if (it->cat == PP_CAT_SPAN)
				pp_out_puts(c->out, it->kind ? "phase" : "span");
			else
				pp_out_puts(c->out, cat_names[it->cat]);
			pp_out_puts(c->out, "\",\"args\":{");
			if (it->cat == PP_CAT_SPAN) {
				pp_out_puts(c->out, "\"kind\":\"");
				pp_out_puts(c->out, pp_kind_name((pp_kind)it->kind));
				pp_out_puts(c->out, "\"");
				if (it->arg >= 0) {
					pp_out_puts(c->out, ",\"step\":");
					pp_out_i64(c->out, it->arg);
				}
			} else if (it->cat == PP_CAT_OP) {
				pp_out_puts(c->out, "\"step\":");
				pp_out_i64(c->out, it->arg);
			} else {
				pp_out_puts(c->out, "\"correlation\":");
				pp_out_i64(c->out, it->arg);
				if (it->cat == PP_CAT_GPU) {
					pp_out_printf(c->out, ",\"kind\":\"%s\"", gpu_kinds[it->kind % 3]);
					if (it->bytes) {
						pp_out_puts(c->out, ",\"bytes\":");
						pp_out_i64(c->out, it->bytes);
					}
				}
			}
			pp_out_puts(c->out, "}}");
			if (it->cat == PP_CAT_GPU_API && it->arg >= 0) {
				if (PP_GROW(ln, n_ln + 1, cap_ln) != 0) {
					free(ln);
					pp_model_free(&m);
					return pp_view_fail(c, "out of memory");
				}
				ln[n_ln++] = (launch){it->arg, it->start, tid};
			}
		}
	}
	/* Flow arrows: launch (CUDA API call) → kernel/copy with the same
	 * correlation id; "f" binds to the enclosing slice ("bp":"e"). */
	if (n_ln) {
		pp_sort(ln, (size_t)n_ln, sizeof *ln, cmp_launch);
		for (int t = 0; t < m.n_tracks; t++) {
			const pp_track *tr = &m.tracks[t];
			if (!tr->gpu)
				continue;
			for (int i = 0; i < tr->n; i++) {
				const pp_item *it = &tr->items[i];
				if (it->arg < 0)
					continue;
				launch key = {it->arg, INT64_MIN, 0};
				int64_t lo = 0, hi = n_ln;
				while (lo < hi) {
					int64_t mid = (lo + hi) / 2;
					if (cmp_launch(&ln[mid], &key) < 0)
						lo = mid + 1;
					else
						hi = mid;
				}
				if (lo >= n_ln || ln[lo].corr != it->arg)
					continue;
				int64_t id = (run->id << 40) | (it->arg & 0xffffffffffLL);
				ev_open(c, "\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\"", pid, ln[lo].tid,
					ln[lo].ts + off);
				pp_out_puts(c->out, ",\"id\":");
				pp_out_i64(c->out, id);
				pp_out_puts(c->out, "}");
				ev_open(c, "\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\"", pid, t + 1,
					it->start + off);
				pp_out_puts(c->out, ",\"id\":");
				pp_out_i64(c->out, id);
				pp_out_puts(c->out, "}");
			}
		}
	}
	free(ln);
	int n_tracks = m.n_tracks;
	pp_model_free(&m);
	if (stream && chrome_stream_spans(c, run, pid, off, n_tracks + 1) != 0)
		return -1;
	counter_ctx k = {c, pid, off};
	if (pp_store_each_counter(c->st, run->id, counter_row, &k) != 0 ||
	    pp_store_each_mark(c->st, run->id, 0, mark_row, &k) != 0)
		return pp_view_fail(c, "%s: cannot read counters/marks of run %lld", pp_store_path(c->st),
				    (long long)run->id);
	return chrome_samples(c, run, pid, off);
}

typedef struct node_ctx { chrome_state *s; int64_t run; } node_ctx;

static int node_add(void *ud, const pp_stack_node *n)
{
	node_ctx *k = ud;
	chrome_state *s = k->s;
	if (PP_GROW(s->nodes, s->n_nodes + 1, s->cap_nodes) != 0)
		return 1;
	char *name = strdup(n->symbol ? n->symbol : "?");
	if (!name)
		return 1;
	s->nodes[s->n_nodes++] = (cnode){k->run, n->id, n->parent, name, n->python};
	return 0;
}

/* this run's node with that id (ids ascending within a run) */
static const cnode *node_find(chrome_state *s, int64_t id)
{
	int64_t lo = s->run_first, hi = s->n_nodes;
	while (lo < hi) {
		int64_t mid = (lo + hi) / 2;
		if (s->nodes[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n_nodes && s->nodes[lo].id == id ? &s->nodes[lo] : NULL;
}

typedef struct sample_ctx {
	pp_view_ctx *c;
	int64_t pid, off;
	int64_t tids[64];
	int n_tids;
} sample_ctx;

#define SAMPLE_TID 1000000000LL   /* sample tracks beside the model's tracks 1..n */

static int sample_out(void *ud, int64_t tid, int64_t ts, int64_t stack)
{
	sample_ctx *k = ud;
	pp_view_ctx *c = k->c;
	chrome_state *s = c->priv;
	int seen = 0;
	for (int i = 0; i < k->n_tids; i++)
		seen |= k->tids[i] == tid;
	if (!seen) {
		char name[64];
		snprintf(name, sizeof name, "CPU samples (tid %lld)", (long long)tid);
		ev_meta(c, k->pid, SAMPLE_TID + tid, "thread_name", name, 0);
		if (k->n_tids < 64)
			k->tids[k->n_tids++] = tid;
	}
	const cnode *leaf = node_find(s, stack), *named = leaf;
	for (const cnode *n = leaf; n; n = n->parent ? node_find(s, n->parent) : NULL)
		if (n->python) {
			named = n;
			break;
		}
	ev_open(c, "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"sample\"", k->pid, SAMPLE_TID + tid, ts + k->off);
	pp_out_puts(c->out, ",\"name\":");
	pp_out_json_str(c->out, named ? named->name : "?");
	if (leaf)
		pp_out_printf(c->out, ",\"sf\":\"r%lldn%lld\"", (long long)leaf->run, (long long)leaf->id);
	pp_out_puts(c->out, "}");
	return 0;
}

static int chrome_samples(pp_view_ctx *c, const pp_run_info *run, int64_t pid, int64_t off)
{
	chrome_state *s = c->priv;
	s->run_first = s->n_nodes;
	sample_ctx k = {.c = c, .pid = pid, .off = off};
	node_ctx nk = {s, run->id};
	if (pp_store_stack_nodes(c->st, run->id, node_add, &nk) != 0 ||
	    pp_store_samples(c->st, run->id, sample_out, &k) != 0)
		return pp_view_fail(c, "%s: cannot read CPU samples of run %lld", pp_store_path(c->st),
				    (long long)run->id);
	return 0;
}

static int chrome_end(pp_view_ctx *c)
{
	chrome_state *s = c->priv;
	if (!s)
		return 0;
	pp_out_puts(c->out, "\n]");
	if (s->n_nodes) {
		pp_out_puts(c->out, ",\"stackFrames\":{");
		for (int64_t i = 0; i < s->n_nodes; i++) {
			const cnode *n = &s->nodes[i];
			pp_out_printf(c->out, "%s\n\"r%lldn%lld\":{\"category\":\"%s\",\"name\":", i ? "," : "",
				      (long long)n->run, (long long)n->id, n->python ? "python" : "native");
			pp_out_json_str(c->out, n->name);
			if (n->parent)
				pp_out_printf(c->out, ",\"parent\":\"r%lldn%lld\"", (long long)n->run, (long long)n->parent);
			pp_out_puts(c->out, "}");
			free(n->name);
		}
		pp_out_puts(c->out, "}");
	}
	pp_out_puts(c->out, "}\n");
	free(s->nodes);
	free(s);
	c->priv = NULL;
	return 0;
}

const pp_view_ops pp_backend_chrome = {
	.name = "chrome",
	.description = "Chrome Trace Event JSON (Perfetto, chrome://tracing)",
	.begin = chrome_begin,
	.run = chrome_run,
	.end = chrome_end,
};
