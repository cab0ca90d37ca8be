/* view_int.h — private to viewers/: the backend context, the trace model
 * shared by the Chrome export and the report timeline, small helpers. */
#ifndef PP_VIEW_INT_H
#define PP_VIEW_INT_H

#include <stdarg.h>
#include <stdlib.h>
#include "phaseprof.h"
#include "pp_grow.h"
#include "pp_hash.h"
#include "viewers.h"

struct pp_view_ctx {
	pp_store *st;
	pp_out *out;
	const pp_view_opts *opts;
	const pp_run_info *runs;  /* the selected runs */
	int n_runs;
	int64_t base_unix_ns;     /* earliest start among the selected runs */
	char *err;
	size_t errlen;
	void *priv;               /* backend state */
	int run_index;            /* index of the run being written */
};

/* qsort/bsearch that accept an empty (NULL) array: passing NULL to the libc
 * ones is undefined even with n == 0 (UBSan says so). */
static inline void pp_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}
static inline void *pp_bsearch(const void *key, const void *base, size_t n, size_t size,
			       int (*cmp)(const void *, const void *))
{
	return n ? bsearch(key, base, n, size, cmp) : NULL;
}

/* Writes a one-line message into the context's error buffer; returns -1. */
int pp_view_fail(pp_view_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

extern const pp_view_ops pp_backend_html, pp_backend_chrome, pp_backend_perfetto, pp_backend_folded,
	pp_backend_dot, pp_backend_svg, pp_backend_csv;

/* ---- string interning for the model (names repeat a lot) ---- */
typedef struct pp_strtab {
	char **s;
	int n, cap;
	pp_hash index;            /* hash of s[i] -> i; zeroed is empty */
} pp_strtab;
int pp_strtab_add(pp_strtab *t, const char *s);   /* returns the index */
/* In place: control bytes become spaces and bytes that are not UTF-8 '?'
 * (a name from a recording made safe for XML, e.g. Graphviz's SVG; also
 * a character cut by a truncating snprintf). */
void pp_text_clean(char *s);
void pp_strtab_free(pp_strtab *t);

/* ---- the trace model: tracks of non-overlapping-or-nested items ---- */
enum pp_item_cat {
	PP_CAT_SPAN = 0,          /* phases and spans (kind in `kind`) */
	PP_CAT_OP,                /* op executions */
	PP_CAT_GPU_API,           /* CUDA demo/flow/driver calls on a CPU thread */
	PP_CAT_GPU,               /* kernels, copies, memsets on a GPU stream */
};

typedef struct pp_item {
	int64_t start, end;       /* ns since the run's start */
	int32_t name;             /* pp_strtab index */
	uint8_t cat, kind;        /* pp_item_cat; pp_kind for spans */
	uint16_t depth;           /* nesting depth within its track */
	int64_t arg;              /* step for spans/ops, correlation id for GPU */
	int64_t bytes;            /* GPU copies */
} pp_item;

typedef struct pp_track {
	char name[96];
	int64_t tid;              /* OS tid, or -1 for GPU streams */
	int64_t device, stream;   /* GPU tracks */
	int gpu;
	int lane;                 /* 0 = the thread's own track, >0 overflow lanes */
	pp_item *items;           /* sorted by start, then longer first */
	int n, cap;
	int depth;                /* rows needed (max depth + 1) */
} pp_track;

typedef struct pp_model {
	pp_strtab names;
	pp_track *tracks;
	int n_tracks, cap_tracks;
	int64_t t_end;            /* latest item end */
	int64_t n_items;
	int open_spans;           /* spans still open at the end (drawn to t_end) */
	int64_t dropped;          /* items beyond the lane cap (not drawn; counted) */
	int64_t left_out;         /* pp_model_load_kept: leaf spans past the per-name quota */
	int has_gpu;
} pp_model;

/* Loads spans, ops and GPU activity of a run and splits every thread into
 * lanes so items on one track nest strictly (Perfetto's requirement). */
int pp_model_load(pp_store *st, const pp_run_info *run, pp_model *m, char *err, size_t errlen);
/* The same with the spans a default recording keeps one by one (every
 * span but the leaf op/span spans past PP_SPANS_KEPT_PER_NAME of a name,
 * counted in left_out): what a report draws, in bounded memory. */
int pp_model_load_kept(pp_store *st, const pp_run_info *run, pp_model *m, char *err, size_t errlen);
/* Ops and GPU activity only: the Chrome export streams a big run's spans. */
int pp_model_load_no_spans(pp_store *st, const pp_run_info *run, pp_model *m, char *err, size_t errlen);
void pp_model_free(pp_model *m);

/* ---- queries shared by the report and stats ---- */
/* pp_graph_render with the run's op times already aggregated (the report
 * has them), so each snapshot doesn't re-scan the ops table. */
int pp_graph_render_ops(pp_store *st, int64_t graph_id, const char *format, int cap, pp_out *out,
			pp_graph_render_info *info, char *err, size_t errlen, const pp_op_stat *ops, int n_ops);

/* Scenario speed-up baseline: index of the "slow" variant in runs of one
 * scenario (the variant called slow/baseline, else the longest). */
int pp_pick_baseline(const pp_run_info *runs, const int *idx, int n);

/* Folded stacks of a run: unique paths (root;...;leaf) with counts.
 * samples: CPU sample counts; spans: self time in ns per timeline path. */
int pp_folded_samples(pp_store *st, int64_t run_id, const char *root, pp_strtab *paths, int64_t **counts);
int pp_folded_spans(pp_store *st, const pp_run_info *run, const char *root, pp_strtab *paths,
		    int64_t **counts, char *err, size_t errlen);

#endif
