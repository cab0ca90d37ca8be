/*
 * flow_internal.h — what op libraries (demo/flow/ops/<lib>.c, weights, init) and
 * the core share. Not installed; include after flow.h.
 *
 * Writing an op library (one file demo/flow/ops/<lib>.c):
 *
 *   static int shape_matmul(flow_shape_ctx *c) { ... }
 *   static void k_matmul_f32(flow_kernel_ctx *k) { ... }
 *
 *   static const flow_op_def ops[] = {
 *     {.name = "MatMul", .inputs = "a: T, b: T", .outputs = "product: T",
 *      .attrs = "T: {f32,f64}; transpose_a: bool = false; transpose_b: bool = false",
 *      .shape_fn = shape_matmul},
 *     ...
 *   };
 *   static const flow_kernel_def kernels[] = {
 *     {"MatMul", FLOW_CPU, FLOW_F32, k_matmul_f32},
 *     {"MatMul", FLOW_CPU, FLOW_F64, k_matmul_f64},
 *   };
 *   FLOW_OP_LIBRARY(math, ops, kernels)
 *
 * demo/flow/CMakeLists.txt finds every FLOW_OP_LIBRARY(<lib>, ...) line at the
 * start of a line in the sources under demo/flow/ (ops/, weights/ included) and generates
 * the list of libraries the registry walks, so no CMake edits are needed.
 * (A generated list instead of constructors: nothing is stripped from a
 * static archive, and registration order is deterministic.)
 *
 * ---- spec grammar (parsed and validated at registration: that parsing is
 * the real cost of full registration, as OpDefBuilder's is in TF) ----
 *  inputs / outputs: comma-separated  "name: TYPE"
 *     TYPE = f32 | f64 | i32 | i64 | bool     fixed dtype
 *          | <attr>                           a type attr, e.g. T
 *          | <N>*<TYPE>                       a list; N an int attr ("values: N*T")
 *          | Ref(<TYPE>)                      inputs only: must come from a
 *                                             Variable; the kernel gets the
 *                                             variable slot (flow_ctx_var)
 *  attrs: semicolon-separated  "name: KIND [>= min] [= default]"
 *     KIND = int | float | bool | type | shape | string | ints | floats | tensor
 *          | {f32,f64,...}                    a type attr restricted to a set
 *     defaults: 1, -2.5, true, f32, [2,-1] (shape), "text", [1,2], [0.5,1]
 *  A type attr that types an input is inferred from that input when not set.
 *  An int attr used as a list length (N) is inferred from the list.
 *
 * Kernels are selected per (op, device, dtype) where dtype is the value of
 * the op's first type attr ("T" by convention; FLOW_DT_INVALID = any, for
 * ops without a type attr).
 */
#ifndef FLOW_INTERNAL_H
#define FLOW_INTERNAL_H

#include "flow.h"
#include <stdatomic.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status internals (kernels may build one on the stack) ---- */
struct flow_status {
	flow_code code;
	char msg[512];
};

/* ---- tensors ---- */
typedef struct flow_buffer {
	atomic_int refs;
	void *data;
	size_t size;                 /* bytes usable */
	flow_allocator *alloc;       /* NULL: external (release below) */
	void (*release)(void *ctx, void *data, size_t size);
	void *release_ctx;
} flow_buffer;

struct flow_tensor {
	atomic_int refs;
	flow_dtype dtype;
	int ndim;
	int64_t dims[FLOW_MAX_DIMS];
	int64_t nelem;
	flow_buffer *buf;            /* NULL only for nelem == 0 */
	size_t offset;               /* byte offset into buf->data */
};

static inline void *flow_tensor_ptr(flow_tensor *t)
{
	return t->buf ? (char *)t->buf->data + t->offset : NULL;
}
#define FLOW_F32P(t) ((float *)flow_tensor_ptr(t))
#define FLOW_F64P(t) ((double *)flow_tensor_ptr(t))
#define FLOW_I32P(t) ((int32_t *)flow_tensor_ptr(t))
#define FLOW_I64P(t) ((int64_t *)flow_tensor_ptr(t))
#define FLOW_BOOLP(t) ((uint8_t *)flow_tensor_ptr(t))

/* 1 if a and b have the same rank and dimensions. */
static inline int flow_tensor_same_shape(const flow_tensor *a, const flow_tensor *b)
{
	if (a->ndim != b->ndim)
		return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->dims[i] != b->dims[i])
			return 0;
	return 1;
}

/* A new tensor sharing t's buffer with another shape of the same element
 * count (Reshape, ExpandDims, Squeeze: no copy). */
flow_tensor *flow_tensor_alias(flow_tensor *t, int ndim, const int64_t *dims, flow_status *st);
/* Validates ndim/dims and computes nelem; -1 with st set on error. */
int flow_dims_check(int ndim, const int64_t *dims, int64_t *nelem, flow_status *st);

/* ---- attrs ---- */
typedef enum flow_attr_kind {
	FLOW_ATTR_NONE = 0,
	FLOW_ATTR_INT,
	FLOW_ATTR_FLOAT,
	FLOW_ATTR_BOOL,
	FLOW_ATTR_TYPE,
	FLOW_ATTR_SHAPE,
	FLOW_ATTR_STRING,
	FLOW_ATTR_INTS,
	FLOW_ATTR_FLOATS,
	FLOW_ATTR_TENSOR
} flow_attr_kind;

typedef struct flow_attr_value {
	flow_attr_kind kind;
	union {
		int64_t i;
		double f;
		int b;
		flow_dtype type;
		flow_shape shape;
		char *s;                          /* owned */
		struct { int n; int64_t *v; } ints; /* owned */
		struct { int n; double *v; } floats;
		flow_tensor *tensor;              /* one reference */
	} u;
} flow_attr_value;

typedef struct flow_attr {
	char *name;
	flow_attr_value value;
} flow_attr;

typedef struct flow_attr_list {
	int n, cap;
	flow_attr *a;
} flow_attr_list;
const flow_attr_value *flow_attrs_find(const flow_attr_list *l, const char *name);

/* ---- op definitions ---- */
enum flow_op_flags {
	FLOW_OP_STATEFUL = 1 << 0,   /* never constant-folded, CSE'd or pruned as a target */
	FLOW_OP_RANDOM = 1 << 1,     /* treated as stateful too; gets a per-node state word (flow_ctx_state) */
	FLOW_OP_COMMUTATIVE = 1 << 2,/* CSE may treat inputs 0 and 1 as unordered */
	FLOW_OP_NO_KERNEL = 1 << 3,  /* handled by the executor itself (Placeholder…) */
};

typedef struct flow_shape_ctx flow_shape_ctx;
typedef struct flow_kernel_ctx flow_kernel_ctx;

/* Sets every output's shape with flow_shape_set_output; returns 0, or -1
 * after flow_shape_error. Outputs not set stay unknown. */
typedef int (*flow_shape_fn)(flow_shape_ctx *c);

/* Gradient function for flow_gradients (demo/flow/train): builds the gradient ops
 * of `op` in `g` (with the public builder) from dy[i], the gradient of the
 * loss w.r.t. output i ({NULL,0} when none flows), and stores in dx[j] the
 * gradient w.r.t. input j ({NULL,0} = none, e.g. an integer index input).
 * Returns 0, or -1 with st set naming the op. */
typedef int (*flow_grad_fn)(flow_graph *g, flow_op *op, const flow_output *dy, flow_output *dx,
			    flow_status *st);

typedef struct flow_op_def {
	const char *name;       /* "MatMul" — unique across libraries */
	const char *inputs;     /* spec, see top; "" or NULL: none */
	const char *outputs;
	const char *attrs;
	flow_shape_fn shape_fn; /* NULL: output shapes unknown (only dtypes are known) */
	flow_grad_fn grad_fn;   /* NULL: no gradient (flow_gradients reports the op) */
	unsigned flags;         /* enum flow_op_flags */
	const char *doc;        /* one line, optional */
} flow_op_def;

typedef enum flow_device { FLOW_CPU = 0, FLOW_GPU = 1 } flow_device;
typedef void (*flow_kernel_fn)(flow_kernel_ctx *k);
typedef struct flow_kernel_def {
	const char *op;
	flow_device device;
	flow_dtype dtype;       /* value of the op's first type attr; 0 = any */
	flow_kernel_fn fn;
} flow_kernel_def;

typedef struct flow_op_lib {
	const char *name;
	const flow_op_def *ops;
	int n_ops;
	const flow_kernel_def *kernels;
	int n_kernels;
} flow_op_lib;

#define FLOW_OP_LIBRARY(lib, ops_array, kernels_array)                                         \
	const flow_op_lib flow_oplib_##lib = {#lib, ops_array,                                \
					     (int)(sizeof(ops_array) / sizeof((ops_array)[0])), \
					     kernels_array,                                     \
					     (int)(sizeof(kernels_array) / sizeof((kernels_array)[0]))};

/* Registers an extra library at run time (tests, plug-ins). The library must
 * outlive the runtime. In FULL mode it is validated immediately. */
int flow_registry_add_library(const flow_op_lib *lib, flow_status *st);

/* ---- parsed (registered) op defs, for the core and demo/flow/train ---- */
typedef struct flow_arg_spec {
	char name[32];
	flow_dtype fixed;       /* fixed dtype, or 0 when typed by an attr */
	int type_attr;          /* index into attrs, or -1 */
	int list_attr;          /* index of the int attr giving the list length, or -1 */
	int is_ref;
} flow_arg_spec;
typedef struct flow_attr_spec {
	char name[32];
	flow_attr_kind kind;
	unsigned allowed;       /* type attrs: bit (1<<dtype) allowed; 0 = any */
	int has_min;
	int64_t min;
	int has_default;
	flow_attr_value def;
} flow_attr_spec;
typedef struct flow_registered_op {
	const flow_op_def *def;
	const flow_op_lib *lib;
	int n_inputs, n_outputs, n_attrs;
	flow_arg_spec *inputs, *outputs;
	flow_attr_spec *attrs;
	int kernel_type_attr;   /* attr index selecting kernels (first type attr) or -1 */
	int n_kernels;
	const flow_kernel_def **kernels;
} flow_registered_op;
/* Looks up (registering on demand in LITE mode). NULL with st set if unknown. */
const flow_registered_op *flow_registry_lookup(const char *op_type, flow_status *st);
const flow_kernel_def *flow_registry_kernel(const flow_registered_op *r, flow_device dev,
					    flow_dtype dt);

/* ---- shape context (shape functions) ---- */
int flow_shape_num_inputs(flow_shape_ctx *c);         /* flattened: a list of N counts N */
const flow_shape *flow_shape_input(flow_shape_ctx *c, int i);
/* The value of input i if it is known at build time (a Const), else NULL —
 * e.g. Reshape's shape argument. */
const flow_tensor *flow_shape_input_const(flow_shape_ctx *c, int i);
int flow_shape_num_outputs(flow_shape_ctx *c);
void flow_shape_set_output(flow_shape_ctx *c, int i, const flow_shape *s);
const flow_attr_value *flow_shape_attr(flow_shape_ctx *c, const char *name);
int64_t flow_shape_attr_int(flow_shape_ctx *c, const char *name, int64_t dflt);
int flow_shape_attr_bool(flow_shape_ctx *c, const char *name, int dflt);
/* Sets the error (prefixed with the node name and op type) and returns -1. */
int flow_shape_error(flow_shape_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Common shape functions. */
int flow_shape_fn_unchanged(flow_shape_ctx *c);  /* every output = input 0 */
int flow_shape_fn_broadcast(flow_shape_ctx *c);  /* output 0 = numpy broadcast of inputs 0,1 */
int flow_shape_fn_scalar(flow_shape_ctx *c);     /* every output a scalar */
/* numpy broadcasting of two (partial) shapes; -1 with msg on mismatch. */
int flow_shape_broadcast(const flow_shape *a, const flow_shape *b, flow_shape *out,
			 char *msg, size_t msglen);

/* ---- kernel context ---- */
int flow_ctx_num_inputs(flow_kernel_ctx *k);          /* flattened */
flow_tensor *flow_ctx_input(flow_kernel_ctx *k, int i);
int flow_ctx_num_outputs(flow_kernel_ctx *k);
flow_dtype flow_ctx_output_dtype(flow_kernel_ctx *k, int i);
/* Allocates output i (dtype from the node) through the session's allocator.
 * Contents are NOT zeroed. NULL (status set) on failure: return at once. */
flow_tensor *flow_ctx_output(flow_kernel_ctx *k, int i, int ndim, const int64_t *dims);
flow_tensor *flow_ctx_output_zeros(flow_kernel_ctx *k, int i, int ndim, const int64_t *dims);
/* Output i reusing input `in`'s buffer when the memory plan allows (input
 * dead after this node, sole owner, same byte size); otherwise a fresh
 * buffer. The kernel must then tolerate out == in element by element. */
flow_tensor *flow_ctx_output_inplace(flow_kernel_ctx *k, int i, int in, int ndim,
				     const int64_t *dims);
/* Sets output i to t (takes a new reference): forwarding (Identity), aliases. */
void flow_ctx_set_output(flow_kernel_ctx *k, int i, flow_tensor *t);
const flow_attr_value *flow_ctx_attr(flow_kernel_ctx *k, const char *name);
int64_t flow_ctx_attr_int(flow_kernel_ctx *k, const char *name, int64_t dflt);
double flow_ctx_attr_float(flow_kernel_ctx *k, const char *name, double dflt);
int flow_ctx_attr_bool(flow_kernel_ctx *k, const char *name, int dflt);
const char *flow_ctx_attr_string(flow_kernel_ctx *k, const char *name, const char *dflt);
/* ints attr; *n = 0 and NULL when missing. */
const int64_t *flow_ctx_attr_ints(flow_kernel_ctx *k, const char *name, int *n);
flow_threadpool *flow_ctx_pool(flow_kernel_ctx *k);
const char *flow_ctx_node_name(flow_kernel_ctx *k);
/* Random/stateful ops: a 64-bit word kept per node per session (per eager
 * call site: per process), 0 at first, persistent across runs — e.g. the
 * Philox counter offset so successive runs draw new numbers. */
uint64_t *flow_ctx_state(flow_kernel_ctx *k);
/* Ref inputs ("Ref(T)"): the variable's value slot in this session. *slot is
 * NULL while uninitialised; flow_ctx_input(k, i) of a Ref input is the
 * current value, borrowed (may be NULL; stale once the slot is replaced). Replace it with flow_ctx_var_set; update in place
 * only through flow_ctx_var_mutable (copy-on-write when readers share it). */
flow_tensor **flow_ctx_var(flow_kernel_ctx *k, int input);
void flow_ctx_var_set(flow_kernel_ctx *k, int input, flow_tensor *value); /* takes a ref */
flow_tensor *flow_ctx_var_mutable(flow_kernel_ctx *k, int input);        /* NULL if uninit */
/* Reports a kernel error: the message is prefixed with the node name and op
 * type. The kernel must return right after. */
void flow_ctx_fail(flow_kernel_ctx *k, flow_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int flow_ctx_ok(flow_kernel_ctx *k);

/* ---- misc helpers shared with op libraries ---- */
uint64_t flow_hash_bytes(const void *p, size_t n, uint64_t seed); /* stable content digest, not cryptographic */
int flow_threads_default(void);

#ifdef __cplusplus
}
#endif
#endif /* FLOW_INTERNAL_H */
