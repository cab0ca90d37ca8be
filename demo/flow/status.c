/*
 * status.c — flow_status, dtypes, shapes and small shared helpers.
 */
#include "flow_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

flow_status *flow_status_new(void)
{
	return calloc(1, sizeof(flow_status));
}

void flow_status_free(flow_status *st)
{
	free(st);
}

flow_code flow_status_code(const flow_status *st)
{
	return st ? st->code : FLOW_OK;
}

const char *flow_status_message(const flow_status *st)
{
	return st ? st->msg : "";
}

int flow_status_ok(const flow_status *st)
{
	return !st || st->code == FLOW_OK;
}

void flow_status_clear(flow_status *st)
{
	if (st) {
		st->code = FLOW_OK;
		st->msg[0] = 0;
	}
}

void flow_status_set(flow_status *st, flow_code code, const char *fmt, ...)
{
	/* The first error is the cause; later ones are consequences. */
	if (!st || st->code != FLOW_OK)
		return;
	st->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->msg, sizeof st->msg, fmt, ap);
	va_end(ap);
}

const char *flow_code_name(flow_code code)
{
	static const char *const names[] = {
		"OK", "INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS",
		"FAILED_PRECONDITION", "OUT_OF_RANGE", "UNIMPLEMENTED",
		"RESOURCE_EXHAUSTED", "DATA_LOSS", "INTERNAL"};
	if ((unsigned)code < sizeof names / sizeof names[0])
		return names[code];
	return "UNKNOWN";
}

static const char *const dt_names[FLOW_DT_COUNT] = {"invalid", "f32", "f64", "i32", "i64", "bool"};
static const size_t dt_sizes[FLOW_DT_COUNT] = {0, 4, 8, 4, 8, 1};

const char *flow_dtype_name(flow_dtype dt)
{
	return (unsigned)dt < FLOW_DT_COUNT ? dt_names[dt] : "invalid";
}

size_t flow_dtype_size(flow_dtype dt)
{
	return (unsigned)dt < FLOW_DT_COUNT ? dt_sizes[dt] : 0;
}

flow_dtype flow_dtype_from_name(const char *name)
{
	static const struct { const char *n; flow_dtype dt; } alias[] = {
		{"f32", FLOW_F32}, {"float32", FLOW_F32}, {"float", FLOW_F32},
		{"f64", FLOW_F64}, {"float64", FLOW_F64}, {"double", FLOW_F64},
		{"i32", FLOW_I32}, {"int32", FLOW_I32}, {"i64", FLOW_I64},
		{"int64", FLOW_I64}, {"bool", FLOW_BOOL}};
	if (!name)
		return FLOW_DT_INVALID;
	for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
		if (!strcmp(alias[i].n, name))
			return alias[i].dt;
	return FLOW_DT_INVALID;
}

flow_shape flow_shape_make(int ndim, const int64_t *dims)
{
	flow_shape s;
	memset(&s, 0, sizeof s);
	if (ndim < 0 || ndim > FLOW_MAX_DIMS) {
		s.ndim = -1;
		return s;
	}
	s.ndim = ndim;
	for (int i = 0; i < ndim; i++)
		s.dims[i] = dims ? dims[i] : -1;
	return s;
}

flow_shape flow_shape_unknown(void)
{
	flow_shape s;
	memset(&s, 0, sizeof s);
	s.ndim = -1;
	return s;
}

int flow_shape_is_full(const flow_shape *s)
{
	if (s->ndim < 0)
		return 0;
	for (int i = 0; i < s->ndim; i++)
		if (s->dims[i] < 0)
			return 0;
	return 1;
}

int64_t flow_shape_nelem(const flow_shape *s)
{
	if (!flow_shape_is_full(s))
		return -1;
	int64_t n = 1;
	for (int i = 0; i < s->ndim; i++)
		n *= s->dims[i];
	return n;
}

char *flow_shape_str(const flow_shape *s, char *buf, size_t len)
{
	if (!len)
		return buf;
	if (s->ndim < 0) {
		snprintf(buf, len, "<unknown>");
		return buf;
	}
	if (s->ndim == 0) {
		snprintf(buf, len, "scalar");
		return buf;
	}
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < s->ndim && o < len; i++) {
		int w;
		if (s->dims[i] < 0)
			w = snprintf(buf + o, len - o, "%s?", i ? "x" : "");
		else
			w = snprintf(buf + o, len - o, "%s%lld", i ? "x" : "", (long long)s->dims[i]);
		if (w < 0)
			break;
		o += (size_t)w;
	}
	return buf;
}

/* A content digest, not a table hash (in-memory tables use pp_hash): the
 * graph fingerprint, plan file names and plan checksums, so deterministic
 * across processes. Eight bytes per step (graph hashes cover weight-sized
 * constants), then a murmur-style finaliser. */
uint64_t flow_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *c = p;
	uint64_t h = (seed ? seed : 0x9E3779B97F4A7C15ull) ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, c, 8);
		h ^= w * 0x87c37b91114253d5ull;
		h = ((h << 31) | (h >> 33)) * 0x4cf5ad432745937full;
		c += 8;
		n -= 8;
	}
	uint64_t w = 0;
	if (n)
		memcpy(&w, c, n);
	h ^= w * 0x87c37b91114253d5ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

int flow_threads_default(void)
{
	const char *e = getenv("FLOW_THREADS");
	if (e && atoi(e) > 0)
		return atoi(e);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}
