/*
 * scn_internal.h — what the scenario files share (private to demo/scenarios/).
 *
 * A scenario file (scn_<name>.c) defines one `const pp_scenario scn_<name>`:
 * its variants (run functions executed in a fresh child process with the
 * recorder open), an optional prepare step run once by the parent, and a
 * claims function that reads the variants' runs back from the store and says
 * which of the write-up's claimed causes the numbers support.
 *
 * Conventions every variant follows, so the summary and the tests can read
 * any scenario the same way:
 *  - the work the complaint is about is wrapped in scn_measured_begin/end
 *    (a span named "measured"): that is the headline figure;
 *  - loop iterations are pp_step_begin/end (sessions run with
 *    no_step_phase so they do not add steps of their own);
 *  - per-iteration evidence is sampled with scn_sample_* at the end of each
 *    step, as counters the diagnostics already read (graph.nodes, alloc.*).
 */
#ifndef PP_SCN_INTERNAL_H
#define PP_SCN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "flow.h"
#include "phaseprof.h"
#include "pp_fmt.h"
#include "scenarios.h"
#include "store.h"

typedef struct scn_env {
	int size;                 /* enum pp_scn_size */
	const char *workdir;
	uint64_t fork_mono_ns;
	char *err;
	size_t errlen;
} scn_env;

typedef int (*scn_run_fn)(scn_env *e);

#define SCN_SLOW PP_SCN_VARIANT_SLOW
#define SCN_FIX PP_SCN_VARIANT_FIX
#define SCN_PROBE PP_SCN_VARIANT_PROBE

typedef struct scn_variant {
	const char *name;
	int kind;                 /* enum pp_scn_variant_kind */
	const char *what;
	scn_run_fn run;
	const char *expect;       /* SLOW: the finding expected on top; NULL = rules[0] */
} scn_variant;

struct pp_scenario {
	const char *name;
	const char *complaint;
	const char *source;
	const char *metric;
	const scn_variant *variants;
	int n_variants;
	const char *const *rules;
	int n_rules;
	int (*available)(char *why, size_t len);             /* NULL: always */
	int (*prepare)(const char *workdir, int size, char *err, size_t errlen); /* NULL: none */
	int (*claims)(pp_store *st, const int64_t *run_ids, pp_scn_claim *out, int max);
};

#define SCN_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

extern const pp_scenario scn_repeated_init, scn_model_init, scn_growing_graph, scn_startup,
	scn_first_step, scn_retracing, scn_alloc_churn, scn_transfer;

/* ---- child-side helpers (scn_util.c) ---- */
/* Sets e->err (printf-style) and returns -1. */
int scn_fail(scn_env *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Size-dependent parameter. */
static inline int scn_pick(const scn_env *e, int full, int quick, int smoke)
{
	return e->size == PP_SCN_SMOKE ? smoke : e->size == PP_SCN_QUICK ? quick : full;
}
void scn_measured_begin(void);
void scn_measured_end(void);
/* Counters proc.rss_bytes, proc.minflt, proc.majflt (cumulative, getrusage). */
void scn_sample_proc(void);
/* Resident set size in bytes now (statm), 0 if unknown. */
uint64_t scn_rss_bytes(void);
/* CLOCK_MONOTONIC in ns (the same clock the parent stamps the fork with). */
uint64_t scn_mono_ns(void);

/* ---- parent-side helpers (scn_analysis.c) ---- */
typedef struct scn_series {
	double *v;
	int n;
} scn_series;
/* Durations (ns) of the outermost steps of a run, in time order. */
int scn_steps(pp_store *st, int64_t run_id, scn_series *out);
/* A counter's value at the end of each step (last sample at or before it);
 * NAN where no sample precedes the step end. */
int scn_counter_at_steps(pp_store *st, int64_t run_id, const char *name, scn_series *out);
/* Per step (in step order, as scn_steps): total ns of the outermost phases
 * of `kind` inside it. */
int scn_kind_per_step(pp_store *st, int64_t run_id, int kind, scn_series *out);
/* Last value of a counter; fallback if absent. */
double scn_counter_last(pp_store *st, int64_t run_id, const char *name, double fallback);
/* Sum of every sample of a counter (per-event totals such as weights.bytes). */
double scn_counter_sum(pp_store *st, int64_t run_id, const char *name);
/* run_meta value as a number; fallback if absent. */
double scn_meta_num(pp_store *st, int64_t run_id, const char *key, double fallback);
/* Total ns of top-level phases of a kind, and their count (NULL ok). */
int64_t scn_kind_total(pp_store *st, int64_t run_id, int kind, int64_t *count);
/* Total ns of spans named `name` (any kind), count into *count. */
int64_t scn_span_total(pp_store *st, int64_t run_id, const char *name, int64_t *count);
void scn_series_free(scn_series *s);

double scn_median(const double *v, int n);
/* Median of v[from, from+k). */
double scn_median_range(const double *v, int from, int k);
/* Spearman rank correlation of x and y over pairs where both are finite;
 * NAN if fewer than 3 such pairs or no variance. */
double scn_correlation(const double *x, const double *y, int n);
/* Share of the growth of y (last tenth minus first tenth) that a least
 * squares fit on x explains: slope(y~x) * (x_last - x_first) / (y_last - y_first). */
double scn_explained_growth(const double *x, const double *y, int n);

/* Fills one claim; returns the next free index (or max when full). */
int scn_claim(pp_scn_claim *out, int i, int max, const char *id, const char *claim,
	      int verdict, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* "12.3 ms" */


/* ---- flow helpers (scn_flow.c) ---- */
/* flow_init for the scenarios whose subject is not start-up: lite op
 * registration, so the full registry (the startup scenario's subject, a
 * real cost in every process) does not dominate the short start-up of a
 * loop scenario and hide the finding the scenario is about. */
int scn_flow_init(scn_env *e, flow_status *st);
int scn_flow_init_opts(scn_env *e, int op_timing, flow_status *st);
/* Counters the diagnostics read, sampled at the end of a step:
 * graph.nodes, and alloc.count / alloc.sys_count (allocations that went to
 * the system: BFC region growth, every allocation in malloc mode) /
 * alloc.bytes_in_use / alloc.time_ns / alloc.fragmentation. */
void scn_sample_graph(const flow_graph *g);
void scn_sample_alloc(flow_allocator *a, int kind /* enum flow_alloc_kind */);
/* Deterministic input data (xorshift, uniform in [-1, 1)). */
flow_tensor *scn_tensor_uniform(int ndim, const int64_t *dims, uint64_t seed, flow_status *st);
/* Graph builders; {NULL,0} on error with st set. */
flow_output scn_binary(flow_graph *g, const char *type, const char *name, flow_output a,
		       flow_output b, flow_status *st);
flow_output scn_matmul(flow_graph *g, const char *name, flow_output a, flow_output b,
		       flow_status *st);
/* Standard normal [rows, cols] scaled by stddev (a RandomStandardNormal op). */
flow_output scn_random_normal(flow_graph *g, const char *name, int ndim, const int64_t *dims,
			      float stddev, int64_t seed, flow_status *st);
/* Zeros of a shape (a Const). */
flow_output scn_zeros(flow_graph *g, const char *name, int ndim, const int64_t *dims,
		      flow_status *st);

/* Weight files (prepare steps): f32 tensors in safetensors or flow's naive
 * text format. */
typedef struct scn_wtensor {
	const char *name;
	int rank;
	int64_t shape[2];
	const float *data;
} scn_wtensor;
int scn_write_safetensors(const char *path, const scn_wtensor *t, int n, char *err, size_t errlen);
int scn_write_text(const char *path, const scn_wtensor *t, int n, char *err, size_t errlen);
/* Deterministic weights, uniform in [-0.05, 0.05) (malloc'd). */
float *scn_weights_data(int rank, const int64_t *shape, uint64_t seed);
/* A LoadWeight node: tensor `tensor` of the file at path, of a known shape. */
flow_output scn_load_weight(flow_graph *g, const char *name, const char *path, const char *tensor,
			    int rank, const int64_t *shape, flow_status *st);
/* A variable set by a restore, as TF's saver.restore: no initialiser, an
 * Assign from a LoadWeight of the file (*assign; group them and run the
 * group). */
flow_output scn_restored_variable(flow_graph *g, const char *name, const char *path,
				  const char *tensor, int rank, const int64_t *shape, flow_op **assign,
				  flow_status *st);
/* An Initializer node (Keras initialiser `kind`: "glorot_uniform",
 * "orthogonal", "zeros", …) of a known shape. */
flow_output scn_initializer(flow_graph *g, const char *name, const char *kind, int rank,
			    const int64_t *shape, int64_t seed, flow_status *st);

#endif /* PP_SCN_INTERNAL_H */
