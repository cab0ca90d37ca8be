/*
 * viewers.h — everything that reads a recording and shows it: the HTML
 * report, Chrome-trace / folded-stack / CSV exports, Graphviz renderings of
 * graph snapshots and the terminal tables of `phaseprof stats`.
 *
 * Viewers only read the store (store/include/store.h). Every output format is a
 * backend: an ops struct of callbacks (uftrace's dump_ops) driven by
 * pp_view_write(), which selects the runs, opens the output and calls
 * begin / run (once per selected run) / end.
 */
#ifndef PP_VIEWERS_H
#define PP_VIEWERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "pp_fmt.h"
#include "store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- output sink: buffered file, gzip (zlib) or memory ---- */
typedef struct pp_out pp_out;

/* path "-" writes to stdout. gzip != 0 compresses with zlib. NULL on
 * failure with a message naming the file in err. A file is written to a
 * temporary file beside it and renamed into place by pp_out_close only when
 * every write succeeded; an existing path that is not a regular file is
 * refused. */
pp_out *pp_out_open(const char *path, int gzip, char *err, size_t errlen);
/* An in-memory sink (tests, the report embedding SVG renderings). */
pp_out *pp_out_memory(void);
void pp_out_write(pp_out *o, const void *p, size_t n);
void pp_out_puts(pp_out *o, const char *s);
void pp_out_putc(pp_out *o, int c);
void pp_out_printf(pp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pp_out_i64(pp_out *o, int64_t v);            /* fast decimal */
void pp_out_us(pp_out *o, int64_t ns);            /* ns as exact microseconds "12.345" */
void pp_out_html(pp_out *o, const char *s);       /* HTML/XML-escaped text */
void pp_out_json_str(pp_out *o, const char *s);   /* quoted JSON string */
/* Memory sinks only: the bytes so far (NUL-terminated) and their length. */
const char *pp_out_data(pp_out *o, size_t *len);
/* Flushes and closes; returns 0, or -1 if any write failed (message in err). */
int pp_out_close(pp_out *o, char *err, size_t errlen);
/* Closes without keeping anything: the temporary file is removed and the
 * destination left as it was. */
void pp_out_abort(pp_out *o);

/* ---- options shared by the backends ---- */
typedef struct pp_view_opts {
	int64_t run_id;          /* 0: every run in the database */
	int gzip;                /* compress the output (export) */
	int64_t graph_id;        /* dot/svg: graphs.id; 0 = last snapshot of the run */
	int max_graph_nodes;     /* graph layout cap; 0 = PP_GRAPH_DEFAULT_CAP */
	int timeline_budget;     /* report: timeline items kept before aggregation; 0 = default */
	int folded_source;       /* enum pp_folded_source */
	const char *title;       /* report title; NULL = database file name */
} pp_view_opts;

enum pp_folded_source { PP_FOLDED_AUTO = 0, PP_FOLDED_SAMPLES, PP_FOLDED_SPANS };

#define PP_GRAPH_DEFAULT_CAP 400
#define PP_TIMELINE_DEFAULT_BUDGET 120000

typedef struct pp_view_ctx pp_view_ctx;   /* private to the viewers */

/* One output backend. begin and end may be NULL. Each returns 0 or -1 after
 * writing a message with pp_view_fail(). */
typedef struct pp_view_ops {
	const char *name;                 /* "chrome" */
	const char *description;          /* one line for --help */
	int (*begin)(pp_view_ctx *c);
	int (*run)(pp_view_ctx *c, const pp_run_info *run);
	int (*end)(pp_view_ctx *c);
	int needs_graph;                  /* only runs with a graph snapshot make sense */
} pp_view_ops;

/* NULL-terminated table of backends: html chrome perfetto folded dot svg csv. */
const pp_view_ops *const *pp_view_backends(void);
const pp_view_ops *pp_view_backend(const char *name);

/* Writes `format` for the selected runs to path ("-" = stdout). Returns 0,
 * or -1 with a one-line message in err (unknown run id, unknown format, a
 * write error naming the file…). */
int pp_view_write(pp_store *st, const char *format, const pp_view_opts *opts,
		  const char *path, char *err, size_t errlen);
/* The same into an existing sink (tests). */
int pp_view_write_out(pp_store *st, const char *format, const pp_view_opts *opts,
		      pp_out *out, char *err, size_t errlen);

/* ---- graph rendering (Graphviz in-process: libcgraph + libgvc) ---- */
typedef struct pp_graph_render_info {
	int n_nodes, n_edges;             /* of the snapshot */
	int shown_nodes, shown_edges;     /* drawn (after clustering) */
	int clustered;                    /* 1 if nodes were grouped to fit the cap */
	char note[256];                   /* what was grouped and why; "" if nothing */
} pp_graph_render_info;

/* Renders snapshot graphs.id = graph_id as "svg" or "dot" into out. Node
 * fill colour encodes measured time (graph_nodes.cost_ns, else the run's op
 * time for that node name). Above `cap` nodes (0 = default) the graph is
 * grouped by name scope, then by op type, and info->note says so. */
int pp_graph_render(pp_store *st, int64_t graph_id, const char *format, int cap,
		    pp_out *out, pp_graph_render_info *info, char *err, size_t errlen);

/* ---- terminal tables (phaseprof stats) ---- */
/* Runs, phase totals per run, top ops and findings; json != 0 prints one
 * JSON document instead. width: terminal columns (0 = 80). */
int pp_stats_print(pp_store *st, int64_t run_id, int json, int width, FILE *fp,
		   char *err, size_t errlen);

/* Formats a duration in ns as "12.3 ms" / "850 µs" / "1.24 s" into buf. */

#ifdef __cplusplus
}
#endif
#endif /* PP_VIEWERS_H */
