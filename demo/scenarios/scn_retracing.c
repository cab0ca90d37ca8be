/*
 * retracing — "the traced function re-traces" (TensorFlow #34907, #38561:
 * predict_on_batch with batch sizes 1…299 retraces every call).
 *
 * slow:             a traced MLP forward pass called with a new batch size
 *                   every call: one trace per call, and the frequent-retracing
 *                   warning (TF's: 5 of the last 5 calls).
 * relaxed:          the same calls with an input signature whose batch
 *                   dimension is unknown ([?, 784]): one trace.
 * reduce-retracing: no signature, reduce_retracing on: the second shape
 *                   relaxes the batch dimension, two traces in all.
 */
#include "scn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_IN 784
#define RT_HID 128
#define RT_OUT 10
#define RT_DEPTH 4 /* hidden 128x128 layers: a realistic trace, not a toy */

#include "flow_train.h"

typedef struct rt_model {
	flow_output w1, b1, w2, b2;
	flow_output wh[RT_DEPTH], bh[RT_DEPTH];
} rt_model;

static int rt_trace(flow_graph *g, const flow_output *in, int n_in, flow_output *out, int n_out,
		    void *ud, flow_status *st)
{
	(void)n_in;
	(void)n_out;
	rt_model *m = ud;
	flow_output h = scn_matmul(g, NULL, in[0], m->w1, st);
	h = h.op ? scn_binary(g, "BiasAdd", NULL, h, m->b1, st) : h;
	h = h.op ? flow_simple(g, "Relu", NULL, &h, 1, st) : h;
	for (int l = 0; l < RT_DEPTH && h.op; l++) {
		h = scn_matmul(g, NULL, h, m->wh[l], st);
		h = h.op ? scn_binary(g, "BiasAdd", NULL, h, m->bh[l], st) : h;
		h = h.op ? flow_simple(g, "Relu", NULL, &h, 1, st) : h;
	}
	h = h.op ? scn_matmul(g, NULL, h, m->w2, st) : h;
	out[0] = h.op ? scn_binary(g, "BiasAdd", NULL, h, m->b2, st) : h;
	return out[0].op ? 0 : -1;
}

static int rt_calls(const scn_env *e)
{
	return scn_pick(e, 200, 120, 8); /* each a multiple of no 7: see the batch sizes */
}

/* mode 0: no signature; 1: signature [?, 784]; 2: reduce_retracing */
static int rt_run(scn_env *e, int mode)
{
	flow_status *st = flow_status_new();
	int rc = scn_flow_init_opts(e, 1, st);
	flow_graph *g = flow_graph_new();
	flow_session *s = NULL;
	flow_function *f = NULL;
	rt_model m;
	/* a trained model is served: its weights are restored from a file */
	char path[4200];
	snprintf(path, sizeof path, "%s/predict.safetensors", e->workdir);
	flow_op *restores[2 * (RT_DEPTH + 2)];
	int nr = 0;
	int64_t d1[2] = {RT_IN, RT_HID}, d2[2] = {RT_HID, RT_OUT}, e1[1] = {RT_HID},
		e2[1] = {RT_OUT}, dh[2] = {RT_HID, RT_HID};
	m.w1 = scn_restored_variable(g, "w1", path, "w1", 2, d1, &restores[nr++], st);
	m.b1 = m.w1.op ? scn_restored_variable(g, "b1", path, "b1", 1, e1, &restores[nr++], st) : m.w1;
	m.w2 = m.b1.op ? scn_restored_variable(g, "w2", path, "w2", 2, d2, &restores[nr++], st) : m.b1;
	m.b2 = m.w2.op ? scn_restored_variable(g, "b2", path, "b2", 1, e2, &restores[nr++], st) : m.w2;
	for (int l = 0; l < RT_DEPTH && m.b2.op; l++) {
		char n[32];
		snprintf(n, sizeof n, "wh%d", l);
		m.wh[l] = scn_restored_variable(g, n, path, n, 2, dh, &restores[nr++], st);
		snprintf(n, sizeof n, "bh%d", l);
		m.bh[l] = m.wh[l].op ? scn_restored_variable(g, n, path, n, 1, e1, &restores[nr++], st)
				     : m.wh[l];
		if (!m.bh[l].op)
			break;
	}
	flow_op *init = !rc && flow_status_ok(st) ? flow_group(g, "restore", restores, nr, st) : NULL;
	flow_session_options so = {.no_step_phase = 1};
	s = init ? flow_session_new(g, &so, st) : NULL;
	if (!rc) {
		pp_phase_begin(PP_WEIGHT_LOAD, "restore:safetensors");
		if (!s || flow_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, st) != 0)
			rc = scn_fail(e, "model: %s", flow_status_message(st));
		pp_phase_end();
	}
	flow_dtype dt = FLOW_F32;
	int64_t sd[2] = {-1, RT_IN};
	flow_shape sig = flow_shape_make(2, sd);
	flow_function_options fo = {.name = "predict", .n_inputs = 1, .n_outputs = 1,
				    .graph = g, .session = s, .warn_to_stderr = -1};
	if (mode == 1) {
		fo.sig_dtypes = &dt;
		fo.sig_shapes = &sig;
	}
	fo.reduce_retracing = mode == 2;
	if (!rc && !(f = flow_function_new(rt_trace, &m, &fo, st)))
		rc = scn_fail(e, "traced function: %s", flow_status_message(st));
	int calls = rt_calls(e);
	scn_measured_begin();
	for (int i = 0; !rc && i < calls; i++) {
		/* a new batch size every call: a permutation of 1..calls (7 is
		 * coprime to every size used), so sizes differ without trending up
		 * and the compute per call stays level */
		int bs = 1 + (i * 7) % calls;
		int64_t xd[2] = {bs, RT_IN};
		flow_tensor *x = scn_tensor_uniform(2, xd, (uint64_t)i, st), *y = NULL;
		pp_step_begin(i);
		if (!x || flow_function_call(f, &x, &y, st) != 0)
			rc = scn_fail(e, "call %d (batch %d): %s", i, bs, flow_status_message(st));
		pp_step_end();
		flow_tensor_unref(x);
		flow_tensor_unref(y);
	}
	scn_measured_end();
	if (f) {
		flow_function_stats fs;
		flow_function_stats_get(f, &fs);
		char b[64];
		snprintf(b, sizeof b, "%d", fs.calls);
		pp_meta("retracing.calls", b);
		snprintf(b, sizeof b, "%d", fs.traces);
		pp_meta("retracing.traces", b);
		snprintf(b, sizeof b, "%d", fs.warnings);
		pp_meta("retracing.warnings", b);
		if (flow_function_last_warning(f)[0])
			pp_meta("retracing.warning", flow_function_last_warning(f));
		flow_function_free(f);
	}
	if (s) {
		flow_session_close(s, NULL);
		flow_session_free(s);
	}
	flow_graph_free(g);
	flow_status_free(st);
	return rc;
}

static int rt_slow(scn_env *e) { return rt_run(e, 0); }
static int rt_relaxed(scn_env *e) { return rt_run(e, 1); }
static int rt_reduce(scn_env *e) { return rt_run(e, 2); }

/* The trained model's weights (deterministic values). */
static int rt_prepare(const char *workdir, int size, char *err, size_t errlen)
{
	(void)size;
	scn_wtensor t[2 * (RT_DEPTH + 2)];
	char names[2 * (RT_DEPTH + 2)][16];
	float *data[2 * (RT_DEPTH + 2)] = {0};
	int n = 0, rc = 0;
	int64_t in[RT_DEPTH + 2], out[RT_DEPTH + 2];
	const char *wn[RT_DEPTH + 2];
	char hn[RT_DEPTH][8];
	in[0] = RT_IN, out[0] = RT_HID, wn[0] = "1";
	for (int l = 0; l < RT_DEPTH; l++) {
		snprintf(hn[l], sizeof hn[l], "h%d", l);
		in[l + 1] = RT_HID, out[l + 1] = RT_HID, wn[l + 1] = hn[l];
	}
	in[RT_DEPTH + 1] = RT_HID, out[RT_DEPTH + 1] = RT_OUT, wn[RT_DEPTH + 1] = "2";
	for (int l = 0; l < RT_DEPTH + 2; l++)
		for (int b = 0; b < 2; b++, n++) {
			snprintf(names[n], sizeof names[n], "%c%s", b ? 'b' : 'w', wn[l]);
			t[n].name = names[n];
			t[n].rank = b ? 1 : 2;
			t[n].shape[0] = b ? out[l] : in[l];
			t[n].shape[1] = out[l];
			data[n] = scn_weights_data(t[n].rank, t[n].shape, (uint64_t)n + 31);
			t[n].data = data[n];
			if (!data[n])
				rc = -1;
		}
	char path[4200];
	snprintf(path, sizeof path, "%s/predict.safetensors", workdir);
	if (rc)
		snprintf(err, errlen, "out of memory");
	else
		rc = scn_write_safetensors(path, t, n, err, errlen);
	for (int i = 0; i < n; i++)
		free(data[i]);
	return rc;
}



static int rt_claims(pp_store *st, const int64_t *run, pp_scn_claim *out, int max)
{
	int n = 0;
	char a[32], b[32];
	if (run[0] > 0) {
		double calls = scn_meta_num(st, run[0], "retracing.calls", 0);
		double traces = scn_meta_num(st, run[0], "retracing.traces", 0);
		double warns = scn_meta_num(st, run[0], "retracing.warnings", 0);
		int64_t nt = 0;
		int64_t tt = scn_span_total(st, run[0], "measured", NULL);
		int64_t tr = scn_kind_total(st, run[0], PP_RETRACE, &nt);
		char warning[300] = "";
		if (pp_store_run_meta(st, run[0], "retracing.warning", warning, sizeof warning) != 0)
			warning[0] = 0;
		n = scn_claim(out, n, max, "retrace-per-call",
			      "a new input shape per call re-traces the function every call",
			      calls > 0 && traces >= calls ? PP_CLAIM_SUPPORTED
							   : PP_CLAIM_NOT_SUPPORTED,
			      "%.0f calls, %.0f traces (%lld retrace phases, %s = %.0f%% of the calls' "
			      "time), %.0f warnings%s%.160s%s",
			      calls, traces, (long long)nt, pp_fmt_dur(a, sizeof a, (double)tr),
			      tt > 0 ? 100.0 * tr / tt : 0, warns, warning[0] ? ": \"" : "", warning,
			      warning[0] ? "...\"" : "");
	}
	if (run[1] > 0) {
		double traces = scn_meta_num(st, run[1], "retracing.traces", 0);
		pp_scn_measure m0, m1;
		int have = run[0] > 0 && pp_scenario_measure(st, run[0], &m0) == 0 &&
			   pp_scenario_measure(st, run[1], &m1) == 0;
		n = scn_claim(out, n, max, "relaxed-signature",
			      "an input signature with an unknown batch dimension traces once",
			      traces == 1 ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED,
			      "%.0f trace(s) with signature [?, %d]; calls took %s in all vs %s "
			      "retracing",
			      traces, RT_IN,
			      pp_fmt_dur(a, sizeof a, have ? (double)m1.measured_ns : NAN),
			      pp_fmt_dur(b, sizeof b, have ? (double)m0.measured_ns : NAN));
	}
	return n;
}

static const scn_variant variants[] = {
	{"slow", SCN_SLOW, "traced MLP forward (784-128x5-10) called with a new batch size every call (1..N permuted)",
	 rt_slow, NULL},
	{"relaxed", SCN_FIX, "same calls, input signature [?, 784] (unknown batch dimension)", rt_relaxed, NULL},
	{"reduce-retracing", SCN_FIX, "same calls, no signature, reduce_retracing on (relaxes after 1 retrace)",
	 rt_reduce, NULL},
};

static const char *const rules[] = {"repeated_retracing"};

const pp_scenario scn_retracing = {
	.name = "retracing",
	.complaint = "a traced function re-traces on every call",
	.source = "research: TensorFlow #34907, #38561 (tf.function retracing)",
	.metric = "time of the calls",
	.variants = variants,
	.n_variants = SCN_COUNT(variants),
	.rules = rules,
	.n_rules = SCN_COUNT(rules),
	.prepare = rt_prepare,
	.claims = rt_claims,
};
