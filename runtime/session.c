/*
 * session.c — sessions: per-signature compile (prune, constant folding,
 * CSE, MatMul+BiasAdd+activation fusion, kernel selection, memory planning
 * from tensor lifetimes), the plan cache (in memory per signature, and on
 * disk keyed by graph hash + signature), re-validation after the graph
 * grew, and the executor.
 */
#include "core.h"
#include "phaseprof.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

flow_tensor *flow__tensor_alloc(flow_allocator *a, flow_dtype dt, int ndim, const int64_t *dims,
				int zero, flow_status *st);

enum { PN_KERNEL = 0, PN_PLACEHOLDER, PN_VARIABLE, PN_CONST };

typedef struct pnode {
	char *name;
	flow_op *op;                 /* graph node it came from (the last one for fused nodes) */
	const flow_registered_op *reg;
	flow_attr_list attrs;
	int kind;
	int n_in;
	int *in_node, *in_idx;
	unsigned char *in_ref;
	int n_ctrl;
	int *ctrl;
	int n_out;
	flow_dtype *out_dt;
	const flow_kernel_def *kernel;
	flow_dtype kernel_dt;
	int feed;                    /* placeholders: index into the run's feeds */
	int var_id;                  /* Variable nodes: graph op id of the variable */
	int *in_var;                 /* per input: variable op id for Ref inputs, else -1 */
	int dead;
	int out_base;
	int n_release;
	int *release;
	unsigned char *in_dead;
} pnode;

typedef struct plan {
	char *key;
	int n;
	pnode *nodes;
	int n_slots;
	int n_fetch;
	int *fetch_slot;
	int n_feed;
	int max_in, max_out;
	flow_tensor **values;        /* scratch for one run */
	flow_tensor **ins, **outs;
	flow_tensor ***vslots;
	int pruned, folded, cse, fused, inplace;
	uint64_t hash_key;
	struct plan *next;           /* hash chain */
} plan;

struct flow_session {
	flow_graph *g;
	flow_allocator *alloc;
	int op_timing;
	char *plan_dir;
	int no_step_phase;
	int disable;
	int closed;
	pthread_mutex_t mu;
	uint64_t seen_version;
	int seen_ops;
	plan **buckets;
	int n_buckets, n_plans;
	flow_tensor **vars;          /* by graph op id */
	uint64_t *state;             /* by graph op id */
	int cap_ids;
	flow_session_stats st;
};

/* ---- plan memory ---- */
static void pnode_clear(pnode *p)
{
	free(p->name);
	flow__attrs_free(&p->attrs);
	free(p->in_node);
	free(p->in_idx);
	free(p->in_ref);
	free(p->ctrl);
	free(p->out_dt);
	free(p->in_var);
	free(p->release);
	free(p->in_dead);
	memset(p, 0, sizeof *p);
}

static void plan_free(plan *pl)
{
	if (!pl)
		return;
	for (int i = 0; i < pl->n; i++)
		pnode_clear(&pl->nodes[i]);
	free(pl->nodes);
	free(pl->fetch_slot);
	free(pl->values);
	free(pl->ins);
	free(pl->outs);
	free(pl->vslots);
	free(pl->key);
	free(pl);
}

static void drop_plans(flow_session *s)
{
	for (int b = 0; b < s->n_buckets; b++) {
		plan *p = s->buckets[b];
		while (p) {
			plan *n = p->next;
			plan_free(p);
			p = n;
		}
		s->buckets[b] = NULL;
	}
	s->n_plans = 0;
}

static int ensure_ids(flow_session *s)
{
	int need = s->g->n_ops;
	if (need <= s->cap_ids)
		return 0;
	int nc = s->cap_ids ? s->cap_ids : 64;
	while (nc < need)
		nc *= 2;
	flow_tensor **nv = realloc(s->vars, sizeof *nv * (size_t)nc);
	if (!nv)
		return -1;
	s->vars = nv;
	uint64_t *ns = realloc(s->state, sizeof *ns * (size_t)nc);
	if (!ns)
		return -1;
	s->state = ns;
	memset(s->vars + s->cap_ids, 0, sizeof *nv * (size_t)(nc - s->cap_ids));
	memset(s->state + s->cap_ids, 0, sizeof *ns * (size_t)(nc - s->cap_ids));
	s->cap_ids = nc;
	return 0;
}

/* ---- sessions ---- */
flow_session *flow_session_new(flow_graph *g, const flow_session_options *opts, flow_status *st)
{
	flow__ensure_init();
	PP_PHASE(PP_SESSION_CREATE, "session_create");
	if (!g) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "flow_session_new: graph is NULL");
		return NULL;
	}
	flow_session *s = calloc(1, sizeof *s);
	if (!s) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "session: out of memory");
		return NULL;
	}
	s->g = g;
	s->alloc = opts && opts->allocator ? opts->allocator : flow_default_allocator();
	s->op_timing = opts && opts->op_timing ? opts->op_timing > 0 : flow__op_timing_default;
	const char *dir = opts && opts->plan_cache_dir ? opts->plan_cache_dir : flow__plan_dir_default;
	s->plan_dir = dir && *dir ? strdup(dir) : NULL;
	s->no_step_phase = opts ? opts->no_step_phase : 0;
	s->disable = opts ? opts->disable_passes : 0;
	pthread_mutex_init(&s->mu, NULL);
	s->n_buckets = 64;
	s->buckets = calloc((size_t)s->n_buckets, sizeof *s->buckets);
	if (!s->buckets || ensure_ids(s)) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "session: out of memory");
		s->closed = 1; /* never counted on the graph */
		flow_session_free(s);
		return NULL;
	}
	flow__graph_attach(g);
	return s;
}

int flow_session_close(flow_session *s, flow_status *st)
{
	if (!s)
		return 0;
	if (s->closed) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "session is already closed");
		return -1;
	}
	PP_PHASE(PP_SESSION_CLOSE, "session_close");
	pthread_mutex_lock(&s->mu);
	drop_plans(s);
	for (int i = 0; i < s->cap_ids; i++) {
		flow_tensor_unref(s->vars[i]);
		s->vars[i] = NULL;
	}
	s->closed = 1;
	flow_graph *g = s->g;
	s->g = NULL;
	pthread_mutex_unlock(&s->mu);
	flow_allocator_record(s->alloc);
	flow__graph_detach(g);
	return 0;
}

void flow_session_free(flow_session *s)
{
	if (!s)
		return;
	if (!s->closed && s->buckets)
		flow_session_close(s, NULL);
	drop_plans(s);
	free(s->buckets);
	if (s->vars)
		for (int i = 0; i < s->cap_ids; i++)
			flow_tensor_unref(s->vars[i]);
	free(s->vars);
	free(s->state);
	free(s->plan_dir);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void flow_session_stats_get(const flow_session *s, flow_session_stats *out)
{
	*out = s->st;
}

flow_tensor *flow_session_variable_value(flow_session *s, flow_op *var, flow_status *st)
{
	if (s->closed) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "session is closed");
		return NULL;
	}
	if (!var || var->graph != s->g || var->var_index < 0) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "'%s' is not a variable of this session's graph",
				var ? var->name : "(null)");
		return NULL;
	}
	if (var->id >= s->cap_ids || !s->vars[var->id]) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "variable '%s' is uninitialized in this session",
				var->name);
		return NULL;
	}
	return flow_tensor_ref(s->vars[var->id]);
}

/* ---- signature ---- */
static char *signature_key(const flow_output *feeds, int nf, const flow_output *fetches, int nx,
			   flow_op *const *targets, int nt)
{
	flow_buf b = {0};
	char tmp[32];
	for (int i = 0; i < nf; i++) {
		flow__buf_put(&b, feeds[i].op->name, strlen(feeds[i].op->name));
		int w = snprintf(tmp, sizeof tmp, ":%d,", feeds[i].index);
		flow__buf_put(&b, tmp, (size_t)w);
	}
	flow__buf_put(&b, "->", 2);
	for (int i = 0; i < nx; i++) {
		flow__buf_put(&b, fetches[i].op->name, strlen(fetches[i].op->name));
		int w = snprintf(tmp, sizeof tmp, ":%d,", fetches[i].index);
		flow__buf_put(&b, tmp, (size_t)w);
	}
	flow__buf_put(&b, "/", 1);
	for (int i = 0; i < nt; i++) {
		flow__buf_put(&b, targets[i]->name, strlen(targets[i]->name));
		flow__buf_put(&b, ",", 1);
	}
	flow__buf_put(&b, "", 1);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return (char *)b.p;
}

/* ---- compile ---- */
typedef struct cctx {
	flow_session *s;
	flow_graph *g;
	pnode *nodes;
	int n;
	int *alias;                  /* CSE: node -> surviving node */
	int nf, nx, nt;
	const flow_output *feeds, *fetches;
	flow_op *const *targets;
	int *fetch_node, *fetch_idx, *target_node;
	flow_status *st;
} cctx;

static int find_alias(cctx *c, int i)
{
	while (c->alias[i] != i)
		i = c->alias[i] = c->alias[c->alias[i]];
	return i;
}

static int pnode_from_op(pnode *p, flow_op *op, const int *map, flow_status *st)
{
	p->name = strdup(op->name);
	p->op = op;
	p->reg = op->reg;
	p->feed = -1;
	p->var_id = -1;
	if (!p->name || flow__attrs_copy(&p->attrs, &op->attrs))
		goto oom;
	const char *t = op->reg->def->name;
	p->kind = !strcmp(t, "Placeholder") ? PN_PLACEHOLDER
		  : !strcmp(t, "Variable")  ? PN_VARIABLE
		  : !strcmp(t, "Const")     ? PN_CONST
					    : PN_KERNEL;
	if (p->kind == PN_VARIABLE)
		p->var_id = op->id;
	p->n_in = op->n_inputs;
	p->in_node = malloc(sizeof(int) * (size_t)(p->n_in + 1));
	p->in_idx = malloc(sizeof(int) * (size_t)(p->n_in + 1));
	p->in_ref = calloc((size_t)p->n_in + 1, 1);
	p->in_var = malloc(sizeof(int) * (size_t)(p->n_in + 1));
	p->n_ctrl = op->n_ctrl;
	p->ctrl = malloc(sizeof(int) * (size_t)(p->n_ctrl + 1));
	p->n_out = op->n_outputs;
	p->out_dt = malloc(sizeof(flow_dtype) * (size_t)(p->n_out + 1));
	if (!p->in_node || !p->in_idx || !p->in_ref || !p->in_var || !p->ctrl || !p->out_dt)
		goto oom;
	for (int k = 0; k < p->n_in; k++) {
		p->in_node[k] = map[op->inputs[k].op->id];
		p->in_idx[k] = op->inputs[k].index;
		p->in_ref[k] = op->input_is_ref[k];
		p->in_var[k] = op->input_is_ref[k] ? op->inputs[k].op->id : -1;
	}
	for (int k = 0; k < p->n_ctrl; k++)
		p->ctrl[k] = map[op->ctrl[k]->id];
	memcpy(p->out_dt, op->out_dtypes, sizeof(flow_dtype) * (size_t)p->n_out);
	return 0;
oom:
	flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
	return -1;
}

static int pass_prune(cctx *c)
{
	PP_PHASE(PP_SPAN, "prune");
	flow_graph *g = c->g;
	int n = g->n_ops;
	int *map = malloc(sizeof(int) * (size_t)(n + 1));
	int *stack = malloc(sizeof(int) * (size_t)(n + 1));
	int rc = -1;
	if (!map || !stack) {
		flow_status_set(c->st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		map[i] = -1;
	int sp = 0;
	for (int i = 0; i < c->nx; i++)
		if (map[c->fetches[i].op->id] == -1) {
			map[c->fetches[i].op->id] = -2;
			stack[sp++] = c->fetches[i].op->id;
		}
	for (int i = 0; i < c->nt; i++)
		if (map[c->targets[i]->id] == -1) {
			map[c->targets[i]->id] = -2;
			stack[sp++] = c->targets[i]->id;
		}
	while (sp) {
		flow_op *op = g->ops[stack[--sp]];
		for (int k = 0; k < op->n_inputs + op->n_ctrl; k++) {
			flow_op *src = k < op->n_inputs ? op->inputs[k].op : op->ctrl[k - op->n_inputs];
			if (map[src->id] == -1) {
				map[src->id] = -2;
				stack[sp++] = src->id;
			}
		}
	}
	int cnt = 0;
	for (int i = 0; i < n; i++)
		if (map[i] == -2)
			map[i] = cnt++;
	c->nodes = calloc((size_t)cnt + 1, sizeof *c->nodes);
	c->alias = malloc(sizeof(int) * (size_t)(cnt + 1));
	if (!c->nodes || !c->alias) {
		flow_status_set(c->st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
		goto out;
	}
	c->n = cnt;
	/* Creation order is a topological order: inputs exist before users. */
	for (int i = 0; i < n; i++)
		if (map[i] >= 0) {
			c->alias[map[i]] = map[i];
			if (pnode_from_op(&c->nodes[map[i]], g->ops[i], map, c->st))
				goto out;
		}
	for (int i = 0; i < c->nf; i++) {
		int k = map[c->feeds[i].op->id];
		if (k >= 0)
			c->nodes[k].feed = i;
	}
	for (int i = 0; i < cnt; i++)
		if (c->nodes[i].kind == PN_PLACEHOLDER && c->nodes[i].feed < 0) {
			flow_status_set(c->st, FLOW_INVALID_ARGUMENT,
					"placeholder '%s' must be fed: the fetches/targets need it",
					c->nodes[i].name);
			goto out;
		}
	for (int i = 0; i < c->nx; i++) {
		c->fetch_node[i] = map[c->fetches[i].op->id];
		c->fetch_idx[i] = c->fetches[i].index;
	}
	for (int i = 0; i < c->nt; i++)
		c->target_node[i] = map[c->targets[i]->id];
	rc = 0;
out:
	free(map);
	free(stack);
	return rc;
}

static flow_kernel_ctx make_ctx(pnode *p, flow_allocator *a, flow_tensor **in, flow_tensor **out,
				flow_status *st)
{
	flow_kernel_ctx k;
	memset(&k, 0, sizeof k);
	k.node_name = p->name;
	k.op_type = p->reg->def->name;
	k.attrs = &p->attrs;
	k.n_in = p->n_in;
	k.in = in;
	k.n_out = p->n_out;
	k.out = out;
	k.out_dt = p->out_dt;
	k.alloc = a;
	k.pool = flow_default_pool();
	k.st = st;
	return k;
}

static flow_dtype kernel_dtype(const pnode *p)
{
	if (p->reg->kernel_type_attr < 0)
		return FLOW_DT_INVALID;
	const flow_attr_value *v = flow_attrs_find(&p->attrs, p->reg->attrs[p->reg->kernel_type_attr].name);
	return v ? v->u.type : FLOW_DT_INVALID;
}

static const flow_tensor *const_value(const pnode *p)
{
	const flow_attr_value *v = flow_attrs_find(&p->attrs, "value");
	return v && v->kind == FLOW_ATTR_TENSOR ? v->u.tensor : NULL;
}

/* Turns node p into Const(value). */
static int make_const(pnode *p, flow_tensor *value)
{
	/* Looked up each time: the registry is rebuilt by flow_shutdown/init. */
	const flow_registered_op *creg = flow_registry_lookup("Const", NULL);
	if (!creg)
		return -1;
	flow__attrs_free(&p->attrs);
	flow_attr_value *v = flow__attrs_set(&p->attrs, "value");
	if (!v)
		return -1;
	v->kind = FLOW_ATTR_TENSOR;
	v->u.tensor = flow_tensor_ref(value);
	v = flow__attrs_set(&p->attrs, "dtype");
	if (!v)
		return -1;
	v->kind = FLOW_ATTR_TYPE;
	v->u.type = value->dtype;
	p->reg = creg;
	p->kind = PN_CONST;
	p->n_in = 0;
	p->n_ctrl = 0;
	return 0;
}

#define FOLD_MAX_ELEMS (1 << 20)

static int pass_constant_folding(cctx *c, int *folded)
{
	PP_PHASE(PP_SPAN, "constant_folding");
	for (int i = 0; i < c->n; i++) {
		pnode *p = &c->nodes[i];
		if (p->dead || p->kind != PN_KERNEL || p->n_in == 0 || p->n_ctrl || p->n_out != 1 ||
		    (p->reg->def->flags & (FLOW_OP_STATEFUL | FLOW_OP_RANDOM | FLOW_OP_NO_KERNEL)) ||
		    p->reg->def->name[0] == '_')
			continue;
		int all_const = 1;
		for (int k = 0; k < p->n_in && all_const; k++)
			all_const = c->nodes[find_alias(c, p->in_node[k])].kind == PN_CONST;
		if (!all_const)
			continue;
		const flow_kernel_def *kd = flow_registry_kernel(p->reg, FLOW_CPU, kernel_dtype(p));
		if (!kd)
			continue;
		flow_tensor *ins[16], *out = NULL;
		if (p->n_in > 16)
			continue;
		for (int k = 0; k < p->n_in; k++)
			ins[k] = (flow_tensor *)const_value(&c->nodes[find_alias(c, p->in_node[k])]);
		flow_status st = {0};
		flow_kernel_ctx k = make_ctx(p, flow_default_allocator(), ins, &out, &st);
		kd->fn(&k);
		/* A kernel error while folding is not fatal: the node stays and
		 * reports it at run time, as Grappler does. */
		if (flow_status_ok(&st) && out && out->nelem <= FOLD_MAX_ELEMS) {
			if (make_const(p, out)) {
				flow_tensor_unref(out);
				flow_status_set(c->st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
				return -1;
			}
			(*folded)++;
		}
		flow_tensor_unref(out);
	}
	return 0;
}

static void cse_key(cctx *c, const pnode *p, flow_buf *b)
{
	b->n = 0;
	flow__buf_str(b, p->reg->def->name);
	int n0 = p->n_in > 0 ? find_alias(c, p->in_node[0]) : 0, n1 = p->n_in > 1 ? find_alias(c, p->in_node[1]) : 0;
	int swap = (p->reg->def->flags & FLOW_OP_COMMUTATIVE) && p->n_in == 2 &&
		   (n1 < n0 || (n1 == n0 && p->in_idx[1] < p->in_idx[0]));
	for (int k = 0; k < p->n_in; k++) {
		int kk = swap ? 1 - k : k;
		flow__buf_u32(b, (uint32_t)find_alias(c, p->in_node[kk]));
		flow__buf_u32(b, (uint32_t)p->in_idx[kk]);
	}
	flow__buf_u32(b, 0xffffffffu);
	for (int k = 0; k < p->n_ctrl; k++)
		flow__buf_u32(b, (uint32_t)find_alias(c, p->ctrl[k]));
	flow__attrs_serialize(&p->attrs, b);
}

static int pass_cse(cctx *c, int *removed)
{
	PP_PHASE(PP_SPAN, "cse");
	int cap = 64;
	while (cap < c->n * 2)
		cap *= 2;
	int *table = malloc(sizeof(int) * (size_t)cap);
	uint64_t *hashes = malloc(sizeof(uint64_t) * (size_t)(c->n + 1));
	flow_buf *keys = calloc((size_t)c->n + 1, sizeof *keys);
	int rc = -1;
	if (!table || !hashes || !keys) {
		flow_status_set(c->st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
		goto out;
	}
	memset(table, 0xff, sizeof(int) * (size_t)cap);
	for (int i = 0; i < c->n; i++) {
		pnode *p = &c->nodes[i];
		if (p->dead || p->kind == PN_PLACEHOLDER || p->kind == PN_VARIABLE || p->n_out == 0 ||
		    (p->reg->def->flags & (FLOW_OP_STATEFUL | FLOW_OP_RANDOM)))
			continue;
		cse_key(c, p, &keys[i]);
		if (keys[i].oom) {
			flow_status_set(c->st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
			goto out;
		}
		hashes[i] = flow_hash_bytes(keys[i].p, keys[i].n, 0);
		size_t m = (size_t)cap - 1, h = hashes[i] & m;
		for (;; h = (h + 1) & m) {
			int j = table[h];
			if (j < 0) {
				table[h] = i;
				break;
			}
			if (hashes[j] == hashes[i] && keys[j].n == keys[i].n &&
			    !memcmp(keys[j].p, keys[i].p, keys[i].n)) {
				c->alias[i] = j;
				p->dead = 1;
				(*removed)++;
				break;
			}
		}
	}
	rc = 0;
out:
	if (keys)
		for (int i = 0; i < c->n; i++)
			free(keys[i].p);
	free(keys);
	free(table);
	free(hashes);
	return rc;
}

/* Resolve all references through the CSE aliases. */
static void apply_alias(cctx *c)
{
	for (int i = 0; i < c->n; i++) {
		pnode *p = &c->nodes[i];
		for (int k = 0; k < p->n_in; k++)
			p->in_node[k] = find_alias(c, p->in_node[k]);
		for (int k = 0; k < p->n_ctrl; k++)
			p->ctrl[k] = find_alias(c, p->ctrl[k]);
	}
	for (int i = 0; i < c->nx; i++)
		c->fetch_node[i] = find_alias(c, c->fetch_node[i]);
	for (int i = 0; i < c->nt; i++)
		c->target_node[i] = find_alias(c, c->target_node[i]);
}

static int is_fetched(cctx *c, int node, int idx)
{
	for (int i = 0; i < c->nx; i++)
		if (c->fetch_node[i] == node && (idx < 0 || c->fetch_idx[i] == idx))
			return 1;
	return 0;
}

static int pass_fusion(cctx *c, int *fused)
{
	PP_PHASE(PP_SPAN, "fusion");
	const flow_registered_op *freg = flow_registry_lookup("_FusedMatMul", NULL);
	int *uses = calloc((size_t)c->n + 1, sizeof(int));
	int *user = malloc(sizeof(int) * (size_t)(c->n + 1));
	if (!freg || !uses || !user) {
		free(uses);
		free(user);
		flow_status_set(c->st, FLOW_INTERNAL, "compile: fusion set-up failed");
		return -1;
	}
	for (int i = 0; i < c->n; i++) {
		pnode *p = &c->nodes[i];
		if (p->dead)
			continue;
		for (int k = 0; k < p->n_in; k++) {
			uses[p->in_node[k]]++;
			user[p->in_node[k]] = i;
		}
		for (int k = 0; k < p->n_ctrl; k++)
			uses[p->ctrl[k]] += 1000; /* a control edge pins the node */
	}
	for (int b = 0; b < c->n; b++) {
		pnode *B = &c->nodes[b];
		if (B->dead || B->kind != PN_KERNEL || strcmp(B->reg->def->name, "BiasAdd") || B->n_in != 2 ||
		    B->n_ctrl)
			continue;
		const char *fmt = NULL;
		const flow_attr_value *fv = flow_attrs_find(&B->attrs, "data_format");
		if (fv && fv->kind == FLOW_ATTR_STRING)
			fmt = fv->u.s;
		if (fmt && strcmp(fmt, "NHWC"))
			continue;
		int m = B->in_node[0];
		pnode *M = &c->nodes[m];
		flow_dtype dt = kernel_dtype(B);
		if (M->dead || strcmp(M->reg->def->name, "MatMul") || M->n_ctrl || uses[m] != 1 ||
		    is_fetched(c, m, -1) || (dt != FLOW_F32 && dt != FLOW_F64) || kernel_dtype(M) != dt)
			continue;
		/* Extend to the activation when BiasAdd feeds exactly one. */
		int target = b;
		const char *act = "none";
		if (uses[b] == 1 && !is_fetched(c, b, -1)) {
			pnode *A = &c->nodes[user[b]];
			const char *t = A->reg->def->name;
			if (!A->dead && A->n_in == 1 && !A->n_ctrl &&
			    (!strcmp(t, "Relu") || !strcmp(t, "Sigmoid") || !strcmp(t, "Tanh")) &&
			    kernel_dtype(A) == dt) {
				target = user[b];
				act = t;
			}
		}
		pnode *T = &c->nodes[target];
		int ta = flow_ctx_attr_bool(&(flow_kernel_ctx){.attrs = &M->attrs}, "transpose_a", 0);
		int tb = flow_ctx_attr_bool(&(flow_kernel_ctx){.attrs = &M->attrs}, "transpose_b", 0);
		int ia = M->in_node[0], xa = M->in_idx[0], ib = M->in_node[1], xb = M->in_idx[1];
		int ic = B->in_node[1], xc = B->in_idx[1];
		flow__attrs_free(&T->attrs);
		flow_attr_value *v;
		if (!(v = flow__attrs_set(&T->attrs, "T")))
			goto oom;
		v->kind = FLOW_ATTR_TYPE;
		v->u.type = dt;
		if (!(v = flow__attrs_set(&T->attrs, "transpose_a")))
			goto oom;
		v->kind = FLOW_ATTR_BOOL;
		v->u.b = ta;
		if (!(v = flow__attrs_set(&T->attrs, "transpose_b")))
			goto oom;
		v->kind = FLOW_ATTR_BOOL;
		v->u.b = tb;
		if (!(v = flow__attrs_set(&T->attrs, "activation")))
			goto oom;
		v->kind = FLOW_ATTR_STRING;
		v->u.s = strdup(act);
		int *ni = realloc(T->in_node, sizeof(int) * 3), *nx = realloc(T->in_idx, sizeof(int) * 3);
		unsigned char *nr = realloc(T->in_ref, 3);
		int *nv = realloc(T->in_var, sizeof(int) * 3);
		if (ni)
			T->in_node = ni;
		if (nx)
			T->in_idx = nx;
		if (nr)
			T->in_ref = nr;
		if (nv)
			T->in_var = nv;
		if (!ni || !nx || !nr || !nv || !v->u.s)
			goto oom;
		T->n_in = 3;
		T->in_node[0] = ia, T->in_idx[0] = xa;
		T->in_node[1] = ib, T->in_idx[1] = xb;
		T->in_node[2] = ic, T->in_idx[2] = xc;
		memset(T->in_ref, 0, 3);
		T->in_var[0] = T->in_var[1] = T->in_var[2] = -1;
		T->reg = freg;
		M->dead = 1;
		if (target != b)
			B->dead = 1;
		(*fused)++;
	}
	free(uses);
	free(user);
	return 0;
oom:
	free(uses);
	free(user);
	flow_status_set(c->st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
	return -1;
}

/* Marks nodes nothing live needs as dead (after folding/CSE/fusion). */
static void pass_dce(cctx *c)
{
	unsigned char *live = calloc((size_t)c->n + 1, 1);
	if (!live)
		return;
	for (int i = 0; i < c->nx; i++)
		live[c->fetch_node[i]] = 1;
	for (int i = 0; i < c->nt; i++)
		live[c->target_node[i]] = 1;
	for (int i = c->n - 1; i >= 0; i--) {
		pnode *p = &c->nodes[i];
		if (!live[i] || p->dead)
			continue;
		for (int k = 0; k < p->n_in; k++)
			live[p->in_node[k]] = 1;
		for (int k = 0; k < p->n_ctrl; k++)
			live[p->ctrl[k]] = 1;
	}
	for (int i = 0; i < c->n; i++)
		if (!live[i])
			c->nodes[i].dead = 1;
	free(live);
}

static int pass_kernels(cctx *c)
{
	PP_PHASE(PP_SPAN, "kernel_selection");
	for (int i = 0; i < c->n; i++) {
		pnode *p = &c->nodes[i];
		if (p->dead || p->kind == PN_PLACEHOLDER || p->kind == PN_VARIABLE)
			continue;
		p->kernel_dt = kernel_dtype(p);
		p->kernel = flow_registry_kernel(p->reg, FLOW_CPU, p->kernel_dt);
		if (!p->kernel) {
			char have[128] = "";
			size_t o = 0;
			for (int k = 0; k < p->reg->n_kernels && o < sizeof have; k++) {
				int w = snprintf(have + o, sizeof have - o, "%s%s", k ? "," : "",
						 flow_dtype_name(p->reg->kernels[k]->dtype));
				if (w > 0)
					o += (size_t)w;
			}
			flow_status_set(c->st, FLOW_UNIMPLEMENTED,
					"node '%s' (%s): no CPU kernel for dtype %s (registered: %s)", p->name,
					p->reg->def->name, flow_dtype_name(p->kernel_dt), o ? have : "none");
			return -1;
		}
	}
	return 0;
}

/* Compacts live nodes into the plan, assigns value slots and plans tensor
 * lifetimes: a slot is released right after its last consumer ran, and a
 * consumer that is the last user may take the buffer over in place. */
static plan *pass_memory_plan(cctx *c, int memory_plan)
{
	PP_PHASE(PP_SPAN, "memory_planning");
	plan *pl = calloc(1, sizeof *pl);
	int *newidx = malloc(sizeof(int) * (size_t)(c->n + 1));
	if (!pl || !newidx)
		goto oom;
	int live = 0;
	for (int i = 0; i < c->n; i++)
		newidx[i] = c->nodes[i].dead ? -1 : live++;
	pl->nodes = calloc((size_t)live + 1, sizeof *pl->nodes);
	if (!pl->nodes)
		goto oom;
	pl->n = live;
	int slots = 0;
	for (int i = 0; i < c->n; i++) {
		if (c->nodes[i].dead) {
			pnode_clear(&c->nodes[i]);
			continue;
		}
		pnode *p = &pl->nodes[newidx[i]];
		*p = c->nodes[i];
		memset(&c->nodes[i], 0, sizeof c->nodes[i]);
		for (int k = 0; k < p->n_in; k++)
			p->in_node[k] = newidx[p->in_node[k]];
		for (int k = 0; k < p->n_ctrl; k++)
			p->ctrl[k] = newidx[p->ctrl[k]];
		p->out_base = slots;
		slots += p->n_out;
		if (p->n_in > pl->max_in)
			pl->max_in = p->n_in;
		if (p->n_out > pl->max_out)
			pl->max_out = p->n_out;
	}
	pl->n_slots = slots;
	pl->n_fetch = c->nx;
	pl->fetch_slot = malloc(sizeof(int) * (size_t)(c->nx + 1));
	int *last = malloc(sizeof(int) * (size_t)(slots + 1));
	if (!pl->fetch_slot || !last) {
		free(last);
		goto oom;
	}
	for (int i = 0; i < c->nx; i++) {
		int nn = newidx[c->fetch_node[i]];
		pl->fetch_slot[i] = pl->nodes[nn].out_base + c->fetch_idx[i];
	}
	/* last[s]: index of the last node reading slot s; the producer itself
	 * when nobody reads it; n (never) when fetched. */
	for (int i = 0; i < pl->n; i++)
		for (int o = 0; o < pl->nodes[i].n_out; o++)
			last[pl->nodes[i].out_base + o] = i;
	for (int i = 0; i < pl->n; i++) {
		pnode *p = &pl->nodes[i];
		/* A Ref input reads the variable's slot, not the value: it does not
		 * keep the Variable's output alive, so an update after the last
		 * plain reader finds the value unshared and works in place. */
		for (int k = 0; k < p->n_in; k++)
			if (!p->in_ref[k])
				last[pl->nodes[p->in_node[k]].out_base + p->in_idx[k]] = i;
	}
	for (int i = 0; i < c->nx; i++)
		last[pl->fetch_slot[i]] = pl->n;
	if (memory_plan) {
		int *cnt = calloc((size_t)pl->n + 1, sizeof(int));
		if (!cnt) {
			free(last);
			goto oom;
		}
		for (int s = 0; s < slots; s++)
			if (last[s] < pl->n)
				cnt[last[s]]++;
		for (int i = 0; i < pl->n; i++) {
			pnode *p = &pl->nodes[i];
			p->release = malloc(sizeof(int) * (size_t)(cnt[i] + 1));
			p->in_dead = calloc((size_t)p->n_in + 1, 1);
			if (!p->release || !p->in_dead) {
				free(cnt);
				free(last);
				goto oom;
			}
			for (int k = 0; k < p->n_in; k++) {
				int s = pl->nodes[p->in_node[k]].out_base + p->in_idx[k];
				if (last[s] == i && !p->in_ref[k] && pl->nodes[p->in_node[k]].kind == PN_KERNEL) {
					p->in_dead[k] = 1;
					pl->inplace++;
				}
			}
		}
		for (int s = 0; s < slots; s++)
			if (last[s] < pl->n) {
				pnode *p = &pl->nodes[last[s]];
				p->release[p->n_release++] = s;
			}
		free(cnt);
	}
	free(last);
	pl->values = calloc((size_t)slots + 1, sizeof *pl->values);
	pl->ins = calloc((size_t)pl->max_in + 1, sizeof *pl->ins);
	pl->outs = calloc((size_t)pl->max_out + 1, sizeof *pl->outs);
	pl->vslots = calloc((size_t)pl->max_in + 1, sizeof *pl->vslots);
	if (!pl->values || !pl->ins || !pl->outs || !pl->vslots)
		goto oom;
	free(newidx);
	return pl;
oom:
	free(newidx);
	plan_free(pl);
	flow_status_set(c->st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
	return NULL;
}

static plan *compile(flow_session *s, const flow_output *feeds, int nf, const flow_output *fetches, int nx,
		     flow_op *const *targets, int nt, flow_status *st)
{
	PP_PHASE(PP_COMPILE, "compile");
	uint64_t t0 = flow_now_ns();
	cctx c;
	memset(&c, 0, sizeof c);
	c.s = s;
	c.g = s->g;
	c.nf = nf, c.nx = nx, c.nt = nt;
	c.feeds = feeds, c.fetches = fetches, c.targets = targets;
	c.st = st;
	c.fetch_node = malloc(sizeof(int) * (size_t)(nx + 1));
	c.fetch_idx = malloc(sizeof(int) * (size_t)(nx + 1));
	c.target_node = malloc(sizeof(int) * (size_t)(nt + 1));
	plan *pl = NULL;
	int folded = 0, removed = 0, fused = 0;
	if (!c.fetch_node || !c.fetch_idx || !c.target_node) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
		goto out;
	}
	if (pass_prune(&c))
		goto out;
	int pruned = c.n;
	if (!(s->disable & FLOW_PASS_CONSTANT_FOLDING) && pass_constant_folding(&c, &folded))
		goto out;
	if (!(s->disable & FLOW_PASS_CSE) && pass_cse(&c, &removed))
		goto out;
	apply_alias(&c);
	if (!(s->disable & FLOW_PASS_FUSION) && pass_fusion(&c, &fused))
		goto out;
	pass_dce(&c);
	if (pass_kernels(&c))
		goto out;
	pl = pass_memory_plan(&c, !(s->disable & FLOW_PASS_MEMORY_PLAN));
	if (!pl)
		goto out;
	pl->n_feed = nf;
	pl->pruned = pruned;
	pl->folded = folded;
	pl->cse = removed;
	pl->fused = fused;
	s->st.compiles++;
	s->st.last_compile_ns = flow_now_ns() - t0;
out:
	if (c.nodes)
		for (int i = 0; i < c.n; i++)
			pnode_clear(&c.nodes[i]);
	free(c.nodes);
	free(c.alias);
	free(c.fetch_node);
	free(c.fetch_idx);
	free(c.target_node);
	return pl;
}

/* ---- plan files ----
 * Reused from disk: the pruned, folded, CSE'd and fused node list (with the
 * folded constants' data), the kernel choice per node (op, dtype) — only
 * re-resolved to a function pointer by hash lookup —, the value-slot
 * layout and the release/in-place schedule. Not reused: the graph hash
 * (computed over the whole graph), whole-graph validation, the registry
 * lookups of the plan's ops (LITE mode registers them), binding variables. */
#define PLAN_MAGIC "FLOWPLN2"

static char *plan_path(flow_session *s, const char *key)
{
	uint64_t gh = flow__graph_hash(s->g);
	uint64_t kh = flow_hash_bytes(key, strlen(key), 0);
	size_t n = strlen(s->plan_dir) + 64;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%016llx-%016llx.fplan", s->plan_dir, (unsigned long long)gh,
			 (unsigned long long)kh);
	return p;
}

static void plan_save(flow_session *s, const plan *pl, const char *key)
{
	PP_PHASE(PP_SPAN, "plan_save");
	flow_buf b = {0};
	flow__buf_put(&b, PLAN_MAGIC, 8);
	flow__buf_u64(&b, flow__graph_hash(s->g));
	flow__buf_str(&b, key);
	flow__buf_u32(&b, (uint32_t)pl->n);
	flow__buf_u32(&b, (uint32_t)pl->n_slots);
	flow__buf_u32(&b, (uint32_t)pl->n_fetch);
	for (int i = 0; i < pl->n_fetch; i++)
		flow__buf_u32(&b, (uint32_t)pl->fetch_slot[i]);
	uint32_t stats[5] = {(uint32_t)pl->pruned, (uint32_t)pl->folded, (uint32_t)pl->cse,
			     (uint32_t)pl->fused, (uint32_t)pl->inplace};
	flow__buf_put(&b, stats, sizeof stats);
	for (int i = 0; i < pl->n; i++) {
		const pnode *p = &pl->nodes[i];
		flow__buf_str(&b, p->name);
		flow__buf_str(&b, p->op ? p->op->name : "");
		flow__buf_str(&b, p->reg->def->name);
		flow__buf_u32(&b, (uint32_t)p->kind);
		flow__buf_u32(&b, (uint32_t)p->feed);
		flow__buf_str(&b, p->var_id >= 0 ? s->g->ops[p->var_id]->name : "");
		/* A graph Const's value is taken from the graph at load time (the
		 * graph hash covers its content): weights are not copied into plan
		 * files. Folded constants are derived, so they are stored. */
		int from_graph = p->kind == PN_CONST && p->op && p->op->reg == p->reg &&
				 const_value(p) == flow_op_get_attr_tensor(p->op, "value");
		flow__buf_u32(&b, (uint32_t)from_graph);
		if (from_graph) {
			flow_attr_list none = {0};
			flow__attrs_serialize(&none, &b);
		} else {
			flow__attrs_serialize(&p->attrs, &b);
		}
		flow__buf_u32(&b, (uint32_t)p->n_in);
		for (int k = 0; k < p->n_in; k++) {
			flow__buf_u32(&b, (uint32_t)p->in_node[k]);
			flow__buf_u32(&b, (uint32_t)p->in_idx[k]);
			flow__buf_u32(&b, p->in_ref[k]);
			flow__buf_str(&b, p->in_var[k] >= 0 ? s->g->ops[p->in_var[k]]->name : "");
			flow__buf_u32(&b, p->in_dead ? p->in_dead[k] : 0);
		}
		flow__buf_u32(&b, (uint32_t)p->n_ctrl);
		for (int k = 0; k < p->n_ctrl; k++)
			flow__buf_u32(&b, (uint32_t)p->ctrl[k]);
		flow__buf_u32(&b, (uint32_t)p->n_out);
		for (int k = 0; k < p->n_out; k++)
			flow__buf_u32(&b, (uint32_t)p->out_dt[k]);
		flow__buf_u32(&b, (uint32_t)p->kernel_dt);
		flow__buf_u32(&b, (uint32_t)p->out_base);
		flow__buf_u32(&b, (uint32_t)p->n_release);
		for (int k = 0; k < p->n_release; k++)
			flow__buf_u32(&b, (uint32_t)p->release[k]);
		flow__buf_u32(&b, p->in_dead ? 1 : 0);
	}
	flow__buf_u64(&b, flow_hash_bytes(b.p, b.n, 0));
	if (b.oom) {
		free(b.p);
		return;
	}
	mkdir(s->plan_dir, 0777);
	char *path = plan_path(s, key);
	if (!path) {
		free(b.p);
		return;
	}
	size_t tl = strlen(path) + 32;
	char *tmp = malloc(tl);
	if (tmp) {
		snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
		FILE *f = fopen(tmp, "wb");
		if (f) {
			int ok = fwrite(b.p, 1, b.n, f) == b.n;
			ok = !fclose(f) && ok;
			if (!ok || rename(tmp, path))
				unlink(tmp);
		}
	}
	free(tmp);
	free(path);
	free(b.p);
}

static plan *plan_load(flow_session *s, const char *key, int nf)
{
	char *path = plan_path(s, key);
	if (!path)
		return NULL;
	FILE *f = fopen(path, "rb");
	free(path);
	if (!f)
		return NULL;
	PP_PHASE(PP_SPAN, "plan_load");
	unsigned char *data = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			unsigned char *nd = realloc(data, cap);
			if (!nd)
				break;
			data = nd;
		}
		size_t r = fread(data + n, 1, cap - n, f);
		if (!r)
			break;
		n += r;
	}
	fclose(f);
	plan *pl = NULL;
	flow_rd r = {data, n >= 8 ? n - 8 : 0, 0, 0};
	uint64_t sum = 0;
	if (!data || n < 16 || memcmp(data, PLAN_MAGIC, 8))
		goto bad;
	memcpy(&sum, data + n - 8, 8);
	if (sum != flow_hash_bytes(data, n - 8, 0))
		goto bad;
	flow__rd_bytes(&r, 8);
	if (flow__rd_u64(&r) != flow__graph_hash(s->g))
		goto bad;
	char *k = flow__rd_str(&r);
	int same = k && !strcmp(k, key);
	free(k);
	if (!same)
		goto bad;
	pl = calloc(1, sizeof *pl);
	if (!pl)
		goto bad;
	pl->n = (int)flow__rd_u32(&r);
	pl->n_slots = (int)flow__rd_u32(&r);
	pl->n_fetch = (int)flow__rd_u32(&r);
	if (r.bad || pl->n < 0 || pl->n > 1 << 24 || pl->n_slots < 0 || pl->n_slots > 1 << 26 ||
	    pl->n_fetch < 0 || pl->n_fetch > 1 << 20)
		goto bad;
	pl->fetch_slot = malloc(sizeof(int) * (size_t)(pl->n_fetch + 1));
	pl->nodes = calloc((size_t)pl->n + 1, sizeof *pl->nodes);
	if (!pl->fetch_slot || !pl->nodes)
		goto bad;
	for (int i = 0; i < pl->n_fetch; i++) {
		pl->fetch_slot[i] = (int)flow__rd_u32(&r);
		if (pl->fetch_slot[i] < 0 || pl->fetch_slot[i] >= pl->n_slots)
			goto bad;
	}
	uint32_t stats[5];
	const void *sp = flow__rd_bytes(&r, sizeof stats);
	if (!sp)
		goto bad;
	memcpy(stats, sp, sizeof stats);
	pl->pruned = (int)stats[0], pl->folded = (int)stats[1], pl->cse = (int)stats[2];
	pl->fused = (int)stats[3], pl->inplace = (int)stats[4];
	for (int i = 0; i < pl->n; i++) {
		pnode *p = &pl->nodes[i];
		p->var_id = -1;
		p->name = flow__rd_str(&r);
		char *opname = flow__rd_str(&r), *type = flow__rd_str(&r);
		p->kind = (int)flow__rd_u32(&r);
		p->feed = (int)flow__rd_u32(&r);
		char *vname = flow__rd_str(&r);
		int ok = p->name && opname && type && vname;
		if (ok) {
			p->op = *opname ? flow_graph_op_by_name(s->g, opname) : NULL;
			p->reg = flow_registry_lookup(type, NULL);
			if (*vname) {
				flow_op *v = flow_graph_op_by_name(s->g, vname);
				p->var_id = v && v->var_index >= 0 ? v->id : -2;
			}
			ok = p->reg && (!*opname || p->op) && p->var_id != -2;
		}
		free(opname);
		free(type);
		free(vname);
		uint32_t from_graph = flow__rd_u32(&r);
		if (!ok || flow__attrs_deserialize(&p->attrs, &r))
			goto bad;
		if (from_graph) {
			if (!p->op || p->op->reg != p->reg || flow__attrs_copy(&p->attrs, &p->op->attrs))
				goto bad;
		}
		p->n_in = (int)flow__rd_u32(&r);
		if (r.bad || p->n_in < 0 || p->n_in > 1 << 20)
			goto bad;
		p->in_node = malloc(sizeof(int) * (size_t)(p->n_in + 1));
		p->in_idx = malloc(sizeof(int) * (size_t)(p->n_in + 1));
		p->in_ref = calloc((size_t)p->n_in + 1, 1);
		p->in_var = malloc(sizeof(int) * (size_t)(p->n_in + 1));
		p->in_dead = calloc((size_t)p->n_in + 1, 1);
		if (!p->in_node || !p->in_idx || !p->in_ref || !p->in_var || !p->in_dead)
			goto bad;
		for (int k = 0; k < p->n_in; k++) {
			p->in_node[k] = (int)flow__rd_u32(&r);
			p->in_idx[k] = (int)flow__rd_u32(&r);
			p->in_ref[k] = (unsigned char)flow__rd_u32(&r);
			char *vn = flow__rd_str(&r);
			p->in_var[k] = -1;
			if (vn && *vn) {
				flow_op *v = flow_graph_op_by_name(s->g, vn);
				p->in_var[k] = v && v->var_index >= 0 ? v->id : -2;
			}
			free(vn);
			p->in_dead[k] = (unsigned char)flow__rd_u32(&r);
			if (r.bad || p->in_node[k] < 0 || p->in_node[k] >= i || p->in_var[k] == -2 ||
			    (p->in_ref[k] && p->in_var[k] < 0) ||
			    p->in_idx[k] < 0 || p->in_idx[k] >= pl->nodes[p->in_node[k]].n_out)
				goto bad;
		}
		p->n_ctrl = (int)flow__rd_u32(&r);
		if (r.bad || p->n_ctrl < 0 || p->n_ctrl > 1 << 20)
			goto bad;
		p->ctrl = malloc(sizeof(int) * (size_t)(p->n_ctrl + 1));
		if (!p->ctrl)
			goto bad;
		for (int k = 0; k < p->n_ctrl; k++) {
			p->ctrl[k] = (int)flow__rd_u32(&r);
			if (p->ctrl[k] < 0 || p->ctrl[k] >= i)
				goto bad;
		}
		p->n_out = (int)flow__rd_u32(&r);
		if (r.bad || p->n_out < 0 || p->n_out > 1 << 16)
			goto bad;
		p->out_dt = malloc(sizeof(flow_dtype) * (size_t)(p->n_out + 1));
		if (!p->out_dt)
			goto bad;
		for (int k = 0; k < p->n_out; k++)
			p->out_dt[k] = (flow_dtype)flow__rd_u32(&r);
		p->kernel_dt = (flow_dtype)flow__rd_u32(&r);
		p->out_base = (int)flow__rd_u32(&r);
		p->n_release = (int)flow__rd_u32(&r);
		if (r.bad || p->out_base < 0 || p->out_base + p->n_out > pl->n_slots || p->n_release < 0 ||
		    p->n_release > pl->n_slots)
			goto bad;
		p->release = malloc(sizeof(int) * (size_t)(p->n_release + 1));
		if (!p->release)
			goto bad;
		for (int k = 0; k < p->n_release; k++) {
			p->release[k] = (int)flow__rd_u32(&r);
			if (p->release[k] < 0 || p->release[k] >= pl->n_slots)
				goto bad;
		}
		if (!flow__rd_u32(&r)) {
			free(p->in_dead);
			p->in_dead = NULL;
		}
		if (p->kind == PN_KERNEL || p->kind == PN_CONST) {
			p->kernel = flow_registry_kernel(p->reg, FLOW_CPU, p->kernel_dt);
			if (!p->kernel)
				goto bad;
		}
		if ((p->kind == PN_VARIABLE && p->var_id < 0) || (p->kind == PN_PLACEHOLDER && (p->feed < 0 || p->feed >= nf)))
			goto bad;
		if (p->n_in > pl->max_in)
			pl->max_in = p->n_in;
		if (p->n_out > pl->max_out)
			pl->max_out = p->n_out;
	}
	if (r.bad || r.off != r.n)
		goto bad;
	pl->values = calloc((size_t)pl->n_slots + 1, sizeof *pl->values);
	pl->ins = calloc((size_t)pl->max_in + 1, sizeof *pl->ins);
	pl->outs = calloc((size_t)pl->max_out + 1, sizeof *pl->outs);
	pl->vslots = calloc((size_t)pl->max_in + 1, sizeof *pl->vslots);
	if (!pl->values || !pl->ins || !pl->outs || !pl->vslots)
		goto bad;
	free(data);
	return pl;
bad:
	/* A stale or damaged plan file is only a missed cache: compile instead. */
	free(data);
	plan_free(pl);
	pp_mark("flow.plan_file_rejected");
	return NULL;
}

/* ---- run ---- */
static int check_outputs(flow_session *s, const flow_output *o, int n, const char *what, flow_status *st)
{
	for (int i = 0; i < n; i++) {
		if (!o[i].op) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "%s %d is NULL", what, i);
			return -1;
		}
		if (o[i].op->graph != s->g) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"%s %d ('%s:%d') is from another graph than the session's", what, i,
					o[i].op->name, o[i].index);
			return -1;
		}
		if (o[i].index < 0 || o[i].index >= o[i].op->n_outputs) {
			flow_status_set(st, FLOW_OUT_OF_RANGE, "%s %d: node '%s' has no output %d", what, i,
					o[i].op->name, o[i].index);
			return -1;
		}
	}
	return 0;
}

static int check_feeds(flow_session *s, const flow_output *feeds, flow_tensor *const *vals, int nf,
		       flow_status *st)
{
	if (check_outputs(s, feeds, nf, "feed", st))
		return -1;
	for (int i = 0; i < nf; i++) {
		flow_op *op = feeds[i].op;
		if (strcmp(op->reg->def->name, "Placeholder")) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"feed %d: node '%s' is a %s, not a Placeholder; only placeholders can be fed",
					i, op->name, op->reg->def->name);
			return -1;
		}
		for (int j = 0; j < i; j++)
			if (feeds[j].op == op) {
				flow_status_set(st, FLOW_INVALID_ARGUMENT, "placeholder '%s' is fed twice", op->name);
				return -1;
			}
		flow_tensor *t = vals ? vals[i] : NULL;
		if (!t) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "feed %d ('%s'): value is NULL", i, op->name);
			return -1;
		}
		if (t->dtype != op->out_dtypes[0]) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "feed '%s': placeholder is %s, fed %s", op->name,
					flow_dtype_name(op->out_dtypes[0]), flow_dtype_name(t->dtype));
			return -1;
		}
		const flow_shape *ps = &op->out_shapes[0];
		int bad = ps->ndim >= 0 && ps->ndim != t->ndim;
		for (int k = 0; !bad && ps->ndim >= 0 && k < ps->ndim; k++)
			bad = ps->dims[k] >= 0 && ps->dims[k] != t->dims[k];
		if (bad) {
			char a[96], b[96];
			flow_shape ts = flow_tensor_shape(t);
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "feed '%s': placeholder shape %s, fed shape %s",
					op->name, flow_shape_str(ps, a, sizeof a), flow_shape_str(&ts, b, sizeof b));
			return -1;
		}
	}
	return 0;
}

static plan *plan_lookup(flow_session *s, const char *key, uint64_t h)
{
	for (plan *p = s->buckets[h & (uint64_t)(s->n_buckets - 1)]; p; p = p->next)
		if (p->hash_key == h && !strcmp(p->key, key))
			return p;
	return NULL;
}

static void plan_insert(flow_session *s, plan *pl)
{
	if (s->n_plans + 1 > s->n_buckets) {
		int nb = s->n_buckets * 2;
		plan **b = calloc((size_t)nb, sizeof *b);
		if (b) {
			for (int i = 0; i < s->n_buckets; i++)
				for (plan *p = s->buckets[i], *n; p; p = n) {
					n = p->next;
					p->next = b[p->hash_key & (uint64_t)(nb - 1)];
					b[p->hash_key & (uint64_t)(nb - 1)] = p;
				}
			free(s->buckets);
			s->buckets = b;
			s->n_buckets = nb;
		}
	}
	plan **head = &s->buckets[pl->hash_key & (uint64_t)(s->n_buckets - 1)];
	pl->next = *head;
	*head = pl;
	s->n_plans++;
}

static int execute(flow_session *s, plan *pl, flow_tensor *const *feed_vals, flow_tensor **fetch_vals,
		   flow_status *st)
{
	flow_tensor **v = pl->values;
	int rc = 0;
	const int timing = s->op_timing;
	const int64_t step = (int64_t)s->st.runs;
	for (int i = 0; i < pl->n && !rc; i++) {
		pnode *p = &pl->nodes[i];
		uint64_t t0 = timing ? pp_now() : 0;
		switch (p->kind) {
		case PN_PLACEHOLDER:
			v[p->out_base] = flow_tensor_ref(feed_vals[p->feed]);
			break;
		case PN_VARIABLE:
			v[p->out_base] = flow_tensor_ref(s->vars[p->var_id]);
			break;
		default: {
			flow_tensor **in = pl->ins;
			for (int k = 0; k < p->n_in; k++) {
				pnode *src = &pl->nodes[p->in_node[k]];
				in[k] = p->in_ref[k] ? s->vars[p->in_var[k]] : v[src->out_base + p->in_idx[k]];
				pl->vslots[k] = p->in_ref[k] ? &s->vars[p->in_var[k]] : NULL;
				if (!in[k] && !p->in_ref[k]) {
					if (src->kind == PN_VARIABLE)
						flow_status_set(st, FLOW_FAILED_PRECONDITION,
								"node '%s' (%s): input %d reads variable '%s', which is uninitialized in this session (run its initializer)",
								p->name, p->reg->def->name, k, src->name);
					else
						flow_status_set(st, FLOW_INTERNAL,
								"node '%s' (%s): input %d from '%s' has no value",
								p->name, p->reg->def->name, k, src->name);
					rc = -1;
					break;
				}
			}
			if (rc)
				break;
			memset(pl->outs, 0, sizeof *pl->outs * (size_t)p->n_out);
			flow_kernel_ctx k = make_ctx(p, s->alloc, in, pl->outs, st);
			k.var_slot = pl->vslots;
			k.in_dead = p->in_dead;
			k.state = p->op ? &s->state[p->op->id] : NULL;
			p->kernel->fn(&k);
			for (int o = 0; o < p->n_out && flow_status_ok(st); o++)
				if (!pl->outs[o])
					flow_status_set(st, FLOW_INTERNAL, "node '%s' (%s): kernel did not produce output %d",
							p->name, p->reg->def->name, o);
			for (int o = 0; o < p->n_out; o++)
				v[p->out_base + o] = pl->outs[o];
			if (!flow_status_ok(st))
				rc = -1;
			break;
		}
		}
		if (timing) {
			uint64_t t1 = pp_now();
			pp_op(p->name, p->reg->def->name, t0, t1, step);
			if (p->op) {
				p->op->cost_n++;
				p->op->cost_ns += ((double)(t1 - t0) - p->op->cost_ns) / (double)p->op->cost_n;
			}
		}
		for (int r = 0; r < p->n_release; r++) {
			flow_tensor_unref(v[p->release[r]]);
			v[p->release[r]] = NULL;
		}
	}
	if (!rc)
		for (int i = 0; i < pl->n_fetch; i++)
			fetch_vals[i] = flow_tensor_ref(v[pl->fetch_slot[i]]);
	for (int i = 0; i < pl->n_slots; i++) {
		flow_tensor_unref(v[i]);
		v[i] = NULL;
	}
	return rc;
}

static plan *get_plan(flow_session *s, const flow_output *feeds, int nf, const flow_output *fetches,
		      int nx, flow_op *const *targets, int nt, flow_status *st)
{
	/* The graph grew since this session last looked: like TF's
	 * ExtendSession, check the whole graph again (O(nodes + edges)) and
	 * drop the plans compiled against the old version. */
	if (s->g->version != s->seen_version) {
		PP_PHASE(PP_SPAN, "extend_graph");
		uint64_t t0 = flow_now_ns();
		if (flow__graph_validate(s->g, st))
			return NULL;
		if (ensure_ids(s)) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "session: out of memory");
			return NULL;
		}
		s->st.revalidations++;
		s->st.last_validate_ns = flow_now_ns() - t0;
		drop_plans(s);
		s->seen_version = s->g->version;
	}
	char *key = signature_key(feeds, nf, fetches, nx, targets, nt);
	if (!key) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "session: out of memory");
		return NULL;
	}
	uint64_t h = flow_hash_bytes(key, strlen(key), 0);
	plan *pl = plan_lookup(s, key, h);
	if (pl) {
		s->st.plan_cache_hits++;
		free(key);
		return pl;
	}
	if (s->plan_dir) {
		pl = plan_load(s, key, nf);
		if (pl) {
			/* The feed order of this call must match the file's. */
			s->st.plan_disk_hits++;
		}
	}
	if (!pl) {
		pl = compile(s, feeds, nf, fetches, nx, targets, nt, st);
		if (pl && s->plan_dir)
			plan_save(s, pl, key);
	}
	if (!pl) {
		free(key);
		return NULL;
	}
	pl->key = key;
	pl->hash_key = h;
	plan_insert(s, pl);
	s->st.last_plan_nodes = pl->n;
	s->st.last_pruned_nodes = pl->pruned;
	s->st.last_folded = pl->folded;
	s->st.last_cse_removed = pl->cse;
	s->st.last_fused = pl->fused;
	s->st.last_inplace = pl->inplace;
	return pl;
}

int flow_session_run(flow_session *s, const flow_output *feeds, flow_tensor *const *feed_values, int nf,
		     const flow_output *fetches, flow_tensor **fetch_values, int nx, flow_op *const *targets,
		     int nt, flow_status *st)
{
	if (!s) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "flow_session_run: session is NULL");
		return -1;
	}
	if (s->closed) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "attempted to use a closed session");
		return -1;
	}
	if (nf < 0 || nx < 0 || nt < 0 || (nf && !feeds) || (nx && (!fetches || !fetch_values)) ||
	    (nt && !targets)) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "flow_session_run: bad feed/fetch/target arrays");
		return -1;
	}
	if (!nx && !nt) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "flow_session_run: nothing to fetch or run");
		return -1;
	}
	for (int i = 0; i < nx; i++)
		fetch_values[i] = NULL;
	if (check_feeds(s, feeds, feed_values, nf, st) || check_outputs(s, fetches, nx, "fetch", st))
		return -1;
	int init = 0;
	for (int i = 0; i < nt; i++) {
		if (!targets[i] || targets[i]->graph != s->g) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "target %d ('%s') is %s", i,
					targets[i] ? targets[i]->name : "(null)",
					targets[i] ? "from another graph than the session's" : "NULL");
			return -1;
		}
		init |= targets[i]->is_init;
	}
	pthread_mutex_lock(&s->mu);
	/* An initializer run is always a variable_init phase (named after what
	 * it initialises); other runs are steps unless the caller records its own. */
	int step = !init && !s->no_step_phase;
	if (init) {
		char name[300];
		flow_op *t0 = targets[0];
		for (int i = 0; i < nt; i++)
			if (targets[i]->is_init) {
				t0 = targets[i];
				break;
			}
		flow_op *var = t0->n_inputs > 0 ? t0->inputs[0].op : NULL;
		if (nt == 1 && var && var->initializer == t0)
			snprintf(name, sizeof name, "%.140s:%.140s", t0->name, var->name);
		else
			snprintf(name, sizeof name, "%.200s", t0->name);
		pp_phase_begin(PP_VARIABLE_INIT, name);
	} else if (step) {
		pp_step_begin((int64_t)s->st.runs);
	}
	int rc = -1;
	plan *pl = get_plan(s, feeds, nf, fetches, nx, targets, nt, st);
	if (pl)
		rc = execute(s, pl, feed_values, fetch_values, st);
	s->st.runs++;
	/* Allocator counters at every step end: the allocation-trend rules
	 * need one point per step. */
	flow__allocator_counters(s->alloc);
	if (init)
		pp_phase_end();
	else if (step)
		pp_step_end();
	pthread_mutex_unlock(&s->mu);
	return rc;
}

char *flow_session_plan_dump(flow_session *s, const flow_output *feeds, int nf, const flow_output *fetches,
			     int nx, flow_op *const *targets, int nt, flow_status *st)
{
	if (s->closed) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "attempted to use a closed session");
		return NULL;
	}
	if (check_outputs(s, feeds, nf, "feed", st) || check_outputs(s, fetches, nx, "fetch", st))
		return NULL;
	pthread_mutex_lock(&s->mu);
	plan *pl = get_plan(s, feeds, nf, fetches, nx, targets, nt, st);
	flow_buf b = {0};
	if (pl) {
		char line[1024], attrs[600];
		for (int i = 0; i < pl->n; i++) {
			pnode *p = &pl->nodes[i];
			int w = snprintf(line, sizeof line, "%s = %s(", p->name, p->reg->def->name);
			flow__buf_put(&b, line, (size_t)w);
			for (int k = 0; k < p->n_in; k++) {
				w = snprintf(line, sizeof line, "%s%s:%d", k ? ", " : "", pl->nodes[p->in_node[k]].name,
					     p->in_idx[k]);
				flow__buf_put(&b, line, (size_t)w < sizeof line ? (size_t)w : sizeof line - 1);
			}
			for (int k = 0; k < p->n_ctrl; k++) {
				w = snprintf(line, sizeof line, "%s^%s", k || p->n_in ? ", " : "",
					     pl->nodes[p->ctrl[k]].name);
				flow__buf_put(&b, line, (size_t)w < sizeof line ? (size_t)w : sizeof line - 1);
			}
			flow__attrs_str(&p->attrs, attrs, sizeof attrs);
			w = snprintf(line, sizeof line, ") {%s}\n", attrs);
			flow__buf_put(&b, line, (size_t)w < sizeof line ? (size_t)w : sizeof line - 1);
		}
		flow__buf_put(&b, "", 1);
	}
	pthread_mutex_unlock(&s->mu);
	if (!pl || b.oom) {
		free(b.p);
		if (pl)
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "plan dump: out of memory");
		return NULL;
	}
	return (char *)b.p;
}
