/*
 * first-step — "the first training step is much slower than the rest"
 * (write-up 004; keras#6503, keras-core#630, pytorch#44269).
 *
 * A Keras-like MLP (784, eight hidden layers of 64, 10; Adam; sparse
 * cross-entropy; batch 8): many small layers, so the graph work the first
 * step does (gradients, slots, compile) is large next to one step's compute
 * is trained for a few dozen steps with flow_model_fit.
 *
 * slow:      everything lazy, as Keras' first fit: the first step builds the
 *            training graph and its gradients, creates Adam's slots, compiles
 *            the plan and grows the allocator's arena.
 * slow-cnn:  probe: the same for a small CNN (conv 3x3x8, max-pool, dense 10);
 *            its steps cost more compute, so the same one-time work is a
 *            smaller multiple of a step (the summary shows how much).
 * warm-up:   one warm-up step outside the measured loop (not recorded as a
 *            step), then the loop.
 * prepared:  probe: nothing lazy left — training graph and slots built
 *            before the loop, the arena reserved at the size the step
 *            needs, the compiled plan loaded from a cache an earlier
 *            process wrote. Measured: this removes graph, slot, compile
 *            and arena-growth work from the first step but not the cost of
 *            its first execution (cold pages of the new arena, the BLAS
 *            library's first call), so the first step stays several times
 *            a later one and only the warm-up removes it.
 */
#include "scn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "diag_steps.h"
#include "flow_train.h"

/* A small batch: the step itself is cheap, so what the first step pays once
 * is visible (as in the reports: epoch 1 3,943 s vs 239 s later, keras#6503). */
#define FS_BATCH 8
/* the training set a script loads before it builds the model (MNIST-shaped) */
#define FS_EXAMPLES 4096
#define FS_HIDDEN 8
#define FS_WIDTH 64

enum { FS_MLP, FS_CNN };
enum { FS_LAZY, FS_WARMUP, FS_PREPARED };

static int fs_steps(int size)
{
	return size == PP_SCN_SMOKE ? 4 : size == PP_SCN_QUICK ? 40 : 80;
}

static void fs_paths(const char *workdir, char *plans, size_t pl, char *arena, size_t al)
{
	snprintf(plans, pl, "%s/plans", workdir);
	snprintf(arena, al, "%s/arena_bytes", workdir);
}

static flow_model *fs_model(int kind, const flow_model_options *mo, flow_status *st)
{
	flow_model *m = flow_model_sequential(mo);
	if (!m)
		return NULL;
	int ok;
	if (kind == FS_MLP) {
		/* a deeper, narrower net: more graph (gradients, slots, plan) per
		 * flop, as models with many small layers have */
		ok = 1;
		for (int l = 0; ok && l < FS_HIDDEN; l++)
			ok = flow_model_add(m, flow_layer_dense(FS_WIDTH, FLOW_ACT_RELU, "glorot_uniform",
								"zeros"),
					    st) == 0;
		ok = ok && flow_model_add(m, flow_layer_dense(10, FLOW_ACT_NONE, "glorot_uniform",
							      "zeros"),
					  st) == 0;
	} else {
		ok = flow_model_add(m, flow_layer_conv2d(8, 3, 3, 1, "same", FLOW_ACT_RELU,
							 "glorot_uniform"),
				    st) == 0 &&
		     flow_model_add(m, flow_layer_maxpool2d(2, 2), st) == 0 &&
		     flow_model_add(m, flow_layer_flatten(), st) == 0 &&
		     flow_model_add(m, flow_layer_dense(10, FLOW_ACT_NONE, "glorot_uniform", "zeros"),
				    st) == 0;
	}
	if (!ok) {
		flow_model_free(m);
		return NULL;
	}
	int64_t mlp_in[1] = {784}, cnn_in[3] = {28, 28, 1};
	flow_shape in = kind == FS_MLP ? flow_shape_make(1, mlp_in) : flow_shape_make(3, cnn_in);
	if (flow_model_build(m, FLOW_F32, &in, st) != 0) {
		flow_model_free(m);
		return NULL;
	}
	return m;
}

static int fs_data(int kind, flow_tensor **x, flow_tensor **y, flow_status *st)
{
	PP_PHASE(PP_SPAN, "load_data");
	int64_t xd[4] = {FS_EXAMPLES, 784, 0, 0}, cd[4] = {FS_EXAMPLES, 28, 28, 1};
	*x = kind == FS_MLP ? scn_tensor_uniform(2, xd, 21, st) : scn_tensor_uniform(4, cd, 21, st);
	int64_t yd[1] = {FS_EXAMPLES};
	*y = flow_tensor_new(FLOW_I32, 1, yd, st);
	if (!*x || !*y)
		return -1;
	int32_t *p = flow_tensor_data(*y);
	for (int i = 0; i < FS_EXAMPLES; i++)
		p[i] = (int32_t)((i * 7 + 3) % 10);
	return 0;
}

/* The first n rows of t (a copy). */
static flow_tensor *fs_rows(flow_tensor *t, int64_t n, flow_status *st)
{
	flow_shape s = flow_tensor_shape(t);
	s.dims[0] = n; /* row-major: the first n rows are the first bytes */
	return flow_tensor_from_data(flow_tensor_dtype(t), s.ndim, s.dims, flow_tensor_cdata(t), st);
}

/* The training program. `plans` NULL: no plan cache; reserve 0: the arena
 * grows from 2 MiB by doubling. Records the arena's peak to `arena_out` when
 * given (the earlier process sizes the later one's reservation). */
static int fs_train(scn_env *e, int kind, int mode, const char *plans, size_t reserve,
		    const char *arena_out, int steps)
{
	flow_status *st = flow_status_new();
	int rc = scn_flow_init_opts(e, 1, st);
	flow_allocator *a = NULL;
	flow_model *m = NULL;
	flow_tensor *x = NULL, *y = NULL;
	if (!rc) {
		flow_allocator_options ao = {.kind = FLOW_ALLOC_BFC, .reserve = reserve,
					     .name = "train"};
		a = flow_allocator_new(&ao, st);
		if (!a)
			rc = scn_fail(e, "allocator: %s", flow_status_message(st));
	}
	flow_model_options mo = {.seed = 42, .allocator = a, .plan_cache_dir = plans};
	if (!rc && fs_data(kind, &x, &y, st) != 0)
		rc = scn_fail(e, "data: %s", flow_status_message(st));
	if (!rc && !(m = fs_model(kind, &mo, st)))
		rc = scn_fail(e, "model: %s", flow_status_message(st));
	flow_optimizer_options oo = flow_optimizer_defaults(FLOW_OPT_ADAM);
	oo.slots_up_front = mode == FS_PREPARED;
	if (!rc && flow_model_compile(m, "sparse_categorical_crossentropy", &oo, st) != 0)
		rc = scn_fail(e, "compile: %s", flow_status_message(st));
	if (!rc && mode == FS_PREPARED && flow_model_prepare_train(m, st) != 0)
		rc = scn_fail(e, "prepare_train: %s", flow_status_message(st));
	if (!rc && mode == FS_WARMUP) {
		/* one batch of the loop's shape: a differently shaped warm-up
		 * would leave the loop's own first execution cold */
		flow_tensor *wx = fs_rows(x, FS_BATCH, st), *wy = fs_rows(y, FS_BATCH, st);
		if (!wx || !wy || flow_model_warmup(m, wx, wy, st) != 0)
			rc = scn_fail(e, "warm-up: %s", flow_status_message(st));
		flow_tensor_unref(wx);
		flow_tensor_unref(wy);
	}
	flow_fit_result fr;
	scn_measured_begin();
	if (!rc && flow_model_fit(m, x, y, FS_BATCH, steps, &fr, st) != 0)
		rc = scn_fail(e, "fit: %s", flow_status_message(st));
	scn_measured_end();
	if (!rc) {
		char b[64];
		snprintf(b, sizeof b, "%.6g -> %.6g", fr.first_loss, fr.last_loss);
		pp_meta("first_step.loss", b);
		flow_session_stats ss;
		flow_session_stats_get(flow_model_session(m), &ss);
		snprintf(b, sizeof b, "%llu", (unsigned long long)ss.plan_disk_hits);
		pp_meta("first_step.plan_disk_hits", b);
		flow_allocator_stats as;
		flow_allocator_stats_get(a, &as);
		snprintf(b, sizeof b, "%llu", (unsigned long long)as.num_regions);
		pp_meta("first_step.arena_regions", b);
		snprintf(b, sizeof b, "%llu", (unsigned long long)as.bytes_reserved);
		pp_meta("first_step.arena_reserved", b);
		if (arena_out) {
			FILE *f = fopen(arena_out, "w");
			if (f) {
				fprintf(f, "%llu\n", (unsigned long long)as.peak_bytes_in_use);
				fclose(f);
			}
		}
	}
	flow_tensor_unref(x);
	flow_tensor_unref(y);
	flow_model_free(m);
	if (a)
		flow_allocator_free(a);
	flow_status_free(st);
	return rc;
}

static int fs_slow(scn_env *e)
{
	return fs_train(e, FS_MLP, FS_LAZY, NULL, 0, NULL, fs_steps(e->size));
}
static int fs_slow_cnn(scn_env *e)
{
	return fs_train(e, FS_CNN, FS_LAZY, NULL, 0, NULL, fs_steps(e->size) / 2);
}
static int fs_warmup(scn_env *e)
{
	return fs_train(e, FS_MLP, FS_WARMUP, NULL, 0, NULL, fs_steps(e->size));
}

static int fs_prepared(scn_env *e)
{
	char plans[4200], arena[4200];
	fs_paths(e->workdir, plans, sizeof plans, arena, sizeof arena);
	unsigned long long peak = 0;
	FILE *f = fopen(arena, "r");
	if (!f || fscanf(f, "%llu", &peak) != 1) {
		if (f)
			fclose(f);
		return scn_fail(e, "%s: no arena size from the earlier process", arena);
	}
	fclose(f);
	/* the step's peak plus a quarter for alignment and bins */
	return fs_train(e, FS_MLP, FS_PREPARED, plans, (size_t)(peak + peak / 4), NULL,
			fs_steps(e->size));
}

/* An earlier process of the prepared program fills the plan cache and
 * measures the arena the step needs. */
static int fs_prepare(const char *workdir, int size, char *err, size_t errlen)
{
	char plans[4200], arena[4200];
	fs_paths(workdir, plans, sizeof plans, arena, sizeof arena);
	if (mkdir(plans, 0700) != 0) {
		snprintf(err, errlen, "%s: cannot create", plans);
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot fork the earlier training process");
		return -1;
	}
	if (pid == 0) {
		char e2[256];
		scn_env e = {size, workdir, 0, e2, sizeof e2};
		_exit(fs_train(&e, FS_MLP, FS_PREPARED, plans, 0, arena, 2) == 0 ? 0 : 1);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "the earlier training process (plan cache, arena size) failed");
		return -1;
	}
	return 0;
}

/* ---- claims ---- */


/* A part of the first step's extra time: supported at 10% of it, partly
 * when it is there at all. */
static int fs_part_verdict(double part, double extra)
{
	return part >= 0.1 * extra ? PP_CLAIM_SUPPORTED : part > 0 ? PP_CLAIM_PARTLY : PP_CLAIM_NOT_SUPPORTED;
}

/* part as a percentage of the extra time (0 when there is none). */
static double fs_pct(double part, double extra)
{
	return extra > 0 ? 100 * part / extra : 0;
}

static int fs_claims(pp_store *st, const int64_t *run, pp_scn_claim *out, int max)
{
	int n = 0;
	char a[32], b[32], c[32], d[32], f[32];
	if (run[0] <= 0)
		return 0;
	scn_series t, gb, gr, os, co, ma, vi;
	scn_steps(st, run[0], &t);
	scn_kind_per_step(st, run[0], PP_GRAPH_BUILD, &gb);
	scn_kind_per_step(st, run[0], PP_GRADIENT_BUILD, &gr);
	scn_kind_per_step(st, run[0], PP_OPTIMIZER_SETUP, &os);
	scn_kind_per_step(st, run[0], PP_COMPILE, &co);
	scn_kind_per_step(st, run[0], PP_MEMORY_ALLOC, &ma);
	scn_kind_per_step(st, run[0], PP_VARIABLE_INIT, &vi);
	/* first step and steady median as every page shows them (diag_steps.h) */
	pp_step_summary ss;
	if (diag_step_summary(st, run[0], 0, &ss) != 0)
		ss.n = 0;
	if (t.n >= 3 && gb.n == t.n && ss.n == t.n) {
		double first = (double)ss.first_ns, med = ss.steady_median_ns;
		double build = gb.v[0] + gr.v[0] + co.v[0];
		n = scn_claim(out, n, max, "graph-and-compile",
			      "the first step is dominated by building and optimising (compiling) "
			      "the graph",
			      build >= 0.5 * (first - med) ? PP_CLAIM_SUPPORTED : PP_CLAIM_PARTLY,
			      "first step %s vs median %s (x%.1f); inside it: graph build %s, gradient "
			      "graph %s, compile %s (%.0f%% of the extra time)",
			      pp_fmt_dur(a, sizeof a, first), pp_fmt_dur(b, sizeof b, med),
			      med > 0 ? first / med : 0, pp_fmt_dur(c, sizeof c, gb.v[0]),
			      pp_fmt_dur(d, sizeof d, gr.v[0]), pp_fmt_dur(f, sizeof f, co.v[0]),
			      first > med ? 100 * build / (first - med) : 0);
		n = scn_claim(out, n, max, "optimizer-slots",
			      "optimiser set-up (slot variables) adds to the first step",
			      fs_part_verdict(os.v[0], first - med),
			      "Adam's slots created in the first step: %s (%.0f%% of the extra time)",
			      pp_fmt_dur(a, sizeof a, os.v[0]), fs_pct(os.v[0], first - med));
		n = scn_claim(out, n, max, "memory-allocation",
			      "allocating device/host memory makes the first step slower",
			      fs_part_verdict(ma.v[0], first - med),
			      "arena growth inside the first step: %s (%.0f%% of the extra time)",
			      pp_fmt_dur(a, sizeof a, ma.v[0]), fs_pct(ma.v[0], first - med));
		/* the model's own variables, not the optimiser's slots (whose
		 * initialiser runs inside optimizer_setup) */
		int64_t mv[2] = {0, 0};
		if (pp_store_kind_first_step_total(st, run[0], PP_VARIABLE_INIT, PP_OPTIMIZER_SETUP,
						   &mv[0], &mv[1]) != 0)
			mv[0] = mv[1] = 0;
		n = scn_claim(out, n, max, "variable-init",
			      "the first step initialises the model's variables",
			      (double)mv[0] >= 0.1 * (first - med) ? PP_CLAIM_SUPPORTED
								   : PP_CLAIM_NOT_SUPPORTED,
			      "initialisation of the model's variables inside the first step %s; %s "
			      "in all, when the model is built, before any step (the optimiser's slot "
			      "initialisers, %s in the first step, are counted as slots above)",
			      pp_fmt_dur(a, sizeof a, (double)mv[0]), pp_fmt_dur(b, sizeof b, (double)mv[1]),
			      pp_fmt_dur(c, sizeof c, vi.v[0] - (double)mv[0]));
	}
	for (int v = 2; v < 4; v++) {
		pp_scn_measure m;
		if (run[v] <= 0 || pp_scenario_measure(st, run[v], &m) != 0 || m.n_steps < 3)
			continue;
		n = scn_claim(out, n, max, v == 2 ? "fix-warm-up" : "fix-prepared",
			      v == 2 ? "a warm-up step outside the measured loop removes the slow "
				       "first step"
				     : "building slots and training graph up front, reserving the arena "
				       "and a persisted compile cache remove it",
			      m.first_step_ns <= 2 * m.median_step_ns ? PP_CLAIM_SUPPORTED
								       : PP_CLAIM_NOT_SUPPORTED,
			      "first measured step %s vs median %s (x%.2f)",
			      pp_fmt_dur(a, sizeof a, (double)m.first_step_ns),
			      pp_fmt_dur(b, sizeof b, (double)m.median_step_ns),
			      m.median_step_ns > 0 ? (double)m.first_step_ns / m.median_step_ns : 0);
	}
	scn_series_free(&t);
	scn_series_free(&gb);
	scn_series_free(&gr);
	scn_series_free(&os);
	scn_series_free(&co);
	scn_series_free(&ma);
	scn_series_free(&vi);
	return n;
}

static const scn_variant variants[] = {
	{"slow", SCN_SLOW,
	 "MLP 784-64x8-10, Adam, batch 8: the first step builds gradients, slots, plan, arena", fs_slow,
	 NULL},
	{"slow-cnn", SCN_PROBE,
	 "probe: the same for a small CNN (conv 3x3x8, max-pool, dense 10), whose steps cost more",
	 fs_slow_cnn, NULL},
	{"warm-up", SCN_FIX, "one warm-up step outside the measured loop", fs_warmup, NULL},
	{"prepared", SCN_PROBE,
	 "probe: slots and training graph up front, arena reserved, plan from an on-disk cache",
	 fs_prepared, NULL},
};

static const char *const rules[] = {"first_step_slow"};

const pp_scenario scn_first_step = {
	.name = "first-step",
	.complaint = "the first training step is much slower than the rest",
	.source = "004 (Why does the initial TensorFlow training step take significantly longer?)",
	.metric = "time of the training loop",
	.variants = variants,
	.n_variants = SCN_COUNT(variants),
	.rules = rules,
	.n_rules = SCN_COUNT(rules),
	.prepare = fs_prepare,
	.claims = fs_claims,
};
