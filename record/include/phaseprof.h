/*
 * phaseprof.h — the recording API.
 *
 * One recorder per process (that is the point: phases are process-wide).
 * Hot path: a begin/end writes (type, timestamp, interned id) into a
 * thread-local buffer; a writer thread drains full buffers into an
 * append-only spool file. The spool is ingested into SQLite afterwards
 * (store/include/store.h), so nothing here touches SQLite.
 *
 * Every function is safe to call when the recorder is closed: it does
 * nothing. Losses (buffer overflow) are counted and stored, never silent.
 */
#ifndef PHASEPROF_H
#define PHASEPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The recording API is the library's interface: exported even where the
 * rest is built with hidden visibility (the LD_PRELOAD agent). */
#pragma GCC visibility push(default)

/* The fixed phase taxonomy, one list: X(ENUM, name) gives PP_<ENUM> (values
 * in order from 0) and the name stored in phase_kinds (pp_kind_name).
 * PP_SPAN is a free-form named span; PP_OP is one op execution (ingested
 * into the `ops` table, not `spans`). Values are stored in the database:
 * append, never renumber. */
#define PP_KINDS(X)                                                            \
	X(SPAN, span)                                                          \
	X(PROCESS_START, process_start)                                        \
	X(LIBRARY_LOAD, library_load)                                          \
	X(RUNTIME_INIT, runtime_init)                                          \
	X(OP_REGISTRATION, op_registration)                                    \
	X(GRAPH_BUILD, graph_build)                                            \
	X(SHAPE_INFERENCE, shape_inference)                                    \
	X(SESSION_CREATE, session_create)                                      \
	X(VARIABLE_CREATE, variable_create)                                    \
	X(VARIABLE_INIT, variable_init)                                        \
	X(WEIGHT_LOAD, weight_load)                                            \
	X(MEMORY_ALLOC, memory_alloc)                                          \
	X(GRADIENT_BUILD, gradient_build)                                      \
	X(OPTIMIZER_SETUP, optimizer_setup)                                    \
	X(COMPILE, compile)                                                    \
	X(FIRST_STEP, first_step)                                              \
	X(STEP, step)                                                          \
	X(DATA_TRANSFER, data_transfer)                                        \
	X(DEVICE_INIT, device_init)                                            \
	X(RETRACE, retrace)                                                    \
	X(SESSION_CLOSE, session_close)                                        \
	X(OP, op)                                                              \
	/* Kinds of programs recorded from outside (Python frameworks, MPI). */ \
	X(IMPORT, import)         /* a Python module import (name: the module) */ \
	X(MODEL_BUILD, model_build) /* model construction (a top-level nn.Module) */ \
	X(FORWARD, forward)       /* inside a step: forward pass */            \
	X(BACKWARD, backward)     /* inside a step: backward pass */           \
	X(OPTIMIZER_STEP, optimizer_step) /* inside a step: the optimizer's update */ \
	X(DATA_WAIT, data_wait)   /* waiting for the next batch (DataLoader) */ \
	X(COMM, comm)             /* communication: a collective, send/receive, wait */ \
	X(COMM_INIT, comm_init)   /* communicator set-up: MPI_Init, init_process_group */ \
	X(DATA_FETCH, data_fetch) /* a loader fetching one batch's samples (DataLoader \
				     worker or main process; the batch's collate nested in it) */ \
	X(DATA_COLLATE, data_collate) /* a loader assembling fetched samples into a batch */

typedef enum pp_kind {
#define PP__KIND_ENUM(e, name) PP_##e,
	PP_KINDS(PP__KIND_ENUM)
#undef PP__KIND_ENUM
	PP_KIND_COUNT
} pp_kind;

const char *pp_kind_name(pp_kind kind);      /* "graph_build"; "span" for PP_SPAN */
int pp_kind_from_name(const char *name);     /* -1 if unknown */

enum pp_fork_policy {
	PP_FORK_FOLLOW = 0, /* child gets its own spool (<path>.<pid>) and keeps recording */
	PP_FORK_DISABLE = 1 /* child's recorder is closed cleanly; it records nothing */
};

/* What a thread does when all max_buffers are in flight (the writer is behind). */
enum pp_full_policy {
	PP_FULL_DRAIN = 0, /* the thread drains the spool itself, then goes on: nothing lost */
	PP_FULL_DROP = 1   /* the event is dropped and counted: the thread never waits */
};

typedef struct pp_options {
	const char *spool_path;   /* NULL: $PHASEPROF_OUT, else "phaseprof-<pid>.spool" */
	const char *label;        /* free text; stored in runs.label */
	const char *scenario;     /* stored in runs.scenario */
	const char *variant;      /* stored in runs.variant */
	uint32_t buffer_events;   /* events per thread buffer; 0 = 16384 */
	uint32_t max_buffers;     /* buffers in flight (memory bound); 0 = 256 (~100 MB) */
	int fork_policy;          /* enum pp_fork_policy */
	uint32_t flush_ms;        /* writer wake-up period; 0 = 50 ms */
	int full_policy;          /* enum pp_full_policy: when max_buffers are in flight */
} pp_options;

/* Opens the recorder and its spool file. Returns 0, or -1 with a message
 * naming the file in pp_last_error(). opts may be NULL. */
int pp_open(const pp_options *opts);
/* Drains every buffer, writes the end marker and closes the spool. */
int pp_close(void);
int pp_is_open(void);
const char *pp_last_error(void);
const char *pp_spool_path(void);

/* Run metadata (key/value, stored in run_meta). */
void pp_meta(const char *key, const char *value);
/* How the process ended (exit code, or the signal that killed it), for
 * wrappers that learn it before the recorder closes; ingest marks the run
 * crashed/killed from it. */
void pp_exit_status(int exit_code, int term_signal);
/* Names the calling thread in the recording. */
void pp_thread_name(const char *name);

/* Nanoseconds on the recorder's clock (CLOCK_MONOTONIC based). */
uint64_t pp_now(void);

/* ---- phases and spans ----
 * A static call site: the name is interned once, the hot path passes only
 * the pointer (Tracy's source-location idea). Use PP_PHASE / PP_SITE. */
typedef struct pp_site {
	const char *name;
	uint32_t kind;
	uint32_t id;              /* 0 until interned */
} pp_site;

void pp_begin_site(pp_site *site);
/* Name interned by content: fine for dynamic strings, a hash lookup more. */
void pp_phase_begin(pp_kind kind, const char *name);
void pp_phase_end(void);
/* pp_phase_end ends the innermost open phase or span of the calling thread. */

/* A phase whose times were taken elsewhere (pp_now() nanoseconds), e.g. start-up
 * work that happened before the recorder opened. It nests like any other
 * phase under whatever is open on the calling thread. */
void pp_phase_at(pp_kind kind, const char *name, uint64_t start_ns, uint64_t end_ns);

/* Steps: a PP_STEP phase carrying its iteration number. */
void pp_step_begin(int64_t iteration);
void pp_step_end(void);
/* Ends the open step, and end_phases phases around it (a first_step
 * phase), and begins step `iteration` at one instant: steps that follow each
 * other leave no gap, however the thread is preempted between the calls. */
void pp_step_next(int64_t iteration, int end_phases);

/* Scope macro: PP_PHASE(PP_COMPILE, "compile"); ends at the scope's end. */
static inline void pp__scope_end(int *unused) { (void)unused; pp_phase_end(); }
#define PP_CAT2(a, b) a##b
#define PP_CAT(a, b) PP_CAT2(a, b)
#define PP_PHASE(kind, name)                                                   \
	static pp_site PP_CAT(pp__site_, __LINE__) = {(name), (kind), 0};      \
	pp_begin_site(&PP_CAT(pp__site_, __LINE__));                            \
	int PP_CAT(pp__scope_, __LINE__) __attribute__((cleanup(pp__scope_end), unused)) = 0
#define PP_BEGIN(kind, name)                                                   \
	do {                                                                   \
		static pp_site pp__s = {(name), (kind), 0};                    \
		pp_begin_site(&pp__s);                                         \
	} while (0)

/* An observer of phase boundaries on the calling thread, e.g. the CUPTI
 * collector pushing an external correlation id so that GPU work launched
 * inside a phase is tied to it. begin = 1 with the phase's kind and name,
 * begin = 0 (kind and name unknown: 0, NULL) at its end. One hook per
 * process; NULL removes it. Costs one predictable branch when unset. */
typedef void (*pp_phase_hook)(int begin, int kind, const char *name, void *ud);
void pp_set_phase_hook(pp_phase_hook fn, void *ud);

/* Instant marks and counters (counter values are doubles). */
void pp_mark(const char *name);
void pp_counter(const char *name, double value);

/* One op execution with explicit times (pp_now clock), e.g. from an executor
 * that timed the kernel itself. `step` is the iteration or -1. */
void pp_op(const char *node_name, const char *op_type, uint64_t start_ns,
	   uint64_t end_ns, int64_t step);

/* ---- structured rows ----
 * Rows for the store's side tables (libraries, io, allocations, graphs,
 * gpu_activity…), not for the hot path. `fmt` has one letter per column:
 *   i = int64_t, d = double, s = const char * (interned; NULL allowed),
 *   t = const char * (stored as TEXT), n = NULL.
 * The row lands in `table` with run_id prepended. Returns 0 or -1. The
 * tables and their columns are specified in pp_rows.h, whose typed
 * pp_row_<table>() emitters check the values at compile time. */
int pp_row(const char *table, const char *fmt, ...);

/* pp_row with the values in an array, for rows whose NULL columns vary
 * (pp_row's 'n' takes no argument, so one call site cannot pass a value or
 * NULL). cells[k] is the k-th column's value, of fmt[k]'s type; `null` set
 * (or a NULL string) stores SQL NULL. pp_rows.h builds its typed emitters,
 * pp_row_<table>(), on this. Returns 0 or -1. */
typedef struct pp_cell {
	union {
		int64_t i;
		double d;
		const char *s;
	} v;
	int null;
} pp_cell;
int pp_rowv(const char *table, const char *fmt, const pp_cell *cells);

/* Graph snapshot: a neutral node/edge list, so the profiler never includes
 * runtime headers. Stored in graphs / graph_nodes / graph_edges. */
typedef struct pp_graph_node {
	const char *name;
	const char *op;
	const char *device;       /* may be NULL */
	const char *shape;        /* "128x784", may be NULL */
	double cost_ns;           /* measured time if known, else 0 */
} pp_graph_node;
typedef struct pp_graph_edge {
	int32_t src, dst;         /* indexes into the node array */
	int32_t src_output;
} pp_graph_edge;
int pp_graph_snapshot(const char *label, int64_t version,
		      const pp_graph_node *nodes, int n_nodes,
		      const pp_graph_edge *edges, int n_edges);

/* Statistics of the current recording (for tests and summaries). */
typedef struct pp_recorder_stats {
	uint64_t events;          /* events accepted into buffers */
	uint64_t events_lost;     /* dropped because no buffer was free */
	uint64_t rows;            /* pp_row calls accepted */
	uint64_t rows_lost;
	uint64_t bytes_written;   /* spool bytes so far */
	uint32_t threads;
	uint64_t self_drains;     /* times a thread drained the spool itself (PP_FULL_DRAIN) */
} pp_recorder_stats;
void pp_stats(pp_recorder_stats *out);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* PHASEPROF_H */
