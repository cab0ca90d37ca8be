/* flow's CUDA backend.
 *   test_flow_cuda kernels        every kernel against a CPU result; exits 77
 *                                 (ctest: skipped) with the probe's reason when
 *                                 no GPU is usable
 *   test_flow_cuda fallback FAKE  no driver / no device / runtime refusal all
 *                                 come back as FLOW_UNIMPLEMENTED naming why */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "flow_cuda.h"
#include "phaseprof.h"
#include "store.h"
#include "store_internal.h"

#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			failures++;                                            \
		}                                                              \
	} while (0)

static uint64_t rng = 88172645463325252ull;
static float frand(float lo, float hi)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return lo + (hi - lo) * (float)((rng >> 11) * (1.0 / 9007199254740992.0));
}

static flow_tensor *host_rand(int ndim, const int64_t *dims, float lo, float hi)
{
	flow_tensor *t = flow_tensor_new(FLOW_F32, ndim, dims, NULL);
	float *p = flow_tensor_data(t);
	for (int64_t i = 0; i < flow_tensor_nelem(t); i++)
		p[i] = frand(lo, hi);
	return t;
}

/* max relative error (|d| / max(1, |want|)) between a device result and want[] */
static double compare(flow_cuda *g, flow_tensor *dev, const double *want, int64_t n, const char *what)
{
	flow_status *st = flow_status_new();
	flow_tensor *h = flow_cuda_download(g, dev, st);
	CHECK(h != NULL, "%s: download: %s", what, flow_status_message(st));
	double worst = 0;
	if (h) {
		CHECK(flow_tensor_nelem(h) == n, "%s: %lld elements, want %lld", what,
		      (long long)flow_tensor_nelem(h), (long long)n);
		const float *p = flow_tensor_cdata(h);
		for (int64_t i = 0; i < n && i < flow_tensor_nelem(h); i++) {
			double e = fabs(p[i] - want[i]) / fmax(1.0, fabs(want[i]));
			if (!(e <= worst))
				worst = e; /* NaN propagates as a failure */
		}
		flow_tensor_unref(h);
	}
	flow_status_free(st);
	CHECK(worst < 1e-4, "%s: max relative error %g", what, worst);
	return worst;
}

static void check_matmul(flow_cuda *g, int ta, int tb)
{
	int64_t m = 37, k = 53, n = 29;
	int64_t ad[2] = {ta ? k : m, ta ? m : k}, bd[2] = {tb ? n : k, tb ? k : n};
	flow_tensor *a = host_rand(2, ad, -1, 1), *b = host_rand(2, bd, -1, 1);
	const float *A = flow_tensor_cdata(a), *B = flow_tensor_cdata(b);
	double *want = malloc(sizeof *want * (size_t)(m * n));
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double s = 0;
			for (int64_t p = 0; p < k; p++)
				s += (double)(ta ? A[p * m + i] : A[i * k + p]) * (tb ? B[j * k + p] : B[p * n + j]);
			want[i * n + j] = s;
		}
	flow_status *st = flow_status_new();
	flow_tensor *da = flow_cuda_upload(g, a, st), *db = flow_cuda_upload(g, b, st), *dc = NULL;
	CHECK(flow_cuda_matmul(g, da, db, ta, tb, &dc, st) == 0, "matmul: %s", flow_status_message(st));
	if (dc) {
		CHECK(flow_tensor_dim(dc, 0) == m && flow_tensor_dim(dc, 1) == n, "matmul shape");
		char what[32];
		snprintf(what, sizeof what, "MatMul ta=%d tb=%d", ta, tb);
		compare(g, dc, want, m * n, what);
	}
	flow_tensor_unref(dc);
	flow_tensor_unref(da);
	flow_tensor_unref(db);
	flow_tensor_unref(a);
	flow_tensor_unref(b);
	flow_status_free(st);
	free(want);
}

static double ref_binary(const char *op, double x, double z)
{
	if (!strcmp(op, "Add")) return x + z;
	if (!strcmp(op, "Sub")) return x - z;
	if (!strcmp(op, "Mul")) return x * z;
	if (!strcmp(op, "Div")) return x / z;
	return x > z ? x : z;
}

static void check_binary(flow_cuda *g, const char *op, int bshape /* 0 same, 1 scalar, 2 row */)
{
	int64_t ad[2] = {19, 23}, bd[2] = {19, 23};
	int bnd = 2;
	if (bshape == 1)
		bnd = 0;
	else if (bshape == 2)
		bnd = 1, bd[0] = 23;
	flow_tensor *a = host_rand(2, ad, -2, 2), *b = host_rand(bnd, bd, 0.5f, 2);
	const float *A = flow_tensor_cdata(a), *B = flow_tensor_cdata(b);
	int64_t n = flow_tensor_nelem(a), nb = flow_tensor_nelem(b);
	double *want = malloc(sizeof *want * (size_t)n);
	for (int64_t i = 0; i < n; i++)
		want[i] = ref_binary(op, A[i], B[i % nb]);
	flow_status *st = flow_status_new();
	flow_tensor *da = flow_cuda_upload(g, a, st), *db = flow_cuda_upload(g, b, st), *dy = NULL;
	CHECK(flow_cuda_binary(g, op, da, db, &dy, st) == 0, "%s: %s", op, flow_status_message(st));
	if (dy) {
		char what[32];
		snprintf(what, sizeof what, "%s b=%d", op, bshape);
		compare(g, dy, want, n, what);
	}
	flow_tensor_unref(dy);
	flow_tensor_unref(da);
	flow_tensor_unref(db);
	flow_tensor_unref(a);
	flow_tensor_unref(b);
	flow_status_free(st);
	free(want);
}

static void check_unary(flow_cuda *g, const char *op)
{
	int64_t d[1] = {1000};
	flow_tensor *x = host_rand(1, d, -4, 4);
	const float *X = flow_tensor_cdata(x);
	double want[1000];
	for (int i = 0; i < 1000; i++) {
		double v = X[i];
		want[i] = !strcmp(op, "Relu") ? (v > 0 ? v : 0)
			  : !strcmp(op, "Sigmoid") ? 1 / (1 + exp(-v))
			  : !strcmp(op, "Tanh") ? tanh(v)
			  : !strcmp(op, "Exp") ? exp(v) : -v;
	}
	flow_status *st = flow_status_new();
	flow_tensor *dx = flow_cuda_upload(g, x, st), *dy = NULL;
	CHECK(flow_cuda_unary(g, op, dx, &dy, st) == 0, "%s: %s", op, flow_status_message(st));
	if (dy)
		compare(g, dy, want, 1000, op);
	flow_tensor_unref(dy);
	flow_tensor_unref(dx);
	flow_tensor_unref(x);
	flow_status_free(st);
}

static void check_sum_softmax(flow_cuda *g)
{
	int64_t d[2] = {17, 1000};
	flow_tensor *x = host_rand(2, d, -1, 1);
	const float *X = flow_tensor_cdata(x);
	double rows[17], all = 0;
	for (int r = 0; r < 17; r++) {
		rows[r] = 0;
		for (int c = 0; c < 1000; c++)
			rows[r] += X[r * 1000 + c];
		all += rows[r];
	}
	flow_status *st = flow_status_new();
	flow_tensor *dx = flow_cuda_upload(g, x, st), *dy = NULL;
	CHECK(flow_cuda_sum(g, dx, 0, &dy, st) == 0, "sum: %s", flow_status_message(st));
	if (dy) {
		CHECK(flow_tensor_ndim(dy) == 1 && flow_tensor_dim(dy, 0) == 17, "row sum shape");
		compare(g, dy, rows, 17, "Sum last axis");
	}
	flow_tensor_unref(dy);
	dy = NULL;
	CHECK(flow_cuda_sum(g, dx, 1, &dy, st) == 0, "sum all: %s", flow_status_message(st));
	if (dy)
		compare(g, dy, &all, 1, "Sum all");
	flow_tensor_unref(dy);
	flow_tensor_unref(dx);
	flow_tensor_unref(x);

	/* softmax, with large logits: must not overflow */
	int64_t sd[2] = {5, 300};
	x = host_rand(2, sd, -50, 900);
	X = flow_tensor_cdata(x);
	double *want = malloc(sizeof *want * 1500);
	for (int r = 0; r < 5; r++) {
		double m = -INFINITY, s = 0;
		for (int c = 0; c < 300; c++)
			m = fmax(m, X[r * 300 + c]);
		for (int c = 0; c < 300; c++)
			s += exp(X[r * 300 + c] - m);
		for (int c = 0; c < 300; c++)
			want[r * 300 + c] = exp(X[r * 300 + c] - m) / s;
	}
	dx = flow_cuda_upload(g, x, st);
	dy = NULL;
	CHECK(flow_cuda_softmax(g, dx, &dy, st) == 0, "softmax: %s", flow_status_message(st));
	if (dy)
		compare(g, dy, want, 1500, "Softmax");
	flow_tensor_unref(dy);
	flow_tensor_unref(dx);
	flow_tensor_unref(x);
	free(want);
	flow_status_free(st);
}

static void check_errors(flow_cuda *g)
{
	flow_status *st = flow_status_new();
	int64_t ad[2] = {3, 4}, bd[2] = {5, 6};
	flow_tensor *a = flow_cuda_empty(g, 2, ad, st), *b = flow_cuda_empty(g, 2, bd, st), *c = NULL;
	CHECK(flow_cuda_matmul(g, a, b, 0, 0, &c, st) == -1 && flow_status_code(st) == FLOW_INVALID_ARGUMENT,
	      "inner mismatch must fail: %s", flow_status_message(st));
	CHECK(strstr(flow_status_message(st), "3x4 times 5x6") != NULL, "message '%s'", flow_status_message(st));
	flow_status_clear(st);
	CHECK(flow_cuda_unary(g, "Gelu", a, &c, st) == -1 && flow_status_code(st) == FLOW_UNIMPLEMENTED,
	      "unknown kernel");
	flow_tensor_unref(a);
	flow_tensor_unref(b);
	flow_status_free(st);
}

static int run_kernels(void)
{
	flow_status *st = flow_status_new();
	flow_cuda *g = flow_cuda_open(0, st);
	if (!g) {
		/* ctest shows this line for the skipped test */
		printf("SKIP: %s\n", flow_status_message(st));
		flow_status_free(st);
		return 77;
	}
	printf("device: %s\n", flow_cuda_device_name(g));
	CHECK(flow_cuda_uses_bfc(g), "device memory must go through the BFC");
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			check_matmul(g, ta, tb);
	const char *bin[] = {"Add", "Sub", "Mul", "Div", "Maximum"};
	for (int i = 0; i < 5; i++)
		for (int s = 0; s < 3; s++)
			check_binary(g, bin[i], s);
	const char *un[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Neg"};
	for (int i = 0; i < 5; i++)
		check_unary(g, un[i]);
	check_sum_softmax(g);
	check_errors(g);
	/* an asynchronous copy from pinned memory into an existing device tensor */
	{
		flow_status *s3 = flow_status_new();
		int64_t d[1] = {4096};
		flow_tensor *pin = flow_cuda_host_pinned(g, 1, d, s3), *dev = flow_cuda_empty(g, 1, d, s3);
		double want[4096];
		float *p = flow_tensor_data(pin);
		for (int i = 0; i < 4096; i++)
			p[i] = (float)(want[i] = i * 0.5);
		CHECK(flow_cuda_upload_into(g, dev, pin, 0, s3) == 0, "async upload: %s", flow_status_message(s3));
		CHECK(flow_cuda_sync(g, s3) == 0, "sync");
		compare(g, dev, want, 4096, "async upload");
		flow_tensor_unref(dev);
		flow_tensor_unref(pin);
		flow_status_free(s3);
	}
	flow_cuda_stats st2;
	flow_cuda_stats_get(g, &st2);
	CHECK(st2.h2d_copies > 0 && st2.d2h_copies > 0 && st2.gemms == 4, "stats");
	CHECK(st2.device_bytes_in_use == 0, "device memory leaked: %llu bytes",
	      (unsigned long long)st2.device_bytes_in_use);
	flow_cuda_close(g);
	flow_status_free(st);
	printf(failures ? "kernels: %d failed\n" : "kernels: ok\n", failures);
	return failures ? 1 : 0;
}

static void expect_fallback(const char *needle)
{
	flow_status *st = flow_status_new();
	flow_cuda *g = flow_cuda_open(0, st);
	if (g) { /* only possible where a real GPU answers through cudart */
		flow_cuda_close(g);
	} else {
		CHECK(flow_status_code(st) == FLOW_UNIMPLEMENTED, "code %s", flow_code_name(flow_status_code(st)));
		CHECK(strstr(flow_status_message(st), "GPU unavailable, running on the CPU: ") != NULL &&
			      strstr(flow_status_message(st), needle) != NULL,
		      "message '%s' lacks '%s'", flow_status_message(st), needle);
	}
	flow_status_free(st);
}

/* With a recorder open, the fallback leaves its reason in the run. */
static void recorded_fallback(void)
{
	char spool[256], db[256], err[256];
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(spool, sizeof spool, "%s/flowcuda-%d.spool", dir, (int)getpid());
	snprintf(db, sizeof db, "%s/flowcuda-%d.db", dir, (int)getpid());
	pp_options o = {.spool_path = spool};
	CHECK(pp_open(&o) == 0, "pp_open: %s", pp_last_error());
	expect_fallback("no NVIDIA driver");
	expect_fallback("no NVIDIA driver"); /* a second try adds no second status row */
	pp_close();
	unlink(db);
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	pp_ingest_result res;
	CHECK(st && pp_store_ingest(st, spool, NULL, &res, err, sizeof err) == 0, "ingest: %s", err);
	if (st) {
		sqlite3_stmt *q;
		sqlite3_prepare_v2(pp_store_db(st),
				   "SELECT count(*), max(available), max(reason), "
				   "(SELECT value FROM run_meta WHERE key='flow.device'), "
				   "(SELECT count(*) FROM spans_v WHERE kind_name='device_init') FROM gpu_status",
				   -1, &q, NULL);
		CHECK(sqlite3_step(q) == SQLITE_ROW, "query");
		CHECK(sqlite3_column_int(q, 0) == 1, "%d status rows", sqlite3_column_int(q, 0));
		CHECK(sqlite3_column_int(q, 1) == 0, "available");
		const char *why = (const char *)sqlite3_column_text(q, 2);
		CHECK(why && strstr(why, "no NVIDIA driver"), "reason '%s'", why ? why : "");
		const char *dev = (const char *)sqlite3_column_text(q, 3);
		CHECK(dev && !strcmp(dev, "cpu"), "flow.device '%s'", dev ? dev : "");
		CHECK(sqlite3_column_int(q, 4) == 2, "device_init phases: %d", sqlite3_column_int(q, 4));
		sqlite3_finalize(q);
		pp_store_close(st, err, sizeof err);
	}
	unlink(spool);
	unlink(db);
}

static int run_fallback(const char *fake)
{
	setenv("PHASEPROF_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	expect_fallback("no NVIDIA driver");
	recorded_fallback();
	setenv("PHASEPROF_LIBCUDA", fake, 1);
	setenv("FAKE_CUINIT", "100", 1);
	expect_fallback("no GPU is visible");
	setenv("FAKE_CUINIT", "34", 1);
	expect_fallback("stub libcuda");
	/* the probe passes (fake driver) but the CUDA runtime finds no real one */
	setenv("FAKE_CUINIT", "0", 1);
	expect_fallback("cudaSetDevice(0)");
	printf(failures ? "fallback: %d failed\n" : "fallback: ok\n", failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "kernels") == 0)
		return run_kernels();
	if (argc >= 3 && strcmp(argv[1], "fallback") == 0)
		return run_fallback(argv[2]);
	fprintf(stderr, "usage: %s kernels | fallback FAKE_LIBCUDA\n", argv[0]);
	return 2;
}
