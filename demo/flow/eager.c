/*
 * eager.c — flow_execute: one op on tensors, now (TFE_Execute). Same
 * registry, attr resolution, shape checks and kernels as graph mode; no
 * graph, no compile. demo/flow/train's eager mode and gradient tape sit on this.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

/* State word for random ops run eagerly: one per process, so successive
 * eager calls with the same seed draw new numbers (as TF's op seeds do). */
static _Atomic uint64_t eager_state;

int flow_execute(flow_op_desc *d, flow_tensor **outputs, int n_outputs, flow_status *st)
{
	int rc = -1;
	flow_dtype *out_dt = NULL, in_dt_s[16];
	unsigned char *is_ref = NULL;
	flow_shape in_sh_s[16], out_sh_s[8];
	flow_tensor *outs_s[8];
	flow_dtype *in_dt = in_dt_s;
	flow_shape *in_sh = in_sh_s, *out_sh = out_sh_s;
	flow_tensor **outs = outs_s;
	int n_out = 0;
	if (!d) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "flow_execute: description is NULL");
		return -1;
	}
	for (int i = 0; i < n_outputs; i++)
		outputs[i] = NULL;
	if (!flow_status_ok(&d->err)) {
		flow_status_set(st, d->err.code, "%s", d->err.msg);
		goto out;
	}
	if (d->g) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "flow_execute: '%s' is a graph node description (use flow_op_finish)",
				d->name ? d->name : d->type);
		goto out;
	}
	const flow_registered_op *r = flow_registry_lookup(d->type, st);
	if (!r)
		goto out;
	if (r->def->flags & FLOW_OP_NO_KERNEL) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s' cannot run eagerly", d->type);
		goto out;
	}
	if (d->n_in > 16) {
		in_dt = malloc(sizeof *in_dt * (size_t)d->n_in);
		in_sh = malloc(sizeof *in_sh * (size_t)d->n_in);
		if (!in_dt || !in_sh) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "flow_execute: out of memory");
			goto out;
		}
	}
	for (int i = 0; i < d->n_in; i++) {
		in_dt[i] = d->tin[i]->dtype;
		in_sh[i] = flow_tensor_shape(d->tin[i]);
	}
	if (flow__resolve(r, d->type, &d->attrs, d->group_size, d->n_groups, in_dt, d->n_in, &n_out, &out_dt,
			  &is_ref, st))
		goto out;
	for (int i = 0; i < d->n_in; i++)
		if (is_ref[i]) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"op '%s': variable-reference inputs need a session (graph mode)", d->type);
			goto out;
		}
	if (n_out > 8) {
		out_sh = malloc(sizeof *out_sh * (size_t)n_out);
		outs = calloc((size_t)n_out, sizeof *outs);
		if (!out_sh || !outs) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "flow_execute: out of memory");
			goto out;
		}
	} else {
		memset(outs_s, 0, sizeof outs_s);
	}
	/* Shape functions validate (clear errors on mismatch) even eagerly. */
	if (flow__infer_shapes(r, d->type, &d->attrs, d->n_in, in_sh, in_dt,
			       (const flow_tensor *const *)d->tin, n_out, out_sh, st))
		goto out;
	flow_dtype kdt = FLOW_DT_INVALID;
	if (r->kernel_type_attr >= 0)
		kdt = flow_attrs_find(&d->attrs, r->attrs[r->kernel_type_attr].name)->u.type;
	const flow_kernel_def *kd = flow_registry_kernel(r, FLOW_CPU, kdt);
	if (!kd) {
		flow_status_set(st, FLOW_UNIMPLEMENTED, "op '%s': no CPU kernel for dtype %s", d->type,
				flow_dtype_name(kdt));
		goto out;
	}
	uint64_t state = atomic_fetch_add(&eager_state, 1) << 32;
	flow_kernel_ctx k;
	memset(&k, 0, sizeof k);
	k.node_name = d->type;
	k.op_type = d->type;
	k.attrs = &d->attrs;
	k.n_in = d->n_in;
	k.in = d->tin;
	k.n_out = n_out;
	k.out = outs;
	k.out_dt = out_dt;
	k.alloc = flow_default_allocator();
	k.pool = flow_default_pool();
	k.state = &state;
	k.st = st;
	kd->fn(&k);
	for (int o = 0; o < n_out && flow_status_ok(st); o++)
		if (!outs[o])
			flow_status_set(st, FLOW_INTERNAL, "op '%s': kernel did not produce output %d", d->type, o);
	if (flow_status_ok(st)) {
		for (int o = 0; o < n_out; o++) {
			if (o < n_outputs)
				outputs[o] = outs[o];
			else
				flow_tensor_unref(outs[o]);
			outs[o] = NULL;
		}
		rc = 0;
	}
	for (int o = 0; o < n_out; o++)
		flow_tensor_unref(outs[o]);
out:
	if (in_dt != in_dt_s)
		free(in_dt);
	if (in_sh != in_sh_s)
		free(in_sh);
	if (out_sh != out_sh_s)
		free(out_sh);
	if (outs != outs_s)
		free(outs);
	free(out_dt);
	free(is_ref);
	flow__desc_free(d);
	return rc;
}
