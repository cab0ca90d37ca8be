/*
 * alloc-churn — "memory allocation / fragmentation makes steps slow"
 * (write-up 002, part 2: "if memory isn't efficiently reused, the overhead of
 * creating, allocating and then deallocating new memory regions can cause
 * additional delays"; write-up 000 on fragmentation).
 *
 * The workload: an MLP forward pass (256-512-512-10) run through a session
 * every step, with the batch size changing per step (variable-length inputs).
 *
 * slow:         every tensor from plain malloc, shapes changing per step.
 * arena:        the BFC arena (TF's allocator), shapes still changing.
 * fixed-shapes: the BFC arena with one padded batch size.
 *
 * Per step: allocation count, bytes in use, heap growth from the system,
 * fragmentation, time inside the allocator, page faults.
 */
#include "scn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AC_IN 256
#define AC_H 512
#define AC_OUT 10

static int ac_steps(const scn_env *e)
{
	return scn_pick(e, 200, 100, 12);
}

/* Batch sizes of the changing-shape variants: 16..256, a different one each
 * step, not trending (a walk through a permutation). */
static int ac_batch(int i)
{
	static const int sizes[] = {48, 200, 16, 256, 96, 160, 32, 224, 128, 64, 192, 80, 240, 112};
	return sizes[(i * 5) % (int)(sizeof sizes / sizeof sizes[0])];
}

static int ac_run(scn_env *e, int kind, int fixed)
{
	flow_status *st = flow_status_new();
	int rc = scn_flow_init_opts(e, 1, st);
	flow_allocator_options ao = {.kind = kind, .name = kind == FLOW_ALLOC_MALLOC ? "malloc" : "bfc"};
	flow_allocator *a = flow_allocator_new(&ao, st);
	flow_graph *g = flow_graph_new();
	flow_session *s = NULL;
	if (!rc && (!a || !g))
		rc = scn_fail(e, "allocator: %s", flow_status_message(st));
	int64_t xd[2] = {-1, AC_IN};
	flow_shape xs = flow_shape_make(2, xd);
	flow_output x = rc ? (flow_output){NULL, 0} : flow_placeholder(g, "x", FLOW_F32, &xs, st);
	/* weights as constants: this scenario is about the step's temporaries */
	int64_t dims[3][2] = {{AC_IN, AC_H}, {AC_H, AC_H}, {AC_H, AC_OUT}};
	flow_output h = x;
	for (int l = 0; l < 3 && h.op; l++) {
		flow_tensor *w = scn_tensor_uniform(2, dims[l], 100 + (uint64_t)l, st);
		if (!w) {
			h.op = NULL;
			break;
		}
		float *p = flow_tensor_data(w);
		for (int64_t k = 0; k < flow_tensor_nelem(w); k++)
			p[k] *= 0.05f;
		char n[32];
		snprintf(n, sizeof n, "w%d", l);
		flow_output wc = flow_const(g, n, w, st);
		flow_tensor_unref(w);
		h = wc.op ? scn_matmul(g, NULL, h, wc, st) : wc;
		if (l < 2 && h.op)
			h = flow_simple(g, "Relu", NULL, &h, 1, st);
	}
	if (!rc && !h.op)
		rc = scn_fail(e, "model: %s", flow_status_message(st));
	flow_session_options so = {.allocator = a, .no_step_phase = 1};
	if (!rc && !(s = flow_session_new(g, &so, st)))
		rc = scn_fail(e, "session: %s", flow_status_message(st));
	int n = ac_steps(e);
	/* inputs made up front so the loop measures the session's allocations */
	flow_tensor **xv = calloc((size_t)n, sizeof *xv);
	if (!rc && !xv)
		rc = scn_fail(e, "out of memory");
	for (int i = 0; !rc && i < n; i++) {
		int64_t d[2] = {fixed ? 256 : ac_batch(i), AC_IN};
		if (!(xv[i] = scn_tensor_uniform(2, d, (uint64_t)i, st)))
			rc = scn_fail(e, "input: %s", flow_status_message(st));
	}
	/* One warm-up run outside the loop: the plan's compile and the first
	 * execution's one-time costs are the first-step scenario's subject;
	 * this one is about the steady state. */
	if (!rc) {
		flow_tensor *y = NULL;
		pp_phase_begin(PP_SPAN, "warmup");
		if (flow_session_run(s, &x, &xv[0], 1, &h, &y, 1, NULL, 0, st) != 0)
			rc = scn_fail(e, "warm-up: %s", flow_status_message(st));
		pp_phase_end();
		flow_tensor_unref(y);
	}
	scn_sample_alloc(a, kind);
	scn_measured_begin();
	for (int i = 0; !rc && i < n; i++) {
		pp_step_begin(i);
		flow_tensor *y = NULL;
		if (flow_session_run(s, &x, &xv[i], 1, &h, &y, 1, NULL, 0, st) != 0)
			rc = scn_fail(e, "step %d: %s", i, flow_status_message(st));
		flow_tensor_unref(y);
		scn_sample_alloc(a, kind);
		scn_sample_proc();
		pp_step_end();
	}
	scn_measured_end();
	for (int i = 0; xv && i < n; i++)
		flow_tensor_unref(xv[i]);
	free(xv);
	if (s) {
		flow_session_close(s, NULL);
		flow_session_free(s);
	}
	flow_graph_free(g);
	if (a)
		flow_allocator_free(a);
	flow_status_free(st);
	return rc;
}

static int ac_slow(scn_env *e) { return ac_run(e, FLOW_ALLOC_MALLOC, 0); }
static int ac_arena(scn_env *e) { return ac_run(e, FLOW_ALLOC_BFC, 0); }
static int ac_fixed(scn_env *e) { return ac_run(e, FLOW_ALLOC_BFC, 1); }

/* Per-step increments of a cumulative counter. */
static void ac_deltas(pp_store *st, int64_t run, const char *name, double *med, double *total)
{
	scn_series c;
	*med = *total = NAN;
	if (scn_counter_at_steps(st, run, name, &c) == 0 && c.n > 2) {
		double *d = malloc((size_t)c.n * sizeof *d);
		if (d) {
			for (int i = 1; i < c.n; i++)
				d[i - 1] = c.v[i] - c.v[i - 1];
			*med = scn_median(d, c.n - 1);
			*total = c.v[c.n - 1] - c.v[0];
			free(d);
		}
	}
	scn_series_free(&c);
}

static int ac_claims(pp_store *st, const int64_t *run, pp_scn_claim *out, int max)
{
	int n = 0;
	char a[32], b[32], c[32], d[32];
	double alloc_share[3] = {NAN, NAN, NAN}, step_med[3] = {NAN, NAN, NAN};
	double sys[3], flt[3], frag[3], allocs[3];
	for (int v = 0; v < 3; v++) {
		sys[v] = flt[v] = frag[v] = allocs[v] = NAN;
		if (run[v] <= 0)
			continue;
		pp_scn_measure m;
		pp_scenario_measure(st, run[v], &m);
		step_med[v] = (double)m.median_step_ns;
		double tmed, ttot, dummy;
		ac_deltas(st, run[v], "alloc.time_ns", &tmed, &ttot);
		alloc_share[v] = m.measured_ns > 0 ? ttot / (double)m.measured_ns : NAN;
		ac_deltas(st, run[v], "alloc.sys_count", &dummy, &sys[v]);
		ac_deltas(st, run[v], "proc.minflt", &flt[v], &dummy);
		ac_deltas(st, run[v], "alloc.count", &allocs[v], &dummy);
		frag[v] = scn_counter_last(st, run[v], "alloc.fragmentation", NAN);
	}
	if (run[0] > 0 && run[1] > 0) {
		double saved = step_med[0] - step_med[1];
		int sup = saved > 0.1 * step_med[0];
		n = scn_claim(out, n, max, "allocation-overhead",
			      "allocating and freeing memory every step (no reuse) adds delay",
			      sup ? PP_CLAIM_SUPPORTED
			      : alloc_share[0] > 0.05 ? PP_CLAIM_PARTLY
						      : PP_CLAIM_NOT_SUPPORTED,
			      "median step %s with malloc vs %s with the arena (same shapes); %.0f "
			      "allocations per step; time inside the allocator %.1f%% (malloc) vs "
			      "%.1f%% (arena) of the loop; heap grown from the system %.0f times "
			      "(malloc) vs %.0f arena regions; minor page faults per step %.0f vs %.0f",
			      pp_fmt_dur(a, sizeof a, step_med[0]), pp_fmt_dur(b, sizeof b, step_med[1]),
			      allocs[0], 100 * alloc_share[0], 100 * alloc_share[1], sys[0], sys[1],
			      flt[0], flt[1]);
	}
	if (run[1] > 0 && run[2] > 0) {
		n = scn_claim(out, n, max, "fragmentation",
			      "changing shapes fragment the arena and slow allocation",
			      frag[1] > 0.3 && step_med[1] > 1.1 * step_med[2] ? PP_CLAIM_SUPPORTED
										: PP_CLAIM_NOT_SUPPORTED,
			      "arena fragmentation at the end %.2f with changing shapes, %.2f with fixed "
			      "shapes; median step %s vs %s (fixed shapes pad every batch to 256: %s per "
			      "step of extra compute)",
			      frag[1], frag[2], pp_fmt_dur(c, sizeof c, step_med[1]),
			      pp_fmt_dur(d, sizeof d, step_med[2]),
			      pp_fmt_dur(a, sizeof a, step_med[2] - step_med[1]));
	}
	return n;
}

static const scn_variant variants[] = {
	{"slow", SCN_SLOW, "plain malloc per tensor, batch size changing every step (16..256)", ac_slow, NULL},
	{"arena", SCN_FIX, "BFC arena allocator, batch size still changing", ac_arena, NULL},
	{"fixed-shapes", SCN_FIX, "BFC arena, every batch padded to 256", ac_fixed, NULL},
};

static const char *const rules[] = {"alloc_count_not_flat"};

const pp_scenario scn_alloc_churn = {
	.name = "alloc-churn",
	.complaint = "memory allocation and fragmentation slow every step",
	.source = "002 (memory not reused), 000 (fragmentation)",
	.metric = "time of the steps",
	.variants = variants,
	.n_variants = SCN_COUNT(variants),
	.rules = rules,
	.n_rules = SCN_COUNT(rules),
	.claims = ac_claims,
};
