/* flow's CUDA backend.
 *   test_flow_cuda kernels        every kernel against a CPU result; each test
 *                                 is skipped with the probe's reason when no
 *                                 GPU is usable, and the program exits 77
 *                                 (ctest: skipped)
 *   test_flow_cuda fallback FAKE  no driver / no device / runtime refusal all
 *                                 come back as FLOW_UNIMPLEMENTED naming why */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "flow_cuda.h"
#include "phaseprof.h"
#include "pp_testutil.h"

#include <unistd.h>

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
	if (!h)
		fail_msg("%s: download: %s", what, flow_status_message(st));
	assert_int_equal(flow_tensor_nelem(h), n);
	double worst = 0;
	const float *p = flow_tensor_cdata(h);
	for (int64_t i = 0; i < n; i++) {
		double e = fabs(p[i] - want[i]) / fmax(1.0, fabs(want[i]));
		if (!(e <= worst))
			worst = e; /* NaN propagates as a failure */
	}
	flow_tensor_unref(h);
	flow_status_free(st);
	if (!(worst < 1e-4))
		fail_msg("%s: max relative error %g", what, worst);
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
	if (flow_cuda_matmul(g, da, db, ta, tb, &dc, st) != 0)
		fail_msg("matmul: %s", flow_status_message(st));
	assert_int_equal(flow_tensor_dim(dc, 0), m);
	assert_int_equal(flow_tensor_dim(dc, 1), n);
	char what[32];
	snprintf(what, sizeof what, "MatMul ta=%d tb=%d", ta, tb);
	compare(g, dc, want, m * n, what);
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
	if (flow_cuda_binary(g, op, da, db, &dy, st) != 0)
		fail_msg("%s: %s", op, flow_status_message(st));
	char what[32];
	snprintf(what, sizeof what, "%s b=%d", op, bshape);
	compare(g, dy, want, n, what);
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
	if (flow_cuda_unary(g, op, dx, &dy, st) != 0)
		fail_msg("%s: %s", op, flow_status_message(st));
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
	if (flow_cuda_sum(g, dx, 0, &dy, st) != 0)
		fail_msg("sum: %s", flow_status_message(st));
	assert_int_equal(flow_tensor_ndim(dy), 1);
	assert_int_equal(flow_tensor_dim(dy, 0), 17);
	compare(g, dy, rows, 17, "Sum last axis");
	flow_tensor_unref(dy);
	dy = NULL;
	if (flow_cuda_sum(g, dx, 1, &dy, st) != 0)
		fail_msg("sum all: %s", flow_status_message(st));
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
	if (flow_cuda_softmax(g, dx, &dy, st) != 0)
		fail_msg("softmax: %s", flow_status_message(st));
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
	/* an inner-dimension mismatch, an unknown kernel */
	assert_int_equal(flow_cuda_matmul(g, a, b, 0, 0, &c, st), -1);
	assert_int_equal(flow_status_code(st), FLOW_INVALID_ARGUMENT);
	if (!strstr(flow_status_message(st), "3x4 times 5x6"))
		fail_msg("message '%s'", flow_status_message(st));
	flow_status_clear(st);
	assert_int_equal(flow_cuda_unary(g, "Gelu", a, &c, st), -1);
	assert_int_equal(flow_status_code(st), FLOW_UNIMPLEMENTED);
	flow_tensor_unref(a);
	flow_tensor_unref(b);
	flow_status_free(st);
}

static flow_cuda *g;   /* the device, NULL where none is usable */
static char no_gpu[512];
static int skipped;     /* exit 77 so ctest says skipped */

static int open_device(void **state)
{
	(void)state;
	flow_status *st = flow_status_new();
	g = flow_cuda_open(0, st);
	if (g)
		printf("device: %s\n", flow_cuda_device_name(g));
	else
		snprintf(no_gpu, sizeof no_gpu, "%s", flow_status_message(st));
	flow_status_free(st);
	return 0;
}

static int close_device(void **state)
{
	(void)state;
	if (g)
		flow_cuda_close(g);
	g = NULL;
	return 0;
}

/* Skips the current test, with the probe's reason, where there is no GPU. */
static void need_gpu(void)
{
	if (g)
		return;
	printf("SKIP: %s\n", no_gpu); /* ctest shows this line for the skipped test */
	skipped = 1;
	skip();
}

static void test_matmul(void **state)
{
	(void)state;
	need_gpu();
	assert_true(flow_cuda_uses_bfc(g)); /* device memory goes through the BFC */
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			check_matmul(g, ta, tb);
}

static void test_binary(void **state)
{
	(void)state;
	need_gpu();
	const char *bin[] = {"Add", "Sub", "Mul", "Div", "Maximum"};
	for (int i = 0; i < 5; i++)
		for (int s = 0; s < 3; s++)
			check_binary(g, bin[i], s);
}

static void test_unary(void **state)
{
	(void)state;
	need_gpu();
	const char *un[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Neg"};
	for (int i = 0; i < 5; i++)
		check_unary(g, un[i]);
}

static void test_sum_softmax(void **state)
{
	(void)state;
	need_gpu();
	check_sum_softmax(g);
}

static void test_errors(void **state)
{
	(void)state;
	need_gpu();
	check_errors(g);
}

/* an asynchronous copy from pinned memory into an existing device tensor */
static void test_async_upload(void **state)
{
	(void)state;
	need_gpu();
	flow_status *s3 = flow_status_new();
	int64_t d[1] = {4096};
	flow_tensor *pin = flow_cuda_host_pinned(g, 1, d, s3), *dev = flow_cuda_empty(g, 1, d, s3);
	double want[4096];
	float *p = flow_tensor_data(pin);
	for (int i = 0; i < 4096; i++)
		p[i] = (float)(want[i] = i * 0.5);
	if (flow_cuda_upload_into(g, dev, pin, 0, s3) != 0)
		fail_msg("async upload: %s", flow_status_message(s3));
	if (flow_cuda_sync(g, s3) != 0)
		fail_msg("sync: %s", flow_status_message(s3));
	compare(g, dev, want, 4096, "async upload");
	flow_tensor_unref(dev);
	flow_tensor_unref(pin);
	flow_status_free(s3);
}

/* after the others: their copies and GEMMs counted, nothing left allocated */
static void test_stats(void **state)
{
	(void)state;
	need_gpu();
	flow_cuda_stats st2;
	flow_cuda_stats_get(g, &st2);
	assert_true(st2.h2d_copies > 0);
	assert_true(st2.d2h_copies > 0);
	assert_int_equal(st2.gemms, 4);
	assert_int_equal(st2.device_bytes_in_use, 0);
}

static void expect_fallback(const char *needle)
{
	flow_status *st = flow_status_new();
	flow_cuda *dev = flow_cuda_open(0, st);
	if (dev) { /* only possible where a real GPU answers through cudart */
		flow_cuda_close(dev);
	} else {
		assert_int_equal(flow_status_code(st), FLOW_UNIMPLEMENTED);
		if (!strstr(flow_status_message(st), "GPU unavailable, running on the CPU: ") ||
		    !strstr(flow_status_message(st), needle))
			fail_msg("message '%s' lacks '%s'", flow_status_message(st), needle);
	}
	flow_status_free(st);
}

static const char *fake; /* the fake libcuda */

static void test_no_driver(void **state)
{
	(void)state;
	setenv("PHASEPROF_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	expect_fallback("no NVIDIA driver");
}

/* With a recorder open, the fallback leaves its reason in the run. */
static void test_recorded_fallback(void **state)
{
	(void)state;
	char spool[256], db[256], err[256], s[512];
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(spool, sizeof spool, "%s/flowcuda-%d.spool", dir, (int)getpid());
	snprintf(db, sizeof db, "%s/flowcuda-%d.db", dir, (int)getpid());
	setenv("PHASEPROF_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	pp_options o = {.spool_path = spool};
	if (pp_open(&o) != 0)
		fail_msg("pp_open: %s", pp_last_error());
	expect_fallback("no NVIDIA driver");
	expect_fallback("no NVIDIA driver"); /* a second try adds no second status row */
	pp_close();
	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_status"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT max(available) FROM gpu_status"), 0);
	if (!strstr(ppt_q_text(st, "SELECT max(reason) FROM gpu_status", s, sizeof s), "no NVIDIA driver"))
		fail_msg("reason '%s'", s);
	assert_string_equal(ppt_q_text(st, "SELECT value FROM run_meta WHERE key='flow.device'", s, sizeof s), "cpu");
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE kind_name='device_init'"), 2);
	pp_store_close(st, err, sizeof err);
	unlink(spool);
	unlink(db);
}

static void test_no_device(void **state)
{
	(void)state;
	setenv("PHASEPROF_LIBCUDA", fake, 1);
	setenv("FAKE_CUINIT", "100", 1);
	expect_fallback("no GPU is visible");
}

static void test_stub_driver(void **state)
{
	(void)state;
	setenv("PHASEPROF_LIBCUDA", fake, 1);
	setenv("FAKE_CUINIT", "34", 1);
	expect_fallback("stub libcuda");
}

/* the probe passes (fake driver) but the CUDA runtime finds no real one */
static void test_no_runtime(void **state)
{
	(void)state;
	setenv("PHASEPROF_LIBCUDA", fake, 1);
	setenv("FAKE_CUINIT", "0", 1);
	expect_fallback("cudaSetDevice(0)");
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "kernels") == 0) {
		const struct CMUnitTest kernels[] = {
			cmocka_unit_test(test_matmul),     cmocka_unit_test(test_binary),
			cmocka_unit_test(test_unary),      cmocka_unit_test(test_sum_softmax),
			cmocka_unit_test(test_errors),     cmocka_unit_test(test_async_upload),
			cmocka_unit_test(test_stats),
		};
		int rc = cmocka_run_group_tests_name("kernels", kernels, open_device, close_device);
		return rc == 0 && skipped ? 77 : rc;
	}
	if (argc >= 3 && strcmp(argv[1], "fallback") == 0) {
		fake = argv[2];
		const struct CMUnitTest fallback[] = {
			cmocka_unit_test(test_no_driver), cmocka_unit_test(test_recorded_fallback),
			cmocka_unit_test(test_no_device), cmocka_unit_test(test_stub_driver),
			cmocka_unit_test(test_no_runtime),
		};
		return cmocka_run_group_tests_name("fallback", fallback, NULL, NULL);
	}
	fprintf(stderr, "usage: %s kernels | fallback FAKE_LIBCUDA\n", argv[0]);
	return 2;
}
