/* scn_analysis.c — parent side: read a variant's run back from the store
 * (headline figure, steps, counters) and the small statistics the claims
 * verdicts use. */
#include "scn_internal.h"
#include "diag_stats.h"
#include "diag_steps.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The steps of a run as the store defines them (outermost, by start). */
static int outer_steps(pp_store *st, int64_t run_id, pp_step_row **out, int *n)
{
	return pp_store_steps(st, run_id, out, n);
}

void scn_series_free(scn_series *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

/* The run's steps, and out sized for one value per step (n set by the
 * caller once the values are in). */
static int steps_series(pp_store *st, int64_t run_id, pp_step_row **rows, int *n, scn_series *out)
{
	out->v = NULL;
	out->n = 0;
	if (outer_steps(st, run_id, rows, n) != 0)
		return -1;
	out->v = malloc(((size_t)*n + 1) * sizeof *out->v);
	if (!out->v) {
		free(*rows);
		return -1;
	}
	return 0;
}

int scn_steps(pp_store *st, int64_t run_id, scn_series *out)
{
	pp_step_row *rows;
	int n;
	if (steps_series(st, run_id, &rows, &n, out) != 0)
		return -1;
	for (int i = 0; i < n; i++)
		out->v[i] = (double)rows[i].dur_ns;
	out->n = n;
	free(rows);
	return 0;
}

int scn_counter_at_steps(pp_store *st, int64_t run_id, const char *name, scn_series *out)
{
	pp_counter_row *c = NULL;
	int nc = 0;
	if (pp_store_counter(st, run_id, name, &c, &nc) != 0) {
		out->v = NULL;
		out->n = 0;
		return -1;
	}
	pp_step_row *steps;
	int ns;
	if (steps_series(st, run_id, &steps, &ns, out) != 0) {
		free(c);
		return -1;
	}
	int j = 0;
	for (int i = 0; i < ns; i++) {
		int64_t end = steps[i].start_ns + steps[i].dur_ns;
		while (j < nc && c[j].ts_ns <= end)
			j++;
		out->v[i] = j > 0 ? c[j - 1].value : NAN;
	}
	out->n = ns;
	free(steps);
	free(c);
	return 0;
}

double scn_counter_last(pp_store *st, int64_t run_id, const char *name, double fallback)
{
	pp_counter_row *c = NULL;
	int n = 0;
	if (pp_store_counter(st, run_id, name, &c, &n) != 0 || n == 0) {
		free(c);
		return fallback;
	}
	double v = c[n - 1].value;
	free(c);
	return v;
}

double scn_counter_sum(pp_store *st, int64_t run_id, const char *name)
{
	pp_counter_row *c = NULL;
	int n = 0;
	double sum = 0;
	if (pp_store_counter(st, run_id, name, &c, &n) == 0)
		for (int i = 0; i < n; i++)
			sum += c[i].value;
	free(c);
	return sum;
}


double scn_meta_num(pp_store *st, int64_t run_id, const char *key, double fallback)
{
	char buf[64] = "";
	if (pp_store_run_meta(st, run_id, key, buf, sizeof buf) != 0 || !buf[0])
		return fallback;
	char *end;
	double v = strtod(buf, &end);
	return end != buf ? v : fallback;
}

int64_t scn_kind_total(pp_store *st, int64_t run_id, int kind, int64_t *count)
{
	pp_phase_total *t;
	int n;
	if (count)
		*count = 0;
	if (pp_store_phase_totals(st, run_id, &t, &n) != 0)
		return 0;
	int64_t v = 0;
	for (int i = 0; i < n; i++)
		if (t[i].kind == kind) {
			v = t[i].total_ns;
			if (count)
				*count = t[i].count;
		}
	free(t);
	return v;
}

int64_t scn_span_total(pp_store *st, int64_t run_id, const char *name, int64_t *count)
{
	int64_t total = 0, n = 0;
	if (pp_store_span_name_total(st, run_id, name, &total, &n) != 0)
		total = n = 0;
	if (count)
		*count = n;
	return total;
}

/* The claims' statistics are diag_stats', the rules' own: one verdict
 * engine. These keep the claims' convention that an empty range is NAN. */
double scn_median_range(const double *v, int from, int k)
{
	return k > 0 ? diag_median(v + from, k) : NAN;
}

double scn_median(const double *v, int n)
{
	return scn_median_range(v, 0, n);
}

double scn_correlation(const double *x, const double *y, int n)
{
	return diag_spearman(x, y, n);
}

double scn_explained_growth(const double *x, const double *y, int n)
{
	double *fx = malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof *fx);
	if (!fx)
		return NAN;
	double *fy = fx + n;
	int m = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(x[i]) && isfinite(y[i])) {
			fx[m] = x[i];
			fy[m++] = y[i];
		}
	diag_linreg fit;
	int ok = m >= 3 && diag_linreg_fit(fx, fy, m, &fit) == 0;
	free(fx);
	if (m < 3)
		return NAN;
	if (!ok)
		return 0; /* x constant: it explains nothing */
	int k = n / 10 > 0 ? n / 10 : 1;
	double x0 = scn_median_range(x, 0, k), x1 = scn_median_range(x, n - k, k);
	double y0 = scn_median_range(y, 0, k), y1 = scn_median_range(y, n - k, k);
	if (!(y1 - y0 > 0))
		return 0;
	return fit.slope * (x1 - x0) / (y1 - y0);
}

int scn_claim(pp_scn_claim *out, int i, int max, const char *id, const char *claim, int verdict,
	      const char *fmt, ...)
{
	if (i >= max)
		return max;
	pp_scn_claim *c = &out[i];
	memset(c, 0, sizeof *c);
	snprintf(c->id, sizeof c->id, "%s", id);
	snprintf(c->claim, sizeof c->claim, "%s", claim);
	c->verdict = verdict;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->evidence, sizeof c->evidence, fmt, ap);
	va_end(ap);
	return i + 1;
}

/* ---- the public parent-side calls ---- */

const char *pp_claim_verdict_name(int v)
{
	switch (v) {
	case PP_CLAIM_SUPPORTED:
		return "supported";
	case PP_CLAIM_NOT_SUPPORTED:
		return "not supported";
	case PP_CLAIM_PARTLY:
		return "partly";
	}
	return "not measured";
}

int pp_scenario_measure(pp_store *st, int64_t run_id, pp_scn_measure *out)
{
	memset(out, 0, sizeof *out);
	out->measured_ns = -1;
	pp_run_info ri;
	if (pp_store_run(st, run_id, &ri) != 0)
		return -1;
	out->total_ns = ri.duration_ns;
	int64_t cnt = 0;
	int64_t m = scn_span_total(st, run_id, "measured", &cnt);
	if (cnt > 0)
		out->measured_ns = m;
	/* the step numbers every page shows (diag_steps.h) */
	pp_step_summary ss;
	if (diag_step_summary(st, run_id, 0, &ss) == 0 && ss.n > 0) {
		out->n_steps = ss.n;
		out->first_step_ns = ss.first_ns;
		if (ss.n > 1)
			out->median_step_ns = (int64_t)ss.steady_median_ns;
		out->first10_ns = (int64_t)ss.head_median_ns;
		out->last10_ns = (int64_t)ss.tail_median_ns;
	}
	return 0;
}

static void store_claim(pp_store *st, int64_t run_id, const pp_scn_claim *c)
{
	char key[48], val[900];
	snprintf(key, sizeof key, "claim.%s", c->id);
	snprintf(val, sizeof val, "%s: %s -- %s", pp_claim_verdict_name(c->verdict), c->claim,
		 c->evidence);
	/* a read-only store refuses: the claims are still printed */
	(void)pp_store_set_run_meta(st, run_id, key, val);
}

int pp_scenario_claims(const pp_scenario *s, pp_store *st, const int64_t *run_ids,
		       pp_scn_claim *out, int max)
{
	if (!s->claims || max <= 0)
		return 0;
	int n = s->claims(st, run_ids, out, max);
	if (n > 0 && run_ids[0] > 0)
		for (int i = 0; i < n; i++)
			store_claim(st, run_ids[0], &out[i]);
	return n;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int scn_kind_per_step(pp_store *st, int64_t run_id, int kind, scn_series *out)
{
	out->v = NULL;
	out->n = 0;
	pp_step_row *steps;
	int ns;
	if (outer_steps(st, run_id, &steps, &ns) != 0)
		return -1;
	pp_span_list l;
	if (pp_store_spans(st, run_id, -1, &l) != 0) {
		free(steps);
		return -1;
	}
	out->v = calloc((size_t)ns + 1, sizeof *out->v);
	/* (start, index) of the steps sorted by start, for the containment search */
	int64_t *starts = malloc(((size_t)ns + 1) * 2 * sizeof *starts);
	/* ids of the spans of `kind`, to skip those nested in one of the same kind */
	int64_t *ids = malloc(((size_t)l.n + 1) * sizeof *ids);
	if (!out->v || !starts || !ids) {
		free(out->v);
		out->v = NULL;
		free(starts);
		free(ids);
		free(steps);
		pp_span_list_free(&l);
		return -1;
	}
	for (int i = 0; i < ns; i++) {
		starts[2 * i] = steps[i].start_ns;
		starts[2 * i + 1] = i;
	}
	qsort(starts, (size_t)ns, 2 * sizeof *starts, cmp_i64);
	int nid = 0;
	for (int i = 0; i < l.n; i++)
		if (l.rows[i].kind == kind)
			ids[nid++] = l.rows[i].id;
	qsort(ids, (size_t)nid, sizeof *ids, cmp_i64);
	for (int i = 0; i < l.n; i++) {
		const pp_span_row *r = &l.rows[i];
		if (r->kind != kind || r->end_ns < 0)
			continue;
		if (r->parent_id > 0 && bsearch(&r->parent_id, ids, (size_t)nid, sizeof *ids, cmp_i64))
			continue;
		int lo = 0, hi = ns - 1, best = -1;
		while (lo <= hi) {
			int mid = (lo + hi) / 2;
			if (starts[2 * mid] <= r->start_ns) {
				best = mid;
				lo = mid + 1;
			} else {
				hi = mid - 1;
			}
		}
		if (best < 0)
			continue;
		int si = (int)starts[2 * best + 1];
		if (r->end_ns <= steps[si].start_ns + steps[si].dur_ns)
			out->v[si] += (double)(r->end_ns - r->start_ns);
	}
	out->n = ns;
	free(starts);
	free(ids);
	free(steps);
	pp_span_list_free(&l);
	return 0;
}
