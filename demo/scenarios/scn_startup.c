/*
 * startup — "start-up is slow" (write-up 003; TensorFlow #37729).
 *
 * Every variant is a fresh process that goes from nothing to its first
 * prediction with a small 784-32-10 MLP whose weights come from a
 * safetensors file: runtime initialisation, op registration, graph build,
 * variable initialisation (the weight load) and the first run (compile).
 *
 * slow:        full op-library registration (TensorFlow's way: every op
 *              definition built and validated, every kernel registration
 *              checked) and a compile of each plan.
 * lite:        only the ops the graph uses are registered, on first use.
 * cached-plan: lite, and the compiled plans loaded from a cache on disk that
 *              an earlier process wrote (the parent runs that process once
 *              before the variants).
 * eager:       probe of the write-up's claim that eager execution starts
 *              faster: full registration, weights loaded and the forward
 *              pass run op by op, no graph.
 */
#include "scn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A small model: the complaint is that even a small program starts slowly
 * (TensorFlow #37729: "import tensorflow is very slow"). */
static const int64_t su_dims[3] = {784, 32, 10};
#define SU_LAYERS 2
#define SU_BATCH 8
/* a model this small is served on one thread: no intra-op pool to start */
#define SU_THREADS 1

static void su_paths(const char *workdir, char *weights, size_t wl, char *plans, size_t pl)
{
	snprintf(weights, wl, "%s/startup.safetensors", workdir);
	snprintf(plans, pl, "%s/plans", workdir);
}

/* From nothing to the first prediction. plan_dir NULL: no cache. */
static int su_program(scn_env *e, const char *workdir, int registration, const char *plan_dir)
{
	scn_measured_begin(); /* ended when the model is ready */
	int measured_open = 1;
	char wpath[4200], pdir[4200];
	su_paths(workdir, wpath, sizeof wpath, pdir, sizeof pdir);
	flow_status *st = flow_status_new();
	int rc = 0;
	flow_init_options o = {0};
	o.registration = registration;
	o.plan_cache_dir = plan_dir;
	o.threads = SU_THREADS;
	if (flow_init(&o, st) != 0) {
		rc = scn_fail(e, "flow_init: %s", flow_status_message(st));
		goto out;
	}
	flow_graph *g = flow_default_graph();
	int64_t xd[2] = {-1, su_dims[0]};
	flow_shape xs = flow_shape_make(2, xd);
	flow_output h = flow_placeholder(g, "x", FLOW_F32, &xs, st);
	flow_op *restores[2 * SU_LAYERS];
	int nr = 0;
	for (int l = 0; l < SU_LAYERS && h.op; l++) {
		char n[32], t[32];
		int64_t wd[2] = {su_dims[l], su_dims[l + 1]}, bd[1] = {su_dims[l + 1]};
		snprintf(t, sizeof t, "dense%d/kernel", l);
		flow_output w = scn_restored_variable(g, t, wpath, t, 2, wd, &restores[nr++], st);
		snprintf(t, sizeof t, "dense%d/bias", l);
		flow_output b = w.op ? scn_restored_variable(g, t, wpath, t, 1, bd, &restores[nr++], st)
				     : w;
		snprintf(n, sizeof n, "dense%d", l);
		h = b.op ? scn_matmul(g, n, h, w, st) : b;
		h = h.op ? scn_binary(g, "BiasAdd", NULL, h, b, st) : h;
		if (l + 1 < SU_LAYERS && h.op)
			h = flow_simple(g, "Relu", NULL, &h, 1, st);
	}
	/* the variables take the file's values: a restore, not an initialiser */
	flow_op *init = h.op ? flow_group(g, "restore", restores, nr, st) : NULL;
	flow_session_options so = {.no_step_phase = 1};
	flow_session *s = init ? flow_session_new(g, &so, st) : NULL;
	if (!s) {
		rc = scn_fail(e, "graph: %s", flow_status_message(st));
		goto out;
	}
	pp_phase_begin(PP_WEIGHT_LOAD, "restore:safetensors");
	rc = flow_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, st);
	pp_phase_end();
	scn_measured_end(); /* the model is ready to serve */
	measured_open = 0;
	/* The first request served, as the one step of the run: it marks where
	 * start-up ends for the diagnostics (a single step is no loop, so no
	 * first-step rule applies to it). */
	int64_t bd[2] = {SU_BATCH, su_dims[0]};
	flow_tensor *x = rc ? NULL : scn_tensor_uniform(2, bd, 5, st), *y = NULL;
	flow_output xin = flow_out(flow_graph_op_by_name(g, "x"), 0);
	if (x) {
		pp_step_begin(0);
		rc = flow_session_run(s, &xin, &x, 1, &h, &y, 1, NULL, 0, st);
		pp_step_end();
	}
	if (!rc && (!y || !isfinite(flow_tensor_get(y, 0))))
		rc = scn_fail(e, "first request: %s", flow_status_message(st));
	flow_tensor_unref(x);
	flow_tensor_unref(y);
	flow_session_stats ss;
	flow_session_stats_get(s, &ss);
	char b[32];
	snprintf(b, sizeof b, "%llu", (unsigned long long)ss.plan_disk_hits);
	pp_meta("startup.plan_disk_hits", b);
	snprintf(b, sizeof b, "%llu", (unsigned long long)ss.compiles);
	pp_meta("startup.compiles", b);
	flow_session_close(s, NULL);
	flow_session_free(s);
out:
	if (measured_open)
		scn_measured_end();
	flow_status_free(st);
	return rc;
}

static int su_run(scn_env *e, int registration, int cached)
{
	char wpath[4200], pdir[4200];
	su_paths(e->workdir, wpath, sizeof wpath, pdir, sizeof pdir);
	int rc = su_program(e, e->workdir, registration, cached ? pdir : NULL);
	flow_registry_stats rs;
	flow_registry_stats_get(&rs);
	char b[32];
	snprintf(b, sizeof b, "%d", rs.ops_registered);
	pp_meta("startup.ops_registered", b);
	snprintf(b, sizeof b, "%d", rs.ops_known);
	pp_meta("startup.ops_known", b);
	return rc;
}

static int su_slow(scn_env *e) { return su_run(e, FLOW_REGISTER_FULL, 0); }
static int su_lite(scn_env *e) { return su_run(e, FLOW_REGISTER_LITE, 0); }
static int su_cached(scn_env *e) { return su_run(e, FLOW_REGISTER_LITE, 1); }

/* Eager: the model's weights loaded op by op (eager LoadWeight), no graph,
 * no session: "ready" as soon as the tensors exist. */
static int su_eager(scn_env *e)
{
	char wpath[4200], pdir[4200];
	su_paths(e->workdir, wpath, sizeof wpath, pdir, sizeof pdir);
	flow_status *st = flow_status_new();
	int rc = 0;
	scn_measured_begin();
	flow_init_options o = {0};
	o.registration = FLOW_REGISTER_FULL;
	o.threads = SU_THREADS;
	if (flow_init(&o, st) != 0)
		rc = scn_fail(e, "flow_init: %s", flow_status_message(st));
	flow_tensor *t[2 * SU_LAYERS] = {0};
	for (int l = 0; l < SU_LAYERS && !rc; l++) {
		int64_t wd[2] = {su_dims[l], su_dims[l + 1]}, bdim[1] = {su_dims[l + 1]};
		for (int k = 0; k < 2 && !rc; k++) {
			char tn[32];
			snprintf(tn, sizeof tn, "dense%d/%s", l, k ? "bias" : "kernel");
			flow_op_desc *d = flow_eager_new("LoadWeight");
			flow_shape sh = flow_shape_make(k ? 1 : 2, k ? bdim : wd);
			flow_op_set_attr_type(d, "dtype", FLOW_F32);
			flow_op_set_attr_string(d, "path", wpath);
			flow_op_set_attr_string(d, "tensor_name", tn);
			flow_op_set_attr_shape(d, "shape", &sh);
			if (flow_execute(d, &t[2 * l + k], 1, st) != 0)
				rc = scn_fail(e, "eager LoadWeight %s: %s", tn, flow_status_message(st));
		}
	}
	scn_measured_end();
	if (!rc && !isfinite(flow_tensor_get(t[0], 0)))
		rc = scn_fail(e, "dense0/kernel was not loaded");
	for (int i = 0; i < 2 * SU_LAYERS; i++)
		flow_tensor_unref(t[i]);
	flow_status_free(st);
	return rc;
}

/* Weights file, and the plan cache an earlier process writes. */
static int su_prepare(const char *workdir, int size, char *err, size_t errlen)
{
	(void)size;
	char wpath[4200], pdir[4200];
	su_paths(workdir, wpath, sizeof wpath, pdir, sizeof pdir);
	scn_wtensor t[2 * SU_LAYERS];
	char names[2 * SU_LAYERS][32];
	float *data[2 * SU_LAYERS] = {0};
	int rc = 0;
	for (int l = 0; l < SU_LAYERS; l++) {
		for (int k = 0; k < 2; k++) {
			int i = 2 * l + k;
			snprintf(names[i], sizeof names[i], "dense%d/%s", l, k ? "bias" : "kernel");
			t[i].name = names[i];
			t[i].rank = k ? 1 : 2;
			t[i].shape[0] = k ? su_dims[l + 1] : su_dims[l];
			t[i].shape[1] = su_dims[l + 1];
			data[i] = scn_weights_data(t[i].rank, t[i].shape, (uint64_t)i + 1);
			t[i].data = data[i];
			if (!data[i])
				rc = -1;
		}
	}
	if (rc)
		snprintf(err, errlen, "out of memory");
	else
		rc = scn_write_safetensors(wpath, t, 2 * SU_LAYERS, err, errlen);
	for (int i = 0; i < 2 * SU_LAYERS; i++)
		free(data[i]);
	if (rc)
		return -1;
	if (mkdir(pdir, 0700) != 0) {
		snprintf(err, errlen, "%s: cannot create", pdir);
		return -1;
	}
	/* An earlier run of the same program fills the plan cache: a separate
	 * process, with no recorder, that exits when done. */
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot fork the plan-cache warm-up process");
		return -1;
	}
	if (pid == 0) {
		char e2[256];
		scn_env e = {PP_SCN_FULL, workdir, 0, e2, sizeof e2};
		_exit(su_program(&e, workdir, FLOW_REGISTER_LITE, pdir) == 0 ? 0 : 1);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "the plan-cache warm-up process failed");
		return -1;
	}
	return 0;
}

/* ---- claims ---- */

static int su_claims(pp_store *st, const int64_t *run, pp_scn_claim *out, int max)
{
	int n = 0;
	char a[32], b[32], c[32], d[32], e5[32];
	if (run[0] <= 0)
		return 0;
	pp_scn_measure m0;
	pp_scenario_measure(st, run[0], &m0);
	double f2m = scn_meta_num(st, run[0], "scenario.fork_to_main_ns", NAN);
	double total = (double)m0.measured_ns + (isfinite(f2m) ? f2m : 0);
	double reg = (double)scn_kind_total(st, run[0], PP_OP_REGISTRATION, NULL);
	double rinit = (double)scn_kind_total(st, run[0], PP_RUNTIME_INIT, NULL);
	double gb = (double)(scn_kind_total(st, run[0], PP_GRAPH_BUILD, NULL) +
			     scn_kind_total(st, run[0], PP_SHAPE_INFERENCE, NULL));
	double comp = (double)scn_kind_total(st, run[0], PP_COMPILE, NULL);
	double wl = (double)scn_kind_total(st, run[0], PP_WEIGHT_LOAD, NULL);
	/* runtime_init contains the registration when it is eager */
	double rself = rinit > reg ? rinit - reg : rinit;
	double parts[4] = {reg, gb + comp, wl, rself + (isfinite(f2m) ? f2m : 0)};
	int largest = 0;
	for (int i = 1; i < 4; i++)
		if (parts[i] > parts[largest])
			largest = i;
	n = scn_claim(out, n, max, "runtime-init",
		      "initialising the runtime (data structures, loading shared libraries) is a "
		      "noticeable part of start-up",
		      parts[3] >= 0.1 * total ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED,
		      "fork+exec+loading to main %s, runtime set-up besides registration %s: %.0f%% "
		      "of the %s start-up",
		      pp_fmt_dur(a, sizeof a, f2m), pp_fmt_dur(b, sizeof b, rself),
		      total > 0 ? 100 * parts[3] / total : 0, pp_fmt_dur(c, sizeof c, total));
	double ops = scn_meta_num(st, run[0], "startup.ops_registered", 0);
	n = scn_claim(out, n, max, "op-registration",
		      "registering operators is often the more significant part of start-up",
		      largest == 0 && reg >= 0.2 * total ? PP_CLAIM_SUPPORTED
		      : reg >= 0.05 * total             ? PP_CLAIM_PARTLY
							: PP_CLAIM_NOT_SUPPORTED,
		      "full registration of %.0f ops took %s, %.0f%% of start-up (%s)", ops,
		      pp_fmt_dur(a, sizeof a, reg), total > 0 ? 100 * reg / total : 0,
		      largest == 0 ? "the largest part" : "not the largest part");
	n = scn_claim(out, n, max, "graph-construction",
		      "constructing (and optimising) the graph adds to start-up",
		      gb + comp >= 0.1 * total ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED,
		      "graph build + shape inference %s, compile %s: %.0f%% of start-up",
		      pp_fmt_dur(a, sizeof a, gb), pp_fmt_dur(b, sizeof b, comp),
		      total > 0 ? 100 * (gb + comp) / total : 0);
	n = scn_claim(out, n, max, "weights",
		      "initialising variables and loading pre-trained weights takes considerable time",
		      wl >= 0.1 * total ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED,
		      "variables initialised from the mmap'd safetensors file in %s: %.0f%% of "
		      "start-up",
		      pp_fmt_dur(a, sizeof a, wl), total > 0 ? 100 * wl / total : 0);
	/* the fixes, each against the one before */
	if (run[1] > 0 && run[2] > 0) {
		pp_scn_measure m1, m2;
		pp_scenario_measure(st, run[1], &m1);
		pp_scenario_measure(st, run[2], &m2);
		double hits = scn_meta_num(st, run[2], "startup.plan_disk_hits", 0);
		n = scn_claim(out, n, max, "fixes",
			      "lite registration and a cached compiled plan shorten start-up",
			      m1.measured_ns < m0.measured_ns ? PP_CLAIM_SUPPORTED
							       : PP_CLAIM_NOT_SUPPORTED,
			      "in-process start-up %s (full registration) -> %s (lite: saves %s) -> %s "
			      "(lite + %.0f plans from disk: saves %s more)",
			      pp_fmt_dur(a, sizeof a, (double)m0.measured_ns),
			      pp_fmt_dur(b, sizeof b, (double)m1.measured_ns),
			      pp_fmt_dur(c, sizeof c, (double)(m0.measured_ns - m1.measured_ns)),
			      pp_fmt_dur(d, sizeof d, (double)m2.measured_ns), hits,
			      pp_fmt_dur(e5, sizeof e5, (double)(m1.measured_ns - m2.measured_ns)));
	}
	if (run[3] > 0) {
		pp_scn_measure m3;
		pp_scenario_measure(st, run[3], &m3);
		n = scn_claim(out, n, max, "eager-starts-faster",
			      "eager execution starts faster because it skips graph construction",
			      m3.measured_ns < m0.measured_ns ? PP_CLAIM_SUPPORTED
							       : PP_CLAIM_NOT_SUPPORTED,
			      "time until the model is ready with full registration: eager %s, graph %s "
			      "(graph build + compile there: %s)",
			      pp_fmt_dur(a, sizeof a, (double)m3.measured_ns),
			      pp_fmt_dur(b, sizeof b, (double)m0.measured_ns),
			      pp_fmt_dur(c, sizeof c, gb + comp));
	}
	return n;
}

static const scn_variant variants[] = {
	{"slow", SCN_SLOW,
	 "full op registration, graph build, variables from safetensors, first prediction (compile)",
	 su_slow, NULL},
	{"lite", SCN_FIX, "only the ops the graph uses are registered, on first use", su_lite, NULL},
	{"cached-plan", SCN_FIX, "lite registration + compiled plans loaded from an on-disk cache",
	 su_cached, NULL},
	{"eager", SCN_PROBE,
	 "probe: full registration, the same weights loaded by eager ops (no graph, no session)", su_eager, NULL},
};

static const char *const rules[] = {"op_registration_startup"};

const pp_scenario scn_startup = {
	.name = "startup",
	.complaint = "start-up is slow",
	.source = "003 (Why is TensorFlow startup slow?)",
	.metric = "in-process start-up until the model is ready",
	.variants = variants,
	.n_variants = SCN_COUNT(variants),
	.rules = rules,
	.n_rules = SCN_COUNT(rules),
	.prepare = su_prepare,
	.claims = su_claims,
};
