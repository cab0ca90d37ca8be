/*
 * session_compile.c — per-signature compile: prune, constant folding, CSE,
 * MatMul+BiasAdd+activation fusion, kernel selection, memory planning from
 * tensor lifetimes (with in-place reuse).
 */
#include "session_internal.h"
#include "phaseprof.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static flow_dtype kernel_dtype(const pnode *p)
{
	if (p->reg->kernel_type_attr < 0)
		return FLOW_DT_INVALID;
	const flow_attr_value *v = flow_attrs_find(&p->attrs, p->reg->attrs[p->reg->kernel_type_attr].name);
	return v ? v->u.type : FLOW_DT_INVALID;
}

const flow_tensor *sess_const_value(const pnode *p)
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
			ins[k] = (flow_tensor *)sess_const_value(&c->nodes[find_alias(c, p->in_node[k])]);
		flow_status st = {0};
		flow_kernel_ctx k = sess_make_ctx(p, flow_default_allocator(), ins, &out, &st);
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
	pp_hash table; /* node key -> node index */
	pp_hash_init(&table, NULL);
	flow_buf *keys = calloc((size_t)c->n + 1, sizeof *keys);
	int rc = -1;
	if (!keys || pp_hash_reserve(&table, (uint32_t)c->n)) {
		flow_status_set(c->st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
		goto out;
	}
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
		/* Keys carry constants' bytes, up to weight-sized: the digest's eight
		 * bytes a step cost a fifth of pp_hash_mem's one here. */
		uint64_t d = flow_hash_bytes(keys[i].p, keys[i].n, 0);
		uint32_t h = (uint32_t)(d ^ (d >> 32)), j;
		int dup = 0;
		for (uint32_t it = 0; !dup && pp_hash_next(&table, h, &it, &j);)
			dup = keys[j].n == keys[i].n && !memcmp(keys[j].p, keys[i].p, keys[i].n);
		if (dup) {
			c->alias[i] = (int)j;
			p->dead = 1;
			(*removed)++;
		} else {
			pp_hash_add(&table, h, (uint32_t)i); /* room reserved: cannot fail */
		}
	}
	rc = 0;
out:
	if (keys)
		for (int i = 0; i < c->n; i++)
			free(keys[i].p);
	free(keys);
	pp_hash_free(&table);
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
			sess_pnode_clear(&c->nodes[i]);
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
	sess_plan_free(pl);
	flow_status_set(c->st, FLOW_RESOURCE_EXHAUSTED, "compile: out of memory");
	return NULL;
}

plan *sess_compile(flow_session *s, const flow_output *feeds, int nf, const flow_output *fetches, int nx,
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
			sess_pnode_clear(&c.nodes[i]);
	free(c.nodes);
	free(c.alias);
	free(c.fetch_node);
	free(c.fetch_idx);
	free(c.target_node);
	return pl;
}

