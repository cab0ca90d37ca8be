/*
 * store.h — the SQLite store: ingest of spool files, and the read API the
 * viewers use. One database file holds many runs. Schema: docs/schema.md.
 */
#ifndef PP_STORE_H
#define PP_STORE_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PP_SCHEMA_VERSION 3
#define PP_APPLICATION_ID 0x50505246 /* "PPRF" in PRAGMA application_id */

typedef struct pp_store pp_store;

enum pp_store_mode {
	PP_STORE_READ = 0,   /* must exist and be a phaseprof database */
	PP_STORE_WRITE = 1,  /* created if missing; WAL while open */
	PP_STORE_CHECK = 2,  /* read-only, to see whether a writer may use it: as READ, but a file
			      * with no tables yet (empty, or being created by another writer) passes */
};

/* Opens a database. On failure returns NULL and writes a one-line message
 * naming the file and what is wrong (missing, not SQLite, another program's
 * database, newer schema, read-only…) into err. */
pp_store *pp_store_open(const char *path, int mode, char *err, size_t errlen);
/* A database owned by another user is refused for writing unless allowed
 * (the CLI's --force). New databases are created 0600. */
void pp_store_allow_foreign(int yes);
int pp_store_foreign_allowed(void);
/* As pp_store_open, for a thread that may be told to give up: while an
 * existing file is being checked, once *cancel is nonzero the open stops
 * within a thousand SQLite steps and returns NULL ("open interrupted"),
 * the file untouched. From its first write on (and for a new file) it
 * completes. */
pp_store *pp_store_open_cancellable(const char *path, int mode, const _Atomic int *cancel, char *err,
				    size_t errlen);
/* For a process that uses SQLite from one thread only (the CLI), called
 * before the first open: SQLite without its global mutexes and memory
 * statistics (each allocation took and released a mutex: ~5 % of a short
 * program's `record`). 0, or -1 if SQLite was already in use. */
int pp_store_single_threaded(void);
/* Builds indexes, checkpoints the WAL and leaves one portable file. */
int pp_store_close(pp_store *st, char *err, size_t errlen);

/* 1 when path's first 100 bytes show a phaseprof database this build can
 * append to, at rest (no writer in WAL mode): read with no SQLite and no
 * lock; what it cannot see (damaged pages) the write open finds. 0: look
 * closer (pp_store_open with PP_STORE_CHECK). */
int pp_store_header_current(const char *path);

/* Once the rows are in (appending to an existing database): the log's
 * syncs that close's checkpoint would wait for start now, in a thread, while
 * the caller reads the runs back (the checkpoint then finds them clean). */
void pp_store_sync_ahead(pp_store *st);
/* Builds the read indexes now (close does it anyway): for a writer that
 * reads back what it wrote, e.g. merge aligning clocks. */
int pp_store_build_indexes(pp_store *st, char *err, size_t errlen);
/* Before a long first ingest: drops the indexes of still-empty tables. */
int pp_store_defer_indexes(pp_store *st, char *err, size_t errlen);
/* The last SQLite error of this connection (e.g. "database disk image is
 * malformed"), for a message after a read function returned -1. */
const char *pp_store_error(pp_store *st);
const char *pp_store_path(pp_store *st);
/* 1 when this open made the schema (no other writer did) */
int pp_store_created(const pp_store *st);
/* 1 if path names the database file itself (same device and inode, so also
 * through a hard or symbolic link), else 0: outputs must never replace it. */
int pp_store_is_file(pp_store *st, const char *path);
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
	int refuse_stored;       /* 1: a spool whose run is already stored (same pid, ppid,
				  * start) fails with a one-line reason (`ingest`) */
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
typedef struct pp_ingest_spool {
	const char *path;        /* in */
	int ingested;            /* in: already tried alone (run_id, res and err
				  * set): linked to, not read again */
	int64_t run_id;          /* out: 0 if not ingested */
	int is_top;              /* out: an image of top_pid; last_top: its last one */
	int is_last_top;
	pp_ingest_result res;
	char err[512];           /* out: why it was not ingested (or, with a
				  * run_id, what went wrong after) */
} pp_ingest_spool;

typedef struct pp_ingest_session_opts {
	uint32_t top_pid;
	int exit_code, term_signal;
	int keep_all_spans;
	pp_ingest_progress_fn progress;
	void *progress_ud;
	int refuse_stored;       /* pp_ingest_opts.refuse_stored */
} pp_ingest_session_opts;

/* Returns the number of spools ingested; the array is reordered. */
int pp_store_ingest_session(pp_store *st, pp_ingest_spool *spools, int n, const pp_ingest_session_opts *o);

/* How a run ended, as its parent's wait saw it: exit_code (-1: none) and
 * term_signal (0: none; a signal also sets the status). 0, or -1 with err. */
int pp_store_run_set_exit(pp_store *st, int64_t run_id, int exit_code, int term_signal, char *err, size_t errlen);

/* What `record` prints about a run's start-up (store/store_startup.c).
 * Times in ns relative to the run's start; INT64_MIN where not recorded. */
typedef struct pp_startup_summary {
	int64_t loader_ns, main_ns, end_ns;  /* loader start, main (or la_preinit), agent end */
	int64_t libs, libs_dlopen, dlopen_calls;
	int64_t startup_map_ns, startup_init_ns, startup_batches;
	int64_t dlopen_map_ns, dlopen_init_ns;
	int64_t reloc_ns, ctor_ns, split_loads;  /* load time split by CPU samples */
	int64_t allocs, alloc_bytes, alloc_ns, alloc_peak, frees;
	int64_t files_opened, failed_opens, reads, read_bytes, small_reads, io_ns;
	/* Python: outermost process_start / import time (-1: no such span),
	 * closed imports, and the module with the most cumulative import time */
	int64_t py_startup_ns, imports_ns, imports, slowest_import_ns;
	char slowest_import[128];
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
/* What a run holds beyond spans, for readers that skip what is absent. */
enum { PP_RUN_HAS_GPU = 1, PP_RUN_IS_RANK = 2 };
int pp_store_run_has(pp_store *st, int64_t run_id, unsigned *flags); /* 0 / -1 */

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
/* The spans a default ingest keeps one by one, whatever the recording kept:
 * every span but the leaf op/span spans past the first per_name of each
 * (thread, kind, name), which are counted in *left_out (on a default
 * recording nothing is left out: those are in span_groups already). Same
 * order as pp_store_spans; memory bounded by what is kept. */
#define PP_SPANS_KEPT_PER_NAME 10000
int pp_store_spans_kept(pp_store *st, int64_t run_id, int64_t per_name, pp_span_list *out, int64_t *left_out);
/* The same rows one at a time without holding them (memory: the distinct
 * names), in id order: begin order, so each thread's spans come by start
 * (a merged run's or a stepped clock's may not). row->name lives until the
 * callback returns; a non-zero return stops the scan (then 0 is returned). */
int pp_store_each_span(pp_store *st, int64_t run_id, int (*cb)(const pp_span_row *, void *), void *ud);

/* Per-kind totals of a run: count and time of the outermost phases of each
 * kind (a phase nested in one of its own kind is neither counted nor its
 * time double counted; max_ns is the longest of any). */
typedef struct pp_phase_total {
	int kind;
	const char *kind_name;    /* static */
	int64_t count, total_ns, max_ns;
} pp_phase_total;
int pp_store_phase_totals(pp_store *st, int64_t run_id, pp_phase_total **out, int *n);

/* The steps of a run: closed `step` and `first_step` phases that are not
 * nested inside another step phase on the same thread, in order of start.
 * Every viewer, rule, scenario and command counts steps through this. */
typedef struct pp_step_row {
	int64_t step;             /* iteration; a first_step phase gets the one before the next */
	int64_t start_ns, dur_ns;
	int kind;                 /* PP_STEP or PP_FIRST_STEP */
} pp_step_row;
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

/* ---- distributed jobs (store_ranks.c) ----
 * A rank is a run with a `rank` in run_meta (written by the agent from the
 * launcher's environment); processes a rank forks or execs inherit the
 * variables and are left out (the topmost run claiming a rank is the rank). */
typedef struct pp_rank_run {
	int64_t run_id;
	int rank, world_size, local_rank;   /* -1: unknown */
	char job[128], host[64], status[16];
	int64_t start_unix_ns;              /* aligned when merge set an offset */
	int64_t duration_ns;
	int64_t clock_offset_ns;            /* added by merge (0: none) */
	int64_t clock_uncertainty_ns;       /* +- of that offset, -1: not estimated */
	int term_signal;
	int exit_code;                      /* -1: unknown (a signal, cut short) */
} pp_rank_run;
/* Every rank of every job in the store, ordered by job then rank. */
int pp_store_rank_runs(pp_store *st, pp_rank_run **out, int *n);
/* One run's rank entry: 0, 1 when the run is not a rank, -1 on error. */
int pp_store_rank_of(pp_store *st, int64_t run_id, pp_rank_run *out);

/* Collective calls no rank leaves before every rank has entered (MPI_Init,
 * MPI_Barrier, MPI_Allreduce, init_process_group, barrier, all_reduce),
 * in call order: the events merge aligns clocks on. */
typedef struct pp_sync_event { int64_t start_ns, end_ns; char name[32]; } pp_sync_event;
int pp_store_sync_events(pp_store *st, int64_t run_id, pp_sync_event **out, int *n);

/* Shifts a run's start_unix_ns by offset_ns (replacing an earlier offset)
 * and records clock.offset_ns, clock.uncertainty_ns, clock.aligned_on. */
int pp_store_set_clock_offset(pp_store *st, int64_t run_id, int64_t offset_ns, int64_t uncertainty_ns,
			      const char *how);

/* The clocks of one job's ranks aligned (store_align.c). The events every
 * rank shares are collectives no rank can leave before all have entered;
 * for the k-th one, rank r's offset o (added to r's times to get the
 * reference's clock) satisfies r.exit_k + o >= ref.enter_k and
 * ref.exit_k >= r.enter_k + o. The offset is the middle of the interval
 * those bound, the uncertainty its half-width. */
typedef struct pp_rank_align {
	int64_t offset_ns;       /* added to the rank's times */
	int64_t uncertainty_ns;  /* half-width of the interval; -1: no event matched */
	int events;              /* collectives matched, in order, by name */
	int consistent;          /* 0: the bounds crossed (calls not matched one to one) */
	char how[96];            /* what it was aligned on (clock.aligned_on) */
} pp_rank_align;
/* Aligns ranks[1..n-1] to ranks[0] (one job's ranks, as pp_store_rank_runs
 * orders them) and stores each offset (pp_store_set_clock_offset); out[i]
 * for rank i. Returns the number of ranks aligned (n, or fewer when a
 * read or write failed: pp_store_error says why), -1 when the reference's
 * events could not be read (nothing stored). */
int pp_store_align_ranks(pp_store *st, const pp_rank_run *ranks, int n, pp_rank_align *out);

/* Copies every run of the database at src_path into st (new run, span,
 * graph and string ids), in one transaction. */
int pp_store_merge_file(pp_store *st, const char *src_path, int64_t *first_run, int *n_runs, char *err,
			size_t errlen);

/* Calls and bytes in a run's `comm` rows (0, 0 when there are none). */
int pp_store_comm_totals(pp_store *st, int64_t run_id, int64_t *calls, int64_t *bytes);
/*
 * Typed reads by area. Every function returns 0, or -1 when the database
 * could not be read (pp_store_error says why: a damaged page is an error,
 * never a short answer). Callbacks (pp_store_each_*) get one row at a time
 * — strings in a row live until the callback returns — and stop the scan by
 * returning non-zero (then the function returns 0). Arrays are malloc'd.
 */

/* ---- runs: metadata, losses, threads, marks, counters (store_read.c) ---- */
/* latest value of one run_meta key: 0 found, 1 missing, -1 error */
int pp_store_run_meta(pp_store *st, int64_t run_id, const char *key, char *buf, size_t len);
int pp_store_set_run_meta(pp_store *st, int64_t run_id, const char *key, const char *value);
typedef struct pp_kv_row { const char *key, *value; } pp_kv_row;
int pp_store_each_run_meta(pp_store *st, int64_t run_id, int (*cb)(const pp_kv_row *, void *), void *ud);
typedef struct pp_loss_row { const char *source; int64_t count; const char *detail; } pp_loss_row;
int pp_store_each_loss(pp_store *st, int64_t run_id, int (*cb)(const pp_loss_row *, void *), void *ud);
typedef struct pp_thread_row { int64_t tid; char name[64]; } pp_thread_row;
int pp_store_threads(pp_store *st, int64_t run_id, pp_thread_row **out, int *n); /* by first activity */
typedef struct pp_mark_row { int64_t ts_ns; const char *name; } pp_mark_row;
/* marks by time, at most limit (<= 0: all) */
int pp_store_each_mark(pp_store *st, int64_t run_id, int limit, int (*cb)(const pp_mark_row *, void *), void *ud);
typedef struct pp_counter_sample { const char *name; int64_t ts_ns; double value; } pp_counter_sample;
/* every counter sample of a run by time (value NaN when stored as NULL) */
int pp_store_each_counter(pp_store *st, int64_t run_id, int (*cb)(const pp_counter_sample *, void *), void *ud);
/* Time and count of the closed spans called name. */
int pp_store_span_name_total(pp_store *st, int64_t run_id, const char *name, int64_t *total_ns, int64_t *count);
/* Closed spans of kind not directly under a span of kind or of other_kind:
 * their total, and the part inside the run's first step phase. */
int pp_store_kind_first_step_total(pp_store *st, int64_t run_id, int kind, int other_kind,
				   int64_t *in_first_step_ns, int64_t *total_ns);
/* Rows of each table of the schema, for `phaseprof info`: names[i] and
 * counts[i] up to a NULL name. */
int pp_store_table_rows(pp_store *st, const char *const **names, int64_t **counts);

/* ---- ops (store_ops.c) ---- */
typedef struct pp_op_stat {
	char name[128], type[64];
	int64_t name_id;          /* strings.id of the node name */
	int64_t calls, total_ns, max_ns;
	int64_t first_ns;         /* time in the first step that ran it */
	int64_t steady_calls, steady_ns;  /* later steps */
	int64_t steady_steps;     /* distinct later steps in the run */
	int64_t first_step;       /* the run's first step number, -1 if none */
} pp_op_stat;
/* Ops of a run grouped by (name, type), by total time; top limit (<= 0: all). */
int pp_store_ops(pp_store *st, int64_t run_id, int limit, pp_op_stat **out, int *n);
typedef struct pp_op_row { int64_t tid; const char *name; int64_t start_ns, end_ns, step; } pp_op_row;
/* end_ns -1 when open, step -1 when none */
int pp_store_each_op(pp_store *st, int64_t run_id, int (*cb)(const pp_op_row *, void *), void *ud);
typedef struct pp_op_time { int64_t name_id; double ns; } pp_op_time;
/* Total closed-op time per node name id. */
int pp_store_op_times(pp_store *st, int64_t run_id, pp_op_time **out, int *n);

/* ---- graph snapshots (store_graphs.c) ---- */
typedef struct pp_graph_info {
	int64_t id, run_id, version, n_nodes, n_edges, ts_ns;
	char label[128];
} pp_graph_info;
/* order: 0 by (version, id); 1 by (label, ts_ns, version) */
int pp_store_graphs(pp_store *st, int64_t run_id, int order, pp_graph_info **out, int *n);
int pp_store_graph(pp_store *st, int64_t graph_id, pp_graph_info *out); /* 1 if missing */
/* Latest snapshot of a run (run_id 0: of the database); *graph_id 0 if none. */
int pp_store_last_graph(pp_store *st, int64_t run_id, int64_t *graph_id);
typedef struct pp_graph_node_row {
	int64_t name_id;
	const char *name, *op, *device, *shape;
	int64_t cost_ns;
} pp_graph_node_row;
int pp_store_each_graph_node(pp_store *st, int64_t graph_id, int (*cb)(const pp_graph_node_row *, void *), void *ud);
int pp_store_each_graph_edge(pp_store *st, int64_t graph_id, int (*cb)(int64_t src, int64_t dst, void *), void *ud);
/* Distinct op types used by the run's graphs. */
int pp_store_graph_op_types(pp_store *st, int64_t run_id, int64_t *n);

/* ---- CPU samples (store_samples.c) ---- */
typedef struct pp_stack_row {
	int64_t id, parent;       /* parent -1 at a root */
	const char *symbol, *module; /* NULL when unknown */
	int64_t ip;
} pp_stack_row;
int pp_store_each_stack(pp_store *st, int64_t run_id, int (*cb)(const pp_stack_row *, void *), void *ud);
/* samples per leaf stack id */
int pp_store_each_sample_count(pp_store *st, int64_t run_id, int (*cb)(int64_t stack, int64_t count, void *), void *ud);
int pp_store_has_samples(pp_store *st, int64_t run_id, int *has);

/* ---- GPU (store_gpu.c) ---- */
typedef struct pp_gpu_row {
	const char *kind, *name, *copy_kind, *src_kind, *dst_kind; /* NULL when absent */
	int64_t start_ns, end_ns, device, stream, correlation_id, bytes, tid; /* correlation -1: none */
} pp_gpu_row;
/* Activity by start time. device_only: closed kernel/memcpy/memset/runtime/driver rows. */
int pp_store_each_gpu(pp_store *st, int64_t run_id, int device_only, int (*cb)(const pp_gpu_row *, void *), void *ud);
typedef struct pp_gpu_status { int available; const char *reason; int64_t records_dropped; } pp_gpu_status;
int pp_store_each_gpu_status(pp_store *st, int64_t run_id, int (*cb)(const pp_gpu_status *, void *), void *ud);

/* ---- libraries, file I/O, allocations (store_system.c) ---- */
typedef struct pp_library_row {
	const char *path, *via;
	int64_t open_ns, end_ns, reloc_ns, ctor_ns, size, depth;
} pp_library_row;
/* by load time, longest first; limit <= 0: all (then in table order) */
int pp_store_each_library(pp_store *st, int64_t run_id, int limit, int (*cb)(const pp_library_row *, void *), void *ud);
/* all libraries, and the top-level (depth <= 1) ones with their load time */
int pp_store_library_totals(pp_store *st, int64_t run_id, int64_t *n_all, int64_t *n_top, int64_t *top_ns);
typedef struct pp_io_row {
	const char *path, *op;
	int64_t calls, time_ns, small_calls;
	double bytes;
} pp_io_row;
/* grouped by (path, op), costliest first; limit <= 0: all */
int pp_store_each_io(pp_store *st, int64_t run_id, int limit, int (*cb)(const pp_io_row *, void *), void *ud);
/* rows and time of all I/O; calls/bytes/small calls of one op (NULL: skip) */
int pp_store_io_totals(pp_store *st, int64_t run_id, int64_t *rows, int64_t *time_ns);
int pp_store_io_op_totals(pp_store *st, int64_t run_id, const char *op, int64_t *calls, int64_t *bytes,
			  int64_t *small_calls);
/* bytes in use over time, from allocation records */
int pp_store_alloc_in_use(pp_store *st, int64_t run_id, pp_counter_row **out, int *n);
typedef struct pp_alloc_source {
	const char *source, *kind;
	int64_t count, time_ns;
	double bytes;
	int has_in_use, has_peak;
	double in_use, peak;
} pp_alloc_source;
/* grouped by (source, kind), most bytes first */
int pp_store_each_alloc_source(pp_store *st, int64_t run_id, int (*cb)(const pp_alloc_source *, void *), void *ud);

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

/* Python frames of CPU samples (py_frames), ordered by id: a sample's
 * "p<id>" stack entry is the frame (symbol_id, module_id). store_pyframes.c */
typedef struct pp_py_frame { int64_t id, symbol_id, module_id; } pp_py_frame;
typedef struct pp_py_frames { pp_py_frame *v; int n; } pp_py_frames;
int pp_store_py_frames(pp_store *st, int64_t run_id, pp_py_frames *out);
const pp_py_frame *pp_py_frames_find(const pp_py_frames *f, int64_t id); /* NULL if absent */
void pp_py_frames_free(pp_py_frames *f);
/* Memory kept across steps (step_kept), per allocation site, from step
 * `from` on: the site's live bytes at the first and last step it was seen
 * alive, and the rise per step between them ((last - first) / steps).
 * Sites seen at fewer than 3 steps are left out. Ordered by
 * per_step_bytes, largest first. store_kept.c */
typedef struct pp_kept_site {
	char site[256];
	int64_t first_step, last_step;
	int64_t first_bytes, last_bytes, last_blocks;
	double per_step_bytes;
} pp_kept_site;
int pp_store_kept_sites(pp_store *st, int64_t run_id, int64_t from, pp_kept_site **out, int *n);

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


#ifdef __cplusplus
}
#endif
#endif /* PP_STORE_H */
