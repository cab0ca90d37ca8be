/* scn_flow.c — small flow helpers the scenario workloads share. */
#include "scn_internal.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int scn_flow_init(scn_env *e, flow_status *st)
{
	return scn_flow_init_opts(e, 0, st);
}

/* op_timing: record every op execution (the report's ops table and the
 * per-op breakdown of a first step); left off where per-op events would
 * weigh on microsecond-scale steps whose growth is the point. */
int scn_flow_init_opts(scn_env *e, int op_timing, flow_status *st)
{
	flow_init_options o = {0};
	o.registration = FLOW_REGISTER_LITE;
	o.op_timing = op_timing;
	if (flow_init(&o, st) != 0)
		return scn_fail(e, "flow_init: %s", flow_status_message(st));
	return 0;
}

void scn_sample_graph(const flow_graph *g)
{
	pp_counter("graph.nodes", (double)flow_graph_num_ops(g));
}

/* A plain-malloc allocator gets memory from the system when libc's heap
 * grows: count the samples at which mallinfo2's arena + mmapped bytes rose
 * (the diagnostics' convention for alloc.sys_count without a BFC). */
static uint64_t malloc_heap_growths(void)
{
	static size_t last;
	static uint64_t growths;
	struct mallinfo2 mi = mallinfo2();
	size_t heap = mi.arena + mi.hblkhd;
	if (heap > last) {
		if (last)
			growths++;
		last = heap;
	} else if (heap < last) {
		last = heap; /* trimmed: growing back counts again */
	}
	return growths;
}

void scn_sample_alloc(flow_allocator *a, int kind)
{
	flow_allocator_stats s;
	flow_allocator_stats_get(a, &s);
	pp_counter("alloc.count", (double)s.num_allocs);
	pp_counter("alloc.sys_count",
		   (double)(kind == FLOW_ALLOC_MALLOC ? malloc_heap_growths() : s.num_regions));
	pp_counter("alloc.bytes_in_use", (double)s.bytes_in_use);
	pp_counter("alloc.time_ns", (double)s.alloc_ns);
	pp_counter("alloc.fragmentation", s.fragmentation);
	pp_counter("alloc.bytes_reserved", (double)s.bytes_reserved);
}

flow_tensor *scn_tensor_uniform(int ndim, const int64_t *dims, uint64_t seed, flow_status *st)
{
	flow_tensor *t = flow_tensor_new(FLOW_F32, ndim, dims, st);
	if (!t)
		return NULL;
	float *p = flow_tensor_data(t);
	int64_t n = flow_tensor_nelem(t);
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
	for (int64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
	}
	return t;
}

flow_output scn_binary(flow_graph *g, const char *type, const char *name, flow_output a,
		       flow_output b, flow_status *st)
{
	flow_output in[2] = {a, b};
	return flow_simple(g, type, name, in, 2, st);
}

flow_output scn_matmul(flow_graph *g, const char *name, flow_output a, flow_output b,
		       flow_status *st)
{
	return scn_binary(g, "MatMul", name, a, b, st);
}

flow_output scn_random_normal(flow_graph *g, const char *name, int ndim, const int64_t *dims,
			      float stddev, int64_t seed, flow_status *st)
{
	flow_output none = {NULL, 0};
	int64_t nd = ndim;
	int32_t sh[FLOW_MAX_DIMS];
	for (int i = 0; i < ndim; i++)
		sh[i] = (int32_t)dims[i];
	flow_tensor *shape = flow_tensor_from_data(FLOW_I32, 1, &nd, sh, st);
	if (!shape)
		return none;
	char n1[128], n2[128];
	snprintf(n1, sizeof n1, "%s/shape", name);
	snprintf(n2, sizeof n2, "%s/stddev", name);
	flow_output shp = flow_const(g, n1, shape, st);
	flow_tensor_unref(shape);
	if (!shp.op)
		return none;
	flow_op_desc *d = flow_op_new(g, "RandomStandardNormal", name);
	flow_op_add_input(d, shp);
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_int(d, "seed", seed);
	flow_op_set_attr_int(d, "seed2", seed + 1);
	flow_op *r = flow_op_finish(d, st);
	if (!r)
		return none;
	flow_output sd = flow_const_f32(g, n2, stddev, st);
	if (!sd.op)
		return none;
	snprintf(n1, sizeof n1, "%s/scaled", name);
	return scn_binary(g, "Mul", n1, flow_out(r, 0), sd, st);
}

flow_output scn_zeros(flow_graph *g, const char *name, int ndim, const int64_t *dims,
		      flow_status *st)
{
	flow_output none = {NULL, 0};
	flow_tensor *z = flow_tensor_new(FLOW_F32, ndim, dims, st);
	if (!z)
		return none;
	flow_output o = flow_const(g, name, z, st);
	flow_tensor_unref(z);
	return o;
}

/* ---- weight files the variants load (written once by a scenario's
 * prepare step, outside every measured process) ---- */

int scn_write_safetensors(const char *path, const scn_wtensor *t, int n, char *err, size_t errlen)
{
	/* header: {"name":{"dtype":"F32","shape":[..],"data_offsets":[b,e]},...}
	 * space-padded so the data starts 8-byte aligned, as the spec's writer */
	size_t cap = 256, len = 0;
	for (int i = 0; i < n; i++)
		cap += strlen(t[i].name) + 160; /* dtype, two dims, two offsets */
	char *h = malloc(cap);
	if (!h) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	uint64_t off = 0;
	len += (size_t)snprintf(h + len, cap - len, "{");
	for (int i = 0; i < n; i++) {
		uint64_t bytes = 4;
		for (int d = 0; d < t[i].rank; d++)
			bytes *= (uint64_t)t[i].shape[d];
		len += (size_t)snprintf(h + len, cap - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[",
					i ? "," : "", t[i].name);
		for (int d = 0; d < t[i].rank; d++)
			len += (size_t)snprintf(h + len, cap - len, "%s%lld", d ? "," : "",
						(long long)t[i].shape[d]);
		len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%llu,%llu]}",
					(unsigned long long)off, (unsigned long long)(off + bytes));
		off += bytes;
	}
	len += (size_t)snprintf(h + len, cap - len, "}");
	while ((8 + len) % 8)
		h[len++] = ' ';
	FILE *f = fopen(path, "wb");
	if (!f) {
		free(h);
		snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
		return -1;
	}
	uint8_t n8[8];
	for (int i = 0; i < 8; i++)
		n8[i] = (uint8_t)((uint64_t)len >> (8 * i));
	int ok = fwrite(n8, 1, 8, f) == 8 && fwrite(h, 1, len, f) == len;
	for (int i = 0; ok && i < n; i++) {
		size_t cnt = 1;
		for (int d = 0; d < t[i].rank; d++)
			cnt *= (size_t)t[i].shape[d];
		ok = fwrite(t[i].data, sizeof(float), cnt, f) == cnt;
	}
	ok = fclose(f) == 0 && ok;
	free(h);
	if (!ok) {
		snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int scn_write_text(const char *path, const scn_wtensor *t, int n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
		return -1;
	}
	int ok = fprintf(f, "flowtxt 1\n") > 0;
	for (int i = 0; ok && i < n; i++) {
		size_t cnt = 1;
		fprintf(f, "tensor %s F32 %d", t[i].name, t[i].rank);
		for (int d = 0; d < t[i].rank; d++) {
			fprintf(f, " %lld", (long long)t[i].shape[d]);
			cnt *= (size_t)t[i].shape[d];
		}
		fputc('\n', f);
		for (size_t k = 0; ok && k < cnt; k++)
			ok = fprintf(f, "%.9g\n", (double)t[i].data[k]) > 0;
	}
	ok = fclose(f) == 0 && ok;
	if (!ok) {
		snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

float *scn_weights_data(int rank, const int64_t *shape, uint64_t seed)
{
	size_t cnt = 1;
	for (int d = 0; d < rank; d++)
		cnt *= (size_t)shape[d];
	float *p = malloc((cnt ? cnt : 1) * sizeof *p);
	if (!p)
		return NULL;
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 12345;
	for (size_t i = 0; i < cnt; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (float)(((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0) * 0.05);
	}
	return p;
}

flow_output scn_load_weight(flow_graph *g, const char *name, const char *path, const char *tensor,
			    int rank, const int64_t *shape, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "LoadWeight", name);
	flow_shape sh = flow_shape_make(rank, shape);
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_string(d, "path", path);
	flow_op_set_attr_string(d, "tensor_name", tensor);
	flow_op_set_attr_shape(d, "shape", &sh);
	flow_op *op = flow_op_finish(d, st);
	return op ? flow_out(op, 0) : (flow_output){NULL, 0};
}

flow_output scn_initializer(flow_graph *g, const char *name, const char *kind, int rank,
			    const int64_t *shape, int64_t seed, flow_status *st)
{
	flow_op_desc *d = flow_op_new(g, "Initializer", name);
	flow_shape sh = flow_shape_make(rank, shape);
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_shape(d, "shape", &sh);
	flow_op_set_attr_string(d, "kind", kind);
	flow_op_set_attr_int(d, "seed", seed);
	flow_op_set_attr_int(d, "seed2", seed + 7);
	flow_op *op = flow_op_finish(d, st);
	return op ? flow_out(op, 0) : (flow_output){NULL, 0};
}

flow_output scn_restored_variable(flow_graph *g, const char *name, const char *path,
				  const char *tensor, int rank, const int64_t *shape, flow_op **assign,
				  flow_status *st)
{
	flow_output none = {NULL, 0};
	char n[160];
	flow_shape sh = flow_shape_make(rank, shape);
	flow_output v = flow_variable_uninit(g, name, FLOW_F32, &sh, st);
	snprintf(n, sizeof n, "%s/load", name);
	flow_output w = v.op ? scn_load_weight(g, n, path, tensor, rank, shape, st) : v;
	snprintf(n, sizeof n, "%s/restore", name);
	flow_output a = w.op ? flow_assign(g, n, v, w, st) : w;
	if (!a.op)
		return none;
	*assign = a.op;
	return v;
}
