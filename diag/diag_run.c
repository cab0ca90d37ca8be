/* diag_run.c — loads one run for the rules and derives what they share. */
#include "diag_internal.h"
#include "pp_assert.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_id(const void *a, const void *b)
{
	int64_t x = ((const diag_id_index *)a)->id, y = ((const diag_id_index *)b)->id;
	return (x > y) - (x < y);
}

void diag_id_sort(diag_id_index *map, int n)
{
	qsort(map, (size_t)n, sizeof *map, cmp_id);
}

int diag_id_find(const diag_id_index *map, int n, int64_t id)
{
	diag_id_index key = {id, 0};
	const diag_id_index *h = bsearch(&key, map, (size_t)n, sizeof *map, cmp_id);
	return h ? h->idx : -1;
}

/* The step series is the store's (outermost step phases by start, a
 * first_step phase standing for the first step). */
static int build_steps(diag_run *r)
{
	pp_step_row *rows = NULL;
	int n = 0;
	if (pp_store_steps(r->st, r->run_id, &rows, &n) != 0)
		return -1;
	r->steps = malloc(((size_t)n + 1) * sizeof *r->steps);
	if (!r->steps) {
		free(rows);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		r->steps[i] = (diag_step){rows[i].step, rows[i].start_ns,
					  rows[i].start_ns + rows[i].dur_ns};
		/* the store gives closed steps by start: the binary searches
		 * below (diag_step_containing, diag_slot_of) rely on it */
		PP_ASSERT(i == 0 || rows[i].start_ns >= rows[i - 1].start_ns);
	}
	r->n_steps = n;
	r->first_is_marked = n > 0 && rows[0].kind == PP_FIRST_STEP;
	free(rows);
	const pp_span_list *l = &r->spans;
	r->startup_end_ns = r->n_steps ? r->steps[0].start_ns : r->total_ns;
	if (!r->n_steps) {
		/* No step loop: start-up lasts until the last set-up phase ends
		 * (what follows is the program's own work, or nothing). */
		int64_t end = 0;
		for (int i = 0; i < l->n; i++) {
			const pp_span_row *s = &l->rows[i];
			int setup = (s->kind > PP_SPAN && s->kind < PP_FIRST_STEP) ||
				    s->kind == PP_DEVICE_INIT;
			if (diag_span_closed(s) && setup && s->end_ns > end)
				end = s->end_ns;
		}
		if (end > 0)
			r->startup_end_ns = end;
	}
	return 0;
}

int diag_step_containing(const diag_run *r, int64_t start_ns, int64_t end_ns)
{
	int lo = 0, hi = r->n_steps - 1, best = -1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (r->steps[mid].start_ns <= start_ns) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	PP_ASSERT(best < r->n_steps && (best < 0 || r->steps[best].start_ns <= start_ns));
	if (best >= 0 && end_ns <= r->steps[best].end_ns)
		return best;
	return -1;
}

/* Index of the last element of a sorted array whose int64 key (at byte
 * offset off) is <= t, or -1: steps by start, counter rows by time. */
static int last_at_or_before(const void *base, int n, size_t size, size_t off, int64_t t)
{
	const char *p = base;
	int lo = 0, hi = n - 1, best = -1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		int64_t k;
		memcpy(&k, p + (size_t)mid * size + off, sizeof k);
		if (k <= t) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return best;
}

int diag_slot_of(const diag_run *r, int64_t t_ns)
{
	if (r->n_steps == 0 || t_ns < r->steps[0].start_ns ||
	    t_ns > r->steps[r->n_steps - 1].end_ns)
		return -1;
	int slot = last_at_or_before(r->steps, r->n_steps, sizeof *r->steps, offsetof(diag_step, start_ns),
				     t_ns);
	/* t is at or after the first step's start, so some step starts before it */
	PP_ASSERT(slot >= 0 && slot < r->n_steps);
	return slot;
}

/* The range of by_kind holding kind's spans (empty for an odd kind). */
static int kind_lo(const diag_run *r, int kind)
{
	return kind >= 0 && kind < PP_KIND_COUNT ? r->kind_at[kind] : 0;
}

static int kind_hi(const diag_run *r, int kind)
{
	return kind >= 0 && kind < PP_KIND_COUNT ? r->kind_at[kind + 1] : 0;
}

int diag_has_ancestor(const diag_run *r, int i, int kind)
{
	int p = r->parent[i];
	for (int hops = 0; p >= 0 && hops < 512; hops++) {
		if (r->spans.rows[p].kind == kind)
			return 1;
		p = r->parent[p];
	}
	return 0;
}

/* Outermost spans of kind (not under not_under, if >= 0) by the step or
 * slot each falls in (idx_of): how many steps/slots >= from hold one; their
 * count and total time in *n_spans and *t_ns. */
static int outer_with(const diag_run *r, const int *idx_of, int kind, int not_under, int from,
		      int *n_spans, int64_t *t_ns)
{
	unsigned char *seen = calloc((size_t)r->n_steps + 1, 1);
	int with = 0, ns = 0;
	int64_t t = 0;
	for (int j = kind_lo(r, kind); j < kind_hi(r, kind); j++) {
		int i = r->by_kind[j];
		PP_ASSERT(i >= 0 && i < r->spans.n && r->spans.rows[i].kind == kind);
		const pp_span_row *s = &r->spans.rows[i];
		int k = idx_of[i];
		if (s->kind != kind || !r->outer[i] || k < from || k < 0)
			continue;
		if (not_under >= 0 && diag_has_ancestor(r, i, not_under))
			continue;
		ns++;
		t += diag_span_dur(s);
		PP_ASSERT(k < r->n_steps); /* a step or slot index: seen has n_steps + 1 */
		if (seen && !seen[k]) {
			seen[k] = 1;
			with++;
		}
	}
	free(seen);
	if (n_spans)
		*n_spans = ns;
	if (t_ns)
		*t_ns = t;
	return with;
}

int diag_slots_with_ex(const diag_run *r, int kind, int not_under, int from, int *n_spans,
		       int64_t *t_ns)
{
	return outer_with(r, r->slot_of, kind, not_under, from, n_spans, t_ns);
}

int diag_slots_with(const diag_run *r, int kind, int from, int *n_spans, int64_t *t_ns)
{
	return diag_slots_with_ex(r, kind, -1, from, n_spans, t_ns);
}

/* Counting sort of span indices by a per-span kind (out-of-range kinds
 * are left out: no helper asks for them). */
static int *group_by(const int *kind_of, const pp_span_list *l, int at[PP_KIND_COUNT + 1])
{
	int *v = malloc(((size_t)l->n + 1) * sizeof *v);
	if (!v)
		return NULL;
	memset(at, 0, (PP_KIND_COUNT + 1) * sizeof *at);
	for (int i = 0; i < l->n; i++) {
		int k = kind_of ? kind_of[i] : l->rows[i].kind;
		if (k >= 0 && k < PP_KIND_COUNT)
			at[k + 1]++;
	}
	for (int k = 1; k <= PP_KIND_COUNT; k++)
		at[k] += at[k - 1];
	int next[PP_KIND_COUNT];
	memcpy(next, at, sizeof next);
	for (int i = 0; i < l->n; i++) {
		int k = kind_of ? kind_of[i] : l->rows[i].kind;
		if (k >= 0 && k < PP_KIND_COUNT)
			v[next[k]++] = i;
	}
	/* each kind's range filled exactly: the helpers walk at[k]..at[k+1] */
	for (int k = 0; k < PP_KIND_COUNT; k++)
		PP_ASSERT(next[k] == at[k + 1] && at[k + 1] <= l->n);
	return v;
}

/* Span id -> index: a table over the id range when the ids are dense (a
 * run's ids are one block: no sort of 10^7 pairs), else sorted pairs. */
typedef struct id_lookup {
	int64_t lo, range;
	int *dense;
	diag_id_index *map;
	int n;
} id_lookup;

static int id_lookup_init(id_lookup *k, const pp_span_list *l)
{
	memset(k, 0, sizeof *k);
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (int i = 0; i < l->n; i++) {
		if (l->rows[i].id < lo)
			lo = l->rows[i].id;
		if (l->rows[i].id > hi)
			hi = l->rows[i].id;
	}
	if (l->n && hi - lo < 4 * (int64_t)l->n + 64) {
		k->lo = lo;
		k->range = hi - lo + 1;
		k->dense = malloc((size_t)k->range * sizeof *k->dense);
		if (!k->dense)
			return -1;
		memset(k->dense, 0xff, (size_t)k->range * sizeof *k->dense);  /* -1 */
		for (int i = 0; i < l->n; i++)
			k->dense[l->rows[i].id - lo] = i;
		return 0;
	}
	k->map = malloc(((size_t)l->n + 1) * sizeof *k->map);
	if (!k->map)
		return -1;
	for (int i = 0; i < l->n; i++)
		k->map[i] = (diag_id_index){l->rows[i].id, i};
	k->n = l->n;
	diag_id_sort(k->map, k->n);
	return 0;
}

static int id_lookup_find(const id_lookup *k, int64_t id)
{
	if (id <= 0)
		return -1;
	if (k->dense)
		return id >= k->lo && id - k->lo < k->range ? k->dense[id - k->lo] : -1;
	return diag_id_find(k->map, k->n, id);
}

int diag_run_is_torch(pp_store *st, int64_t run_id)
{
	static const char *const keys[] = {"python.adapter.torch", "python.adapter.pytorch_lightning",
					   "python.adapter.lightning"};
	char v[64];
	/* "installed", or "failed: ..." when the adapter broke: the program
	 * imported torch either way */
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (pp_store_run_meta(st, run_id, keys[i], v, sizeof v) == 0)
			return 1;
	return 0;
}

const char *diag_kind_word(const diag_run *r, int kind)
{
	if (r->torch)
		switch (kind) {
		case PP_GRAPH_BUILD:
			return "graph construction";
		case PP_GRADIENT_BUILD:
			return "autograd set-up";
		case PP_SHAPE_INFERENCE:
			return "shape propagation";
		case PP_SESSION_CREATE:
			return "runtime set-up";
		case PP_SESSION_CLOSE:
			return "runtime teardown";
		case PP_VARIABLE_CREATE:
			return "parameter creation";
		case PP_VARIABLE_INIT:
			return "parameter initialisation";
		case PP_OP_REGISTRATION:
			return "operator registration";
		case PP_MEMORY_ALLOC:
			return "memory allocation";
		case PP_RETRACE:
			return "recompilation";
		}
	return pp_kind_name((pp_kind)kind);
}

int diag_run_load(diag_run *r, pp_store *st, int64_t run_id, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->st = st;
	r->run_id = run_id;
	if (pp_store_run(st, run_id, &r->info) != 0) {
		snprintf(err, errlen, "%s: no run %lld", pp_store_path(st), (long long)run_id);
		return -1;
	}
	if (pp_store_run_has(st, run_id, &r->has) != 0) {
		snprintf(err, errlen, "%s: run %lld: cannot read what it holds", pp_store_path(st),
			 (long long)run_id);
		return -1;
	}
	r->torch = diag_run_is_torch(st, run_id);
	/* The spans a default recording keeps one by one: with
	 * --keep-all-spans the leaf ops past PP_SPANS_KEPT_PER_NAME of a name
	 * are left out here too (counted in r->spans_left_out), so the rules
	 * see the same spans in both modes and 10^7 of them are never held
	 * (~600 MB at 5*10^6 rows). */
	if (pp_store_spans_kept(st, run_id, PP_SPANS_KEPT_PER_NAME, &r->spans, &r->spans_left_out) != 0) {
		snprintf(err, errlen, "%s: run %lld: cannot read its phases", pp_store_path(st),
			 (long long)run_id);
		return -1;
	}
	const pp_span_list *l = &r->spans;
	int n = l->n;
	r->self_ns = calloc((size_t)n + 1, sizeof *r->self_ns);
	r->step_of = calloc((size_t)n + 1, sizeof *r->step_of);
	r->slot_of = calloc((size_t)n + 1, sizeof *r->slot_of);
	r->parent = calloc((size_t)n + 1, sizeof *r->parent);
	r->attr_kind = calloc((size_t)n + 1, sizeof *r->attr_kind);
	r->outer = calloc((size_t)n + 1, 1);
	id_lookup map;
	if (!r->self_ns || !r->step_of || !r->slot_of || !r->parent || !r->attr_kind || !r->outer ||
	    id_lookup_init(&map, l) != 0) {
		snprintf(err, errlen, "out of memory loading run %lld", (long long)run_id);
		return -1;
	}
	int64_t last_end = 0;
	for (int i = 0; i < n; i++) {
		r->self_ns[i] = diag_span_dur(&l->rows[i]);
		if (l->rows[i].end_ns > last_end)
			last_end = l->rows[i].end_ns;
	}
	for (int i = 0; i < n; i++) {
		const pp_span_row *s = &l->rows[i];
		int p = id_lookup_find(&map, s->parent_id);
		r->parent[i] = p;
		if (p >= 0 && diag_span_closed(s))
			r->self_ns[p] -= diag_span_dur(s);
		/* Outermost of its kind: no ancestor of the same kind. The walk is
		 * bounded in case a damaged recording has a parent cycle. */
		r->outer[i] = 1;
		for (int hops = 0; p >= 0 && hops < 512; hops++) {
			if (l->rows[p].kind == s->kind) {
				r->outer[i] = 0;
				break;
			}
			p = id_lookup_find(&map, l->rows[p].parent_id);
		}
	}
	free(map.dense);
	free(map.map);
	for (int i = 0; i < n; i++) {
		if (r->self_ns[i] < 0)
			r->self_ns[i] = 0; /* children on other threads may overlap */
		int k = l->rows[i].kind;
		for (int p = r->parent[i], hops = 0; k == PP_SPAN && p >= 0 && hops < 512;
		     p = r->parent[p], hops++)
			if (l->rows[p].kind != PP_SPAN)
				k = l->rows[p].kind;
		r->attr_kind[i] = k;
	}
	r->by_kind = group_by(NULL, l, r->kind_at);
	r->by_attr = group_by(r->attr_kind, l, r->attr_at);
	if (!r->by_kind || !r->by_attr) {
		snprintf(err, errlen, "out of memory loading run %lld", (long long)run_id);
		return -1;
	}
	r->total_ns = r->info.duration_ns > 0 ? r->info.duration_ns : last_end;
	if (last_end > r->total_ns)
		r->total_ns = last_end;
	if (build_steps(r) != 0) {
		snprintf(err, errlen, "%s: run %lld: cannot read its steps", pp_store_path(st),
			 (long long)run_id);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const pp_span_row *s = &l->rows[i];
		r->step_of[i] = -1;
		r->slot_of[i] = -1;
		if (s->kind == PP_STEP || s->kind == PP_FIRST_STEP || !diag_span_closed(s))
			continue;
		r->step_of[i] = diag_step_containing(r, s->start_ns, s->end_ns);
		r->slot_of[i] = diag_slot_of(r, s->start_ns);
	}
	return 0;
}

void diag_run_free(diag_run *r)
{
	pp_span_list_free(&r->spans);
	free(r->self_ns);
	free(r->step_of);
	free(r->slot_of);
	free(r->parent);
	free(r->attr_kind);
	free(r->outer);
	free(r->by_kind);
	free(r->by_attr);
	free(r->steps);
	memset(r, 0, sizeof *r);
}

/* Whether a span in step st (-1: outside any) counts for where
 * (DIAG_IN_STEADY, DIAG_OUTSIDE_STEPS, DIAG_IN_FIRST; anything else: all). */
static int step_in(int st, int where)
{
	switch (where) {
	case DIAG_IN_STEADY: return st > 0;
	case DIAG_OUTSIDE_STEPS: return st < 0;
	case DIAG_IN_FIRST: return st == 0;
	default: return 1;
	}
}

int64_t diag_kind_time(const diag_run *r, int kind, int where, int *count)
{
	int64_t t = 0;
	int c = 0;
	for (int j = kind_lo(r, kind); j < kind_hi(r, kind); j++) {
		int i = r->by_kind[j];
		const pp_span_row *s = &r->spans.rows[i];
		if (s->kind != kind || !r->outer[i] || !diag_span_closed(s))
			continue;
		if (!step_in(r->step_of[i], where))
			continue;
		t += diag_span_dur(s);
		c++;
	}
	if (count)
		*count = c;
	return t;
}

int diag_steps_with(const diag_run *r, int kind, int from, int *n_spans, int64_t *t_ns)
{
	return outer_with(r, r->step_of, kind, -1, from, n_spans, t_ns);
}

int64_t diag_kind_self_time(const diag_run *r, int kind, int where)
{
	int64_t t = 0;
	int lo = kind >= 0 && kind < PP_KIND_COUNT ? r->attr_at[kind] : 0;
	int hi = kind >= 0 && kind < PP_KIND_COUNT ? r->attr_at[kind + 1] : 0;
	for (int j = lo; j < hi; j++) {
		int i = r->by_attr[j];
		if (r->attr_kind[i] != kind || !diag_span_closed(&r->spans.rows[i]))
			continue;
		if (!step_in(r->step_of[i], where))
			continue;
		t += r->self_ns[i];
	}
	return t;
}

int64_t diag_steady_time(const diag_run *r)
{
	int64_t t = 0;
	for (int i = 1; i < r->n_steps; i++)
		t += r->steps[i].end_ns - r->steps[i].start_ns;
	return t;
}

int diag_counter(const diag_run *r, const char *name, diag_series *out)
{
	out->rows = NULL;
	out->n = 0;
	if (pp_store_counter(r->st, r->run_id, name, &out->rows, &out->n) != 0) {
		free(out->rows);
		out->rows = NULL;
		out->n = 0;
		return -1;
	}
	return 0;
}

int diag_series_index(const diag_series *s, int64_t t_ns)
{
	return last_at_or_before(s->rows, s->n, sizeof *s->rows, offsetof(pp_counter_row, ts_ns),
				 t_ns);
}

double diag_series_at(const diag_series *s, int64_t t_ns, double fallback)
{
	int best = diag_series_index(s, t_ns);
	return best >= 0 ? s->rows[best].value : fallback;
}

