/*
 * tensor.c — refcounted tensors over refcounted buffers. A buffer comes from
 * an allocator (returned there when the last tensor using it goes) or wraps
 * external memory such as an mmap'd weight file.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

int flow_dims_check(int ndim, const int64_t *dims, int64_t *nelem, flow_status *st)
{
	if (ndim < 0 || ndim > FLOW_MAX_DIMS) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "tensor rank %d outside 0..%d", ndim,
				FLOW_MAX_DIMS);
		return -1;
	}
	int64_t n = 1;
	for (int i = 0; i < ndim; i++) {
		if (dims[i] < 0) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "tensor dim %d is %lld (must be >= 0)",
					i, (long long)dims[i]);
			return -1;
		}
		if (dims[i] && n > INT64_MAX / 16 / dims[i]) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "tensor dims overflow at dim %d", i);
			return -1;
		}
		n *= dims[i];
	}
	*nelem = n;
	return 0;
}

static flow_tensor *tensor_shell(flow_dtype dt, int ndim, const int64_t *dims, flow_status *st)
{
	int64_t n;
	if (!flow_dtype_size(dt)) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "tensor dtype %d is not valid", (int)dt);
		return NULL;
	}
	if (flow_dims_check(ndim, dims, &n, st))
		return NULL;
	flow_tensor *t = calloc(1, sizeof *t);
	if (!t) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "tensor: out of memory");
		return NULL;
	}
	atomic_init(&t->refs, 1);
	t->dtype = dt;
	t->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		t->dims[i] = dims[i];
	t->nelem = n;
	return t;
}

static flow_tensor *tensor_alloc(flow_allocator *a, flow_dtype dt, int ndim, const int64_t *dims,
				 int zero, flow_status *st)
{
	flow__ensure_init();
	flow_tensor *t = tensor_shell(dt, ndim, dims, st);
	if (!t || !t->nelem)
		return t;
	size_t nb = (size_t)t->nelem * flow_dtype_size(dt);
	flow_buffer *b = malloc(sizeof *b);
	void *p = b ? flow_allocator_alloc(a, nb) : NULL;
	if (!p) {
		free(b);
		free(t);
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED,
				"allocator '%s': cannot allocate %zu bytes", flow_allocator_name(a), nb);
		return NULL;
	}
	if (zero)
		memset(p, 0, nb);
	atomic_init(&b->refs, 1);
	b->data = p;
	b->size = nb;
	b->alloc = a;
	b->release = NULL;
	b->release_ctx = NULL;
	t->buf = b;
	return t;
}

/* Used by the kernel context: not zeroed. */
flow_tensor *flow__tensor_alloc(flow_allocator *a, flow_dtype dt, int ndim, const int64_t *dims,
				int zero, flow_status *st)
{
	return tensor_alloc(a, dt, ndim, dims, zero, st);
}

flow_tensor *flow_tensor_new_in(flow_allocator *a, flow_dtype dt, int ndim, const int64_t *dims,
				flow_status *st)
{
	return tensor_alloc(a, dt, ndim, dims, 1, st);
}

flow_tensor *flow_tensor_new(flow_dtype dt, int ndim, const int64_t *dims, flow_status *st)
{
	flow__ensure_init();
	return tensor_alloc(flow_default_allocator(), dt, ndim, dims, 1, st);
}

flow_tensor *flow_tensor_from_data(flow_dtype dt, int ndim, const int64_t *dims, const void *data,
				   flow_status *st)
{
	flow__ensure_init();
	flow_tensor *t = tensor_alloc(flow_default_allocator(), dt, ndim, dims, 0, st);
	if (t && t->nelem)
		memcpy(flow_tensor_ptr(t), data, flow_tensor_nbytes(t));
	return t;
}

flow_tensor *flow_tensor_wrap(flow_dtype dt, int ndim, const int64_t *dims, void *data,
			      size_t nbytes, void (*release)(void *ctx, void *data, size_t nbytes),
			      void *ctx, flow_status *st)
{
	flow_tensor *t = tensor_shell(dt, ndim, dims, st);
	if (!t)
		return NULL;
	if ((size_t)t->nelem * flow_dtype_size(dt) > nbytes) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"tensor_wrap: shape needs %zu bytes but only %zu given",
				(size_t)t->nelem * flow_dtype_size(dt), nbytes);
		free(t);
		return NULL;
	}
	flow_buffer *b = malloc(sizeof *b);
	if (!b) {
		free(t);
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "tensor: out of memory");
		return NULL;
	}
	atomic_init(&b->refs, 1);
	b->data = data;
	b->size = nbytes;
	b->alloc = NULL;
	b->release = release;
	b->release_ctx = ctx;
	t->buf = b;
	return t;
}

flow_tensor *flow_tensor_alias(flow_tensor *t, int ndim, const int64_t *dims, flow_status *st)
{
	flow_tensor *a = tensor_shell(t->dtype, ndim, dims, st);
	if (!a)
		return NULL;
	if (a->nelem != t->nelem) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"cannot view %lld elements as a shape of %lld elements",
				(long long)t->nelem, (long long)a->nelem);
		free(a);
		return NULL;
	}
	a->buf = t->buf;
	a->offset = t->offset;
	if (a->buf)
		atomic_fetch_add(&a->buf->refs, 1);
	return a;
}

#define SCALAR(fn, ctype, DT)                                                                    \
	flow_tensor *fn(ctype v)                                                                 \
	{                                                                                        \
		flow_tensor *t = flow_tensor_new(DT, 0, NULL, NULL);                             \
		if (t)                                                                           \
			*(ctype *)flow_tensor_ptr(t) = v;                                        \
		return t;                                                                        \
	}
SCALAR(flow_tensor_scalar_f32, float, FLOW_F32)
SCALAR(flow_tensor_scalar_f64, double, FLOW_F64)
SCALAR(flow_tensor_scalar_i32, int32_t, FLOW_I32)
SCALAR(flow_tensor_scalar_i64, int64_t, FLOW_I64)

flow_tensor *flow_tensor_ref(flow_tensor *t)
{
	if (t)
		atomic_fetch_add(&t->refs, 1);
	return t;
}

static void buffer_unref(flow_buffer *b)
{
	if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
		return;
	if (b->alloc)
		flow_allocator_release(b->alloc, b->data);
	else if (b->release)
		b->release(b->release_ctx, b->data, b->size);
	free(b);
}

void flow_tensor_unref(flow_tensor *t)
{
	if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
		return;
	buffer_unref(t->buf);
	free(t);
}

flow_tensor *flow_tensor_copy(const flow_tensor *t, flow_status *st)
{
	flow_tensor *c = tensor_alloc(flow_default_allocator(), t->dtype, t->ndim, t->dims, 0, st);
	if (c && c->nelem)
		memcpy(flow_tensor_ptr(c), flow_tensor_cdata(t), flow_tensor_nbytes(t));
	return c;
}

flow_dtype flow_tensor_dtype(const flow_tensor *t) { return t->dtype; }
int flow_tensor_ndim(const flow_tensor *t) { return t->ndim; }
int64_t flow_tensor_dim(const flow_tensor *t, int i)
{
	return i >= 0 && i < t->ndim ? t->dims[i] : -1;
}
flow_shape flow_tensor_shape(const flow_tensor *t) { return flow_shape_make(t->ndim, t->dims); }
int64_t flow_tensor_nelem(const flow_tensor *t) { return t->nelem; }
size_t flow_tensor_nbytes(const flow_tensor *t)
{
	return (size_t)t->nelem * flow_dtype_size(t->dtype);
}
void *flow_tensor_data(flow_tensor *t) { return flow_tensor_ptr(t); }
const void *flow_tensor_cdata(const flow_tensor *t)
{
	return t->buf ? (const char *)t->buf->data + t->offset : NULL;
}

double flow_tensor_get(const flow_tensor *t, int64_t i)
{
	if (i < 0 || i >= t->nelem)
		return 0.0;
	const void *p = flow_tensor_cdata(t);
	switch (t->dtype) {
	case FLOW_F32: return ((const float *)p)[i];
	case FLOW_F64: return ((const double *)p)[i];
	case FLOW_I32: return ((const int32_t *)p)[i];
	case FLOW_I64: return (double)((const int64_t *)p)[i];
	case FLOW_BOOL: return ((const uint8_t *)p)[i];
	default: return 0.0;
	}
}
