/*
 * tape.c — eager execution with a gradient tape (tf.GradientTape).
 *
 * Ops run at once through flow_execute. While a tape is active on the
 * thread, every op that touches a watched tensor (or an output of a
 * recorded op) is recorded: type, attrs, inputs, outputs. The backward pass
 * reuses the graph-mode gradient functions: for each recorded op it builds a
 * small graph (placeholders for the inputs and output gradients, the op,
 * its gradient ops), compiles it once per (op, attrs, input signature) and
 * caches it, as TF's eager runtime caches kernels per signature. Later steps
 * only run cached plans — per-op dispatch, no tracing.
 *
 * Uses core.h to read the attrs of an eager op description (flow.h has no
 * accessor for them).
 */
#include "train_internal.h"
#include "pp_grow.h"
#include "core.h"
#include "phaseprof.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tape_rec {
	char *type;
	flow_attr_list attrs;
	int n_in, n_out;
	flow_tensor **in, **out;
	int n_groups;
	int *group_size;
} tape_rec;

struct flow_tape {
	tape_rec *recs;
	int n, cap;
	flow_tensor **tracked;     /* watched tensors and outputs of recorded ops */
	int n_tr, cap_tr;
};

static _Thread_local flow_tape *active;

/* ---- grad-graph cache (process-wide) ---- */

typedef struct gentry {
	unsigned char *key;
	size_t klen;
	flow_graph *g;
	flow_session *s;
	int n_in, n_out;
	flow_output *ph_in;
	flow_output *ph_dy;        /* {NULL} where no gradient flows in */
	int n_fetch;
	int *fetch_in;             /* input index of each fetched dx */
	flow_output *fetch;
} gentry;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static gentry **cache;
static int n_cache, cap_cache;
static pp_hash cache_index;    /* key bytes -> index in cache[] */

static void gentry_free(gentry *e)
{
	if (!e)
		return;
	flow_session_free(e->s);
	flow_graph_free(e->g);
	free(e->key);
	free(e->ph_in);
	free(e->ph_dy);
	free(e->fetch_in);
	free(e->fetch);
	free(e);
}

void flow_tape_cache_clear(void)
{
	pthread_mutex_lock(&cache_mu);
	for (int i = 0; i < n_cache; i++)
		gentry_free(cache[i]);
	free(cache);
	cache = NULL;
	n_cache = cap_cache = 0;
	pp_hash_free(&cache_index);
	pthread_mutex_unlock(&cache_mu);
}

int flow_tape_cache_size(void)
{
	pthread_mutex_lock(&cache_mu);
	int n = n_cache;
	pthread_mutex_unlock(&cache_mu);
	return n;
}

/* ---- tape ---- */

flow_tape *flow_tape_new(void)
{
	if (flow_train_init(NULL))
		return NULL;
	return calloc(1, sizeof(flow_tape));
}

static void rec_free(tape_rec *r)
{
	free(r->type);
	flow__attrs_free(&r->attrs);
	for (int i = 0; i < r->n_in; i++)
		flow_tensor_unref(r->in[i]);
	for (int i = 0; i < r->n_out; i++)
		flow_tensor_unref(r->out[i]);
	free(r->in);
	free(r->out);
	free(r->group_size);
}

static void tape_reset(flow_tape *tp)
{
	for (int i = 0; i < tp->n; i++)
		rec_free(&tp->recs[i]);
	tp->n = 0;
	for (int i = 0; i < tp->n_tr; i++)
		flow_tensor_unref(tp->tracked[i]);
	tp->n_tr = 0;
}

void flow_tape_free(flow_tape *tp)
{
	if (!tp)
		return;
	if (active == tp)
		active = NULL;
	tape_reset(tp);
	free(tp->recs);
	free(tp->tracked);
	free(tp);
}

static int tracked(const flow_tape *tp, const flow_tensor *t)
{
	for (int i = tp->n_tr - 1; i >= 0; i--)
		if (tp->tracked[i] == t)
			return 1;
	return 0;
}

static int track(flow_tape *tp, flow_tensor *t)
{
	if (tracked(tp, t))
		return 0;
	if (PP_GROW(tp->tracked, tp->n_tr + 1, tp->cap_tr) != 0)
		return -1;
	tp->tracked[tp->n_tr++] = flow_tensor_ref(t);
	return 0;
}

void flow_tape_watch(flow_tape *tp, flow_tensor *t)
{
	if (tp && t)
		track(tp, t);
}

void flow_tape_begin(flow_tape *tp)
{
	active = tp;
}

void flow_tape_end(flow_tape *tp)
{
	if (active == tp)
		active = NULL;
}

int flow_tape_execute(flow_op_desc *d, flow_tensor **outputs, int n_out, flow_status *st)
{
	flow_tape *tp = active;
	int rec = 0;
	if (tp && d && !d->g)
		for (int i = 0; i < d->n_in && !rec; i++)
			rec = tracked(tp, d->tin[i]);
	if (!rec)
		return flow_execute(d, outputs, n_out, st);
	if (PP_GROW(tp->recs, tp->n + 1, tp->cap) != 0) {
		flow__desc_free(d);
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "tape: out of memory");
		return -1;
	}
	tape_rec *r = &tp->recs[tp->n];
	memset(r, 0, sizeof *r);
	r->type = strdup(d->type);
	r->n_in = d->n_in;
	r->in = calloc((size_t)d->n_in + 1, sizeof *r->in);
	r->n_groups = d->n_groups;
	r->group_size = malloc(sizeof *r->group_size * ((size_t)d->n_groups + 1));
	r->out = calloc((size_t)n_out + 1, sizeof *r->out);
	if (!r->type || !r->in || !r->group_size || !r->out ||
	    flow__attrs_copy(&r->attrs, &d->attrs)) {
		rec_free(r);
		flow__desc_free(d);
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "tape: out of memory");
		return -1;
	}
	memcpy(r->group_size, d->group_size, sizeof *r->group_size * (size_t)d->n_groups);
	for (int i = 0; i < d->n_in; i++)
		r->in[i] = flow_tensor_ref(d->tin[i]);
	int rc = flow_execute(d, outputs, n_out, st);
	if (rc) {
		rec_free(r);
		return rc;
	}
	r->n_out = n_out;
	for (int i = 0; i < n_out; i++) {
		r->out[i] = flow_tensor_ref(outputs[i]);
		if (track(tp, outputs[i])) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "tape: out of memory");
			tp->n++;
			return -1;
		}
	}
	tp->n++;
	return 0;
}

/* ---- backward ---- */

static void key_shape(flow_buf *b, const flow_tensor *t)
{
	flow__buf_u32(b, (uint32_t)flow_tensor_dtype(t));
	flow__buf_u32(b, (uint32_t)flow_tensor_ndim(t));
	for (int i = 0; i < flow_tensor_ndim(t); i++)
		flow__buf_u64(b, (uint64_t)flow_tensor_dim(t, i));
}

static gentry *build_entry(const tape_rec *r, flow_tensor *const *dys, flow_buf *key,
			   flow_status *st)
{
	flow_train_grad_fn fn = train_grad_lookup(r->type);
	if (!fn) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"tape: no gradient defined for op '%s' recorded on the tape", r->type);
		return NULL;
	}
	const flow_registered_op *reg = flow_registry_lookup(r->type, st);
	if (!reg)
		return NULL;
	gentry *e = calloc(1, sizeof *e);
	if (!e)
		goto oom;
	e->klen = key->n;
	e->key = malloc(key->n);
	e->n_in = r->n_in;
	e->n_out = r->n_out;
	e->ph_in = calloc((size_t)r->n_in + 1, sizeof *e->ph_in);
	e->ph_dy = calloc((size_t)r->n_out + 1, sizeof *e->ph_dy);
	e->fetch_in = calloc((size_t)r->n_in + 1, sizeof *e->fetch_in);
	e->fetch = calloc((size_t)r->n_in + 1, sizeof *e->fetch);
	e->g = flow_graph_new();
	flow_output *dy = calloc((size_t)r->n_out + 1, sizeof *dy);
	flow_output *dx = calloc((size_t)r->n_in + 1, sizeof *dx);
	if (!e->key || !e->ph_in || !e->ph_dy || !e->fetch_in || !e->fetch || !e->g || !dy || !dx) {
		free(dy);
		free(dx);
		goto oom;
	}
	memcpy(e->key, key->p, key->n);
	int rc = 0;
	for (int i = 0; i < r->n_in && !rc; i++) {
		flow_shape s = flow_tensor_shape(r->in[i]);
		e->ph_in[i] = flow_placeholder(e->g, NULL, flow_tensor_dtype(r->in[i]), &s, st);
		rc = e->ph_in[i].op ? 0 : -1;
	}
	flow_op *op = NULL;
	if (!rc) {
		flow_op_desc *d = flow_op_new(e->g, r->type, "forward");
		/* Same grouping as the eager call: lists by the op's input spec. */
		int k = 0;
		for (int gi = 0; gi < r->n_groups; gi++) {
			int list = gi < reg->n_inputs && reg->inputs[gi].list_attr >= 0;
			if (list)
				flow_op_add_input_list(d, e->ph_in + k, r->group_size[gi]);
			else
				flow_op_add_input(d, e->ph_in[k]);
			k += r->group_size[gi];
		}
		flow__attrs_free(&d->attrs);
		if (flow__attrs_copy(&d->attrs, &r->attrs))
			flow_status_set(&d->err, FLOW_RESOURCE_EXHAUSTED, "tape: out of memory");
		op = flow_op_finish(d, st);
		rc = op ? 0 : -1;
	}
	for (int i = 0; i < r->n_out && !rc; i++) {
		if (!dys[i])
			continue;
		flow_shape s = flow_tensor_shape(dys[i]);
		e->ph_dy[i] = flow_placeholder(e->g, NULL, flow_tensor_dtype(dys[i]), &s, st);
		dy[i] = e->ph_dy[i];
		rc = e->ph_dy[i].op ? 0 : -1;
	}
	if (!rc)
		rc = fn(e->g, op, dy, dx, st);
	for (int i = 0; i < r->n_in && !rc; i++) {
		flow_dtype dt = flow_tensor_dtype(r->in[i]);
		if (dx[i].op && (dt == FLOW_F32 || dt == FLOW_F64)) {
			e->fetch_in[e->n_fetch] = i;
			e->fetch[e->n_fetch++] = dx[i];
		}
	}
	free(dy);
	free(dx);
	if (!rc) {
		flow_session_options so = {0};
		so.op_timing = -1;
		so.no_step_phase = 1;
		e->s = flow_session_new(e->g, &so, st);
		rc = e->s ? 0 : -1;
	}
	if (rc) {
		if (flow_status_ok(st))
			flow_status_set(st, FLOW_INTERNAL, "tape: gradient of '%s' failed", r->type);
		gentry_free(e);
		return NULL;
	}
	return e;
oom:
	gentry_free(e);
	flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "tape: out of memory");
	return NULL;
}

static gentry *lookup_entry(const tape_rec *r, flow_tensor *const *dys, flow_status *st)
{
	flow_buf key = {0};
	flow__buf_str(&key, r->type);
	flow__attrs_serialize(&r->attrs, &key);
	flow__buf_u32(&key, (uint32_t)r->n_groups);
	for (int i = 0; i < r->n_groups; i++)
		flow__buf_u32(&key, (uint32_t)r->group_size[i]);
	for (int i = 0; i < r->n_in; i++)
		key_shape(&key, r->in[i]);
	for (int i = 0; i < r->n_out; i++) {
		flow__buf_u32(&key, dys[i] != NULL);
		if (dys[i])
			key_shape(&key, dys[i]);
	}
	if (key.oom) {
		free(key.p);
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "tape: out of memory");
		return NULL;
	}
	uint32_t h = pp_hash_mem(key.p, key.n);
	gentry *e = NULL;
	pthread_mutex_lock(&cache_mu);
	for (uint32_t it = 0, i; !e && pp_hash_next(&cache_index, h, &it, &i);)
		if (cache[i]->klen == key.n && !memcmp(cache[i]->key, key.p, key.n))
			e = cache[i];
	if (!e) {
		e = build_entry(r, dys, &key, st);
		if (e && (PP_GROW(cache, n_cache + 1, cap_cache) ||
			  pp_hash_add(&cache_index, h, (uint32_t)n_cache))) {
			gentry_free(e);
			e = NULL;
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "tape: out of memory");
		}
		if (e)
			cache[n_cache++] = e;
	}
	pthread_mutex_unlock(&cache_mu);
	free(key.p);
	return e;
}

/* Gradient map: tensor (by identity) -> accumulated gradient. */
typedef struct gmap {
	struct gslot {
		const flow_tensor *k;
		flow_tensor *v;
	} *e;
	int n, cap;
	pp_hash index;     /* tensor address -> index in e[] */
} gmap;

static flow_tensor **gmap_slot(gmap *m, const flow_tensor *t, int create)
{
	uint32_t h = pp_hash_u64((uint64_t)(uintptr_t)t);
	for (uint32_t it = 0, i; pp_hash_next(&m->index, h, &it, &i);)
		if (m->e[i].k == t)
			return &m->e[i].v;
	if (!create || PP_GROW(m->e, m->n + 1, m->cap) || pp_hash_add(&m->index, h, (uint32_t)m->n))
		return NULL;
	m->e[m->n] = (struct gslot){t, NULL};
	return &m->e[m->n++].v;
}

/* *slot += g (a new tensor: fetched gradients may share buffers with feeds). */
static int accumulate(flow_tensor **slot, flow_tensor *g, flow_status *st)
{
	if (!*slot) {
		*slot = flow_tensor_ref(g);
		return 0;
	}
	if (flow_tensor_nelem(*slot) != flow_tensor_nelem(g) || flow_tensor_dtype(g) != FLOW_F32) {
		flow_status_set(st, FLOW_INTERNAL, "tape: gradient shapes disagree while summing");
		return -1;
	}
	flow_tensor *s = flow_tensor_copy(*slot, st);
	if (!s)
		return -1;
	float *p = flow_tensor_data(s);
	const float *q = flow_tensor_cdata(g);
	for (int64_t i = 0; i < flow_tensor_nelem(s); i++)
		p[i] += q[i];
	flow_tensor_unref(*slot);
	*slot = s;
	return 0;
}

int flow_tape_gradient(flow_tape *tp, flow_tensor *target, flow_tensor *const *sources, int n,
		       flow_tensor **dsources, flow_status *st)
{
	for (int i = 0; i < n; i++)
		dsources[i] = NULL;
	if (active == tp)
		active = NULL;   /* the backward pass is not recorded */
	gmap m = {0};
	int rc = -1;
	flow_tensor **dys = NULL, **dxs = NULL;
	flow_tensor **feed_v = NULL;
	flow_output *feed_o = NULL;
	if (!target || flow_tensor_dtype(target) != FLOW_F32) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "tape: target must be an f32 tensor");
		goto out;
	}
	int maxio = 1;
	for (int i = 0; i < tp->n; i++) {
		maxio = tp->recs[i].n_in > maxio ? tp->recs[i].n_in : maxio;
		maxio = tp->recs[i].n_out > maxio ? tp->recs[i].n_out : maxio;
	}
	dys = calloc((size_t)maxio, sizeof *dys);
	dxs = calloc((size_t)maxio, sizeof *dxs);
	feed_v = calloc(2 * (size_t)maxio, sizeof *feed_v);
	feed_o = calloc(2 * (size_t)maxio, sizeof *feed_o);
	flow_tensor **seed = gmap_slot(&m, target, 1);
	if (!dys || !dxs || !feed_v || !feed_o || !seed) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "tape: out of memory");
		goto out;
	}
	flow_shape ts = flow_tensor_shape(target);
	*seed = flow_tensor_new(FLOW_F32, ts.ndim, ts.dims, st);
	if (!*seed)
		goto out;
	for (int64_t i = 0; i < flow_tensor_nelem(*seed); i++)
		((float *)flow_tensor_data(*seed))[i] = 1.0f;
	for (int ri = tp->n - 1; ri >= 0; ri--) {
		tape_rec *r = &tp->recs[ri];
		int any = 0;
		for (int k = 0; k < r->n_out; k++) {
			flow_tensor **s = gmap_slot(&m, r->out[k], 0);
			dys[k] = s ? *s : NULL;
			any |= dys[k] != NULL;
		}
		if (!any)
			continue;
		gentry *e = lookup_entry(r, dys, st);
		if (!e)
			goto out;
		if (!e->n_fetch)
			continue;
		int nf = 0;
		for (int i = 0; i < r->n_in; i++) {
			feed_o[nf] = e->ph_in[i];
			feed_v[nf++] = r->in[i];
		}
		for (int k = 0; k < r->n_out; k++)
			if (dys[k]) {
				feed_o[nf] = e->ph_dy[k];
				feed_v[nf++] = dys[k];
			}
		if (flow_session_run(e->s, feed_o, feed_v, nf, e->fetch, dxs, e->n_fetch, NULL, 0, st))
			goto out;
		int bad = 0;
		for (int f = 0; f < e->n_fetch; f++) {
			flow_tensor **s = bad ? NULL : gmap_slot(&m, r->in[e->fetch_in[f]], 1);
			if (!bad && (!s || accumulate(s, dxs[f], st)))
				bad = 1;
			flow_tensor_unref(dxs[f]);
			dxs[f] = NULL;
		}
		if (bad) {
			if (flow_status_ok(st))
				flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "tape: out of memory");
			goto out;
		}
	}
	for (int i = 0; i < n; i++) {
		flow_tensor **s = gmap_slot(&m, sources[i], 0);
		if (s && *s) {
			dsources[i] = flow_tensor_ref(*s);
		} else {
			flow_shape ss = flow_tensor_shape(sources[i]);
			dsources[i] = flow_tensor_new(flow_tensor_dtype(sources[i]), ss.ndim, ss.dims, st);
			if (!dsources[i])
				goto out;
		}
	}
	rc = 0;
out:
	if (rc)
		for (int i = 0; i < n; i++) {
			flow_tensor_unref(dsources[i]);
			dsources[i] = NULL;
		}
	for (int i = 0; i < m.n; i++)
		flow_tensor_unref(m.e[i].v);
	free(m.e);
	pp_hash_free(&m.index);
	free(dys);
	free(dxs);
	free(feed_v);
	free(feed_o);
	tape_reset(tp);
	return rc;
}

/* ---- eager shorthands ---- */

flow_tensor *flow_eager_matmul(flow_tensor *a, flow_tensor *b, int ta, int tb, flow_status *st)
{
	flow_op_desc *d = flow_eager_new("MatMul");
	flow_op_add_tensor(d, a);
	flow_op_add_tensor(d, b);
	flow_op_set_attr_bool(d, "transpose_a", ta);
	flow_op_set_attr_bool(d, "transpose_b", tb);
	flow_tensor *o = NULL;
	return flow_tape_execute(d, &o, 1, st) ? NULL : o;
}

flow_tensor *flow_eager_unary(const char *op_type, flow_tensor *x, flow_status *st)
{
	flow_op_desc *d = flow_eager_new(op_type);
	flow_op_add_tensor(d, x);
	flow_tensor *o = NULL;
	return flow_tape_execute(d, &o, 1, st) ? NULL : o;
}

flow_tensor *flow_eager_binary(const char *op_type, flow_tensor *a, flow_tensor *b,
			       flow_status *st)
{
	flow_op_desc *d = flow_eager_new(op_type);
	flow_op_add_tensor(d, a);
	flow_op_add_tensor(d, b);
	flow_tensor *o = NULL;
	return flow_tape_execute(d, &o, 1, st) ? NULL : o;
}

flow_tensor *flow_eager_initializer(const char *kind, int ndim, const int64_t *dims,
				    uint64_t seed, flow_status *st)
{
	if (flow_train_init(st))
		return NULL;
	flow_shape s = flow_shape_make(ndim, dims);
	char phase[128];
	snprintf(phase, sizeof phase, "%s:eager", kind ? kind : "glorot_uniform");
	flow_op_desc *d = flow_eager_new("Initializer");
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_shape(d, "shape", &s);
	flow_op_set_attr_string(d, "kind", kind ? kind : "glorot_uniform");
	flow_op_set_attr_int(d, "seed", (int64_t)seed);
	flow_op_set_attr_string(d, "phase", phase);
	flow_tensor *o = NULL;
	return flow_execute(d, &o, 1, st) ? NULL : o;
}

flow_tensor *flow_eager_sparse_xent_mean(flow_tensor *logits, flow_tensor *labels,
					 flow_status *st)
{
	flow_op_desc *d = flow_eager_new("SparseSoftmaxCrossEntropyWithLogits");
	flow_op_add_tensor(d, logits);
	flow_op_add_tensor(d, labels);
	flow_tensor *o[2] = {NULL, NULL};
	if (flow_tape_execute(d, o, 2, st))
		return NULL;
	flow_tensor *mean = flow_eager_unary("_MeanAll", o[0], st);
	flow_tensor_unref(o[0]);
	flow_tensor_unref(o[1]);
	return mean;
}
