/*
 * graph.c — graphs, the node builder (flow_op_new … flow_op_finish), attr
 * and dtype resolution, build-time shape inference, variables and the
 * whole-graph validation a session runs after the graph grew.
 */
#include "core.h"
#include "phaseprof.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- graphs ---- */
flow_graph *flow_graph_new(void)
{
	flow__ensure_init();
	flow_graph *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	pp_hash_init(&g->by_name, NULL);
	g->hash_version = (uint64_t)-1;
	return g;
}

static void op_free(flow_op *op)
{
	free(op->name);
	free(op->inputs);
	free(op->input_is_ref);
	free(op->ctrl);
	flow__attrs_free(&op->attrs);
	free(op->out_dtypes);
	free(op->out_shapes);
	free(op);
}

static pthread_mutex_t life_mu = PTHREAD_MUTEX_INITIALIZER;
static void graph_destroy(flow_graph *g);

void flow__graph_attach(flow_graph *g)
{
	pthread_mutex_lock(&life_mu);
	g->sessions++;
	pthread_mutex_unlock(&life_mu);
}

void flow__graph_detach(flow_graph *g)
{
	pthread_mutex_lock(&life_mu);
	int destroy = --g->sessions == 0 && g->free_pending;
	pthread_mutex_unlock(&life_mu);
	if (destroy)
		graph_destroy(g);
}

void flow_graph_free(flow_graph *g)
{
	if (!g)
		return;
	/* Like TF_DeleteGraph: the graph goes when its last session closes. */
	pthread_mutex_lock(&life_mu);
	int busy = g->sessions > 0;
	if (busy)
		g->free_pending = 1;
	pthread_mutex_unlock(&life_mu);
	if (!busy)
		graph_destroy(g);
}

static void graph_destroy(flow_graph *g)
{
	for (int i = 0; i < g->n_ops; i++)
		op_free(g->ops[i]);
	free(g->ops);
	pp_hash_free(&g->by_name);
	free(g->vars);
	free(g);
}

static pthread_mutex_t default_mu = PTHREAD_MUTEX_INITIALIZER;
static flow_graph *default_graph;

flow_graph *flow_default_graph(void)
{
	pthread_mutex_lock(&default_mu);
	if (!default_graph)
		default_graph = flow_graph_new();
	flow_graph *g = default_graph;
	pthread_mutex_unlock(&default_mu);
	return g;
}

void flow_reset_default_graph(void)
{
	pthread_mutex_lock(&default_mu);
	flow_graph *old = default_graph;
	default_graph = NULL;
	pthread_mutex_unlock(&default_mu);
	flow_graph_free(old);
}

uint64_t flow_graph_version(const flow_graph *g) { return g->version; }
int flow_graph_num_ops(const flow_graph *g) { return g->n_ops; }
flow_op *flow_graph_op_at(const flow_graph *g, int i)
{
	return i >= 0 && i < g->n_ops ? g->ops[i] : NULL;
}
void flow_graph_finalize(flow_graph *g) { g->finalized = 1; }
int flow_graph_is_finalized(const flow_graph *g) { return g->finalized; }
int flow_graph_num_variables(const flow_graph *g) { return g->n_vars; }
flow_op *flow_graph_variable_at(const flow_graph *g, int i)
{
	return i >= 0 && i < g->n_vars ? g->vars[i] : NULL;
}

flow_op *flow_graph_op_by_name(const flow_graph *g, const char *name)
{
	if (!name)
		return NULL;
	uint32_t h = pp_hash_str(name), id;
	for (uint32_t it = 0; pp_hash_next(&g->by_name, h, &it, &id);)
		if (!strcmp(g->ops[id]->name, name))
			return g->ops[id];
	return NULL;
}

/* ---- op accessors ---- */
const char *flow_op_name(const flow_op *op) { return op->name; }
const char *flow_op_type(const flow_op *op) { return op->reg->def->name; }
flow_graph *flow_op_graph(const flow_op *op) { return op->graph; }
int flow_op_id(const flow_op *op) { return op->id; }
int flow_op_num_inputs(const flow_op *op) { return op->n_inputs; }
flow_output flow_op_input(const flow_op *op, int i)
{
	flow_output none = {NULL, 0};
	return i >= 0 && i < op->n_inputs ? op->inputs[i] : none;
}
int flow_op_num_control_inputs(const flow_op *op) { return op->n_ctrl; }
flow_op *flow_op_control_input(const flow_op *op, int i)
{
	return i >= 0 && i < op->n_ctrl ? op->ctrl[i] : NULL;
}
int flow_op_num_outputs(const flow_op *op) { return op->n_outputs; }
flow_dtype flow_op_output_dtype(const flow_op *op, int i)
{
	return i >= 0 && i < op->n_outputs ? op->out_dtypes[i] : FLOW_DT_INVALID;
}
flow_shape flow_op_output_shape(const flow_op *op, int i)
{
	return i >= 0 && i < op->n_outputs ? op->out_shapes[i] : flow_shape_unknown();
}

static const flow_attr_value *get_attr(const flow_op *op, const char *name, flow_attr_kind k)
{
	const flow_attr_value *v = flow_attrs_find(&op->attrs, name);
	return v && v->kind == k ? v : NULL;
}
int flow_op_get_attr_int(const flow_op *op, const char *name, int64_t *v)
{
	const flow_attr_value *a = get_attr(op, name, FLOW_ATTR_INT);
	if (a)
		*v = a->u.i;
	return a ? 0 : -1;
}
int flow_op_get_attr_float(const flow_op *op, const char *name, double *v)
{
	const flow_attr_value *a = get_attr(op, name, FLOW_ATTR_FLOAT);
	if (a)
		*v = a->u.f;
	return a ? 0 : -1;
}
int flow_op_get_attr_bool(const flow_op *op, const char *name, int *v)
{
	const flow_attr_value *a = get_attr(op, name, FLOW_ATTR_BOOL);
	if (a)
		*v = a->u.b;
	return a ? 0 : -1;
}
int flow_op_get_attr_type(const flow_op *op, const char *name, flow_dtype *v)
{
	const flow_attr_value *a = get_attr(op, name, FLOW_ATTR_TYPE);
	if (a)
		*v = a->u.type;
	return a ? 0 : -1;
}
int flow_op_get_attr_shape(const flow_op *op, const char *name, flow_shape *v)
{
	const flow_attr_value *a = get_attr(op, name, FLOW_ATTR_SHAPE);
	if (a)
		*v = a->u.shape;
	return a ? 0 : -1;
}
const char *flow_op_get_attr_string(const flow_op *op, const char *name)
{
	const flow_attr_value *a = get_attr(op, name, FLOW_ATTR_STRING);
	return a ? a->u.s : NULL;
}
int flow_op_get_attr_ints(const flow_op *op, const char *name, const int64_t **v, int *n)
{
	const flow_attr_value *a = get_attr(op, name, FLOW_ATTR_INTS);
	if (a) {
		*v = a->u.ints.v;
		*n = a->u.ints.n;
	}
	return a ? 0 : -1;
}
const flow_tensor *flow_op_get_attr_tensor(const flow_op *op, const char *name)
{
	const flow_attr_value *a = get_attr(op, name, FLOW_ATTR_TENSOR);
	return a ? a->u.tensor : NULL;
}

/* ---- descriptions ---- */
static flow_op_desc *desc_new(flow_graph *g, const char *type, const char *name)
{
	flow__ensure_init();
	flow_op_desc *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->g = g;
	d->type = strdup(type ? type : "");
	d->name = name && *name ? strdup(name) : NULL;
	if (!type)
		flow_status_set(&d->err, FLOW_INVALID_ARGUMENT, "op type is NULL");
	return d;
}

flow_op_desc *flow_op_new(flow_graph *g, const char *op_type, const char *name)
{
	flow_op_desc *d = desc_new(g, op_type, name);
	if (d && !g)
		flow_status_set(&d->err, FLOW_INVALID_ARGUMENT,
				"flow_op_new: graph is NULL (use flow_default_graph())");
	return d;
}

flow_op_desc *flow_eager_new(const char *op_type)
{
	return desc_new(NULL, op_type, op_type);
}

void flow__desc_free(flow_op_desc *d)
{
	if (!d)
		return;
	if (d->tin)
		for (int i = 0; i < d->n_in; i++)
			flow_tensor_unref(d->tin[i]);
	free(d->tin);
	free(d->in);
	free(d->group_size);
	free(d->ctrl);
	flow__attrs_free(&d->attrs);
	free(d->type);
	free(d->name);
	free(d);
}

static int desc_grow(flow_op_desc *d, int extra)
{
	if (d->n_groups == d->cap_groups) {
		int nc = d->cap_groups ? d->cap_groups * 2 : 4;
		int *ng = realloc(d->group_size, sizeof *ng * (size_t)nc);
		if (!ng)
			return -1;
		d->group_size = ng;
		d->cap_groups = nc;
	}
	if (d->n_in + extra > d->cap_in) {
		int nc = d->cap_in ? d->cap_in : 4;
		while (nc < d->n_in + extra)
			nc *= 2;
		if (d->g) {
			flow_output *ni = realloc(d->in, sizeof *ni * (size_t)nc);
			if (!ni)
				return -1;
			d->in = ni;
		} else {
			flow_tensor **nt = realloc(d->tin, sizeof *nt * (size_t)nc);
			if (!nt)
				return -1;
			d->tin = nt;
		}
		d->cap_in = nc;
	}
	return 0;
}

void flow_op_add_input(flow_op_desc *d, flow_output in)
{
	flow_op_add_input_list(d, &in, 1);
}

void flow_op_add_input_list(flow_op_desc *d, const flow_output *in, int n)
{
	if (!d->g) {
		flow_status_set(&d->err, FLOW_INVALID_ARGUMENT,
				"eager op '%s': use flow_op_add_tensor, not graph outputs", d->type);
		return;
	}
	if (n < 0 || desc_grow(d, n)) {
		flow_status_set(&d->err, FLOW_RESOURCE_EXHAUSTED, "node '%s': cannot add inputs",
				d->name ? d->name : d->type);
		return;
	}
	for (int i = 0; i < n; i++)
		d->in[d->n_in++] = in[i];
	d->group_size[d->n_groups++] = n;
}

void flow_op_add_tensor(flow_op_desc *d, flow_tensor *t)
{
	flow_op_add_tensor_list(d, &t, 1);
}

void flow_op_add_tensor_list(flow_op_desc *d, flow_tensor *const *t, int n)
{
	if (d->g) {
		flow_status_set(&d->err, FLOW_INVALID_ARGUMENT,
				"node '%s': tensors can only be added to eager ops (flow_eager_new)",
				d->name ? d->name : d->type);
		return;
	}
	if (n < 0 || desc_grow(d, n)) {
		flow_status_set(&d->err, FLOW_RESOURCE_EXHAUSTED, "eager op '%s': cannot add inputs", d->type);
		return;
	}
	for (int i = 0; i < n; i++) {
		if (!t[i])
			flow_status_set(&d->err, FLOW_INVALID_ARGUMENT, "eager op '%s': input %d is NULL",
					d->type, d->n_in);
		d->tin[d->n_in++] = flow_tensor_ref(t[i]);
	}
	d->group_size[d->n_groups++] = n;
}

void flow_op_add_control_input(flow_op_desc *d, flow_op *op)
{
	if (d->n_ctrl == d->cap_ctrl) {
		int nc = d->cap_ctrl ? d->cap_ctrl * 2 : 4;
		flow_op **nc_ = realloc(d->ctrl, sizeof *nc_ * (size_t)nc);
		if (!nc_) {
			flow_status_set(&d->err, FLOW_RESOURCE_EXHAUSTED, "cannot add control input");
			return;
		}
		d->ctrl = nc_;
		d->cap_ctrl = nc;
	}
	d->ctrl[d->n_ctrl++] = op;
}

static flow_attr_value *set_attr(flow_op_desc *d, const char *name, flow_attr_kind k)
{
	flow_attr_value *v = name ? flow__attrs_set(&d->attrs, name) : NULL;
	if (!v) {
		flow_status_set(&d->err, FLOW_INVALID_ARGUMENT, "node '%s': cannot set attr '%s'",
				d->name ? d->name : d->type, name ? name : "(null)");
		return NULL;
	}
	v->kind = k;
	return v;
}

void flow_op_set_attr_int(flow_op_desc *d, const char *name, int64_t x)
{
	flow_attr_value *v = set_attr(d, name, FLOW_ATTR_INT);
	if (v)
		v->u.i = x;
}
void flow_op_set_attr_float(flow_op_desc *d, const char *name, double x)
{
	flow_attr_value *v = set_attr(d, name, FLOW_ATTR_FLOAT);
	if (v)
		v->u.f = x;
}
void flow_op_set_attr_bool(flow_op_desc *d, const char *name, int x)
{
	flow_attr_value *v = set_attr(d, name, FLOW_ATTR_BOOL);
	if (v)
		v->u.b = !!x;
}
void flow_op_set_attr_type(flow_op_desc *d, const char *name, flow_dtype x)
{
	flow_attr_value *v = set_attr(d, name, FLOW_ATTR_TYPE);
	if (v)
		v->u.type = x;
}
void flow_op_set_attr_shape(flow_op_desc *d, const char *name, const flow_shape *x)
{
	flow_attr_value *v = set_attr(d, name, FLOW_ATTR_SHAPE);
	if (v)
		v->u.shape = x ? *x : flow_shape_unknown();
}
void flow_op_set_attr_string(flow_op_desc *d, const char *name, const char *x)
{
	flow_attr_value *v = set_attr(d, name, FLOW_ATTR_STRING);
	if (v)
		v->u.s = strdup(x ? x : "");
}
void flow_op_set_attr_ints(flow_op_desc *d, const char *name, const int64_t *x, int n)
{
	flow_attr_value *v = set_attr(d, name, FLOW_ATTR_INTS);
	if (!v)
		return;
	v->u.ints.v = malloc(sizeof(int64_t) * (size_t)(n + 1));
	v->u.ints.n = v->u.ints.v ? n : 0;
	if (v->u.ints.v && n)
		memcpy(v->u.ints.v, x, sizeof(int64_t) * (size_t)n);
}
void flow_op_set_attr_floats(flow_op_desc *d, const char *name, const double *x, int n)
{
	flow_attr_value *v = set_attr(d, name, FLOW_ATTR_FLOATS);
	if (!v)
		return;
	v->u.floats.v = malloc(sizeof(double) * (size_t)(n + 1));
	v->u.floats.n = v->u.floats.v ? n : 0;
	if (v->u.floats.v && n)
		memcpy(v->u.floats.v, x, sizeof(double) * (size_t)n);
}
void flow_op_set_attr_tensor(flow_op_desc *d, const char *name, flow_tensor *t)
{
	if (!t) {
		flow_status_set(&d->err, FLOW_INVALID_ARGUMENT, "node '%s': attr '%s' tensor is NULL",
				d->name ? d->name : d->type, name ? name : "(null)");
		return;
	}
	flow_attr_value *v = set_attr(d, name, FLOW_ATTR_TENSOR);
	if (v)
		v->u.tensor = flow_tensor_ref(t);
}

/* ---- resolution ---- */
static const char *kind_name(flow_attr_kind k)
{
	static const char *const n[] = {"none", "int", "float", "bool", "type", "shape",
					"string", "ints", "floats", "tensor"};
	return (unsigned)k < sizeof n / sizeof n[0] ? n[k] : "?";
}

int flow__resolve(const flow_registered_op *r, const char *node, flow_attr_list *attrs,
		  const int *group_size, int n_groups, const flow_dtype *in_dt, int n_in,
		  int *n_out, flow_dtype **out_dt, unsigned char **is_ref, flow_status *st)
{
	const char *type = r->def->name;
	*out_dt = NULL;
	*is_ref = NULL;
	for (int i = 0; i < attrs->n; i++) {
		const flow_attr_spec *sp = NULL;
		for (int k = 0; k < r->n_attrs; k++)
			if (!strcmp(r->attrs[k].name, attrs->a[i].name))
				sp = &r->attrs[k];
		if (!sp) {
			flow_status_set(st, FLOW_NOT_FOUND, "node '%s' (%s): unknown attr '%s'", node, type,
					attrs->a[i].name);
			return -1;
		}
		flow_attr_value *v = &attrs->a[i].value;
		if (v->kind == FLOW_ATTR_INT && sp->kind == FLOW_ATTR_FLOAT) {
			v->kind = FLOW_ATTR_FLOAT; /* 2 for 2.0 is never ambiguous */
			v->u.f = (double)v->u.i;
		}
		if (v->kind != sp->kind) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "node '%s' (%s): attr '%s' is %s, got %s",
					node, type, sp->name, kind_name(sp->kind), kind_name(v->kind));
			return -1;
		}
	}
	if (n_groups != r->n_inputs) {
		char names[256] = "";
		size_t o = 0;
		for (int i = 0; i < r->n_inputs && o < sizeof names; i++) {
			int w = snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", r->inputs[i].name);
			if (w > 0)
				o += (size_t)w;
		}
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "node '%s' (%s): expects %d input%s (%s), got %d",
				node, type, r->n_inputs, r->n_inputs == 1 ? "" : "s", names, n_groups);
		return -1;
	}
	*is_ref = calloc((size_t)n_in + 1, 1);
	if (!*is_ref)
		return -1;
	int pos = 0;
	for (int i = 0; i < r->n_inputs; i++) {
		const flow_arg_spec *a = &r->inputs[i];
		int g = group_size[i];
		if (a->list_attr >= 0) {
			const flow_attr_spec *ls = &r->attrs[a->list_attr];
			const flow_attr_value *v = flow_attrs_find(attrs, ls->name);
			if (v && v->u.i != g) {
				flow_status_set(st, FLOW_INVALID_ARGUMENT,
						"node '%s' (%s): attr '%s' = %lld but input '%s' has %d elements",
						node, type, ls->name, (long long)v->u.i, a->name, g);
				return -1;
			}
			if (!v) {
				flow_attr_value *nv = flow__attrs_set(attrs, ls->name);
				if (!nv)
					return -1;
				nv->kind = FLOW_ATTR_INT;
				nv->u.i = g;
			}
		} else if (g != 1) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"node '%s' (%s): input '%s' takes one tensor, got a list of %d", node,
					type, a->name, g);
			return -1;
		}
		for (int j = 0; j < g; j++, pos++) {
			flow_dtype dt = in_dt[pos];
			(*is_ref)[pos] = (unsigned char)a->is_ref;
			if (a->fixed) {
				if (dt != a->fixed) {
					flow_status_set(st, FLOW_INVALID_ARGUMENT,
							"node '%s' (%s): input '%s' must be %s, got %s", node,
							type, a->name, flow_dtype_name(a->fixed), flow_dtype_name(dt));
					return -1;
				}
				continue;
			}
			const flow_attr_spec *ts = &r->attrs[a->type_attr];
			const flow_attr_value *v = flow_attrs_find(attrs, ts->name);
			if (!v) {
				flow_attr_value *nv = flow__attrs_set(attrs, ts->name);
				if (!nv)
					return -1;
				nv->kind = FLOW_ATTR_TYPE;
				nv->u.type = dt;
			} else if (v->u.type != dt) {
				flow_status_set(st, FLOW_INVALID_ARGUMENT,
						"node '%s' (%s): input '%s' has dtype %s but %s is %s", node,
						type, a->name, flow_dtype_name(dt), ts->name,
						flow_dtype_name(v->u.type));
				return -1;
			}
		}
	}
	/* Defaults, missing attrs, allowed sets, minimums. */
	for (int k = 0; k < r->n_attrs; k++) {
		const flow_attr_spec *sp = &r->attrs[k];
		const flow_attr_value *v = flow_attrs_find(attrs, sp->name);
		if (!v) {
			if (!sp->has_default) {
				flow_status_set(st, FLOW_INVALID_ARGUMENT, "node '%s' (%s): missing attr '%s' (%s)",
						node, type, sp->name, kind_name(sp->kind));
				return -1;
			}
			flow_attr_value *nv = flow__attrs_set(attrs, sp->name);
			if (!nv || flow__attr_value_copy(nv, &sp->def))
				return -1;
			v = nv;
		}
		if (sp->kind == FLOW_ATTR_TYPE && sp->allowed && !(sp->allowed & (1u << v->u.type))) {
			char allowed[128] = "";
			size_t o = 0;
			for (int t = 1; t < FLOW_DT_COUNT; t++)
				if (sp->allowed & (1u << t)) {
					int w = snprintf(allowed + o, sizeof allowed - o, "%s%s", o ? "," : "",
							 flow_dtype_name((flow_dtype)t));
					if (w > 0)
						o += (size_t)w;
				}
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"node '%s' (%s): attr '%s' = %s not in allowed {%s}", node, type,
					sp->name, flow_dtype_name(v->u.type), allowed);
			return -1;
		}
		if (sp->kind == FLOW_ATTR_TYPE && !flow_dtype_size(v->u.type)) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "node '%s' (%s): attr '%s' is not a valid dtype",
					node, type, sp->name);
			return -1;
		}
		if (sp->has_min && v->u.i < sp->min) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "node '%s' (%s): attr '%s' = %lld below minimum %lld",
					node, type, sp->name, (long long)v->u.i, (long long)sp->min);
			return -1;
		}
	}
	/* Outputs. */
	int n = 0;
	for (int i = 0; i < r->n_outputs; i++) {
		const flow_arg_spec *a = &r->outputs[i];
		n += a->list_attr >= 0 ? (int)flow_attrs_find(attrs, r->attrs[a->list_attr].name)->u.i : 1;
	}
	*out_dt = calloc((size_t)n + 1, sizeof **out_dt);
	if (!*out_dt)
		return -1;
	pos = 0;
	for (int i = 0; i < r->n_outputs; i++) {
		const flow_arg_spec *a = &r->outputs[i];
		int cnt = a->list_attr >= 0 ? (int)flow_attrs_find(attrs, r->attrs[a->list_attr].name)->u.i : 1;
		flow_dtype dt = a->fixed ? a->fixed : flow_attrs_find(attrs, r->attrs[a->type_attr].name)->u.type;
		for (int j = 0; j < cnt; j++)
			(*out_dt)[pos++] = dt;
	}
	*n_out = n;
	return 0;
}

/* ---- shape inference ---- */
struct flow_shape_ctx {
	const char *node, *type;
	int n_in;
	const flow_shape *in;
	const flow_dtype *in_dt;
	const flow_tensor *const *consts;
	int n_out;
	flow_shape *out;
	const flow_attr_list *attrs;
	flow_status *st;
};

int flow_shape_num_inputs(flow_shape_ctx *c) { return c->n_in; }
const flow_shape *flow_shape_input(flow_shape_ctx *c, int i)
{
	static const flow_shape unknown = {-1, {0}};
	return i >= 0 && i < c->n_in ? &c->in[i] : &unknown;
}
const flow_tensor *flow_shape_input_const(flow_shape_ctx *c, int i)
{
	return c->consts && i >= 0 && i < c->n_in ? c->consts[i] : NULL;
}
int flow_shape_num_outputs(flow_shape_ctx *c) { return c->n_out; }
void flow_shape_set_output(flow_shape_ctx *c, int i, const flow_shape *s)
{
	if (i >= 0 && i < c->n_out)
		c->out[i] = *s;
}
const flow_attr_value *flow_shape_attr(flow_shape_ctx *c, const char *name)
{
	return flow_attrs_find(c->attrs, name);
}
int64_t flow_shape_attr_int(flow_shape_ctx *c, const char *name, int64_t dflt)
{
	const flow_attr_value *v = flow_attrs_find(c->attrs, name);
	return v && v->kind == FLOW_ATTR_INT ? v->u.i : dflt;
}
int flow_shape_attr_bool(flow_shape_ctx *c, const char *name, int dflt)
{
	const flow_attr_value *v = flow_attrs_find(c->attrs, name);
	return v && v->kind == FLOW_ATTR_BOOL ? v->u.b : dflt;
}

int flow_shape_error(flow_shape_ctx *c, const char *fmt, ...)
{
	char m[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	flow_status_set(c->st, FLOW_INVALID_ARGUMENT, "node '%s' (%s): %s", c->node, c->type, m);
	return -1;
}

int flow_shape_fn_unchanged(flow_shape_ctx *c)
{
	for (int i = 0; i < c->n_out; i++)
		c->out[i] = *flow_shape_input(c, 0);
	return 0;
}

int flow_shape_fn_scalar(flow_shape_ctx *c)
{
	flow_shape s = flow_shape_make(0, NULL);
	for (int i = 0; i < c->n_out; i++)
		c->out[i] = s;
	return 0;
}

int flow_shape_broadcast(const flow_shape *a, const flow_shape *b, flow_shape *out, char *msg,
			 size_t msglen)
{
	if (a->ndim < 0 || b->ndim < 0) {
		*out = flow_shape_unknown();
		return 0;
	}
	int n = a->ndim > b->ndim ? a->ndim : b->ndim;
	out->ndim = n;
	for (int i = 0; i < n; i++) {
		int ia = a->ndim - n + i, ib = b->ndim - n + i;
		int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
		int64_t d;
		if (da == db)
			d = da;
		else if (da == 1)
			d = db;
		else if (db == 1)
			d = da;
		else if (da < 0 || db < 0)
			d = da < 0 ? db : da; /* unknown vs known: the known one (or 1 would have matched) */
		else {
			char sa[96], sb[96];
			snprintf(msg, msglen, "shapes %s and %s are not broadcast-compatible (dim %d: %lld vs %lld)",
				 flow_shape_str(a, sa, sizeof sa), flow_shape_str(b, sb, sizeof sb), i,
				 (long long)da, (long long)db);
			return -1;
		}
		out->dims[i] = d;
	}
	return 0;
}

int flow_shape_fn_broadcast(flow_shape_ctx *c)
{
	flow_shape o;
	char msg[256];
	if (flow_shape_broadcast(flow_shape_input(c, 0), flow_shape_input(c, 1), &o, msg, sizeof msg))
		return flow_shape_error(c, "%s", msg);
	for (int i = 0; i < c->n_out; i++)
		c->out[i] = o;
	return 0;
}

int flow__infer_shapes(const flow_registered_op *r, const char *node, const flow_attr_list *attrs,
		       int n_in, const flow_shape *in_shapes, const flow_dtype *in_dt,
		       const flow_tensor *const *in_consts, int n_out, flow_shape *out_shapes,
		       flow_status *st)
{
	for (int i = 0; i < n_out; i++)
		out_shapes[i] = flow_shape_unknown();
	if (!r->def->shape_fn)
		return 0;
	flow_shape_ctx c = {node, r->def->name, n_in, in_shapes, in_dt, in_consts, n_out, out_shapes, attrs, st};
	if (r->def->shape_fn(&c)) {
		if (flow_status_ok(st))
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "node '%s' (%s): shape inference failed",
					node, r->def->name);
		return -1;
	}
	return 0;
}

/* ---- finishing a node ---- */
static int valid_node_name(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '.' || *s == '/' || *s == '-'))
			return 0;
	return 1;
}

static char *unique_name(flow_graph *g, const char *base)
{
	size_t n = strlen(base) + 24;
	char *s = malloc(n);
	if (!s)
		return NULL;
	snprintf(s, n, "%s", base);
	while (flow_graph_op_by_name(g, s))
		snprintf(s, n, "%s_%llu", base, (unsigned long long)++g->name_seq);
	return s;
}

flow_op *flow_op_finish(flow_op_desc *d, flow_status *st)
{
	if (!d) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "flow_op_finish: description is NULL");
		return NULL;
	}
	PP_PHASE(PP_GRAPH_BUILD, "graph_build");
	flow_graph *g = d->g;
	flow_op *op = NULL;
	const char *label = d->name ? d->name : d->type;
	if (!flow_status_ok(&d->err)) {
		flow_status_set(st, d->err.code, "%s", d->err.msg);
		goto out;
	}
	if (!g) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "node '%s': eager descriptions run with flow_execute",
				label);
		goto out;
	}
	if (g->finalized) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION,
				"graph is finalized and cannot be modified (adding node '%s' of type '%s')",
				label, d->type);
		goto out;
	}
	if (d->name && (!valid_node_name(d->name) || flow_graph_op_by_name(g, d->name))) {
		flow_status_set(st, flow_graph_op_by_name(g, d->name) ? FLOW_ALREADY_EXISTS : FLOW_INVALID_ARGUMENT,
				flow_graph_op_by_name(g, d->name)
					? "node name '%s' is already used in the graph"
					: "node name '%s' is not valid (letters, digits, _ . / -)",
				d->name);
		goto out;
	}
	flow_status lst = {0};
	const flow_registered_op *r = flow_registry_lookup(d->type, &lst);
	if (!r) {
		/* Not found, or (LITE) its definition failed to register. */
		flow_status_set(st, lst.code, "node '%s': %s", label, lst.msg);
		goto out;
	}
	for (int i = 0; i < d->n_in; i++) {
		flow_output in = d->in[i];
		if (!in.op) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "node '%s' (%s): input %d is NULL", label,
					d->type, i);
			goto out;
		}
		if (in.op->graph != g) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"node '%s' (%s): input %d comes from node '%s' of another graph", label,
					d->type, i, in.op->name);
			goto out;
		}
		if (in.index < 0 || in.index >= in.op->n_outputs) {
			flow_status_set(st, FLOW_OUT_OF_RANGE,
					"node '%s' (%s): input %d asks for output %d of '%s', which has %d", label,
					d->type, i, in.index, in.op->name, in.op->n_outputs);
			goto out;
		}
	}
	for (int i = 0; i < d->n_ctrl; i++)
		if (!d->ctrl[i] || d->ctrl[i]->graph != g) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"node '%s' (%s): control input %d is %s", label, d->type, i,
					d->ctrl[i] ? "from another graph" : "NULL");
			goto out;
		}
	flow_dtype in_dt_s[16];
	flow_shape in_sh_s[16];
	const flow_tensor *in_c_s[16];
	flow_dtype *in_dt = d->n_in <= 16 ? in_dt_s : malloc(sizeof *in_dt * (size_t)d->n_in);
	flow_shape *in_sh = d->n_in <= 16 ? in_sh_s : malloc(sizeof *in_sh * (size_t)d->n_in);
	const flow_tensor **in_c = d->n_in <= 16 ? in_c_s : malloc(sizeof *in_c * (size_t)d->n_in);
	if (!in_dt || !in_sh || !in_c) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "node '%s': out of memory", label);
		goto free_in;
	}
	for (int i = 0; i < d->n_in; i++) {
		flow_op *p = d->in[i].op;
		in_dt[i] = p->out_dtypes[d->in[i].index];
		in_sh[i] = p->out_shapes[d->in[i].index];
		in_c[i] = !strcmp(p->reg->def->name, "Const") ? flow_op_get_attr_tensor(p, "value") : NULL;
	}
	op = calloc(1, sizeof *op);
	if (!op) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "node '%s': out of memory", label);
		goto free_in;
	}
	op->graph = g;
	op->reg = r;
	op->var_index = -1;
	op->attrs = d->attrs;
	memset(&d->attrs, 0, sizeof d->attrs);
	op->name = d->name ? strdup(d->name) : unique_name(g, d->type);
	if (flow__resolve(r, op->name ? op->name : label, &op->attrs, d->group_size, d->n_groups, in_dt,
			  d->n_in, &op->n_outputs, &op->out_dtypes, &op->input_is_ref, st))
		goto fail;
	for (int i = 0; i < d->n_in; i++)
		if (op->input_is_ref[i] && strcmp(d->in[i].op->reg->def->name, "Variable")) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"node '%s' (%s): input %d must come from a Variable, got '%s' (%s)",
					op->name, d->type, i, d->in[i].op->name, d->in[i].op->reg->def->name);
			goto fail;
		}
	op->out_shapes = calloc((size_t)op->n_outputs + 1, sizeof *op->out_shapes);
	if (!op->out_shapes)
		goto fail;
	{
		PP_PHASE(PP_SHAPE_INFERENCE, "shape_inference");
		if (flow__infer_shapes(r, op->name, &op->attrs, d->n_in, in_sh, in_dt, in_c, op->n_outputs,
				       op->out_shapes, st))
			goto fail;
	}
	op->n_inputs = d->n_in;
	op->inputs = d->in;
	d->in = NULL;
	op->n_ctrl = d->n_ctrl;
	op->ctrl = d->ctrl;
	d->ctrl = NULL;
	if (g->n_ops == g->cap_ops) {
		int nc = g->cap_ops ? g->cap_ops * 2 : 64;
		flow_op **no = realloc(g->ops, sizeof *no * (size_t)nc);
		if (!no)
			goto fail;
		g->ops = no;
		g->cap_ops = nc;
	}
	if (pp_hash_add(&g->by_name, pp_hash_str(op->name), (uint32_t)g->n_ops))
		goto fail;
	op->id = g->n_ops;
	g->ops[g->n_ops++] = op;
	g->version++;
	goto free_in;
fail:
	if (flow_status_ok(st))
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "node '%s': out of memory", label);
	if (op) {
		op->inputs = NULL;
		op->ctrl = NULL;
		op_free(op);
	}
	op = NULL;
free_in:
	if (in_dt != in_dt_s)
		free(in_dt);
	if (in_sh != in_sh_s)
		free(in_sh);
	if (in_c != in_c_s)
		free((void *)in_c);
out:
	flow__desc_free(d);
	return op;
}

/* ---- convenience builders ---- */
static flow_output out0(flow_op *op)
{
	flow_output o = {op, 0};
	return o;
}

flow_output flow_const(flow_graph *g, const char *name, flow_tensor *value, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "Const", name);
	if (value) {
		flow_op_set_attr_tensor(d, "value", value);
		flow_op_set_attr_type(d, "dtype", value->dtype);
	} else {
		flow_status_set(&d->err, FLOW_INVALID_ARGUMENT, "Const '%s': value is NULL", name ? name : "");
	}
	return out0(flow_op_finish(d, st));
}

flow_output flow_const_f32(flow_graph *g, const char *name, float v, flow_status *st)
{
	flow_tensor *t = flow_tensor_scalar_f32(v);
	flow_output o = flow_const(g, name, t, st);
	flow_tensor_unref(t);
	return o;
}

flow_output flow_placeholder(flow_graph *g, const char *name, flow_dtype dt, const flow_shape *shape,
			     flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "Placeholder", name);
	flow_op_set_attr_type(d, "dtype", dt);
	flow_shape u = flow_shape_unknown();
	flow_op_set_attr_shape(d, "shape", shape ? shape : &u);
	return out0(flow_op_finish(d, st));
}

flow_output flow_identity(flow_graph *g, const char *name, flow_output x, flow_status *st)
{
	return flow_simple(g, "Identity", name, &x, 1, st);
}

flow_op *flow_noop(flow_graph *g, const char *name, flow_status *st)
{
	return flow_op_finish(flow_op_new(g, "NoOp", name), st);
}

flow_op *flow_group(flow_graph *g, const char *name, flow_op *const *ops, int n, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "NoOp", name);
	int init = 0;
	for (int i = 0; i < n; i++) {
		flow_op_add_control_input(d, ops[i]);
		if (ops[i] && ops[i]->is_init)
			init = 1;
	}
	flow_op *op = flow_op_finish(d, st);
	if (op)
		op->is_init = init;
	return op;
}

flow_output flow_simple(flow_graph *g, const char *op_type, const char *name, const flow_output *in,
			int n_in, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, op_type, name);
	for (int i = 0; i < n_in; i++)
		flow_op_add_input(d, in[i]);
	return out0(flow_op_finish(d, st));
}

/* ---- variables ---- */
static flow_op *variable_node(flow_graph *g, const char *name, flow_dtype dt, const flow_shape *shape,
			      flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "Variable", name);
	flow_op_set_attr_type(d, "dtype", dt);
	flow_op_set_attr_shape(d, "shape", shape);
	flow_op *v = flow_op_finish(d, st);
	if (!v)
		return NULL;
	if (g->n_vars == g->cap_vars) {
		int nc = g->cap_vars ? g->cap_vars * 2 : 16;
		flow_op **nv = realloc(g->vars, sizeof *nv * (size_t)nc);
		if (!nv) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "variable '%s': out of memory", v->name);
			return NULL;
		}
		g->vars = nv;
		g->cap_vars = nc;
	}
	v->var_index = g->n_vars;
	g->vars[g->n_vars++] = v;
	return v;
}

flow_output flow_variable_uninit(flow_graph *g, const char *name, flow_dtype dt, const flow_shape *shape,
				 flow_status *st)
{
	PP_PHASE(PP_VARIABLE_CREATE, "variable_create");
	flow_shape u = flow_shape_unknown();
	return out0(variable_node(g, name, dt, shape ? shape : &u, st));
}

flow_output flow_variable(flow_graph *g, const char *name, flow_output init, flow_status *st)
{
	PP_PHASE(PP_VARIABLE_CREATE, "variable_create");
	flow_output none = {NULL, 0};
	if (!init.op || !g || init.op->graph != g || init.index < 0 || init.index >= init.op->n_outputs) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"variable '%s': initial value is %s", name ? name : "",
				!init.op ? "NULL" : "not an output of this graph");
		return none;
	}
	flow_op *v = variable_node(g, name, init.op->out_dtypes[init.index],
				   &init.op->out_shapes[init.index], st);
	if (!v)
		return none;
	char an[512];
	snprintf(an, sizeof an, "%s/Assign", v->name);
	flow_output a = flow_assign(g, flow_graph_op_by_name(g, an) ? NULL : an, out0(v), init, st);
	if (!a.op)
		return none;
	a.op->is_init = 1;
	v->initializer = a.op;
	return out0(v);
}

flow_op *flow_variable_initializer(flow_op *var)
{
	return var ? var->initializer : NULL;
}

flow_output flow_read_variable(flow_graph *g, const char *name, flow_output var, flow_status *st)
{
	return flow_simple(g, "ReadVariable", name, &var, 1, st);
}

static flow_output assign_like(flow_graph *g, const char *type, const char *name, flow_output var,
			       flow_output value, flow_status *st)
{
	flow_output in[2] = {var, value};
	return flow_simple(g, type, name, in, 2, st);
}

flow_output flow_assign(flow_graph *g, const char *name, flow_output var, flow_output value, flow_status *st)
{
	return assign_like(g, "Assign", name, var, value, st);
}
flow_output flow_assign_add(flow_graph *g, const char *name, flow_output var, flow_output value,
			    flow_status *st)
{
	return assign_like(g, "AssignAdd", name, var, value, st);
}
flow_output flow_assign_sub(flow_graph *g, const char *name, flow_output var, flow_output value,
			    flow_status *st)
{
	return assign_like(g, "AssignSub", name, var, value, st);
}

flow_op *flow_global_variables_initializer(flow_graph *g, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "NoOp", flow_graph_op_by_name(g, "init") ? NULL : "init");
	if (!d->name) {
		free(d->name);
		d->name = unique_name(g, "init");
	}
	for (int i = 0; i < g->n_vars; i++)
		if (g->vars[i]->initializer)
			flow_op_add_control_input(d, g->vars[i]->initializer);
	flow_op *op = flow_op_finish(d, st);
	if (op)
		op->is_init = 1;
	return op;
}

/* ---- whole-graph validation (TF's ExtendSession path) ----
 * TF's ExtendSession checks the whole graph for cycles and then rebuilds the
 * session's execution graph from the full GraphDef (ConvertGraphDefToGraph:
 * every NodeDef validated against its OpDef, shapes inferred again). We do
 * the same work per node: attrs against the op's spec, then the shape
 * function re-run on the producers' shapes, which must agree with the shapes
 * recorded at build time. */
static int revalidate_node(flow_op *op, flow_status *st)
{
	const flow_registered_op *r = op->reg;
	for (int k = 0; k < r->n_attrs; k++) {
		const flow_attr_spec *sp = &r->attrs[k];
		const flow_attr_value *v = flow_attrs_find(&op->attrs, sp->name);
		if (!v || v->kind != sp->kind ||
		    (sp->kind == FLOW_ATTR_TYPE && sp->allowed && !(sp->allowed & (1u << v->u.type))) ||
		    (sp->has_min && v->u.i < sp->min)) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "graph: node '%s' (%s): attr '%s' is missing or invalid",
					op->name, r->def->name, sp->name);
			return -1;
		}
	}
	if (!r->def->shape_fn)
		return 0;
	flow_shape in_s[16], out_s[8];
	flow_dtype in_d[16];
	const flow_tensor *in_c[16];
	if (op->n_inputs > 16 || op->n_outputs > 8)
		return 0; /* wide nodes (lists): checked for attrs only */
	for (int i = 0; i < op->n_inputs; i++) {
		flow_op *p = op->inputs[i].op;
		in_s[i] = p->out_shapes[op->inputs[i].index];
		in_d[i] = p->out_dtypes[op->inputs[i].index];
		in_c[i] = !strcmp(p->reg->def->name, "Const") ? flow_op_get_attr_tensor(p, "value") : NULL;
	}
	if (flow__infer_shapes(r, op->name, &op->attrs, op->n_inputs, in_s, in_d, in_c, op->n_outputs, out_s, st))
		return -1;
	for (int i = 0; i < op->n_outputs; i++) {
		const flow_shape *a = &out_s[i], *b = &op->out_shapes[i];
		int same = a->ndim == b->ndim;
		for (int k = 0; same && k < a->ndim; k++)
			same = a->dims[k] == b->dims[k];
		if (!same) {
			char sa[96], sb[96];
			flow_status_set(st, FLOW_INTERNAL, "graph: node '%s' output %d: shape %s now infers as %s",
					op->name, i, flow_shape_str(b, sb, sizeof sb), flow_shape_str(a, sa, sizeof sa));
			return -1;
		}
	}
	return 0;
}

int flow__graph_validate(flow_graph *g, flow_status *st)
{
	int n = g->n_ops;
	int *indeg = calloc((size_t)n + 1, sizeof *indeg);
	int *off = calloc((size_t)n + 2, sizeof *off);
	int rc = -1;
	int *adj = NULL, *queue = NULL;
	if (!indeg || !off)
		goto oom;
	/* Every edge must point at an existing, earlier-or-any node of this graph. */
	size_t edges = 0;
	for (int i = 0; i < n; i++) {
		flow_op *op = g->ops[i];
		if (!op->reg || op->id != i) {
			flow_status_set(st, FLOW_INTERNAL, "graph: node %d is corrupt", i);
			goto done;
		}
		for (int k = 0; k < op->n_inputs + op->n_ctrl; k++) {
			flow_op *src = k < op->n_inputs ? op->inputs[k].op : op->ctrl[k - op->n_inputs];
			if (!src || src->graph != g || src->id < 0 || src->id >= n || g->ops[src->id] != src) {
				flow_status_set(st, FLOW_INVALID_ARGUMENT, "graph: node '%s' has a dangling input %d",
						op->name, k);
				goto done;
			}
			if (k < op->n_inputs && op->inputs[k].index >= src->n_outputs) {
				flow_status_set(st, FLOW_INVALID_ARGUMENT,
						"graph: node '%s' reads output %d of '%s', which has %d", op->name,
						op->inputs[k].index, src->name, src->n_outputs);
				goto done;
			}
			off[src->id + 1]++;
			indeg[i]++;
			edges++;
		}
	}
	for (int i = 0; i < n; i++)
		off[i + 1] += off[i];
	adj = malloc(sizeof *adj * (edges + 1));
	queue = malloc(sizeof *queue * ((size_t)n + 1));
	int *fill = malloc(sizeof *fill * ((size_t)n + 1));
	if (!adj || !queue || !fill) {
		free(fill);
		goto oom;
	}
	memcpy(fill, off, sizeof *fill * (size_t)n);
	for (int i = 0; i < n; i++) {
		flow_op *op = g->ops[i];
		for (int k = 0; k < op->n_inputs + op->n_ctrl; k++) {
			flow_op *src = k < op->n_inputs ? op->inputs[k].op : op->ctrl[k - op->n_inputs];
			adj[fill[src->id]++] = i;
		}
	}
	free(fill);
	int head = 0, tail = 0;
	for (int i = 0; i < n; i++)
		if (!indeg[i])
			queue[tail++] = i;
	while (head < tail) {
		int u = queue[head++];
		for (int e = off[u]; e < off[u + 1]; e++)
			if (--indeg[adj[e]] == 0)
				queue[tail++] = adj[e];
	}
	if (tail != n) {
		for (int i = 0; i < n; i++)
			if (indeg[i]) {
				flow_status_set(st, FLOW_INVALID_ARGUMENT, "graph has a cycle through node '%s'",
						g->ops[i]->name);
				break;
			}
		goto done;
	}
	for (int i = 0; i < n; i++)
		if (revalidate_node(g->ops[i], st))
			goto done;
	rc = 0;
	goto done;
oom:
	flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "graph validation: out of memory");
done:
	free(indeg);
	free(off);
	free(adj);
	free(queue);
	return rc;
}

static uint64_t flow__graph_hash_locked(flow_graph *g);
static pthread_mutex_t hash_mu = PTHREAD_MUTEX_INITIALIZER;

uint64_t flow__graph_hash(flow_graph *g)
{
	/* Sessions on one graph may run in parallel: the cached hash is shared. */
	pthread_mutex_lock(&hash_mu);
	uint64_t h = flow__graph_hash_locked(g);
	pthread_mutex_unlock(&hash_mu);
	return h;
}

static uint64_t flow__graph_hash_locked(flow_graph *g)
{
	if (g->hash_version == g->version)
		return g->hash;
	flow_buf b = {0};
	uint64_t h = 0;
	for (int i = 0; i < g->n_ops; i++) {
		flow_op *op = g->ops[i];
		b.n = 0;
		flow__buf_str(&b, op->reg->def->name);
		flow__buf_str(&b, op->name);
		for (int k = 0; k < op->n_inputs; k++) {
			flow__buf_u32(&b, (uint32_t)op->inputs[k].op->id);
			flow__buf_u32(&b, (uint32_t)op->inputs[k].index);
		}
		for (int k = 0; k < op->n_ctrl; k++)
			flow__buf_u32(&b, (uint32_t)op->ctrl[k]->id | 0x80000000u);
		flow__attrs_serialize(&op->attrs, &b);
		h = flow_hash_bytes(b.p, b.n, h ^ 0x9e3779b97f4a7c15ull);
	}
	free(b.p);
	g->hash = h;
	g->hash_version = g->version;
	return h;
}

/* ---- snapshots and dot ---- */
int flow_graph_snapshot(flow_graph *g, const char *label)
{
	int n = g->n_ops, ne = 0;
	for (int i = 0; i < n; i++)
		ne += g->ops[i]->n_inputs + g->ops[i]->n_ctrl;
	pp_graph_node *nodes = calloc((size_t)n + 1, sizeof *nodes);
	pp_graph_edge *edges = calloc((size_t)ne + 1, sizeof *edges);
	char *shapes = calloc((size_t)n + 1, 48);
	int rc = -1;
	if (nodes && edges && shapes) {
		int e = 0;
		for (int i = 0; i < n; i++) {
			flow_op *op = g->ops[i];
			nodes[i].name = op->name;
			nodes[i].op = op->reg->def->name;
			nodes[i].device = "cpu";
			if (op->n_outputs) {
				flow_shape_str(&op->out_shapes[0], shapes + (size_t)i * 48, 48);
				nodes[i].shape = shapes + (size_t)i * 48;
			}
			nodes[i].cost_ns = op->cost_ns;
			for (int k = 0; k < op->n_inputs; k++) {
				edges[e].src = op->inputs[k].op->id;
				edges[e].dst = i;
				edges[e++].src_output = op->inputs[k].index;
			}
			for (int k = 0; k < op->n_ctrl; k++) {
				edges[e].src = op->ctrl[k]->id;
				edges[e].dst = i;
				edges[e++].src_output = -1;
			}
		}
		rc = pp_graph_snapshot(label ? label : "graph", (int64_t)g->version, nodes, n, edges, e);
	}
	free(nodes);
	free(edges);
	free(shapes);
	return rc;
}

char *flow_graph_to_dot(const flow_graph *g)
{
	flow_buf b = {0};
	char line[512], sh[64];
	const char *hdr = "digraph flow {\n  rankdir=TB;\n  node [shape=record, fontname=\"monospace\"];\n";
	flow__buf_put(&b, hdr, strlen(hdr));
	for (int i = 0; i < g->n_ops; i++) {
		flow_op *op = g->ops[i];
		if (op->n_outputs)
			flow_shape_str(&op->out_shapes[0], sh, sizeof sh);
		else
			snprintf(sh, sizeof sh, "-");
		int w = snprintf(line, sizeof line, "  n%d [label=\"{%s|%s|%s}\"];\n", i, op->name,
				 op->reg->def->name, sh);
		flow__buf_put(&b, line, (size_t)w < sizeof line ? (size_t)w : sizeof line - 1);
		for (int k = 0; k < op->n_inputs; k++) {
			w = snprintf(line, sizeof line, "  n%d -> n%d [label=\"%d\"];\n", op->inputs[k].op->id,
				     i, op->inputs[k].index);
			flow__buf_put(&b, line, (size_t)w);
		}
		for (int k = 0; k < op->n_ctrl; k++) {
			w = snprintf(line, sizeof line, "  n%d -> n%d [style=dashed];\n", op->ctrl[k]->id, i);
			flow__buf_put(&b, line, (size_t)w);
		}
	}
	flow__buf_put(&b, "}\n", 3);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return (char *)b.p;
}
