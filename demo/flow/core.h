/*
 * core.h — private structures shared by the core files of demo/flow/ (graph,
 * session, eager, registry). Op libraries use flow_internal.h only.
 */
#ifndef FLOW_CORE_H
#define FLOW_CORE_H

#include "flow_internal.h"
#include "pp_hash.h"

#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static inline uint64_t flow_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline long flow_tid(void)
{
	return (long)syscall(SYS_gettid);
}

/* runtime.c */
void flow__ensure_init(void);
extern int flow__op_timing_default;
extern const char *flow__plan_dir_default;

/* alloc.c */
int flow_allocator_check(flow_allocator *a, char *msg, size_t len); /* tests */
void flow__allocator_counters(flow_allocator *a); /* counters only, no row */

/* registry.c */
int flow__registry_init(int mode, flow_status *st);
int flow__registry_complete(flow_status *st); /* LITE -> FULL */
void flow__registry_free(void);
int flow__registry_mode(void);

/* threadpool.c */
flow_threadpool *flow__pool_new(int n);
void flow__pool_free(flow_threadpool *p);

/* attrs.c */
void flow__attr_value_free(flow_attr_value *v);
int flow__attr_value_copy(flow_attr_value *dst, const flow_attr_value *src);
flow_attr_value *flow__attrs_set(flow_attr_list *l, const char *name); /* cleared slot */
void flow__attrs_free(flow_attr_list *l);
int flow__attrs_copy(flow_attr_list *dst, const flow_attr_list *src);
/* Canonical bytes (attrs sorted by name), for hashing, CSE and plan files. */
typedef struct flow_buf {
	unsigned char *p;
	size_t n, cap;
	int oom;
} flow_buf;
void flow__buf_put(flow_buf *b, const void *p, size_t n);
void flow__buf_u32(flow_buf *b, uint32_t v);
void flow__buf_u64(flow_buf *b, uint64_t v);
void flow__buf_str(flow_buf *b, const char *s);
void flow__attrs_serialize(const flow_attr_list *l, flow_buf *b);
void flow__tensor_serialize(const flow_tensor *t, flow_buf *b);
typedef struct flow_rd {
	const unsigned char *p;
	size_t n, off;
	int bad;
} flow_rd;
uint32_t flow__rd_u32(flow_rd *r);
uint64_t flow__rd_u64(flow_rd *r);
char *flow__rd_str(flow_rd *r);     /* malloc'd; NULL when bad */
const void *flow__rd_bytes(flow_rd *r, size_t n);
int flow__attrs_deserialize(flow_attr_list *l, flow_rd *r);
flow_tensor *flow__tensor_deserialize(flow_rd *r);
/* "T=f32, transpose_a=false" */
void flow__attrs_str(const flow_attr_list *l, char *buf, size_t len);

/* ---- graph ---- */
struct flow_op {
	flow_graph *graph;
	int id;
	char *name;
	const flow_registered_op *reg;
	int n_inputs;
	flow_output *inputs;         /* flattened */
	unsigned char *input_is_ref;
	int n_ctrl;
	flow_op **ctrl;
	flow_attr_list attrs;        /* complete: defaults and inferred values filled in */
	int n_outputs;
	flow_dtype *out_dtypes;
	flow_shape *out_shapes;
	flow_op *initializer;        /* Variable: its Assign */
	int var_index;               /* Variable: index in graph->vars, else -1 */
	int is_init;                 /* an initializer (or group of them): runs are variable_init */
	double cost_ns;              /* measured op time (mean) when timing was on */
	uint64_t cost_n;
};

struct flow_graph {
	flow_op **ops;
	int n_ops, cap_ops;
	pp_hash by_name;             /* name -> index in ops[] */
	flow_op **vars;
	int n_vars, cap_vars;
	uint64_t version;
	int finalized;
	uint64_t name_seq;
	uint64_t hash;               /* graph hash for plan files, valid at hash_version */
	uint64_t hash_version;
	int sessions;                /* open sessions */
	int free_pending;            /* flow_graph_free while sessions were open (TF_DeleteGraph) */
};

struct flow_op_desc {
	flow_graph *g;               /* NULL: eager */
	char *type;
	char *name;
	int n_in, cap_in;
	flow_output *in;             /* graph mode */
	flow_tensor **tin;           /* eager mode (references) */
	int n_groups, cap_groups;
	int *group_size;             /* one per add_input / add_input_list call */
	int n_ctrl, cap_ctrl;
	flow_op **ctrl;
	flow_attr_list attrs;
	flow_status err;             /* first error from the add/set calls */
};

/* graph.c: type/attr resolution shared by flow_op_finish and flow_execute.
 * Given the registered op, the groups and flattened input dtypes, fills in
 * inferred and default attrs, checks the dtypes, and computes the output
 * count and dtypes (malloc'd into *out_dt). */
int flow__resolve(const flow_registered_op *r, const char *node_name, flow_attr_list *attrs,
		  const int *group_size, int n_groups, const flow_dtype *in_dt, int n_in,
		  int *n_out, flow_dtype **out_dt, unsigned char **is_ref, flow_status *st);
int flow__infer_shapes(const flow_registered_op *r, const char *node_name,
		       const flow_attr_list *attrs, int n_in, const flow_shape *in_shapes,
		       const flow_dtype *in_dt, const flow_tensor *const *in_consts, int n_out,
		       flow_shape *out_shapes, flow_status *st);
/* Validates the whole graph: every node's inputs precede it and exist, op
 * defs resolve, and a Kahn topological sort covers every node (no cycle). */
int flow__graph_validate(flow_graph *g, flow_status *st);
/* Session lifetimes on a graph (flow_graph_free defers while any is open). */
void flow__graph_attach(flow_graph *g);
void flow__graph_detach(flow_graph *g);
uint64_t flow__graph_hash(flow_graph *g);
void flow__desc_free(flow_op_desc *d);

/* ---- kernel context ---- */
struct flow_kernel_ctx {
	const char *node_name;
	const char *op_type;
	const flow_attr_list *attrs;
	int n_in;
	flow_tensor **in;
	int n_out;
	flow_tensor **out;
	const flow_dtype *out_dt;
	flow_allocator *alloc;
	flow_threadpool *pool;
	uint64_t *state;
	flow_tensor ***var_slot;     /* per input: the variable slot for Ref inputs, else NULL */
	const unsigned char *in_dead;/* per input: dead after this node (may be reused) */
	int inplace_hits;
	flow_status *st;
};

#endif /* FLOW_CORE_H */
