/*
 * flow.h — "flow", a small TensorFlow-1/2-like dataflow runtime.
 *
 * The one public header of demo/flow/. Objects are opaque; errors come back
 * through a flow_status (code + one-line message naming the node, file or
 * field). Functions that can fail take a flow_status * as their last
 * argument and return NULL / -1 on failure; passing a NULL status is allowed
 * (the message is then lost).
 *
 * Life cycle (TF1 style):
 *   flow_init(&opts, st)                        registry (full or lite), pool
 *   g = flow_graph_new()  or flow_default_graph()
 *   d = flow_op_new(g, "MatMul", "mm"); flow_op_add_input(d, a); ...
 *   op = flow_op_finish(d, st)                  shape inference happens here
 *   s = flow_session_new(g, NULL, st)
 *   flow_session_run(s, feeds.., fetches.., targets.., st)  first run of a
 *                                               signature compiles and caches
 *   flow_session_close(s, st); flow_session_free(s)
 *
 * Threads: the registry, allocators, tensors' refcounts and sessions are
 * thread-safe (one run at a time per session; different sessions run
 * concurrently). A graph is not: do not add nodes while another thread
 * builds on it or runs a session over it.
 *
 * Everything is recorded through record/include/phaseprof.h when a recorder is
 * open: runtime_init, op_registration, graph_build, shape_inference,
 * session_create, variable_create, variable_init, memory_alloc, compile,
 * step, session_close (and per-op times when asked for).
 */
#ifndef FLOW_H
#define FLOW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ---- */
typedef enum flow_code {
	FLOW_OK = 0,
	FLOW_INVALID_ARGUMENT,   /* bad shape, dtype, attr value, feed */
	FLOW_NOT_FOUND,          /* unknown op, attr, node, file */
	FLOW_ALREADY_EXISTS,     /* duplicate node name */
	FLOW_FAILED_PRECONDITION,/* finalized graph, closed session, uninitialised variable */
	FLOW_OUT_OF_RANGE,
	FLOW_UNIMPLEMENTED,      /* no kernel for this dtype/device */
	FLOW_RESOURCE_EXHAUSTED, /* allocator limit */
	FLOW_DATA_LOSS,          /* truncated / corrupt file */
	FLOW_INTERNAL
} flow_code;

typedef struct flow_status flow_status;
flow_status *flow_status_new(void);
void flow_status_free(flow_status *st);
flow_code flow_status_code(const flow_status *st);
const char *flow_status_message(const flow_status *st);   /* "" when OK */
int flow_status_ok(const flow_status *st);                 /* 1 when OK (or st NULL) */
void flow_status_clear(flow_status *st);
/* Sets code and message (printf-style); keeps the first error if one is set. */
void flow_status_set(flow_status *st, flow_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *flow_code_name(flow_code code);               /* "INVALID_ARGUMENT" */

/* ---- dtypes and shapes ---- */
typedef enum flow_dtype {
	FLOW_DT_INVALID = 0,
	FLOW_F32,
	FLOW_F64,
	FLOW_I32,
	FLOW_I64,
	FLOW_BOOL,            /* one byte per element, 0 or 1 */
	FLOW_DT_COUNT
} flow_dtype;
const char *flow_dtype_name(flow_dtype dt);   /* "f32"; "invalid" */
flow_dtype flow_dtype_from_name(const char *name); /* "f32"/"float32"/"float" …; 0 if unknown */
size_t flow_dtype_size(flow_dtype dt);

#define FLOW_MAX_DIMS 8
/* A (possibly partial) shape: ndim -1 = unknown rank, dims[i] -1 = unknown. */
typedef struct flow_shape {
	int ndim;
	int64_t dims[FLOW_MAX_DIMS];
} flow_shape;
flow_shape flow_shape_make(int ndim, const int64_t *dims);
flow_shape flow_shape_unknown(void);
int flow_shape_is_full(const flow_shape *s);          /* rank and all dims known */
int64_t flow_shape_nelem(const flow_shape *s);         /* -1 if not full */
/* "128x784", "?x10", "<unknown>", "scalar" into buf; returns buf. */
char *flow_shape_str(const flow_shape *s, char *buf, size_t len);

/* ---- runtime ---- */
enum flow_registration {
	FLOW_REGISTER_FULL = 0, /* TF-like: every op def built and validated, every kernel
	                           registration checked, at flow_init */
	FLOW_REGISTER_LITE = 1  /* only the ops a graph uses, on first use of each */
};
enum flow_alloc_kind { FLOW_ALLOC_BFC = 0, FLOW_ALLOC_MALLOC = 1 };

typedef struct flow_init_options {
	int registration;       /* enum flow_registration; env FLOW_REGISTRATION=lite|full overrides */
	int threads;            /* intra-op pool size; 0 = online CPUs; env FLOW_THREADS */
	int allocator;          /* enum flow_alloc_kind of the default allocator */
	size_t arena_reserve;   /* BFC: bytes reserved up front (0: grow from 2 MiB by doubling) */
	int op_timing;          /* default for sessions: record every op execution with pp_op();
	                           env FLOW_OP_TIMING=1|0 overrides */
	const char *plan_cache_dir; /* default for sessions: persist compiled plans here (NULL: off;
	                           env FLOW_PLAN_CACHE=<dir> when NULL) */
} flow_init_options;

/* Idempotent; the first call wins (later calls only check the registry mode,
 * e.g. a FULL after LITE completes the registry). Every other entry point
 * calls flow_init(NULL) implicitly. Recorded as runtime_init (+ op_registration). */
int flow_init(const flow_init_options *opts, flow_status *st);
/* Frees the registry, pool and default graph, and the default allocator
 * unless tensors from it are still alive (it is then left to them); sessions
 * and graphs must be freed first. flow_init may follow. */
void flow_shutdown(void);

typedef struct flow_registry_stats {
	int ops_known;          /* op defs present in the linked op libraries */
	int ops_registered;     /* op defs built and validated so far */
	int kernels_known;
	int kernels_registered;
	int mode;               /* enum flow_registration */
	uint64_t registration_ns; /* total time spent building/validating */
} flow_registry_stats;
void flow_registry_stats_get(flow_registry_stats *out);
/* Names of every op in the linked libraries (static strings, NULL-terminated
 * array owned by the runtime). */
const char *const *flow_op_names(int *n);

/* ---- allocator ---- */
typedef struct flow_allocator flow_allocator;
typedef struct flow_allocator_options {
	int kind;               /* enum flow_alloc_kind */
	size_t reserve;         /* BFC: first region size reserved up front; 0 = 2 MiB, grows by doubling */
	size_t limit;           /* BFC: max bytes of regions; 0 = unlimited */
	const char *name;       /* shows in the recording: "bfc", "malloc", … */
	/* BFC: where regions come from (NULL: posix_memalign/free). Metadata is
	 * kept out of band, so regions may be device memory (demo/flow/cuda). */
	void *(*region_alloc)(void *ctx, size_t bytes);
	void (*region_free)(void *ctx, void *base, size_t bytes);
	void *region_ctx;
} flow_allocator_options;
typedef struct flow_allocator_stats {
	uint64_t bytes_in_use;  /* BFC: bytes of the chunks handed out (>= requests rounded
	                           to 256, < 2x them); malloc: bytes requested */
	uint64_t peak_bytes_in_use;
	uint64_t bytes_reserved;/* BFC: total region bytes obtained from the system */
	uint64_t num_allocs;    /* allocations ever made */
	uint64_t bytes_allocated; /* sum of the sizes of all allocations ever made */
	uint64_t num_frees;
	uint64_t live_allocs;
	uint64_t num_regions;   /* BFC: system allocations (region growth events) */
	uint64_t largest_free;  /* BFC: largest free chunk */
	uint64_t total_free;    /* BFC: free bytes inside regions */
	double fragmentation;   /* 1 - largest_free / total_free (0 when nothing is free) */
	uint64_t alloc_ns;      /* time spent inside alloc/free */
} flow_allocator_stats;
flow_allocator *flow_allocator_new(const flow_allocator_options *opts, flow_status *st);
void flow_allocator_free(flow_allocator *a);   /* live allocations are a caller bug */
void *flow_allocator_alloc(flow_allocator *a, size_t bytes);  /* 64-byte aligned; NULL on failure */
void flow_allocator_release(flow_allocator *a, void *p);
void flow_allocator_stats_get(flow_allocator *a, flow_allocator_stats *out);
/* Emits the allocator counters (flow.<name>.bytes_in_use, .peak, .allocs,
 * .fragmentation, .regions) and an `allocations` summary row. */
void flow_allocator_record(flow_allocator *a);
const char *flow_allocator_name(const flow_allocator *a);
/* The process default (kind and reserve from flow_init_options). */
flow_allocator *flow_default_allocator(void);

/* ---- tensors (refcounted, row-major, buffer from an allocator) ---- */
typedef struct flow_tensor flow_tensor;
/* Zero-filled tensor from the default allocator. NULL on bad shape (st says why). */
flow_tensor *flow_tensor_new(flow_dtype dt, int ndim, const int64_t *dims, flow_status *st);
flow_tensor *flow_tensor_new_in(flow_allocator *a, flow_dtype dt, int ndim, const int64_t *dims,
				flow_status *st);
/* Copies nbytes = nelem * dtype size from data. */
flow_tensor *flow_tensor_from_data(flow_dtype dt, int ndim, const int64_t *dims, const void *data,
				   flow_status *st);
/* Wraps external memory (e.g. an mmap'd weight file) without copying; release
 * (may be NULL) is called with ctx when the last reference goes. */
flow_tensor *flow_tensor_wrap(flow_dtype dt, int ndim, const int64_t *dims, void *data,
			      size_t nbytes, void (*release)(void *ctx, void *data, size_t nbytes),
			      void *ctx, flow_status *st);
flow_tensor *flow_tensor_scalar_f32(float v);
flow_tensor *flow_tensor_scalar_f64(double v);
flow_tensor *flow_tensor_scalar_i32(int32_t v);
flow_tensor *flow_tensor_scalar_i64(int64_t v);
flow_tensor *flow_tensor_ref(flow_tensor *t);   /* +1, returns t */
void flow_tensor_unref(flow_tensor *t);         /* -1; frees at 0; NULL ok */
flow_tensor *flow_tensor_copy(const flow_tensor *t, flow_status *st); /* deep copy */
flow_dtype flow_tensor_dtype(const flow_tensor *t);
int flow_tensor_ndim(const flow_tensor *t);
int64_t flow_tensor_dim(const flow_tensor *t, int i);
flow_shape flow_tensor_shape(const flow_tensor *t);
int64_t flow_tensor_nelem(const flow_tensor *t);
size_t flow_tensor_nbytes(const flow_tensor *t);
void *flow_tensor_data(flow_tensor *t);
const void *flow_tensor_cdata(const flow_tensor *t);
/* Element i (row-major) converted to double, whatever the dtype. */
double flow_tensor_get(const flow_tensor *t, int64_t i);

/* ---- graph ---- */
typedef struct flow_graph flow_graph;
typedef struct flow_op flow_op;            /* a node; owned by its graph */
typedef struct flow_op_desc flow_op_desc;  /* a node under construction */
typedef struct flow_output {
	flow_op *op;
	int index;
} flow_output;

flow_graph *flow_graph_new(void);
void flow_graph_free(flow_graph *g);   /* sessions on it must be freed first */
/* TF1's process-wide default graph (created on first use). */
flow_graph *flow_default_graph(void);
/* Replaces the default graph with a new empty one (tf.reset_default_graph);
 * the old one is freed. */
void flow_reset_default_graph(void);
/* Changes (increments) every time a node is added. */
uint64_t flow_graph_version(const flow_graph *g);
int flow_graph_num_ops(const flow_graph *g);
flow_op *flow_graph_op_at(const flow_graph *g, int i);          /* in creation order */
flow_op *flow_graph_op_by_name(const flow_graph *g, const char *name);
/* Later additions fail with FAILED_PRECONDITION "graph is finalized…". */
void flow_graph_finalize(flow_graph *g);
int flow_graph_is_finalized(const flow_graph *g);
/* Records a graph snapshot (pp_graph_snapshot) labelled `label`, with the
 * current version, shapes and (if known) measured mean op times. */
int flow_graph_snapshot(flow_graph *g, const char *label);
/* Graphviz dot text of the graph (malloc'd). */
char *flow_graph_to_dot(const flow_graph *g);

/* Builder, in the spirit of TF_NewOperation / TF_FinishOperation. name NULL
 * or "" picks a unique "<Type>_<n>". Nothing is added until flow_op_finish. */
flow_op_desc *flow_op_new(flow_graph *g, const char *op_type, const char *name);
void flow_op_add_input(flow_op_desc *d, flow_output in);
/* One list-typed input ("values: N*T"); N is inferred. */
void flow_op_add_input_list(flow_op_desc *d, const flow_output *in, int n);
void flow_op_add_control_input(flow_op_desc *d, flow_op *op);
void flow_op_set_attr_int(flow_op_desc *d, const char *name, int64_t v);
void flow_op_set_attr_float(flow_op_desc *d, const char *name, double v);
void flow_op_set_attr_bool(flow_op_desc *d, const char *name, int v);
void flow_op_set_attr_type(flow_op_desc *d, const char *name, flow_dtype v);
void flow_op_set_attr_shape(flow_op_desc *d, const char *name, const flow_shape *v);
void flow_op_set_attr_string(flow_op_desc *d, const char *name, const char *v);
void flow_op_set_attr_ints(flow_op_desc *d, const char *name, const int64_t *v, int n);
void flow_op_set_attr_floats(flow_op_desc *d, const char *name, const double *v, int n);
/* Takes a reference to t. */
void flow_op_set_attr_tensor(flow_op_desc *d, const char *name, flow_tensor *t);
/* Validates (op known, inputs, attrs, dtypes), runs shape inference and adds
 * the node. Always consumes d. NULL on error (st names the node). */
flow_op *flow_op_finish(flow_op_desc *d, flow_status *st);

const char *flow_op_name(const flow_op *op);
const char *flow_op_type(const flow_op *op);
flow_graph *flow_op_graph(const flow_op *op);
int flow_op_id(const flow_op *op);                 /* index in creation order */
int flow_op_num_inputs(const flow_op *op);
flow_output flow_op_input(const flow_op *op, int i);
int flow_op_num_control_inputs(const flow_op *op);
flow_op *flow_op_control_input(const flow_op *op, int i);
int flow_op_num_outputs(const flow_op *op);
flow_dtype flow_op_output_dtype(const flow_op *op, int i);
flow_shape flow_op_output_shape(const flow_op *op, int i);
/* Attr getters: 0 on success, -1 if missing or of another type. */
int flow_op_get_attr_int(const flow_op *op, const char *name, int64_t *v);
int flow_op_get_attr_float(const flow_op *op, const char *name, double *v);
int flow_op_get_attr_bool(const flow_op *op, const char *name, int *v);
int flow_op_get_attr_type(const flow_op *op, const char *name, flow_dtype *v);
int flow_op_get_attr_shape(const flow_op *op, const char *name, flow_shape *v);
const char *flow_op_get_attr_string(const flow_op *op, const char *name);
int flow_op_get_attr_ints(const flow_op *op, const char *name, const int64_t **v, int *n);
const flow_tensor *flow_op_get_attr_tensor(const flow_op *op, const char *name);
static inline flow_output flow_out(flow_op *op, int index)
{
	flow_output o = {op, index};
	return o;
}

/* Convenience builders (return {NULL,0} on error). */
flow_output flow_const(flow_graph *g, const char *name, flow_tensor *value, flow_status *st);
flow_output flow_const_f32(flow_graph *g, const char *name, float v, flow_status *st);
flow_output flow_placeholder(flow_graph *g, const char *name, flow_dtype dt,
			     const flow_shape *shape /* NULL: unknown */, flow_status *st);
flow_output flow_identity(flow_graph *g, const char *name, flow_output x, flow_status *st);
flow_op *flow_noop(flow_graph *g, const char *name, flow_status *st);
/* NoOp with control dependencies on every op in ops (tf.group). */
flow_op *flow_group(flow_graph *g, const char *name, flow_op *const *ops, int n, flow_status *st);
/* Any op whose attrs are all inferred or defaulted: flow_simple(g,"Add",NULL,in,2,st). */
flow_output flow_simple(flow_graph *g, const char *op_type, const char *name,
			const flow_output *in, int n_in, flow_status *st);

/* ---- variables (TF1: values live in each session) ----
 * flow_variable adds a Variable node (dtype and shape of initial_value) and an
 * Assign(var, initial_value) node recorded as its initializer. Reading the
 * Variable's output gives the session's current value. Recorded as
 * variable_create. */
flow_output flow_variable(flow_graph *g, const char *name, flow_output initial_value,
			  flow_status *st);
/* Variable with an explicit dtype/shape and no initializer (set it with Assign). */
flow_output flow_variable_uninit(flow_graph *g, const char *name, flow_dtype dt,
				 const flow_shape *shape, flow_status *st);
flow_op *flow_variable_initializer(flow_op *var);          /* its Assign, or NULL */
int flow_graph_num_variables(const flow_graph *g);
flow_op *flow_graph_variable_at(const flow_graph *g, int i);
/* ReadVariable: an explicit snapshot of the current value. */
flow_output flow_read_variable(flow_graph *g, const char *name, flow_output var, flow_status *st);
/* Assign / AssignAdd / AssignSub (output: the new value). */
flow_output flow_assign(flow_graph *g, const char *name, flow_output var, flow_output value,
			flow_status *st);
flow_output flow_assign_add(flow_graph *g, const char *name, flow_output var, flow_output value,
			    flow_status *st);
flow_output flow_assign_sub(flow_graph *g, const char *name, flow_output var, flow_output value,
			    flow_status *st);
/* A NEW NoOp "init" (unique name) with control inputs on the initializer of
 * every variable in the graph at call time — like TF1, calling this in a loop
 * grows the graph. */
flow_op *flow_global_variables_initializer(flow_graph *g, flow_status *st);

/* ---- sessions ---- */
typedef struct flow_session flow_session;
typedef struct flow_session_options {
	flow_allocator *allocator;  /* NULL: the default allocator */
	int op_timing;              /* 0: flow_init default; 1: pp_op() per op execution; -1: off */
	const char *plan_cache_dir; /* NULL: flow_init default; "" off. Compiled plans are
	                               saved as <dir>/<graph hash>-<signature hash>.fplan
	                               (written atomically) and a later session/process on an
	                               identical graph loads them instead of compiling. Reused:
	                               the pruned, folded (with the constants' data), CSE'd and
	                               fused node list, each node's kernel choice (op, dtype;
	                               re-resolved to a function by lookup), the value-slot
	                               layout and the release/in-place schedule. Still done:
	                               hashing the graph, whole-graph validation, registry
	                               lookups of the plan's ops (LITE registers them), binding
	                               variables. A stale or damaged file is a cache miss. */
	int no_step_phase;          /* 1: runs are not recorded as `step` (the caller records
	                               its own steps, e.g. a training loop); initializer runs
	                               are still `variable_init` phases */
	int disable_passes;         /* bit mask of FLOW_PASS_* to skip (tests, benchmarks) */
} flow_session_options;
enum {
	FLOW_PASS_CONSTANT_FOLDING = 1 << 0,
	FLOW_PASS_CSE = 1 << 1,
	FLOW_PASS_FUSION = 1 << 2,
	FLOW_PASS_MEMORY_PLAN = 1 << 3, /* lifetime release and in-place reuse */
};
/* Recorded as session_create. opts may be NULL. */
flow_session *flow_session_new(flow_graph *g, const flow_session_options *opts, flow_status *st);
/* Feeds must be Placeholder outputs of this graph; fetch_values[i] receive
 * new references (caller unrefs). The first run of a (feeds, fetches,
 * targets) signature compiles and caches a plan; a run after the graph grew
 * re-validates the whole graph and recompiles. Recorded as `step` (or a
 * `variable_init` phase named "<initializer>:<variable>" / the init op's name
 * when a target is an initializer) with nested `extend_graph` and `compile`
 * spans; the allocator counters (flow.<allocator>.*) are sampled at the end
 * of every run. */
int flow_session_run(flow_session *s, const flow_output *feeds, flow_tensor *const *feed_values,
		     int n_feeds, const flow_output *fetches, flow_tensor **fetch_values,
		     int n_fetches, flow_op *const *targets, int n_targets, flow_status *st);
/* Releases variables and plans; later runs fail. Recorded as session_close. */
int flow_session_close(flow_session *s, flow_status *st);
void flow_session_free(flow_session *s);   /* closes if still open */
/* The session's current value of variable `var` (a new reference) or NULL. */
flow_tensor *flow_session_variable_value(flow_session *s, flow_op *var, flow_status *st);

typedef struct flow_session_stats {
	uint64_t runs;
	uint64_t compiles;          /* plans built by the compile passes */
	uint64_t plan_cache_hits;   /* runs served by a cached in-memory plan */
	uint64_t plan_disk_hits;    /* plans loaded from plan_cache_dir */
	uint64_t revalidations;     /* whole-graph validations after growth */
	uint64_t last_compile_ns;
	uint64_t last_validate_ns;
	int last_plan_nodes;        /* nodes in the last compiled plan */
	int last_pruned_nodes;      /* after prune, before the other passes */
	int last_folded;            /* constant-folded nodes */
	int last_cse_removed;
	int last_fused;
	int last_inplace;           /* outputs planned to reuse an input's buffer */
} flow_session_stats;
void flow_session_stats_get(const flow_session *s, flow_session_stats *out);
/* Text dump of the plan compiled for this signature (compiling if needed),
 * one node per line: "name = Type(inputs) attrs" — for tests and debugging. */
char *flow_session_plan_dump(flow_session *s, const flow_output *feeds, int n_feeds,
			     const flow_output *fetches, int n_fetches, flow_op *const *targets,
			     int n_targets, flow_status *st);

/* ---- eager execution (TFE-like): one op on tensors, same kernels ---- */
/* flow_eager_new(type) returns a desc that is not in any graph; set attrs with
 * the flow_op_set_attr_* calls and inputs with flow_op_add_tensor /
 * flow_op_add_tensor_list, then flow_execute runs shape inference and the
 * kernel. Consumes d. outputs[i] are new references. */
flow_op_desc *flow_eager_new(const char *op_type);
void flow_op_add_tensor(flow_op_desc *d, flow_tensor *t);
void flow_op_add_tensor_list(flow_op_desc *d, flow_tensor *const *t, int n);
int flow_execute(flow_op_desc *d, flow_tensor **outputs, int n_outputs, flow_status *st);

/* ---- the intra-op thread pool (sized to the machine) ---- */
typedef struct flow_threadpool flow_threadpool;
flow_threadpool *flow_default_pool(void);
int flow_threadpool_size(const flow_threadpool *p);
/* Calls fn(ud, begin, end) over [0, n) in chunks of at least `grain` items,
 * on the pool's threads and the caller; returns when all are done. Runs
 * inline when n <= grain or the pool has one thread. */
void flow_parallel_for(flow_threadpool *p, int64_t n, int64_t grain,
		       void (*fn)(void *ud, int64_t begin, int64_t end), void *ud);

#ifdef __cplusplus
}
#endif
#endif /* FLOW_H */
