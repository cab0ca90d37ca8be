/* rules_steps.c — rules over the step loop: growth, first step, sessions,
 * graph growth, allocation counts. */
#include "diag_internal.h"
#include "diag_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Trend thresholds: significance from Mann-Kendall, size from Theil-Sen.
 * With hundreds of steps a 3% drift is "significant", so both are needed. */
#define GROW_P 0.001
#define GROW_MODERATE 1.25
#define GROW_HIGH 2.0
#define THEIL_SEN_CAP 600

static double step_dur(const diag_run *r, int i)
{
	return (double)(r->steps[i].end_ns - r->steps[i].start_ns);
}

/* A trend of y[0..n): significant increase and its fitted start/end. */
typedef struct trend {
	int ok;                   /* enough points to test */
	diag_mk mk;
	diag_linreg ls;
	double ts_slope, start, end, ratio;
} trend;

static void trend_fit(const double *y, int n, trend *t)
{
	memset(t, 0, sizeof *t);
	if (n < 6)
		return;
	double *x = malloc((size_t)n * sizeof *x);
	if (!x)
		return;
	for (int i = 0; i < n; i++)
		x[i] = i;
	double icpt;
	if (diag_mann_kendall(y, n, &t->mk) == 0 &&
	    diag_theil_sen(x, y, n, THEIL_SEN_CAP, &t->ts_slope, &icpt) == 0) {
		diag_linreg_fit(x, y, n, &t->ls);
		t->start = icpt;
		t->end = icpt + t->ts_slope * (n - 1);
		/* A fitted start at or below zero (steep growth from tiny values):
		 * fall back to the median of the first tenth. */
		if (t->start <= 0) {
			int k = n / 10 > 0 ? n / 10 : 1;
			t->start = diag_median(y, k);
		}
		t->ratio = t->start > 0 ? t->end / t->start : (t->end > 0 ? INFINITY : 1);
		t->ok = 1;
	}
	free(x);
}

static int trend_grows(const trend *t, double min_ratio)
{
	return t->ok && t->mk.p_up < GROW_P && t->ts_slope > 0 && t->ratio >= min_ratio;
}

void rule_iteration_time_grows(diag_ctx *c)
{
	const diag_run *r = c->run;
	int n = r->n_steps - 1; /* the first step is warm-up, never part of the trend */
	if (n < 8)
		return;
	double *y = malloc((size_t)n * sizeof *y);
	if (!y)
		return;
	double sum = 0;
	for (int i = 0; i < n; i++) {
		y[i] = step_dur(r, i + 1);
		sum += y[i];
	}
	trend t;
	trend_fit(y, n, &t);
	if (!trend_grows(&t, GROW_MODERATE)) {
		free(y);
		return;
	}
	int k = n / 10 > 0 ? n / 10 : 1;
	double first_med = diag_median(y, k), last_med = diag_median(y + n - k, k);
	double excess = t.ts_slope * (double)n * (n - 1) / 2;
	char a[32], b[32], s[32], m1[32], m2[32], ls[32];
	pp_finding *f = diag_emit(
		c, "iteration_time_grows", t.ratio >= GROW_HIGH ? DIAG_HIGH : DIAG_MODERATE,
		sum > 0 ? excess / sum : 0,
		"Look for work that accumulates per iteration: ops added to the graph inside the loop "
		"(build once, then finalize the graph), sessions or variables created per step, "
		"retracing, or state that keeps growing; move it out of the loop.",
		"Step time grows by %s per iteration: from %s to %s over %d steps (x%.1f)",
		diag_fmt_ns(s, sizeof s, t.ts_slope), diag_fmt_ns(a, sizeof a, t.start),
		diag_fmt_ns(b, sizeof b, t.end), n, t.ratio);
	diag_evidence(f,
		      "%d steady steps (the first step excluded). Theil-Sen fit: %s at the first "
		      "steady step, %s at the last (x%.2f), slope %s/iteration. Mann-Kendall: "
		      "tau=%.2f, z=%.1f, p=%.2g (increasing). Least squares: slope %s/iteration, "
		      "t=%.1f, p=%.2g, R2=%.2f. Median of the first %d steps %s, of the last %d %s. "
		      "Extra time from the growth: %.0f%% of the step time.",
		      n, a, b, t.ratio, s, t.mk.tau, t.mk.z, t.mk.p_up,
		      diag_fmt_ns(ls, sizeof ls, t.ls.slope), t.ls.t, t.ls.p_two_sided, t.ls.r2, k,
		      diag_fmt_ns(m1, sizeof m1, first_med), k, diag_fmt_ns(m2, sizeof m2, last_med),
		      sum > 0 ? 100.0 * excess / sum : 0);
	free(y);
}

static const char *first_step_fix(int kind)
{
	switch (kind) {
	case PP_COMPILE:
		return "Compile before the measured loop: run one warm-up step, or persist the "
		       "compiled plan (compile cache) so later processes reuse it.";
	case PP_OPTIMIZER_SETUP:
		return "Create the optimizer's slot variables up front (build the optimizer on the "
		       "trainable variables before the loop, as Keras optimizer.build does) or run a "
		       "warm-up step.";
	case PP_MEMORY_ALLOC:
		return "Reserve the allocator's arena up front (sized from the memory plan or a "
		       "warm-up step) instead of growing it region by region during the first step.";
	case PP_GRAPH_BUILD:
	case PP_GRADIENT_BUILD:
	case PP_SHAPE_INFERENCE:
		return "Build the forward and gradient graphs before the loop (or trace once in a "
		       "warm-up step) so the first measured step only runs.";
	case PP_DEVICE_INIT:
		return "Initialise the device before the loop (a warm-up step); for a GPU, make sure "
		       "the binary contains kernels for the device's architecture so no PTX JIT runs.";
	default:
		return "Run one warm-up step outside the measured loop, and move one-time setup "
		       "(graph build, compile, slots, arena) before it.";
	}
}

void rule_first_step_slow(diag_ctx *c)
{
	const diag_run *r = c->run;
	int n = r->n_steps - 1;
	if (n < 2)
		return;
	double *y = malloc((size_t)n * sizeof *y);
	if (!y)
		return;
	for (int i = 0; i < n; i++)
		y[i] = step_dur(r, i + 1);
	double med = diag_median(y, n);
	free(y);
	double first = step_dur(r, 0);
	double ratio = med > 0 ? first / med : (first > 0 ? INFINITY : 1);
	/* Below 3x is within what a warm cache explains; 50 us guards against
	 * ratios of nanosecond-scale steps. */
	if (ratio < 3.0 || first - med < 50e3)
		return;
	/* Breakdown: self time per kind of everything inside the first step. */
	int64_t by_kind[PP_KIND_COUNT] = {0};
	int64_t tracked = 0;
	for (int i = 0; i < r->spans.n; i++) {
		if (r->step_of[i] != 0)
			continue;
		int k = r->spans.rows[i].kind;
		if (k < 0 || k >= PP_KIND_COUNT)
			continue;
		by_kind[k] += r->self_ns[i];
		tracked += r->self_ns[i];
	}
	int top = -1;
	for (int k = 0; k < PP_KIND_COUNT; k++)
		if (by_kind[k] > 0 && (top < 0 || by_kind[k] > by_kind[top]))
			top = k;
	double untracked = first - (double)tracked;
	if (untracked < 0)
		untracked = 0;
	char fs[32], ms[32], ts[32];
	int sev = ratio >= 5.0 ? DIAG_HIGH : DIAG_MODERATE;
	double share = r->total_ns > 0 ? (first - med) / (double)r->total_ns : 0;
	pp_finding *f;
	if (top >= 0 && (double)by_kind[top] >= untracked) {
		f = diag_emit(c, "first_step_slow", sev, share, first_step_fix(top),
			      "First step takes %.1fx the median step (%s vs %s); %s is %.0f%% of it",
			      ratio, diag_fmt_ns(fs, sizeof fs, first), diag_fmt_ns(ms, sizeof ms, med),
			      pp_kind_name((pp_kind)top), 100.0 * by_kind[top] / first);
	} else {
		f = diag_emit(c, "first_step_slow", sev, share, first_step_fix(-1),
			      "First step takes %.1fx the median step (%s vs %s), mostly outside "
			      "recorded phases",
			      ratio, diag_fmt_ns(fs, sizeof fs, first), diag_fmt_ns(ms, sizeof ms, med));
	}
	diag_evidence(f, "First step %s, median of the %d later steps %s. Breakdown of the first "
			 "step (self time):", fs, n, ms);
	/* Largest first, down to 1% of the step. */
	int shown = 0;
	int64_t left[PP_KIND_COUNT];
	memcpy(left, by_kind, sizeof left);
	for (;;) {
		int k = -1;
		for (int j = 0; j < PP_KIND_COUNT; j++)
			if (left[j] > 0 && (k < 0 || left[j] > left[k]))
				k = j;
		if (k < 0 || left[k] < 0.01 * first)
			break;
		int cnt = 0;
		int64_t steady = diag_kind_time(r, k, DIAG_IN_STEADY, &cnt);
		diag_evidence(f, "%s %s %s (%.0f%%", shown ? "," : "", pp_kind_name((pp_kind)k),
			      diag_fmt_ns(ts, sizeof ts, (double)left[k]), 100.0 * left[k] / first);
		if (k != PP_SPAN)
			diag_evidence(f, "; %s per later step", diag_fmt_ns(ts, sizeof ts, (double)steady / n));
		diag_evidence(f, ")");
		left[k] = 0;
		shown++;
	}
	diag_evidence(f, "%s untracked %s (%.0f%%).", shown ? "," : "",
		      diag_fmt_ns(ts, sizeof ts, untracked), 100.0 * untracked / first);
}

void rule_session_per_iteration(diag_ctx *c)
{
	const diag_run *r = c->run;
	int n_phases = 0, in_steps = 0;
	int64_t t_in = 0, t_all = 0;
	diag_kind_time(r, PP_SESSION_CREATE, DIAG_ANYWHERE, &n_phases);
	t_all = diag_kind_time(r, PP_SESSION_CREATE, DIAG_ANYWHERE, NULL);
	int steps_with = diag_steps_with(r, PP_SESSION_CREATE, 0, &in_steps, &t_in);
	char ta[32], tm[32];
	if (r->n_steps > 0) {
		/* One lazily created session in the first step is normal. */
		if (steps_with < 3 || steps_with * 2 < r->n_steps)
			return;
		int64_t step_total = diag_steady_time(r) + (r->steps[0].end_ns - r->steps[0].start_ns);
		double share = step_total > 0 ? (double)t_in / step_total : 0;
		int closes = 0;
		int64_t t_close = 0;
		diag_steps_with(r, PP_SESSION_CLOSE, 0, &closes, &t_close);
		pp_finding *f = diag_emit(
			c, "session_per_iteration", share >= 0.2 ? DIAG_HIGH : DIAG_MODERATE, share,
			"Create the session (and the variables) once before the loop and reuse it; run "
			"the initializer once. A new session on a growing default graph pays for the "
			"whole graph every time.",
			"A session is created in %d of %d steps", steps_with, r->n_steps);
		diag_evidence(f, "%d session_create phases inside steps, %s in total (%s each on "
				 "average, %.0f%% of step time)",
			      in_steps, diag_fmt_ns(ta, sizeof ta, (double)t_in),
			      diag_fmt_ns(tm, sizeof tm, (double)t_in / in_steps), 100 * share);
		if (closes)
			diag_evidence(f, "; %d session_close phases inside steps, %s", closes,
				      diag_fmt_ns(ta, sizeof ta, (double)t_close));
		diag_evidence(f, ".");
		return;
	}
	/* No step loop recorded: many sessions in one process is the signal. */
	if (n_phases < 10)
		return;
	double share = r->total_ns > 0 ? (double)t_all / r->total_ns : 0;
	pp_finding *f = diag_emit(
		c, "session_per_iteration", share >= 0.2 ? DIAG_HIGH : DIAG_MODERATE, share,
		"Create the session once and reuse it for every run.",
		"%d sessions are created in one run", n_phases);
	diag_evidence(f, "%d session_create phases, %s in total (%.0f%% of the run); no step "
			 "phases were recorded, so the loop itself is not visible.",
		      n_phases, diag_fmt_ns(ta, sizeof ta, (double)t_all), 100 * share);
}

/* ---- graph growth ---- */

typedef struct snap {
	char label[64];
	int64_t version, n_nodes;
} snap;
typedef struct snaps {
	snap *v;
	int n, cap;
} snaps;

static int snap_row(sqlite3_stmt *row, void *ud)
{
	snaps *s = ud;
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 64;
		snap *v = realloc(s->v, (size_t)cap * sizeof *v);
		if (!v)
			return 1;
		s->v = v;
		s->cap = cap;
	}
	snap *p = &s->v[s->n++];
	const unsigned char *l = sqlite3_column_text(row, 0);
	snprintf(p->label, sizeof p->label, "%s", l ? (const char *)l : "");
	p->version = sqlite3_column_int64(row, 1);
	p->n_nodes = sqlite3_column_int64(row, 2);
	return 0;
}

void rule_graph_grows(diag_ctx *c)
{
	const diag_run *r = c->run;
	int signals = 0;
	double growth = 1; /* last/first node count, the largest seen */
	char ev[3][320] = {"", "", ""};

	/* (a) snapshots of one graph label with rising node counts */
	snaps s = {0};
	pp_store_query(r->st,
		       "SELECT COALESCE(label,''), version, n_nodes FROM graphs WHERE run_id = ?1 "
		       "ORDER BY label, version, ts_ns",
		       r->run_id, snap_row, &s);
	for (int i = 0; i < s.n;) {
		int j = i;
		while (j < s.n && strcmp(s.v[j].label, s.v[i].label) == 0)
			j++;
		int m = j - i, ups = 0;
		for (int k = i + 1; k < j; k++)
			ups += s.v[k].n_nodes > s.v[k - 1].n_nodes;
		int64_t a = s.v[i].n_nodes, b = s.v[j - 1].n_nodes;
		if (m >= 3 && b > a && ups >= 2 && 2 * ups >= m - 1 && !ev[0][0]) {
			double g = a > 0 ? (double)b / a : b;
			if (g > growth)
				growth = g;
			snprintf(ev[0], sizeof ev[0],
				 "graph '%s': %d snapshots, %lld -> %lld nodes, larger in %d of %d "
				 "consecutive snapshots",
				 s.v[i].label, m, (long long)a, (long long)b, ups, m - 1);
			signals++;
		}
		i = j;
	}
	free(s.v);

	/* (b) the graph.nodes counter, read at the end of each steady step (or
	 * at every sample when there are no steps) */
	diag_series gn;
	diag_counter(r, "graph.nodes", &gn);
	if (gn.n >= 3) {
		int m = 0, ups = 0;
		double first = 0, prev = 0, last = 0;
		int from_steps = r->n_steps >= 4;
		int npts = from_steps ? r->n_steps - 1 : gn.n;
		for (int i = 0; i < npts; i++) {
			double v = from_steps ? diag_series_at(&gn, r->steps[i + 1].end_ns, NAN)
					      : gn.rows[i].value;
			if (isnan(v))
				continue;
			if (m == 0)
				first = v;
			else
				ups += v > prev;
			prev = last = v;
			m++;
		}
		if (m >= 3 && last > first && ups >= 2 && 2 * ups >= m - 1) {
			double g = first > 0 ? last / first : last;
			if (g > growth)
				growth = g;
			snprintf(ev[1], sizeof ev[1],
				 "counter graph.nodes: %.0f -> %.0f, rising in %d of %d %s", first, last,
				 ups, m - 1, from_steps ? "steady steps" : "samples");
			signals++;
		}
	}
	free(gn.rows);

	/* (c) graph_build phases inside the steady steps */
	int steady = r->n_steps - 1, nb = 0;
	int64_t t_build = 0;
	int with = diag_steps_with(r, PP_GRAPH_BUILD, 1, &nb, &t_build);
	int64_t steady_ns = diag_steady_time(r);
	if (steady >= 3 && with >= 3 && 2 * with >= steady) {
		char t[32];
		snprintf(ev[2], sizeof ev[2],
			 "%d graph_build phases in %d of %d steady steps, %s in total (%.0f%% of step "
			 "time)",
			 nb, with, steady, diag_fmt_ns(t, sizeof t, (double)t_build),
			 steady_ns > 0 ? 100.0 * t_build / steady_ns : 0);
		signals++;
	}
	if (!signals)
		return;

	/* What the growth costs inside the loop: building, re-validating and
	 * recompiling the larger graph. */
	int64_t cost = diag_kind_time(r, PP_GRAPH_BUILD, DIAG_IN_STEADY, NULL) +
		       diag_kind_time(r, PP_SHAPE_INFERENCE, DIAG_IN_STEADY, NULL) +
		       diag_kind_time(r, PP_COMPILE, DIAG_IN_STEADY, NULL);
	double share = steady_ns > 0 ? (double)cost / steady_ns : 0;
	int sev = (growth >= 2.0 || share >= 0.2) ? DIAG_HIGH : DIAG_MODERATE;
	pp_finding *f;
	if (ev[0][0] || ev[1][0])
		f = diag_emit(c, "graph_grows", sev, share,
			      "Build the graph once before the loop and only run it inside; finalize "
			      "the graph so an accidental op creation raises an error "
			      "(TF1: tf.get_default_graph().finalize()), or use a traced function.",
			      "The graph grows between runs (x%.1f nodes)", growth);
	else
		f = diag_emit(c, "graph_grows", sev, share,
			      "Build the graph once before the loop and only run it inside; finalize "
			      "the graph so an accidental op creation raises an error "
			      "(TF1: tf.get_default_graph().finalize()), or use a traced function.",
			      "The graph is built again inside %d of %d steps", with, steady);
	int first = 1;
	for (int i = 0; i < 3; i++)
		if (ev[i][0]) {
			diag_evidence(f, "%s%s", first ? "" : "; ", ev[i]);
			first = 0;
		}
	diag_evidence(f, ". Graph build, shape inference and compile inside steady steps: %.0f%% "
			 "of step time.", 100 * share);
}

/* ---- allocation counts per step ---- */

/* Per-step increments of a cumulative counter over steps [s0, n_steps). */
static int per_step_delta(const diag_run *r, const diag_series *s, int s0, double *out)
{
	int m = 0;
	for (int i = s0; i < r->n_steps; i++) {
		double a = diag_series_at(s, r->steps[i - 1].end_ns, 0);
		double b = diag_series_at(s, r->steps[i].end_ns, 0);
		out[m++] = b - a;
	}
	return m;
}

void rule_alloc_count_not_flat(diag_ctx *c)
{
	const diag_run *r = c->run;
	if (r->n_steps < 6)
		return;
	/* Steady state starts after the first step and a tenth of warm-up. */
	int s0 = r->n_steps / 10 > 1 ? r->n_steps / 10 : 1;
	if (s0 < 2)
		s0 = 2;
	int cap = r->n_steps;
	double *d = malloc((size_t)cap * sizeof *d), *e = malloc((size_t)cap * sizeof *e);
	if (!d || !e) {
		free(d);
		free(e);
		return;
	}
	diag_series cnt, sys, inuse, tns, frag;
	diag_counter(r, "alloc.count", &cnt);
	diag_counter(r, "alloc.sys_count", &sys);
	diag_counter(r, "alloc.bytes_in_use", &inuse);
	diag_counter(r, "alloc.time_ns", &tns);
	diag_counter(r, "alloc.fragmentation", &frag);
	char ev[4][300] = {"", "", "", ""};
	int why = 0;
	double ratio = 1;
	char b1[32], b2[32];
	int m = 0;
	if (cnt.n >= 2) {
		m = per_step_delta(r, &cnt, s0, d);
		trend t;
		trend_fit(d, m, &t);
		double med = diag_median(d, m), sig = diag_robust_sigma(d, m);
		double lo = d[0], hi = d[0];
		for (int i = 1; i < m; i++) {
			lo = d[i] < lo ? d[i] : lo;
			hi = d[i] > hi ? d[i] : hi;
		}
		if (trend_grows(&t, GROW_MODERATE)) {
			snprintf(ev[0], sizeof ev[0],
				 "allocations per step rise from %.0f to %.0f over %d steady steps "
				 "(Mann-Kendall p=%.2g)",
				 t.start, t.end, m, t.mk.p_up);
			ratio = t.ratio;
			why++;
		} else if (med > 0 && sig / med >= 0.25 && hi - lo >= 2) {
			snprintf(ev[0], sizeof ev[0],
				 "allocations per step vary: median %.0f, min %.0f, max %.0f, robust "
				 "spread %.0f%% over %d steady steps",
				 med, lo, hi, 100 * sig / med, m);
			why++;
		}
	}
	if (sys.n >= 2) {
		int ms = per_step_delta(r, &sys, s0, e), pos = 0;
		for (int i = 0; i < ms; i++)
			pos += e[i] > 0;
		if (ms > 0 && 2 * pos >= ms) {
			snprintf(ev[1], sizeof ev[1],
				 "%d of %d steady steps still take memory from the system (median %.0f "
				 "system allocations per step)",
				 pos, ms, diag_median(e, ms));
			why++;
		}
	}
	if (inuse.n >= 2) {
		int mi = 0;
		for (int i = s0; i < r->n_steps; i++)
			e[mi++] = diag_series_at(&inuse, r->steps[i].end_ns, 0);
		trend t;
		trend_fit(e, mi, &t);
		if (trend_grows(&t, GROW_MODERATE) && t.end - t.start >= 1048576.0) {
			snprintf(ev[2], sizeof ev[2],
				 "bytes in use at step end grow from %s to %s (Mann-Kendall p=%.2g)",
				 diag_fmt_bytes(b1, sizeof b1, t.start), diag_fmt_bytes(b2, sizeof b2, t.end),
				 t.mk.p_up);
			if (t.ratio > ratio)
				ratio = t.ratio;
			why++;
		}
	}
	if (!why)
		goto out;
	/* Cost: time in the allocator during steady steps, when counted. */
	double share = 0;
	int64_t steady_from = 0;
	for (int i = s0; i < r->n_steps; i++)
		steady_from += r->steps[i].end_ns - r->steps[i].start_ns;
	if (tns.n >= 2 && steady_from > 0) {
		int mt = per_step_delta(r, &tns, s0, e);
		double tt = 0;
		for (int i = 0; i < mt; i++)
			tt += e[i];
		share = tt / steady_from;
		snprintf(ev[3], sizeof ev[3], "time in the allocator %.1f%% of steady step time",
			 100 * share);
	}
	int sev = (ratio >= GROW_HIGH || share >= 0.2) ? DIAG_HIGH : DIAG_MODERATE;
	pp_finding *f = diag_emit(
		c, "alloc_count_not_flat", sev, share > 0 ? share : 0.05,
		"Reuse memory across steps: use the arena (BFC-style) allocator, keep tensor shapes "
		"fixed (pad or bucket batch sizes), reserve the arena up front; if bytes in use keep "
		"growing, something holds tensors across steps.",
		"Allocations are not flat across steady steps");
	int first = 1;
	for (int i = 0; i < 4; i++)
		if (ev[i][0]) {
			diag_evidence(f, "%s%s", first ? "" : "; ", ev[i]);
			first = 0;
		}
	if (m > 0)
		diag_evidence(f, "; median %.0f allocations per steady step", diag_median(d, m));
	if (frag.n > 0)
		diag_evidence(f, "; fragmentation %.2f at the last sample", frag.rows[frag.n - 1].value);
	diag_evidence(f, ".");
out:
	free(cnt.rows);
	free(sys.rows);
	free(inuse.rows);
	free(tns.rows);
	free(frag.rows);
	free(d);
	free(e);
}
