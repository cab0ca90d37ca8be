/* diff.c — phase-by-phase comparison of two runs, with a noise model taken
 * from the spread of each run's repeated steps, and the regression gate
 * (--fail-on) that turns its verdicts into an exit status. */
#include "diag_internal.h"
#include "diag_stats.h"
#include "diag_steps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The total and per-kind rows: a change counts only beyond all of 3x the
 * noise, 5% of the baseline, and an absolute floor (0.5% of the longer run,
 * at least 10 us, and 3x the steps' absolute spread, times the square root
 * of the row's phase count: each occurrence can be preempted), so tiny
 * phases and phases repeated every step don't flap on a busy machine. The
 * step row has its own test (judge_steps). */
#define DIFF_NOISE_K 3.0
#define DIFF_MIN_REL 0.05
#define DIFF_FLOOR_REL 0.005
#define DIFF_DEFAULT_NOISE 0.05

typedef struct run_side {
	pp_phase_total *totals;
	int n_totals;
	double *steady;           /* steady step durations (the first step dropped) */
	double *cpu;              /* their CPU time (counter step.cpu_ns), NULL unless every
				     steady step has one */
	int n_steady, n_steps;
	double median, sigma;     /* of the steady steps (sigma from successive differences) */
} run_side;

static void side_free(run_side *s)
{
	free(s->totals);
	free(s->steady);
	free(s->cpu);
}

/* The CPU time of each steady step: the step.cpu_ns sample the recorder
 * emits at the step's end (inside it). Left NULL when any step lacks one
 * (a recording from before the counter, a step ended another way). */
static void side_load_cpu(pp_store *st, int64_t run, const pp_step_row *steps, int n, run_side *s)
{
	pp_counter_row *c = NULL;
	int nc = 0;
	if (n < 2 || pp_store_counter(st, run, "step.cpu_ns", &c, &nc) != 0 || nc < n - 1) {
		free(c);
		return;
	}
	s->cpu = malloc((size_t)(n - 1) * sizeof *s->cpu);
	int k = 0; /* samples and steps are both in time order */
	for (int i = 1; s->cpu && i < n; i++) {
		int64_t a = steps[i].start_ns, b = a + steps[i].dur_ns;
		while (k < nc && c[k].ts_ns < a)
			k++;
		if (k >= nc || c[k].ts_ns > b) {
			free(s->cpu);
			s->cpu = NULL;
			break;
		}
		s->cpu[i - 1] = c[k].value;
	}
	free(c);
}

static int side_load(pp_store *st, int64_t run, pp_run_info *info, run_side *s, char *err,
		     size_t errlen)
{
	memset(s, 0, sizeof *s);
	if (pp_store_run(st, run, info) != 0) {
		snprintf(err, errlen, "%s: no run %lld", pp_store_path(st), (long long)run);
		return -1;
	}
	if (pp_store_phase_totals(st, run, &s->totals, &s->n_totals) != 0) {
		snprintf(err, errlen, "%s: run %lld: cannot read its phase totals", pp_store_path(st),
			 (long long)run);
		return -1;
	}
	pp_step_row *steps = NULL;
	int n = 0;
	if (pp_store_steps(st, run, &steps, &n) != 0) {
		snprintf(err, errlen, "%s: run %lld: cannot read its steps", pp_store_path(st),
			 (long long)run);
		return -1;
	}
	s->n_steps = n;
	if (n >= 2) {
		s->steady = malloc((size_t)(n - 1) * sizeof *s->steady);
		if (!s->steady) {
			free(steps);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		for (int i = 1; i < n; i++)
			s->steady[s->n_steady++] = (double)steps[i].dur_ns;
		/* the steady median every page shows (diag_steps.h) */
		pp_step_summary sum;
		if (diag_step_summary_rows(steps, n, 0, &sum) != 0) {
			free(steps);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		s->median = sum.steady_median_ns;
		/* Noise between repeated steps: the robust spread of step-to-step
		 * differences / sqrt(2). A slow drift or a growing run barely moves
		 * it, so a regression does not hide behind its own trend. */
		if (s->n_steady >= 3) {
			double *d = malloc((size_t)(s->n_steady - 1) * sizeof *d);
			if (d) {
				for (int i = 1; i < s->n_steady; i++)
					d[i - 1] = s->steady[i] - s->steady[i - 1];
				s->sigma = diag_robust_sigma(d, s->n_steady - 1) / sqrt(2.0);
				free(d);
			}
		}
		side_load_cpu(st, run, steps, n, s);
	}
	free(steps);
	return 0;
}

static const pp_phase_total *find_kind(const run_side *s, int kind)
{
	for (int i = 0; i < s->n_totals; i++)
		if (s->totals[i].kind == kind)
			return &s->totals[i];
	return NULL;
}

/* load: how much slower B's machine ran the program than A's (see
 * load_factor). A change must hold both as measured and with B's time
 * divided by it: the factor comes from the steps, and a phase that ran at
 * another time of the run may have seen another load (a busy machine's
 * load swings within a run), so it only ever withdraws a verdict. */
static void judge2(pp_diff_row *row, double rel_noise, int64_t floor_ns, double load,
		   double common);

static void judge(pp_diff_row *row, double rel_noise, int64_t floor_ns, double load)
{
	judge2(row, rel_noise, floor_ns, load, 1);
}

/* As judge, and the change must also hold with B's time divided by
 * common: the slowdown the run's other phases share (common_slowdown). */
static void judge2(pp_diff_row *row, double rel_noise, int64_t floor_ns, double load,
		   double common)
{
	int64_t base = row->ns_a > 0 ? row->ns_a : row->ns_b;
	double thr = DIFF_NOISE_K * rel_noise * (double)base;
	if (thr < DIFF_MIN_REL * (double)base)
		thr = DIFF_MIN_REL * (double)base;
	if (thr < (double)floor_ns)
		thr = (double)floor_ns;
	row->threshold_ns = (int64_t)llround(thr);
	row->ratio = row->ns_a > 0 ? (double)row->ns_b / (double)row->ns_a : 0;
	int64_t d = row->ns_b - row->ns_a;
	int64_t dl = (int64_t)llround((double)row->ns_b / load) - row->ns_a;
	int64_t dc = (int64_t)llround((double)row->ns_b / common) - row->ns_a;
	int64_t t = row->threshold_ns;
	row->verdict = d > t && dl > t && dc > t	   ? PP_DIFF_REGRESSION
		       : -d > t && -dl > t && -dc > t ? PP_DIFF_IMPROVEMENT
						      : PP_DIFF_SAME;
}

/* The slowdown a phase row's run shares with the rest of it: the
 * time-weighted median of B/A over the other phase kinds measured in both
 * runs above the floor (leave-one-out, so a phase that fills the run cannot
 * excuse itself), 1 with fewer than 3 of them. A busy machine stretches
 * every phase of a run alike (one-off phases too: library loads, imports,
 * which have no step-to-step noise to judge them by); a regression in the
 * program shows in some phases, not in all. Like the load factor it only
 * ever withdraws a verdict: a program slower everywhere alike is said by
 * the step and total rows. */
static double common_slowdown(const pp_diff_row *rows, int n, int skip, int64_t floor_ns)
{
	double r[PP_KIND_COUNT], w[PP_KIND_COUNT], wsum = 0;
	int m = 0;
	for (int i = 0; i < n && m < PP_KIND_COUNT; i++) {
		if (i == skip || rows[i].ns_a < floor_ns || rows[i].ns_b < floor_ns)
			continue;
		r[m] = (double)rows[i].ns_b / (double)rows[i].ns_a;
		w[m] = (double)(rows[i].ns_a + rows[i].ns_b);
		wsum += w[m++];
	}
	if (m < 3)
		return 1;
	for (int i = 1; i < m; i++) /* insertion sort by ratio: m <= PP_KIND_COUNT */
		for (int j = i; j > 0 && r[j] < r[j - 1]; j--) {
			double t = r[j];
			r[j] = r[j - 1];
			r[j - 1] = t;
			t = w[j];
			w[j] = w[j - 1];
			w[j - 1] = t;
		}
	double acc = 0;
	for (int i = 0; i < m; i++) {
		acc += w[i];
		if (acc >= wsum / 2)
			return r[i] < 0.25 ? 0.25 : r[i] > 4 ? 4 : r[i];
	}
	return 1;
}

/* Robust step-to-step sigma of a series: 1.4826 MAD of successive
 * differences / sqrt 2 (a drift barely moves it). 0 below 3 values. */
static double step_sigma(const double *y, int n)
{
	if (n < 3)
		return 0;
	double *d = malloc((size_t)(n - 1) * sizeof *d);
	if (!d)
		return 0;
	for (int i = 1; i < n; i++)
		d[i - 1] = y[i] - y[i - 1];
	double s = diag_robust_sigma(d, n - 1) / sqrt(2.0);
	free(d);
	return s;
}

/* One sample of step times against another (wall or CPU): Mann-Whitney U
 * plus the minimum effect, see judge_steps. */
typedef struct step_cmp {
	int verdict;
	double p, shift, q25_a, q25_b, min_eff, med_a, med_b;
} step_cmp;

static int step_compare(const double *a, int na, const double *b, int nb, step_cmp *o)
{
	memset(o, 0, sizeof *o);
	o->med_a = diag_median(a, na);
	o->med_b = diag_median(b, nb);
	/* the quieter run's noise: load inflates the other's, and a 2x slower
	 * program recorded beside a hog must not hide behind it */
	double sa = step_sigma(a, na), sb = step_sigma(b, nb);
	double sigma = sa < sb ? sa : sb;
	o->min_eff = PP_DIFF_STEP_MIN_REL * o->med_a;
	if (o->min_eff < PP_DIFF_STEP_NOISE_K * sigma)
		o->min_eff = PP_DIFF_STEP_NOISE_K * sigma;
	o->q25_a = diag_quantile(a, na, 0.25);
	o->q25_b = diag_quantile(b, nb, 0.25);
	diag_mw mw;
	if (diag_mann_whitney(a, na, b, nb, &mw) != 0)
		return -1;
	o->p = mw.p_two_sided;
	o->shift = mw.hl_shift;
	double dq = o->q25_b - o->q25_a;
	int significant = mw.p_two_sided < PP_DIFF_MW_ALPHA;
	o->verdict = significant && mw.hl_shift > o->min_eff && dq > o->min_eff     ? PP_DIFF_REGRESSION
		     : significant && -mw.hl_shift > o->min_eff && -dq > o->min_eff ? PP_DIFF_IMPROVEMENT
										    : PP_DIFF_SAME;
	return 0;
}

/* The step row. Per-step times of two recordings are two samples, not two
 * numbers: a busy machine stretches some steps of one run (preemption only
 * adds time), so a test on medians with a standard error from the spread
 * flags a 5% shift that the load made. A regression needs all of:
 *   - Mann-Whitney U on the steady steps, two-sided p < PP_DIFF_MW_ALPHA:
 *     B's steps are slower as a whole, not a few of them;
 *   - the Hodges-Lehmann shift (median of the pairwise differences) beyond
 *     the minimum effect, max(PP_DIFF_STEP_MIN_REL of A's median,
 *     PP_DIFF_STEP_NOISE_K x the smaller of the two runs' step-to-step
 *     sigma): a change a user would notice, larger than what the program's
 *     steps vary by when the machine leaves them alone;
 *   - the lower quartile moved by as much: load fattens the slow side, so
 *     the faster steps of a run say what the program costs.
 * A hog that takes the program's CPU for the whole recording stretches
 * every step, the fast ones too: wall time alone cannot tell that from a
 * slower program. So when both runs carry each step's CPU time
 * (step.cpu_ns, the process's), the same test runs on CPU times and the
 * row changes only when both agree: wall time that grew off the CPU is
 * waiting, for a CPU (the machine's load) or for I/O or another thread,
 * and a step's CPU share cannot tell those apart on a loaded machine (a
 * quiet program's steps there spend 75% of their time runnable). Waits the
 * program reports (data_wait...) have their own phase rows.
 * With fewer than PP_DIFF_MW_MIN_STEPS steady steps on a side the test
 * cannot reject anything at that level: the row falls back to judge()'s
 * thresholds (PP_DIFF_TEST_THRESHOLD, said in the header). */
static int judge_steps(pp_diff_row *row, const run_side *sa, const run_side *sb, pp_diff *out)
{
	if (sa->n_steady < PP_DIFF_MW_MIN_STEPS || sb->n_steady < PP_DIFF_MW_MIN_STEPS) {
		out->step_test = PP_DIFF_TEST_THRESHOLD;
		judge(row, out->noise_rel, 1000, 1);
		return 0;
	}
	step_cmp w;
	if (step_compare(sa->steady, sa->n_steady, sb->steady, sb->n_steady, &w) != 0)
		return -1;
	out->step_test = PP_DIFF_TEST_MANN_WHITNEY;
	out->step_p = w.p;
	out->step_shift_ns = w.shift;
	out->step_q25_a = w.q25_a;
	out->step_q25_b = w.q25_b;
	out->step_min_effect_ns = w.min_eff;
	out->step_wall_verdict = w.verdict;
	row->threshold_ns = (int64_t)llround(w.min_eff);
	row->ratio = row->ns_a > 0 ? (double)row->ns_b / (double)row->ns_a : 0;
	row->verdict = w.verdict;
	if (!sa->cpu || !sb->cpu)
		return 0;
	step_cmp c;
	if (step_compare(sa->cpu, sa->n_steady, sb->cpu, sb->n_steady, &c) != 0)
		return -1;
	out->step_cpu = 1;
	out->step_cpu_p = c.p;
	out->step_cpu_shift_ns = c.shift;
	out->step_cpu_median_a = c.med_a;
	out->step_cpu_median_b = c.med_b;
	out->step_cpu_min_effect_ns = c.min_eff;
	out->step_cpu_verdict = c.verdict;
	double ra = w.med_a > 0 ? c.med_a / w.med_a : 0, rb = w.med_b > 0 ? c.med_b / w.med_b : 0;
	out->step_cpu_share = ra > rb ? ra : rb;
	if (c.verdict != w.verdict)
		row->verdict = PP_DIFF_SAME;
	/* Contention inflates the CPU time of the more loaded run: a verdict
	 * that makes that run the slower one may be its load alone, when the
	 * CPU times differ by less than contention makes. One that makes it
	 * the faster holds all the more. */
	double l = out->load_factor, cr = c.med_a > 0 ? c.med_b / c.med_a : 1;
	int a_loaded = l < 1 / PP_DIFF_LOAD_DIFFERS, b_loaded = l > PP_DIFF_LOAD_DIFFERS;
	if ((a_loaded && row->verdict == PP_DIFF_IMPROVEMENT && cr > 1 / PP_DIFF_CONTENTION) ||
	    (b_loaded && row->verdict == PP_DIFF_REGRESSION && cr < PP_DIFF_CONTENTION)) {
		out->step_contention = 1;
		row->verdict = PP_DIFF_SAME;
	}
	return 0;
}

/* How much slower B's machine ran the program than A's: the ratio of the
 * two runs' wall time per CPU time of a step (medians), when both carry each
 * step's CPU time. A program that does the same work in both gets the same
 * CPU time per step, and the wall time around it stretches with the load
 * (time spent waiting for a CPU); a slower program needs more CPU time,
 * which this ratio leaves out. The total and phase rows have no CPU time of
 * their own: a change there must also hold after dividing B's time by this
 * factor (1 without CPU times; kept within 1/4..4). It reads more waiting
 * inside B's steps (I/O) as load too: the header prints it. */
static double load_factor(const run_side *sa, const run_side *sb)
{
	if (!sa->cpu || !sb->cpu || sa->n_steady < PP_DIFF_MW_MIN_STEPS ||
	    sb->n_steady < PP_DIFF_MW_MIN_STEPS)
		return 1;
	double ca = diag_median(sa->cpu, sa->n_steady), cb = diag_median(sb->cpu, sb->n_steady);
	if (ca <= 0 || cb <= 0 || sa->median <= 0)
		return 1;
	double l = (sb->median / cb) / (sa->median / ca);
	return l < 0.25 ? 0.25 : l > 4 ? 4 : l;
}

static int cmp_rows(const void *x, const void *y)
{
	const pp_diff_row *a = x, *b = y;
	int64_t ma = a->ns_a > a->ns_b ? a->ns_a : a->ns_b;
	int64_t mb = b->ns_a > b->ns_b ? b->ns_a : b->ns_b;
	return (ma < mb) - (ma > mb);
}

int pp_diag_diff(pp_store *a, int64_t run_a, pp_store *b, int64_t run_b, pp_diff *out)
{
	memset(out, 0, sizeof *out);
	run_side sa, sb;
	memset(&sb, 0, sizeof sb);
	if (side_load(a, run_a, &out->a, &sa, out->error, sizeof out->error) != 0) {
		side_free(&sa);
		return -1;
	}
	if (side_load(b, run_b, &out->b, &sb, out->error, sizeof out->error) != 0) {
		side_free(&sa);
		side_free(&sb);
		return -1;
	}
	out->n_steps_a = sa.n_steps;
	out->n_steps_b = sb.n_steps;
	/* Relative noise: the larger of the two runs' step spreads. */
	double na = sa.n_steady >= 3 && sa.median > 0 ? sa.sigma / sa.median : -1;
	double nb = sb.n_steady >= 3 && sb.median > 0 ? sb.sigma / sb.median : -1;
	out->noise_from_steps = na >= 0 || nb >= 0;
	out->noise_rel = out->noise_from_steps ? (na > nb ? na : nb) : DIFF_DEFAULT_NOISE;

	int cap = sa.n_totals + sb.n_totals + 2;
	out->rows = calloc((size_t)cap, sizeof *out->rows);
	if (!out->rows) {
		snprintf(out->error, sizeof out->error, "out of memory");
		side_free(&sa);
		side_free(&sb);
		return -1;
	}
	int64_t longest = out->a.duration_ns > out->b.duration_ns ? out->a.duration_ns : out->b.duration_ns;
	int64_t floor_ns = (int64_t)(DIFF_FLOOR_REL * (double)longest);
	if (floor_ns < 10000)
		floor_ns = 10000;
	/* A preemption adds time, not a share: a phase measured once carries
	 * the steps' absolute spread too, so a short one-off phase is not
	 * flagged for one time slice lost on a busy machine. */
	double sigma_abs = DIFF_NOISE_K * (sa.sigma > sb.sigma ? sa.sigma : sb.sigma);
	if (sigma_abs > (double)floor_ns)
		floor_ns = (int64_t)llround(sigma_abs);
	out->floor_ns = floor_ns;

	out->load_factor = load_factor(&sa, &sb);
	pp_diff_row *row = &out->rows[out->n++];
	snprintf(row->name, sizeof row->name, "total");
	row->kind = -1;
	row->count_a = row->count_b = 1;
	row->ns_a = out->a.duration_ns;
	row->ns_b = out->b.duration_ns;
	judge(row, out->noise_rel, floor_ns, out->load_factor);

	out->step_p = 1;
	out->step_alpha = PP_DIFF_MW_ALPHA;
	if (sa.n_steady > 0 && sb.n_steady > 0) {
		row = &out->rows[out->n++];
		snprintf(row->name, sizeof row->name, "step median");
		row->kind = -1;
		row->count_a = sa.n_steady;
		row->count_b = sb.n_steady;
		row->ns_a = (int64_t)llround(sa.median);
		row->ns_b = (int64_t)llround(sb.median);
		if (judge_steps(row, &sa, &sb, out) != 0) {
			snprintf(out->error, sizeof out->error, "out of memory");
			side_free(&sa);
			side_free(&sb);
			return -1;
		}
	}

	int first_kind = out->n;
	for (int k = 0; k < PP_KIND_COUNT; k++) {
		if (k == PP_STEP)
			continue; /* the step rows above say it better */
		const pp_phase_total *ta = find_kind(&sa, k), *tb = find_kind(&sb, k);
		if (!ta && !tb)
			continue;
		row = &out->rows[out->n++];
		snprintf(row->name, sizeof row->name, "%s", pp_kind_name((pp_kind)k));
		row->kind = k;
		row->count_a = ta ? ta->count : 0;
		row->count_b = tb ? tb->count : 0;
		row->ns_a = ta ? ta->total_ns : 0;
		row->ns_b = tb ? tb->total_ns : 0;
	}
	for (int i = first_kind; i < out->n; i++) {
		row = &out->rows[i];
		int64_t cnt = row->count_a > row->count_b ? row->count_a : row->count_b;
		double per_count = sigma_abs * sqrt((double)(cnt > 1 ? cnt : 1));
		double common = common_slowdown(out->rows + first_kind, out->n - first_kind,
						i - first_kind, floor_ns);
		if (common != 1) {
			if (!out->common_rows || common < out->common_min)
				out->common_min = common;
			if (!out->common_rows || common > out->common_max)
				out->common_max = common;
			out->common_rows++;
		}
		judge2(row, out->noise_rel,
		       per_count > (double)floor_ns ? (int64_t)llround(per_count) : floor_ns,
		       out->load_factor, common);
	}
	qsort(out->rows + first_kind, (size_t)(out->n - first_kind), sizeof *out->rows, cmp_rows);
	for (int i = 0; i < out->n; i++) {
		out->regressions += out->rows[i].verdict == PP_DIFF_REGRESSION;
		out->improvements += out->rows[i].verdict == PP_DIFF_IMPROVEMENT;
	}
	side_free(&sa);
	side_free(&sb);
	return 0;
}

void pp_diff_free(pp_diff *d)
{
	if (!d)
		return;
	free(d->rows);
	d->rows = NULL;
	d->n = 0;
}

const char *pp_diff_verdict_name(int verdict)
{
	switch (verdict) {
	case PP_DIFF_REGRESSION:
		return "regression";
	case PP_DIFF_IMPROVEMENT:
		return "improvement";
	default:
		return "same";
	}
}

/* ---- the regression gate ---- */

static int gate_name_ok(const char *name)
{
	return !strcmp(name, "total") || !strcmp(name, "step") || !strcmp(name, "any") ||
	       (pp_kind_from_name(name) >= 0 && pp_kind_from_name(name) != PP_STEP);
}

int pp_gate_parse(const char *spec, pp_gate_rule *rules, int max, int *n, char *err, size_t errlen)
{
	const char *p = spec;
	if (!*p) {
		snprintf(err, errlen, "--fail-on needs KIND=PCT (e.g. total=5,compile=10)");
		return -1;
	}
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		if (!eq || eq == p) {
			snprintf(err, errlen, "--fail-on: '%.*s' is not KIND=PCT (e.g. total=5)", (int)len, p);
			return -1;
		}
		pp_gate_rule r;
		snprintf(r.name, sizeof r.name, "%.*s", (int)(eq - p), p);
		if (!gate_name_ok(r.name)) {
			snprintf(err, errlen,
				 "--fail-on: unknown phase '%s' (a phase kind such as compile or weight_load, "
				 "or total, step, any)",
				 r.name);
			return -1;
		}
		char num[32], *end;
		size_t nl = len - (size_t)(eq + 1 - p);
		if (nl && eq[nl] == '%')
			nl--;
		snprintf(num, sizeof num, "%.*s", (int)nl, eq + 1);
		r.limit_pct = strtod(num, &end);
		if (!nl || nl >= sizeof num || *end || !isfinite(r.limit_pct) || r.limit_pct < 0) {
			snprintf(err, errlen, "--fail-on %s: '%.*s' is not a percentage >= 0", r.name,
				 (int)(len - (size_t)(eq + 1 - p)), eq + 1);
			return -1;
		}
		if (*n >= max) {
			snprintf(err, errlen, "--fail-on: more than %d rules", max);
			return -1;
		}
		rules[(*n)++] = r;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int gate_matches(const pp_gate_rule *r, const pp_diff_row *row)
{
	if (!strcmp(r->name, "any"))
		return 1;
	if (!strcmp(r->name, "step"))
		return !strcmp(row->name, "step median");
	return !strcmp(r->name, row->name);
}

int pp_gate_eval(const pp_diff *d, const pp_gate_rule *rules, int n_rules, pp_gate_check *out,
		 int max, int *n_out)
{
	int failed = 0;
	*n_out = 0;
	for (int k = 0; k < n_rules; k++) {
		int matched = 0;
		for (int i = 0; i < d->n && *n_out < max; i++) {
			const pp_diff_row *row = &d->rows[i];
			if (!gate_matches(&rules[k], row))
				continue;
			matched = 1;
			pp_gate_check *c = &out[(*n_out)++];
			snprintf(c->name, sizeof c->name, "%s", row->name);
			c->limit_pct = rules[k].limit_pct;
			c->verdict = row->verdict;
			c->present = 1;
			c->change_pct = row->ns_a > 0 ? 100.0 * (double)(row->ns_b - row->ns_a) / (double)row->ns_a
				      : row->ns_b > 0 ? INFINITY
						      : 0;
			/* beyond noise by the diff's own verdict, and beyond the user's limit */
			c->failed = row->verdict == PP_DIFF_REGRESSION && c->change_pct > c->limit_pct;
			failed += c->failed;
		}
		if (!matched && *n_out < max) {
			pp_gate_check *c = &out[(*n_out)++];
			memset(c, 0, sizeof *c);
			snprintf(c->name, sizeof c->name, "%s", rules[k].name);
			c->limit_pct = rules[k].limit_pct;
		}
	}
	return failed;
}
