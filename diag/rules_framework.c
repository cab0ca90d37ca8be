/* rules_framework.c — rules over programs recorded from outside (Python
 * frameworks): memory growing per step, data starvation, slow weight load,
 * start-up dominated by imports; and what grows with a step time that
 * grows, or what a slow first step paid for, from the per-step counters
 * (step.allocs, step.alloc_bytes, step.rss_bytes, torch.hooks,
 * torch.graph_nodes). */
#include "diag_internal.h"
#include "diag_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A counter's value at the end of each step from `from` on (NAN where the
 * step has none of its own: a sample taken inside the step). */
static int at_step_ends(const diag_run *r, const diag_series *s, int from, double *y)
{
	int m = 0;
	for (int i = from; i < r->n_steps; i++) {
		int k = diag_series_index(s, r->steps[i].end_ns);
		y[m++] = k >= 0 && s->rows[k].ts_ns >= r->steps[i].start_ns ? s->rows[k].value : NAN;
	}
	return m;
}

/* Drops NANs in place; returns the new count. */
static int compact(double *y, int n)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		if (!isnan(y[i]))
			y[m++] = y[i];
	return m;
}

/* Steady-state series of a per-step counter: from the second step on. */
static int steady_series(const diag_run *r, const char *name, double **out)
{
	*out = NULL;
	if (r->n_steps < 2)
		return 0;
	diag_series s = {0};
	if (diag_counter(r, name, &s) != 0 || s.n == 0) {
		free(s.rows);
		return 0;
	}
	double *y = malloc((size_t)r->n_steps * sizeof *y);
	int m = 0;
	if (y)
		m = compact(y, at_step_ends(r, &s, 1, y));
	free(s.rows);
	*out = y;
	return m;
}

int diag_steady_values(const diag_run *r, const char *name, double *y)
{
	if (r->n_steps < 2)
		return 0;
	diag_series s = {0};
	int m = 0;
	if (diag_counter(r, name, &s) == 0 && s.n > 0) {
		at_step_ends(r, &s, 1, y);
		for (int i = 0; i < r->n_steps - 1; i++)
			m += !isnan(y[i]);
	}
	free(s.rows);
	return m;
}

typedef struct rise {
	double first, last;       /* medians of the first and last fifth */
	double slope;             /* Theil-Sen, per point */
	double p_up;              /* Mann-Kendall */
	int ups, n;               /* points above the previous one, points */
} rise;

/* A rising series: significant (Mann-Kendall p < 0.001), positive
 * Theil-Sen slope, rising in at least half the consecutive pairs or
 * never falling. */
static int rises(const double *y, int n, rise *o)
{
	memset(o, 0, sizeof *o);
	if (n < 8)
		return 0;
	double *x = malloc((size_t)n * sizeof *x);
	if (!x)
		return 0;
	int downs = 0;
	for (int i = 0; i < n; i++) {
		x[i] = i;
		if (i) {
			o->ups += y[i] > y[i - 1];
			downs += y[i] < y[i - 1];
		}
	}
	diag_mk mk;
	double icpt = 0;
	int ok = diag_mann_kendall(y, n, &mk) == 0 &&
		 diag_theil_sen(x, y, n, 600, &o->slope, &icpt) == 0;
	free(x);
	if (!ok)
		return 0;
	int k = n / 5 > 0 ? n / 5 : 1;
	o->first = diag_median(y, k);
	o->last = diag_median(y + n - k, k);
	o->p_up = mk.p_up;
	o->n = n;
	return mk.p_up < 0.001 && o->slope > 0 && o->last > o->first &&
	       (2 * o->ups >= n - 1 || downs == 0);
}

/* ---- memory growing per step ---- */

#define MEM_MIN_GROWTH (8.0 * 1048576)
#define MEM_MAX_JUMPS 2

/* Takes out of y (in place) the largest rises that stand alone: a rise is
 * a jump when it is at least MEM_MIN_GROWTH / 2, at least 4 times the
 * median step-to-step change and at least a third of what the series rose
 * in all; everything after it is lowered by it. A checkpoint reload or a
 * cache filled once is one such rise with flat memory before and after;
 * steady growth has no rise that stands out, so taking out two of its
 * rises leaves it growing. Returns how many were taken out; *at and *by
 * get the first one's step index (in y) and size. */
static int take_out_jumps(double *y, int n, int *at, double *by)
{
	*at = -1;
	*by = 0;
	if (n < 3)
		return 0;
	double *d = malloc((size_t)(n - 1) * sizeof *d);
	if (!d)
		return 0;
	int jumps = 0;
	for (; jumps < MEM_MAX_JUMPS; jumps++) {
		int k = -1;
		for (int i = 1; i < n; i++) {
			d[i - 1] = fabs(y[i] - y[i - 1]);
			if (k < 0 || y[i] - y[i - 1] > y[k] - y[k - 1])
				k = i;
		}
		double rise = y[k] - y[k - 1], total = y[n - 1] - y[0];
		double med = diag_median(d, n - 1);
		if (rise < MEM_MIN_GROWTH / 2 || rise < 4 * med || rise < total / 3)
			break;
		if (jumps == 0) {
			*at = k;
			*by = rise;
		}
		for (int i = k; i < n; i++)
			y[i] -= rise;
	}
	free(d);
	return jumps;
}

/* A level shift in a noisy series (a step allocating and freeing tens of
 * MiB moves resident memory by as much from one step to the next, so no
 * single rise stands out): the split, each side at least 8 steps, that a
 * step function fits best (least absolute deviation from each side's
 * median). It is a one-time jump when
 * that difference is at least MEM_MIN_GROWTH and neither side rises on its
 * own by half of it (a leak keeps rising on both sides of any split).
 * Returns the split's index, or -1; *by: the difference of medians. */
static int level_shift(const double *y, int n, double *by)
{
	*by = 0;
	int best = -1;
	double bd = 0, best_cost = INFINITY;
	int stride = n > 256 ? n / 128 : 1; /* medians per split: bounded */
	for (int k = 8; k <= n - 8; k += stride) {
		/* the split that a step function fits best (least absolute
		 * deviation from each side's median) */
		double ml = diag_median(y, k), mr = diag_median(y + k, n - k), cost = 0;
		for (int i = 0; i < n; i++)
			cost += fabs(y[i] - (i < k ? ml : mr));
		if (cost < best_cost) {
			best_cost = cost;
			bd = mr - ml;
			best = k;
		}
	}
	if (best < 0 || bd < MEM_MIN_GROWTH)
		return -1;
	rise a, b;
	if ((rises(y, best, &a) && a.slope * (best - 1) >= MEM_MIN_GROWTH / 2) ||
	    (rises(y + best, n - best, &b) && b.slope * (n - best - 1) >= MEM_MIN_GROWTH / 2))
		return -1;
	*by = bd;
	return best;
}

/* Names the sites holding the kept memory (the step_kept rows): the
 * sites whose live bytes rose over the steady steps, largest first.
 * Writes the top site into top (empty when none) and its per-step rate
 * into *rate. */
static void kept_sites(const diag_run *r, pp_finding *f, char *top, size_t cap, double *rate)
{
	top[0] = 0;
	*rate = 0;
	pp_kept_site *ks = NULL;
	int n = 0;
	int64_t from = r->n_steps > 1 ? r->steps[1].iteration : 0;
	if (pp_store_kept_sites(r->st, r->run_id, from, &ks, &n) != 0 || n == 0) {
		free(ks);
		return;
	}
	int said = 0;
	for (int i = 0; i < n && said < 3; i++) {
		if (ks[i].per_step_bytes < 4096)
			continue;
		char a[32], b[32];
		diag_evidence(f, "%s %s per step kept, allocated in %s (%s live at the last step, %lld "
				 "blocks)",
			      said ? ";" : " Held by (allocations alive at each step's end, by where "
					  "they were made):",
			      pp_fmt_bytes(a, sizeof a, ks[i].per_step_bytes), ks[i].site,
			      pp_fmt_bytes(b, sizeof b, (double)ks[i].last_bytes), (long long)ks[i].last_blocks);
		if (!said) {
			snprintf(top, cap, "%.*s", (int)cap - 1, ks[i].site);
			*rate = ks[i].per_step_bytes;
		}
		said++;
	}
	if (said)
		diag_evidence(f, ".");
	free(ks);
}

/* One memory series per step: what it is called and where it comes from. */
typedef struct mem_series {
	const char *rule, *counter, *noun;
	int host; /* the agent's allocation sites can name what keeps it */
} mem_series;

static void memory_growth(diag_ctx *c, const mem_series *m)
{
	const diag_run *r = c->run;
	double *y = NULL;
	int n = steady_series(r, m->counter, &y);
	if (n < 8) {
		free(y);
		return;
	}
	double first = y[0], last = y[n - 1];
	double *orig = malloc((size_t)n * sizeof *orig);
	if (!orig) {
		free(y);
		return;
	}
	memcpy(orig, y, (size_t)n * sizeof *y);
	int jump_at = -1;
	double jump = 0;
	int jumps = take_out_jumps(y, n, &jump_at, &jump);
	rise g;
	char a[32], b[32], s[32];
	int growing = rises(y, n, &g) && g.slope * (n - 1) >= MEM_MIN_GROWTH;
	double shift = 0;
	/* on the series as recorded: taking out a "jump" that was noise
	 * would leave a series that is neither */
	int shift_at = growing ? level_shift(orig, n, &shift) : -1;
	free(orig);
	if (!growing || shift_at >= 0) {
		/* no growth once the jumps are out, or a level shift with
		 * neither side rising: a one-time rise is worth a line, not a
		 * leak warning */
		int at = shift_at >= 0 ? shift_at : jump_at;
		double by = shift_at >= 0 ? shift : jump;
		if ((shift_at >= 0 || jumps == 1) && by >= MEM_MIN_GROWTH) {
			int step = (int)r->steps[1 + at].iteration;
			pp_finding *f = diag_emit(
				c, m->rule, DIAG_INFO, 0,
				"Nothing to fix if this is a checkpoint load or a cache filled once; "
				"memory that stays higher after it is what the step now keeps.",
				"%s rose once by %s at step %d, flat before and after", m->noun,
				pp_fmt_bytes(s, sizeof s, by), step);
			if (f)
				diag_evidence(f, "%s at the end of %d steady steps (the first left "
						 "out): %s before step %d, %s at the end; %s (a jump, not growth "
						 "per step).",
					      m->counter, n, pp_fmt_bytes(a, sizeof a, first), step,
					      pp_fmt_bytes(b, sizeof b, last),
					      shift_at >= 0 ? "the median after it is that much higher and "
							      "neither side rises on its own"
							    : "without that one rise the series does not grow");
		}
		free(y);
		return;
	}
	double growth = g.slope * (n - 1);
	double rel = first > 0 ? growth / first : 1;
	/* what holds it decides the fix: the autograd graph of a loss kept
	 * across steps, else the allocation site that keeps it */
	double *gn = NULL;
	int ng = steady_series(r, "torch.graph_nodes", &gn);
	rise gg;
	int graph = rises(gn, ng, &gg) && gg.last > gg.first;
	pp_finding *f = diag_emit(c, m->rule, rel >= 0.25 ? DIAG_HIGH : DIAG_MODERATE,
				  rel < 1 ? rel : 1, "", "%s grows by %s per step: from %s to %s over %d steps",
				  m->noun, pp_fmt_bytes(s, sizeof s, g.slope), pp_fmt_bytes(a, sizeof a, first),
				  pp_fmt_bytes(b, sizeof b, last), n);
	if (!f) {
		free(gn);
		free(y);
		return;
	}
	diag_evidence(f, "%s at the end of %d steady steps (the first left out): higher "
			 "than the step before in %d of %d, Theil-Sen slope %s per step, "
			 "Mann-Kendall p=%.2g; %.0f%% more than at the first steady step",
		      m->counter, n, g.ups, n - 1, s, g.p_up, 100 * rel);
	if (jumps)
		diag_evidence(f, " (besides %d one-time rise%s, the largest %s, left out)", jumps,
			      jumps > 1 ? "s" : "", pp_fmt_bytes(a, sizeof a, jump));
	double *ab = NULL;
	int na = m->host ? steady_series(r, "step.alloc_bytes", &ab) : 0;
	if (na > 0)
		diag_evidence(f, "; %s allocated per step (median)",
			      pp_fmt_bytes(a, sizeof a, diag_median(ab, na)));
	free(ab);
	if (graph)
		diag_evidence(f, "; the autograd graph grows with it: %.0f -> %.0f nodes", gg.first,
			      gg.last);
	free(gn);
	diag_evidence(f, ".");
	char top[160] = "";
	double rate = 0;
	if (m->host)
		kept_sites(r, f, top, sizeof top, &rate);
	if (graph)
		snprintf(f->fix, sizeof f->fix,
			 "Each step's autograd graph stays alive with its saved activations: a loss or an "
			 "output kept across steps with its graph (total_loss += loss) holds them. "
			 "Accumulate loss.item() or loss.detach() instead.");
	else if (top[0])
		snprintf(f->fix, sizeof f->fix,
			 "Tensors allocated in %s are kept across steps (%s per step): whatever holds them "
			 "(a list, dict or cache appended to every step, a hook's outputs) grows without "
			 "bound. Keep only what is needed (a float via .item(), a bounded deque), or "
			 "clear it each step; tensors stored for later use still need .detach().",
			 top, pp_fmt_bytes(a, sizeof a, rate));
	else
		snprintf(f->fix, sizeof f->fix,
			 "Something keeps each step's tensors alive: a list, dict or cache appended to every "
			 "step, a hook's outputs, or a tensor kept with its autograd graph. Keep only what "
			 "is needed (.item(), .detach(), a bounded deque) or clear it each step.");
	free(y);
}

void rule_memory_grows_per_step(diag_ctx *c)
{
	static const mem_series rss = {"memory_grows_per_step", "step.rss_bytes", "Resident memory", 1};
	memory_growth(c, &rss);
}

/* PyTorch's CUDA caching allocator: the bytes its tensors hold at each
 * step's end (torch.cuda.memory_allocated). A loss kept with its graph on
 * the GPU grows this while the host's memory stays flat. */
void rule_gpu_memory_grows_per_step(diag_ctx *c)
{
	static const mem_series gpu = {"gpu_memory_grows_per_step", "torch.cuda.allocated_bytes",
				       "GPU memory held by tensors", 0};
	memory_growth(c, &gpu);
}

/* ---- what grows with a growing step time (called by
 * rule_iteration_time_grows) and what a slow first step paid for ---- */

static const struct grower {
	const char *counter, *what;
} growers[] = {
	{"torch.hooks", "module hooks (a hook registered in every step runs once more each step)"},
	{"step.allocs", "allocations per step"},
	{"torch.graph_nodes", "autograd graph nodes"},
	{"step.alloc_bytes", "bytes allocated per step"},
};

int diag_growth_causes(const diag_run *r, pp_finding *f)
{
	int said = 0;
	for (size_t i = 0; i < sizeof growers / sizeof growers[0]; i++) {
		double *y = NULL;
		int n = steady_series(r, growers[i].counter, &y);
		rise g;
		if (rises(y, n, &g) && g.last >= 1.25 * g.first) {
			if (f)
				diag_evidence(f, "%s %s: %.0f -> %.0f over the steady steps (%s, rising "
						 "in %d of %d)",
					      said ? ";" : " Growing with it:", growers[i].what, g.first,
					      g.last, growers[i].counter, g.ups, n - 1);
			said++;
		}
		free(y);
	}
	if (said && f)
		diag_evidence(f, ".");
	return said;
}

void diag_first_step_causes(const diag_run *r, pp_finding *f)
{
	if (r->n_steps < 3)
		return;
	diag_series s = {0};
	if (diag_counter(r, "step.allocs", &s) != 0 || s.n == 0) {
		free(s.rows);
		return;
	}
	double *y = malloc((size_t)r->n_steps * sizeof *y);
	if (y) {
		at_step_ends(r, &s, 0, y);
		double first = y[0];
		int n = compact(y + 1, r->n_steps - 1);
		double med = diag_median(y + 1, n);
		if (!isnan(first) && n > 0 && first >= 2 * med + 100)
			diag_evidence(f, " Allocations: %.0f malloc calls in the first step, %.0f in "
					 "a median later step.",
				      first, med);
	}
	free(y);
	free(s.rows);
}

/* ---- data starvation ---- */

/* What the loader's workers did, from the worker runs the PyTorch data
 * adapter labels (run_meta torch.dataloader.worker, children of the run):
 * how many, and what one batch costs a worker. */
typedef struct loader_work {
	int workers;          /* num_workers of the loader (-1 unknown) */
	int runs;             /* worker runs found */
	int batches;          /* data_fetch phases in them */
	int64_t fetch_ns;     /* their time: one batch each, collate included */
	int64_t collate_ns;   /* the data_collate phases inside */
	double lo, hi;        /* the fastest and slowest worker's time per batch */
	char dataset[64];
} loader_work;

static void kind_sum(pp_store *st, int64_t run, int kind, int *n, int64_t *t)
{
	pp_span_list l = {0};
	if (pp_store_spans(st, run, kind, &l) == 0)
		for (int i = 0; i < l.n; i++)
			if (diag_span_closed(&l.rows[i])) {
				(*n)++;
				*t += diag_span_dur(&l.rows[i]);
			}
	pp_span_list_free(&l);
}

static int meta_int(pp_store *st, int64_t run, const char *key, int *out)
{
	char v[32];
	char *end;
	if (pp_store_run_meta(st, run, key, v, sizeof v) != 0)
		return -1;
	long x = strtol(v, &end, 10);
	if (end == v || x < 0 || x > 1 << 20)
		return -1;
	*out = (int)x;
	return 0;
}

static void loader_work_load(const diag_run *r, loader_work *w)
{
	memset(w, 0, sizeof *w);
	w->workers = -1;
	meta_int(r->st, r->run_id, "torch.dataloader.num_workers", &w->workers);
	pp_store_run_meta(r->st, r->run_id, "torch.dataloader.dataset", w->dataset, sizeof w->dataset);
	pp_run_info *runs = NULL;
	int n = 0;
	if (pp_store_runs(r->st, &runs, &n) != 0)
		n = 0;
	int most = 0;
	for (int i = 0; i < n; i++) {
		char v[64];
		if (runs[i].parent_run != r->run_id ||
		    pp_store_run_meta(r->st, runs[i].id, "torch.dataloader.worker", v, sizeof v) != 0)
			continue;
		int nw = 0;
		if (meta_int(r->st, runs[i].id, "torch.dataloader.num_workers", &nw) == 0 && nw > most)
			most = nw;
		if (w->runs == 0)
			pp_store_run_meta(r->st, runs[i].id, "torch.dataloader.dataset", w->dataset,
					  sizeof w->dataset);
		int c = 0, b = 0;
		int64_t t = 0;
		w->runs++;
		kind_sum(r->st, runs[i].id, PP_DATA_FETCH, &b, &t);
		kind_sum(r->st, runs[i].id, PP_DATA_COLLATE, &c, &w->collate_ns);
		if (b > 0) {
			double per = (double)t / b;
			if (w->batches == 0 || per < w->lo)
				w->lo = per;
			if (w->batches == 0 || per > w->hi)
				w->hi = per;
		}
		w->batches += b;
		w->fetch_ns += t;
	}
	free(runs);
	/* The worker runs say which loader had workers: the run's meta holds
	 * the last loader iterated (a validation loader without workers, say). */
	if (w->runs && most > 0)
		w->workers = most;
	if (w->runs == 0 && w->workers <= 0) {
		/* no workers: the main process fetches, inside its waits */
		int c = 0;
		kind_sum(r->st, r->run_id, PP_DATA_FETCH, &w->batches, &w->fetch_ns);
		kind_sum(r->st, r->run_id, PP_DATA_COLLATE, &c, &w->collate_ns);
	}
}

int diag_loader_workers(const diag_run *r)
{
	loader_work w;
	loader_work_load(r, &w);
	return w.workers;
}

/* The fix, sized from what the program already does: how long a batch
 * takes to produce (per worker) against how often the step takes one. */
static void starvation_fix(char *fix, size_t len, const loader_work *w, double per_step_ns,
			   char *evidence, size_t elen, int *keep_up)
{
	evidence[0] = 0;
	*keep_up = 0;
	if (w->batches == 0 || per_step_ns <= 0) {
		if (w->workers > 0)
			snprintf(fix, len,
				 "The loop waits for its data with %d DataLoader workers: raise num_workers "
				 "(one process each, within the CPU cores), keep them across epochs "
				 "(persistent_workers=True), make __getitem__ cheaper (decode or augment "
				 "once, ahead of training), and use pin_memory for a GPU.",
				 w->workers);
		else if (w->workers == 0)
			snprintf(fix, len,
				 "The main process loads every batch itself (num_workers=0): load batches "
				 "in worker processes (DataLoader num_workers=2 or more, "
				 "persistent_workers=True), make __getitem__ cheaper, and use pin_memory "
				 "for a GPU.");
		else
			snprintf(fix, len,
				 "The steps wait for their data: load batches in parallel (more loader "
				 "workers or threads), prefetch the next batches, move decoding and "
				 "augmentation out of the per-sample path or precompute them.");
		return;
	}
	double per_batch = (double)w->fetch_ns / w->batches;
	double collate = (double)w->collate_ns / w->batches;
	double get = per_batch - collate;
	int need = (int)ceil(per_batch / per_step_ns);
	if (need < 1)
		need = 1;
	char what[48] = "__getitem__";
	if (w->dataset[0])
		snprintf(what, sizeof what, "%.32s.__getitem__", w->dataset);
	if (w->workers > 0 && w->runs && per_batch <= 0.75 * per_step_ns * w->workers) {
		/* The workers make batches faster than the loop takes them: more
		 * of them would not help. */
		*keep_up = 1;
		snprintf(fix, len,
			 "The %d DataLoader workers keep up (%s per batch each, the step computes for "
			 "%s), so the wait is not their loading: it is the batch's way to the main "
			 "process (unpickling, shared memory; return tensors, not Python objects) or "
			 "the workers and the loop competing for the CPU cores (num_workers + 1 "
			 "processes busy at once); pin_memory helps a GPU.",
			 w->workers, pp_dur(per_batch).s, pp_dur(per_step_ns).s);
	} else if (w->workers > 0)
		snprintf(fix, len,
			 "%d worker%s each need %s per batch, the step consumes one every %s: use "
			 "num_workers >= %d (one process each, within the CPU cores; "
			 "persistent_workers=True keeps them across epochs), or make %s cheaper "
			 "(%s of each batch is fetching the samples, %s collating them).",
			 w->workers, w->workers == 1 ? "" : "s", pp_dur(per_batch).s, pp_dur(per_step_ns).s,
			 need > w->workers ? need : w->workers + 1, what, pp_dur(get).s, pp_dur(collate).s);
	else
		snprintf(fix, len,
			 "The main process loads every batch itself (num_workers=0): a batch takes %s, "
			 "the step computes for %s, so use DataLoader(num_workers=%d) or more "
			 "(persistent_workers=True), or make %s cheaper (%s of each batch is fetching "
			 "the samples, %s collating them).",
			 pp_dur(per_batch).s, pp_dur(per_step_ns).s, need < 2 ? 2 : need, what,
			 pp_dur(get).s, pp_dur(collate).s);
	if (w->runs)
		snprintf(evidence, elen,
			 " Workers: %d run%s of DataLoader workers (num_workers=%d) produced %d batches, "
			 "%s each (fetch %s, collate %s; %s to %s by worker); the step computes for %s "
			 "between waits.",
			 w->runs, w->runs == 1 ? "" : "s", w->workers, w->batches, pp_dur(per_batch).s,
			 pp_dur(get).s, pp_dur(collate).s, pp_dur(w->lo).s, pp_dur(w->hi).s,
			 pp_dur(per_step_ns).s);
	else
		snprintf(evidence, elen,
			 " The main process fetched %d batches, %s each (fetch %s, collate %s); the "
			 "step computes for %s between waits.",
			 w->batches, pp_dur(per_batch).s, pp_dur(get).s, pp_dur(collate).s,
			 pp_dur(per_step_ns).s);
}

/* The steps' own waits only: a step is an iteration, so the waits between
 * steps are another loop's (a validation pass) and are reported apart. */
void rule_data_starvation(diag_ctx *c)
{
	const diag_run *r = c->run;
	if (r->n_steps < 5)
		return;
	int n_in = 0;
	int64_t wait = diag_kind_time(r, PP_DATA_WAIT, DIAG_IN_STEADY, &n_in);
	int64_t steady = diag_steady_time(r);
	int with = diag_steps_with(r, PP_DATA_WAIT, 1, NULL, NULL);
	if (steady <= 0 || n_in < 4)
		return;
	double share = (double)wait / steady;
	if (share < 0.3)
		return;
	int n_out = 0;
	int64_t out = diag_kind_time(r, PP_DATA_WAIT, DIAG_OUTSIDE_STEPS, &n_out);
	int iters = r->n_steps - 1;
	loader_work w;
	loader_work_load(r, &w);
	char fix[512], more[400];
	int keep_up;
	starvation_fix(fix, sizeof fix, &w, (double)(steady - wait) / iters, more, sizeof more,
		       &keep_up);
	/* Workers that keep up leave no loading to fix: the wait is worth
	 * knowing, the claim "loader-bound" is not made. */
	int sev = keep_up ? DIAG_INFO
			  : diag_sev_for_win(share >= 0.6 ? DIAG_HIGH : DIAG_MODERATE, (double)wait);
	pp_finding *f = diag_emit(
		c, "data_starvation", sev,
		diag_run_share(r, (double)wait), fix,
		"Steps wait for data %.0f%% of the time (%s per step on average)", 100 * share,
		pp_dur((double)wait / iters).s);
	diag_evidence(f, "data_wait phases: %d inside %d of %d steady steps, %s of the %s "
			 "the steady steps take.",
		      n_in, with, iters, pp_dur((double)wait).s, pp_dur((double)steady).s);
	if (n_out)
		diag_evidence(f, " Not counted: %d data_wait phase%s outside the steps (%s: "
				 "validation, another loader).",
			      n_out, n_out == 1 ? "" : "s", pp_dur((double)out).s);
	diag_evidence(f, "%s", more);
}

/* ---- slow weight load ---- */

void rule_weight_load_slow(diag_ctx *c)
{
	const diag_run *r = c->run;
	int n = 0;
	int64_t t = diag_kind_time(r, PP_WEIGHT_LOAD, DIAG_ANYWHERE, &n);
	double share = diag_run_share(r, (double)t);
	if (n == 0 || t < 200000000 || share < 0.1)
		return;
	double bytes = 0;
	diag_series s = {0};
	if (diag_counter(r, "weight_load.bytes", &s) == 0)
		for (int i = 0; i < s.n; i++)
			bytes += s.rows[i].value;
	free(s.rows);
	char a[32], b[32];
	pp_finding *f = diag_emit(
		c, "weight_load_slow", share >= 0.3 ? DIAG_HIGH : DIAG_MODERATE, share,
		"Load weights without unpickling and copying: memory-map them (safetensors, or "
		"torch.load(mmap=True) from PyTorch 2.1), load straight onto the target device "
		"(map_location), load each checkpoint once, and keep them on local storage.",
		"Loading weights takes %s, %.0f%% of the run", pp_fmt_dur(a, sizeof a, (double)t),
		100 * share);
	diag_evidence(f, "%d weight_load phases, %s", n, a);
	if (bytes > 0)
		diag_evidence(f, ", %s (%.0f MB/s)", pp_fmt_bytes(b, sizeof b, bytes),
			      bytes / 1e6 / ((double)t / 1e9));
	diag_evidence(f, ".");
}

/* ---- start-up dominated by imports ---- */

void rule_import_startup(diag_ctx *c)
{
	const diag_run *r = c->run;
	int64_t su = r->startup_end_ns > 0 ? r->startup_end_ns : r->total_ns;
	int64_t total = 0;
	int top = -1, n = 0;
	for (int i = 0; i < r->spans.n; i++) {
		const pp_span_row *s = &r->spans.rows[i];
		if (s->kind != PP_IMPORT || !r->outer[i] || !diag_span_closed(s) || s->start_ns >= su)
			continue;
		total += diag_span_dur(s);
		n++;
		if (top < 0 || diag_span_dur(s) > diag_span_dur(&r->spans.rows[top]))
			top = i;
	}
	double share = su > 0 ? (double)total / su : 0;
	if (top < 0 || share < 0.5 || total < 300000000)
		return;
	/* Inside the slowest import: the import with the most self time and
	 * the slowest library load under it. */
	int self_imp = -1, lib = -1;
	for (int i = 0; i < r->spans.n; i++) {
		int p = i, under = 0;
		for (int d = 0; d < 256 && p >= 0; d++, p = r->parent[p])
			if (p == top) {
				under = 1;
				break;
			}
		if (!under)
			continue;
		const pp_span_row *s = &r->spans.rows[i];
		if (s->kind == PP_IMPORT && (self_imp < 0 || r->self_ns[i] > r->self_ns[self_imp]))
			self_imp = i;
		if (s->kind == PP_LIBRARY_LOAD &&
		    (lib < 0 || diag_span_dur(s) > diag_span_dur(&r->spans.rows[lib])))
			lib = i;
	}
	const pp_span_row *t = &r->spans.rows[top];
	char a[32], b[32], d[32];
	int sev = share >= 0.5 ? diag_sev_for_startup(r, DIAG_MODERATE, (double)total) : DIAG_INFO;
	pp_finding *f = diag_emit(
		c, "import_startup", sev, diag_run_share(r, (double)total),
		"Import what the program needs when it needs it: move heavy imports into the "
		"functions that use them (or use importlib.util.LazyLoader), avoid importing a "
		"framework only for a small helper, and keep short-lived tools free of it. "
		"python -X importtime shows the same tree.",
		"Imports take %.0f%% of start-up (%s); '%s' alone %s", 100 * share,
		pp_fmt_dur(a, sizeof a, (double)total), t->name ? t->name : "?",
		pp_fmt_dur(b, sizeof b, (double)diag_span_dur(t)));
	diag_evidence(f, "%d top-level imports before the first step, %s of %s of start-up",
		      n, a, pp_fmt_dur(d, sizeof d, (double)su));
	if (self_imp >= 0)
		diag_evidence(f, "; inside '%s' the most self time is in '%s' (%s)",
			      t->name ? t->name : "?",
			      r->spans.rows[self_imp].name ? r->spans.rows[self_imp].name : "?",
			      pp_fmt_dur(b, sizeof b, (double)r->self_ns[self_imp]));
	if (lib >= 0)
		diag_evidence(f, "; the slowest library it loads is %s (%s)",
			      r->spans.rows[lib].name ? r->spans.rows[lib].name : "?",
			      pp_fmt_dur(b, sizeof b, (double)diag_span_dur(&r->spans.rows[lib])));
	diag_evidence(f, ".");
}

/* ---- DDP: the gradient all-reduce that backward waits for ---- */

/* Outermost backward time inside step s. */
static int64_t step_backward_ns(const diag_run *r, int s)
{
	int64_t t = 0;
	for (int k = r->kind_at[PP_BACKWARD]; k < r->kind_at[PP_BACKWARD + 1]; k++) {
		int i = r->by_kind[k];
		if (r->step_of[i] == s && r->outer[i] && diag_span_closed(&r->spans.rows[i]))
			t += diag_span_dur(&r->spans.rows[i]);
	}
	return t;
}

/* The other ranks of this run's job, when this run is a rank: their
 * ddp.exposed_ns samples, one per step in step order (every rank runs the
 * same all-reduces, so the k-th samples are the same step). Returns how
 * many peers were loaded into peer[] (each freed by the caller); *world
 * gets the job's size (1 when the run is not a rank). -1: none of this
 * job's other ranks is in the database though it has some. */
typedef struct ddp_peer { pp_counter_row *rows; int n; } ddp_peer;
static int ddp_peers(const diag_run *r, ddp_peer **peer, int *world)
{
	*peer = NULL;
	*world = 1;
	pp_rank_run me;
	if (pp_store_rank_of(r->st, r->run_id, &me) != 0 || me.world_size <= 1)
		return 0;
	*world = me.world_size;
	pp_rank_run *all = NULL;
	int n = 0, m = 0;
	if (pp_store_rank_runs(r->st, &all, &n) != 0)
		return -1;
	ddp_peer *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
	for (int i = 0; p && i < n; i++) {
		if (all[i].run_id == r->run_id || strcmp(all[i].job, me.job) != 0)
			continue;
		if (pp_store_counter(r->st, all[i].run_id, "ddp.exposed_ns", &p[m].rows, &p[m].n) == 0 &&
		    p[m].n > 0)
			m++;
		else
			free(p[m].rows), p[m].rows = NULL;
	}
	free(all);
	if (!p || m + 1 < me.world_size) {
		for (int i = 0; p && i < m; i++)
			free(p[i].rows);
		free(p);
		return -1;
	}
	*peer = p;
	return m;
}

enum { DDP_EXPOSED, DDP_BUCKETS, DDP_COMM, DDP_BYTES, DDP_MAX, DDP_NSERIES };

/* Per-step counters of the torch.distributed adapter (a communication hook
 * that times DDP's bucket all-reduces, python/phaseprof/adapters/
 * torch_distributed.py): ddp.exposed_ns is the time from the launch of a
 * backward's last bucket (its gradients are all computed then) to the
 * completion of its last all-reduce, what backward waits for after its
 * computation. Judged over the steady steps that all-reduced (a step
 * inside no_sync() has 0 buckets): the median share of the step. */
void rule_ddp_comm_exposed(diag_ctx *c)
{
	const diag_run *r = c->run;
	if (r->n_steps < 6)
		return;
	static const char *const names[DDP_NSERIES] = {"ddp.exposed_ns", "ddp.buckets", "ddp.comm_ns",
						       "ddp.bytes", "ddp.bucket_max_bytes"};
	int n = r->n_steps - 1;
	double *v = calloc((size_t)n * (DDP_NSERIES + 5), sizeof *v);
	if (!v)
		return;
	double *y[DDP_NSERIES];
	for (int k = 0; k < DDP_NSERIES; k++)
		y[k] = v + (size_t)k * n;
	double *share = v + (size_t)DDP_NSERIES * n, *ex = share + n, *step = ex + n, *bw = step + n,
	       *comm = bw + n;
	if (diag_steady_values(r, names[DDP_EXPOSED], y[DDP_EXPOSED]) < 5) {
		free(v);
		return;
	}
	/* A rank that ends its backward before a slower one waits for it in
	 * the all-reduce: that wait is the straggler's (rank_straggler), not
	 * the communication's. Per step, the exposed time is the least of the
	 * job's ranks: the last to finish computing waits for the network
	 * only. Without the other ranks in the database it cannot be told
	 * apart: information, saying so. */
	ddp_peer *peer = NULL;
	int world = 1, np = ddp_peers(r, &peer, &world);
	diag_series own = {0};
	int64_t own_ex = 0;  /* this rank's own exposed time in the steps counted */
	if (np > 0 && diag_counter(r, names[DDP_EXPOSED], &own) == 0)
		for (int i = 0; i < n; i++) {
			const diag_step *st = &r->steps[i + 1];
			int k = diag_series_index(&own, st->end_ns);
			if (isnan(y[DDP_EXPOSED][i]) || k < 0 || own.rows[k].ts_ns < st->start_ns)
				continue;
			for (int j = 0; j < np; j++)
				if (k < peer[j].n && peer[j].rows[k].value < y[DDP_EXPOSED][i])
					y[DDP_EXPOSED][i] = peer[j].rows[k].value;
		}
	double *mine = calloc((size_t)n, sizeof *mine);
	if (mine && diag_steady_values(r, names[DDP_EXPOSED], mine) == 0)
		for (int i = 0; i < n; i++)
			mine[i] = NAN;
	free(own.rows);
	for (int j = 0; peer && j < np; j++)
		free(peer[j].rows);
	free(peer);
	for (int k = 1; k < DDP_NSERIES; k++)
		if (diag_steady_values(r, names[k], y[k]) == 0)
			for (int i = 0; i < n; i++)
				y[k][i] = NAN;
	int m = 0, nb_min = 0, nb_max = 0;
	double total_ex = 0, bytes = 0, biggest = 0;
	for (int i = 0; i < n; i++) {
		const diag_step *s = &r->steps[i + 1];
		double nb = y[DDP_BUCKETS][i], e = y[DDP_EXPOSED][i];
		int64_t d = s->end_ns - s->start_ns;
		if (isnan(e) || isnan(nb) || nb < 1 || d <= 0)
			continue;
		if (!m || nb < nb_min)
			nb_min = (int)nb;
		if (!m || nb > nb_max)
			nb_max = (int)nb;
		share[m] = e / (double)d;
		ex[m] = e;
		step[m] = (double)d;
		bw[m] = (double)step_backward_ns(r, i + 1);
		comm[m] = isnan(y[DDP_COMM][i]) ? 0 : y[DDP_COMM][i];
		if (!isnan(y[DDP_BYTES][i]))
			bytes = y[DDP_BYTES][i];
		if (!isnan(y[DDP_MAX][i]) && y[DDP_MAX][i] > biggest)
			biggest = y[DDP_MAX][i];
		total_ex += e;
		if (mine && !isnan(mine[i]))
			own_ex += (int64_t)mine[i];
		m++;
	}
	free(mine);
	/* 15% of the median step at least: backward's computation never hides
	 * all of it (the last bucket's all-reduce starts when backward is
	 * done), and a job that overlaps shows a few percent (3-5% in
	 * tests/mpi's ddp_buckets, 3.4 MiB in 3 buckets on gloo) */
	double med_share = m >= 5 ? diag_median(share, m) : 0;
	if (m < 5 || med_share < 0.15) {
		free(v);
		return;
	}
	double med_ex = diag_median(ex, m), med_step = diag_median(step, m), med_bw = diag_median(bw, m),
	       med_comm = diag_median(comm, m);
	char cfg[512] = "";
	pp_store_run_meta(r->st, r->run_id, "torch.ddp.config", cfg, sizeof cfg);
	char fix[512];
	int one = nb_max == 1;
	snprintf(fix, sizeof fix,
		 "%sThe last bucket (the first layers' gradients) can only go out when backward "
		 "ends: keep it small; fewer, larger buckets where many small ones each pay the "
		 "latency (bucket_cap_mb). Try gradient_as_bucket_view=True, static_graph=True. Send "
		 "less: register_comm_hook(None, fp16_compress_hook) (bf16, PowerSGD). All-reduce "
		 "less often: accumulate micro-batches inside no_sync().",
		 one ? "All gradients are in one bucket: it is all-reduced only after backward; "
		       "lower bucket_cap_mb below their size to overlap. "
		     : "");
	int sev = np < 0 ? DIAG_INFO : diag_sev_for_win(DIAG_MODERATE, total_ex);
	pp_finding *f = diag_emit(c, "ddp_comm_exposed", sev, diag_run_share(r, total_ex), fix,
				  "DDP's gradient all-reduce is exposed for %.0f%% of each step (%s of %s "
				  "per step, not overlapped with backward)",
				  100 * med_share, pp_dur(med_ex).s, pp_dur(med_step).s);
	if (!f) {
		free(v);
		return;
	}
	diag_evidence(f, "Medians over %d steady steps that all-reduced: step %s, backward %s (of it "
			 "%s waiting after its computation ended), bucket all-reduces in flight %s. ",
		      m, pp_dur(med_step).s, pp_dur(med_bw).s, pp_dur(med_ex).s, pp_dur(med_comm).s);
	if (nb_min == nb_max)
		diag_evidence(f, "%d bucket%s per step", nb_min, nb_min == 1 ? "" : "s");
	else
		diag_evidence(f, "%d to %d buckets per step", nb_min, nb_max);
	diag_evidence(f, ", %s all-reduced, the largest bucket %s. Exposed per step:", pp_bytes(bytes).s,
		      pp_bytes(biggest).s);
	int show = m < 8 ? m : 8;
	for (int i = 0; i < show; i++)
		diag_evidence(f, " %s", pp_dur(ex[i]).s);
	diag_evidence(f, "%s; %s in all.", m > show ? " ..." : "", pp_dur(total_ex).s);
	if (np > 0)
		diag_evidence(f, " Each step's least over the job's %d ranks; this rank's own wait "
				 "was %s in all, the difference spent waiting for slower ranks.",
			      world, pp_dur((double)own_ex).s);
	else if (np < 0)
		diag_evidence(f, " This rank's own wait: the job's other ranks (%d) are not in this "
				 "database, so time spent waiting for a slower rank cannot be told apart "
				 "(phaseprof merge the ranks' databases).",
			      world - 1);
	if (cfg[0])
		diag_evidence(f, " DDP: %s.", cfg);
	free(v);
}
