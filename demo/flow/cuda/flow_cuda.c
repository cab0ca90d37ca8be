/* flow's CUDA backend (see flow_cuda.h). The driver is probed with
 * record/gpu before the CUDA runtime is touched, so "no GPU" comes back as
 * the probe's plain sentence instead of cudaErrorInsufficientDriver. Every
 * copy is a data_transfer phase; while the collector runs, its phase hook
 * pushes a CUPTI external correlation id for every phase, so the copies and
 * kernels CUPTI sees join to the phase that caused them. */
#include "flow_cuda.h"
#include "flow_internal.h"
#include "kernels.h"
#include "phaseprof.h"
#include "ppgpu.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct flow_cuda {
	int ordinal;
	char name[256];             /* cudaDeviceProp.name is 256 */
	cudaStream_t stream;
	cublasHandle_t blas;
	flow_allocator *bfc;      /* the runtime's BFC over cudaMalloc regions */
	int started_collector;
	atomic_uint_fast64_t h2d_bytes, d2h_bytes, h2d_copies, d2h_copies, kernels, gemms;
	atomic_uint_fast64_t allocs, in_use, peak;
};

static int cuda_fail(flow_status *st, const char *what, cudaError_t e)
{
	flow_status_set(st, FLOW_INTERNAL, "cuda: %s: %s (%s)", what, cudaGetErrorString(e),
			cudaGetErrorName(e));
	return -1;
}

static const char *cublas_name(cublasStatus_t s)
{
	switch (s) {
	case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
	case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
	case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
	case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
	case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
	case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
	case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
	default: return "cuBLAS error";
	}
}

/* ---- cuBLAS, loaded when a device is opened ----
 * Linking libcublas (and the libcublasLt it pulls in) would make every
 * program that links flow_cuda map ~600 MB of libraries at start-up: phaseprof
 * itself went from 5 ms to ~95 ms and 220 MB RSS per invocation, on machines
 * without a GPU too. So it is dlopen'ed on the first flow_cuda_open that
 * passed the driver probe. */
static struct {
	__typeof__(cublasCreate_v2) *create;
	__typeof__(cublasDestroy_v2) *destroy;
	__typeof__(cublasSetStream_v2) *set_stream;
	__typeof__(cublasSgemm_v2) *sgemm;
	char error[384];
	int ok;
} blas;
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_load(void)
{
	char name[64], path[512];
	snprintf(name, sizeof name, "libcublas.so.%d", CUBLAS_VER_MAJOR);
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
#ifdef FLOW_CUBLAS_LIBDIR
	if (!lib) {
		snprintf(path, sizeof path, "%s/%s", FLOW_CUBLAS_LIBDIR, name);
		lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	}
#else
	(void)path;
#endif
	if (!lib) {
		const char *e = dlerror();
		snprintf(blas.error, sizeof blas.error, "cannot load %s (%s)", name, e ? e : "not found");
		return;
	}
	blas.create = (__typeof__(blas.create))dlsym(lib, "cublasCreate_v2");
	blas.destroy = (__typeof__(blas.destroy))dlsym(lib, "cublasDestroy_v2");
	blas.set_stream = (__typeof__(blas.set_stream))dlsym(lib, "cublasSetStream_v2");
	blas.sgemm = (__typeof__(blas.sgemm))dlsym(lib, "cublasSgemm_v2");
	blas.ok = blas.create && blas.destroy && blas.set_stream && blas.sgemm;
	if (!blas.ok)
		snprintf(blas.error, sizeof blas.error, "%s lacks cublasCreate_v2/cublasSgemm_v2", name);
	/* kept loaded: handles may outlive any one device */
}

/* ---- device memory ---- */

/* The runtime's BFC obtains its regions here; its metadata stays on the host. */
static void *region_alloc(void *ctx, size_t bytes)
{
	(void)ctx;
	void *p = NULL;
	return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

static void region_free(void *ctx, void *base, size_t bytes)
{
	(void)ctx, (void)bytes;
	cudaFree(base);
}

typedef struct dev_block {
	flow_cuda *g;
	size_t bytes;
} dev_block;

static void dev_release(void *ctx, void *data, size_t nbytes)
{
	dev_block *b = ctx;
	(void)nbytes;
	flow_allocator_release(b->g->bfc, data);
	atomic_fetch_sub(&b->g->in_use, b->bytes);
	free(b);
}

flow_tensor *flow_cuda_empty(flow_cuda *g, int ndim, const int64_t *dims, flow_status *st)
{
	int64_t n;
	if (flow_dims_check(ndim, dims, &n, st) != 0)
		return NULL;
	size_t bytes = (size_t)n * sizeof(float);
	size_t want = bytes ? bytes : 4; /* a valid pointer even for empty tensors */
	dev_block *b = malloc(sizeof *b);
	if (!b) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "cuda: out of host memory");
		return NULL;
	}
	b->g = g;
	b->bytes = want;
	void *p = flow_allocator_alloc(g->bfc, want);
	if (!p) {
		free(b);
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED,
				"cuda: device memory exhausted: the BFC could not place %zu bytes (%s)", want,
				"cudaMalloc of a new region failed");
		return NULL;
	}
	flow_tensor *t = flow_tensor_wrap(FLOW_F32, ndim, dims, p, want, dev_release, b, st);
	if (!t) {
		dev_release(b, p, want);
		return NULL;
	}
	atomic_fetch_add(&g->allocs, 1);
	uint64_t now = atomic_fetch_add(&g->in_use, want) + want;
	uint64_t pk = atomic_load(&g->peak);
	while (now > pk && !atomic_compare_exchange_weak(&g->peak, &pk, now))
		;
	return t;
}

/* ---- device ---- */

flow_cuda *flow_cuda_open(int ordinal, flow_status *st)
{
	PP_PHASE(PP_DEVICE_INIT, "cuda_device_init");
	ppgpu_probe_result pr;
	if (ppgpu_probe_driver(NULL, &pr) != PPGPU_OK) {
		/* the run's gpu_status row says why the GPU timeline is empty (once) */
		static atomic_int status_written;
		if (pp_is_open() && !atomic_exchange(&status_written, 1))
			ppgpu_record_status(&pr, 0, 0);
		pp_meta("flow.device", "cpu");
		pp_mark("gpu_unavailable_cpu_fallback");
		flow_status_set(st, FLOW_UNIMPLEMENTED, "GPU unavailable, running on the CPU: %s", pr.reason);
		return NULL;
	}
	if (ordinal < 0 || ordinal >= pr.device_count) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "cuda: device %d requested, %d present", ordinal,
				pr.device_count);
		return NULL;
	}
	flow_cuda *g = calloc(1, sizeof *g);
	if (!g) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "cuda: out of host memory");
		return NULL;
	}
	g->ordinal = ordinal;
	/* CUPTI must be attached before the context exists to see everything. */
	if (pp_is_open() && !ppgpu_active())
		g->started_collector = ppgpu_start(NULL) == 0;
	cudaError_t e = cudaSetDevice(ordinal);
	if (e != cudaSuccess) {
		/* The probe passed but the runtime can't use the device: still a
		 * CPU fallback, with the runtime's own words. */
		flow_status_set(st, FLOW_UNIMPLEMENTED, "GPU unavailable, running on the CPU: cudaSetDevice(%d): %s",
				ordinal, cudaGetErrorString(e));
		goto fail;
	}
	struct cudaDeviceProp prop;
	if (cudaGetDeviceProperties(&prop, ordinal) == cudaSuccess)
		snprintf(g->name, sizeof g->name, "%s", prop.name);
	if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess) {
		cuda_fail(st, "cudaStreamCreate", e);
		goto fail;
	}
	pthread_once(&blas_once, blas_load);
	if (!blas.ok) {
		flow_status_set(st, FLOW_UNIMPLEMENTED, "GPU unavailable, running on the CPU: cuBLAS: %s",
				blas.error);
		goto fail;
	}
	cublasStatus_t bs = blas.create(&g->blas);
	if (bs != CUBLAS_STATUS_SUCCESS) {
		flow_status_set(st, FLOW_INTERNAL, "cuda: cublasCreate: %s", cublas_name(bs));
		goto fail;
	}
	blas.set_stream(g->blas, g->stream);
	flow_allocator_options ao = {.kind = FLOW_ALLOC_BFC, .name = "cuda_bfc",
				     .region_alloc = region_alloc, .region_free = region_free};
	g->bfc = flow_allocator_new(&ao, st);
	if (!g->bfc)
		goto fail;
	pp_meta("flow.device", g->name[0] ? g->name : "cuda");
	return g;
fail:
	flow_cuda_close(g);
	return NULL;
}

void flow_cuda_close(flow_cuda *g)
{
	if (!g)
		return;
	if (g->stream)
		cudaStreamSynchronize(g->stream);
	if (g->bfc) {
		flow_allocator_record(g->bfc);
		flow_allocator_free(g->bfc);
	}
	if (g->blas)
		blas.destroy(g->blas);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	if (g->started_collector)
		ppgpu_stop();
	free(g);
}

const char *flow_cuda_device_name(const flow_cuda *g)
{
	return g->name;
}

int flow_cuda_uses_bfc(const flow_cuda *g)
{
	return g->bfc != NULL;
}

void flow_cuda_stats_get(const flow_cuda *g, flow_cuda_stats *o)
{
	flow_cuda *m = (flow_cuda *)g;
	o->h2d_bytes = atomic_load(&m->h2d_bytes);
	o->d2h_bytes = atomic_load(&m->d2h_bytes);
	o->h2d_copies = atomic_load(&m->h2d_copies);
	o->d2h_copies = atomic_load(&m->d2h_copies);
	o->kernels = atomic_load(&m->kernels);
	o->gemms = atomic_load(&m->gemms);
	o->device_allocs = atomic_load(&m->allocs);
	o->device_bytes_in_use = atomic_load(&m->in_use);
	o->device_peak = atomic_load(&m->peak);
}

int flow_cuda_sync(flow_cuda *g, flow_status *st)
{
	cudaError_t e = cudaStreamSynchronize(g->stream);
	return e == cudaSuccess ? 0 : cuda_fail(st, "cudaStreamSynchronize", e);
}

/* ---- copies ---- */

static int check_f32(const flow_tensor *t, const char *what, flow_status *st)
{
	if (!t || flow_tensor_dtype(t) != FLOW_F32) {
		flow_status_set(st, FLOW_UNIMPLEMENTED, "cuda: %s: only f32 tensors are supported (got %s)", what,
				t ? flow_dtype_name(flow_tensor_dtype(t)) : "NULL");
		return -1;
	}
	return 0;
}

int flow_cuda_upload_into(flow_cuda *g, flow_tensor *dev, const flow_tensor *host, int wait,
			  flow_status *st)
{
	if (check_f32(host, "upload", st) || check_f32(dev, "upload", st))
		return -1;
	if (flow_tensor_nelem(dev) != flow_tensor_nelem(host)) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"cuda: upload: host tensor has %lld elements, device tensor %lld",
				(long long)flow_tensor_nelem(host), (long long)flow_tensor_nelem(dev));
		return -1;
	}
	PP_PHASE(PP_DATA_TRANSFER, "h2d");
	size_t n = flow_tensor_nbytes(host);
	cudaError_t e = cudaSuccess;
	if (n) {
		e = cudaMemcpyAsync(flow_tensor_data(dev), flow_tensor_cdata(host), n, cudaMemcpyHostToDevice,
				    g->stream);
		/* Unless asked not to, the host buffer may be reused right after. */
		if (e == cudaSuccess && wait)
			e = cudaStreamSynchronize(g->stream);
	}
	if (e != cudaSuccess)
		return cuda_fail(st, "cudaMemcpy host to device", e);
	atomic_fetch_add(&g->h2d_bytes, n);
	atomic_fetch_add(&g->h2d_copies, 1);
	return 0;
}

flow_tensor *flow_cuda_upload(flow_cuda *g, const flow_tensor *host, flow_status *st)
{
	if (check_f32(host, "upload", st))
		return NULL;
	int64_t dims[FLOW_MAX_DIMS];
	for (int i = 0; i < flow_tensor_ndim(host); i++)
		dims[i] = flow_tensor_dim(host, i);
	flow_tensor *d = flow_cuda_empty(g, flow_tensor_ndim(host), dims, st);
	if (d && flow_cuda_upload_into(g, d, host, 1, st) != 0) {
		flow_tensor_unref(d);
		d = NULL;
	}
	return d;
}

flow_tensor *flow_cuda_download(flow_cuda *g, const flow_tensor *dev, flow_status *st)
{
	if (check_f32(dev, "download", st))
		return NULL;
	PP_PHASE(PP_DATA_TRANSFER, "d2h");
	int64_t dims[FLOW_MAX_DIMS];
	for (int i = 0; i < flow_tensor_ndim(dev); i++)
		dims[i] = flow_tensor_dim(dev, i);
	flow_tensor *h = flow_tensor_new(FLOW_F32, flow_tensor_ndim(dev), dims, st);
	size_t n = flow_tensor_nbytes(dev);
	if (h && n) {
		cudaError_t e = cudaMemcpyAsync(flow_tensor_data(h), flow_tensor_cdata(dev), n,
						cudaMemcpyDeviceToHost, g->stream);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(g->stream);
		if (e != cudaSuccess) {
			cuda_fail(st, "cudaMemcpy device to host", e);
			flow_tensor_unref(h);
			h = NULL;
		} else {
			atomic_fetch_add(&g->d2h_bytes, n);
			atomic_fetch_add(&g->d2h_copies, 1);
		}
	}
	return h;
}

static void pinned_release(void *ctx, void *data, size_t n)
{
	(void)ctx, (void)n;
	cudaFreeHost(data);
}

flow_tensor *flow_cuda_host_pinned(flow_cuda *g, int ndim, const int64_t *dims, flow_status *st)
{
	(void)g;
	int64_t n;
	if (flow_dims_check(ndim, dims, &n, st) != 0)
		return NULL;
	size_t bytes = (size_t)n * sizeof(float);
	void *p = NULL;
	if (cudaMallocHost(&p, bytes ? bytes : 4) != cudaSuccess)
		return flow_tensor_new(FLOW_F32, ndim, dims, st); /* pageable: slower, still correct */
	memset(p, 0, bytes);
	flow_tensor *t = flow_tensor_wrap(FLOW_F32, ndim, dims, p, bytes ? bytes : 4, pinned_release, NULL, st);
	if (!t)
		cudaFreeHost(p);
	return t;
}

/* ---- ops ---- */

static int launched(flow_cuda *g, const char *op, int err, flow_status *st)
{
	if (err != cudaSuccess) {
		flow_status_set(st, FLOW_INTERNAL, "cuda: %s kernel launch: %s", op,
				cudaGetErrorString((cudaError_t)err));
		return -1;
	}
	atomic_fetch_add(&g->kernels, 1);
	return 0;
}

static int dims_of(const flow_tensor *t, int64_t *dims)
{
	int nd = flow_tensor_ndim(t);
	for (int i = 0; i < nd; i++)
		dims[i] = flow_tensor_dim(t, i);
	return nd;
}

int flow_cuda_matmul(flow_cuda *g, const flow_tensor *a, const flow_tensor *b, int ta, int tb,
		     flow_tensor **out, flow_status *st)
{
	*out = NULL;
	if (check_f32(a, "MatMul", st) || check_f32(b, "MatMul", st))
		return -1;
	if (flow_tensor_ndim(a) != 2 || flow_tensor_ndim(b) != 2) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "cuda: MatMul needs rank-2 inputs (got %d and %d)",
				flow_tensor_ndim(a), flow_tensor_ndim(b));
		return -1;
	}
	int64_t ra = flow_tensor_dim(a, 0), ca = flow_tensor_dim(a, 1);
	int64_t rb = flow_tensor_dim(b, 0), cb = flow_tensor_dim(b, 1);
	int64_t m = ta ? ca : ra, k = ta ? ra : ca, kb = tb ? cb : rb, n = tb ? rb : cb;
	if (k != kb) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"cuda: MatMul inner dimensions differ: %lldx%lld%s times %lldx%lld%s",
				(long long)ra, (long long)ca, ta ? "^T" : "", (long long)rb, (long long)cb,
				tb ? "^T" : "");
		return -1;
	}
	if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
		flow_status_set(st, FLOW_OUT_OF_RANGE, "cuda: MatMul dimensions exceed cuBLAS's int range");
		return -1;
	}
	int64_t od[2] = {m, n};
	flow_tensor *c = flow_cuda_empty(g, 2, od, st);
	if (!c)
		return -1;
	if (m && n) {
		/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T:
		 * swap the operands, keep each one's transpose flag. */
		const float alpha = 1.f, beta = 0.f;
		cublasStatus_t s =
			blas.sgemm(g->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n,
				    (int)m, (int)k, &alpha, flow_tensor_cdata(b), (int)cb, flow_tensor_cdata(a),
				    (int)ca, &beta, flow_tensor_data(c), (int)n);
		if (s != CUBLAS_STATUS_SUCCESS) {
			flow_status_set(st, FLOW_INTERNAL, "cuda: MatMul: cublasSgemm: %s", cublas_name(s));
			flow_tensor_unref(c);
			return -1;
		}
		atomic_fetch_add(&g->gemms, 1);
	}
	*out = c;
	return 0;
}

int flow_cuda_binary(flow_cuda *g, const char *op, const flow_tensor *a, const flow_tensor *b,
		     flow_tensor **out, flow_status *st)
{
	*out = NULL;
	static const char *names[] = {"Add", "Sub", "Mul", "Div", "Maximum"};
	int code = -1;
	for (int i = 0; i < 5; i++)
		if (op && strcmp(op, names[i]) == 0)
			code = i;
	if (code < 0) {
		flow_status_set(st, FLOW_UNIMPLEMENTED, "cuda: no binary kernel '%s'", op ? op : "(null)");
		return -1;
	}
	if (check_f32(a, op, st) || check_f32(b, op, st))
		return -1;
	int64_t n = flow_tensor_nelem(a), nb = flow_tensor_nelem(b);
	int nd = flow_tensor_ndim(a);
	int64_t last = nd ? flow_tensor_dim(a, nd - 1) : 1;
	int same = flow_tensor_ndim(b) == nd;
	for (int i = 0; same && i < nd; i++)
		same = flow_tensor_dim(a, i) == flow_tensor_dim(b, i);
	int row = flow_tensor_ndim(b) == 1 && nb == last;
	if (!same && nb != 1 && !row) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"cuda: %s: b must have a's shape, one element, or a's last dimension (%lld); it has %lld elements",
				op, (long long)last, (long long)nb);
		return -1;
	}
	int64_t dims[FLOW_MAX_DIMS];
	flow_tensor *y = flow_cuda_empty(g, dims_of(a, dims), dims, st);
	if (!y)
		return -1;
	if (n && launched(g, op,
			  fcu_binary(code, flow_tensor_cdata(a), flow_tensor_cdata(b), flow_tensor_data(y), n,
				     same ? n : nb, g->stream),
			  st)) {
		flow_tensor_unref(y);
		return -1;
	}
	*out = y;
	return 0;
}

int flow_cuda_unary(flow_cuda *g, const char *op, const flow_tensor *x, flow_tensor **out, flow_status *st)
{
	*out = NULL;
	static const char *names[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Neg"};
	int code = -1;
	for (int i = 0; i < 5; i++)
		if (op && strcmp(op, names[i]) == 0)
			code = i;
	if (code < 0) {
		flow_status_set(st, FLOW_UNIMPLEMENTED, "cuda: no unary kernel '%s'", op ? op : "(null)");
		return -1;
	}
	if (check_f32(x, op, st))
		return -1;
	int64_t dims[FLOW_MAX_DIMS];
	flow_tensor *y = flow_cuda_empty(g, dims_of(x, dims), dims, st);
	if (!y)
		return -1;
	int64_t n = flow_tensor_nelem(x);
	if (n && launched(g, op, fcu_unary(code, flow_tensor_cdata(x), flow_tensor_data(y), n, g->stream), st)) {
		flow_tensor_unref(y);
		return -1;
	}
	*out = y;
	return 0;
}

int flow_cuda_sum(flow_cuda *g, const flow_tensor *x, int all, flow_tensor **out, flow_status *st)
{
	*out = NULL;
	if (check_f32(x, "Sum", st))
		return -1;
	int nd = flow_tensor_ndim(x);
	if (!all && nd < 1) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "cuda: Sum over the last axis of a scalar");
		return -1;
	}
	int64_t n = flow_tensor_nelem(x);
	int64_t cols = all ? n : flow_tensor_dim(x, nd - 1);
	int64_t rows = all ? 1 : (cols ? n / cols : 0);
	int64_t dims[FLOW_MAX_DIMS];
	int ond = all ? 0 : dims_of(x, dims) - 1;
	flow_tensor *y = flow_cuda_empty(g, ond, dims, st);
	if (!y)
		return -1;
	int err = rows ? fcu_row_sum(flow_tensor_cdata(x), flow_tensor_data(y), rows, cols, g->stream)
		       : (int)cudaSuccess;
	if (launched(g, "Sum", err, st)) {
		flow_tensor_unref(y);
		return -1;
	}
	*out = y;
	return 0;
}

int flow_cuda_softmax(flow_cuda *g, const flow_tensor *x, flow_tensor **out, flow_status *st)
{
	*out = NULL;
	if (check_f32(x, "Softmax", st))
		return -1;
	int nd = flow_tensor_ndim(x);
	if (nd < 1) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "cuda: Softmax needs rank >= 1");
		return -1;
	}
	int64_t n = flow_tensor_nelem(x), cols = flow_tensor_dim(x, nd - 1);
	int64_t dims[FLOW_MAX_DIMS];
	flow_tensor *y = flow_cuda_empty(g, dims_of(x, dims), dims, st);
	if (!y)
		return -1;
	if (n && launched(g, "Softmax",
			  fcu_softmax(flow_tensor_cdata(x), flow_tensor_data(y), n / cols, cols, g->stream), st)) {
		flow_tensor_unref(y);
		return -1;
	}
	*out = y;
	return 0;
}
