/*
 * attrs.c — attr lists (copy, free, lookup) and the canonical byte form used
 * for hashing graphs, CSE equality and plan files.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void flow__attr_value_free(flow_attr_value *v)
{
	switch (v->kind) {
	case FLOW_ATTR_STRING: free(v->u.s); break;
	case FLOW_ATTR_INTS: free(v->u.ints.v); break;
	case FLOW_ATTR_FLOATS: free(v->u.floats.v); break;
	case FLOW_ATTR_TENSOR: flow_tensor_unref(v->u.tensor); break;
	default: break;
	}
	memset(v, 0, sizeof *v);
}

int flow__attr_value_copy(flow_attr_value *dst, const flow_attr_value *src)
{
	*dst = *src;
	switch (src->kind) {
	case FLOW_ATTR_STRING:
		dst->u.s = strdup(src->u.s ? src->u.s : "");
		return dst->u.s ? 0 : -1;
	case FLOW_ATTR_INTS:
		dst->u.ints.v = malloc(sizeof(int64_t) * (size_t)(src->u.ints.n + 1));
		if (!dst->u.ints.v)
			return -1;
		if (src->u.ints.n)
			memcpy(dst->u.ints.v, src->u.ints.v, sizeof(int64_t) * (size_t)src->u.ints.n);
		return 0;
	case FLOW_ATTR_FLOATS:
		dst->u.floats.v = malloc(sizeof(double) * (size_t)(src->u.floats.n + 1));
		if (!dst->u.floats.v)
			return -1;
		if (src->u.floats.n)
			memcpy(dst->u.floats.v, src->u.floats.v, sizeof(double) * (size_t)src->u.floats.n);
		return 0;
	case FLOW_ATTR_TENSOR:
		flow_tensor_ref(src->u.tensor);
		return 0;
	default:
		return 0;
	}
}

const flow_attr_value *flow_attrs_find(const flow_attr_list *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->a[i].name, name))
			return &l->a[i].value;
	return NULL;
}

flow_attr_value *flow__attrs_set(flow_attr_list *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->a[i].name, name)) {
			flow__attr_value_free(&l->a[i].value);
			return &l->a[i].value;
		}
	if (l->n == l->cap) {
		int nc = l->cap ? l->cap * 2 : 4;
		flow_attr *na = realloc(l->a, (size_t)nc * sizeof *na);
		if (!na)
			return NULL;
		l->a = na;
		l->cap = nc;
	}
	flow_attr *a = &l->a[l->n];
	a->name = strdup(name);
	if (!a->name)
		return NULL;
	memset(&a->value, 0, sizeof a->value);
	l->n++;
	return &a->value;
}

void flow__attrs_free(flow_attr_list *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->a[i].name);
		flow__attr_value_free(&l->a[i].value);
	}
	free(l->a);
	memset(l, 0, sizeof *l);
}

int flow__attrs_copy(flow_attr_list *dst, const flow_attr_list *src)
{
	memset(dst, 0, sizeof *dst);
	for (int i = 0; i < src->n; i++) {
		flow_attr_value *v = flow__attrs_set(dst, src->a[i].name);
		if (!v || flow__attr_value_copy(v, &src->a[i].value))
			return -1;
	}
	return 0;
}

/* ---- byte buffers ---- */
void flow__buf_put(flow_buf *b, const void *p, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		size_t nc = b->cap ? b->cap : 256;
		while (nc < b->n + n)
			nc *= 2;
		unsigned char *np = realloc(b->p, nc);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

void flow__buf_u32(flow_buf *b, uint32_t v) { flow__buf_put(b, &v, 4); }
void flow__buf_u64(flow_buf *b, uint64_t v) { flow__buf_put(b, &v, 8); }
void flow__buf_str(flow_buf *b, const char *s)
{
	uint32_t n = s ? (uint32_t)strlen(s) : 0;
	flow__buf_u32(b, n);
	flow__buf_put(b, s, n);
}

void flow__tensor_serialize(const flow_tensor *t, flow_buf *b)
{
	flow__buf_u32(b, (uint32_t)t->dtype);
	flow__buf_u32(b, (uint32_t)t->ndim);
	for (int i = 0; i < t->ndim; i++)
		flow__buf_u64(b, (uint64_t)t->dims[i]);
	flow__buf_put(b, flow_tensor_cdata(t), flow_tensor_nbytes(t));
}

static int cmp_attr(const void *a, const void *b)
{
	return strcmp((*(const flow_attr *const *)a)->name, (*(const flow_attr *const *)b)->name);
}

void flow__attrs_serialize(const flow_attr_list *l, flow_buf *b)
{
	const flow_attr *sorted[64];
	const flow_attr **s = l->n <= 64 ? sorted : malloc(sizeof *s * (size_t)l->n);
	if (!s) {
		b->oom = 1;
		return;
	}
	for (int i = 0; i < l->n; i++)
		s[i] = &l->a[i];
	qsort(s, (size_t)l->n, sizeof *s, cmp_attr);
	flow__buf_u32(b, (uint32_t)l->n);
	for (int i = 0; i < l->n; i++) {
		const flow_attr_value *v = &s[i]->value;
		flow__buf_str(b, s[i]->name);
		flow__buf_u32(b, (uint32_t)v->kind);
		switch (v->kind) {
		case FLOW_ATTR_INT: flow__buf_u64(b, (uint64_t)v->u.i); break;
		case FLOW_ATTR_FLOAT: flow__buf_put(b, &v->u.f, 8); break;
		case FLOW_ATTR_BOOL: flow__buf_u32(b, (uint32_t)!!v->u.b); break;
		case FLOW_ATTR_TYPE: flow__buf_u32(b, (uint32_t)v->u.type); break;
		case FLOW_ATTR_SHAPE:
			flow__buf_u32(b, (uint32_t)v->u.shape.ndim);
			for (int k = 0; k < v->u.shape.ndim; k++)
				flow__buf_u64(b, (uint64_t)v->u.shape.dims[k]);
			break;
		case FLOW_ATTR_STRING: flow__buf_str(b, v->u.s); break;
		case FLOW_ATTR_INTS:
			flow__buf_u32(b, (uint32_t)v->u.ints.n);
			flow__buf_put(b, v->u.ints.v, sizeof(int64_t) * (size_t)v->u.ints.n);
			break;
		case FLOW_ATTR_FLOATS:
			flow__buf_u32(b, (uint32_t)v->u.floats.n);
			flow__buf_put(b, v->u.floats.v, sizeof(double) * (size_t)v->u.floats.n);
			break;
		case FLOW_ATTR_TENSOR: flow__tensor_serialize(v->u.tensor, b); break;
		default: break;
		}
	}
	if (s != sorted)
		free(s);
}

const void *flow__rd_bytes(flow_rd *r, size_t n)
{
	if (r->bad || n > r->n - r->off) {
		r->bad = 1;
		return NULL;
	}
	const void *p = r->p + r->off;
	r->off += n;
	return p;
}

uint32_t flow__rd_u32(flow_rd *r)
{
	uint32_t v = 0;
	const void *p = flow__rd_bytes(r, 4);
	if (p)
		memcpy(&v, p, 4);
	return v;
}

uint64_t flow__rd_u64(flow_rd *r)
{
	uint64_t v = 0;
	const void *p = flow__rd_bytes(r, 8);
	if (p)
		memcpy(&v, p, 8);
	return v;
}

char *flow__rd_str(flow_rd *r)
{
	uint32_t n = flow__rd_u32(r);
	const char *p = flow__rd_bytes(r, n);
	if (!p)
		return NULL;
	char *s = malloc(n + 1);
	if (!s) {
		r->bad = 1;
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

flow_tensor *flow__tensor_deserialize(flow_rd *r)
{
	flow_dtype dt = (flow_dtype)flow__rd_u32(r);
	uint32_t nd = flow__rd_u32(r);
	int64_t dims[FLOW_MAX_DIMS];
	if (r->bad || nd > FLOW_MAX_DIMS || !flow_dtype_size(dt)) {
		r->bad = 1;
		return NULL;
	}
	for (uint32_t i = 0; i < nd; i++)
		dims[i] = (int64_t)flow__rd_u64(r);
	int64_t n;
	if (r->bad || flow_dims_check((int)nd, dims, &n, NULL) ||
	    (uint64_t)n * flow_dtype_size(dt) > r->n - r->off) {
		r->bad = 1;
		return NULL;
	}
	const void *p = flow__rd_bytes(r, (size_t)n * flow_dtype_size(dt));
	return p ? flow_tensor_from_data(dt, (int)nd, dims, p, NULL) : NULL;
}

int flow__attrs_deserialize(flow_attr_list *l, flow_rd *r)
{
	memset(l, 0, sizeof *l);
	uint32_t n = flow__rd_u32(r);
	if (n > 4096)
		r->bad = 1;
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		char *name = flow__rd_str(r);
		if (!name)
			break;
		flow_attr_value *v = flow__attrs_set(l, name);
		free(name);
		if (!v) {
			r->bad = 1;
			break;
		}
		v->kind = (flow_attr_kind)flow__rd_u32(r);
		switch (v->kind) {
		case FLOW_ATTR_INT: v->u.i = (int64_t)flow__rd_u64(r); break;
		case FLOW_ATTR_FLOAT: {
			uint64_t b = flow__rd_u64(r);
			memcpy(&v->u.f, &b, 8);
			break;
		}
		case FLOW_ATTR_BOOL: v->u.b = (int)flow__rd_u32(r); break;
		case FLOW_ATTR_TYPE: v->u.type = (flow_dtype)flow__rd_u32(r); break;
		case FLOW_ATTR_SHAPE: {
			uint32_t nd = flow__rd_u32(r);
			if (nd > FLOW_MAX_DIMS && nd != (uint32_t)-1) {
				r->bad = 1;
				break;
			}
			v->u.shape.ndim = (int)nd;
			for (int k = 0; k < v->u.shape.ndim; k++)
				v->u.shape.dims[k] = (int64_t)flow__rd_u64(r);
			break;
		}
		case FLOW_ATTR_STRING: v->u.s = flow__rd_str(r); break;
		case FLOW_ATTR_INTS: {
			uint32_t k = flow__rd_u32(r);
			const void *p = flow__rd_bytes(r, (size_t)k * 8);
			v->u.ints.v = malloc((size_t)k * 8 + 8);
			if (!p || !v->u.ints.v) {
				r->bad = 1;
				break;
			}
			v->u.ints.n = (int)k;
			memcpy(v->u.ints.v, p, (size_t)k * 8);
			break;
		}
		case FLOW_ATTR_FLOATS: {
			uint32_t k = flow__rd_u32(r);
			const void *p = flow__rd_bytes(r, (size_t)k * 8);
			v->u.floats.v = malloc((size_t)k * 8 + 8);
			if (!p || !v->u.floats.v) {
				r->bad = 1;
				break;
			}
			v->u.floats.n = (int)k;
			memcpy(v->u.floats.v, p, (size_t)k * 8);
			break;
		}
		case FLOW_ATTR_TENSOR:
			v->u.tensor = flow__tensor_deserialize(r);
			if (!v->u.tensor)
				r->bad = 1;
			break;
		default:
			r->bad = 1;
			break;
		}
	}
	return r->bad ? -1 : 0;
}

void flow__attrs_str(const flow_attr_list *l, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < l->n && o < len; i++) {
		const flow_attr_value *v = &l->a[i].value;
		char val[96];
		char sb[64];
		switch (v->kind) {
		case FLOW_ATTR_INT: snprintf(val, sizeof val, "%lld", (long long)v->u.i); break;
		case FLOW_ATTR_FLOAT: snprintf(val, sizeof val, "%g", v->u.f); break;
		case FLOW_ATTR_BOOL: snprintf(val, sizeof val, "%s", v->u.b ? "true" : "false"); break;
		case FLOW_ATTR_TYPE: snprintf(val, sizeof val, "%s", flow_dtype_name(v->u.type)); break;
		case FLOW_ATTR_SHAPE: snprintf(val, sizeof val, "[%s]", flow_shape_str(&v->u.shape, sb, sizeof sb)); break;
		case FLOW_ATTR_STRING: snprintf(val, sizeof val, "\"%.60s\"", v->u.s ? v->u.s : ""); break;
		case FLOW_ATTR_INTS: snprintf(val, sizeof val, "<%d ints>", v->u.ints.n); break;
		case FLOW_ATTR_FLOATS: snprintf(val, sizeof val, "<%d floats>", v->u.floats.n); break;
		case FLOW_ATTR_TENSOR: {
			flow_shape s = flow_tensor_shape(v->u.tensor);
			if (v->u.tensor->nelem == 1)
				snprintf(val, sizeof val, "%s %g", flow_dtype_name(v->u.tensor->dtype),
					 flow_tensor_get(v->u.tensor, 0));
			else
				snprintf(val, sizeof val, "%s[%s]", flow_dtype_name(v->u.tensor->dtype),
					 flow_shape_str(&s, sb, sizeof sb));
			break;
		}
		default: snprintf(val, sizeof val, "?"); break;
		}
		int w = snprintf(buf + o, len - o, "%s%s=%s", i ? ", " : "", l->a[i].name, val);
		if (w < 0)
			break;
		o += (size_t)w;
	}
}
