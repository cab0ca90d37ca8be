/*
 * model.c — Keras-like layers and a Sequential model on a flow graph.
 *
 * build    creates the variables (graph_build, variable_create), opens the
 *          session and runs the initialisers (variable_init: the
 *          initialiser kernels fill the values there, as TF's random ops do)
 * compile  picks the loss and the optimiser (slots up front if asked)
 * fit      the first step builds the training graph the way Keras'
 *          make_train_function does on the first fit: loss, gradients
 *          (gradient_build), optimiser apply with lazy slots
 *          (optimizer_setup), then the first run compiles the plan.
 * Training and inference forward passes are separate subgraphs sharing the
 * variables (Dropout is only in the training one).
 */
#include "train_internal.h"
#include "pp_grow.h"
#include "phaseprof.h"
#include "init.h"
#include "weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { L_DENSE, L_ACT, L_DROPOUT, L_FLATTEN, L_CONV, L_POOL };
enum { LOSS_SPARSE_CE, LOSS_CE, LOSS_MSE };

struct flow_layer {
	int kind;
	int units, act;
	char kinit[32], binit[32];
	double rate;
	int kh, kw, stride, same, pool;
	char name[64];
	flow_output w, b;      /* variables (Dense, Conv2D) */
};

struct flow_model {
	flow_model_options o;
	flow_layer **layers;
	int n_layers, cap_layers;
	flow_graph *g;
	flow_session *s;
	flow_dtype dt;
	flow_output x;                         /* input placeholder [?, ...] */
	flow_output train_logits, infer_logits; /* before a final softmax */
	flow_output infer_out;                 /* the model's output */
	int final_softmax;
	int built, compiled, loss;
	flow_optimizer *opt;
	flow_output y, train_loss, infer_loss;
	flow_op *train_op;
	int train_built;
	flow_output *params;
	int n_params;
	flow_output *load_ph;                  /* load_weights: placeholder + Assign per param */
	flow_op **load_assign;
	int64_t steps;
	int next_id;
};

/* ---- layers ---- */

static flow_layer *layer_new(int kind)
{
	flow_layer *l = calloc(1, sizeof *l);
	if (l)
		l->kind = kind;
	return l;
}

int flow_activation_from_name(const char *name)
{
	static const char *const n[] = {"linear", "relu", "sigmoid", "tanh", "softmax"};
	if (!name || !*name || !strcmp(name, "none"))
		return FLOW_ACT_NONE;
	for (int i = 0; i < 5; i++)
		if (!strcmp(name, n[i]))
			return i;
	return -1;
}

flow_layer *flow_layer_dense(int units, int activation, const char *kernel_init,
			     const char *bias_init)
{
	flow_layer *l = layer_new(L_DENSE);
	if (!l)
		return NULL;
	l->units = units;
	l->act = activation;
	snprintf(l->kinit, sizeof l->kinit, "%s", kernel_init ? kernel_init : "glorot_uniform");
	snprintf(l->binit, sizeof l->binit, "%s", bias_init ? bias_init : "zeros");
	return l;
}

flow_layer *flow_layer_activation(int activation)
{
	flow_layer *l = layer_new(L_ACT);
	if (l)
		l->act = activation;
	return l;
}

flow_layer *flow_layer_dropout(double rate)
{
	flow_layer *l = layer_new(L_DROPOUT);
	if (l)
		l->rate = rate;
	return l;
}

flow_layer *flow_layer_flatten(void)
{
	return layer_new(L_FLATTEN);
}

flow_layer *flow_layer_conv2d(int filters, int kh, int kw, int stride, const char *padding,
			      int activation, const char *kernel_init)
{
	flow_layer *l = layer_new(L_CONV);
	if (!l)
		return NULL;
	l->units = filters;
	l->kh = kh;
	l->kw = kw;
	l->stride = stride;
	l->same = padding && (!strcmp(padding, "same") || !strcmp(padding, "SAME"));
	l->act = activation;
	snprintf(l->kinit, sizeof l->kinit, "%s", kernel_init ? kernel_init : "glorot_uniform");
	snprintf(l->binit, sizeof l->binit, "zeros");
	return l;
}

flow_layer *flow_layer_maxpool2d(int pool, int stride)
{
	flow_layer *l = layer_new(L_POOL);
	if (l) {
		l->pool = pool;
		l->stride = stride > 0 ? stride : pool;
	}
	return l;
}

void flow_layer_free(flow_layer *l)
{
	free(l);
}

/* ---- model ---- */

flow_model *flow_model_sequential(const flow_model_options *opts)
{
	flow_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	if (opts)
		m->o = *opts;
	else
		m->o.op_timing = -1;
	return m;
}

void flow_model_free(flow_model *m)
{
	if (!m)
		return;
	flow_session_free(m->s);
	flow_graph_free(m->g);
	flow_optimizer_free(m->opt);
	for (int i = 0; i < m->n_layers; i++)
		flow_layer_free(m->layers[i]);
	free(m->layers);
	free(m->params);
	free(m->load_ph);
	free(m->load_assign);
	free(m);
}

int flow_model_add(flow_model *m, flow_layer *l, flow_status *st)
{
	if (!l) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "model: layer is NULL (bad arguments?)");
		return -1;
	}
	const char *bad = NULL;
	if ((l->kind == L_DENSE || l->kind == L_CONV) && l->units < 1)
		bad = "units/filters must be >= 1";
	else if (l->act < 0 || l->act > FLOW_ACT_SOFTMAX)
		bad = "unknown activation";
	else if (l->kind == L_DROPOUT && (l->rate < 0 || l->rate >= 1))
		bad = "dropout rate must be in [0, 1)";
	else if (l->kind == L_CONV && (l->kh < 1 || l->kw < 1 || l->stride < 1))
		bad = "kernel size and stride must be >= 1";
	else if (l->kind == L_POOL && (l->pool < 1 || l->stride < 1))
		bad = "pool size and stride must be >= 1";
	else if ((l->kind == L_DENSE || l->kind == L_CONV) &&
		 (flow_init_from_name(l->kinit) < 0 || flow_init_from_name(l->binit) < 0))
		bad = "unknown initialiser";
	if (bad || m->built) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "model: layer %d: %s", m->n_layers,
				bad ? bad : "model is already built");
		flow_layer_free(l);
		return -1;
	}
	if (PP_GROW(m->layers, m->n_layers + 1, m->cap_layers) != 0) {
		flow_layer_free(l);
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "model: out of memory");
		return -1;
	}
	static const char *const kn[] = {"dense", "activation", "dropout", "flatten", "conv2d",
					 "max_pooling2d"};
	snprintf(l->name, sizeof l->name, "%s_%d", kn[l->kind], ++m->next_id);
	m->layers[m->n_layers++] = l;
	return 0;
}

/* A variable whose initialiser is demo/flow/ops' Initializer op: the fill
 * happens when the initialiser runs, as TF's random initialiser ops, and is
 * a variable_init phase "<initializer>:<variable>". Seed 0 is the op's
 * "unseeded" (fresh numbers each run), so an unseeded model stays unseeded
 * in every layer rather than only in the first. */
static flow_output make_var(flow_model *m, const char *name, const char *init, int64_t *dims,
			    int nd, uint64_t seed, flow_status *st)
{
	char n[160], phase[300];
	snprintf(n, sizeof n, "%s/initializer", name);
	snprintf(phase, sizeof phase, "%s:%s", init, name);
	flow_op_desc *d = flow_op_new(m->g, "Initializer", n);
	flow_shape s = flow_shape_make(nd, dims);
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_shape(d, "shape", &s);
	flow_op_set_attr_string(d, "kind", init);
	flow_op_set_attr_int(d, "seed", m->o.seed ? (int64_t)seed : 0);
	flow_op_set_attr_int(d, "threads", m->o.init_threads);
	flow_op_set_attr_string(d, "phase", phase);
	flow_op *iop = flow_op_finish(d, st);
	if (!iop)
		return (flow_output){NULL, 0};
	flow_output v = flow_variable(m->g, name, flow_out(iop, 0), st);
	if (v.op) {
		flow_output *np = realloc(m->params, sizeof *np * (size_t)(m->n_params + 1));
		if (!np) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "model: out of memory");
			return (flow_output){NULL, 0};
		}
		m->params = np;
		m->params[m->n_params++] = v;
	}
	return v;
}

/* A layer's kernel (shape kd, seed) and bias ([units], seed + 1). */
static int make_weights(flow_model *m, flow_layer *l, int64_t *kd, int nd, uint64_t seed,
			flow_status *st)
{
	int64_t bd[1] = {l->units};
	char n[128];
	snprintf(n, sizeof n, "%s/kernel", l->name);
	l->w = make_var(m, n, l->kinit, kd, nd, seed, st);
	snprintf(n, sizeof n, "%s/bias", l->name);
	l->b = l->w.op ? make_var(m, n, l->binit, bd, 1, seed + 1, st) : l->w;
	return l->b.op ? 0 : -1;
}

static flow_output act(flow_graph *g, int a, flow_output x, flow_status *st)
{
	static const char *const ops[] = {NULL, "Relu", "Sigmoid", "Tanh", "Softmax"};
	if (a == FLOW_ACT_NONE)
		return x;
	return tb_op1(g, ops[a], x, st);
}

static flow_output window_op(flow_graph *g, const char *type, flow_output x, flow_output f,
			     const flow_layer *l, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, type, NULL);
	flow_op_add_input(d, x);
	if (f.op)
		flow_op_add_input(d, f);
	int64_t s[4] = {1, l->stride, l->stride, 1}, k[4] = {1, l->pool, l->pool, 1};
	flow_op_set_attr_ints(d, "strides", s, 4);
	if (!f.op)
		flow_op_set_attr_ints(d, "ksize", k, 4);
	flow_op_set_attr_string(d, "padding", l->same ? "SAME" : "VALID");
	return flow_out(flow_op_finish(d, st), 0);
}

/* One forward pass over the layers; creates the variables when create. */
static int forward(flow_model *m, int training, int create, flow_output *logits,
		   flow_output *out, flow_status *st)
{
	flow_output h = m->x;
	uint64_t seed = m->o.seed;
	for (int i = 0; i < m->n_layers; i++) {
		flow_layer *l = m->layers[i];
		flow_shape hs = flow_op_output_shape(h.op, h.index);
		int last = i == m->n_layers - 1;
		flow_output pre = h;
		switch (l->kind) {
		case L_DENSE: {
			if (create) {
				if (hs.ndim != 2 || hs.dims[1] < 0) {
					char b[64];
					flow_status_set(st, FLOW_INVALID_ARGUMENT,
							"model: layer %d (%s) needs [batch, features] "
							"input, got %s (add a Flatten layer)",
							i, l->name, flow_shape_str(&hs, b, sizeof b));
					return -1;
				}
				int64_t kd[2] = {hs.dims[1], l->units};
				if (make_weights(m, l, kd, 2, seed + 2 * (uint64_t)i, st))
					return -1;
			}
			flow_output mm = tb_matmul(m->g, h, l->w, 0, 0, st);
			pre = mm.op ? tb_op2(m->g, "BiasAdd", mm, l->b, st) : mm;
			h = pre.op ? act(m->g, l->act, pre, st) : pre;
			break;
		}
		case L_CONV: {
			if (create) {
				if (hs.ndim != 4 || hs.dims[3] < 0) {
					flow_status_set(st, FLOW_INVALID_ARGUMENT,
							"model: layer %d (%s) needs NHWC input", i,
							l->name);
					return -1;
				}
				int64_t kd[4] = {l->kh, l->kw, hs.dims[3], l->units};
				if (make_weights(m, l, kd, 4, seed + 2 * (uint64_t)i, st))
					return -1;
			}
			flow_output c = window_op(m->g, "Conv2D", h, l->w, l, st);
			pre = c.op ? tb_op2(m->g, "BiasAdd", c, l->b, st) : c;
			h = pre.op ? act(m->g, l->act, pre, st) : pre;
			break;
		}
		case L_ACT:
			h = act(m->g, l->act, h, st);
			break;
		case L_DROPOUT:
			if (training && l->rate > 0) {
				flow_op_desc *d = flow_op_new(m->g, "_Dropout", NULL);
				flow_op_add_input(d, h);
				flow_op_set_attr_float(d, "rate", l->rate);
				flow_op_set_attr_int(d, "seed", (int64_t)(seed + 1000 + (uint64_t)i));
				h = flow_out(flow_op_finish(d, st), 0);
			}
			break;
		case L_FLATTEN:
			h = tb_op1(m->g, "_Flatten", h, st);
			break;
		case L_POOL:
			h = window_op(m->g, "MaxPool", h, (flow_output){NULL, 0}, l, st);
			break;
		}
		if (!h.op)
			return -1;
		/* A final softmax: the losses use the logits before it (stable). */
		if (last && l->act == FLOW_ACT_SOFTMAX && l->kind != L_POOL && l->kind != L_FLATTEN &&
		    l->kind != L_DROPOUT) {
			m->final_softmax = 1;
			*logits = pre;
		} else if (last) {
			*logits = h;
		}
	}
	if (!m->n_layers)
		*logits = h;
	*out = h;
	return 0;
}

int flow_model_build(flow_model *m, flow_dtype dt, const flow_shape *input_shape, flow_status *st)
{
	if (flow_train_init(st))
		return -1;
	if (m->built) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "model: already built");
		return -1;
	}
	if (!input_shape || input_shape->ndim < 1 || input_shape->ndim >= FLOW_MAX_DIMS ||
	    !flow_shape_is_full(input_shape)) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"model: input shape (without the batch) must be fully known");
		return -1;
	}
	if (!m->n_layers) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "model: no layers");
		return -1;
	}
	m->g = flow_graph_new();
	if (!m->g) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "model: out of memory");
		return -1;
	}
	m->dt = dt;
	flow_shape xs;
	xs.ndim = input_shape->ndim + 1;
	xs.dims[0] = -1;
	for (int i = 0; i < input_shape->ndim; i++)
		xs.dims[i + 1] = input_shape->dims[i];
	{
		PP_PHASE(PP_GRAPH_BUILD, "model_build");
		m->x = flow_placeholder(m->g, "input", dt, &xs, st);
		if (!m->x.op)
			return -1;
		if (forward(m, 0, 1, &m->infer_logits, &m->infer_out, st))
			return -1;
	}
	flow_session_options so = {0};
	so.allocator = m->o.allocator;
	so.op_timing = m->o.op_timing ? m->o.op_timing : -1;
	so.plan_cache_dir = m->o.plan_cache_dir;
	so.no_step_phase = 1;   /* fit records its own steps */
	m->s = flow_session_new(m->g, &so, st);
	if (!m->s)
		return -1;
	flow_op *init = flow_global_variables_initializer(m->g, st);
	if (!init || flow_session_run(m->s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, st))
		return -1;
	m->built = 1;
	return 0;
}

int flow_model_compile(flow_model *m, const char *loss, const flow_optimizer_options *opt,
		       flow_status *st)
{
	if (!m->built) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "model: compile before build");
		return -1;
	}
	if (!loss || !strcmp(loss, "sparse_categorical_crossentropy"))
		m->loss = LOSS_SPARSE_CE;
	else if (!strcmp(loss, "categorical_crossentropy"))
		m->loss = LOSS_CE;
	else if (!strcmp(loss, "mse") || !strcmp(loss, "mean_squared_error"))
		m->loss = LOSS_MSE;
	else {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"model: unknown loss '%s' (sparse_categorical_crossentropy, "
				"categorical_crossentropy, mse)", loss);
		return -1;
	}
	if (m->train_built) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION,
				"model: compile after training started is not supported");
		return -1;
	}
	flow_optimizer_free(m->opt);
	m->opt = flow_optimizer_new(opt, st);
	if (!m->opt)
		return -1;
	m->compiled = 1;
	if (opt && opt->slots_up_front) {
		if (flow_optimizer_build(m->opt, m->g, m->params, m->n_params, st))
			return -1;
		PP_PHASE(PP_OPTIMIZER_SETUP, "slot_init");
		flow_op *si = flow_optimizer_slot_initializer(m->opt, m->g, st);
		if (si && flow_session_run(m->s, NULL, NULL, 0, NULL, NULL, 0, &si, 1, st))
			return -1;
		if (!flow_status_ok(st))
			return -1;
	}
	return 0;
}

static flow_output loss_of(flow_model *m, flow_output logits, flow_output out, flow_status *st)
{
	flow_output per;
	switch (m->loss) {
	case LOSS_SPARSE_CE:
		per = tb_op2(m->g, "SparseSoftmaxCrossEntropyWithLogits", logits, m->y, st);
		break;
	case LOSS_CE:
		per = tb_op2(m->g, "SoftmaxCrossEntropyWithLogits", logits, m->y, st);
		break;
	default: {
		flow_output d = tb_op2(m->g, "Sub", out, m->y, st);
		per = d.op ? tb_op1(m->g, "Square", d, st) : d;
	}
	}
	return per.op ? tb_op1(m->g, "_MeanAll", per, st) : per;
}

/* Keras' make_train_function: the training subgraph, built on first use. */
static int build_train(flow_model *m, flow_status *st)
{
	flow_shape os = flow_op_output_shape(m->infer_out.op, m->infer_out.index);
	{
		PP_PHASE(PP_GRAPH_BUILD, "train_graph_build");
		if (m->loss == LOSS_SPARSE_CE) {
			int64_t d[1] = {-1};
			flow_shape ys = flow_shape_make(1, d);
			m->y = flow_placeholder(m->g, "labels", FLOW_I32, &ys, st);
		} else {
			m->y = flow_placeholder(m->g, "labels", FLOW_F32, &os, st);
		}
		if (!m->y.op)
			return -1;
		m->infer_loss = loss_of(m, m->infer_logits, m->infer_out, st);
		flow_output out;
		if (!m->infer_loss.op || forward(m, 1, 0, &m->train_logits, &out, st))
			return -1;
		m->train_loss = loss_of(m, m->train_logits, out, st);
		if (!m->train_loss.op)
			return -1;
	}
	flow_output *grads = calloc((size_t)m->n_params, sizeof *grads);
	if (!grads) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "model: out of memory");
		return -1;
	}
	int rc = flow_gradients(m->g, &m->train_loss, 1, NULL, m->params, m->n_params, grads, st);
	if (!rc) {
		m->train_op = flow_optimizer_apply(m->opt, m->g, grads, m->params, m->n_params, st);
		rc = m->train_op ? 0 : -1;
	}
	free(grads);
	if (rc)
		return -1;
	flow_op *si = flow_optimizer_slot_initializer(m->opt, m->g, st);
	if (si) {
		PP_PHASE(PP_OPTIMIZER_SETUP, "slot_init");
		if (flow_session_run(m->s, NULL, NULL, 0, NULL, NULL, 0, &si, 1, st))
			return -1;
	}
	if (!flow_status_ok(st))
		return -1;
	m->train_built = 1;
	return 0;
}

int flow_model_prepare_train(flow_model *m, flow_status *st)
{
	if (!m->compiled) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "model: prepare_train before compile");
		return -1;
	}
	return m->train_built ? 0 : build_train(m, st);
}

static int check_xy(flow_model *m, flow_tensor *x, flow_tensor *y, flow_status *st)
{
	flow_shape xs = flow_op_output_shape(m->x.op, 0), got = flow_tensor_shape(x);
	char a[64], b[64];
	int bad = flow_tensor_dtype(x) != m->dt || got.ndim != xs.ndim;
	for (int i = 1; !bad && i < xs.ndim; i++)
		bad = xs.dims[i] != got.dims[i];
	if (bad) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"model: x is %s[%s], the model takes %s[%s]",
				flow_dtype_name(flow_tensor_dtype(x)), flow_shape_str(&got, a, sizeof a),
				flow_dtype_name(m->dt), flow_shape_str(&xs, b, sizeof b));
		return -1;
	}
	if (!y)
		return 0;
	flow_shape ys = flow_tensor_shape(y), os = flow_op_output_shape(m->infer_out.op, 0);
	if (m->loss == LOSS_SPARSE_CE) {
		bad = ys.ndim != 1 || ys.dims[0] != got.dims[0] || flow_tensor_dtype(y) != FLOW_I32;
		if (bad) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"model: labels are %s[%s]; sparse_categorical_crossentropy "
					"needs i32[%lld] (one class id per example of x)",
					flow_dtype_name(flow_tensor_dtype(y)),
					flow_shape_str(&ys, a, sizeof a), (long long)got.dims[0]);
			return -1;
		}
	} else {
		bad = ys.ndim != os.ndim || ys.dims[0] != got.dims[0] ||
		      flow_tensor_dtype(y) != FLOW_F32;
		for (int i = 1; !bad && i < os.ndim; i++)
			bad = ys.dims[i] != os.dims[i];
		if (bad) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"model: labels are %s[%s]; the model's output is f32[%s] "
					"for %lld examples",
					flow_dtype_name(flow_tensor_dtype(y)),
					flow_shape_str(&ys, a, sizeof a),
					flow_shape_str(&os, b, sizeof b), (long long)got.dims[0]);
			return -1;
		}
	}
	return 0;
}

/* warmup: a full step recorded as a "warmup" span, not as a step. */
static int train_run_as(flow_model *m, flow_tensor *x, flow_tensor *y, double *loss, int warmup,
			flow_status *st)
{
	int first = m->steps == 0 && !warmup;
	if (warmup)
		pp_phase_begin(PP_SPAN, "warmup");
	if (first)
		pp_phase_begin(PP_FIRST_STEP, "first_step");
	if (!warmup)
		pp_step_begin(m->steps);
	int rc = 0;
	if (!m->train_built)
		rc = build_train(m, st);
	flow_tensor *lv = NULL;
	if (!rc) {
		flow_output feeds[2] = {m->x, m->y};
		flow_tensor *vals[2] = {x, y};
		rc = flow_session_run(m->s, feeds, vals, 2, &m->train_loss, &lv, 1, &m->train_op, 1,
				      st);
	}
	if (!warmup)
		pp_step_end();
	if (first || warmup)
		pp_phase_end();
	if (rc)
		return -1;
	double l = flow_tensor_get(lv, 0);
	flow_tensor_unref(lv);
	if (!warmup)
		m->steps++;
	if (loss)
		*loss = l;
	if (!isfinite(l)) {
		pp_mark("loss_nan");
		if (warmup)
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "model: loss is %s in the warm-up step",
					isnan(l) ? "NaN" : "Inf");
		else
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "model: loss is %s at step %lld",
					isnan(l) ? "NaN" : "Inf", (long long)(m->steps - 1));
		return -1;
	}
	return 0;
}

static int train_run(flow_model *m, flow_tensor *x, flow_tensor *y, double *loss,
		     flow_status *st)
{
	return train_run_as(m, x, y, loss, 0, st);
}

int flow_model_warmup(flow_model *m, flow_tensor *x, flow_tensor *y, flow_status *st)
{
	if (!m->compiled) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "model: warmup before compile");
		return -1;
	}
	if (check_xy(m, x, y, st))
		return -1;
	return train_run_as(m, x, y, NULL, 1, st);
}

int flow_model_train_step(flow_model *m, flow_tensor *x, flow_tensor *y, double *loss,
			  flow_status *st)
{
	if (!m->compiled) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "model: train before compile");
		return -1;
	}
	if (check_xy(m, x, y, st))
		return -1;
	return train_run(m, x, y, loss, st);
}

/* Rows [start, start+n) of t (wrapping), zero-copy when contiguous. */
static flow_tensor *rows(flow_tensor *t, int64_t start, int64_t n, flow_status *st)
{
	int64_t total = flow_tensor_dim(t, 0), row = total ? flow_tensor_nelem(t) / total : 0;
	size_t es = flow_dtype_size(flow_tensor_dtype(t));
	flow_shape s = flow_tensor_shape(t);
	s.dims[0] = n;
	start %= total;
	char *base = flow_tensor_data(t);
	if (start + n <= total)
		return flow_tensor_wrap(flow_tensor_dtype(t), s.ndim, s.dims,
					base + (size_t)(start * row) * es, (size_t)(n * row) * es,
					NULL, NULL, st);
	flow_tensor *c = flow_tensor_new(flow_tensor_dtype(t), s.ndim, s.dims, st);
	if (!c)
		return NULL;
	char *dst = flow_tensor_data(c);
	for (int64_t i = 0; i < n; i++)
		memcpy(dst + (size_t)(i * row) * es, base + (size_t)(((start + i) % total) * row) * es,
		       (size_t)row * es);
	return c;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int flow_model_fit(flow_model *m, flow_tensor *x, flow_tensor *y, int batch_size, int steps,
		   flow_fit_result *res, flow_status *st)
{
	if (!m->compiled) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "model: fit before compile");
		return -1;
	}
	if (check_xy(m, x, y, st))
		return -1;
	int64_t n = flow_tensor_dim(x, 0);
	if (batch_size < 1 || steps < 0 || n < 1) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"model: fit needs batch_size >= 1, steps >= 0 and data (%lld examples)",
				(long long)n);
		return -1;
	}
	if (batch_size > n)
		batch_size = (int)n;
	uint64_t *times = calloc((size_t)steps + 1, sizeof *times);
	if (!times) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "model: out of memory");
		return -1;
	}
	flow_fit_result r = {0};
	int rc = 0;
	for (int s = 0; s < steps && !rc; s++) {
		int64_t start = (int64_t)s * batch_size;
		flow_tensor *bx = rows(x, start, batch_size, st);
		flow_tensor *by = bx ? rows(y, start, batch_size, st) : NULL;
		double l = 0;
		uint64_t t0 = now_ns();
		rc = by ? train_run(m, bx, by, &l, st) : -1;
		times[s] = now_ns() - t0;
		flow_tensor_unref(bx);
		flow_tensor_unref(by);
		if (rc)
			break;
		if (!s)
			r.first_loss = l;
		r.last_loss = l;
		r.steps++;
	}
	if (r.steps) {
		r.first_step_ns = times[0];
		if (r.steps > 1) {
			qsort(times + 1, (size_t)r.steps - 1, sizeof *times, cmp_u64);
			r.median_step_ns = times[1 + (r.steps - 1) / 2];
		}
	}
	free(times);
	if (res)
		*res = r;
	return rc;
}

int flow_model_evaluate(flow_model *m, flow_tensor *x, flow_tensor *y, int batch_size,
			double *loss, double *accuracy, flow_status *st)
{
	if (!m->compiled) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "model: evaluate before compile");
		return -1;
	}
	if (check_xy(m, x, y, st))
		return -1;
	if (!m->train_built && build_train(m, st))
		return -1;
	int64_t n = flow_tensor_dim(x, 0);
	if (batch_size < 1 || batch_size > n)
		batch_size = (int)n;
	double lsum = 0;
	int64_t correct = 0, seen = 0;
	for (int64_t s = 0; s < n; s += batch_size) {
		int64_t b = n - s < batch_size ? n - s : batch_size;
		flow_tensor *bx = rows(x, s, b, st), *by = bx ? rows(y, s, b, st) : NULL;
		flow_tensor *out[2] = {NULL, NULL};
		flow_output feeds[2] = {m->x, m->y}, fetch[2] = {m->infer_loss, m->infer_logits};
		flow_tensor *vals[2] = {bx, by};
		int rc = by ? flow_session_run(m->s, feeds, vals, 2, fetch, out, 2, NULL, 0, st) : -1;
		if (!rc) {
			lsum += flow_tensor_get(out[0], 0) * (double)b;
			int64_t c = flow_tensor_dim(out[1], 1);
			const float *lg = flow_tensor_cdata(out[1]);
			for (int64_t i = 0; i < b && m->loss != LOSS_MSE; i++) {
				int64_t am = 0;
				for (int64_t j = 1; j < c; j++)
					if (lg[i * c + j] > lg[i * c + am])
						am = j;
				int64_t want = 0;
				if (m->loss == LOSS_SPARSE_CE) {
					want = (int64_t)flow_tensor_get(by, i);
				} else {
					for (int64_t j = 1; j < c; j++)
						if (flow_tensor_get(by, i * c + j) >
						    flow_tensor_get(by, i * c + want))
							want = j;
				}
				correct += am == want;
			}
			seen += b;
		}
		flow_tensor_unref(out[0]);
		flow_tensor_unref(out[1]);
		flow_tensor_unref(bx);
		flow_tensor_unref(by);
		if (rc)
			return -1;
	}
	if (loss)
		*loss = seen ? lsum / (double)seen : NAN;
	if (accuracy)
		*accuracy = m->loss == LOSS_MSE || !seen ? NAN : (double)correct / (double)seen;
	return 0;
}

flow_tensor *flow_model_predict(flow_model *m, flow_tensor *x, flow_status *st)
{
	if (!m->built) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "model: predict before build");
		return NULL;
	}
	if (check_xy(m, x, NULL, st))
		return NULL;
	flow_tensor *out = NULL;
	if (flow_session_run(m->s, &m->x, &x, 1, &m->infer_out, &out, 1, NULL, 0, st))
		return NULL;
	return out;
}

/* ---- weights ---- */

int flow_model_save_weights(flow_model *m, const char *path, flow_status *st)
{
	if (!m->built) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "model: save_weights before build");
		return -1;
	}
	flow_weight *ws = calloc((size_t)m->n_params, sizeof *ws);
	flow_tensor **vals = calloc((size_t)m->n_params, sizeof *vals);
	int rc = -1;
	if (!ws || !vals) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "model: out of memory");
		goto out;
	}
	for (int i = 0; i < m->n_params; i++) {
		vals[i] = flow_session_variable_value(m->s, m->params[i].op, st);
		if (!vals[i])
			goto out;
		ws[i].name = flow_op_name(m->params[i].op);
		ws[i].dtype = FLOW_WD_F32;
		ws[i].rank = flow_tensor_ndim(vals[i]);
		for (int d = 0; d < ws[i].rank; d++)
			ws[i].shape[d] = flow_tensor_dim(vals[i], d);
		ws[i].data = flow_tensor_cdata(vals[i]);
		ws[i].nbytes = flow_tensor_nbytes(vals[i]);
	}
	const char *meta[2] = {"format", "flow_model"};
	char err[TRAIN_ERRLEN];
	size_t pl = strlen(path);
	int st_fmt = pl >= 12 && !strcmp(path + pl - 12, ".safetensors");
	if (st_fmt ? flow_safetensors_write(path, ws, m->n_params, meta, 1, err, sizeof err)
		   : flow_text_weights_write(path, ws, m->n_params, err, sizeof err)) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "save_weights: %s", err);
		goto out;
	}
	rc = 0;
out:
	for (int i = 0; vals && i < m->n_params; i++)
		flow_tensor_unref(vals[i]);
	free(vals);
	free(ws);
	return rc;
}

int flow_model_load_weights(flow_model *m, const char *path, flow_status *st)
{
	if (!m->built) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "model: load_weights before build");
		return -1;
	}
	char err[TRAIN_ERRLEN];
	flow_weights *w = flow_weights_open_any(path, err, sizeof err);
	if (!w) {
		flow_status_set(st, FLOW_DATA_LOSS, "load_weights: %s", err);
		return -1;
	}
	/* Check everything before assigning anything: a bad file changes nothing. */
	const flow_weight **found = calloc((size_t)m->n_params, sizeof *found);
	int rc = -1;
	if (!found) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "model: out of memory");
		goto out;
	}
	for (int i = 0; i < m->n_params; i++) {
		const char *name = flow_op_name(m->params[i].op);
		const flow_weight *t = flow_weights_find(w, name);
		flow_shape vs = flow_op_output_shape(m->params[i].op, 0);
		if (!t) {
			flow_status_set(st, FLOW_NOT_FOUND, "load_weights: %s: no tensor '%s'", path,
					name);
			goto out;
		}
		int bad = t->dtype != FLOW_WD_F32 || t->rank != vs.ndim;
		for (int d = 0; !bad && d < vs.ndim; d++)
			bad = t->shape[d] != vs.dims[d];
		if (bad) {
			char b[64];
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"load_weights: %s: tensor '%s' is %s rank %d, the model "
					"expects f32[%s]",
					path, name, flow_wdtype_safetensors_name(t->dtype), t->rank,
					flow_shape_str(&vs, b, sizeof b));
			goto out;
		}
		found[i] = t;
	}
	if (!m->load_ph) {
		m->load_ph = calloc((size_t)m->n_params, sizeof *m->load_ph);
		m->load_assign = calloc((size_t)m->n_params, sizeof *m->load_assign);
		if (!m->load_ph || !m->load_assign) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "model: out of memory");
			goto out;
		}
		for (int i = 0; i < m->n_params; i++) {
			char n[200];
			flow_shape vs = flow_op_output_shape(m->params[i].op, 0);
			snprintf(n, sizeof n, "%s/load_value", flow_op_name(m->params[i].op));
			m->load_ph[i] = flow_placeholder(m->g, n, FLOW_F32, &vs, st);
			if (!m->load_ph[i].op)
				goto out;
			flow_output a = flow_assign(m->g, NULL, m->params[i], m->load_ph[i], st);
			if (!a.op)
				goto out;
			m->load_assign[i] = a.op;
		}
	}
	{
		PP_PHASE(PP_WEIGHT_LOAD, "assign_weights");
		flow_tensor **vals = calloc((size_t)m->n_params, sizeof *vals);
		if (!vals) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "model: out of memory");
			goto out;
		}
		int ok = 1;
		for (int i = 0; i < m->n_params && ok; i++) {
			/* One copy out of the mapping: Assign keeps the tensor it is given,
			 * and the mapping goes away when the file is closed below. */
			vals[i] = flow_tensor_from_data(FLOW_F32, found[i]->rank, found[i]->shape,
							found[i]->data, st);
			ok = vals[i] != NULL;
		}
		if (ok)
			ok = !flow_session_run(m->s, m->load_ph, vals, m->n_params, NULL, NULL, 0,
					       m->load_assign, m->n_params, st);
		for (int i = 0; i < m->n_params; i++)
			flow_tensor_unref(vals[i]);
		free(vals);
		if (!ok)
			goto out;
	}
	rc = 0;
out:
	free(found);
	flow_weights_close(w);
	return rc;
}

int flow_model_num_params(const flow_model *m)
{
	return m->n_params;
}

int64_t flow_model_num_weights(const flow_model *m)
{
	int64_t n = 0;
	for (int i = 0; i < m->n_params; i++) {
		flow_shape s = flow_op_output_shape(m->params[i].op, 0);
		n += flow_shape_nelem(&s);
	}
	return n;
}

flow_graph *flow_model_graph(flow_model *m) { return m->g; }
flow_session *flow_model_session(flow_model *m) { return m->s; }
flow_optimizer *flow_model_optimizer(flow_model *m) { return m->opt; }
int64_t flow_model_steps(const flow_model *m) { return m->steps; }

flow_op *flow_model_param(flow_model *m, int i)
{
	return i >= 0 && i < m->n_params ? m->params[i].op : NULL;
}

flow_tensor *flow_model_param_value(flow_model *m, int i, flow_status *st)
{
	if (i < 0 || i >= m->n_params) {
		flow_status_set(st, FLOW_OUT_OF_RANGE, "model: no parameter %d", i);
		return NULL;
	}
	return flow_session_variable_value(m->s, m->params[i].op, st);
}
