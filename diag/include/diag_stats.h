/*
 * diag_stats.h — the one verdict engine's statistics: the rules, the
 * report's trend line and the scenario claims all use these, so a page and
 * a finding cannot disagree on the numbers. Pure functions over double
 * arrays: no store, no allocation visible to the caller. Tested on their
 * own in tests/diag/test_stats.c.
 */
#ifndef PP_DIAG_STATS_H
#define PP_DIAG_STATS_H

#include <stddef.h>

/* Median of x[0..n) (x is not modified). 0 for n == 0. */
double diag_median(const double *x, int n);
/* Median absolute deviation around the median (raw, not scaled). */
double diag_mad(const double *x, int n);
/* 1.4826 · MAD: a standard deviation estimate that ignores outliers. */
double diag_robust_sigma(const double *x, int n);
double diag_mean(const double *x, int n);

/* Ordinary least squares y = a + b·x with a t-test on the slope. */
typedef struct diag_linreg {
	double slope, intercept;
	double se_slope;          /* standard error of the slope */
	double t;                 /* slope / se_slope (±inf for a perfect fit) */
	double p_two_sided;       /* Student t, n-2 degrees of freedom */
	double r2;
	int n;
} diag_linreg;
/* Returns 0, or -1 when n < 3 or all x are equal. */
int diag_linreg_fit(const double *x, const double *y, int n, diag_linreg *out);

/* Mann-Kendall trend test (rank-based, so robust to outliers and to the
 * shape of the noise), with the tie correction of the variance. */
typedef struct diag_mk {
	double s;                 /* Σ sign(y_j - y_i), i < j */
	double var_s;
	double z;                 /* continuity-corrected */
	double p_up;              /* one-sided p-value for an increasing trend */
	double p_down;
	double tau;               /* Kendall's tau-a: s / (n(n-1)/2) */
	int n;
} diag_mk;
/* Returns 0, or -1 when n < 4. */
int diag_mann_kendall(const double *y, int n, diag_mk *out);

/* Theil-Sen: median of pairwise slopes, intercept median(y - b·x). Series
 * longer than `cap` points are first reduced to cap block medians so the
 * cost stays O(cap²). Returns 0, or -1 when n < 3. */
int diag_theil_sen(const double *x, const double *y, int n, int cap,
		   double *slope, double *intercept);
/* The cap the growth rule and the report's trend line share. */
#define DIAG_THEIL_SEN_CAP 600

/* Pearson's r over the pairs where both values are finite; NAN with fewer
 * than 3 such pairs or a constant side. */
double diag_pearson(const double *x, const double *y, int n);
/* Spearman's rho (Pearson over ranks, ties averaged) over the finite pairs:
 * step times carry spikes (preemption) that would dominate a Pearson r. */
double diag_spearman(const double *x, const double *y, int n);

/* Mann-Whitney U (Wilcoxon rank-sum) of b against a: rank-based, so it
 * compares two samples of step times whatever the shape of their noise
 * (preemption makes it one-sided and heavy-tailed, which a t-test or a
 * standard error of the median assumes away). Normal approximation with
 * the tie correction and a continuity correction. */
typedef struct diag_mw {
	double u;                 /* pairs (a_i, b_j) with b_j > a_i, ties counted 1/2 */
	double z;                 /* > 0: b tends to be larger */
	double p_two_sided;
	double hl_shift;          /* Hodges-Lehmann shift: median of b_j - a_i */
	int na, nb;
} diag_mw;
/* Returns 0, or -1 when a side has fewer than 2 values (or out of memory).
 * The shift uses at most ~250,000 pairs (every k-th value of a longer side). */
int diag_mann_whitney(const double *a, int na, const double *b, int nb, diag_mw *out);

/* The q-quantile (0..1) of x[0..n), linear between order statistics (R's
 * type 7). 0 for n == 0. */
double diag_quantile(const double *x, int n, double q);

/* Distribution functions. */
double diag_normal_cdf(double z);
/* Two-sided p-value of a Student t statistic with df degrees of freedom. */
double diag_t_p_two_sided(double t, double df);
/* Regularised incomplete beta I_x(a, b). */
double diag_betai(double a, double b, double x);

#endif
