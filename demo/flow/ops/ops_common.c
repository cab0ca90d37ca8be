/*
 * ops_common.c — broadcasting and small-tensor helpers for the op library.
 */
#include "ops_common.h"

#include <stdio.h>

void ops_parallel(flow_kernel_ctx *k, int64_t n, int64_t grain,
		  void (*fn)(void *ud, int64_t b, int64_t e), void *ud)
{
	if (n <= 0)
		return;
	flow_threadpool *p = flow_ctx_pool(k);
	if (!p || n <= grain)
		fn(ud, 0, n);
	else
		flow_parallel_for(p, n, grain, fn, ud);
}

int ops_bcast_init(ops_bcast *bc, const flow_tensor *a, const flow_tensor *b, char *msg,
		   size_t msglen)
{
	int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
	int64_t stra[FLOW_MAX_DIMS], strb[FLOW_MAX_DIMS];
	memset(bc, 0, sizeof *bc);
	bc->ndim = nd;
	bc->nelem = 1;
	int64_t s = 1;
	for (int d = a->ndim - 1; d >= 0; d--) {
		stra[d] = s;
		s *= a->dims[d];
	}
	s = 1;
	for (int d = b->ndim - 1; d >= 0; d--) {
		strb[d] = s;
		s *= b->dims[d];
	}
	int same = a->ndim == b->ndim;
	for (int d = 0; d < nd; d++) {
		int ia = d - (nd - a->ndim), ib = d - (nd - b->ndim);
		int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
		if (da != db)
			same = 0;
		if (da != db && da != 1 && db != 1) {
			snprintf(msg, msglen,
				 "incompatible shapes for broadcasting: dimension %d is %lld in the first input and %lld in the second",
				 d, (long long)da, (long long)db);
			return -1;
		}
		bc->dims[d] = da == 1 ? db : da;
		bc->sa[d] = (ia >= 0 && da != 1) ? stra[ia] : 0;
		bc->sb[d] = (ib >= 0 && db != 1) ? strb[ib] : 0;
		bc->nelem *= bc->dims[d];
	}
	if (same)
		bc->mode = BC_SAME;
	else if (a->nelem == 1)
		bc->mode = BC_SCALAR_A;
	else if (b->nelem == 1)
		bc->mode = BC_SCALAR_B;
	else
		bc->mode = BC_GENERAL;
	bc->inner = nd ? bc->dims[nd - 1] : 1;
	bc->rows = bc->inner ? bc->nelem / bc->inner : 0;
	return 0;
}

int ops_const_ints(const flow_tensor *t, int64_t *out, int max)
{
	if (!t || (t->dtype != FLOW_I32 && t->dtype != FLOW_I64) || t->nelem > max)
		return -1;
	for (int64_t i = 0; i < t->nelem; i++)
		out[i] = (int64_t)flow_tensor_get(t, i);
	return (int)t->nelem;
}

int ops_read_ints(flow_kernel_ctx *k, const flow_tensor *t, int64_t *out, int max, const char *what)
{
	if (t->dtype != FLOW_I32 && t->dtype != FLOW_I64) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s must be i32 or i64, got %s", what,
			      flow_dtype_name(t->dtype));
		return -1;
	}
	if (t->nelem > max) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s has %lld values, at most %d allowed", what,
			      (long long)t->nelem, max);
		return -1;
	}
	const void *p = flow_tensor_cdata(t);
	for (int64_t i = 0; i < t->nelem; i++)
		out[i] = t->dtype == FLOW_I32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
	return (int)t->nelem;
}
