/*
 * session_exec.c — the executor: runs a compiled plan's nodes in order,
 * releasing values at their last use.
 */
#include "session_internal.h"
#include "phaseprof.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

flow_kernel_ctx sess_make_ctx(pnode *p, flow_allocator *a, flow_tensor **in, flow_tensor **out,
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

int sess_execute(flow_session *s, plan *pl, flow_tensor *const *feed_vals, flow_tensor **fetch_vals,
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
			flow_kernel_ctx k = sess_make_ctx(p, s->alloc, in, pl->outs, st);
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

