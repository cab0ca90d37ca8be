/*
 * function.c — traced functions, the tf.function analogue.
 *
 * A call computes the inputs' signature (dtype and shape per argument),
 * looks for a cached trace whose signature accepts it (a -1 dim accepts any
 * size) and otherwise traces: the C body builds its graph from placeholders
 * of that signature, recorded as one `retrace` phase named by the
 * signature. TensorFlow's frequent-retracing detector is mirrored: when at
 * least 5 of the last 10 calls traced, a warning with TF's wording is
 * emitted (at most 2 per function).
 */
#include "train_internal.h"
#include "pp_grow.h"
#include "phaseprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARN_THRESHOLD 5   /* FREQUENT_TRACING_WARNING_THRESHOLD */
#define CALL_HISTORY 10    /* FREQUENT_TRACING_WARNING_MAX_CALL_HISTORY */
#define MAX_WARNINGS 2     /* FREQUENT_TRACING_WARNING_MAX_WARNING_PER_DETECTOR */

typedef struct trace {
	flow_dtype *dt;
	flow_shape *sh;
	flow_output *in;       /* placeholders */
	flow_output *out;
	char *sig;
} trace;

struct flow_function {
	flow_trace_fn fn;
	void *ud;
	char *name;
	int n_in, n_out;
	flow_dtype *sig_dt;    /* declared input signature, or NULL */
	flow_shape *sig_sh;
	int reduce_retracing;
	int warn_stderr;
	flow_graph *g;
	flow_session *s;
	int own_g, own_s;
	trace *traces;
	int n_traces, cap_traces;
	unsigned char hist[CALL_HISTORY];
	int hist_n, hist_pos;
	flow_function_stats stats;
	char warning[1024];
};

flow_function *flow_function_new(flow_trace_fn fn, void *ud, const flow_function_options *o,
				 flow_status *st)
{
	if (flow_train_init(st))
		return NULL;
	if (!fn || !o || o->n_inputs < 0 || o->n_outputs < 1) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"function: needs a body and at least one output");
		return NULL;
	}
	if (o->session && !o->graph) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"function '%s': a shared session needs its graph too",
				o->name ? o->name : "?");
		return NULL;
	}
	flow_function *f = calloc(1, sizeof *f);
	if (!f)
		goto oom;
	f->fn = fn;
	f->ud = ud;
	f->name = strdup(o->name && *o->name ? o->name : "function");
	f->n_in = o->n_inputs;
	f->n_out = o->n_outputs;
	f->reduce_retracing = o->reduce_retracing;
	f->warn_stderr = o->warn_to_stderr >= 0;
	if (!f->name)
		goto oom;
	if (o->sig_dtypes || o->sig_shapes) {
		f->sig_dt = calloc((size_t)f->n_in + 1, sizeof *f->sig_dt);
		f->sig_sh = calloc((size_t)f->n_in + 1, sizeof *f->sig_sh);
		if (!f->sig_dt || !f->sig_sh)
			goto oom;
		for (int i = 0; i < f->n_in; i++) {
			f->sig_dt[i] = o->sig_dtypes ? o->sig_dtypes[i] : FLOW_DT_INVALID;
			f->sig_sh[i] = o->sig_shapes ? o->sig_shapes[i] : flow_shape_unknown();
		}
	}
	f->g = o->graph;
	f->s = o->session;
	if (!f->g) {
		f->g = flow_graph_new();
		f->own_g = 1;
		if (!f->g)
			goto oom;
	}
	return f;
oom:
	flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "function: out of memory");
	flow_function_free(f);
	return NULL;
}

void flow_function_free(flow_function *f)
{
	if (!f)
		return;
	if (f->own_s)
		flow_session_free(f->s);
	if (f->own_g)
		flow_graph_free(f->g);
	for (int i = 0; i < f->n_traces; i++) {
		trace *t = &f->traces[i];
		free(t->dt);
		free(t->sh);
		free(t->in);
		free(t->out);
		free(t->sig);
	}
	free(f->traces);
	free(f->sig_dt);
	free(f->sig_sh);
	free(f->name);
	free(f);
}

void flow_function_stats_get(const flow_function *f, flow_function_stats *out)
{
	*out = f->stats;
	out->cached = f->n_traces;
}

const char *flow_function_last_warning(const flow_function *f)
{
	return f->warning;
}

static int dims_accept(const flow_shape *want, const flow_shape *got)
{
	if (want->ndim < 0)
		return 1;
	if (want->ndim != got->ndim)
		return 0;
	for (int i = 0; i < want->ndim; i++)
		if (want->dims[i] >= 0 && want->dims[i] != got->dims[i])
			return 0;
	return 1;
}

static char *sig_string(const char *name, int n, const flow_dtype *dt, const flow_shape *sh)
{
	size_t cap = 64 + strlen(name) + (size_t)n * 96;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	size_t k = (size_t)snprintf(s, cap, "%s(", name);
	for (int i = 0; i < n; i++) {
		char b[80];
		k += (size_t)snprintf(s + k, cap - k, "%s%s[%s]", i ? ", " : "", flow_dtype_name(dt[i]),
				      flow_shape_str(&sh[i], b, sizeof b));
	}
	snprintf(s + k, cap - k, ")");
	return s;
}

static void detector(flow_function *f, int traced)
{
	f->hist[f->hist_pos] = (unsigned char)traced;
	f->hist_pos = (f->hist_pos + 1) % CALL_HISTORY;
	if (f->hist_n < CALL_HISTORY)
		f->hist_n++;
	if (!traced || f->stats.warnings >= MAX_WARNINGS)
		return;
	int n = 0;
	for (int i = 0; i < f->hist_n; i++)
		n += f->hist[i];
	if (n < WARN_THRESHOLD)
		return;
	f->stats.warnings++;
	snprintf(f->warning, sizeof f->warning,
		 "%d out of the last %d calls to <function %s> triggered tf.function retracing. "
		 "Tracing is expensive and the excessive number of tracings could be due to (1) "
		 "creating the function repeatedly in a loop, (2) passing tensors with different "
		 "shapes, (3) passing non-tensor arguments that change per call. For (1), create "
		 "the function once outside the loop. For (2), the function has the "
		 "reduce_retracing=1 option (or declare an input signature with -1 dimensions) "
		 "that can avoid unnecessary retracing.",
		 n, f->hist_n, f->name);
	pp_mark("retrace_warning");
	if (f->warn_stderr)
		fprintf(stderr, "flow: WARNING: %s\n", f->warning);
}

/* Makes and caches a trace for the signature (dt, sh). */
static trace *do_trace(flow_function *f, const flow_dtype *dt, flow_shape *sh, flow_status *st)
{
	if (PP_GROW(f->traces, f->n_traces + 1, f->cap_traces) != 0) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "function: out of memory");
		return NULL;
	}
	trace *t = &f->traces[f->n_traces];
	memset(t, 0, sizeof *t);
	/* reduce_retracing: relax every dim that differs from an earlier trace
	 * of the same dtypes and ranks (TF's shape relaxation). */
	if (f->reduce_retracing)
		for (int k = f->n_traces - 1; k >= 0; k--) {
			trace *o = &f->traces[k];
			int same = 1;
			for (int i = 0; i < f->n_in && same; i++)
				same = o->dt[i] == dt[i] && o->sh[i].ndim == sh[i].ndim;
			if (!same)
				continue;
			for (int i = 0; i < f->n_in; i++)
				for (int d = 0; d < sh[i].ndim; d++)
					if (o->sh[i].dims[d] != sh[i].dims[d])
						sh[i].dims[d] = -1;
			break;
		}
	t->dt = malloc(sizeof *t->dt * ((size_t)f->n_in + 1));
	t->sh = malloc(sizeof *t->sh * ((size_t)f->n_in + 1));
	t->in = calloc((size_t)f->n_in + 1, sizeof *t->in);
	t->out = calloc((size_t)f->n_out, sizeof *t->out);
	t->sig = sig_string(f->name, f->n_in, dt, sh);
	if (!t->dt || !t->sh || !t->in || !t->out || !t->sig) {
		free(t->dt), free(t->sh), free(t->in), free(t->out), free(t->sig);
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "function: out of memory");
		return NULL;
	}
	memcpy(t->dt, dt, sizeof *dt * (size_t)f->n_in);
	memcpy(t->sh, sh, sizeof *sh * (size_t)f->n_in);
	pp_phase_begin(PP_RETRACE, t->sig);
	int rc = 0;
	for (int i = 0; i < f->n_in && !rc; i++) {
		char nm[256];
		snprintf(nm, sizeof nm, "%s_trace%d/arg%d", f->name, f->stats.traces, i);
		t->in[i] = flow_placeholder(f->g, nm, dt[i], &sh[i], st);
		rc = t->in[i].op ? 0 : -1;
	}
	if (!rc)
		rc = f->fn(f->g, t->in, f->n_in, t->out, f->n_out, f->ud, st);
	for (int i = 0; i < f->n_out && !rc; i++)
		if (!t->out[i].op) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"function '%s': the body did not set output %d", f->name, i);
			rc = -1;
		}
	pp_phase_end();
	if (rc) {
		if (flow_status_ok(st))
			flow_status_set(st, FLOW_INTERNAL, "function '%s': tracing failed", f->name);
		free(t->dt), free(t->sh), free(t->in), free(t->out), free(t->sig);
		return NULL;
	}
	f->stats.traces++;
	if (f->stats.traces > 1)
		f->stats.retraces++;
	char cn[300];
	snprintf(cn, sizeof cn, "flow.function.%s.traces", f->name);
	pp_counter(cn, f->stats.traces);
	f->n_traces++;
	return t;
}

int flow_function_call(flow_function *f, flow_tensor *const *inputs, flow_tensor **outputs,
		       flow_status *st)
{
	flow_dtype dt[64];
	flow_shape sh[64];
	if (f->n_in > 64) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "function '%s': more than 64 arguments",
				f->name);
		return -1;
	}
	for (int i = 0; i < f->n_in; i++) {
		if (!inputs[i]) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "function '%s': argument %d is NULL",
					f->name, i);
			return -1;
		}
		dt[i] = flow_tensor_dtype(inputs[i]);
		sh[i] = flow_tensor_shape(inputs[i]);
		if (f->sig_dt && f->sig_dt[i] && f->sig_dt[i] != dt[i]) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"function '%s': argument %d has dtype %s, the input signature "
					"expects %s",
					f->name, i, flow_dtype_name(dt[i]), flow_dtype_name(f->sig_dt[i]));
			return -1;
		}
		if (f->sig_sh && !dims_accept(&f->sig_sh[i], &sh[i])) {
			char a[64], b[64];
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"function '%s': argument %d has shape %s, incompatible with the "
					"input signature %s",
					f->name, i, flow_shape_str(&sh[i], a, sizeof a),
					flow_shape_str(&f->sig_sh[i], b, sizeof b));
			return -1;
		}
	}
	f->stats.calls++;
	trace *t = NULL;
	for (int k = 0; k < f->n_traces && !t; k++) {
		trace *c = &f->traces[k];
		int okk = 1;
		for (int i = 0; i < f->n_in && okk; i++)
			okk = c->dt[i] == dt[i] && dims_accept(&c->sh[i], &sh[i]);
		if (okk)
			t = c;
	}
	int traced = !t;
	if (!t) {
		/* A declared signature traces once, with its unknown dims. */
		if (f->sig_sh)
			for (int i = 0; i < f->n_in; i++)
				if (f->sig_sh[i].ndim >= 0)
					sh[i] = f->sig_sh[i];
		t = do_trace(f, dt, sh, st);
		if (!t)
			return -1;
	}
	detector(f, traced);
	if (!f->s) {
		flow_session_options so = {0};
		so.op_timing = -1;
		f->s = flow_session_new(f->g, &so, st);
		if (!f->s)
			return -1;
		f->own_s = 1;
	}
	return flow_session_run(f->s, t->in, inputs, f->n_in, t->out, outputs, f->n_out, NULL, 0,
				st);
}
