/*
 * flow_train.h — training on flow: symbolic gradients, optimisers with slot
 * variables, Keras-like layers and models, eager execution with a gradient
 * tape, and traced functions (a tf.function analogue).
 *
 * The one public header of demo/flow/train/. Same conventions as flow.h:
 * opaque objects, errors through a flow_status naming the op, node, file or
 * field; -1 / NULL on failure.
 *
 * Recorded phases (record/include/phaseprof.h), so the scenarios can see them:
 *   gradient_build   flow_gradients
 *   optimizer_setup  slot variables created (and initialised) — lazily on
 *                    the first apply like Keras, or up front by option
 *   step             every training step (pp_step_begin with its iteration);
 *   first_step       the first step of a model/loop is also wrapped in one
 *   retrace          every trace of a traced function, named by its signature
 */
#ifndef FLOW_TRAIN_H
#define FLOW_TRAIN_H

#include "flow.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the training op library (fused optimiser kernels, gradient
 * helper ops, the loss/conv/pool ops the op library lacks) and the gradient
 * table. Idempotent; every entry point below calls it, and it re-registers
 * after flow_shutdown. */
int flow_train_init(flow_status *st);

/* ---- symbolic gradients ---- */

/* Same signature as flow_internal.h's flow_grad_fn: build the gradient ops
 * of `op` from dy[i] (gradient w.r.t. output i, {NULL,0} if none flows) and
 * store the gradient w.r.t. input j in dx[j] ({NULL,0}: none). */
typedef int (*flow_train_grad_fn)(flow_graph *g, flow_op *op, const flow_output *dy,
				  flow_output *dx, flow_status *st);
/* Adds or replaces the gradient function for an op type (side table used
 * when the op def has no grad_fn of its own). */
int flow_gradient_register(const char *op_type, flow_train_grad_fn fn);
/* 1 if flow_gradients can differentiate through op_type. */
int flow_gradient_known(const char *op_type);

/* d(sum of ys)/d(xs) as new nodes in g: dxs[i] receives the gradient of
 * xs[i] (a zeros-like node when xs[i] does not depend on ys). grad_ys may be
 * NULL (ones). An op on the path without a gradient fails with
 * "no gradient for op 'name' (Type) on the path from ... to ...".
 * Recorded as gradient_build. */
int flow_gradients(flow_graph *g, const flow_output *ys, int n_ys, const flow_output *grad_ys,
		   const flow_output *xs, int n_xs, flow_output *dxs, flow_status *st);

/* ---- graph-building helpers used by layers and gradients ---- */
flow_output flow_zeros_like(flow_graph *g, flow_output x, flow_status *st);
/* Scalar f32 constant with a unique name. */
flow_output flow_scalar(flow_graph *g, float v, flow_status *st);

/* ---- optimisers ---- */
typedef enum flow_optimizer_kind {
	FLOW_OPT_SGD = 0,
	FLOW_OPT_MOMENTUM,
	FLOW_OPT_RMSPROP,
	FLOW_OPT_ADAM
} flow_optimizer_kind;

typedef struct flow_optimizer_options {
	int kind;               /* enum flow_optimizer_kind */
	double learning_rate;   /* 0: Keras default (0.01 SGD/momentum, 0.001 RMSprop/Adam) */
	double momentum;        /* momentum; 0: 0.9 */
	int nesterov;
	double rho;             /* RMSprop decay; 0: 0.9 */
	double beta1, beta2;    /* Adam; 0: 0.9, 0.999 */
	double epsilon;         /* 0: 1e-7 (Keras) */
	int slots_up_front;     /* 1: slots created by flow_optimizer_build / model compile,
	                           not on the first apply */
} flow_optimizer_options;
flow_optimizer_options flow_optimizer_defaults(flow_optimizer_kind kind);
const char *flow_optimizer_name(int kind);    /* "adam" */
int flow_optimizer_from_name(const char *name); /* -1 if unknown */

typedef struct flow_optimizer flow_optimizer;
flow_optimizer *flow_optimizer_new(const flow_optimizer_options *opts, flow_status *st);
void flow_optimizer_free(flow_optimizer *o);
/* Number of slot variables per model variable (0 SGD, 1 momentum/RMSprop, 2 Adam). */
int flow_optimizer_slots_per_var(const flow_optimizer *o);
/* Slots created so far (graph mode: slot Variables; eager: slot tensors). */
int flow_optimizer_num_slots(const flow_optimizer *o);
/* Graph mode. Creates the slot variables (zeros) and the iteration counter
 * for `vars` in g, recorded as optimizer_setup. Called by the first
 * flow_optimizer_apply when not done yet. Idempotent per variable. */
int flow_optimizer_build(flow_optimizer *o, flow_graph *g, const flow_output *vars, int n,
			 flow_status *st);
/* The initialiser (a group of Assigns) of the slots created by the last
 * build that have not been initialised through it yet; NULL if none. Run it
 * once in each session (flow_model does this). */
flow_op *flow_optimizer_slot_initializer(flow_optimizer *o, flow_graph *g, flow_status *st);
/* Graph mode: one fused apply op per variable and an iteration increment;
 * returns the train op (a group). */
flow_op *flow_optimizer_apply(flow_optimizer *o, flow_graph *g, const flow_output *grads,
			      const flow_output *vars, int n, flow_status *st);
/* The slot variable `slot` (0 = m/momentum/ms, 1 = v) of var, or {NULL,0}. */
flow_output flow_optimizer_slot(const flow_optimizer *o, flow_op *var, int slot);

/* The fused update on plain arrays (what the apply kernels and the eager
 * optimiser run). t = iteration number starting at 1 (Adam's bias
 * correction). m, v may be NULL when the kind has fewer slots. */
void flow_optimizer_update_f32(const flow_optimizer_options *o, int64_t t, float *var, float *m,
			       float *v, const float *grad, int64_t n);

/* ---- eager execution with a gradient tape ---- */
typedef struct flow_tape flow_tape;
/* A tape records every flow_eager_op executed while it is the active tape
 * (one per thread); flow_tape_gradient replays it backwards through the same
 * gradient functions as graph mode (each op's gradient is a small graph
 * compiled once per (op, attrs, shapes) and cached). */
flow_tape *flow_tape_new(void);
void flow_tape_free(flow_tape *t);
/* Marks t as a source to differentiate (by pointer identity). */
void flow_tape_watch(flow_tape *tp, flow_tensor *t);
/* Starts / stops recording on this thread. */
void flow_tape_begin(flow_tape *tp);
void flow_tape_end(flow_tape *tp);
/* dsources[i] = d(target)/d(sources[i]) (new references; zeros when
 * unconnected). target is usually a scalar loss. The tape's records are
 * dropped afterwards (non-persistent). */
int flow_tape_gradient(flow_tape *tp, flow_tensor *target, flow_tensor *const *sources, int n,
		       flow_tensor **dsources, flow_status *st);

/* flow_execute plus recording on the thread's active tape when an input is
 * watched (or was produced by a recorded op). Consumes d like flow_execute. */
int flow_tape_execute(flow_op_desc *d, flow_tensor **outputs, int n_outputs, flow_status *st);
/* The per-(op, attrs, shapes) gradient graphs compiled so far; clear before
 * flow_shutdown. */
int flow_tape_cache_size(void);
void flow_tape_cache_clear(void);
/* Shorthands (new reference or NULL). */
flow_tensor *flow_eager_matmul(flow_tensor *a, flow_tensor *b, int ta, int tb, flow_status *st);
flow_tensor *flow_eager_unary(const char *op_type, flow_tensor *x, flow_status *st);
flow_tensor *flow_eager_binary(const char *op_type, flow_tensor *a, flow_tensor *b,
			       flow_status *st);
/* A Keras initialiser run eagerly (demo/flow/ops' Initializer): the same
 * numbers as a flow_model layer whose variable has this kind, shape and seed
 * (model seed + 2*layer for a kernel, + 1 for its bias); seed 0 draws fresh
 * numbers each call. */
flow_tensor *flow_eager_initializer(const char *kind, int ndim, const int64_t *dims,
				    uint64_t seed, flow_status *st);
/* Mean over the batch of sparse softmax cross-entropy (labels i32 [N]). */
flow_tensor *flow_eager_sparse_xent_mean(flow_tensor *logits, flow_tensor *labels,
					 flow_status *st);
/* Eager optimiser step: var -= update(grad), slots kept in o (created on the
 * first call: optimizer_setup). vars are updated in place. */
int flow_optimizer_apply_eager(flow_optimizer *o, flow_tensor *const *vars,
			       flow_tensor *const *grads, int n, flow_status *st);

/* ---- traced functions (tf.function) ---- */
typedef struct flow_function flow_function;
/* Builds the function body in g from inputs (placeholders of the trace's
 * signature) into outputs. Called once per new signature. */
typedef int (*flow_trace_fn)(flow_graph *g, const flow_output *inputs, int n_in,
			     flow_output *outputs, int n_out, void *ud, flow_status *st);
typedef struct flow_function_options {
	const char *name;           /* shows in the retrace phase and warning */
	int n_inputs, n_outputs;
	/* Optional input signature: dtypes and shapes (dims -1 = any). NULL:
	 * every new (dtype, shape) combination traces. */
	const flow_dtype *sig_dtypes;
	const flow_shape *sig_shapes;
	int reduce_retracing;       /* 1: on a retrace, relax the dims that differ from an
	                               earlier trace of the same rank to unknown (TF's
	                               reduce_retracing / experimental_relax_shapes) */
	flow_graph *graph;          /* trace into this graph (shares its variables); NULL: own */
	flow_session *session;      /* run in this session (needs graph); NULL: own */
	int warn_to_stderr;         /* 0 (default) or 1: print the warning to stderr as TF
	                               logs it; -1: only keep it (flow_function_last_warning) */
} flow_function_options;
flow_function *flow_function_new(flow_trace_fn fn, void *ud, const flow_function_options *opts,
				 flow_status *st);
void flow_function_free(flow_function *f);
/* Not thread-safe: one caller per function at a time.
 * Calls the function: finds or makes the trace for the inputs' signature
 * (recorded as a retrace phase named "name(f32[?x784], i32[128])"), then
 * runs it. outputs[i] are new references. An input whose dtype or shape is
 * incompatible with the declared signature fails naming the argument. */
int flow_function_call(flow_function *f, flow_tensor *const *inputs, flow_tensor **outputs,
		       flow_status *st);
typedef struct flow_function_stats {
	int calls;
	int traces;                 /* concrete functions made (the first included) */
	int retraces;               /* traces after the first */
	int warnings;               /* frequent-retracing warnings emitted (max 2) */
	int cached;                 /* traces in the cache */
} flow_function_stats;
void flow_function_stats_get(const flow_function *f, flow_function_stats *out);
/* The last warning text ("" if none). */
const char *flow_function_last_warning(const flow_function *f);

/* ---- layers and models (Keras-like) ---- */
typedef struct flow_layer flow_layer;
typedef enum flow_activation {
	FLOW_ACT_NONE = 0,
	FLOW_ACT_RELU,
	FLOW_ACT_SIGMOID,
	FLOW_ACT_TANH,
	FLOW_ACT_SOFTMAX
} flow_activation;
int flow_activation_from_name(const char *name);   /* "relu"; -1 if unknown; NULL/"" = none */

/* Initialiser names as Keras: "glorot_uniform", "he_normal", "zeros", "orthogonal", … */
flow_layer *flow_layer_dense(int units, int activation, const char *kernel_init,
			     const char *bias_init);
flow_layer *flow_layer_activation(int activation);
flow_layer *flow_layer_dropout(double rate);
flow_layer *flow_layer_flatten(void);
/* NHWC input; kernel kh x kw, "same" or "valid" padding. */
flow_layer *flow_layer_conv2d(int filters, int kh, int kw, int stride, const char *padding,
			      int activation, const char *kernel_init);
flow_layer *flow_layer_maxpool2d(int pool, int stride);
void flow_layer_free(flow_layer *l);

typedef struct flow_model flow_model;
typedef struct flow_model_options {
	uint64_t seed;              /* initialisers and dropout; 0: initialisers unseeded */
	flow_allocator *allocator;  /* session allocator; NULL default */
	int op_timing;              /* 1: record every op execution; 0/-1: flow_init's default */
	const char *plan_cache_dir; /* passed to the session */
	int init_threads;           /* initialiser fill threads; 0 = the session's pool, 1 = serial */
} flow_model_options;
flow_model *flow_model_sequential(const flow_model_options *opts);
void flow_model_free(flow_model *m);
/* Takes ownership of l (also on failure). */
int flow_model_add(flow_model *m, flow_layer *l, flow_status *st);
/* Creates the variables for inputs of shape [batch, input_shape...]
 * (recorded as graph_build + variable_create), opens the session and runs
 * the initialisers (variable_init). */
int flow_model_build(flow_model *m, flow_dtype dt, const flow_shape *input_shape,
		     flow_status *st);
/* loss: "sparse_categorical_crossentropy" (labels i32 [N], model output
 * logits or softmax), "categorical_crossentropy" (one-hot f32 [N,C]), "mse". */
int flow_model_compile(flow_model *m, const char *loss, const flow_optimizer_options *opt,
		       flow_status *st);
typedef struct flow_fit_result {
	int steps;
	double first_loss, last_loss;
	uint64_t first_step_ns;
	uint64_t median_step_ns;    /* of the steps after the first */
} flow_fit_result;
/* `steps` training steps over x/y in order (batches wrap around). The first
 * step ever builds the training graph: gradient_build, optimizer_setup
 * (lazy slots), compile. Every step is a step phase; the first also
 * first_step. A NaN/Inf loss stops with "loss is NaN at step N". */
int flow_model_fit(flow_model *m, flow_tensor *x, flow_tensor *y, int batch_size, int steps,
		   flow_fit_result *res, flow_status *st);
/* Builds the training graph now (loss, gradient_build, optimiser apply and
 * slots) instead of inside the first step — the "warm-up" fix. */
int flow_model_prepare_train(flow_model *m, flow_status *st);
/* One full training step (training graph, slots, compile, arena growth;
 * variables updated) recorded as a "warmup" span instead of a step, and not
 * counted in flow_model_steps — the first-step scenario's warm-up fix. */
int flow_model_warmup(flow_model *m, flow_tensor *x, flow_tensor *y, flow_status *st);
/* One step on a batch; *loss receives the batch loss. */
int flow_model_train_step(flow_model *m, flow_tensor *x, flow_tensor *y, double *loss,
			  flow_status *st);
int flow_model_evaluate(flow_model *m, flow_tensor *x, flow_tensor *y, int batch_size,
			double *loss, double *accuracy, flow_status *st);
flow_tensor *flow_model_predict(flow_model *m, flow_tensor *x, flow_status *st);
/* *.safetensors: safetensors (mmap'd on load); any other name: the naive
 * text format (for the model-init scenario's slow variant). Loading checks
 * every tensor's name, dtype and shape before assigning any. */
int flow_model_save_weights(flow_model *m, const char *path, flow_status *st);
int flow_model_load_weights(flow_model *m, const char *path, flow_status *st);
int flow_model_num_params(const flow_model *m);
int64_t flow_model_num_weights(const flow_model *m);   /* scalar count */
flow_graph *flow_model_graph(flow_model *m);
flow_session *flow_model_session(flow_model *m);
flow_optimizer *flow_model_optimizer(flow_model *m);
/* Variable i (creation order) and its current value (new reference). */
flow_op *flow_model_param(flow_model *m, int i);
flow_tensor *flow_model_param_value(flow_model *m, int i, flow_status *st);
int64_t flow_model_steps(const flow_model *m);

#ifdef __cplusplus
}
#endif
#endif /* FLOW_TRAIN_H */
