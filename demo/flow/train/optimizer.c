/*
 * optimizer.c — SGD, momentum, RMSprop and Adam with Keras semantics.
 *
 * Graph mode: one fused apply op per variable (_ApplyAdam …) plus an
 * iteration counter. Slot variables are created the first time they are
 * needed — flow_optimizer_apply calls flow_optimizer_build — as Keras'
 * BaseOptimizer.apply does ("if not self.built: self.build(...)"), or up
 * front when the caller builds early. Either way it is an optimizer_setup
 * phase, which is what the first-step scenario measures.
 */
#include "train_internal.h"
#include "pp_grow.h"
#include "phaseprof.h"

#include <math.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>

typedef struct opt_slotrec {
	flow_op *var;
	flow_output slot[2];
	flow_op *init[2];           /* their initializers (Assign) */
	int initialised;            /* init ran through flow_optimizer_slot_initializer */
} opt_slotrec;

typedef struct opt_eager {
	flow_tensor *var;
	flow_tensor *slot[2];
} opt_eager;

struct flow_optimizer {
	flow_optimizer_options o;
	train_opt_hp hp;
	int id;
	flow_graph *g;
	int n, cap;
	opt_slotrec *recs;
	flow_output iterations;
	flow_op *iter_init;
	int iter_initialised;
	int ne, cap_e;
	opt_eager *eager;
	int64_t eager_t;
};

static atomic_int opt_seq;

flow_optimizer_options flow_optimizer_defaults(flow_optimizer_kind kind)
{
	flow_optimizer_options o = {0};
	o.kind = kind;
	o.learning_rate = (kind == FLOW_OPT_SGD || kind == FLOW_OPT_MOMENTUM) ? 0.01 : 0.001;
	o.momentum = 0.9;
	o.rho = 0.9;
	o.beta1 = 0.9;
	o.beta2 = 0.999;
	o.epsilon = 1e-7;
	return o;
}

static const char *const opt_names[] = {"sgd", "momentum", "rmsprop", "adam"};

const char *flow_optimizer_name(int kind)
{
	return kind >= 0 && kind <= FLOW_OPT_ADAM ? opt_names[kind] : "unknown";
}

int flow_optimizer_from_name(const char *name)
{
	for (int i = 0; name && i <= FLOW_OPT_ADAM; i++)
		if (!strcasecmp(name, opt_names[i]))
			return i;
	return -1;
}

static train_opt_hp hp_from(const flow_optimizer_options *in)
{
	flow_optimizer_options d = flow_optimizer_defaults(in->kind);
	train_opt_hp hp = {0};
	hp.kind = in->kind;
	hp.lr = (float)(in->learning_rate > 0 ? in->learning_rate : d.learning_rate);
	hp.momentum = (float)(in->momentum > 0 ? in->momentum : d.momentum);
	hp.nesterov = in->nesterov;
	hp.rho = (float)(in->rho > 0 ? in->rho : d.rho);
	hp.beta1 = (float)(in->beta1 > 0 ? in->beta1 : d.beta1);
	hp.beta2 = (float)(in->beta2 > 0 ? in->beta2 : d.beta2);
	hp.eps = (float)(in->epsilon > 0 ? in->epsilon : d.epsilon);
	return hp;
}

/* ---- the fused update ---- */

typedef struct upd {
	const train_opt_hp *hp;
	float *var, *m, *v;
	const float *g;
	float lr_t;
} upd;

/* Hyper-parameters copied to locals and restrict pointers, so the loops
 * vectorise (with -fno-math-errno sqrtf is one instruction). */
static void upd_range(void *ud, int64_t b, int64_t e)
{
	const upd *u = ud;
	const train_opt_hp *hp = u->hp;
	float *restrict x = u->var, *restrict m = u->m, *restrict v = u->v;
	const float *restrict g = u->g;
	const float lr = hp->lr, mu = hp->momentum, rho = hp->rho, eps = hp->eps;
	const float c1 = 1.0f - hp->beta1, c2 = 1.0f - hp->beta2, lrt = u->lr_t;
	switch (hp->kind) {
	case FLOW_OPT_SGD:
		for (int64_t i = b; i < e; i++)
			x[i] -= lr * g[i];
		break;
	case FLOW_OPT_MOMENTUM: /* Keras: m = mu*m - lr*g; x += m (nesterov: mu*m - lr*g) */
		if (hp->nesterov)
			for (int64_t i = b; i < e; i++) {
				m[i] = mu * m[i] - lr * g[i];
				x[i] += mu * m[i] - lr * g[i];
			}
		else
			for (int64_t i = b; i < e; i++) {
				m[i] = mu * m[i] - lr * g[i];
				x[i] += m[i];
			}
		break;
	case FLOW_OPT_RMSPROP: /* Keras 3: v = rho*v + (1-rho)*g^2; x -= lr*g/sqrt(v+eps) */
		for (int64_t i = b; i < e; i++) {
			m[i] = rho * m[i] + (1.0f - rho) * g[i] * g[i];
			x[i] -= lr * g[i] / sqrtf(m[i] + eps);
		}
		break;
	case FLOW_OPT_ADAM: /* Keras: lr_t = lr*sqrt(1-b2^t)/(1-b1^t); x -= lr_t*m/(sqrt(v)+eps) */
		for (int64_t i = b; i < e; i++) {
			float gi = g[i];
			float mi = m[i] + (gi - m[i]) * c1;
			float vi = v[i] + (gi * gi - v[i]) * c2;
			m[i] = mi;
			v[i] = vi;
			x[i] -= lrt * mi / (sqrtf(vi) + eps);
		}
		break;
	}
}

void train_update_f32(const train_opt_hp *hp, int64_t t, float *var, float *m, float *v,
		      const float *g, int64_t n, flow_threadpool *pool)
{
	upd u = {hp, var, m, v, g, hp->lr};
	if (hp->kind == FLOW_OPT_ADAM) {
		double b1t = pow(hp->beta1, (double)t), b2t = pow(hp->beta2, (double)t);
		u.lr_t = (float)(hp->lr * sqrt(1.0 - b2t) / (1.0 - b1t));
	}
	if (pool)
		flow_parallel_for(pool, n, 32768, upd_range, &u);
	else
		upd_range(&u, 0, n);
}

void flow_optimizer_update_f32(const flow_optimizer_options *o, int64_t t, float *var, float *m,
			       float *v, const float *grad, int64_t n)
{
	train_opt_hp hp = hp_from(o);
	train_update_f32(&hp, t, var, m, v, grad, n, NULL);
}

/* ---- objects ---- */

flow_optimizer *flow_optimizer_new(const flow_optimizer_options *opts, flow_status *st)
{
	if (flow_train_init(st))
		return NULL;
	flow_optimizer_options o = opts ? *opts : flow_optimizer_defaults(FLOW_OPT_ADAM);
	if (o.kind < FLOW_OPT_SGD || o.kind > FLOW_OPT_ADAM) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "optimizer: unknown kind %d", o.kind);
		return NULL;
	}
	if (o.learning_rate < 0 || o.beta1 >= 1 || o.beta2 >= 1 || o.rho >= 1 || o.epsilon < 0) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"optimizer %s: learning_rate must be >= 0 and beta1/beta2/rho < 1",
				flow_optimizer_name(o.kind));
		return NULL;
	}
	flow_optimizer *op = calloc(1, sizeof *op);
	if (!op) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "optimizer: out of memory");
		return NULL;
	}
	op->o = o;
	op->hp = hp_from(&o);
	op->id = atomic_fetch_add(&opt_seq, 1) + 1;
	return op;
}

void flow_optimizer_free(flow_optimizer *o)
{
	if (!o)
		return;
	for (int i = 0; i < o->ne; i++) {
		flow_tensor_unref(o->eager[i].var);
		flow_tensor_unref(o->eager[i].slot[0]);
		flow_tensor_unref(o->eager[i].slot[1]);
	}
	free(o->eager);
	free(o->recs);
	free(o);
}

int flow_optimizer_slots_per_var(const flow_optimizer *o)
{
	return o->o.kind == FLOW_OPT_SGD ? 0 : o->o.kind == FLOW_OPT_ADAM ? 2 : 1;
}

int flow_optimizer_num_slots(const flow_optimizer *o)
{
	return (o->n + o->ne) * flow_optimizer_slots_per_var(o);
}

static opt_slotrec *find_rec(const flow_optimizer *o, const flow_op *var)
{
	for (int i = 0; i < o->n; i++)
		if (o->recs[i].var == var)
			return &o->recs[i];
	return NULL;
}

flow_output flow_optimizer_slot(const flow_optimizer *o, flow_op *var, int slot)
{
	opt_slotrec *r = find_rec(o, var);
	flow_output none = {NULL, 0};
	return r && slot >= 0 && slot < flow_optimizer_slots_per_var(o) ? r->slot[slot] : none;
}

static flow_output zeros_var(flow_graph *g, const char *name, flow_dtype dt, const flow_shape *s,
			     flow_op **init, flow_status *st)
{
	flow_output none = {NULL, 0};
	char zn[320];
	snprintf(zn, sizeof zn, "%s/zeros", name);
	flow_op_desc *d = flow_op_new(g, "_Zeros", zn);
	flow_op_set_attr_type(d, "T", dt);
	flow_op_set_attr_shape(d, "shape", s);
	flow_op *z = flow_op_finish(d, st);
	if (!z)
		return none;
	flow_output v = flow_variable(g, name, flow_out(z, 0), st);
	if (v.op)
		*init = flow_variable_initializer(v.op);
	return v;
}

int flow_optimizer_build(flow_optimizer *o, flow_graph *g, const flow_output *vars, int n,
			 flow_status *st)
{
	if (o->g && o->g != g) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"optimizer %s: already built for another graph",
				flow_optimizer_name(o->o.kind));
		return -1;
	}
	int todo = !o->iterations.op;
	for (int i = 0; i < n && !todo; i++)
		todo = !find_rec(o, vars[i].op);
	if (!todo)
		return 0;
	PP_PHASE(PP_OPTIMIZER_SETUP, "optimizer_setup");
	o->g = g;
	char name[300];
	const char *kn = flow_optimizer_name(o->o.kind);
	if (!o->iterations.op) {
		snprintf(name, sizeof name, "%s_%d/iterations", kn, o->id);
		flow_tensor *zero = flow_tensor_scalar_i64(0);
		flow_output c = flow_const(g, NULL, zero, st);
		flow_tensor_unref(zero);
		if (!c.op)
			return -1;
		o->iterations = flow_variable(g, name, c, st);
		if (!o->iterations.op)
			return -1;
		o->iter_init = flow_variable_initializer(o->iterations.op);
	}
	int ns = flow_optimizer_slots_per_var(o);
	static const char *const slot_names[4][2] = {
		{"", ""}, {"momentum", ""}, {"velocity", ""}, {"momentum", "velocity"}};
	for (int i = 0; i < n; i++) {
		if (find_rec(o, vars[i].op))
			continue;
		if (PP_GROW(o->recs, o->n + 1, o->cap) != 0) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "optimizer: out of memory");
			return -1;
		}
		opt_slotrec *r = &o->recs[o->n];
		memset(r, 0, sizeof *r);
		r->var = vars[i].op;
		flow_shape s = flow_op_output_shape(vars[i].op, vars[i].index);
		flow_dtype dt = flow_op_output_dtype(vars[i].op, vars[i].index);
		char sb[64];
		if (!flow_shape_is_full(&s)) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"optimizer %s: variable '%s' has shape %s; slots need a full shape",
					kn, flow_op_name(vars[i].op), flow_shape_str(&s, sb, sizeof sb));
			return -1;
		}
		if (dt != FLOW_F32) {
			flow_status_set(st, FLOW_UNIMPLEMENTED,
					"optimizer %s: variable '%s' is %s; only f32 is trained", kn,
					flow_op_name(vars[i].op), flow_dtype_name(dt));
			return -1;
		}
		for (int k = 0; k < ns; k++) {
			snprintf(name, sizeof name, "%s_%d/%s/%s", kn, o->id, flow_op_name(vars[i].op),
				 slot_names[o->o.kind][k]);
			r->slot[k] = zeros_var(g, name, dt, &s, &r->init[k], st);
			if (!r->slot[k].op)
				return -1;
		}
		o->n++;
	}
	pp_counter("flow.optimizer.slots", flow_optimizer_num_slots(o));
	return 0;
}

flow_op *flow_optimizer_slot_initializer(flow_optimizer *o, flow_graph *g, flow_status *st)
{
	int ns = flow_optimizer_slots_per_var(o), n = 0;
	flow_op **ops = malloc(sizeof *ops * (size_t)(o->n * 2 + 1));
	if (!ops) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "optimizer: out of memory");
		return NULL;
	}
	if (o->iter_init && !o->iter_initialised) {
		ops[n++] = o->iter_init;
		o->iter_initialised = 1;
	}
	for (int i = 0; i < o->n; i++) {
		if (o->recs[i].initialised)
			continue;
		for (int k = 0; k < ns; k++)
			if (o->recs[i].init[k])
				ops[n++] = o->recs[i].init[k];
		o->recs[i].initialised = 1;
	}
	flow_op *grp = n ? flow_group(g, NULL, ops, n, st) : NULL;
	free(ops);
	return grp;
}

flow_op *flow_optimizer_apply(flow_optimizer *o, flow_graph *g, const flow_output *grads,
			      const flow_output *vars, int n, flow_status *st)
{
	if (flow_optimizer_build(o, g, vars, n, st))
		return NULL;
	flow_op **applies = malloc(sizeof *applies * (size_t)(n + 1));
	if (!applies) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "optimizer: out of memory");
		return NULL;
	}
	static const char *const types[] = {"_ApplySGD", "_ApplyMomentum", "_ApplyRMSProp",
					    "_ApplyAdam"};
	int ns = flow_optimizer_slots_per_var(o), k = 0;
	for (int i = 0; i < n; i++) {
		if (!grads[i].op)
			continue;   /* no gradient flows to this variable: nothing to apply */
		opt_slotrec *r = find_rec(o, vars[i].op);
		char name[300];
		snprintf(name, sizeof name, "%s_%d/update_%s", flow_optimizer_name(o->o.kind), o->id,
			 flow_op_name(vars[i].op));
		flow_op_desc *d = flow_op_new(g, types[o->o.kind], name);
		flow_op_add_input(d, vars[i]);
		for (int s = 0; s < ns; s++)
			flow_op_add_input(d, r->slot[s]);
		flow_op_add_input(d, grads[i]);
		flow_op_set_attr_float(d, "lr", o->hp.lr);
		switch (o->o.kind) {
		case FLOW_OPT_MOMENTUM:
			flow_op_set_attr_float(d, "momentum", o->hp.momentum);
			flow_op_set_attr_bool(d, "nesterov", o->hp.nesterov);
			break;
		case FLOW_OPT_RMSPROP:
			flow_op_set_attr_float(d, "rho", o->hp.rho);
			flow_op_set_attr_float(d, "epsilon", o->hp.eps);
			break;
		case FLOW_OPT_ADAM:
			flow_op_add_input(d, o->iterations);
			flow_op_set_attr_float(d, "beta1", o->hp.beta1);
			flow_op_set_attr_float(d, "beta2", o->hp.beta2);
			flow_op_set_attr_float(d, "epsilon", o->hp.eps);
			break;
		}
		applies[k] = flow_op_finish(d, st);
		if (!applies[k]) {
			free(applies);
			return NULL;
		}
		k++;
	}
	/* The counter moves after every apply has read it. */
	char name[64];
	snprintf(name, sizeof name, "%s_%d/increment", flow_optimizer_name(o->o.kind), o->id);
	flow_op_desc *d = flow_op_new(g, "_Increment", name);
	flow_op_add_input(d, o->iterations);
	for (int i = 0; i < k; i++)
		flow_op_add_control_input(d, applies[i]);
	flow_op *inc = flow_op_finish(d, st);
	if (!inc) {
		free(applies);
		return NULL;
	}
	applies[k++] = inc;
	flow_op *train = flow_group(g, NULL, applies, k, st);
	free(applies);
	return train;
}

/* ---- eager ---- */

int flow_optimizer_apply_eager(flow_optimizer *o, flow_tensor *const *vars,
			       flow_tensor *const *grads, int n, flow_status *st)
{
	int ns = flow_optimizer_slots_per_var(o);
	for (int i = 0; i < n; i++) {
		if (!grads[i] || flow_tensor_dtype(vars[i]) != FLOW_F32 ||
		    flow_tensor_dtype(grads[i]) != FLOW_F32 ||
		    flow_tensor_nelem(vars[i]) != flow_tensor_nelem(grads[i])) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"optimizer %s: gradient %d does not match its f32 variable",
					flow_optimizer_name(o->o.kind), i);
			return -1;
		}
	}
	/* Lazy slots, as Keras' first apply. */
	int setup = 0;
	for (int i = 0; i < n; i++) {
		int found = 0;
		for (int j = 0; j < o->ne && !found; j++)
			found = o->eager[j].var == vars[i];
		if (found)
			continue;
		if (!setup) {
			pp_phase_begin(PP_OPTIMIZER_SETUP, "optimizer_setup");
			setup = 1;
		}
		if (PP_GROW(o->eager, o->ne + 1, o->cap_e) != 0) {
			pp_phase_end();
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "optimizer: out of memory");
			return -1;
		}
		opt_eager *e = &o->eager[o->ne];
		memset(e, 0, sizeof *e);
		e->var = flow_tensor_ref(vars[i]);   /* pinned: slots are keyed by identity */
		flow_shape s = flow_tensor_shape(vars[i]);
		for (int k = 0; k < ns; k++) {
			e->slot[k] = flow_tensor_new(FLOW_F32, s.ndim, s.dims, st);
			if (!e->slot[k]) {
				pp_phase_end();
				return -1;
			}
		}
		o->ne++;
	}
	if (setup)
		pp_phase_end();
	o->eager_t++;
	flow_threadpool *pool = flow_default_pool();
	for (int i = 0; i < n; i++) {
		opt_eager *e = NULL;
		for (int j = 0; j < o->ne && !e; j++)
			if (o->eager[j].var == vars[i])
				e = &o->eager[j];
		train_update_f32(&o->hp, o->eager_t, flow_tensor_data(vars[i]),
				 e->slot[0] ? flow_tensor_data(e->slot[0]) : NULL,
				 e->slot[1] ? flow_tensor_data(e->slot[1]) : NULL,
				 flow_tensor_cdata(grads[i]), flow_tensor_nelem(vars[i]), pool);
	}
	return 0;
}
