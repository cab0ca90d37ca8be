/* model.c — one run as tracks of items for the timeline and the Chrome
 * trace. Spans, op executions and CUDA API calls of a thread are merged
 * and split into lanes: an item goes on the first lane where it nests inside
 * the open items (Perfetto drops slices that overlap partially on a track),
 * so the recorder's own spans stay on lane 0 and only ops timed outside
 * their span move to an extra lane. GPU kernels/copies get one track per
 * (device, stream), as Nsight Systems and Kineto do. */
#include "view_int.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LANES 256

typedef struct raw_item {
	int64_t tid;
	pp_item it;
} raw_item;

typedef struct raw_vec {
	raw_item *v;
	int64_t n, cap;
} raw_vec;

static int raw_push(raw_vec *r, int64_t tid, const pp_item *it)
{
	if (PP_GROW(r->v, r->n + 1, r->cap) != 0)
		return -1;
	r->v[r->n].tid = tid;
	r->v[r->n].it = *it;
	r->n++;
	return 0;
}

static int track_push(pp_track *t, const pp_item *it)
{
	if (PP_GROW(t->items, t->n + 1, t->cap) != 0)
		return -1;
	t->items[t->n++] = *it;
	if (it->depth + 1 > t->depth)
		t->depth = it->depth + 1;
	return 0;
}

static pp_track *model_add_track(pp_model *m)
{
	if (PP_GROW(m->tracks, m->n_tracks + 1, m->cap_tracks) != 0)
		return NULL;
	pp_track *t = &m->tracks[m->n_tracks++];
	memset(t, 0, sizeof *t);
	return t;
}

/* Order: by tid, start; the longer item first so parents precede children;
 * spans before ops before API calls on ties. */
static int cmp_raw(const void *a, const void *b)
{
	const raw_item *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->it.start != y->it.start)
		return x->it.start < y->it.start ? -1 : 1;
	if (x->it.end != y->it.end)
		return x->it.end > y->it.end ? -1 : 1;
	return (int)x->it.cat - (int)y->it.cat;
}

/* The store hands spans over in this order already: a recording of spans
 * alone needs no sort of its 10^7 items. */
static void sort_raw(raw_vec *r)
{
	for (int64_t i = 1; i < r->n; i++)
		if (cmp_raw(&r->v[i - 1], &r->v[i]) > 0) {
			pp_sort(r->v, (size_t)r->n, sizeof *r->v, cmp_raw);
			return;
		}
}

typedef struct grp { int64_t i, j, first; } grp;

static int cmp_grp(const void *a, const void *b)
{
	const grp *x = a, *y = b;
	return (x->first > y->first) - (x->first < y->first);
}

typedef struct load_ctx {
	pp_model *m;
	raw_vec cpu, gpu;
	int64_t run_end;
	int failed;
} load_ctx;

static int op_row(const pp_op_row *row, void *ud)
{
	load_ctx *c = ud;
	pp_item it = {0};
	const char *name = row->name;
	it.cat = PP_CAT_OP;
	it.kind = PP_OP;
	it.name = pp_strtab_add(&c->m->names, name);
	it.start = row->start_ns;
	it.end = row->end_ns < 0 ? it.start : row->end_ns;
	if (it.end < it.start)
		it.end = it.start;
	it.arg = row->step;
	if (raw_push(&c->cpu, row->tid, &it) != 0) {
		c->failed = 1;
		return 1;
	}
	return 0;
}

static int gpu_row(const pp_gpu_row *row, void *ud)
{
	load_ctx *c = ud;
	const char *kind = row->kind;
	if (!kind)
		return 0;
	pp_item it = {0};
	it.start = row->start_ns;
	it.end = row->end_ns;
	if (it.end < it.start)
		it.end = it.start;
	int64_t device = row->device;
	int64_t stream = row->stream;
	it.arg = row->correlation_id;
	const char *name = row->name;
	it.bytes = row->bytes;
	int64_t tid = row->tid;
	const char *copy = row->copy_kind;
	char label[96];
	if (kind[0] == 'm' && kind[1] == 'e') {
		/* copies/memsets are named sync/async by the collector: say what moved */
		snprintf(label, sizeof label, "%s%s%s%s%s", kind, copy && *copy ? " " : "", copy ? copy : "",
			 name && *name ? " " : "", name ? name : "");
		name = label;
	}
	if (!name || !*name)
		name = kind;
	it.name = pp_strtab_add(&c->m->names, name);
	int rc;
	if (!strcmp(kind, "kernel") || !strcmp(kind, "memcpy") || !strcmp(kind, "memset")) {
		it.cat = PP_CAT_GPU;
		it.kind = kind[0] == 'k' ? 0 : (kind[3] == 'c' ? 1 : 2);
		/* GPU tracks are keyed by (device, stream) packed into the tid slot. */
		rc = raw_push(&c->gpu, (device << 32) | (stream & 0xffffffff), &it);
	} else if (!strcmp(kind, "runtime") || !strcmp(kind, "driver") || !strcmp(kind, "sync")) {
		it.cat = PP_CAT_GPU_API;
		rc = raw_push(&c->cpu, tid, &it);
	} else {
		return 0; /* markers, overhead: not timeline items */
	}
	c->m->has_gpu = 1;
	if (rc != 0) {
		c->failed = 1;
		return 1;
	}
	return 0;
}

/* Distributes one tid's sorted items over lanes (tracks). */
static int place_items(pp_model *m, const raw_item *v, int64_t n, int64_t tid, const char *tname,
		       int gpu, int64_t *dropped)
{
	int first_track = m->n_tracks;
	int n_lanes = 0;
	int64_t *stacks[MAX_LANES] = {0};
	int depth[MAX_LANES] = {0}, cap[MAX_LANES] = {0};
	int rc = 0;
	for (int64_t i = 0; i < n && rc == 0; i++) {
		pp_item it = v[i].it;
		int lane = -1;
		for (int l = 0; l < n_lanes; l++) {
			while (depth[l] > 0 && stacks[l][depth[l] - 1] <= it.start)
				depth[l]--;
			if (depth[l] == 0 || it.end <= stacks[l][depth[l] - 1]) {
				lane = l;
				break;
			}
		}
		if (lane < 0) {
			if (n_lanes == MAX_LANES) {
				(*dropped)++;
				continue;
			}
			lane = n_lanes++;
			pp_track *t = model_add_track(m);
			if (!t) {
				rc = -1;
				break;
			}
			t->tid = tid;
			t->gpu = gpu;
			t->lane = lane;
			if (gpu) {
				t->device = tid >> 32;
				t->stream = tid & 0xffffffff;
				snprintf(t->name, sizeof t->name, "GPU %lld stream %lld%s",
					 (long long)t->device, (long long)t->stream, lane ? " (overlap)" : "");
			} else if (lane == 0) {
				snprintf(t->name, sizeof t->name, "%s", tname);
			} else {
				snprintf(t->name, sizeof t->name, "%s +%d", tname, lane);
			}
		}
		if (PP_GROW(stacks[lane], depth[lane] + 1, cap[lane]) != 0) {
			rc = -1;
			break;
		}
		it.depth = (uint16_t)(depth[lane] < 65535 ? depth[lane] : 65535);
		stacks[lane][depth[lane]++] = it.end;
		if (track_push(&m->tracks[first_track + lane], &it) != 0)
			rc = -1;
	}
	for (int l = 0; l < n_lanes; l++)
		free(stacks[l]);
	return rc;
}

static int model_load(pp_store *st, const pp_run_info *run, pp_model *m, int kept, char *err, size_t errlen);

int pp_model_load(pp_store *st, const pp_run_info *run, pp_model *m, char *err, size_t errlen)
{
	return model_load(st, run, m, 0, err, errlen);
}

int pp_model_load_kept(pp_store *st, const pp_run_info *run, pp_model *m, char *err, size_t errlen)
{
	return model_load(st, run, m, 1, err, errlen);
}

int pp_model_load_no_spans(pp_store *st, const pp_run_info *run, pp_model *m, char *err, size_t errlen)
{
	return model_load(st, run, m, 2, err, errlen);
}

static int model_load(pp_store *st, const pp_run_info *run, pp_model *m, int kept, char *err, size_t errlen)
{
	memset(m, 0, sizeof *m);
	load_ctx c = {.m = m, .run_end = run->duration_ns};
	pp_thread_row *thr = NULL;
	int n_thr = 0;
	pp_span_list sl = {0};
	int rc = -1;
	if (pp_store_threads(st, run->id, &thr, &n_thr) != 0) {
		snprintf(err, errlen, "%s: cannot read threads of run %lld", pp_store_path(st), (long long)run->id);
		goto out;
	}
	if (kept != 2 && (kept ? pp_store_spans_kept(st, run->id, PP_SPANS_KEPT_PER_NAME, &sl, &m->left_out)
			       : pp_store_spans(st, run->id, -1, &sl)) != 0) {
		snprintf(err, errlen, "%s: cannot read spans of run %lld", pp_store_path(st), (long long)run->id);
		goto out;
	}
	int64_t t_end = run->duration_ns > 0 ? run->duration_ns : 0;
	for (int i = 0; i < sl.n; i++)
		if (sl.rows[i].end_ns > t_end)
			t_end = sl.rows[i].end_ns;
	for (int i = 0; i < sl.n; i++) {
		const pp_span_row *s = &sl.rows[i];
		pp_item it = {0};
		it.cat = PP_CAT_SPAN;
		it.kind = (uint8_t)s->kind;
		it.name = pp_strtab_add(&m->names, s->name && *s->name ? s->name : pp_kind_name((pp_kind)s->kind));
		it.start = s->start_ns;
		it.end = s->end_ns;
		if (it.end < 0) {   /* still open when the run ended */
			it.end = t_end > it.start ? t_end : it.start;
			m->open_spans++;
		}
		if (it.end < it.start)   /* a corrupt row: draw it as an instant */
			it.end = it.start;
		it.arg = s->step;
		if (raw_push(&c.cpu, s->tid, &it) != 0)
			goto oom;
	}
	pp_span_list_free(&sl);   /* the items hold what is needed: 10^7 rows less at the peak */
	if (pp_store_each_op(st, run->id, op_row, &c) != 0 || c.failed)
		goto qfail;
	if (pp_store_each_gpu(st, run->id, 0, gpu_row, &c) != 0 || c.failed)
		goto qfail;

	sort_raw(&c.cpu);
	sort_raw(&c.gpu);
	int64_t dropped = 0;
	/* Threads in order of first activity (the main thread first). */
	int n_groups = 0, cap_groups = 0;
	grp *groups = NULL;
	for (int64_t i = 0; i < c.cpu.n;) {
		int64_t j = i;
		while (j < c.cpu.n && c.cpu.v[j].tid == c.cpu.v[i].tid)
			j++;
		if (PP_GROW(groups, n_groups + 1, cap_groups) != 0) {
			free(groups);
			goto oom;
		}
		groups[n_groups++] = (grp){i, j, c.cpu.v[i].it.start};
		i = j;
	}
	pp_sort(groups, (size_t)n_groups, sizeof *groups, cmp_grp);
	for (int g = 0; g < n_groups; g++) {
		int64_t i = groups[g].i, j = groups[g].j;
		char tname[96];
		const char *nm = NULL;
		for (int k = 0; k < n_thr; k++)
			if (thr[k].tid == c.cpu.v[i].tid && thr[k].name[0])
				nm = thr[k].name;
		if (nm)
			snprintf(tname, sizeof tname, "%s (%lld)", nm, (long long)c.cpu.v[i].tid);
		else
			snprintf(tname, sizeof tname, "thread %lld", (long long)c.cpu.v[i].tid);
		if (place_items(m, c.cpu.v + i, j - i, c.cpu.v[i].tid, tname, 0, &dropped) != 0) {
			free(groups);
			goto oom;
		}
	}
	free(groups);
	for (int64_t i = 0; i < c.gpu.n;) {
		int64_t j = i;
		while (j < c.gpu.n && c.gpu.v[j].tid == c.gpu.v[i].tid)
			j++;
		if (place_items(m, c.gpu.v + i, j - i, c.gpu.v[i].tid, "", 1, &dropped) != 0)
			goto oom;
		i = j;
	}
	for (int t = 0; t < m->n_tracks; t++) {
		m->n_items += m->tracks[t].n;
		for (int i = 0; i < m->tracks[t].n; i++)
			if (m->tracks[t].items[i].end > t_end)
				t_end = m->tracks[t].items[i].end;
	}
	m->t_end = t_end;
	m->dropped = dropped;
	rc = 0;
	goto out;
qfail:
	snprintf(err, errlen, "%s: cannot read the timeline of run %lld: %s", pp_store_path(st),
		 (long long)run->id, pp_store_error(st));
	goto out;
oom:
	snprintf(err, errlen, "%s: out of memory loading run %lld", pp_store_path(st), (long long)run->id);
out:
	free(c.cpu.v);
	free(c.gpu.v);
	free(thr);
	pp_span_list_free(&sl);
	if (rc != 0)
		pp_model_free(m);
	return rc;
}

void pp_model_free(pp_model *m)
{
	for (int t = 0; t < m->n_tracks; t++)
		free(m->tracks[t].items);
	free(m->tracks);
	pp_strtab_free(&m->names);
	memset(m, 0, sizeof *m);
}
