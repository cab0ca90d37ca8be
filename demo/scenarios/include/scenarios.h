/*
 * scenarios.h — the built-in slowdown scenarios.
 *
 * A scenario is one complaint from a write-up ("re-initialising variables in
 * a loop gets slower each time") turned into a real workload on flow, in a
 * slow variant (variant 0) and one or more fixed variants. Each variant runs
 * in its own fresh process (start-up and registration costs are per process)
 * with its own spool; `phaseprof run` ingests every spool into one database,
 * one run per variant (runs.scenario / runs.variant), runs the diagnostics
 * and then asks the scenario which of the write-up's claimed causes its
 * numbers support.
 *
 * Child side:   pp_scenario_child()  opens the recorder, runs, closes.
 * Parent side:  pp_scenario_measure(), pp_scenario_claims() read the store.
 */
#ifndef PP_SCENARIOS_H
#define PP_SCENARIOS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pp_scenario pp_scenario;

/* Workload sizes. FULL is `phaseprof run` (all scenarios in a couple of
 * minutes on 2 cores); QUICK is for the tests (ratios still hold); SMOKE only
 * walks every code path (sanitizer builds), its numbers mean nothing. */
enum pp_scn_size { PP_SCN_FULL = 0, PP_SCN_QUICK = 1, PP_SCN_SMOKE = 2 };
const char *pp_scn_size_name(int size);   /* "full" | "quick" | "smoke" */
int pp_scn_size_from_name(const char *s); /* -1 if unknown */

/* ---- the table ---- */
int pp_scenario_count(void);
const pp_scenario *pp_scenario_at(int i);
const pp_scenario *pp_scenario_find(const char *name);  /* NULL if unknown */
const char *pp_scenario_name(const pp_scenario *s);     /* "repeated-init" */
const char *pp_scenario_complaint(const pp_scenario *s);/* the one-line complaint */
const char *pp_scenario_source(const pp_scenario *s);   /* the write-up it comes from */
int pp_scenario_num_variants(const pp_scenario *s);
/* Variant kinds: SLOW shows the complaint (variant 0 always is one), FIX
 * applies a fix, PROBE measures a claim of the write-up and is neither
 * (e.g. "eager execution starts faster"). */
enum pp_scn_variant_kind { PP_SCN_VARIANT_SLOW = 0, PP_SCN_VARIANT_FIX, PP_SCN_VARIANT_PROBE };
int pp_scenario_variant_kind(const pp_scenario *s, int v);
const char *pp_scn_variant_kind_name(int kind);   /* "slow" | "fix" | "probe" */
/* The diagnostics rule expected as the top finding of a SLOW variant (a
 * scenario may have several slow variants with different causes); NULL for
 * FIX and PROBE variants. */
const char *pp_scenario_variant_expect(const pp_scenario *s, int v);
const char *pp_scenario_variant_name(const pp_scenario *s, int v);  /* variant 0 is the slow one */
const char *pp_scenario_variant_what(const pp_scenario *s, int v);  /* one line */
int pp_scenario_variant_find(const pp_scenario *s, const char *name); /* -1 if unknown */
/* Diagnostics rule ids that name this scenario's causes; no FIX variant may
 * show any of them (rules[0] is the default expected top finding of a SLOW
 * variant, see pp_scenario_variant_expect). */
const char *const *pp_scenario_rules(const pp_scenario *s, int *n);
/* 1 if the scenario can run on this machine; else 0 and the reason (e.g. no
 * GPU, from the driver probe) in why. */
int pp_scenario_available(const pp_scenario *s, char *why, size_t len);
/* "the headline figure" of a variant, e.g. "time of the 50 iterations". */
const char *pp_scenario_metric_name(const pp_scenario *s);

/* ---- child side: one variant in this (fresh) process ---- */
typedef struct pp_scn_child_opts {
	const char *spool_path;   /* the recorder's spool */
	const char *workdir;      /* scratch folder shared by the variants of one
	                             scenario (weight files, plan caches) */
	int size;                 /* enum pp_scn_size */
	uint64_t fork_mono_ns;    /* CLOCK_MONOTONIC when the parent forked; 0 unknown */
} pp_scn_child_opts;

/* Opens the recorder labelled with the scenario and variant, runs the
 * variant, closes the recorder. Returns 0, or -1 with a one-line message in
 * err (what the variant could not do; the recording so far is kept). */
int pp_scenario_child(const pp_scenario *s, int variant, const pp_scn_child_opts *o,
		      char *err, size_t errlen);

/* Scratch set-up shared by the variants of a scenario, run once by the parent
 * before the first variant (e.g. writing the weight files the variants load,
 * so that no variant pays for producing them). NULL-safe; 0 or -1 with err. */
int pp_scenario_prepare(const pp_scenario *s, const char *workdir, int size, char *err,
			size_t errlen);

/* ---- parent side: read a variant's run back ---- */
typedef struct pp_scn_measure {
	int64_t measured_ns;      /* the headline figure (the "measured" span); -1 missing */
	int64_t total_ns;         /* the run's duration */
	int n_steps;
	int64_t first_step_ns, median_step_ns;
	int64_t first10_ns, last10_ns;   /* median of the first / last tenth of the steps */
} pp_scn_measure;
int pp_scenario_measure(pp_store *st, int64_t run_id, pp_scn_measure *out);

/* Claims of the write-up that this scenario measures, and whether the
 * numbers support them. */
enum pp_claim_verdict {
	PP_CLAIM_NOT_MEASURED = 0,   /* a run is missing or the data is not there */
	PP_CLAIM_SUPPORTED,
	PP_CLAIM_NOT_SUPPORTED,
	PP_CLAIM_PARTLY,             /* real but not what explains the complaint */
};
const char *pp_claim_verdict_name(int v); /* "supported", "not supported", … */

typedef struct pp_scn_claim {
	char id[32];              /* "fragmentation" */
	char claim[200];          /* what the write-up says, briefly */
	int verdict;              /* enum pp_claim_verdict */
	char evidence[600];       /* the numbers behind the verdict */
} pp_scn_claim;

/* run_ids[v] is the run of variant v (0 if it did not run). Fills up to max
 * claims and returns how many, and stores each as run_meta
 * "claim.<id>" = "<verdict>: <evidence>" on the slow variant's run (the
 * store must be open for writing for that; otherwise nothing is stored). */
int pp_scenario_claims(const pp_scenario *s, pp_store *st, const int64_t *run_ids,
		       pp_scn_claim *out, int max);

#ifdef __cplusplus
}
#endif
#endif /* PP_SCENARIOS_H */
