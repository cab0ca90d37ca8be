/*
 * store.h — the SQLite store: ingest of spool files, and the read API the
 * viewers use. One database file holds many runs. Schema: docs/schema.md.
 */
#ifndef PP_STORE_H
#define PP_STORE_H

#include <stdint.h>
#include <stddef.h>
#include <sqlite3.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PP_SCHEMA_VERSION 2
#define PP_APPLICATION_ID 0x50505246 /* "PPRF" in PRAGMA application_id */

typedef struct pp_store pp_store;

enum pp_store_mode {
	PP_STORE_READ = 0,   /* must exist and be a phaseprof database */
	PP_STORE_WRITE = 1,  /* created if missing; WAL while open */
};

/* Opens a database. On failure returns NULL and writes a one-line message
 * naming the file and what is wrong (missing, not SQLite, another program's
 * database, newer schema, read-only…) into err. */
pp_store *pp_store_open(const char *path, int mode, char *err, size_t errlen);
/* Builds indexes, checkpoints the WAL and leaves one portable file. */
int pp_store_close(pp_store *st, char *err, size_t errlen);
sqlite3 *pp_store_db(pp_store *st);
const char *pp_store_path(pp_store *st);
/* Interns a string; returns its id (or -1 on error). */
int64_t pp_store_intern(pp_store *st, const char *s);

/* ---- ingest ---- */
/* Called now and then during a long ingest: bytes of work done of total,
 * and seconds since this spool's ingest began. */
typedef void (*pp_ingest_progress_fn)(void *ud, const char *spool, uint64_t done, uint64_t total,
				       double seconds);

typedef struct pp_ingest_opts {
	int64_t parent_run;      /* 0: none */
	const char *command;     /* overrides the spool's own command line, if any */
	int exit_code;           /* -1 unknown */
	int term_signal;         /* 0 none */
	int keep_all_spans;      /* 1: a row for every span (default: short leaf op/span
				  * spans past 10,000 per thread and name go to span_groups) */
	pp_ingest_progress_fn progress;
	void *progress_ud;
} pp_ingest_opts;

typedef struct pp_ingest_result {
	int64_t run_id;
	uint64_t chunks, events, rows, spans, open_spans;
	uint64_t spans_folded;   /* spans counted in span_groups instead of rows */
	uint64_t samples;        /* CPU samples symbolised */
	uint64_t events_lost, rows_lost;
	uint64_t bytes;
	int truncated;           /* 1 if an incomplete tail was cut */
	uint64_t truncated_at;   /* offset of the first byte not ingested */
	char note[256];          /* human-readable summary of any problem */
} pp_ingest_result;

/* Ingests one spool file as one run. Returns 0; on a truncated or corrupt
 * tail still returns 0 with res->truncated set (everything complete before
 * the damage is kept). Returns -1 only when nothing could be read (with err
 * naming the file and offset). */
int pp_store_ingest(pp_store *st, const char *spool_path, const pp_ingest_opts *opts,
		    pp_ingest_result *res, char *err, size_t errlen);

/* Ingests the spools of one recording session (a program, its forks, its
 * execs), parents first: ordered by start, each run linked to the image it
 * came from (the previous image of its pid, else its parent pid's). The last
 * image of top_pid (0: none) takes exit_code/term_signal; the others take
 * the agent's account from their spool. A spool that cannot be ingested is
 * reported in its slot and the others still are. */
typedef struct pp_session_spool {
	const char *path;        /* in */
	int64_t run_id;          /* out: 0 if not ingested */
	int is_top;              /* out: an image of top_pid; last_top: its last one */
	int is_last_top;
	pp_ingest_result res;
	char err[512];           /* out: why it was not ingested */
} pp_session_spool;

typedef struct pp_session_opts {
	uint32_t top_pid;
	int exit_code, term_signal;
	int keep_all_spans;
	pp_ingest_progress_fn progress;
	void *progress_ud;
} pp_session_opts;

/* Returns the number of spools ingested; the array is reordered. */
int pp_store_ingest_session(pp_store *st, pp_session_spool *spools, int n, const pp_session_opts *o);

/* What `record` prints about a run's start-up (profiler/store_startup.c).
 * Times in ns relative to the run's start; INT64_MIN where not recorded. */
typedef struct pp_startup_summary {
	int64_t loader_ns, main_ns, end_ns;  /* loader start, main (or la_preinit), agent end */
	int64_t libs, libs_dlopen, dlopen_calls;
	int64_t startup_map_ns, startup_init_ns, startup_batches;
	int64_t dlopen_map_ns, dlopen_init_ns;
	int64_t reloc_ns, ctor_ns, split_loads;  /* load time split by CPU samples */
	int64_t allocs, alloc_bytes, alloc_ns, alloc_peak, frees;
	int64_t files_opened, failed_opens, reads, read_bytes, small_reads, io_ns;
} pp_startup_summary;
int pp_store_startup_summary(pp_store *st, int64_t run_id, pp_startup_summary *out);

/* ---- read API (viewers, diagnostics, CLI) ---- */
typedef struct pp_run_info {
	int64_t id, parent_run;
	char label[128], scenario[64], variant[64], status[16];
	char command[512], host[64], clock[16];
	int64_t pid, ppid, start_unix_ns, duration_ns;
	int exit_code, term_signal;
	int64_t events, events_lost, rows_lost;
	char note[256];
} pp_run_info;

/* Arrays returned by these are malloc'd; free with free(). */
int pp_store_runs(pp_store *st, pp_run_info **out, int *n);
int pp_store_run(pp_store *st, int64_t run_id, pp_run_info *out); /* 0 / -1 if missing */

typedef struct pp_span_row {
	int64_t id, parent_id;
	int64_t tid;
	int kind;                 /* pp_kind */
	const char *name;         /* owned by the array (see pp_span_list) */
	int64_t start_ns, end_ns; /* end_ns = -1 if still open at the run's end */
	int depth;
	int64_t step;             /* -1 if none */
} pp_span_row;

typedef struct pp_span_list {
	pp_span_row *rows;
	int n;
	char *strings;            /* backing store for names */
} pp_span_list;
/* Spans of a run ordered by (tid, start_ns). kind_filter < 0: all kinds. */
int pp_store_spans(pp_store *st, int64_t run_id, int kind_filter, pp_span_list *out);
void pp_span_list_free(pp_span_list *l);

/* Per-kind totals of a run: time inside top-level phases of each kind
 * (nested phases of the same kind are not double counted). */
typedef struct pp_phase_total {
	int kind;
	const char *kind_name;    /* static */
	int64_t count, total_ns, max_ns;
} pp_phase_total;
int pp_store_phase_totals(pp_store *st, int64_t run_id, pp_phase_total **out, int *n);

/* Step durations of a run, ordered by iteration. */
typedef struct pp_step_row { int64_t step, start_ns, dur_ns; } pp_step_row;
int pp_store_steps(pp_store *st, int64_t run_id, pp_step_row **out, int *n);

typedef struct pp_counter_row { int64_t ts_ns; double value; } pp_counter_row;
/* Names of counters in a run (NULL-terminated array of malloc'd strings). */
char **pp_store_counter_names(pp_store *st, int64_t run_id);
void pp_store_free_names(char **names);
int pp_store_counter(pp_store *st, int64_t run_id, const char *name, pp_counter_row **out, int *n);

typedef struct pp_finding {
	int64_t run_id;
	char rule[64], severity[16];
	double score;
	char title[256], evidence[1024], fix[512];
} pp_finding;
int pp_store_add_finding(pp_store *st, const pp_finding *f);
int pp_store_clear_findings(pp_store *st, int64_t run_id);
int pp_store_findings(pp_store *st, int64_t run_id, pp_finding **out, int *n); /* run_id 0: all */

/* Recorded Python programs (store_python.c): imports by module, slowest
 * first by self time (by_self) or cumulative time; limit <= 0: all. Self
 * time excludes the module's nested imports, as `python -X importtime`. */
typedef struct pp_import_time {
	char module[256];
	int64_t count;            /* times imported (a failed import can be retried) */
	int64_t self_ns, cumulative_ns;
	int depth;                /* shallowest nesting among its spans */
} pp_import_time;
int pp_store_import_times(pp_store *st, int64_t run_id, int by_self, int limit,
			  pp_import_time **out, int *n);
/* What the agent saw of a Python program, one line (run_meta `python`):
 * "CPython 3.11.2: start-up, imports, ..." or "not recognised: <why>" or
 * "off (--no-python)...". 1 found, 0 not a Python run, -1 error. */
int pp_store_python_status(pp_store *st, int64_t run_id, char *out, size_t n);

/* Run a query with one int64 bind (?1 = run_id) and call cb per row; a small
 * helper so viewers don't repeat prepare/step/finalize boilerplate. */
/* Python frames of CPU samples (py_frames), ordered by id: a sample's
 * "p<id>" stack entry is the frame (symbol_id, module_id). store_pyframes.c */
typedef struct pp_py_frame { int64_t id, symbol_id, module_id; } pp_py_frame;
typedef struct pp_py_frames { pp_py_frame *v; int n; } pp_py_frames;
int pp_store_py_frames(pp_store *st, int64_t run_id, pp_py_frames *out);
const pp_py_frame *pp_py_frames_find(const pp_py_frames *f, int64_t id); /* NULL if absent */
void pp_py_frames_free(pp_py_frames *f);
/* The run's one line on Python frames in samples ("on: CPython 3.11.2" or
 * "off: why"): 0 found, 1 none (not Python or no sampling), -1 error. */
int pp_store_python_frames_state(pp_store *st, int64_t run_id, char *buf, size_t len);

/* CPU samples (store_samples.c): stack nodes in id order (parent 0 for a
 * root; python = a Python frame), then samples in time order (stack = leaf
 * node). A callback returning non-zero stops with -1. */
typedef struct pp_stack_node { int64_t id, parent; const char *symbol; int python; } pp_stack_node;
typedef int (*pp_stack_node_fn)(void *ud, const pp_stack_node *n);
typedef int (*pp_sample_fn)(void *ud, int64_t tid, int64_t ts_ns, int64_t stack);
int pp_store_stack_nodes(pp_store *st, int64_t run_id, pp_stack_node_fn fn, void *ud);
int pp_store_samples(pp_store *st, int64_t run_id, pp_sample_fn fn, void *ud);

typedef int (*pp_row_cb)(sqlite3_stmt *row, void *ud);
int pp_store_query(pp_store *st, const char *sql, int64_t run_id, pp_row_cb cb, void *ud);

#ifdef __cplusplus
}
#endif
#endif /* PP_STORE_H */
