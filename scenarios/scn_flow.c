/* scn_flow.c — small flow helpers the scenario workloads share. */
#include "scn_internal.h"

#include <malloc.h>
#include <stdio.h>

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
