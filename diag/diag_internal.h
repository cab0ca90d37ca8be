/*
 * diag_internal.h — what the rules share (private to diag).
 *
 * A run is loaded once into a diag_run (spans, steps, derived step
 * membership, self times); each rule reads it and emits findings through
 * diag_emit. Times are integer nanoseconds from the run's start.
 */
#ifndef PP_DIAG_INTERNAL_H
#define PP_DIAG_INTERNAL_H

#include <stdint.h>

#include "diagnostics.h"
#include "pp_fmt.h"
#include "pp_grow.h"
#include "phaseprof.h"
#include "store.h"

/* One interval of the step series: a PP_STEP phase (or the PP_FIRST_STEP). */
typedef struct diag_step {
	int64_t iteration;
	int64_t start_ns, end_ns;
} diag_step;

typedef struct diag_run {
	pp_store *st;
	int64_t run_id;
	pp_run_info info;
	int64_t total_ns;         /* run wall time (duration, else last event) */

	pp_span_list spans;       /* closed spans only are used (end_ns >= 0) */
	int64_t spans_left_out;   /* leaf op/span spans past the per-name quota (pp_store_spans_kept) */
	int64_t *self_ns;         /* per span: duration minus its children's */
	int *parent;              /* per span: index of its parent, -1 */
	int *attr_kind;           /* per span: its kind; for a free-form span the kind
				     of the nearest enclosing phase (else PP_SPAN) */
	int *step_of;             /* per span: index into steps containing it, -1 */
	int *slot_of;             /* per span: iteration slot (see diag_slot_of), -1 */
	unsigned char *outer;     /* per span: no ancestor of the same kind */
	/* span indices grouped by kind (and by attr_kind), in span order: the
	 * per-kind helpers visit a kind's spans, not the run's */
	int *by_kind, *by_attr;
	int kind_at[PP_KIND_COUNT + 1], attr_at[PP_KIND_COUNT + 1];

	diag_step *steps;         /* ordered by start; steps[0] is the first step */
	int n_steps;
	int first_is_marked;      /* steps[0] came from a PP_FIRST_STEP phase */
	int64_t startup_end_ns;   /* start of the first step, else total_ns */
	unsigned has;             /* PP_RUN_HAS_GPU, PP_RUN_IS_RANK: rules skip what is absent */
	int torch;                /* a PyTorch program (diag_run_is_torch): texts in its words */
} diag_run;

/* A PyTorch program: the Python layer installed (or tried to install) the
 * torch or Lightning adapter, i.e. the program imported torch (run_meta
 * python.adapter.torch, python.adapter.pytorch_lightning,
 * python.adapter.lightning). Its findings speak PyTorch; every other run
 * (flow, scenarios, plain native programs) keeps the runtime's words. */
int diag_run_is_torch(pp_store *st, int64_t run_id);
/* The text for the run's framework: torch's for a PyTorch run, else flow's.
 * Both are literals at every call, so a title format stays checked. */
#define DIAG_SAY(r, flow, torch_) ((r)->torch ? (torch_) : (flow))
/* A phase kind as a PyTorch user reads it (graph_build is "model
 * construction" there); other runs get pp_kind_name. */
const char *diag_kind_word(const diag_run *r, int kind);

/* Severity: the ranking adds this base to the share, so a high finding
 * always outranks a moderate one. */
enum diag_sev { DIAG_INFO = 0, DIAG_MODERATE = 1, DIAG_HIGH = 2 };
const char *diag_sev_name(int sev);
int diag_sev_from_name(const char *s);

typedef struct diag_ctx {
	diag_run *run;
	pp_finding *f;
	int n, cap;
	int oom;
} diag_ctx;

/* Emits one finding and returns it (NULL when out of memory). share is the
 * fraction of the run's time the problem costs (0..1), so findings of one
 * severity rank by what they cost the user; the ranking score is
 * severity + share. The title is a printf format; fix is plain text;
 * the evidence is appended with diag_evidence. */
/* A finding is a claim: its severity is also capped by the time a user
 * could win back. Below DIAG_WIN_MODERATE_NS it is information, below
 * DIAG_WIN_HIGH_NS at most moderate. */
#define DIAG_WIN_MODERATE_NS 100e6
#define DIAG_WIN_HIGH_NS 500e6
int diag_sev_for_win(int sev, double win_ns);
/* Start-up time spent loading libraries or importing modules: in a program
 * with a step loop it is the framework's fixed cost, a claim worth raising
 * only from DIAG_STARTUP_MODERATE_NS (moderate) and DIAG_STARTUP_HIGH_NS
 * (high); a program without steps (a script, a tool) is judged as a win. */
#define DIAG_STARTUP_MODERATE_NS 5e9
#define DIAG_STARTUP_HIGH_NS 15e9
int diag_sev_for_startup(const diag_run *r, int sev, double startup_ns);
pp_finding *diag_emit(diag_ctx *c, const char *rule, int sev, double share,
		      const char *fix, const char *title_fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* Appends to a finding's evidence (silently truncated at the field size). */
void diag_evidence(pp_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int diag_has(const diag_ctx *c, const char *rule);
/* t / the run's total time, 0 when unknown. */
double diag_run_share(const diag_run *r, double t_ns);

/* ---- run loading and helpers (diag_run.c) ---- */
int diag_run_load(diag_run *r, pp_store *st, int64_t run_id, char *err, size_t errlen);
void diag_run_free(diag_run *r);

static inline int64_t diag_span_dur(const pp_span_row *s)
{
	return s->end_ns >= s->start_ns ? s->end_ns - s->start_ns : 0;
}
static inline int diag_span_closed(const pp_span_row *s)
{
	return s->end_ns >= 0 && s->end_ns >= s->start_ns;
}
/* Index of the step containing [start, end], or -1. */
int diag_step_containing(const diag_run *r, int64_t start_ns, int64_t end_ns);
/* Total time of the outermost spans of `kind`: where = 0 all, 1 inside
 * steady steps (not the first), 2 outside every step, 3 inside the first. */
enum { DIAG_ANYWHERE = 0, DIAG_IN_STEADY = 1, DIAG_OUTSIDE_STEPS = 2, DIAG_IN_FIRST = 3 };
int64_t diag_kind_time(const diag_run *r, int kind, int where, int *count);
/* True if span i has an ancestor of kind (bounded walk). */
int diag_has_ancestor(const diag_run *r, int i, int kind);
/* (id, index) pairs sorted by id: diag_id_find gives the index stored
 * for id, or -1. */
typedef struct diag_id_index { int64_t id; int idx; } diag_id_index;
void diag_id_sort(diag_id_index *map, int n);
int diag_id_find(const diag_id_index *map, int n, int64_t id);
/* Iteration slot of a time: the index of the last step starting at or
 * before t, so slot i is step i plus the gap after it. -1 before the first
 * step or after the last one ends: outside the loop. */
int diag_slot_of(const diag_run *r, int64_t t_ns);
/* Number of slots >= from holding an outermost span of kind; *n_spans and
 * *t_ns (may be NULL) get the spans' count and total time. */
int diag_slots_with(const diag_run *r, int kind, int from, int *n_spans, int64_t *t_ns);
/* Same, leaving out spans with an ancestor of kind `not_under` (-1: none). */
int diag_slots_with_ex(const diag_run *r, int kind, int not_under, int from, int *n_spans,
		       int64_t *t_ns);
/* Number of steps with index >= from containing an outermost span of kind;
 * *n_spans and *t_ns (may be NULL) get the spans' count and total time. */
int diag_steps_with(const diag_run *r, int kind, int from, int *n_spans, int64_t *t_ns);
/* Exclusive time of a kind: self time of its spans plus that of free-form
 * spans nested in it, so nested phases of other kinds are not counted
 * twice. where as for diag_kind_time. */
int64_t diag_kind_self_time(const diag_run *r, int kind, int where);
/* Time the step series spends in steady steps (all but the first). */
int64_t diag_steady_time(const diag_run *r);

/* A counter's samples (owned by the caller; free()). n = 0 when absent. */
typedef struct diag_series {
	pp_counter_row *rows;
	int n;
} diag_series;
int diag_counter(const diag_run *r, const char *name, diag_series *out);
/* Last value at or before t (or fallback when there is none). */
double diag_series_at(const diag_series *s, int64_t t_ns, double fallback);
/* Index of the last sample at or before t, -1 if none. */
int diag_series_index(const diag_series *s, int64_t t_ns);

/* "12.3 ms"-style duration into buf (returns buf). */

/* ---- rules (rules_*.c) ---- */
typedef void (*diag_rule_fn)(diag_ctx *c);
void rule_iteration_time_grows(diag_ctx *c);
void rule_graph_grows(diag_ctx *c);
void rule_session_per_iteration(diag_ctx *c);
void rule_first_step_slow(diag_ctx *c);
void rule_repeated_retracing(diag_ctx *c);
void rule_op_registration_startup(diag_ctx *c);
void rule_initializer_dominates_init(diag_ctx *c);
void rule_weight_load_small_reads(diag_ctx *c);
void rule_alloc_count_not_flat(diag_ctx *c);
void rule_library_load_startup(diag_ctx *c);
void rule_gpu_idle_gaps(diag_ctx *c);
void rule_gpu_sync_copies(diag_ctx *c);
void rule_gpu_step_transfers(diag_ctx *c);
void rule_gpu_short_kernels(diag_ctx *c);
void rule_repeated_phase_grows(diag_ctx *c);
void rule_phase_share(diag_ctx *c);
void rule_recording_incomplete(diag_ctx *c);
void rule_memory_grows_per_step(diag_ctx *c);
void rule_gpu_memory_grows_per_step(diag_ctx *c);
void rule_data_starvation(diag_ctx *c);
void rule_weight_load_slow(diag_ctx *c);
void rule_import_startup(diag_ctx *c);
void rule_ddp_comm_exposed(diag_ctx *c);
void rule_recompile_storm(diag_ctx *c);
/* The run has torch.compile phases (rules_compile.c): its compile time is
 * the compile rules' to judge. */
int diag_has_torch_compile(const diag_run *r);
void rule_first_step_compile(diag_ctx *c);
/* Evidence from the per-step counters of programs recorded from outside
 * (rules_framework.c): what grows with a growing step time (added to f when
 * f is not NULL; returns how many), what the first step allocated. */
int diag_growth_causes(const diag_run *r, pp_finding *f);
void diag_first_step_causes(const diag_run *r, pp_finding *f);
/* num_workers of the run's DataLoader (run_meta torch.dataloader.num_workers,
 * else the worker runs' own), -1 when unknown. */
int diag_loader_workers(const diag_run *r);
/* A per-step counter's value in each steady step (the second on), sampled at
 * the step's end; NAN where a step has none. y holds n_steps - 1 values.
 * Returns how many steps have one (0 when the counter is absent). */
int diag_steady_values(const diag_run *r, const char *name, double *y);
void rule_ranks(diag_ctx *c);

/* ---- distributed jobs (rules_ranks.c) ---- */
typedef struct diag_phase { int kind; char name[64]; int64_t ns; } diag_phase;
/* A point where every rank waits for the others: a communicator's set-up
 * (MPI_Init, init_process_group, DistributedDataParallel.__init__), the
 * first collective after it, a barrier outside the steps (checkpoint
 * barriers). Matched across ranks by name and occurrence. */
typedef struct diag_sync {
	char name[48];
	int ord;                        /* its occurrence among the rank's syncs of that name */
	int kind;                       /* PP_COMM_INIT or PP_COMM */
	int first;                      /* the first collective after a set-up */
	int64_t start, end;             /* on the run's clock */
	int64_t from;                   /* end of the previous sync point (0: the run's start) */
	diag_phase *pre;                /* outermost phases in [from, start) */
	int n_pre;
} diag_sync;
typedef struct diag_rank {
	int rank;
	int64_t run_id;
	char host[64], status[16];
	int term_signal;
	int exit_code;                  /* -1 unknown; > 0 with status complete: it exited with an error */
	int64_t origin_ns;              /* the run's t = 0 on the job's clock (start_unix_ns) */
	int64_t end_ns;                 /* run duration */
	int64_t init_start, init_end;   /* first comm_init span, -1 if none */
	char init_name[32];
	int64_t coll_start, coll_end;   /* first comm span after it, -1 if none */
	char coll_name[32];
	diag_phase *pre;                /* outermost phases before init_start */
	int n_pre;
	diag_phase *pre_coll;           /* outermost phases between init_end and coll_start */
	int n_pre_coll;
	int n_steps;
	int64_t *step_ns, *step_comm_ns; /* per step: duration, outermost comm time inside */
	int64_t *step_sync_ns;          /* per step: comm, plus backward where DDP's allreduce
					 * waits inside it (NULL: step_comm_ns) */
	diag_sync *sync;                /* every sync point in time order (NULL: from init_* / coll_*) */
	int n_sync;
	int64_t comm_calls, comm_bytes;
	char open_phase[96];            /* innermost phase still open at the end ("" none) */
	int open_depth;
	int64_t open_step;
} diag_rank;
typedef struct diag_job {
	char job[128];
	int world_size;
	diag_rank *ranks;               /* ordered by rank */
	int n;
} diag_job;
/* Loads the job of run_id when run_id is its lowest rank: 0; 1 when the run
 * is not a rank or not the lowest; -1 on error. */
int diag_job_load(diag_job *j, pp_store *st, int64_t run_id, char *err, size_t errlen);
void diag_job_free(diag_job *j);
/* The rank rules on a loaded (or hand-built) job. */
void diag_ranks_check(const diag_job *j, diag_ctx *c);

#endif
