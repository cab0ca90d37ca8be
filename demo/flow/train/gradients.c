/*
 * gradients.c — symbolic reverse-mode differentiation over a flow graph
 * (TF1's tf.gradients): walk the ops between xs and ys in reverse creation
 * order (creation order is topological: inputs precede their consumers),
 * sum the incoming gradients of each output with AddN, and call the op's
 * gradient function to get the gradients of its inputs.
 *
 * Gradient functions come from the op def (flow_op_def.grad_fn) when the op
 * library supplies one, else from a side table here (flow cannot link
 * flow_train, so the table cannot live in the op defs).
 */
#include "train_internal.h"
#include "pp_grow.h"
#include "phaseprof.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- builder shorthands with a name scope ---- */

static _Thread_local char tb_scope[128];
static _Thread_local unsigned tb_seq;

const char *tb_name(const char *type, char *buf, size_t len)
{
	if (!tb_scope[0])
		return NULL;
	snprintf(buf, len, "%s/%s_%u", tb_scope, type, tb_seq++);
	return buf;
}

flow_op_desc *tb_new(flow_graph *g, const char *type)
{
	char nb[200];
	return flow_op_new(g, type, tb_name(type, nb, sizeof nb));
}

static flow_output tb_finish(flow_op_desc *d, flow_status *st)
{
	flow_op *op = flow_op_finish(d, st);
	flow_output o = {op, 0};
	return o;
}

flow_output tb_op1(flow_graph *g, const char *type, flow_output a, flow_status *st)
{
	flow_op_desc *d = tb_new(g, type);
	flow_op_add_input(d, a);
	return tb_finish(d, st);
}

flow_output tb_op2(flow_graph *g, const char *type, flow_output a, flow_output b,
		   flow_status *st)
{
	flow_op_desc *d = tb_new(g, type);
	flow_op_add_input(d, a);
	flow_op_add_input(d, b);
	return tb_finish(d, st);
}

flow_output tb_op3(flow_graph *g, const char *type, flow_output a, flow_output b,
		   flow_output c, flow_status *st)
{
	flow_op_desc *d = tb_new(g, type);
	flow_op_add_input(d, a);
	flow_op_add_input(d, b);
	flow_op_add_input(d, c);
	return tb_finish(d, st);
}

flow_output tb_matmul(flow_graph *g, flow_output a, flow_output b, int ta, int tb,
		      flow_status *st)
{
	flow_op_desc *d = tb_new(g, "MatMul");
	flow_op_add_input(d, a);
	flow_op_add_input(d, b);
	flow_op_set_attr_bool(d, "transpose_a", ta);
	flow_op_set_attr_bool(d, "transpose_b", tb);
	return tb_finish(d, st);
}

flow_output tb_const_i64s(flow_graph *g, const int64_t *v, int n, flow_status *st)
{
	int64_t dims[1] = {n};
	flow_tensor *t = flow_tensor_from_data(FLOW_I64, 1, dims, v, st);
	flow_output none = {NULL, 0};
	if (!t)
		return none;
	char nb[200];
	flow_output o = flow_const(g, tb_name("Const", nb, sizeof nb), t, st);
	flow_tensor_unref(t);
	return o;
}

flow_output flow_zeros_like(flow_graph *g, flow_output x, flow_status *st)
{
	if (flow_train_init(st)) {
		flow_output none = {NULL, 0};
		return none;
	}
	return tb_op1(g, "ZerosLike", x, st);
}

flow_output flow_scalar(flow_graph *g, float v, flow_status *st)
{
	flow_tensor *t = flow_tensor_scalar_f32(v);
	char nb[200];
	flow_output o = flow_const(g, tb_name("Const", nb, sizeof nb), t, st);
	flow_tensor_unref(t);
	return o;
}

/* ---- the side table ---- */

typedef struct grad_entry {
	char *op;
	flow_train_grad_fn fn;
} grad_entry;

static pthread_mutex_t gt_mu = PTHREAD_MUTEX_INITIALIZER;
static grad_entry *gt;
static int gt_n, gt_cap;

int flow_gradient_register(const char *op_type, flow_train_grad_fn fn)
{
	if (!op_type || !fn)
		return -1;
	pthread_mutex_lock(&gt_mu);
	int rc = 0;
	for (int i = 0; i < gt_n; i++)
		if (!strcmp(gt[i].op, op_type)) {
			gt[i].fn = fn;
			goto out;
		}
	if (PP_GROW(gt, gt_n + 1, gt_cap) != 0) {
		rc = -1;
		goto out;
	}
	gt[gt_n].op = strdup(op_type);
	gt[gt_n].fn = fn;
	if (!gt[gt_n].op)
		rc = -1;
	else
		gt_n++;
out:
	pthread_mutex_unlock(&gt_mu);
	return rc;
}

flow_train_grad_fn train_grad_lookup(const char *op_type)
{
	flow_status st = {0};
	const flow_registered_op *r = flow_registry_lookup(op_type, &st);
	if (r && r->def->grad_fn)
		return r->def->grad_fn;
	flow_train_grad_fn fn = NULL;
	pthread_mutex_lock(&gt_mu);
	for (int i = 0; i < gt_n && !fn; i++)
		if (!strcmp(gt[i].op, op_type))
			fn = gt[i].fn;
	pthread_mutex_unlock(&gt_mu);
	return fn;
}

int flow_gradient_known(const char *op_type)
{
	if (flow_train_init(NULL))
		return 0;
	return train_grad_lookup(op_type) != NULL;
}

/* ---- flow_gradients ---- */

typedef struct glist {
	flow_output *v;
	int n, cap;
} glist;

static int glist_add(glist *l, flow_output o)
{
	if (PP_GROW(l->v, l->n + 1, l->cap) != 0)
		return -1;
	l->v[l->n++] = o;
	return 0;
}

/* The sum of the gradients collected for one output ({NULL,0} if none). */
static flow_output glist_sum(flow_graph *g, glist *l, flow_status *st)
{
	flow_output none = {NULL, 0};
	if (!l || !l->n)
		return none;
	if (l->n == 1)
		return l->v[0];
	/* The op library's AddN takes every dtype; ours only f32. */
	flow_op_desc *d = tb_new(g, "AddN");
	flow_op_add_input_list(d, l->v, l->n);
	flow_output s = tb_finish(d, st);
	/* Collapse, so a later read sees the sum and not the parts. */
	l->n = 1;
	l->v[0] = s;
	return s;
}

static int is_float(flow_dtype dt)
{
	return dt == FLOW_F32 || dt == FLOW_F64;
}

static atomic_uint grad_calls;

int flow_gradients(flow_graph *g, const flow_output *ys, int n_ys, const flow_output *grad_ys,
		   const flow_output *xs, int n_xs, flow_output *dxs, flow_status *st)
{
	if (flow_train_init(st))
		return -1;
	for (int i = 0; i < n_ys; i++)
		if (!ys[i].op || flow_op_graph(ys[i].op) != g) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "gradients: y %d is not in the graph", i);
			return -1;
		}
	for (int i = 0; i < n_xs; i++)
		if (!xs[i].op || flow_op_graph(xs[i].op) != g) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "gradients: x %d is not in the graph", i);
			return -1;
		}
	PP_PHASE(PP_GRADIENT_BUILD, "gradient_build");
	int n_ops = flow_graph_num_ops(g), rc = -1;
	unsigned char *from_x = calloc((size_t)n_ops + 1, 1), *to_y = calloc((size_t)n_ops + 1, 1);
	glist **grads = calloc((size_t)n_ops + 1, sizeof *grads);
	flow_op **stack = malloc(sizeof *stack * ((size_t)n_ops + 1));
	flow_output *dy = NULL, *dx = NULL;
	snprintf(tb_scope, sizeof tb_scope, "gradients_%u", atomic_fetch_add(&grad_calls, 1));
	tb_seq = 0;
	if (!from_x || !to_y || !grads || !stack) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "gradients: out of memory");
		goto out;
	}
	/* Ops that depend on an x (forward pass over the topological order). */
	for (int i = 0; i < n_xs; i++)
		from_x[flow_op_id(xs[i].op)] = 1;
	for (int i = 0; i < n_ops; i++) {
		flow_op *op = flow_graph_op_at(g, i);
		for (int j = 0; j < flow_op_num_inputs(op) && !from_x[i]; j++)
			from_x[i] = from_x[flow_op_id(flow_op_input(op, j).op)];
	}
	/* Ops the ys depend on (DFS over data inputs). */
	int sp = 0;
	for (int i = 0; i < n_ys; i++)
		if (!to_y[flow_op_id(ys[i].op)]) {
			to_y[flow_op_id(ys[i].op)] = 1;
			stack[sp++] = ys[i].op;
		}
	while (sp) {
		flow_op *op = stack[--sp];
		for (int j = 0; j < flow_op_num_inputs(op); j++) {
			flow_op *in = flow_op_input(op, j).op;
			if (!to_y[flow_op_id(in)]) {
				to_y[flow_op_id(in)] = 1;
				stack[sp++] = in;
			}
		}
	}
	/* Seed: dy of each y (ones when grad_ys is NULL). */
	for (int i = 0; i < n_ys; i++) {
		flow_op *op = ys[i].op;
		int id = flow_op_id(op);
		if (!grads[id] &&
		    !(grads[id] = calloc((size_t)flow_op_num_outputs(op), sizeof(glist)))) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "gradients: out of memory");
			goto out;
		}
		flow_output seed = grad_ys && grad_ys[i].op ? grad_ys[i]
							   : tb_op1(g, "OnesLike", ys[i], st);
		if (!seed.op || glist_add(&grads[id][ys[i].index], seed))
			goto out;
	}
	int maxio = 1;
	for (int i = 0; i < n_ops; i++) {
		flow_op *op = flow_graph_op_at(g, i);
		if (flow_op_num_inputs(op) > maxio)
			maxio = flow_op_num_inputs(op);
		if (flow_op_num_outputs(op) > maxio)
			maxio = flow_op_num_outputs(op);
	}
	dy = calloc((size_t)maxio, sizeof *dy);
	dx = calloc((size_t)maxio, sizeof *dx);
	if (!dy || !dx) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "gradients: out of memory");
		goto out;
	}
	for (int i = n_ops - 1; i >= 0; i--) {
		if (!from_x[i] || !to_y[i] || !grads[i])
			continue;
		flow_op *op = flow_graph_op_at(g, i);
		int no = flow_op_num_outputs(op), ni = flow_op_num_inputs(op), any = 0;
		for (int k = 0; k < no; k++) {
			dy[k] = glist_sum(g, &grads[i][k], st);
			if (!flow_status_ok(st))
				goto out;
			any |= dy[k].op != NULL;
		}
		/* Inputs that lead back to an x and are differentiable. */
		int wanted = 0;
		for (int j = 0; j < ni; j++) {
			flow_output in = flow_op_input(op, j);
			wanted |= from_x[flow_op_id(in.op)] &&
				  is_float(flow_op_output_dtype(in.op, in.index));
		}
		if (!any || !wanted)
			continue;   /* an x itself (Variable, Placeholder) ends here */
		flow_train_grad_fn fn = train_grad_lookup(flow_op_type(op));
		if (!fn) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"gradients: no gradient defined for op '%s' (%s) on the path "
					"from '%s' to '%s'",
					flow_op_name(op), flow_op_type(op), flow_op_name(xs[0].op),
					flow_op_name(ys[0].op));
			goto out;
		}
		for (int j = 0; j < ni; j++)
			dx[j].op = NULL, dx[j].index = 0;
		if (fn(g, op, dy, dx, st)) {
			if (flow_status_ok(st))
				flow_status_set(st, FLOW_INTERNAL, "gradient of op '%s' (%s) failed",
						flow_op_name(op), flow_op_type(op));
			goto out;
		}
		for (int j = 0; j < ni; j++) {
			flow_output in = flow_op_input(op, j);
			int id = flow_op_id(in.op);
			if (!dx[j].op || !from_x[id] || !is_float(flow_op_output_dtype(in.op, in.index)))
				continue;
			if (!grads[id] && !(grads[id] = calloc((size_t)flow_op_num_outputs(in.op),
							      sizeof(glist)))) {
				flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "gradients: out of memory");
				goto out;
			}
			if (glist_add(&grads[id][in.index], dx[j])) {
				flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "gradients: out of memory");
				goto out;
			}
		}
	}
	for (int k = 0; k < n_xs; k++) {
		int id = flow_op_id(xs[k].op);
		flow_output s = grads[id] ? glist_sum(g, &grads[id][xs[k].index], st)
					  : (flow_output){NULL, 0};
		if (!flow_status_ok(st))
			goto out;
		dxs[k] = s.op ? s : tb_op1(g, "ZerosLike", xs[k], st);
		if (!dxs[k].op)
			goto out;
	}
	rc = 0;
out:
	if (grads)
		for (int i = 0; i < n_ops; i++)
			if (grads[i]) {
				for (int k = 0; k < flow_op_num_outputs(flow_graph_op_at(g, i)); k++)
					free(grads[i][k].v);
				free(grads[i]);
			}
	tb_scope[0] = 0;
	free(grads);
	free(from_x);
	free(to_y);
	free(stack);
	free(dy);
	free(dx);
	return rc;
}
