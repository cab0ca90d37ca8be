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
#define THEIL_SEN_CAP DIAG_THEIL_SEN_CAP

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
	double noise;             /* robust sigma of the residuals around the fit */
	double snr;               /* (end - start) / noise */
	double q_ratio;           /* median of the last quarter / of the first quarter */
} trend;

/* The fitted change must stand out of the noise around the line (a busy
 * machine shifts step times up and down for a while, which a rank test
 * alone reads as a trend), unless it is large anyway: the last quarter of
 * the steps at least twice the first (a noisy sawtooth that still grows). */
#define GROW_MIN_SNR 2.0
#define GROW_BIG_QRATIO 2.0

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
		for (int i = 0; i < n; i++)
			x[i] = y[i] - (icpt + t->ts_slope * i);
		t->noise = diag_robust_sigma(x, n);
		t->snr = t->noise > 0 ? (t->end - t->start) / t->noise : INFINITY;
		int q = n / 4 > 0 ? n / 4 : 1;
		double q1 = diag_median(y, q), q4 = diag_median(y + n - q, q);
		t->q_ratio = q1 > 0 ? q4 / q1 : (q4 > 0 ? INFINITY : 1);
		t->ok = 1;
	}
	free(x);
}

static int trend_grows(const trend *t, double min_ratio)
{
	return t->ok && t->mk.p_up < GROW_P && t->ts_slope > 0 && t->ratio >= min_ratio &&
	       (t->snr >= GROW_MIN_SNR || t->q_ratio >= GROW_BIG_QRATIO);
}

/* Growth in a step's own work shows in its CPU time (counter step.cpu_ns,
 * the process's, all threads) as much as in its wall time; growth in
 * waiting does not. On a shared machine the wall time of steps rises for a
 * while when other processes take the CPUs (a CI runner's parallel jobs):
 * a rank test reads that as growth, and a flat CPU time tells it apart.
 * Under contention a process's CPU time rises a little too (caches, the
 * frequency), so the work must account for at least this share. */
#define GROW_WORK_SHARE 0.5

/* The Theil-Sen change of the steady steps' CPU time from the first to the
 * last, in cpu[0..n); NAN when a step has no step.cpu_ns sample. */
static double cpu_change(const diag_run *r, int n, double *cpu_first, double *cpu_last)
{
	double change = NAN;
	double *y = malloc((size_t)n * sizeof *y);
	if (y && diag_steady_values(r, "step.cpu_ns", y) == n) {
		trend t;
		trend_fit(y, n, &t);
		if (t.ok) {
			change = t.ts_slope * (n - 1);
			int k = n / 10 > 0 ? n / 10 : 1;
			*cpu_first = diag_median(y, k);
			*cpu_last = diag_median(y + n - k, k);
		}
	}
	free(y);
	return change;
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
	/* On a busy machine the wall time's noise can bury a real growth (a
	 * hook registered per step, 60 steps beside other jobs: no trend in
	 * the wall time). The steps' CPU time does not wait: when it grows,
	 * and something the step does grows with it (hooks, allocations,
	 * graph nodes), the growth is the program's. */
	int by_cpu = 0;
	if (!trend_grows(&t, GROW_MODERATE)) {
		double *cpu = malloc((size_t)n * sizeof *cpu);
		trend tc;
		if (cpu && diag_steady_values(r, "step.cpu_ns", cpu) == n) {
			trend_fit(cpu, n, &tc);
			by_cpu = trend_grows(&tc, GROW_MODERATE) && diag_growth_causes(r, NULL) > 0;
		}
		free(cpu);
		if (!by_cpu) {
			free(y);
			return;
		}
		t = tc;
	}
	int k = n / 10 > 0 ? n / 10 : 1;
	double first_med = diag_median(y, k), last_med = diag_median(y + n - k, k);
	double excess = t.ts_slope * (double)n * (n - 1) / 2;
	double cpu_first = 0, cpu_last = 0;
	double work = cpu_change(r, n, &cpu_first, &cpu_last);
	/* What grows with it (hooks, allocations) confirms growth in the work
	 * whatever the CPU time says. */
	int waits = !by_cpu && !isnan(work) && work < GROW_WORK_SHARE * (t.end - t.start) &&
		    diag_growth_causes(r, NULL) == 0;
	char a[32], b[32], s[32], m1[32], m2[32], ls[32], c1[32], c2[32];
	pp_finding *f;
	if (waits)
		f = diag_emit(
			c, "iteration_time_grows", DIAG_INFO, diag_run_share(r, excess),
			"The program's own work per step did not grow: its CPU time did not follow "
			"the wall time, so the steps waited longer, for a CPU (other processes on "
			"the machine), for data, I/O or a device. Record it again on an idle "
			"machine; if the growth stays, look at what the step waits on.",
			"Step time grows by %s per iteration (%s to %s over %d steps) but its CPU "
			"time does not: the steps wait longer",
			pp_fmt_dur(s, sizeof s, t.ts_slope), pp_fmt_dur(a, sizeof a, t.start),
			pp_fmt_dur(b, sizeof b, t.end), n);
	else
		f = diag_emit(
		c, "iteration_time_grows", t.ratio >= GROW_HIGH ? DIAG_HIGH : DIAG_MODERATE,
		diag_run_share(r, excess),
		DIAG_SAY(r,
			 "Look for work that accumulates per iteration: ops added to the graph inside the loop "
			 "(build once, then finalize the graph), sessions or variables created per step, "
			 "retracing, or state that keeps growing; move it out of the loop.",
			 "Look for work that accumulates per iteration: hooks registered inside the loop "
			 "(the module's hook list grows and every forward runs all of them), a loss or "
			 "output summed across steps with its autograd graph (total_loss += loss keeps "
			 "every step's graph: add loss.item() or loss.detach()), tensors appended to a "
			 "list every step, an optimizer, module or torch.compile'd function re-created "
			 "per step; move it out of the loop or keep only detached values."),
		"Step %s grows by %s per iteration: from %s to %s over %d steps (x%.1f)",
		by_cpu ? "CPU time" : "time", pp_fmt_dur(s, sizeof s, t.ts_slope),
		pp_fmt_dur(a, sizeof a, t.start), pp_fmt_dur(b, sizeof b, t.end), n, t.ratio);
	if (by_cpu)
		diag_evidence(f, "The wall time per step shows no trend beyond its noise (the machine was "
				 "busy); the fit below is of the CPU time per step (step.cpu_ns). ");
	diag_evidence(f,
		      "%d steady steps (the first step excluded). Theil-Sen fit: %s at the first "
		      "steady step, %s at the last (x%.2f), slope %s/iteration. Mann-Kendall: "
		      "tau=%.2f, z=%.1f, p=%.2g (increasing). Least squares: slope %s/iteration, "
		      "t=%.1f, p=%.2g, R2=%.2f. Growth %.1fx the noise around the fit; last quarter of the "
		      "steps %.1fx the first. Median of the first %d steps %s, of the last %d %s. Extra "
		      "time from the growth: %.0f%% of the step time.",
		      n, a, b, t.ratio, s, t.mk.tau, t.mk.z, t.mk.p_up,
		      pp_fmt_dur(ls, sizeof ls, t.ls.slope), t.ls.t, t.ls.p_two_sided, t.ls.r2, t.snr,
		      t.q_ratio, k,
		      pp_fmt_dur(m1, sizeof m1, first_med), k, pp_fmt_dur(m2, sizeof m2, last_med),
		      sum > 0 ? 100.0 * excess / sum : 0);
	if (!isnan(work))
		diag_evidence(f,
			      " CPU time per step (step.cpu_ns, the process's): median %s in the first "
			      "%d steps, %s in the last %d; its fitted change is %.0f%% of the wall "
			      "time's.",
			      pp_fmt_dur(c1, sizeof c1, cpu_first), k, pp_fmt_dur(c2, sizeof c2, cpu_last),
			      k, t.end > t.start ? 100.0 * work / (t.end - t.start) : 0);
	diag_growth_causes(r, f);
	free(y);
}

/* What a PyTorch program's first step pays for, by the kind that dominates
 * it; NULL where first_step_fix's text holds for both. */
static const char *first_step_fix_torch(int kind)
{
	switch (kind) {
	case PP_COMPILE:
		return "torch.compile (Dynamo capture, AOTAutograd, Inductor code generation and the "
		       "C++ compile) or TorchScript's profiling runs compile on the first calls: run "
		       "one warm-up step before the measured loop, and keep the Inductor cache "
		       "(TORCHINDUCTOR_CACHE_DIR) on persistent storage so later processes reuse it.";
	case PP_OPTIMIZER_SETUP:
		return "The optimizer creates its state lazily on the first optimizer.step() (Adam's "
		       "exp_avg and exp_avg_sq, momentum buffers): a one-time cost; run one warm-up "
		       "step before the measured loop, or leave the first step out of timings.";
	case PP_MEMORY_ALLOC:
		return "PyTorch's caching allocator takes its memory from the system during the first "
		       "step and reuses it afterwards: run one warm-up step with the real batch shape "
		       "before the measured loop, and keep shapes fixed so it is not paid again.";
	case PP_GRAPH_BUILD:
	case PP_GRADIENT_BUILD:
	case PP_SHAPE_INFERENCE:
	case PP_MODEL_BUILD:
		return "Build the model (modules, parameters, lazy modules such as nn.LazyLinear) "
		       "before the loop and run one warm-up step with the real input shapes, so the "
		       "first measured step only computes.";
	case PP_FORWARD:
	case PP_BACKWARD:
		return "The first forward and backward pay one-time costs: cuDNN autotuning "
		       "(torch.backends.cudnn.benchmark) or oneDNN primitive creation for each new "
		       "shape, lazy module initialisation, kernel loading. Run one warm-up step with "
		       "the real shapes before the measured loop, and keep shapes fixed.";
	case PP_DATA_WAIT:
		return "The first batch waits for the DataLoader's workers to start (each one imports "
		       "the program and builds its copy of the dataset): keep the dataset's "
		       "construction light, use persistent_workers=True so later epochs reuse the "
		       "workers, and start the loader before the measured loop.";
	case PP_DEVICE_INIT:
		return "CUDA context creation and module loading happen at the first GPU call: "
		       "initialise the device before the loop (torch.cuda.init() or a warm-up step), "
		       "and use a PyTorch build with kernels for the GPU's architecture so no PTX "
		       "JIT runs.";
	case -1:
		return "Run one warm-up step outside the measured loop: the first step pays one-time "
		       "set-up (optimizer state, torch.compile, cuDNN/oneDNN autotuning, DataLoader "
		       "worker start-up, CUDA context).";
	}
	return NULL;
}

static const char *first_step_fix(const diag_run *r, int kind)
{
	const char *t = r->torch ? first_step_fix_torch(kind) : NULL;
	if (t)
		return t;
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
	/* a first step that is mostly torch.compile has its own finding */
	if (n < 2 || diag_has(c, "first_step_compile"))
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
	/* Below 3x is within what a warm cache explains; 0.2 ms guards against
	 * large ratios of microsecond-scale steps, which cost nobody anything. */
	if (ratio < 3.0 || first - med < 200e3)
		return;
	/* Breakdown: self time per kind of everything inside the first step. */
	int64_t by_kind[PP_KIND_COUNT] = {0};
	int64_t tracked = 0;
	for (int i = 0; i < r->spans.n; i++) {
		if (r->step_of[i] != 0)
			continue;
		/* A free-form span (a compile pass, say) counts for the phase
		 * around it. */
		int k = r->attr_kind[i];
		if (k == PP_STEP || k == PP_FIRST_STEP)
			k = PP_SPAN;
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
	double share = r->total_ns > 0 ? (first - med) / (double)r->total_ns : 0;
	/* A ratio alone is no claim: a fixed program's first step still runs
	 * the plan once (20 ms against 0.2 ms steps is 100x and nothing to win).
	 * Moderate needs the extra time to reach 100 ms, high 0.5 s and a
	 * visible part of the run; below, the finding is information. */
	int sev = diag_sev_for_win(ratio >= 5.0 && share >= 0.02 ? DIAG_HIGH : DIAG_MODERATE,
				   first - med);
	/* Under 2% of the run (a framework's lazy first-call set-up: torch 2's
	 * first forward and Adam's state, 120 ms of a 10.6 s run, 1.1%, beside
	 * a busy machine) it is worth knowing, not worth fixing: a warm-up step
	 * moves that time, it does not remove it. */
	if (share < 0.02)
		sev = DIAG_INFO;
	pp_finding *f;
	/* The first step waiting for its first batch is the loader starting
	 * (worker processes forked, their first batches fetched), paid once per
	 * pass over the loader: no warm-up step removes it. */
	int64_t data = by_kind[PP_DATA_WAIT] + by_kind[PP_DATA_FETCH] + by_kind[PP_DATA_COLLATE];
	if (r->torch && (top == PP_DATA_WAIT || top == PP_DATA_FETCH || top == PP_DATA_COLLATE) &&
	    (double)data >= untracked) {
		int workers = diag_loader_workers(r);
		char fix[512];
		if (workers > 0) {
			sev = DIAG_INFO;
			snprintf(fix, sizeof fix,
				 "This is the DataLoader's %d worker%s starting (processes forked, their "
				 "first batches fetched), paid once per pass over the loader, not by the "
				 "step's own work. persistent_workers=True starts them once per run "
				 "instead of once per epoch.",
				 workers, workers == 1 ? "" : "s");
		} else {
			snprintf(fix, sizeof fix,
				 "The first batch takes longer to load than the later ones (files read "
				 "for the first time, a dataset or cache built lazily): prepare the data "
				 "before the loop, or load it in DataLoader workers (num_workers) so the "
				 "loop does not wait for it.");
		}
		f = diag_emit(c, "first_step_slow", sev, share, fix,
			      "First step takes %.1fx the median step (%s vs %s); waiting for the "
			      "first batch is %.0f%% of it",
			      ratio, pp_dur(first).s, pp_dur(med).s, 100.0 * data / first);
		pp_fmt_dur(fs, sizeof fs, first);
		pp_fmt_dur(ms, sizeof ms, med);
	} else if (top >= 0 && (double)by_kind[top] >= untracked) {
		f = diag_emit(c, "first_step_slow", sev, share, first_step_fix(r, top),
			      "First step takes %.1fx the median step (%s vs %s); %s is %.0f%% of it",
			      ratio, pp_fmt_dur(fs, sizeof fs, first), pp_fmt_dur(ms, sizeof ms, med),
			      diag_kind_word(r, top), 100.0 * by_kind[top] / first);
	} else {
		f = diag_emit(c, "first_step_slow", sev, share, first_step_fix(r, -1),
			      "First step takes %.1fx the median step (%s vs %s), mostly outside "
			      "recorded phases",
			      ratio, pp_fmt_dur(fs, sizeof fs, first), pp_fmt_dur(ms, sizeof ms, med));
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
		diag_evidence(f, "%s %s %s (%.0f%%", shown ? "," : "", diag_kind_word(r, k),
			      pp_fmt_dur(ts, sizeof ts, (double)left[k]), 100.0 * left[k] / first);
		if (k != PP_SPAN)
			diag_evidence(f, "; %s per later step", pp_fmt_dur(ts, sizeof ts, (double)steady / n));
		diag_evidence(f, ")");
		left[k] = 0;
		shown++;
	}
	diag_evidence(f, "%s untracked %s (%.0f%%).", shown ? "," : "",
		      pp_fmt_dur(ts, sizeof ts, untracked), 100.0 * untracked / first);
	diag_first_step_causes(r, f);
}

void rule_session_per_iteration(diag_ctx *c)
{
	const diag_run *r = c->run;
	int n_phases = 0;
	int64_t t_all = diag_kind_time(r, PP_SESSION_CREATE, DIAG_ANYWHERE, &n_phases);
	char ta[32], tm[32];
	if (r->n_steps > 0) {
		/* Iteration slots (a step and the gap after it) from the second on:
		 * the first step may create a session lazily. Sessions created
		 * between steps count: an iteration may be several runs. */
		int n_loop = 0, closes = 0, in_steps = 0;
		int64_t t_loop = 0, t_close = 0;
		int iters = r->n_steps - 1;
		int slots = diag_slots_with(r, PP_SESSION_CREATE, 1, &n_loop, &t_loop);
		if (slots < 3 || slots * 10 < iters)
			return;
		diag_steps_with(r, PP_SESSION_CREATE, 1, &in_steps, NULL);
		diag_slots_with(r, PP_SESSION_CLOSE, 1, &closes, &t_close);
		int64_t loop_ns = r->steps[r->n_steps - 1].end_ns - r->steps[1].start_ns;
		double share = loop_ns > 0 ? (double)t_loop / loop_ns : 0;
		pp_finding *f = diag_emit(
			c, "session_per_iteration", share >= 0.2 ? DIAG_HIGH : DIAG_MODERATE,
			diag_run_share(r, (double)t_loop),
			DIAG_SAY(r,
				 "Create the session (and the variables) once before the loop and reuse "
				 "it; run the initializer once. A new session on a growing default graph "
				 "pays for the whole graph every time.",
				 "Create the model, the optimizer and any runtime context (a process "
				 "group, a compiled function, a profiler) once before the loop and reuse "
				 "them: re-creating them every step pays their set-up each time and "
				 "throws away their state."),
			DIAG_SAY(r, "A new session is created in %d of %d iterations of the step loop",
				 "Runtime set-up runs again in %d of %d iterations of the step loop"),
			slots, iters);
		diag_evidence(f, "%d %s phases after the first step (%d inside steps, %d "
				 "between them), %s in total (%s each on average, %.0f%% of the loop's "
				 "time)",
			      n_loop, diag_kind_word(r, PP_SESSION_CREATE), in_steps, n_loop - in_steps,
			      pp_fmt_dur(ta, sizeof ta, (double)t_loop),
			      pp_fmt_dur(tm, sizeof tm, (double)t_loop / n_loop), 100 * share);
		if (closes)
			diag_evidence(f, "; %d %s phases, %s", closes, diag_kind_word(r, PP_SESSION_CLOSE),
				      pp_fmt_dur(ta, sizeof ta, (double)t_close));
		diag_evidence(f, ".");
		return;
	}
	/* No step loop recorded: many sessions in one process is the signal. */
	if (n_phases < 10)
		return;
	double share = r->total_ns > 0 ? (double)t_all / r->total_ns : 0;
	pp_finding *f = diag_emit(
		c, "session_per_iteration", share >= 0.2 ? DIAG_HIGH : DIAG_MODERATE, share,
		DIAG_SAY(r, "Create the session once and reuse it for every run.",
			 "Set up the model and its runtime context once and reuse them for every "
			 "call."),
		DIAG_SAY(r, "%d sessions are created in one run",
			 "Runtime set-up runs %d times in one run"),
		n_phases);
	diag_evidence(f, "%d %s phases, %s in total (%.0f%% of the run); no step "
			 "phases were recorded, so the loop itself is not visible.",
		      n_phases, diag_kind_word(r, PP_SESSION_CREATE),
		      pp_fmt_dur(ta, sizeof ta, (double)t_all), 100 * share);
}

/* ---- graph growth ---- */

typedef struct snap {
	char label[64];
	int64_t version, n_nodes, ts;
} snap;
typedef struct snaps {
	snap *v;
	int n, cap;
} snaps;

/* The run's snapshots by (label, time, version). */
static void load_snaps(const diag_run *r, snaps *s)
{
	memset(s, 0, sizeof *s);
	pp_graph_info *g = NULL;
	int n = 0;
	if (pp_store_graphs(r->st, r->run_id, 1, &g, &n) != 0 || n == 0) {
		free(g);
		return;
	}
	s->v = malloc((size_t)n * sizeof *s->v);
	if (s->v) {
		for (int i = 0; i < n; i++) {
			snap *p = &s->v[i];
			snprintf(p->label, sizeof p->label, "%.63s", g[i].label);
			p->version = g[i].version;
			p->n_nodes = g[i].n_nodes;
			p->ts = g[i].ts_ns;
		}
		s->n = s->cap = n;
	}
	free(g);
}

void rule_graph_grows(diag_ctx *c)
{
	const diag_run *r = c->run;
	int signals = 0;
	double growth = 1; /* last/first node count, the largest seen */
	char ev[3][320] = {"", "", ""};

	/* (a) snapshots of one graph label with rising node counts. With a step
	 * loop only the loop counts (after the first step), plus the last
	 * snapshot before it as the baseline: building a model in stages
	 * before the loop is not growth. */
	snaps s;
	load_snaps(r, &s);
	if (r->n_steps >= 2) {
		int64_t loop = r->steps[1].start_ns;
		int k = 0;
		for (int i = 0; i < s.n; i++) {
			int next_same = i + 1 < s.n && strcmp(s.v[i + 1].label, s.v[i].label) == 0;
			/* keep in-loop ones, and the last pre-loop one of its label */
			if (s.v[i].ts >= loop || !next_same || s.v[i + 1].ts >= loop)
				s.v[k++] = s.v[i];
		}
		s.n = k;
	}
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

	/* (c) graph_build phases in the loop: inside or between steps, in
	 * iteration slots after the first (which may build lazily) */
	int iters = r->n_steps - 1, nb = 0;
	int64_t t_build = 0;
	/* ops built while tracing a function go to the function's graph */
	int with = diag_slots_with_ex(r, PP_GRAPH_BUILD, PP_RETRACE, 1, &nb, &t_build);
	int64_t loop_ns = r->n_steps > 1 ? r->steps[r->n_steps - 1].end_ns - r->steps[1].start_ns : 0;
	if (iters >= 3 && with >= 3 && with * 10 >= iters) {
		char t[32];
		snprintf(ev[2], sizeof ev[2],
			 "%d %s phases in %d of %d iterations after the first step, %s in "
			 "total (%.0f%% of the loop's time)",
			 nb, diag_kind_word(r, PP_GRAPH_BUILD), with, iters,
			 pp_fmt_dur(t, sizeof t, (double)t_build),
			 loop_ns > 0 ? 100.0 * t_build / loop_ns : 0);
		signals++;
	}
	if (!signals)
		return;

	/* What the growth costs inside the loop: building, re-validating and
	 * recompiling the larger graph. */
	int64_t t_shape = 0, t_comp = 0;
	diag_slots_with(r, PP_SHAPE_INFERENCE, 1, NULL, &t_shape);
	diag_slots_with(r, PP_COMPILE, 1, NULL, &t_comp);
	int64_t cost = t_build + t_shape + t_comp;
	double share = loop_ns > 0 ? (double)cost / loop_ns : 0;
	int sev = (growth >= 2.0 || share >= 0.2) ? DIAG_HIGH : DIAG_MODERATE;
	pp_finding *f;
	const char *fix = DIAG_SAY(
		r,
		"Build the graph once before the loop and only run it inside; finalize "
		"the graph so an accidental op creation raises an error "
		"(TF1: tf.get_default_graph().finalize()), or use a traced function.",
		"Keep what the model computes fixed across iterations: create modules, parameters and "
		"hooks before the loop, detach tensors carried from one step to the next so the "
		"autograd graph does not chain across iterations, and keep input shapes and types "
		"stable so a torch.compile'd or scripted model reuses its captured graph.");
	if (ev[0][0] || ev[1][0])
		f = diag_emit(c, "graph_grows", sev, diag_run_share(r, (double)cost), fix,
			      DIAG_SAY(r, "The graph grows between runs (x%.1f nodes)",
				       "The recorded graph grows between iterations (x%.1f nodes)"),
			      growth);
	else
		f = diag_emit(c, "graph_grows", sev, diag_run_share(r, (double)cost), fix,
			      DIAG_SAY(r, "The graph is built again in %d of %d iterations",
				       "Graph construction repeats in %d of %d iterations"),
			      with, iters);
	int first = 1;
	for (int i = 0; i < 3; i++)
		if (ev[i][0]) {
			diag_evidence(f, "%s%s", first ? "" : "; ", ev[i]);
			first = 0;
		}
	diag_evidence(f, DIAG_SAY(r, ". Graph build, shape inference and compile after the first "
				     "step: %.0f%% of the loop's time.",
				  ". Graph construction, shape propagation and compilation after the "
				  "first step: %.0f%% of the loop's time."),
		      100 * share);
}

/* ---- allocation counts per step ---- */

/* Samples placed on the step loop: a sample's position is the index of the
 * last step that ended at or before it; several samples at one position
 * keep the last. Only positions >= from are kept. Returns the count. */
static int series_positions(const diag_run *r, const diag_series *s, int from, int *pos, double *val)
{
	int m = 0;
	for (int k = 0; k < s->n; k++) {
		int lo = 0, hi = r->n_steps - 1, p = -1;
		while (lo <= hi) {
			int mid = (lo + hi) / 2;
			if (r->steps[mid].end_ns <= s->rows[k].ts_ns) {
				p = mid;
				lo = mid + 1;
			} else {
				hi = mid - 1;
			}
		}
		if (p < from)
			continue;
		if (m > 0 && pos[m - 1] == p)
			m--;
		pos[m] = p;
		val[m++] = s->rows[k].value;
	}
	return m;
}

/* Per-step rates of a cumulative counter from step s0 on: between two
 * consecutive sample positions, the increase divided by the steps between
 * them. Works whether the counter is emitted every step or every k steps.
 * *steps_pos gets the steps covered by a positive rate, *steps_cov all the
 * steps covered. */
static int per_step_rates(const diag_run *r, const diag_series *s, int s0, double *out,
			  int *steps_pos, int *steps_cov)
{
	int *pos = malloc(((size_t)s->n + 1) * sizeof *pos);
	double *val = malloc(((size_t)s->n + 1) * sizeof *val);
	int m = 0, covered = 0, positive = 0;
	if (pos && val) {
		int np = series_positions(r, s, s0 - 1, pos, val);
		for (int k = 1; k < np; k++) {
			int steps = pos[k] - pos[k - 1];
			double rate = (val[k] - val[k - 1]) / steps;
			out[m++] = rate;
			covered += steps;
			if (rate > 0)
				positive += steps;
		}
	}
	free(pos);
	free(val);
	if (steps_pos)
		*steps_pos = positive;
	if (steps_cov)
		*steps_cov = covered;
	return m;
}

/* One allocator's counters: the canonical alloc.* set, or the runtime's
 * flow.<name>.* set (allocs, regions, bytes_in_use, alloc_ns,
 * fragmentation). A "malloc" allocator gets every block from the system. */
typedef struct alloc_names {
	char label[64];
	char count[96], sys[96], inuse[96], time[96], frag[96];
	int all_system;
} alloc_names;

static void check_allocator(diag_ctx *c, const alloc_names *an)
{
	const diag_run *r = c->run;
	/* Steady state starts after the first step and a tenth of warm-up. */
	int s0 = r->n_steps / 10 > 2 ? r->n_steps / 10 : 2;
	diag_series cnt, sys, inuse, tns, frag;
	diag_counter(r, an->count, &cnt);
	diag_counter(r, an->all_system ? an->count : an->sys, &sys);
	diag_counter(r, an->inuse, &inuse);
	diag_counter(r, an->time, &tns);
	diag_counter(r, an->frag, &frag);
	size_t cap = (size_t)r->n_steps + (size_t)cnt.n + (size_t)sys.n + (size_t)inuse.n +
		     (size_t)tns.n + 1;
	double *d = malloc(cap * sizeof *d), *e = malloc(cap * sizeof *e);
	int *ip = malloc(cap * sizeof *ip);
	char ev[4][300] = {"", "", "", ""};
	int why = 0, m = 0;
	double ratio = 1, share = 0;
	char b1[32], b2[32];
	if (!d || !e || !ip)
		goto out;
	if (cnt.n >= 2) {
		m = per_step_rates(r, &cnt, s0, d, NULL, NULL);
		trend t;
		trend_fit(d, m, &t);
		double med = diag_median(d, m), sig = diag_robust_sigma(d, m);
		double lo = m ? d[0] : 0, hi = lo;
		for (int i = 1; i < m; i++) {
			lo = d[i] < lo ? d[i] : lo;
			hi = d[i] > hi ? d[i] : hi;
		}
		if (trend_grows(&t, GROW_MODERATE)) {
			snprintf(ev[0], sizeof ev[0],
				 "allocations per step rise from %.0f to %.0f over the steady steps "
				 "(Mann-Kendall p=%.2g on %d points)",
				 t.start, t.end, t.mk.p_up, m);
			ratio = t.ratio;
			why++;
		} else if (m >= 6 && med > 0 && sig / med >= 0.25 && hi - lo >= 2) {
			snprintf(ev[0], sizeof ev[0],
				 "allocations per step vary: median %.0f, min %.0f, max %.0f, robust "
				 "spread %.0f%% (%d points)",
				 med, lo, hi, 100 * sig / med, m);
			why++;
		}
	}
	if (sys.n >= 2) {
		int pos = 0, cov = 0;
		int ms = per_step_rates(r, &sys, s0, e, &pos, &cov);
		if (ms > 0 && cov >= 3 && 2 * pos >= cov) {
			snprintf(ev[1], sizeof ev[1],
				 "%d of %d steady steps still take memory from the system (median %.1f "
				 "system allocations per step%s)",
				 pos, cov, diag_median(e, ms),
				 an->all_system ? ": a malloc allocator takes every block from it" : "");
			why++;
		}
	}
	if (inuse.n >= 2) {
		int mi = series_positions(r, &inuse, s0, ip, e);
		trend t;
		trend_fit(e, mi, &t);
		if (trend_grows(&t, GROW_MODERATE) && t.end - t.start >= 1048576.0) {
			snprintf(ev[2], sizeof ev[2],
				 "bytes in use at step end grow from %s to %s (Mann-Kendall p=%.2g)",
				 pp_fmt_bytes(b1, sizeof b1, t.start), pp_fmt_bytes(b2, sizeof b2, t.end),
				 t.mk.p_up);
			if (t.ratio > ratio)
				ratio = t.ratio;
			why++;
		}
	}
	if (!why)
		goto out;
	/* Cost: time in the allocator during steady steps, when counted. */
	if (tns.n >= 2) {
		int cov = 0;
		int mt = per_step_rates(r, &tns, s0, e, NULL, &cov);
		double per_step = diag_median(e, mt);
		double step_med = 0;
		for (int i = s0; i < r->n_steps; i++)
			e[i - s0] = (double)(r->steps[i].end_ns - r->steps[i].start_ns);
		step_med = diag_median(e, r->n_steps - s0);
		if (mt > 0 && step_med > 0) {
			share = per_step / step_med;
			snprintf(ev[3], sizeof ev[3],
				 "time in the allocator %.1f%% of a median steady step", 100 * share);
		}
	}
	int sev = (ratio >= GROW_HIGH || share >= 0.2) ? DIAG_HIGH : DIAG_MODERATE;
	int64_t steady_ns = 0;
	for (int i = s0; i < r->n_steps; i++)
		steady_ns += r->steps[i].end_ns - r->steps[i].start_ns;
	pp_finding *f = diag_emit(
		c, "alloc_count_not_flat", sev, diag_run_share(r, share * (double)steady_ns),
		DIAG_SAY(r,
			 "Reuse memory across steps: use the arena (BFC-style) allocator, keep tensor "
			 "shapes fixed (pad or bucket batch sizes), reserve the arena up front; if bytes "
			 "in use keep growing, something holds tensors across steps.",
			 "Reuse memory across steps: keep tensor shapes fixed (pad or bucket batch "
			 "sizes) so the caching allocator reuses its blocks, write into preallocated "
			 "tensors (out= arguments, in-place ops), avoid per-step .cpu()/.numpy() copies "
			 "and lists of tensors; if bytes in use keep growing, something holds tensors "
			 "across steps."),
		"Allocations%s%s%s are not flat across steady steps", an->label[0] ? " of '" : "",
		an->label, an->label[0] ? "'" : "");
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
	diag_evidence(f, " (counters %s%s).", an->count, an->all_system ? "" : ", ...");
out:
	free(cnt.rows);
	free(sys.rows);
	free(inuse.rows);
	free(tns.rows);
	free(frag.rows);
	free(d);
	free(e);
	free(ip);
}

void rule_alloc_count_not_flat(diag_ctx *c)
{
	const diag_run *r = c->run;
	if (r->n_steps < 6)
		return;
	char **names = pp_store_counter_names(r->st, r->run_id);
	for (char **p = names; p && *p; p++) {
		alloc_names an;
		memset(&an, 0, sizeof an);
		size_t l = strlen(*p);
		if (strcmp(*p, "alloc.count") == 0) {
			snprintf(an.count, sizeof an.count, "alloc.count");
			snprintf(an.sys, sizeof an.sys, "alloc.sys_count");
			snprintf(an.inuse, sizeof an.inuse, "alloc.bytes_in_use");
			snprintf(an.time, sizeof an.time, "alloc.time_ns");
			snprintf(an.frag, sizeof an.frag, "alloc.fragmentation");
		} else if (strncmp(*p, "flow.", 5) == 0 && l > 12 && l < 60 &&
			   strcmp(*p + l - 7, ".allocs") == 0) {
			int nl = (int)(l - 12);
			snprintf(an.label, sizeof an.label, "%.*s", nl, *p + 5);
			snprintf(an.count, sizeof an.count, "%s", *p);
			snprintf(an.sys, sizeof an.sys, "flow.%s.regions", an.label);
			snprintf(an.inuse, sizeof an.inuse, "flow.%s.bytes_in_use", an.label);
			snprintf(an.time, sizeof an.time, "flow.%s.alloc_ns", an.label);
			snprintf(an.frag, sizeof an.frag, "flow.%s.fragmentation", an.label);
			an.all_system = strstr(an.label, "malloc") != NULL;
		} else {
			continue;
		}
		check_allocator(c, &an);
	}
	pp_store_free_names(names);
}

/* ---- a phase that repeats and gets slower each time ---- */

typedef struct tdur {
	int64_t start;
	double dur;
} tdur;
static int cmp_tdur(const void *a, const void *b)
{
	int64_t x = ((const tdur *)a)->start, y = ((const tdur *)b)->start;
	return (x > y) - (x < y);
}

/* The repeated-initialisation pattern needs no step loop: each
 * variable_init (or session_create…) takes longer than the one before.
 * Only kinds whose repetition means "once per iteration" are tested; a
 * model build creating hundreds of ops is not an iteration. */
void rule_repeated_phase_grows(diag_ctx *c)
{
	static const int kinds[] = {PP_VARIABLE_INIT, PP_SESSION_CREATE, PP_SESSION_CLOSE,
				    PP_COMPILE,       PP_WEIGHT_LOAD,    PP_DATA_TRANSFER};
	const diag_run *r = c->run;
	tdur *v = malloc(((size_t)r->spans.n + 1) * sizeof *v);
	double *y = malloc(((size_t)r->spans.n + 1) * sizeof *y);
	if (!v || !y)
		goto out;
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		int n = 0;
		for (int i = 0; i < r->spans.n; i++) {
			const pp_span_row *s = &r->spans.rows[i];
			if (s->kind == kinds[k] && r->outer[i] && diag_span_closed(s))
				v[n++] = (tdur){s->start_ns, (double)diag_span_dur(s)};
		}
		if (n < 9)
			continue;
		qsort(v, (size_t)n, sizeof *v, cmp_tdur);
		double sum = 0;
		for (int i = 1; i < n; i++) {
			y[i - 1] = v[i].dur; /* the first is warm-up, as for steps */
			sum += v[i].dur;
		}
		trend t;
		trend_fit(y, n - 1, &t);
		if (!trend_grows(&t, GROW_MODERATE))
			continue;
		double excess = t.ts_slope * (double)(n - 1) * (n - 2) / 2;
		const char *kn = diag_kind_word(r, kinds[k]);
		char a[32], b[32], s[32], tot[32];
		pp_finding *f = diag_emit(
			c, "repeated_phase_grows", t.ratio >= GROW_HIGH ? DIAG_HIGH : DIAG_MODERATE,
			r->total_ns > 0 ? excess / r->total_ns : 0,
			DIAG_SAY(r,
				 "Something the phase works on grows with every repetition: typically a "
				 "default graph that gains variables and init ops each time (a new "
				 "session must re-validate all of it). Create variables and the "
				 "initializer once, reuse one session, or reset the graph between "
				 "repetitions.",
				 "Something the phase works on grows with every repetition: a model, "
				 "state dict or cache that gains entries each time it is built or "
				 "loaded, or a compiled function that accumulates guards and graphs. "
				 "Build and load once, reuse the objects, and drop what is no longer "
				 "needed between repetitions."),
			"Each %s takes longer than the last: from %s to %s over %d repetitions (x%.1f)",
			kn, pp_fmt_dur(a, sizeof a, t.start), pp_fmt_dur(b, sizeof b, t.end), n - 1,
			t.ratio);
		diag_evidence(f, "%d %s phases in time order (the first left out): Theil-Sen slope %s "
				 "per repetition, Mann-Kendall tau=%.2f, p=%.2g; least squares t=%.1f, "
				 "R2=%.2f. %s in total, %s of it from the growth.",
			      n - 1, kn, pp_fmt_dur(s, sizeof s, t.ts_slope), t.mk.tau, t.mk.p_up, t.ls.t,
			      t.ls.r2, pp_fmt_dur(tot, sizeof tot, sum),
			      pp_fmt_dur(a, sizeof a, excess));
	}
out:
	free(v);
	free(y);
}
