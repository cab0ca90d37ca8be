/* step_summary.c — the step summary every reader shares (diag_steps.h). */
#include "diag_steps.h"
#include "diag_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x < y) - (x > y);
}

int diag_step_summary_rows(const pp_step_row *s, int n, unsigned what, pp_step_summary *out)
{
	int rc = 0;
	memset(out, 0, sizeof *out);
	out->first_ns = -1;
	out->steady_median_ns = out->head_median_ns = out->tail_median_ns = -1;
	if (n <= 0)
		return 0;
	int m = n - 1;
	out->n = n;
	out->n_steady = m;
	out->first_ns = s[0].dur_ns;
	/* x, y and a sorted copy of all durations in one allocation */
	double *x = malloc((size_t)n * 2 * sizeof *x);
	int64_t *sorted = malloc((size_t)n * sizeof *sorted);
	if (!x || !sorted) {
		rc = -1;
		goto out;
	}
	double *y = x + n;
	for (int i = 0; i < n; i++)
		y[i] = (double)s[i].dur_ns;
	int k = n / 10 > 0 ? n / 10 : 1;
	out->head_median_ns = diag_median(y, k);
	out->tail_median_ns = diag_median(y + n - k, k);
	if (m == 0)
		goto out;
	int64_t mins = INT64_MAX, maxs = 0;
	for (int i = 1; i < n; i++) {
		x[i] = (double)i;
		sorted[i - 1] = s[i].dur_ns;
		if (s[i].dur_ns > maxs)
			maxs = s[i].dur_ns;
		if (s[i].dur_ns < mins)
			mins = s[i].dur_ns;
	}
	out->steady_min_ns = mins;
	out->steady_max_ns = maxs;
	out->steady_median_ns = diag_median(y + 1, m);
	/* A few preempted steps must not flatten the growth a chart scaled to
	 * this shows, hence a high percentile rather than the longest. */
	out->steady_p99_ns = maxs;
	if (m >= 20) {
		qsort(sorted, (size_t)m, sizeof *sorted, cmp_i64_desc);
		out->steady_p99_ns = sorted[(size_t)((m - 1) * 0.01)];
	}
	if (m >= 3 && (what & DIAG_STEPS_TREND)) {
		out->has_trend = 1;
		if (diag_theil_sen(x + 1, y + 1, m, DIAG_THEIL_SEN_CAP, &out->slope_ns, &out->intercept_ns) != 0)
			out->slope_ns = out->intercept_ns = 0;
		double first_fit = fmax(out->intercept_ns + out->slope_ns * 1, (double)mins);
		double last_fit = fmax(out->intercept_ns + out->slope_ns * (n - 1), (double)mins);
		out->growth_pct = first_fit > 0 ? (last_fit - first_fit) / first_fit * 100 : 0;
	}
out:
	free(x);
	free(sorted);
	return rc;
}

int diag_step_summary(pp_store *st, int64_t run_id, unsigned what, pp_step_summary *out)
{
	pp_step_row *s = NULL;
	int n = 0, rc = pp_store_steps(st, run_id, &s, &n);
	if (rc == 0)
		rc = diag_step_summary_rows(s, n, what, out);
	else
		diag_step_summary_rows(NULL, 0, what, out);
	free(s);
	return rc;
}
