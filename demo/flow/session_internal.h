/*
 * session_internal.h — private to the session: the compiled plan (pnode,
 * plan), the session struct, and the calls between session.c (sessions,
 * plan cache, run), session_compile.c (compile passes), session_plan_file.c
 * (plans reused from disk) and session_exec.c (the executor).
 */
#ifndef FLOW_SESSION_INTERNAL_H
#define FLOW_SESSION_INTERNAL_H

#include "core.h"

#include <pthread.h>

flow_tensor *flow__tensor_alloc(flow_allocator *a, flow_dtype dt, int ndim, const int64_t *dims,
				int zero, flow_status *st);

enum { PN_KERNEL = 0, PN_PLACEHOLDER, PN_VARIABLE, PN_CONST };

typedef struct pnode {
	char *name;
	flow_op *op;                 /* graph node it came from (the last one for fused nodes) */
	const flow_registered_op *reg;
	flow_attr_list attrs;
	int kind;
	int n_in;
	int *in_node, *in_idx;
	unsigned char *in_ref;
	int n_ctrl;
	int *ctrl;
	int n_out;
	flow_dtype *out_dt;
	const flow_kernel_def *kernel;
	flow_dtype kernel_dt;
	int feed;                    /* placeholders: index into the run's feeds */
	int var_id;                  /* Variable nodes: graph op id of the variable */
	int *in_var;                 /* per input: variable op id for Ref inputs, else -1 */
	int dead;
	int out_base;
	int n_release;
	int *release;
	unsigned char *in_dead;
} pnode;

typedef struct plan {
	char *key;
	int n;
	pnode *nodes;
	int n_slots;
	int n_fetch;
	int *fetch_slot;
	int n_feed;
	int max_in, max_out;
	flow_tensor **values;        /* scratch for one run */
	flow_tensor **ins, **outs;
	flow_tensor ***vslots;
	int pruned, folded, cse, fused, inplace;
} plan;

struct flow_session {
	flow_graph *g;
	flow_allocator *alloc;
	int op_timing;
	char *plan_dir;
	int no_step_phase;
	int disable;
	int closed;
	pthread_mutex_t mu;
	uint64_t seen_version;
	int seen_ops;
	plan **plans;                /* the in-memory plan cache */
	int n_plans, cap_plans;
	pp_hash plan_index;          /* signature key -> index in plans[] */
	flow_tensor **vars;          /* by graph op id */
	uint64_t *state;             /* by graph op id */
	int cap_ids;
	flow_session_stats st;
};


void sess_pnode_clear(pnode *p);
void sess_plan_free(plan *pl);
flow_kernel_ctx sess_make_ctx(pnode *p, flow_allocator *a, flow_tensor **in, flow_tensor **out,
			 flow_status *st);
/* The value of a Const node (NULL for other nodes). */
const flow_tensor *sess_const_value(const pnode *p);
/* Compiles the plan for one signature (prune, fold, CSE, fuse, kernels, memory plan). */
plan *sess_compile(flow_session *s, const flow_output *feeds, int nf, const flow_output *fetches, int nx,
	      flow_op *const *targets, int nt, flow_status *st);
/* Plan files: saved after a compile, loaded instead of compiling when present. */
void sess_plan_save(flow_session *s, const plan *pl, const char *key);
plan *sess_plan_load(flow_session *s, const char *key, int nf);
/* Runs a plan once. */
int sess_execute(flow_session *s, plan *pl, flow_tensor *const *feed_vals, flow_tensor **fetch_vals,
	    flow_status *st);

#endif
