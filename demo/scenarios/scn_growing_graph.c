/*
 * growing-graph — "time per iteration grows" (write-up 002; TensorFlow
 * #1439, #7127).
 *
 * slow:       every iteration adds y_i = x * 2 to the graph and runs it: the
 *             session sees a larger graph each time, re-validates all of it
 *             (TF's ExtendSession) and compiles the new fetch.
 * build-once: y = x * 2 built before the loop; the loop only runs it.
 * traced:     y as a traced function, one trace, called per iteration.
 * finalized:  built once, graph finalized before the loop; the op the slow
 *             variant adds is attempted once and refused with the clear
 *             error, the loop runs the prebuilt y.
 * eager:      the write-up's example 1 as it is written (eager x = x * 2 in
 *             a loop): the write-up says eager programs grow a graph too.
 *
 * Every iteration samples graph.nodes and the allocator, so the claims
 * (graph growth; memory not reused; gradient cost; eager graphs) can be
 * checked against the per-iteration times.
 */
#include "scn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GG_N 256

typedef struct gg_ctx {
	flow_status *st;
	flow_graph *g;
	flow_session *s;
	flow_output x, two;
	flow_tensor *xv;
} gg_ctx;

static int gg_iters(const scn_env *e)
{
	return scn_pick(e, 1000, 1000, 30);
}

static int gg_setup(scn_env *e, gg_ctx *c, int with_session)
{
	memset(c, 0, sizeof *c);
	c->st = flow_status_new();
	if (scn_flow_init(e, c->st) != 0)
		return -1;
	c->g = flow_default_graph();
	int64_t dims[1] = {GG_N};
	flow_shape sh = flow_shape_make(1, dims);
	c->x = flow_placeholder(c->g, "x", FLOW_F32, &sh, c->st);
	c->two = c->x.op ? flow_const_f32(c->g, "two", 2.0f, c->st) : c->x;
	c->xv = scn_tensor_uniform(1, dims, 3, c->st);
	if (!c->two.op || !c->xv)
		return scn_fail(e, "input: %s", flow_status_message(c->st));
	if (with_session) {
		flow_session_options so = {.no_step_phase = 1};
		c->s = flow_session_new(c->g, &so, c->st);
		if (!c->s)
			return scn_fail(e, "session: %s", flow_status_message(c->st));
	}
	return 0;
}

static void gg_free(gg_ctx *c)
{
	if (c->s) {
		flow_session_close(c->s, NULL);
		flow_session_free(c->s);
	}
	flow_tensor_unref(c->xv);
	flow_status_free(c->st);
}

static int gg_run(scn_env *e, gg_ctx *c, flow_output y)
{
	flow_tensor *out = NULL;
	if (flow_session_run(c->s, &c->x, &c->xv, 1, &y, &out, 1, NULL, 0, c->st) != 0)
		return scn_fail(e, "run: %s", flow_status_message(c->st));
	flow_tensor_unref(out);
	return 0;
}

static void gg_sample(gg_ctx *c)
{
	scn_sample_graph(c->g);
	scn_sample_alloc(flow_default_allocator(), FLOW_ALLOC_BFC);
}

static int gg_slow(scn_env *e)
{
	gg_ctx c;
	int rc = gg_setup(e, &c, 1);
	scn_measured_begin();
	for (int i = 0; !rc && i < gg_iters(e); i++) {
		pp_step_begin(i);
		char n[32];
		snprintf(n, sizeof n, "mul_%d", i);
		flow_output y = scn_binary(c.g, "Mul", n, c.x, c.two, c.st);
		rc = y.op ? gg_run(e, &c, y) : scn_fail(e, "mul: %s", flow_status_message(c.st));
		gg_sample(&c);
		pp_step_end();
		if (i % 100 == 0)
			flow_graph_snapshot(c.g, "default");
	}
	scn_measured_end();
	gg_free(&c);
	return rc;
}

static int gg_loop(scn_env *e, gg_ctx *c, flow_output y)
{
	int rc = 0;
	scn_measured_begin();
	for (int i = 0; !rc && i < gg_iters(e); i++) {
		pp_step_begin(i);
		rc = gg_run(e, c, y);
		gg_sample(c);
		pp_step_end();
	}
	scn_measured_end();
	return rc;
}

/* The fixes' graph: y = x * 2 built once, before the loop. */
static int gg_setup_once(scn_env *e, gg_ctx *c, flow_output *y)
{
	int rc = gg_setup(e, c, 1);
	*y = rc ? c->x : scn_binary(c->g, "Mul", "mul", c->x, c->two, c->st);
	if (!rc && !y->op)
		rc = scn_fail(e, "mul: %s", flow_status_message(c->st));
	return rc;
}

static int gg_build_once(scn_env *e)
{
	gg_ctx c;
	flow_output y;
	int rc = gg_setup_once(e, &c, &y);
	if (!rc)
		rc = gg_loop(e, &c, y);
	gg_free(&c);
	return rc;
}

static int gg_finalized(scn_env *e)
{
	gg_ctx c;
	flow_output y;
	int rc = gg_setup_once(e, &c, &y);
	if (!rc) {
		flow_graph_finalize(c.g);
		/* The slow variant's mistake, once: a finalized graph refuses it
		 * with a clear error instead of growing. */
		flow_status *st2 = flow_status_new();
		flow_output bad = scn_binary(c.g, "Mul", "mul_in_loop", c.x, c.two, st2);
		if (bad.op || flow_status_code(st2) != FLOW_FAILED_PRECONDITION) {
			rc = scn_fail(e, "adding to a finalized graph was not refused (%s)",
				      flow_status_message(st2));
		} else {
			pp_mark("finalized_graph_refused_op");
			pp_meta("scenario.finalize_error", flow_status_message(st2));
		}
		flow_status_free(st2);
	}
	if (!rc)
		rc = gg_loop(e, &c, y);
	gg_free(&c);
	return rc;
}

#include "flow_train.h"

static int gg_trace(flow_graph *g, const flow_output *in, int n_in, flow_output *out, int n_out,
		    void *ud, flow_status *st)
{
	(void)ud;
	(void)n_in;
	(void)n_out;
	flow_output two = flow_const_f32(g, "two", 2.0f, st);
	out[0] = two.op ? scn_binary(g, "Mul", "mul", in[0], two, st) : two;
	return out[0].op ? 0 : -1;
}

static int gg_traced(scn_env *e)
{
	gg_ctx c;
	int rc = gg_setup(e, &c, 0);
	flow_function_options fo = {.name = "times_two", .n_inputs = 1, .n_outputs = 1,
				    .warn_to_stderr = -1};
	flow_function *f = rc ? NULL : flow_function_new(gg_trace, NULL, &fo, c.st);
	if (!rc && !f)
		rc = scn_fail(e, "traced function: %s", flow_status_message(c.st));
	scn_measured_begin();
	for (int i = 0; !rc && i < gg_iters(e); i++) {
		pp_step_begin(i);
		flow_tensor *out = NULL;
		if (flow_function_call(f, &c.xv, &out, c.st) != 0)
			rc = scn_fail(e, "call: %s", flow_status_message(c.st));
		flow_tensor_unref(out);
		gg_sample(&c);
		pp_step_end();
	}
	scn_measured_end();
	flow_function_free(f);
	gg_free(&c);
	return rc;
}

/* The write-up's example 1 verbatim in eager mode: x = x * 2, then
 * reduce_sum(x), every iteration. No graph exists to grow. */
static int gg_eager(scn_env *e)
{
	gg_ctx c;
	int rc = gg_setup(e, &c, 0);
	flow_tensor *x = rc ? NULL : flow_tensor_ref(c.xv);
	flow_tensor *two = flow_tensor_scalar_f32(1.0001f); /* stays finite over 1000 steps */
	scn_measured_begin();
	for (int i = 0; !rc && i < gg_iters(e); i++) {
		pp_step_begin(i);
		flow_op_desc *d = flow_eager_new("Mul");
		flow_op_add_tensor(d, x);
		flow_op_add_tensor(d, two);
		flow_tensor *y = NULL;
		if (flow_execute(d, &y, 1, c.st) != 0) {
			rc = scn_fail(e, "eager Mul: %s", flow_status_message(c.st));
		} else {
			flow_tensor_unref(x);
			x = y;
			flow_tensor *axis = flow_tensor_scalar_i32(0), *sum = NULL;
			d = flow_eager_new("Sum");
			flow_op_add_tensor(d, x);
			flow_op_add_tensor(d, axis);
			if (flow_execute(d, &sum, 1, c.st) != 0)
				rc = scn_fail(e, "eager Sum: %s", flow_status_message(c.st));
			flow_tensor_unref(sum);
			flow_tensor_unref(axis);
		}
		gg_sample(&c);
		pp_step_end();
	}
	scn_measured_end();
	flow_tensor_unref(x);
	flow_tensor_unref(two);
	gg_free(&c);
	return rc;
}

/* ---- claims ---- */

static void gg_flat(pp_store *st, int64_t run, double *first, double *last, int *n)
{
	pp_scn_measure m;
	*first = *last = NAN;
	*n = 0;
	if (run <= 0 || pp_scenario_measure(st, run, &m) != 0)
		return;
	*n = m.n_steps;
	scn_series t;
	if (scn_steps(st, run, &t) == 0 && t.n >= 20) {
		int k = t.n >= 1000 ? 100 : t.n / 10;
		*first = scn_median_range(t.v, 1, k);
		*last = scn_median_range(t.v, t.n - k, k);
	}
	scn_series_free(&t);
}

static int gg_claims(pp_store *st, const int64_t *run, pp_scn_claim *out, int max)
{
	int n = 0;
	char a[32], b[32], c[32], d[32], e2[32];
	const char *c_graph = "operations added inside the loop grow the graph, which is "
			      "traversed and re-optimised every step";
	if (run[0] <= 0)
		return scn_claim(out, n, max, "graph-growth", c_graph, PP_CLAIM_NOT_MEASURED,
				 "the slow variant did not run");
	scn_series t, nodes, comp, cnt;
	scn_steps(st, run[0], &t);
	scn_counter_at_steps(st, run[0], "graph.nodes", &nodes);
	scn_counter_at_steps(st, run[0], "alloc.count", &cnt);
	scn_kind_per_step(st, run[0], PP_COMPILE, &comp);
	int m = t.n;
	if (m >= 20 && nodes.n == m) {
		int k = m >= 1000 ? 100 : m / 10;
		double t0 = scn_median_range(t.v, 1, k), t1 = scn_median_range(t.v, m - k, k);
		double c0 = scn_median_range(comp.v, 1, k), c1 = scn_median_range(comp.v, m - k, k);
		int64_t nval = 0;
		int64_t val = scn_span_total(st, run[0], "extend_graph", &nval);
		double r = scn_correlation(nodes.v, t.v, m);
		int sup = t1 >= 2 * t0 && r >= 0.8;
		n = scn_claim(out, n, max, "graph-growth", c_graph,
			      sup ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED,
			      "graph %.0f -> %.0f nodes; step time (median of %d) %s -> %s (x%.1f), "
			      "correlation with graph size r=%.2f; whole-graph re-validation ran %lld "
			      "times (%s in total); compile per step %s -> %s",
			      nodes.v[0], nodes.v[m - 1], k, pp_fmt_dur(a, sizeof a, t0),
			      pp_fmt_dur(b, sizeof b, t1), t0 > 0 ? t1 / t0 : 0, r, (long long)nval,
			      pp_fmt_dur(c, sizeof c, (double)val), pp_fmt_dur(d, sizeof d, c0),
			      pp_fmt_dur(e2, sizeof e2, c1));
		/* allocation per step: flat means memory is reused */
		if (cnt.n == m && m > 2) {
			double *d = malloc((size_t)m * sizeof *d);
			if (d) {
				for (int i = 1; i < m; i++)
					d[i - 1] = cnt.v[i] - cnt.v[i - 1];
				double d0 = scn_median_range(d, 0, k), d1 = scn_median_range(d, m - 1 - k, k);
				int grows = d1 > 1.25 * d0 + 1;
				n = scn_claim(out, n, max, "memory-reuse",
					      "memory not reused (allocate/deallocate per iteration) "
					      "adds delay",
					      grows ? PP_CLAIM_SUPPORTED : PP_CLAIM_NOT_SUPPORTED,
					      "allocations per step %.0f at the start, %.0f at the end: %s",
					      d0, d1,
					      grows ? "they grow with the slowdown"
						    : "flat, so allocation does not explain the growth");
				free(d);
			}
		}
	} else {
		n = scn_claim(out, n, max, "graph-growth", c_graph, PP_CLAIM_NOT_MEASURED,
			      "too few iterations recorded (%d)", m);
	}
	int64_t ng = 0;
	scn_kind_total(st, run[0], PP_GRADIENT_BUILD, &ng);
	n = scn_claim(out, n, max, "gradients",
		      "gradient computation over the larger graph makes each iteration slower",
		      PP_CLAIM_NOT_SUPPORTED,
		      "the slowdown reproduces with %lld gradient computations: gradients are not "
		      "needed to explain it (they would add to the cost only if built per iteration)",
		      (long long)ng);
	/* eager: the write-up's example 1 in eager mode */
	int ve = 4;
	if (run[ve] > 0) {
		double f, l;
		int ns;
		gg_flat(st, run[ve], &f, &l, &ns);
		double gn = scn_counter_last(st, run[ve], "graph.nodes", NAN);
		int flat = isfinite(f) && l <= 1.3 * f;
		n = scn_claim(out, n, max, "eager-grows",
			      "eager execution expands a graph every iteration too (example 1)",
			      flat ? PP_CLAIM_NOT_SUPPORTED : PP_CLAIM_SUPPORTED,
			      "eager x = x * 2 over %d iterations: step time %s at the start, %s at the "
			      "end (x%.2f); the default graph holds %.0f nodes, all made before the loop: %s",
			      ns, pp_fmt_dur(a, sizeof a, f), pp_fmt_dur(b, sizeof b, l),
			      f > 0 ? l / f : 0, gn,
			      flat ? "eager ops build no graph; time stays flat"
				   : "eager steps grow");
	}
	scn_series_free(&t);
	scn_series_free(&nodes);
	scn_series_free(&comp);
	scn_series_free(&cnt);
	return n;
}

static const scn_variant variants[] = {
	{"slow", SCN_SLOW, "1000 iterations, each adds y = x * 2 to the graph and runs it", gg_slow, NULL},
	{"build-once", SCN_FIX, "y built once before the loop; the loop only runs it", gg_build_once, NULL},
	{"traced", SCN_FIX, "y as a traced function (one trace), called per iteration", gg_traced, NULL},
	{"finalized", SCN_FIX,
	 "built once, graph finalized: the in-loop op is refused with a clear error", gg_finalized, NULL},
	{"eager", SCN_FIX, "the write-up's example 1 in eager mode: x = x * 2; sum(x) per iteration",
	 gg_eager, NULL},
};

static const char *const rules[] = {"graph_grows", "iteration_time_grows"};

const pp_scenario scn_growing_graph = {
	.name = "growing-graph",
	.complaint = "time per iteration grows",
	.source = "002 (Why does TensorFlow processing time increase with each iteration?)",
	.metric = "time of the 1000 iterations",
	.variants = variants,
	.n_variants = SCN_COUNT(variants),
	.rules = rules,
	.n_rules = SCN_COUNT(rules),
	.claims = gg_claims,
};
