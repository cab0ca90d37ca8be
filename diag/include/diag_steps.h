/*
 * diag_steps.h — the one summary of a run's step times. The report, the
 * stats tables, run diffs and the scenario claims all read these numbers
 * from here, so a page cannot disagree with a finding about the same steps.
 * Steps are the store's (pp_store_steps: outermost step phases); "steady"
 * means the steps after the first.
 */
#ifndef PP_DIAG_STEPS_H
#define PP_DIAG_STEPS_H

#include <stdint.h>
#include "store.h"

typedef struct pp_step_summary {
	int n;                    /* steps */
	int n_steady;             /* steps after the first (n - 1, or 0) */
	int64_t first_ns;         /* the first step; -1 without steps */
	/* Median of the steady steps, exact (x.5 for an even count of odd
	 * sum); -1 without steady steps. Pages print it whole, truncated. */
	double steady_median_ns;
	int64_t steady_min_ns, steady_max_ns; /* 0 without steady steps */
	/* The steady steps' 99th percentile as the report's y scale takes it
	 * (the ceil(m/100)-th longest); the longest below 20 steady steps. */
	int64_t steady_p99_ns;
	/* With DIAG_STEPS_TREND: the Theil-Sen fit of duration over step index
	 * (1..n-1) across the steady steps, with the growth rule's cap
	 * (DIAG_THEIL_SEN_CAP). has_trend: asked for and at least 3 steady
	 * steps (slope and intercept 0 when the fit failed). */
	int has_trend;
	double slope_ns, intercept_ns;
	/* The fitted change from step 2 to the last step in percent, each end
	 * floored at the fastest steady step (a line can start below zero). */
	double growth_pct;
	/* Medians of the first and of the last tenth of all steps (at least
	 * one step each); -1 without steps. */
	double head_median_ns, tail_median_ns;
} pp_step_summary;

/* What to compute beyond the counts, first step, medians and percentiles
 * (all cheap): the trend costs O(DIAG_THEIL_SEN_CAP²) per run, so only a
 * reader that shows it asks. */
#define DIAG_STEPS_TREND 1u

/* From step rows in order (what pp_store_steps returns). Returns 0, or -1
 * when out of memory (then *out holds what was computed without it). */
int diag_step_summary_rows(const pp_step_row *s, int n, unsigned what, pp_step_summary *out);
/* Reads a run's steps from the store and summarises them. Returns 0
 * (a run without steps has n == 0), or -1 when they cannot be read. */
int diag_step_summary(pp_store *st, int64_t run_id, unsigned what, pp_step_summary *out);

#endif
