/*
 * session_plan_file.c — plans saved to and reused from disk, keyed by graph
 * hash + signature.
 */
#include "session_internal.h"
#include "phaseprof.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

void sess_plan_save(flow_session *s, const plan *pl, const char *key)
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
				 sess_const_value(p) == flow_op_get_attr_tensor(p->op, "value");
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

plan *sess_plan_load(flow_session *s, const char *key, int nf)
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
	sess_plan_free(pl);
	pp_mark("flow.plan_file_rejected");
	return NULL;
}

