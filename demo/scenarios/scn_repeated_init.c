/*
 * repeated-init — "re-initialising variables in a loop gets slower each time"
 * (write-up 000; TensorFlow #39435, #9154).
 *
 * slow:        every iteration opens a new session on the default graph,
 *              creates a 100x100 weight and a 100 bias variable, runs the
 *              global initialiser and then y = x.W + b — the write-up's
 *              example 1.
 * one-session: variables made once, one session, initialiser run once; the
 *              loop only runs y (example 2).
 * traced:      variables made once, y as a traced function called per
 *              iteration (example 3).
 *
 * The write-up blames graph construction, memory fragmentation leading to
 * paging, and session-management overhead. Every iteration samples graph
 * size, allocator fragmentation, RSS and page faults, so the claims can be
 * checked against the per-iteration times.
 */
#include "scn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define RI_UNITS 100
#define RI_BATCH 256 /* y = xW + b is the iteration's real work; big enough to time */

typedef struct ri_ctx {
	flow_status *st;
	flow_graph *g;
	flow_output x;            /* placeholder [BATCH, UNITS] */
	flow_tensor *xv;
} ri_ctx;

static int ri_setup(scn_env *e, ri_ctx *c)
{
	c->st = flow_status_new();
	if (scn_flow_init(e, c->st) != 0)
		return -1;
	c->g = flow_default_graph();
	int64_t dims[2] = {RI_BATCH, RI_UNITS};
	flow_shape sh = flow_shape_make(2, dims);
	c->x = flow_placeholder(c->g, "x", FLOW_F32, &sh, c->st);
	c->xv = scn_tensor_uniform(2, dims, 7, c->st);
	if (!c->x.op || !c->xv)
		return scn_fail(e, "input: %s", flow_status_message(c->st));
	return 0;
}

static void ri_free(ri_ctx *c)
{
	flow_tensor_unref(c->xv);
	flow_status_free(c->st);
}

/* W ~ N(0, 0.05), b = 0, y = x.W + b: what every variant computes. */
static int ri_build(scn_env *e, ri_ctx *c, int i, flow_output *w, flow_output *b)
{
	char n[64];
	int64_t wd[2] = {RI_UNITS, RI_UNITS}, bd[1] = {RI_UNITS};
	snprintf(n, sizeof n, "W_%d/init", i);
	flow_output wi = scn_random_normal(c->g, n, 2, wd, 0.05f, 1000 + i, c->st);
	snprintf(n, sizeof n, "b_%d/init", i);
	flow_output bi = wi.op ? scn_zeros(c->g, n, 1, bd, c->st) : wi;
	snprintf(n, sizeof n, "W_%d", i);
	*w = bi.op ? flow_variable(c->g, n, wi, c->st) : bi;
	snprintf(n, sizeof n, "b_%d", i);
	*b = w->op ? flow_variable(c->g, n, bi, c->st) : *w;
	if (!b->op)
		return scn_fail(e, "variables: %s", flow_status_message(c->st));
	return 0;
}

static flow_output ri_affine(ri_ctx *c, int i, flow_output x, flow_output w, flow_output b)
{
	char n[64];
	snprintf(n, sizeof n, "xw_%d", i);
	flow_output xw = scn_matmul(c->g, n, x, w, c->st);
	snprintf(n, sizeof n, "y_%d", i);
	return xw.op ? scn_binary(c->g, "Add", n, xw, b, c->st) : xw;
}

static int ri_run_init(scn_env *e, flow_session *s, flow_op *init, flow_status *st)
{
	/* Sessions run with no_step_phase (the loop records its own steps),
	 * which also silences their variable_init phase: record it here. */
	pp_phase_begin(PP_VARIABLE_INIT, "global_variables_initializer");
	int rc = flow_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, st);
	pp_phase_end();
	return rc ? scn_fail(e, "initializer: %s", flow_status_message(st)) : 0;
}

static int ri_run_y(scn_env *e, ri_ctx *c, flow_session *s, flow_output y)
{
	flow_tensor *out = NULL;
	if (flow_session_run(s, &c->x, &c->xv, 1, &y, &out, 1, NULL, 0, c->st) != 0)
		return scn_fail(e, "run: %s", flow_status_message(c->st));
	flow_tensor_unref(out);
	return 0;
}

static void ri_sample(ri_ctx *c)
{
	scn_sample_graph(c->g);
	scn_sample_alloc(flow_default_allocator(), FLOW_ALLOC_BFC);
	scn_sample_proc();
}

static int ri_iters(const scn_env *e)
{
	return scn_pick(e, 50, 50, 6);
}

static int ri_slow(scn_env *e)
{
	ri_ctx c;
	int rc = ri_setup(e, &c);
	flow_session_options so = {.no_step_phase = 1};
	scn_measured_begin();
	for (int i = 0; !rc && i < ri_iters(e); i++) {
		pp_step_begin(i);
		flow_session *s = flow_session_new(c.g, &so, c.st);
		flow_output w, b;
		if (!s)
			rc = scn_fail(e, "session: %s", flow_status_message(c.st));
		if (!rc)
			rc = ri_build(e, &c, i, &w, &b);
		flow_op *init = rc ? NULL : flow_global_variables_initializer(c.g, c.st);
		if (!rc && !init)
			rc = scn_fail(e, "initializer: %s", flow_status_message(c.st));
		if (!rc)
			rc = ri_run_init(e, s, init, c.st);
		flow_output y = rc ? w : ri_affine(&c, i, c.x, w, b);
		if (!rc && !y.op)
			rc = scn_fail(e, "y: %s", flow_status_message(c.st));
		if (!rc)
			rc = ri_run_y(e, &c, s, y);
		if (s) {
			flow_session_close(s, NULL);
			flow_session_free(s);
		}
		ri_sample(&c);
		pp_step_end();
	}
	scn_measured_end();
	ri_free(&c);
	return rc;
}

static int ri_one_session(scn_env *e)
{
	ri_ctx c;
	int rc = ri_setup(e, &c);
	flow_session_options so = {.no_step_phase = 1};
	flow_output w, b, y = {NULL, 0};
	if (!rc)
		rc = ri_build(e, &c, 0, &w, &b);
	if (!rc)
		y = ri_affine(&c, 0, c.x, w, b);
	flow_op *init = y.op ? flow_global_variables_initializer(c.g, c.st) : NULL;
	flow_session *s = init ? flow_session_new(c.g, &so, c.st) : NULL;
	if (!rc && !s)
		rc = scn_fail(e, "set-up: %s", flow_status_message(c.st));
	if (!rc)
		rc = ri_run_init(e, s, init, c.st);
	scn_measured_begin();
	for (int i = 0; !rc && i < ri_iters(e); i++) {
		pp_step_begin(i);
		rc = ri_run_y(e, &c, s, y);
		ri_sample(&c);
		pp_step_end();
	}
	scn_measured_end();
	if (s) {
		flow_session_close(s, NULL);
		flow_session_free(s);
	}
	ri_free(&c);
	return rc;
}

#include "flow_train.h"

typedef struct ri_fn {
	ri_ctx *c;
	flow_output w, b;
} ri_fn;

static int ri_trace(flow_graph *g, const flow_output *in, int n_in, flow_output *out, int n_out,
		    void *ud, flow_status *st)
{
	(void)g;
	(void)n_in;
	(void)n_out;
	ri_fn *f = ud;
	out[0] = ri_affine(f->c, 1, in[0], f->w, f->b);
	return out[0].op && flow_status_ok(st) ? 0 : -1;
}

static int ri_traced(scn_env *e)
{
	ri_ctx c;
	int rc = ri_setup(e, &c);
	flow_session_options so = {.no_step_phase = 1};
	ri_fn f = {&c, {NULL, 0}, {NULL, 0}};
	if (!rc)
		rc = ri_build(e, &c, 0, &f.w, &f.b);
	flow_op *init = rc ? NULL : flow_global_variables_initializer(c.g, c.st);
	flow_session *s = init ? flow_session_new(c.g, &so, c.st) : NULL;
	if (!rc && !s)
		rc = scn_fail(e, "set-up: %s", flow_status_message(c.st));
	if (!rc)
		rc = ri_run_init(e, s, init, c.st);
	flow_function_options fo = {.name = "affine", .n_inputs = 1, .n_outputs = 1,
				    .graph = c.g, .session = s, .warn_to_stderr = -1};
	flow_function *fn = rc ? NULL : flow_function_new(ri_trace, &f, &fo, c.st);
	if (!rc && !fn)
		rc = scn_fail(e, "traced function: %s", flow_status_message(c.st));
	scn_measured_begin();
	for (int i = 0; !rc && i < ri_iters(e); i++) {
		pp_step_begin(i);
		flow_tensor *out = NULL;
		if (flow_function_call(fn, &c.xv, &out, c.st) != 0)
			rc = scn_fail(e, "call: %s", flow_status_message(c.st));
		flow_tensor_unref(out);
		ri_sample(&c);
		pp_step_end();
	}
	scn_measured_end();
	flow_function_free(fn);
	if (s) {
		flow_session_close(s, NULL);
		flow_session_free(s);
	}
	ri_free(&c);
	return rc;
}

/* ---- claims ---- */

static int ri_claims(pp_store *st, const int64_t *run, pp_scn_claim *out, int max)
{
	int n = 0;
	const char *c_graph = "each initialisation constructs or modifies the graph, and that "
			      "graph work is what grows";
	const char *c_frag = "repeated initialisation fragments memory increasingly";
	const char *c_page = "fragmentation forces paging, which slows later iterations";
	const char *c_sess = "repeated session creation adds overhead that grows";
	if (run[0] <= 0) {
		n = scn_claim(out, n, max, "graph-growth", c_graph, PP_CLAIM_NOT_MEASURED,
			      "the slow variant did not run");
		return n;
	}
	scn_series t, nodes, frag, majf, minf, rss, vinit, comp, sess;
	scn_steps(st, run[0], &t);
	scn_counter_at_steps(st, run[0], "graph.nodes", &nodes);
	scn_counter_at_steps(st, run[0], "alloc.fragmentation", &frag);
	scn_counter_at_steps(st, run[0], "proc.majflt", &majf);
	scn_counter_at_steps(st, run[0], "proc.minflt", &minf);
	scn_counter_at_steps(st, run[0], "proc.rss_bytes", &rss);
	scn_kind_per_step(st, run[0], PP_VARIABLE_INIT, &vinit);
	scn_kind_per_step(st, run[0], PP_COMPILE, &comp);
	scn_kind_per_step(st, run[0], PP_SESSION_CREATE, &sess);
	int m = t.n;
	char a[32], b[32], d[32], e1[32], e2[32], e3[32];
	if (m < 4 || nodes.n != m) {
		n = scn_claim(out, n, max, "graph-growth", c_graph, PP_CLAIM_NOT_MEASURED,
			      "too few iterations recorded (%d)", m);
		goto done;
	}
	int k = m / 10 > 0 ? m / 10 : 1;
	double t0 = scn_median_range(t.v, 0, k), t1 = scn_median_range(t.v, m - k, k);
	double growth = t1 - t0;
	/* What the extra time per iteration is made of (median of the last
	 * tenth minus the first tenth, per phase kind). */
	double gi = scn_median_range(vinit.v, m - k, k) - scn_median_range(vinit.v, 0, k);
	double gc = scn_median_range(comp.v, m - k, k) - scn_median_range(comp.v, 0, k);
	double gs = scn_median_range(sess.v, m - k, k) - scn_median_range(sess.v, 0, k);
	double r_nodes = scn_correlation(nodes.v, t.v, m);
	double n0 = nodes.v[0], n1 = nodes.v[m - 1];
	for (int i = 0; i < m && !isfinite(n0); i++)
		n0 = nodes.v[i];
	{
		int grows = n1 >= 2 * n0 && r_nodes >= 0.8 && t1 >= 1.5 * t0;
		n = scn_claim(out, n, max, "graph-growth", c_graph,
			      grows ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED,
			      "the default graph grew from %.0f to %.0f nodes; iteration time %s -> %s "
			      "(x%.1f), correlation with graph size r=%.2f. Of the %s extra per "
			      "iteration: initialiser (now over every variable ever created) %s, "
			      "compile %s, session creation %s",
			      n0, n1, pp_fmt_dur(a, sizeof a, t0), pp_fmt_dur(b, sizeof b, t1),
			      t0 > 0 ? t1 / t0 : 0, r_nodes, pp_fmt_dur(d, sizeof d, growth),
			      pp_fmt_dur(e1, sizeof e1, gi), pp_fmt_dur(e2, sizeof e2, gc),
			      pp_fmt_dur(e3, sizeof e3, gs));
	}
	{
		double f0 = scn_median_range(frag.v, 0, k), f1 = scn_median_range(frag.v, m - k, k);
		double r = scn_correlation(frag.v, t.v, m);
		double lo = INFINITY, hi = -INFINITY;
		for (int i = 0; i < frag.n; i++)
			if (isfinite(frag.v[i])) {
				lo = frag.v[i] < lo ? frag.v[i] : lo;
				hi = frag.v[i] > hi ? frag.v[i] : hi;
			}
		int sup = isfinite(f1) && f1 - f0 >= 0.2 && r >= 0.7;
		n = scn_claim(out, n, max, "fragmentation", c_frag,
			      frag.n ? (sup ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED)
				     : PP_CLAIM_NOT_MEASURED,
			      "allocator fragmentation (1 - largest free / total free) %.2f in the "
			      "first iterations, %.2f in the last (range %.2f..%.2f, correlation with "
			      "iteration time r=%.2f): %s",
			      f0, f1, isfinite(lo) ? lo : 0, isfinite(hi) ? hi : 0, r,
			      sup ? "it rises with the slowdown"
				  : "it does not rise with the slowdown, so it does not explain it");
	}
	{
		double maj = majf.n ? majf.v[m - 1] - majf.v[0] : NAN;
		double mi0 = m > 1 ? minf.v[1] - minf.v[0] : NAN;
		double mi1 = m > 1 ? minf.v[m - 1] - minf.v[m - 2] : NAN;
		double r0 = rss.v[0], r1 = rss.v[m - 1];
		int sup = isfinite(maj) && maj > m; /* at least one major fault per iteration */
		n = scn_claim(out, n, max, "paging", c_page,
			      majf.n ? (sup ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED)
				     : PP_CLAIM_NOT_MEASURED,
			      "%.0f major page faults during the %d iterations; minor faults %.0f in "
			      "the second iteration, %.0f in the last; resident memory %s -> %s: %s",
			      maj, m, mi0, mi1, pp_fmt_bytes(a, sizeof a, r0),
			      pp_fmt_bytes(b, sizeof b, r1),
			      sup ? "pages are read back from disk" : "no paging happens");
	}
	{
		double s0 = scn_median_range(sess.v, 0, k), s1 = scn_median_range(sess.v, m - k, k);
		int v = s1 - s0 >= 0.3 * growth && growth > 0 ? PP_CLAIM_SUPPORTED
			: s1 > 0.05 * t1                  ? PP_CLAIM_PARTLY
							  : PP_CLAIM_NOT_SUPPORTED;
		n = scn_claim(out, n, max, "session-overhead", c_sess, v,
			      "creating a session takes %s in the first iterations and %s in the last "
			      "(%.0f%% of the growth); %s",
			      pp_fmt_dur(a, sizeof a, s0), pp_fmt_dur(b, sizeof b, s1),
			      growth > 0 ? 100 * (s1 - s0) / growth : 0,
			      v == PP_CLAIM_SUPPORTED ? "session creation grows with the graph"
			      : v == PP_CLAIM_PARTLY  ? "a real per-iteration cost, but flat"
						      : "it is cheap and does not grow");
	}
	/* The fixes keep the same arithmetic: are they flat? */
	for (int v = 1; v < 3 && run[v] > 0; v++) {
		pp_scn_measure me;
		if (pp_scenario_measure(st, run[v], &me) == 0 && me.n_steps >= 4 && n < max) {
			char id[32];
			snprintf(id, sizeof id, "fix-%s", v == 1 ? "one-session" : "traced");
			n = scn_claim(out, n, max, id,
				      v == 1 ? "one session with variables made once avoids the "
					       "slowdown (write-up example 2)"
					     : "a traced function with variables made once avoids the "
					       "slowdown (write-up example 3)",
				      me.last10_ns <= 1.3 * me.first10_ns ? PP_CLAIM_SUPPORTED
									  : PP_CLAIM_NOT_SUPPORTED,
				      "iterations: first tenth %s, last tenth %s (x%.2f)",
				      pp_fmt_dur(a, sizeof a, (double)me.first10_ns),
				      pp_fmt_dur(b, sizeof b, (double)me.last10_ns),
				      me.first10_ns > 0 ? (double)me.last10_ns / me.first10_ns : 0);
		}
	}
done:
	scn_series_free(&t);
	scn_series_free(&nodes);
	scn_series_free(&frag);
	scn_series_free(&majf);
	scn_series_free(&minf);
	scn_series_free(&rss);
	scn_series_free(&vinit);
	scn_series_free(&comp);
	scn_series_free(&sess);
	return n;
}

static const scn_variant variants[] = {
	{"slow", SCN_SLOW,
	 "per iteration: new session on the default graph, new W[100x100] and b[100], global "
	 "initialiser, y = xW + b",
	 ri_slow, NULL},
	{"one-session", SCN_FIX, "variables created once, one session, initialiser once; loop runs y",
	 ri_one_session, NULL},
	{"traced", SCN_FIX, "variables created once; y = xW + b as a traced function called per iteration",
	 ri_traced, NULL},
};

static const char *const rules[] = {"graph_grows", "session_per_iteration", "iteration_time_grows"};

const pp_scenario scn_repeated_init = {
	.name = "repeated-init",
	.complaint = "re-initialising variables in a loop gets slower each time",
	.source = "000 (Why does initializing TensorFlow graph variables repeatedly become progressively slower?)",
	.metric = "time of the 50 iterations",
	.variants = variants,
	.n_variants = SCN_COUNT(variants),
	.rules = rules,
	.n_rules = SCN_COUNT(rules),
	.claims = ri_claims,
};
