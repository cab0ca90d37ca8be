/*
 * random_ops.c — random ops over Philox (RandomUniform,
 * RandomStandardNormal, TruncatedNormal, RandomUniformInt, RandomShuffle),
 * the Initializer op (Keras initialisers from init.h, incl. glorot and
 * orthogonal) and LoadWeight (a tensor from a safetensors / npy / text
 * weight file, recorded as a weight_load phase).
 *
 * Seeds follow TensorFlow: (seed, seed2) both 0 draws fresh seeds; else the
 * stream is fixed, and each run of the node continues where the last one
 * stopped (a per-node counter offset in flow_ctx_state), so successive
 * session runs draw new numbers, reproducibly for a seed.
 */
#include "ops_common.h"
#include "../init.h"
#include "../random.h"
#include "../weights/weights.h"
#include "phaseprof.h"

#include <stdio.h>
#include <stdlib.h>

static int shape_random(flow_shape_ctx *c)
{
	const flow_shape *sh = flow_shape_input(c, 0);
	int64_t d[FLOW_MAX_DIMS];
	int n = ops_const_ints(flow_shape_input_const(c, 0), d, FLOW_MAX_DIMS);
	flow_shape s = flow_shape_unknown();
	if (n >= 0) {
		for (int i = 0; i < n; i++)
			if (d[i] < 0)
				return flow_shape_error(c, "shape[%d] is negative (%lld)", i, (long long)d[i]);
		s = flow_shape_make(n, d);
	} else if (sh->ndim == 1 && sh->dims[0] >= 0 && sh->dims[0] <= FLOW_MAX_DIMS) {
		s = ops_shape_unknown_rank((int)sh->dims[0]);
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* Output from the shape input; NULL after failing. */
static flow_tensor *random_output(flow_kernel_ctx *k)
{
	int64_t d[FLOW_MAX_DIMS];
	int n = ops_read_ints(k, flow_ctx_input(k, 0), d, FLOW_MAX_DIMS, "shape");
	if (n < 0)
		return NULL;
	for (int i = 0; i < n; i++)
		if (d[i] < 0) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "shape[%d] is negative (%lld)", i, (long long)d[i]);
			return NULL;
		}
	return flow_ctx_output(k, 0, n, d);
}

static void seeds(flow_kernel_ctx *k, uint64_t *s1, uint64_t *s2, uint64_t **offset)
{
	flow_random_resolve_seeds(flow_ctx_attr_int(k, "seed", 0), flow_ctx_attr_int(k, "seed2", 0), s1, s2);
	*offset = flow_ctx_state(k);
}

static int pool_threads(flow_kernel_ctx *k)
{
	flow_threadpool *p = flow_ctx_pool(k);
	return p ? flow_threadpool_size(p) : 1;
}

typedef struct rf_job {
	void *out;
	size_t n;
	uint64_t s1, s2, off;
	flow_dist dist;
	int f64;
} rf_job;

/* Group ranges on the intra-op pool: same numbers however it splits. */
static void rf_range(void *ud, int64_t g0, int64_t g1)
{
	rf_job *j = ud;
	if (j->f64)
		flow_random_fill_part_f64(j->out, j->n, j->s1, j->s2, j->off, j->dist, 0, 1, (size_t)g0, (size_t)g1);
	else
		flow_random_fill_part_f32(j->out, j->n, j->s1, j->s2, j->off, j->dist, 0, 1, (size_t)g0, (size_t)g1);
}

static void random_float(flow_kernel_ctx *k, flow_dist dist)
{
	flow_tensor *y = random_output(k);
	if (!y)
		return;
	uint64_t s1, s2, *off;
	seeds(k, &s1, &s2, &off);
	int f64 = y->dtype == FLOW_F64;
	/* [0,1) for uniform, mean 0 / stddev 1 for the normals */
	rf_job j = {flow_tensor_ptr(y), (size_t)y->nelem, s1, s2, off ? *off : 0, dist, f64};
	size_t groups = flow_random_groups((size_t)y->nelem, f64);
	ops_parallel(k, (int64_t)groups, dist == FLOW_DIST_UNIFORM ? 4096 : 1024, rf_range, &j);
	if (off)
		*off += flow_random_blocks((size_t)y->nelem, f64, dist);
}
static void k_RandomUniform(flow_kernel_ctx *k) { random_float(k, FLOW_DIST_UNIFORM); }
static void k_RandomStandardNormal(flow_kernel_ctx *k) { random_float(k, FLOW_DIST_NORMAL); }
static void k_TruncatedNormal(flow_kernel_ctx *k) { random_float(k, FLOW_DIST_TRUNC_NORMAL); }

static void k_RandomUniformInt(flow_kernel_ctx *k)
{
	flow_tensor *lo = flow_ctx_input(k, 1), *hi = flow_ctx_input(k, 2);
	if (lo->nelem != 1 || hi->nelem != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "minval and maxval must be scalars");
		return;
	}
	int64_t l = (int64_t)flow_tensor_get(lo, 0), h = (int64_t)flow_tensor_get(hi, 0);
	if (lo->dtype == FLOW_I64) {
		l = FLOW_I64P(lo)[0];
		h = FLOW_I64P(hi)[0];
	}
	if (!(l < h)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "need minval < maxval, got %lld >= %lld", (long long)l,
			      (long long)h);
		return;
	}
	flow_tensor *y = random_output(k);
	if (!y)
		return;
	uint64_t s1, s2, *off;
	seeds(k, &s1, &s2, &off);
	uint64_t o = off ? *off : 0;
	if (y->dtype == FLOW_I64)
		flow_random_fill_i64_at(FLOW_I64P(y), (size_t)y->nelem, s1, s2, o, l, h, pool_threads(k));
	else
		flow_random_fill_i32_at(FLOW_I32P(y), (size_t)y->nelem, s1, s2, o, (int32_t)l, (int32_t)h,
					pool_threads(k));
	if (off)
		*off += flow_random_blocks((size_t)y->nelem, y->dtype == FLOW_I64, FLOW_DIST_UNIFORM);
}

/* Fisher-Yates over the first dimension, one Philox block per swap. */
static void k_RandomShuffle(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	flow_tensor *y = flow_ctx_output(k, 0, x->ndim, x->dims);
	if (!y)
		return;
	size_t bytes = (size_t)x->nelem * flow_dtype_size(x->dtype);
	if (bytes)
		memcpy(flow_tensor_ptr(y), flow_tensor_cdata(x), bytes);
	if (x->ndim == 0 || x->dims[0] < 2)
		return;
	int64_t n = x->dims[0];
	size_t row = bytes / (size_t)n;
	char *tmp = malloc(row ? row : 1), *p = flow_tensor_ptr(y);
	if (!tmp) {
		flow_ctx_fail(k, FLOW_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	uint64_t s1, s2, *off;
	seeds(k, &s1, &s2, &off);
	flow_philox ph;
	flow_philox_seed(&ph, s1, s2);
	flow_philox_skip(&ph, off ? *off : 0);
	for (int64_t i = n - 1; i > 0; i--) {
		uint32_t w[4];
		flow_philox_next(&ph, w);
		uint64_t r = (((uint64_t)w[1] << 32) | w[0]) % (uint64_t)(i + 1);
		if ((int64_t)r != i) {
			memcpy(tmp, p + (size_t)i * row, row);
			memcpy(p + (size_t)i * row, p + r * row, row);
			memcpy(p + r * row, tmp, row);
		}
	}
	free(tmp);
	if (off)
		*off += (uint64_t)(n - 1);
}

/* ---- Initializer: a Keras initialiser as an op ---- */
static int shape_initializer(flow_shape_ctx *c)
{
	const flow_attr_value *sh = flow_shape_attr(c, "shape"), *kind = flow_shape_attr(c, "kind");
	if (!kind || flow_init_from_name(kind->u.s) < 0)
		return flow_shape_error(c, "unknown initialiser kind \"%s\"", kind ? kind->u.s : "");
	if (!flow_shape_is_full(&sh->u.shape))
		return flow_shape_error(c, "the initialiser's shape must be fully defined");
	flow_shape_set_output(c, 0, &sh->u.shape);
	return 0;
}

static void k_Initializer(flow_kernel_ctx *k)
{
	const flow_attr_value *sh = flow_ctx_attr(k, "shape");
	const char *kind = flow_ctx_attr_string(k, "kind", "");
	int kk = flow_init_from_name(kind);
	char err[256];
	if (kk < 0) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "unknown initialiser kind \"%s\"", kind);
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, sh->u.shape.ndim, sh->u.shape.dims);
	if (!y)
		return;
	flow_init_spec s = flow_init_default((flow_init_kind)kk, 0);
	uint64_t s1, s2;
	flow_random_resolve_seeds(flow_ctx_attr_int(k, "seed", 0), flow_ctx_attr_int(k, "seed2", 0), &s1, &s2);
	s.seed = s1;
	s.seed2 = s2;
	s.value = flow_ctx_attr_float(k, "value", 0);
	s.minval = flow_ctx_attr_float(k, "minval", -0.05);
	s.maxval = flow_ctx_attr_float(k, "maxval", 0.05);
	s.mean = flow_ctx_attr_float(k, "mean", 0);
	s.stddev = flow_ctx_attr_float(k, "stddev", 0.05);
	s.gain = flow_ctx_attr_float(k, "gain", 1);
	int64_t nt = flow_ctx_attr_int(k, "threads", 0);
	s.nthreads = nt > 0 ? (int)nt : pool_threads(k);
	/* A model names each variable's fill, so start-up can be read per
	 * variable; a bare op stays inside whatever phase runs it. */
	const char *phase = flow_ctx_attr_string(k, "phase", "");
	if (*phase)
		pp_phase_begin(PP_VARIABLE_INIT, phase);
	int rc = y->dtype == FLOW_F64 ? flow_init_fill_f64(&s, y->dims, y->ndim, FLOW_F64P(y), err, sizeof err)
				      : flow_init_fill_f32(&s, y->dims, y->ndim, FLOW_F32P(y), err, sizeof err);
	if (*phase)
		pp_phase_end();
	if (rc)
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", err);
}

/* ---- LoadWeight ---- */
static flow_dtype wd_to_flow(flow_wdtype t)
{
	switch (t) {
	case FLOW_WD_F32: return FLOW_F32;
	case FLOW_WD_F64: return FLOW_F64;
	case FLOW_WD_I32: return FLOW_I32;
	case FLOW_WD_I64: return FLOW_I64;
	case FLOW_WD_BOOL: return FLOW_BOOL;
	default: return FLOW_DT_INVALID;
	}
}

static void release_weights(void *ctx, void *data, size_t n)
{
	(void)data;
	(void)n;
	flow_weights_close(ctx);
}

static void k_LoadWeight(flow_kernel_ctx *k)
{
	const char *path = flow_ctx_attr_string(k, "path", "");
	const char *name = flow_ctx_attr_string(k, "tensor_name", "");
	const flow_attr_value *want = flow_ctx_attr(k, "shape");
	flow_dtype dt = flow_ctx_output_dtype(k, 0);
	char err[512];
	flow_weights *w = flow_weights_open_any(path, err, sizeof err);
	if (!w) {
		flow_ctx_fail(k, FLOW_DATA_LOSS, "%s", err);
		return;
	}
	const flow_weight *t = *name ? flow_weights_find(w, name)
				     : (flow_weights_count(w) == 1 ? flow_weights_at(w, 0) : NULL);
	if (!t) {
		if (*name)
			flow_ctx_fail(k, FLOW_NOT_FOUND, "%s: no tensor named '%s'", path, name);
		else
			flow_ctx_fail(k, FLOW_NOT_FOUND, "%s: the file holds %d tensors; set tensor_name", path,
				      flow_weights_count(w));
		flow_weights_close(w);
		return;
	}
	const flow_shape *ws = want ? &want->u.shape : NULL;
	if (ws && ws->ndim >= 0) {
		int bad = ws->ndim != t->rank;
		for (int d = 0; !bad && d < t->rank; d++)
			bad = ws->dims[d] >= 0 && ws->dims[d] != t->shape[d];
		if (bad) {
			char a[96];
			flow_shape fs = flow_shape_make(t->rank, t->shape);
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s: tensor '%s' has shape %s, the graph expects %s", path,
				      t->name, flow_shape_str(&fs, a, sizeof a),
				      flow_shape_str(ws, err, sizeof err));
			flow_weights_close(w);
			return;
		}
	}
	flow_dtype fdt = wd_to_flow(t->dtype);
	size_t esz = flow_dtype_size(dt);
	if (fdt == dt && ((uintptr_t)t->data % esz) == 0 && t->nbytes) {
		/* zero copy: the tensor keeps the mapping open until its last use */
		flow_status st = {0};
		flow_tensor *y = flow_tensor_wrap(dt, t->rank, t->shape, (void *)t->data, t->nbytes,
						  release_weights, w, &st);
		if (!y) {
			flow_weights_close(w);
			flow_ctx_fail(k, st.code, "%s", st.msg);
			return;
		}
		flow_ctx_set_output(k, 0, y);
		flow_tensor_unref(y);
		return;
	}
	if (fdt != dt && dt != FLOW_F32) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s: tensor '%s' is %s, cannot load it as %s", path, t->name,
			      flow_wdtype_safetensors_name(t->dtype), flow_dtype_name(dt));
		flow_weights_close(w);
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, t->rank, t->shape);
	if (y && t->nbytes) {
		if (fdt == dt)
			memcpy(flow_tensor_ptr(y), t->data, t->nbytes);
		else
			flow_weights_to_f32(t, FLOW_F32P(y));
	}
	flow_weights_close(w);
}

static int shape_load_weight(flow_shape_ctx *c)
{
	const flow_attr_value *s = flow_shape_attr(c, "shape");
	flow_shape u = flow_shape_unknown();
	flow_shape_set_output(c, 0, s ? &s->u.shape : &u);
	return 0;
}

#define RND_ATTRS "; seed: int = 0; seed2: int = 0; T: {i32,i64} = i32"

static const flow_op_def random_ops[] = {
	{.name = "RandomUniform", .inputs = "shape: T", .outputs = "output: dtype",
	 .attrs = "dtype: {f32,f64}" RND_ATTRS, .shape_fn = shape_random, .flags = FLOW_OP_RANDOM},
	{.name = "RandomStandardNormal", .inputs = "shape: T", .outputs = "output: dtype",
	 .attrs = "dtype: {f32,f64}" RND_ATTRS, .shape_fn = shape_random, .flags = FLOW_OP_RANDOM},
	{.name = "TruncatedNormal", .inputs = "shape: T", .outputs = "output: dtype",
	 .attrs = "dtype: {f32,f64}" RND_ATTRS, .shape_fn = shape_random, .flags = FLOW_OP_RANDOM},
	{.name = "RandomUniformInt", .inputs = "shape: T, minval: Tout, maxval: Tout", .outputs = "output: Tout",
	 .attrs = "Tout: {i32,i64}" RND_ATTRS, .shape_fn = shape_random, .flags = FLOW_OP_RANDOM},
	{.name = "RandomShuffle", .inputs = "value: T", .outputs = "output: T",
	 .attrs = "T: {f32,f64,i32,i64,bool}; seed: int = 0; seed2: int = 0",
	 .shape_fn = flow_shape_fn_unchanged, .flags = FLOW_OP_RANDOM},
	{.name = "Initializer", .inputs = "", .outputs = "output: dtype",
	 .attrs = "dtype: {f32,f64} = f32; shape: shape; kind: string; seed: int = 0; seed2: int = 0; "
		  "value: float = 0; minval: float = -0.05; maxval: float = 0.05; mean: float = 0; "
		  "stddev: float = 0.05; gain: float = 1; threads: int = 0; phase: string = \"\"",
	 .shape_fn = shape_initializer, .flags = FLOW_OP_RANDOM,
	 .doc = "Keras initialiser (zeros, ones, constant, random_*, truncated_normal, glorot_*, he_*, lecun_*, "
		"orthogonal); threads 0 = the session's pool; a non-empty phase records the fill as a "
		"variable_init phase of that name"},
	{.name = "LoadWeight", .inputs = "", .outputs = "output: dtype",
	 .attrs = "dtype: {f32,f64,i32,i64,bool}; path: string; tensor_name: string = \"\"; shape: shape",
	 .shape_fn = shape_load_weight, .flags = FLOW_OP_STATEFUL,
	 .doc = "one tensor of a .safetensors/.npy/text weight file (mmap'd, zero copy when aligned)"},
};

static const flow_kernel_def random_kernels[] = {
	K1("RandomUniform", FLOW_F32, k_RandomUniform), K1("RandomUniform", FLOW_F64, k_RandomUniform),
	K1("RandomStandardNormal", FLOW_F32, k_RandomStandardNormal),
	K1("RandomStandardNormal", FLOW_F64, k_RandomStandardNormal),
	K1("TruncatedNormal", FLOW_F32, k_TruncatedNormal), K1("TruncatedNormal", FLOW_F64, k_TruncatedNormal),
	K1("RandomUniformInt", FLOW_I32, k_RandomUniformInt), K1("RandomUniformInt", FLOW_I64, k_RandomUniformInt),
	KANY("RandomShuffle", k_RandomShuffle),
	K1("Initializer", FLOW_F32, k_Initializer), K1("Initializer", FLOW_F64, k_Initializer),
	KANY("LoadWeight", k_LoadWeight),
};

FLOW_OP_LIBRARY(random, random_ops, random_kernels)
