/*
 * diagnostics.h — the rules engine over a phaseprof store, and run diffs.
 *
 * Each rule reads one run (phases, steps, counters, side tables) and emits
 * findings: rule id, severity, score, a one-sentence title, the evidence with
 * its numbers, and the fix. Findings are ranked most important first and
 * stored in the run's `findings` rows (replacing the run's old findings).
 *
 * What the rules read (phase kinds, counter names, row conventions) is
 * written down in diag/README.md: emit those and the rules see you.
 *
 *   pp_diag_result r;
 *   if (pp_diag_run(st, run_id, &r) == 0) {
 *           pp_diag_print(stdout, r.findings, r.n, 0);
 *           pp_diag_result_free(&r);
 *   }
 */
#ifndef PP_DIAGNOSTICS_H
#define PP_DIAGNOSTICS_H

#include <stdint.h>
#include <stdio.h>

#include "store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Findings of one run, ranked: findings[0] is the most important. */
typedef struct pp_diag_result {
	pp_finding *findings;     /* malloc'd; pp_diag_result_free */
	int n;
	char error[256];          /* set when a call returns -1 */
} pp_diag_result;

/* Runs every rule on one run, replaces the run's stored findings with the new
 * ones (the store must be open for writing) and returns them in out (out may
 * be NULL). Returns 0, or -1 with a one-line message in out->error. */
int pp_diag_run(pp_store *st, int64_t run_id, pp_diag_result *out);

/* Same analysis, nothing written: for read-only stores and tests. */
int pp_diag_analyze(pp_store *st, int64_t run_id, pp_diag_result *out);

/* The findings a viewer shows for one run: the stored ones, or when the run
 * was never diagnosed, the rules' findings computed now and not written
 * (*computed = 1). Ranked; malloc'd (free()). The one place report, stats
 * and diff get findings from. Returns 0 or -1. */
int pp_diag_findings(pp_store *st, int64_t run_id, pp_finding **out, int *n, int *computed);

/* pp_diag_run on every run of the store. *n_findings (may be NULL) gets the
 * total. Returns 0, or -1 with a message naming the run in err. */
int pp_diag_run_all(pp_store *st, int *n_findings, char *err, size_t errlen);

void pp_diag_result_free(pp_diag_result *r);

/* The rules, for `--help` texts and docs. */
typedef struct pp_diag_rule_info {
	const char *id;           /* "iteration_time_grows" */
	const char *summary;      /* what it detects, one line */
} pp_diag_rule_info;
const pp_diag_rule_info *pp_diag_rules(int *n);

/* Terminal output: one block per finding (severity, title, evidence, fix).
 * flags: PP_DIAG_PRINT_COLOR for ANSI colours, PP_DIAG_PRINT_BRIEF for
 * titles only. Prints "no findings" for n == 0. */
enum { PP_DIAG_PRINT_COLOR = 1, PP_DIAG_PRINT_BRIEF = 2 };
void pp_diag_print(FILE *out, const pp_finding *f, int n, int flags);

/* Index of a finding of rule `rule` in f[0..n), or -1. */
int pp_diag_find(const pp_finding *f, int n, const char *rule);

/* ---- diff of two runs ----
 * Phase-by-phase: per-kind totals, step count and step-time median. The
 * step row is judged by a Mann-Whitney U test on the two runs' steady step
 * times plus a minimum effect (the Hodges-Lehmann shift and the shift of
 * the lower quartile both beyond max(10% of A's median, 2 x the quieter
 * run's step-to-step noise)), confirmed by the same test on each step's CPU
 * time when both runs have it (step.cpu_ns); the total and per-kind rows by thresholds from the
 * step noise. See README.md. */
enum pp_diff_verdict { PP_DIFF_SAME = 0, PP_DIFF_REGRESSION = 1, PP_DIFF_IMPROVEMENT = 2 };

typedef struct pp_diff_row {
	char name[48];            /* "step median", "compile", … */
	int kind;                 /* pp_kind, or -1 for the step rows and the total */
	int64_t count_a, count_b;
	int64_t ns_a, ns_b;       /* total (or median for "step median") */
	double ratio;             /* ns_b / ns_a; 0 when ns_a == 0 */
	int64_t threshold_ns;     /* |b - a| beyond this is not noise */
	int verdict;              /* enum pp_diff_verdict */
} pp_diff_row;

typedef struct pp_diff {
	pp_run_info a, b;
	pp_diff_row *rows;        /* malloc'd */
	int n;
	int n_steps_a, n_steps_b;
	double noise_rel;         /* relative step noise: 1.4826·MAD of step-to-step
				     differences / sqrt(2) / median, larger of the runs */
	int noise_from_steps;     /* 0: no steps, a default floor was used */
	int regressions, improvements;
	/* the step row's test (pp_diff_step_test) */
	int step_test;            /* PP_DIFF_TEST_MANN_WHITNEY, or PP_DIFF_TEST_THRESHOLD when
				     a run has fewer than PP_DIFF_MW_MIN_STEPS steady steps */
	double step_p;            /* two-sided p of the U test (1 when not run) */
	double step_alpha;        /* significance level: PP_DIFF_MW_ALPHA */
	double step_shift_ns;     /* Hodges-Lehmann shift of B's steps against A's */
	double step_q25_a, step_q25_b; /* lower quartiles of the steady steps */
	double step_min_effect_ns; /* both shifts must exceed this */
	int64_t floor_ns;         /* the total and per-kind rows' absolute floor (before the
				     per-kind sqrt(count) scaling) */
	int step_wall_verdict;    /* the test on wall times alone */
	/* the same test on each step's CPU time (counter step.cpu_ns), when both
	 * runs have it (step_cpu = 1) */
	int step_cpu, step_cpu_verdict;
	double step_cpu_p, step_cpu_shift_ns, step_cpu_median_a, step_cpu_median_b;
	double step_cpu_min_effect_ns;
	double step_cpu_share;    /* median CPU / median wall time of a step, larger run's
				     (information) */
	int step_contention;      /* 1: the runs' loads differed (load_factor beyond
				     PP_DIFF_LOAD_DIFFERS) and the steps' CPU times differ by
				     less than contention alone makes (PP_DIFF_CONTENTION):
				     the step row is same */
	double load_factor;       /* B's wall time per CPU time of a step / A's (1 without
				     CPU times): the total and phase rows compare B / it
				     with A */
	int common_rows;          /* phase rows whose common slowdown was estimated (0: none) */
	double common_min, common_max; /* the range of those estimates */
	char error[256];
} pp_diff;

enum { PP_DIFF_TEST_THRESHOLD = 0, PP_DIFF_TEST_MANN_WHITNEY = 1 };
#define PP_DIFF_MW_ALPHA 0.001
#define PP_DIFF_MW_MIN_STEPS 6
#define PP_DIFF_STEP_MIN_REL 0.10  /* of A's median step */
#define PP_DIFF_STEP_NOISE_K 2.0   /* x the quieter run's step-to-step noise (sigma) */
/* Two runs whose wall time per CPU time differs beyond this ratio ran on a
 * machine loaded differently; a process's CPU time itself grows under
 * contention (shared caches, SMT, frequency): 1.44x for a torch loop beside
 * two busy loops on the 2-CPU development VM (2026-11-28). Then a step's
 * CPU time must change beyond PP_DIFF_CONTENTION to be the program's. */
#define PP_DIFF_LOAD_DIFFERS 1.25
#define PP_DIFF_CONTENTION 1.5

/* Compares run_a of store a with run_b of store b (a and b may be the same
 * store). Returns 0, or -1 with a one-line message in out->error. */
int pp_diag_diff(pp_store *a, int64_t run_a, pp_store *b, int64_t run_b, pp_diff *out);
void pp_diff_free(pp_diff *d);
const char *pp_diff_verdict_name(int verdict); /* "same" | "regression" | "improvement" */

/* ---- regression gate over a diff (`phaseprof diff --fail-on`) ----
 * A rule names a row and a limit: "compile=10" fails when the compile total
 * regressed beyond noise (the diff's own verdict) AND grew by more than 10%.
 * Names: a phase kind ("weight_load"), "total" (run duration), "step" (the
 * step median) or "any" (every row). */
#define PP_GATE_MAX 32
typedef struct pp_gate_rule {
	char name[48];
	double limit_pct;
} pp_gate_rule;

typedef struct pp_gate_check {
	char name[48];            /* the row's name ("step median", "compile") */
	double limit_pct;
	double change_pct;        /* (b - a) / a * 100; INFINITY when a phase is new */
	int verdict;              /* the row's enum pp_diff_verdict */
	int present;              /* 0: the phase is in neither run */
	int failed;
} pp_gate_check;

/* Parses "KIND=PCT[,KIND=PCT]..." (PCT may end in '%') and appends to
 * rules[*n]. Returns 0, or -1 with a one-line message in err. */
int pp_gate_parse(const char *spec, pp_gate_rule *rules, int max, int *n, char *err, size_t errlen);
/* Checks every rule against d; writes one check per (rule, matching row),
 * at most max. Returns the number of failed checks. */
int pp_gate_eval(const pp_diff *d, const pp_gate_rule *rules, int n_rules, pp_gate_check *out,
		 int max, int *n_out);

#ifdef __cplusplus
}
#endif
#endif /* PP_DIAGNOSTICS_H */
