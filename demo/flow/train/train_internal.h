/*
 * train_internal.h — what the files of demo/flow/train/ share. Not installed.
 */
#ifndef FLOW_TRAIN_INTERNAL_H
#define FLOW_TRAIN_INTERNAL_H

#include "flow_train.h"
#include "flow_internal.h"

/* train_ops.c: the "train" op library (registered at run time). */
int train_ops_register(flow_status *st);
/* 1 when the linked op libraries (or ours) define op_type. */
int train_op_exists(const char *op_type);

/* gradients.c */
void train_grads_register_builtin(void);
flow_train_grad_fn train_grad_lookup(const char *op_type);

/* Builder shorthands: unique node names, {NULL,0} on error (st set). */
flow_output tb_op1(flow_graph *g, const char *type, flow_output a, flow_status *st);
flow_output tb_op2(flow_graph *g, const char *type, flow_output a, flow_output b,
		   flow_status *st);
flow_output tb_op3(flow_graph *g, const char *type, flow_output a, flow_output b,
		   flow_output c, flow_status *st);
/* Name for the next node built by flow_gradients (scope/Type_n), or NULL
 * outside of it (the builder then picks "<Type>_<n>"). */
const char *tb_name(const char *type, char *buf, size_t len);
flow_op_desc *tb_new(flow_graph *g, const char *type);
flow_output tb_matmul(flow_graph *g, flow_output a, flow_output b, int ta, int tb,
		      flow_status *st);
flow_output tb_const_i64s(flow_graph *g, const int64_t *v, int n, flow_status *st);

/* Keras-style fused update for the optimiser kinds (optimizer.c). */
typedef struct train_opt_hp {
	int kind;
	float lr, momentum, rho, beta1, beta2, eps;
	int nesterov;
} train_opt_hp;
void train_update_f32(const train_opt_hp *hp, int64_t t, float *var, float *m, float *v,
		      const float *g, int64_t n, flow_threadpool *pool);

#define TRAIN_ERRLEN 256

#endif
