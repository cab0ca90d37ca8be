/* diag_stats.c — robust location/scale, trend tests, distribution tails. */
#include "diag_stats.h"
#include "pp_assert.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Small inputs use the stack; the rules pass at most a few thousand steps. */
static double median_inplace(double *v, int n)
{
	PP_ASSERT(n > 0); /* callers return early on empty samples */
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return (n & 1) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double diag_median(const double *x, int n)
{
	if (n <= 0)
		return 0;
	double *v = malloc((size_t)n * sizeof *v);
	if (!v)
		return NAN;
	memcpy(v, x, (size_t)n * sizeof *v);
	double m = median_inplace(v, n);
	free(v);
	return m;
}

double diag_mad(const double *x, int n)
{
	if (n <= 0)
		return 0;
	double m = diag_median(x, n);
	double *v = malloc((size_t)n * sizeof *v);
	if (!v)
		return NAN;
	for (int i = 0; i < n; i++)
		v[i] = fabs(x[i] - m);
	double mad = median_inplace(v, n);
	free(v);
	return mad;
}

double diag_robust_sigma(const double *x, int n)
{
	return 1.4826 * diag_mad(x, n);
}

double diag_mean(const double *x, int n)
{
	if (n <= 0)
		return 0;
	double s = 0;
	for (int i = 0; i < n; i++)
		s += x[i];
	return s / n;
}

int diag_linreg_fit(const double *x, const double *y, int n, diag_linreg *out)
{
	memset(out, 0, sizeof *out);
	if (n < 3)
		return -1;
	double mx = diag_mean(x, n), my = diag_mean(y, n);
	double sxx = 0, sxy = 0, syy = 0;
	for (int i = 0; i < n; i++) {
		double dx = x[i] - mx, dy = y[i] - my;
		sxx += dx * dx;
		sxy += dx * dy;
		syy += dy * dy;
	}
	if (sxx <= 0)
		return -1;
	out->n = n;
	out->slope = sxy / sxx;
	out->intercept = my - out->slope * mx;
	double sse = 0;
	for (int i = 0; i < n; i++) {
		double r = y[i] - (out->intercept + out->slope * x[i]);
		sse += r * r;
	}
	out->r2 = syy > 0 ? 1.0 - sse / syy : 1.0;
	double s2 = sse / (n - 2);
	out->se_slope = sqrt(s2 / sxx);
	if (out->se_slope > 0) {
		out->t = out->slope / out->se_slope;
		out->p_two_sided = diag_t_p_two_sided(out->t, n - 2);
	} else {
		/* A perfect fit: the slope is certain (or exactly zero). */
		out->t = out->slope > 0 ? INFINITY : out->slope < 0 ? -INFINITY : 0;
		out->p_two_sided = out->slope != 0 ? 0.0 : 1.0;
	}
	return 0;
}

/* Sorts v ascending (stable merge) and returns the number of pairs i < j
 * with v[i] > v[j]. */
static double count_inversions(double *v, double *tmp, int n)
{
	double inv = 0;
	for (int width = 1; width < n; width *= 2) {
		for (int lo = 0; lo < n - width; lo += 2 * width) {
			int mid = lo + width, hi = lo + 2 * width < n ? lo + 2 * width : n;
			int i = lo, j = mid, k = lo;
			while (i < mid && j < hi) {
				if (v[i] <= v[j]) {
					tmp[k++] = v[i++];
				} else {
					inv += mid - i; /* every left element left is larger */
					tmp[k++] = v[j++];
				}
			}
			while (i < mid)
				tmp[k++] = v[i++];
			while (j < hi)
				tmp[k++] = v[j++];
			memcpy(v + lo, tmp + lo, (size_t)(hi - lo) * sizeof *v);
		}
	}
	return inv;
}

int diag_mann_kendall(const double *y, int n, diag_mk *out)
{
	memset(out, 0, sizeof *out);
	if (n < 4)
		return -1;
	/* S = concordant - discordant pairs in O(n log n) (Knight's method):
	 * discordant pairs are the inversions a stable merge sort counts. */
	double *v = malloc((size_t)n * sizeof *v), *tmp = malloc((size_t)n * sizeof *tmp);
	if (!v || !tmp) {
		free(v);
		free(tmp);
		return -1;
	}
	memcpy(v, y, (size_t)n * sizeof *v);
	double disc = count_inversions(v, tmp, n);
	free(tmp);
	/* v is sorted now. Ties: pairs of equal values are neither, and the
	 * variance loses Σ t(t-1)(2t+5) over groups of equal values. */
	double ties = 0, tie_pairs = 0;
	for (int i = 0; i < n;) {
		int j = i + 1;
		while (j < n && v[j] == v[i])
			j++;
		double t = j - i;
		if (t > 1) {
			ties += t * (t - 1) * (2 * t + 5);
			tie_pairs += t * (t - 1) / 2;
		}
		i = j;
	}
	free(v);
	double dn = n;
	double s = (dn * (dn - 1) / 2 - disc - tie_pairs) - disc;
	out->n = n;
	out->s = s;
	out->var_s = (dn * (dn - 1) * (2 * dn + 5) - ties) / 18.0;
	out->tau = s / (dn * (dn - 1) / 2);
	if (out->var_s <= 0) {
		/* All values equal: no trend at all. */
		out->z = 0;
		out->p_up = out->p_down = 1.0;
		return 0;
	}
	double sd = sqrt(out->var_s);
	out->z = s > 0 ? (s - 1) / sd : s < 0 ? (s + 1) / sd : 0;
	out->p_up = 1.0 - diag_normal_cdf(out->z);
	out->p_down = diag_normal_cdf(out->z);
	return 0;
}

/* Reduces (x, y) to `cap` points: medians of consecutive blocks. */
static int reduce_blocks(const double *x, const double *y, int n, int cap,
			 double **rx, double **ry)
{
	*rx = malloc((size_t)cap * sizeof **rx);
	*ry = malloc((size_t)cap * sizeof **ry);
	if (!*rx || !*ry) {
		free(*rx);
		free(*ry);
		return -1;
	}
	for (int b = 0; b < cap; b++) {
		int lo = (int)((long long)n * b / cap), hi = (int)((long long)n * (b + 1) / cap);
		(*rx)[b] = diag_median(x + lo, hi - lo);
		(*ry)[b] = diag_median(y + lo, hi - lo);
	}
	return cap;
}

int diag_theil_sen(const double *x, const double *y, int n, int cap,
		   double *slope, double *intercept)
{
	*slope = *intercept = 0;
	if (n < 3)
		return -1;
	double *bx = NULL, *by = NULL;
	const double *px = x, *py = y;
	int m = n;
	if (cap >= 3 && n > cap) {
		if (reduce_blocks(x, y, n, cap, &bx, &by) < 0)
			return -1;
		px = bx, py = by, m = cap;
	}
	size_t np = (size_t)m * (size_t)(m - 1) / 2, k = 0;
	double *sl = malloc(np * sizeof *sl);
	if (!sl) {
		free(bx);
		free(by);
		return -1;
	}
	for (int i = 0; i < m - 1; i++)
		for (int j = i + 1; j < m; j++)
			if (px[j] != px[i])
				sl[k++] = (py[j] - py[i]) / (px[j] - px[i]);
	int rc = -1;
	if (k > 0) {
		*slope = median_inplace(sl, (int)k);
		/* Intercept over the full series, not the block medians. */
		double *r = realloc(sl, (size_t)n * sizeof *r);
		if (r) {
			sl = r;
			for (int i = 0; i < n; i++)
				sl[i] = y[i] - *slope * x[i];
			*intercept = median_inplace(sl, n);
			rc = 0;
		}
	}
	free(sl);
	free(bx);
	free(by);
	return rc;
}

double diag_normal_cdf(double z)
{
	return 0.5 * erfc(-z / sqrt(2.0));
}

#define LENTZ_TINY 1e-300

/* One term aa of a modified-Lentz continued fraction: updates c and d and
 * returns the factor the value is multiplied by. */
static double lentz_step(double aa, double *c, double *d)
{
	*d = 1 + aa * *d;
	if (fabs(*d) < LENTZ_TINY)
		*d = LENTZ_TINY;
	*c = 1 + aa / *c;
	if (fabs(*c) < LENTZ_TINY)
		*c = LENTZ_TINY;
	*d = 1 / *d;
	return *d * *c;
}

/* Continued fraction for I_x(a,b) (modified Lentz). */
static double betacf(double a, double b, double x)
{
	double qab = a + b, qap = a + 1, qam = a - 1;
	double c = 1, d = 1 - qab * x / qap;
	if (fabs(d) < LENTZ_TINY)
		d = LENTZ_TINY;
	d = 1 / d;
	double h = d;
	for (int m = 1; m <= 300; m++) {
		int m2 = 2 * m;
		h *= lentz_step(m * (b - m) * x / ((qam + m2) * (a + m2)), &c, &d);
		double del = lentz_step(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)), &c, &d);
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return h;
}

double diag_betai(double a, double b, double x)
{
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	double bt = exp(lbt);
	if (x < (a + 1) / (a + b + 2))
		return bt * betacf(a, b, x) / a;
	return 1 - bt * betacf(b, a, 1 - x) / b;
}

double diag_t_p_two_sided(double t, double df)
{
	if (df <= 0 || isnan(t))
		return 1.0;
	if (isinf(t))
		return 0.0;
	return diag_betai(df / 2, 0.5, df / (df + t * t));
}

/* ---- correlation ---- */

double diag_pearson(const double *x, const double *y, int n)
{
	double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
	int m = 0;
	for (int i = 0; i < n; i++) {
		if (!isfinite(x[i]) || !isfinite(y[i]))
			continue;
		sx += x[i];
		sy += y[i];
		m++;
	}
	if (m < 3)
		return NAN;
	double mx = sx / m, my = sy / m;
	for (int i = 0; i < n; i++) {
		if (!isfinite(x[i]) || !isfinite(y[i]))
			continue;
		sxx += (x[i] - mx) * (x[i] - mx);
		syy += (y[i] - my) * (y[i] - my);
		sxy += (x[i] - mx) * (y[i] - my);
	}
	if (sxx <= 0 || syy <= 0)
		return NAN;
	return sxy / sqrt(sxx * syy);
}

typedef struct rank_item { double v; int i; } rank_item;

static int cmp_rank_item(const void *a, const void *b)
{
	const rank_item *x = a, *y = b;
	return (x->v > y->v) - (x->v < y->v);
}

/* Ranks (1-based, ties averaged) of v[0..n) into r. */
static int rank_into(const double *v, int n, double *r)
{
	rank_item *it = malloc((size_t)(n ? n : 1) * sizeof *it);
	if (!it)
		return -1;
	for (int i = 0; i < n; i++)
		it[i] = (rank_item){v[i], i};
	qsort(it, (size_t)n, sizeof *it, cmp_rank_item);
	for (int i = 0; i < n;) {
		int j = i;
		while (j + 1 < n && it[j + 1].v == it[i].v)
			j++;
		for (int k = i; k <= j; k++)
			r[it[k].i] = (i + j) / 2.0 + 1;
		i = j + 1;
	}
	free(it);
	return 0;
}

double diag_spearman(const double *x, const double *y, int n)
{
	double *buf = malloc((size_t)(n > 0 ? n : 1) * 4 * sizeof *buf);
	if (!buf)
		return NAN;
	double *fx = buf, *fy = buf + n, *rx = buf + 2 * n, *ry = buf + 3 * n;
	int m = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(x[i]) && isfinite(y[i])) {
			fx[m] = x[i];
			fy[m++] = y[i];
		}
	double r = NAN;
	if (rank_into(fx, m, rx) == 0 && rank_into(fy, m, ry) == 0)
		r = diag_pearson(rx, ry, m);
	free(buf);
	return r;
}

/* ---- two samples ---- */

typedef struct tagged {
	double v;
	int in_b;
} tagged;

static int cmp_tagged(const void *x, const void *y)
{
	double a = ((const tagged *)x)->v, b = ((const tagged *)y)->v;
	return (a > b) - (a < b);
}

#define MW_HL_SIDE 500 /* at most 500 x 500 pairs for the shift */

int diag_mann_whitney(const double *a, int na, const double *b, int nb, diag_mw *out)
{
	memset(out, 0, sizeof *out);
	if (na < 2 || nb < 2)
		return -1;
	int n = na + nb;
	tagged *t = malloc((size_t)n * sizeof *t);
	if (!t)
		return -1;
	for (int i = 0; i < na; i++)
		t[i] = (tagged){a[i], 0};
	for (int j = 0; j < nb; j++)
		t[na + j] = (tagged){b[j], 1};
	qsort(t, (size_t)n, sizeof *t, cmp_tagged);
	/* rank sum of b, ties given their average rank; Σ(t³ - t) for the
	 * variance's tie correction */
	double rb = 0, ties = 0;
	for (int i = 0; i < n;) {
		int j = i;
		while (j + 1 < n && t[j + 1].v == t[i].v)
			j++;
		double rank = (i + j) / 2.0 + 1, k = j - i + 1;
		for (int m = i; m <= j; m++)
			if (t[m].in_b)
				rb += rank;
		ties += k * k * k - k;
		i = j + 1;
	}
	free(t);
	double dn = n, u = rb - nb * (nb + 1) / 2.0, mean = (double)na * nb / 2.0;
	double var = (double)na * nb / 12.0 * ((dn + 1) - ties / (dn * (dn - 1)));
	out->u = u;
	out->na = na;
	out->nb = nb;
	if (var > 0) {
		double d = u - mean;
		d = d > 0.5 ? d - 0.5 : d < -0.5 ? d + 0.5 : 0;
		out->z = d / sqrt(var);
		out->p_two_sided = 2 * (1 - diag_normal_cdf(fabs(out->z)));
		if (out->p_two_sided > 1)
			out->p_two_sided = 1;
	} else {
		out->p_two_sided = 1; /* every value equal */
	}
	/* Hodges-Lehmann: median of the pairwise differences, from evenly
	 * spaced subsamples of sides longer than MW_HL_SIDE */
	int sa = na > MW_HL_SIDE ? MW_HL_SIDE : na, sb = nb > MW_HL_SIDE ? MW_HL_SIDE : nb;
	double *d = malloc((size_t)sa * (size_t)sb * sizeof *d);
	if (!d)
		return -1;
	size_t k = 0;
	for (int i = 0; i < sa; i++)
		for (int j = 0; j < sb; j++)
			d[k++] = b[(int64_t)j * nb / sb] - a[(int64_t)i * na / sa];
	out->hl_shift = median_inplace(d, (int)k);
	free(d);
	return 0;
}

double diag_quantile(const double *x, int n, double q)
{
	if (n <= 0)
		return 0;
	double *v = malloc((size_t)n * sizeof *v);
	if (!v)
		return NAN;
	memcpy(v, x, (size_t)n * sizeof *v);
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	q = q < 0 ? 0 : q > 1 ? 1 : q;
	double h = q * (n - 1);
	int lo = (int)h;
	PP_ASSERT(lo >= 0 && lo < n); /* q clamped to [0, 1] */
	double r = lo + 1 < n ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[lo];
	free(v);
	return r;
}
