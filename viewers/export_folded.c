/* export_folded.c — flamegraph.pl folded stacks: "root;child;leaf count".
 * From CPU samples (count = samples) when the run has them, else from the
 * timeline model (count = self time in µs, per thread), so phase trees can
 * be drawn as flame graphs too. Frame names lose ';' (the separator) and
 * newlines. Several runs: each stack is rooted at "run N". */
#include "view_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct folded_acc {
	pp_strtab paths;
	int64_t *count;
	int cap;
} folded_acc;

static int acc_add(folded_acc *a, const char *path, int64_t v)
{
	int i = pp_strtab_add(&a->paths, path);
	int old = a->cap;
	if (i < 0 || PP_GROW(a->count, i + 1, a->cap) != 0)
		return -1;
	memset(a->count + old, 0, (size_t)(a->cap - old) * sizeof *a->count);
	a->count[i] += v;
	return 0;
}

/* A growing path buffer: C++ symbols are long and stacks deep, and a cut
 * path would lose the leaf, the frame people look for. */
typedef struct pbuf {
	char *s;
	size_t len, cap;
} pbuf;

static void path_reset(pbuf *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = 0;
}

static void path_append(pbuf *b, const char *name)
{
	if (!name)
		name = "?";
	size_t need = b->len + strlen(name) + 2;
	if (PP_GROW(b->s, need, b->cap) != 0)
		return;
	if (b->len)
		b->s[b->len++] = ';';
	for (const char *p = name; *p; p++) {
		char ch = *p;
		if (ch == ';')
			ch = ':';
		else if (ch == '\n' || ch == '\r' || ch == '\t')
			ch = ' ';
		b->s[b->len++] = ch;
	}
	b->s[b->len] = 0;
}

typedef struct stack_node {
	int64_t id, parent;
	char *name;
	int64_t samples;
} stack_node;

typedef struct stack_load {
	stack_node *v;
	int n, cap;
	int failed;
} stack_load;

static int stack_row(const pp_stack_row *row, void *ud)
{
	stack_load *l = ud;
	if (PP_GROW(l->v, l->n + 1, l->cap) != 0) {
		l->failed = 1;
		return 1;
	}
	stack_node *s = &l->v[l->n++];
	s->id = row->id;
	s->parent = row->parent;
	const char *sym = row->symbol;
	char tmp[64];
	if (!sym || !*sym) {
		const char *mod = row->module;
		const char *base = mod ? strrchr(mod, '/') : NULL;
		snprintf(tmp, sizeof tmp, "%s+0x%llx", base ? base + 1 : (mod ? mod : "?"),
			 (unsigned long long)row->ip);
		sym = tmp;
	}
	s->name = strdup(sym);
	s->samples = 0;
	return 0;
}

static int cmp_node(const void *a, const void *b)
{
	const stack_node *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

static stack_node *find_node(stack_load *l, int64_t id)
{
	stack_node key = {.id = id};
	return pp_bsearch(&key, l->v, (size_t)l->n, sizeof *l->v, cmp_node);
}

static int count_row(int64_t stack, int64_t count, void *ud)
{
	stack_node *n = find_node(ud, stack);
	if (n)
		n->samples += count;
	return 0;
}

/* Loads the run's stack tree with per-node sample counts. Shared with the
 * report's flame graph through pp_folded_samples(). */
static int load_stacks(pp_store *st, int64_t run_id, stack_load *l)
{
	memset(l, 0, sizeof *l);
	int rc = pp_store_each_stack(st, run_id, stack_row, l);
	if (rc != 0 || l->failed)
		return -1;
	pp_sort(l->v, (size_t)l->n, sizeof *l->v, cmp_node);
	/* counts in a second pass: a correlated subquery would scan samples
	 * once per stack node when samples has no index */
	return pp_store_each_sample_count(st, run_id, count_row, l);
}

static void free_stacks(stack_load *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
}

int pp_folded_samples(pp_store *st, int64_t run_id, const char *root, pp_strtab *paths, int64_t **counts)
{
	stack_load l;
	folded_acc a = {0};
	if (load_stacks(st, run_id, &l) != 0) {
		free_stacks(&l);
		return -1;
	}
	pbuf path = {0};
	const stack_node *chain[512];
	for (int i = 0; i < l.n; i++) {
		if (!l.v[i].samples)
			continue;
		int depth = 0;
		const stack_node *s = &l.v[i];
		while (s && depth < 512) {   /* leaf → root; bounded against cycles */
			chain[depth++] = s;
			s = s->parent >= 0 && s->parent != s->id ? find_node(&l, s->parent) : NULL;
		}
		path_reset(&path);
		if (root)
			path_append(&path, root);
		for (int d = depth - 1; d >= 0; d--)
			path_append(&path, chain[d]->name);
		if (!path.s || acc_add(&a, path.s, l.v[i].samples) != 0)
			break;
	}
	free(path.s);
	free_stacks(&l);
	*paths = a.paths;
	*counts = a.count;
	return 0;
}

int pp_folded_spans(pp_store *st, const pp_run_info *run, const char *root, pp_strtab *paths,
		    int64_t **counts, char *err, size_t errlen)
{
	pp_model m;
	folded_acc a = {0};
	if (pp_model_load(st, run, &m, err, errlen) != 0)
		return -1;
	typedef struct open_item { const pp_item *it; int64_t child; } open_item;
	open_item stack[1024];
	pbuf path = {0};
	for (int t = 0; t < m.n_tracks; t++) {
		const pp_track *tr = &m.tracks[t];
		if (tr->gpu)
			continue;
		int sp = 0;
		for (int i = 0; i <= tr->n; i++) {
			int d = i < tr->n ? tr->items[i].depth : 0;
			while (sp > d || (i == tr->n && sp > 0)) {
				/* finalise the innermost open item: self time = dur - children */
				open_item *o = &stack[--sp];
				int64_t self = (o->it->end - o->it->start) - o->child;
				if (self <= 0)
					continue;
				path_reset(&path);
				if (root)
					path_append(&path, root);
				path_append(&path, tr->name);
				for (int k = 0; k <= sp; k++)
					path_append(&path, m.names.s[stack[k].it->name]);
				if (!path.s || acc_add(&a, path.s, self) != 0)
					break;
			}
			if (i == tr->n)
				break;
			if (sp < 1024) {
				if (sp > 0)
					stack[sp - 1].child += tr->items[i].end - tr->items[i].start;
				stack[sp++] = (open_item){&tr->items[i], 0};
			}
		}
	}
	free(path.s);
	pp_model_free(&m);
	*paths = a.paths;
	*counts = a.count;
	return 0;
}

static int run_has_samples(pp_store *st, int64_t run_id)
{
	int has = 0;
	if (pp_store_has_samples(st, run_id, &has) != 0)
		has = 0;
	return has;
}

static int folded_run(pp_view_ctx *c, const pp_run_info *run)
{
	char root[64];
	snprintf(root, sizeof root, "run %lld", (long long)run->id);
	const char *r = c->n_runs > 1 ? root : NULL;
	pp_strtab paths = {0};
	int64_t *counts = NULL;
	int src = c->opts->folded_source;
	int use_samples = src == PP_FOLDED_SAMPLES || (src == PP_FOLDED_AUTO && run_has_samples(c->st, run->id));
	int rc;
	if (use_samples)
		rc = pp_folded_samples(c->st, run->id, r, &paths, &counts);
	else
		rc = pp_folded_spans(c->st, run, r, &paths, &counts, c->err, c->errlen);
	if (rc != 0) {
		pp_strtab_free(&paths);
		free(counts);
		if (!c->err[0])
			pp_view_fail(c, "%s: cannot read the stacks of run %lld", pp_store_path(c->st), (long long)run->id);
		return -1;
	}
	for (int i = 0; i < paths.n; i++) {
		/* spans are weighted in whole µs; sub-µs self times are dropped */
		int64_t v = use_samples ? counts[i] : counts[i] / 1000;
		if (v <= 0)
			continue;
		pp_out_puts(c->out, paths.s[i]);
		pp_out_putc(c->out, ' ');
		pp_out_i64(c->out, v);
		pp_out_putc(c->out, '\n');
	}
	pp_strtab_free(&paths);
	free(counts);
	return 0;
}

const pp_view_ops pp_backend_folded = {
	.name = "folded",
	.description = "folded stacks for flamegraph.pl (CPU samples, else phase self time in us)",
	.run = folded_run,
};

/* ---- csv: phases and spans ---- */
/* A text cell, quoted. One that starts with = + - @ (or a tab or carriage
 * return) is a formula to a spreadsheet (=HYPERLINK(...), =cmd|...): it
 * gets a leading apostrophe, which spreadsheets show as text. */
static void csv_str(pp_out *o, const char *s)
{
	pp_out_putc(o, '"');
	if (s && (*s == '=' || *s == '+' || *s == '-' || *s == '@' || *s == '\t' || *s == '\r'))
		pp_out_putc(o, '\'');
	for (; s && *s; s++) {
		if (*s == '"')
			pp_out_putc(o, '"');
		pp_out_putc(o, *s);
	}
	pp_out_putc(o, '"');
}

static int csv_begin(pp_view_ctx *c)
{
	pp_out_puts(c->out, "run_id,tid,thread,kind,name,start_ns,end_ns,dur_ns,depth,step\n");
	return 0;
}

static int csv_run(pp_view_ctx *c, const pp_run_info *run)
{
	pp_span_list l;
	pp_thread_row *thr = NULL;
	int n_thr = 0;
	if (pp_store_spans(c->st, run->id, -1, &l) != 0)
		return pp_view_fail(c, "%s: cannot read spans of run %lld", pp_store_path(c->st), (long long)run->id);
	pp_store_threads(c->st, run->id, &thr, &n_thr);
	for (int i = 0; i < l.n; i++) {
		const pp_span_row *s = &l.rows[i];
		const char *tn = "";
		for (int k = 0; k < n_thr; k++)
			if (thr[k].tid == s->tid)
				tn = thr[k].name;
		pp_out_i64(c->out, run->id);
		pp_out_putc(c->out, ',');
		pp_out_i64(c->out, s->tid);
		pp_out_putc(c->out, ',');
		csv_str(c->out, tn);
		pp_out_putc(c->out, ',');
		pp_out_puts(c->out, pp_kind_name((pp_kind)s->kind));
		pp_out_putc(c->out, ',');
		csv_str(c->out, s->name);
		pp_out_putc(c->out, ',');
		pp_out_i64(c->out, s->start_ns);
		pp_out_putc(c->out, ',');
		if (s->end_ns >= 0) {   /* an open span has empty end and duration */
			pp_out_i64(c->out, s->end_ns);
			pp_out_putc(c->out, ',');
			pp_out_i64(c->out, s->end_ns - s->start_ns);
		} else {
			pp_out_putc(c->out, ',');
		}
		pp_out_putc(c->out, ',');
		pp_out_i64(c->out, s->depth);
		pp_out_putc(c->out, ',');
		if (s->step >= 0)
			pp_out_i64(c->out, s->step);
		pp_out_putc(c->out, '\n');
	}
	free(thr);
	pp_span_list_free(&l);
	return 0;
}

const pp_view_ops pp_backend_csv = {
	.name = "csv",
	.description = "phases and spans as CSV (one row per interval)",
	.begin = csv_begin,
	.run = csv_run,
};
