/*
 * model-init — "model initialisation takes long" (write-up 001).
 *
 * Two models are built and made ready: A = Dense 784-1024-10 (the
 * write-up's example) and a larger B = 784-2048-1024-10 whose hidden kernel
 * uses the orthogonal initialiser (QR through LAPACK). Quick size: B is
 * 784-1024-512-10.
 *
 * slow:          glorot_uniform (and orthogonal for B's hidden kernel),
 *                filled on one thread — Keras' defaults, example 1.
 * slow-text:     pre-trained weights loaded from a naive text format, one
 *                number per line (example 2's "not optimally formatted" file).
 * safetensors:   the same weights restored from an mmap'd safetensors file;
 *                no initialiser runs (its values would be overwritten).
 * zeros:         partial fix (example 3): zeros initialisers. Much cheaper,
 *                but all-zero weights make every unit of a layer identical
 *                (no symmetry breaking): the model cannot learn from them.
 * parallel-init: partial fix: the same glorot/orthogonal values filled by
 *                the Philox generator on every core.
 * The partial fixes are probes: they make the initialiser cheaper, but in a
 * program that only initialises it is still most of the time, and the
 * diagnostics rightly keep saying so.
 */
#include "scn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MI_MAX_LAYERS 3

typedef struct mi_model {
	const char *name;
	int n_layers;
	int64_t dims[MI_MAX_LAYERS + 1];
	int orthogonal_layer;     /* layer whose kernel is orthogonal, -1 none */
} mi_model;

static void mi_models(int size, mi_model m[2])
{
	m[0] = (mi_model){"a", 2, {784, 1024, 10, 0}, -1};
	if (size == PP_SCN_FULL)
		m[1] = (mi_model){"b", 3, {784, 2048, 1024, 10}, 1};
	else if (size == PP_SCN_QUICK)
		m[1] = (mi_model){"b", 3, {784, 1024, 512, 10}, 1};
	else {
		m[0] = (mi_model){"a", 2, {784, 64, 10, 0}, -1};
		m[1] = (mi_model){"b", 3, {784, 64, 32, 10}, 1};
	}
}

enum { MI_INIT, MI_TEXT, MI_SAFETENSORS };

static void mi_tensor_name(const mi_model *m, int l, int bias, char *buf, size_t len)
{
	snprintf(buf, len, "%s/dense%d/%s", m->name, l, bias ? "bias" : "kernel");
}

static void mi_text_path(const char *workdir, const char *tname, char *buf, size_t len)
{
	/* one text file per tensor: the naive format has no index to seek by */
	char flat[64];
	snprintf(flat, sizeof flat, "%s", tname);
	for (char *p = flat; *p; p++)
		if (*p == '/')
			*p = '_';
	snprintf(buf, len, "%s/%s.txt", workdir, flat);
}

/* Builds both models; initial values from an initialiser (kernels: `kinit`,
 * or orthogonal where the model says; biases zeros) or from weight files. */
static int mi_build(scn_env *e, flow_graph *g, const mi_model *ms, int source, const char *kinit,
		    flow_output *outs, flow_op **restores, int *n_restores, flow_status *st)
{
	*n_restores = 0;
	char st_path[4200];
	snprintf(st_path, sizeof st_path, "%s/models.safetensors", e->workdir);
	for (int k = 0; k < 2; k++) {
		const mi_model *m = &ms[k];
		char xn[16];
		snprintf(xn, sizeof xn, "%s/x", m->name);
		int64_t xd[2] = {-1, m->dims[0]};
		flow_shape xs = flow_shape_make(2, xd);
		flow_output h = flow_placeholder(g, xn, FLOW_F32, &xs, st);
		for (int l = 0; l < m->n_layers && h.op; l++) {
			flow_output v[2];
			for (int b = 0; b < 2; b++) {
				char tn[64], in[80], path[4300];
				int64_t d[2] = {b ? m->dims[l + 1] : m->dims[l], m->dims[l + 1]};
				int rank = b ? 1 : 2;
				mi_tensor_name(m, l, b, tn, sizeof tn);
				snprintf(in, sizeof in, "%s/init", tn);
				flow_output iv;
				if (source != MI_INIT) {
					/* restored from a file: no initialiser at all */
					if (source == MI_TEXT)
						mi_text_path(e->workdir, tn, path, sizeof path);
					v[b] = scn_restored_variable(
						g, tn, source == MI_TEXT ? path : st_path, tn, rank, d,
						&restores[(*n_restores)++], st);
					if (!v[b].op)
						return scn_fail(e, "%s: %s", tn, flow_status_message(st));
					continue;
				} else {
					const char *kind = b ? "zeros"
						      : l == m->orthogonal_layer && strcmp(kinit, "zeros") != 0
							  ? "orthogonal"
							  : kinit;
					iv = scn_initializer(g, in, kind, rank, d, 1 + 2 * l + b, st);
				}
				v[b] = iv.op ? flow_variable(g, tn, iv, st) : iv;
				if (!v[b].op)
					return scn_fail(e, "%s: %s", tn, flow_status_message(st));
			}
			h = scn_matmul(g, NULL, h, v[0], st);
			h = h.op ? scn_binary(g, "BiasAdd", NULL, h, v[1], st) : h;
			if (l + 1 < m->n_layers && h.op)
				h = flow_simple(g, "Relu", NULL, &h, 1, st);
		}
		if (!h.op)
			return scn_fail(e, "model %s: %s", m->name, flow_status_message(st));
		outs[k] = h;
	}
	return 0;
}

static int mi_run(scn_env *e, int source, const char *kinit, int threads)
{
	flow_status *st = flow_status_new();
	int rc = 0;
	mi_model ms[2];
	mi_models(e->size, ms);
	flow_init_options o = {0};
	o.registration = FLOW_REGISTER_LITE; /* registration is the startup scenario's subject */
	o.threads = threads;
	scn_measured_begin();
	if (flow_init(&o, st) != 0)
		rc = scn_fail(e, "flow_init: %s", flow_status_message(st));
	flow_graph *g = flow_default_graph();
	flow_output outs[2];
	flow_op *restores[4 * MI_MAX_LAYERS];
	int n_restores = 0;
	if (!rc)
		rc = mi_build(e, g, ms, source, kinit, outs, restores, &n_restores, st);
	flow_op *init = rc ? NULL
		      : source == MI_INIT ? flow_global_variables_initializer(g, st)
					  : flow_group(g, "restore", restores, n_restores, st);
	flow_session_options so = {.no_step_phase = 1};
	flow_session *s = init ? flow_session_new(g, &so, st) : NULL;
	if (!rc && !s)
		rc = scn_fail(e, "session: %s", flow_status_message(st));
	if (!rc) {
		/* A run that sets variables from a file is a restore (weight_load);
		 * one that computes them is initialisation (variable_init, which
		 * the session records too; this outer phase names the kind). */
		char phase[64];
		if (source == MI_INIT) {
			snprintf(phase, sizeof phase, "%s:all", kinit);
			pp_phase_begin(PP_VARIABLE_INIT, phase);
		} else {
			snprintf(phase, sizeof phase, "restore:%s",
				 source == MI_TEXT ? "text" : "safetensors");
			pp_phase_begin(PP_WEIGHT_LOAD, phase);
		}
		if (flow_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, st) != 0)
			rc = scn_fail(e, "initialising: %s", flow_status_message(st));
		pp_phase_end();
	}
	scn_measured_end();
	/* evidence: bytes made, and a value check */
	double bytes = 0, sum = 0;
	for (int i = 0; !rc && i < flow_graph_num_variables(g); i++) {
		flow_tensor *v = flow_session_variable_value(s, flow_graph_variable_at(g, i), st);
		if (!v) {
			rc = scn_fail(e, "variable %d has no value: %s", i, flow_status_message(st));
			break;
		}
		bytes += (double)flow_tensor_nbytes(v);
		for (int64_t j = 0; j < flow_tensor_nelem(v); j++)
			sum += flow_tensor_get(v, j);
		if (!isfinite(flow_tensor_get(v, 0)))
			rc = scn_fail(e, "variable %d is not finite", i);
		flow_tensor_unref(v);
	}
	if (source == MI_INIT)
		pp_counter("init.bytes", bytes);
	char b[32];
	snprintf(b, sizeof b, "%.0f", bytes);
	pp_meta("model_init.bytes", b);
	snprintf(b, sizeof b, "%.17g", sum);
	pp_meta("model_init.checksum", b);
	snprintf(b, sizeof b, "%d", flow_threadpool_size(flow_default_pool()));
	pp_meta("model_init.threads", b);
	if (s) {
		flow_session_close(s, NULL);
		flow_session_free(s);
	}
	flow_status_free(st);
	return rc;
}

static int mi_slow(scn_env *e) { return mi_run(e, MI_INIT, "glorot_uniform", 1); }
static int mi_text(scn_env *e) { return mi_run(e, MI_TEXT, "", 0); }
static int mi_safetensors(scn_env *e) { return mi_run(e, MI_SAFETENSORS, "", 0); }
static int mi_zeros(scn_env *e) { return mi_run(e, MI_INIT, "zeros", 1); }
static int mi_parallel(scn_env *e) { return mi_run(e, MI_INIT, "glorot_uniform", 0); }

/* The weight files the loading variants read. */
static int mi_prepare(const char *workdir, int size, char *err, size_t errlen)
{
	mi_model ms[2];
	mi_models(size, ms);
	scn_wtensor t[2 * 2 * MI_MAX_LAYERS];
	char names[2 * 2 * MI_MAX_LAYERS][64];
	float *data[2 * 2 * MI_MAX_LAYERS] = {0};
	int n = 0, rc = 0;
	for (int k = 0; k < 2; k++)
		for (int l = 0; l < ms[k].n_layers; l++)
			for (int b = 0; b < 2; b++, n++) {
				mi_tensor_name(&ms[k], l, b, names[n], sizeof names[n]);
				t[n].name = names[n];
				t[n].rank = b ? 1 : 2;
				t[n].shape[0] = b ? ms[k].dims[l + 1] : ms[k].dims[l];
				t[n].shape[1] = ms[k].dims[l + 1];
				data[n] = scn_weights_data(t[n].rank, t[n].shape, (uint64_t)n + 11);
				t[n].data = data[n];
				if (!data[n])
					rc = -1;
			}
	if (rc)
		snprintf(err, errlen, "out of memory");
	char path[4300];
	snprintf(path, sizeof path, "%s/models.safetensors", workdir);
	if (!rc)
		rc = scn_write_safetensors(path, t, n, err, errlen);
	for (int i = 0; !rc && i < n; i++) {
		mi_text_path(workdir, t[i].name, path, sizeof path);
		rc = scn_write_text(path, &t[i], 1, err, errlen);
	}
	for (int i = 0; i < n; i++)
		free(data[i]);
	return rc;
}

/* ---- claims ---- */

static int mi_claims(pp_store *st, const int64_t *run, pp_scn_claim *out, int max)
{
	int n = 0;
	char a[32], b[32], c[32], d[32];
	pp_scn_measure m[5];
	int have[5];
	for (int v = 0; v < 5; v++)
		have[v] = run[v] > 0 && pp_scenario_measure(st, run[v], &m[v]) == 0 &&
			  m[v].measured_ns > 0;
	if (have[0]) {
		double vi = (double)scn_kind_total(st, run[0], PP_VARIABLE_INIT, NULL);
		double bytes = scn_meta_num(st, run[0], "model_init.bytes", 0);
		double share = vi / (double)m[0].measured_ns;
		n = scn_claim(out, n, max, "initializer-cost",
			      "creating the variables is expensive because of the initialiser's "
			      "computation for every weight",
			      share >= 0.5 ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED,
			      "glorot_uniform/orthogonal on one thread: %s of the %s initialisation "
			      "(%.0f%%) for %s of weights (%.0f MB/s)",
			      pp_fmt_dur(a, sizeof a, vi), pp_fmt_dur(b, sizeof b, (double)m[0].measured_ns),
			      100 * share, pp_fmt_bytes(c, sizeof c, bytes),
			      vi > 0 ? bytes / (vi / 1e9) / 1e6 : 0);
	}
	if (have[1] && have[2]) {
		double t1 = (double)scn_kind_total(st, run[1], PP_WEIGHT_LOAD, NULL);
		double t2 = (double)scn_kind_total(st, run[2], PP_WEIGHT_LOAD, NULL);
		double bytes = scn_counter_sum(st, run[1], "weights.bytes");
		n = scn_claim(out, n, max, "weight-format",
			      "a file format not optimised for loading makes the weight load slow",
			      t1 > 5 * t2 ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED,
			      "the same weights: naive text %s, mmap'd safetensors %s (x%.0f)",
			      pp_fmt_dur(a, sizeof a, t1), pp_fmt_dur(b, sizeof b, t2), t2 > 0 ? t1 / t2 : 0);
		n = scn_claim(out, n, max, "storage-io",
			      "the I/O performance of the storage system sets the load time",
			      PP_CLAIM_NOT_SUPPORTED,
			      "the text files were just written and sit in the page cache, yet their %s "
			      "load at %.0f MB/s: the time is parsing (one read and strtod per line), "
			      "which no faster disk would change",
			      pp_fmt_bytes(c, sizeof c, bytes),
			      t1 > 0 ? bytes / (t1 / 1e9) / 1e6 : 0);
	}
	if (have[0] && have[3])
		n = scn_claim(out, n, max, "zeros-init",
			      "a zeros initialiser cuts variable creation time (at an accuracy cost)",
			      m[3].measured_ns * 2 < m[0].measured_ns ? PP_CLAIM_SUPPORTED
								      : PP_CLAIM_NOT_SUPPORTED,
			      "zeros %s vs glorot/orthogonal %s (x%.1f); all-zero weights give every "
			      "unit of a layer the same gradient, so the model cannot learn",
			      pp_fmt_dur(a, sizeof a, (double)m[3].measured_ns),
			      pp_fmt_dur(b, sizeof b, (double)m[0].measured_ns),
			      (double)m[0].measured_ns / (double)m[3].measured_ns);
	if (have[0] && have[4]) {
		double th = scn_meta_num(st, run[4], "model_init.threads", 0);
		double v0 = (double)scn_kind_total(st, run[0], PP_VARIABLE_INIT, NULL);
		double v4 = (double)scn_kind_total(st, run[4], PP_VARIABLE_INIT, NULL);
		double c0 = scn_meta_num(st, run[0], "model_init.checksum", NAN);
		double c4 = scn_meta_num(st, run[4], "model_init.checksum", NAN);
		int same = isfinite(c0) && c0 == c4;
		n = scn_claim(out, n, max, "parallel-fill",
			      "a counter-based (Philox) initialiser fills in parallel with the same values",
			      v4 < 0.8 * v0 && same ? PP_CLAIM_SUPPORTED : PP_CLAIM_PARTLY,
			      "initialisers on 1 thread %s, on %.0f threads %s (x%.2f); values %s "
			      "(checksum %.9g vs %.9g)",
			      pp_fmt_dur(c, sizeof c, v0), th, pp_fmt_dur(d, sizeof d, v4),
			      v4 > 0 ? v0 / v4 : 0, same ? "identical" : "DIFFERENT", c0, c4);
	}
	return n;
}

static const scn_variant variants[] = {
	{"slow", SCN_SLOW, "glorot_uniform + orthogonal initialisers filled on one thread",
	 mi_slow, "initializer_dominates_init"},
	{"slow-text", SCN_SLOW, "pre-trained weights read from a naive text file (a number per line)",
	 mi_text, "weight_load_small_reads"},
	{"safetensors", SCN_FIX, "weights restored from mmap'd safetensors; no initialiser runs",
	 mi_safetensors, NULL},
	{"zeros", SCN_PROBE, "partial fix: zeros initialisers (cheap, but the model cannot learn)",
	 mi_zeros, NULL},
	{"parallel-init", SCN_PROBE, "partial fix: the same initialisers, Philox fill on every core",
	 mi_parallel, NULL},
};

static const char *const rules[] = {"initializer_dominates_init", "weight_load_small_reads"};

const pp_scenario scn_model_init = {
	.name = "model-init",
	.complaint = "model initialisation takes long",
	.source = "001 (Why does TensorFlow model initialization take so long?)",
	.metric = "time until both models are ready",
	.variants = variants,
	.n_variants = SCN_COUNT(variants),
	.rules = rules,
	.n_rules = SCN_COUNT(rules),
	.prepare = mi_prepare,
	.claims = mi_claims,
};
