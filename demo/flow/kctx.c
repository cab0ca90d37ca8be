/*
 * kctx.c — the kernel context: what a kernel sees of the executor (inputs,
 * outputs through the allocator and the memory plan, attrs, pool, state,
 * variable slots, errors). Shared by sessions and eager execution.
 */
#include "core.h"

#include <stdio.h>
#include <string.h>

flow_tensor *flow__tensor_alloc(flow_allocator *a, flow_dtype dt, int ndim, const int64_t *dims,
				int zero, flow_status *st);

int flow_ctx_num_inputs(flow_kernel_ctx *k) { return k->n_in; }
flow_tensor *flow_ctx_input(flow_kernel_ctx *k, int i)
{
	return i >= 0 && i < k->n_in ? k->in[i] : NULL;
}
int flow_ctx_num_outputs(flow_kernel_ctx *k) { return k->n_out; }
flow_dtype flow_ctx_output_dtype(flow_kernel_ctx *k, int i)
{
	return i >= 0 && i < k->n_out ? k->out_dt[i] : FLOW_DT_INVALID;
}

static flow_tensor *output(flow_kernel_ctx *k, int i, int ndim, const int64_t *dims, int zero)
{
	if (i < 0 || i >= k->n_out) {
		flow_ctx_fail(k, FLOW_INTERNAL, "kernel asked for output %d of %d", i, k->n_out);
		return NULL;
	}
	flow_status st = {0};
	flow_tensor *t = flow__tensor_alloc(k->alloc, k->out_dt[i], ndim, dims, zero, &st);
	if (!t) {
		flow_ctx_fail(k, st.code, "output %d: %s", i, st.msg);
		return NULL;
	}
	flow_tensor_unref(k->out[i]);
	k->out[i] = t;
	return t;
}

flow_tensor *flow_ctx_output(flow_kernel_ctx *k, int i, int ndim, const int64_t *dims)
{
	return output(k, i, ndim, dims, 0);
}

flow_tensor *flow_ctx_output_zeros(flow_kernel_ctx *k, int i, int ndim, const int64_t *dims)
{
	return output(k, i, ndim, dims, 1);
}

flow_tensor *flow_ctx_output_inplace(flow_kernel_ctx *k, int i, int in, int ndim, const int64_t *dims)
{
	flow_tensor *src = flow_ctx_input(k, in);
	if (src && k->in_dead && k->in_dead[in] && i >= 0 && i < k->n_out && src->buf &&
	    src->buf->alloc && atomic_load(&src->refs) == 1 && atomic_load(&src->buf->refs) == 1 &&
	    src->dtype == k->out_dt[i]) {
		int64_t n;
		if (!flow_dims_check(ndim, dims, &n, NULL) && n == src->nelem) {
			/* The input dies here and nobody else holds it: its buffer
			 * becomes the output (the executor's reference moves over). */
			flow_tensor *t = flow_tensor_alias(src, ndim, dims, NULL);
			if (t) {
				flow_tensor_unref(k->out[i]);
				k->out[i] = t;
				k->inplace_hits++;
				return t;
			}
		}
	}
	return output(k, i, ndim, dims, 0);
}

void flow_ctx_set_output(flow_kernel_ctx *k, int i, flow_tensor *t)
{
	if (i < 0 || i >= k->n_out) {
		flow_ctx_fail(k, FLOW_INTERNAL, "kernel set output %d of %d", i, k->n_out);
		return;
	}
	if (t && t->dtype != k->out_dt[i]) {
		flow_ctx_fail(k, FLOW_INTERNAL, "output %d is %s, node declares %s", i,
			      flow_dtype_name(t->dtype), flow_dtype_name(k->out_dt[i]));
		return;
	}
	flow_tensor_ref(t);
	flow_tensor_unref(k->out[i]);
	k->out[i] = t;
}

const flow_attr_value *flow_ctx_attr(flow_kernel_ctx *k, const char *name)
{
	return flow_attrs_find(k->attrs, name);
}

int64_t flow_ctx_attr_int(flow_kernel_ctx *k, const char *name, int64_t dflt)
{
	const flow_attr_value *v = flow_attrs_find(k->attrs, name);
	return v && v->kind == FLOW_ATTR_INT ? v->u.i : dflt;
}

double flow_ctx_attr_float(flow_kernel_ctx *k, const char *name, double dflt)
{
	const flow_attr_value *v = flow_attrs_find(k->attrs, name);
	return v && v->kind == FLOW_ATTR_FLOAT ? v->u.f : dflt;
}

int flow_ctx_attr_bool(flow_kernel_ctx *k, const char *name, int dflt)
{
	const flow_attr_value *v = flow_attrs_find(k->attrs, name);
	return v && v->kind == FLOW_ATTR_BOOL ? v->u.b : dflt;
}

const char *flow_ctx_attr_string(flow_kernel_ctx *k, const char *name, const char *dflt)
{
	const flow_attr_value *v = flow_attrs_find(k->attrs, name);
	return v && v->kind == FLOW_ATTR_STRING ? v->u.s : dflt;
}

const int64_t *flow_ctx_attr_ints(flow_kernel_ctx *k, const char *name, int *n)
{
	const flow_attr_value *v = flow_attrs_find(k->attrs, name);
	if (v && v->kind == FLOW_ATTR_INTS) {
		*n = v->u.ints.n;
		return v->u.ints.v;
	}
	*n = 0;
	return NULL;
}

flow_threadpool *flow_ctx_pool(flow_kernel_ctx *k) { return k->pool; }
const char *flow_ctx_node_name(flow_kernel_ctx *k) { return k->node_name; }
uint64_t *flow_ctx_state(flow_kernel_ctx *k) { return k->state; }

flow_tensor **flow_ctx_var(flow_kernel_ctx *k, int input)
{
	if (input < 0 || input >= k->n_in || !k->var_slot || !k->var_slot[input]) {
		flow_ctx_fail(k, FLOW_INTERNAL, "input %d is not a variable reference", input);
		return NULL;
	}
	return k->var_slot[input];
}

void flow_ctx_var_set(flow_kernel_ctx *k, int input, flow_tensor *value)
{
	flow_tensor **slot = flow_ctx_var(k, input);
	if (!slot)
		return;
	flow_tensor_ref(value);
	flow_tensor_unref(*slot);
	*slot = value;
}

flow_tensor *flow_ctx_var_mutable(flow_kernel_ctx *k, int input)
{
	flow_tensor **slot = flow_ctx_var(k, input);
	if (!slot || !*slot)
		return NULL;
	flow_tensor *t = *slot;
	if (atomic_load(&t->refs) == 1 && (!t->buf || atomic_load(&t->buf->refs) == 1))
		return t;
	/* Someone (a fetch, a pending reader, a Const) shares the value: copy on
	 * write so they keep the snapshot they read. */
	flow_status st = {0};
	flow_tensor *c = flow__tensor_alloc(k->alloc, t->dtype, t->ndim, t->dims, 0, &st);
	if (!c) {
		flow_ctx_fail(k, st.code, "%s", st.msg);
		return NULL;
	}
	if (c->nelem)
		memcpy(flow_tensor_ptr(c), flow_tensor_cdata(t), flow_tensor_nbytes(t));
	flow_tensor_unref(t);
	*slot = c;
	return c;
}

void flow_ctx_fail(flow_kernel_ctx *k, flow_code code, const char *fmt, ...)
{
	char m[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	flow_status_set(k->st, code, "node '%s' (%s): %s", k->node_name, k->op_type, m);
}

int flow_ctx_ok(flow_kernel_ctx *k)
{
	return flow_status_ok(k->st);
}
