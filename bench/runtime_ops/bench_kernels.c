/* Kernel throughput through the eager path (registry lookup, shape
 * function, kernel): MatMul against a direct cblas_sgemm on the same
 * buffers, Conv2D, broadcasting Add, Sum, Softmax. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "../bench_common.h"
#include "flow.h"

static flow_status *st;

static flow_tensor *rnd(int nd, const int64_t *d)
{
	flow_tensor *t = flow_tensor_new(FLOW_F32, nd, d, st);
	float *p = flow_tensor_data(t);
	for (int64_t i = 0; i < flow_tensor_nelem(t); i++)
		p[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
	return t;
}

static double run_op(const char *op, flow_tensor *a, flow_tensor *b, flow_tensor *c, void (*attrs)(flow_op_desc *),
		     int reps)
{
	double best;
	BENCH_BEST(reps, best, {
		flow_op_desc *d = flow_eager_new(op);
		if (attrs)
			attrs(d);
		flow_op_add_tensor(d, a);
		if (b)
			flow_op_add_tensor(d, b);
		if (c)
			flow_op_add_tensor(d, c);
		flow_tensor *y = NULL;
		if (flow_execute(d, &y, 1, st)) {
			fprintf(stderr, "%s: %s\n", op, flow_status_message(st));
			exit(1);
		}
		flow_tensor_unref(y);
	});
	return best;
}

static void conv_attrs(flow_op_desc *d)
{
	int64_t s[4] = {1, 1, 1, 1};
	flow_op_set_attr_ints(d, "strides", s, 4);
	flow_op_set_attr_string(d, "padding", "SAME");
}

int main(void)
{
	st = flow_status_new();
	if (flow_init(NULL, st)) {
		fprintf(stderr, "%s\n", flow_status_message(st));
		return 1;
	}
	printf("threads in the intra-op pool: %d\n", flow_threadpool_size(flow_default_pool()));
	int64_t sq[2] = {1024, 1024}, x1[2] = {128, 784}, w1[2] = {784, 1024};
	struct { const char *name; int64_t *a, *b; } mm[] = {{"1024x1024 * 1024x1024", sq, sq}, {"128x784 * 784x1024", x1, w1}};
	for (int i = 0; i < 2; i++) {
		flow_tensor *a = rnd(2, mm[i].a), *b = rnd(2, mm[i].b);
		int m = (int)mm[i].a[0], k = (int)mm[i].a[1], n = (int)mm[i].b[1];
		float *c = malloc((size_t)m * n * sizeof *c);
		double direct, op;
		BENCH_BEST(5, direct, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, flow_tensor_data(a), k,
						  flow_tensor_data(b), n, 0, c, n));
		op = run_op("MatMul", a, b, NULL, NULL, 5);
		printf("MatMul %-22s cblas_sgemm %7.2f ms (%6.1f GFLOP/s)  MatMul op %7.2f ms  overhead %+5.1f%%\n", mm[i].name,
		       direct * 1e3, 2.0 * m * n * k / direct / 1e9, op * 1e3, (op / direct - 1) * 100);
		free(c);
		flow_tensor_unref(a);
		flow_tensor_unref(b);
	}
	int64_t ix[4] = {32, 28, 28, 32}, fw[4] = {3, 3, 32, 64};
	flow_tensor *img = rnd(4, ix), *flt = rnd(4, fw);
	double cs = run_op("Conv2D", img, flt, NULL, conv_attrs, 3);
	printf("Conv2D 32x28x28x32 * 3x3x32x64 SAME (im2col+GEMM): %7.2f ms (%6.1f GFLOP/s)\n", cs * 1e3,
	       2.0 * 32 * 28 * 28 * 64 * 9 * 32 / cs / 1e9);
	flow_tensor_unref(img);
	flow_tensor_unref(flt);
	int64_t big[2] = {4096, 1024}, row[1] = {1024};
	flow_tensor *a = rnd(2, big), *b = rnd(1, row), *b2 = rnd(2, big);
	double t = run_op("Add", a, b2, NULL, NULL, 5);
	printf("Add 4096x1024 + 4096x1024:      %6.2f ms  %6.2f GB/s\n", t * 1e3, 3.0 * 4096 * 1024 * 4 / t / 1e9);
	t = run_op("Add", a, b, NULL, NULL, 5);
	printf("Add 4096x1024 + 1024 (bcast):   %6.2f ms  %6.2f GB/s\n", t * 1e3, 2.0 * 4096 * 1024 * 4 / t / 1e9);
	t = run_op("Tanh", a, NULL, NULL, NULL, 5);
	printf("Tanh 4096x1024:                 %6.2f ms\n", t * 1e3);
	int32_t ax0 = 0, ax1 = 1;
	flow_tensor *t0 = flow_tensor_scalar_i32(ax0), *t1 = flow_tensor_scalar_i32(ax1);
	t = run_op("Sum", a, t0, NULL, NULL, 5);
	printf("Sum 4096x1024 over axis 0:      %6.2f ms\n", t * 1e3);
	t = run_op("Sum", a, t1, NULL, NULL, 5);
	printf("Sum 4096x1024 over axis 1:      %6.2f ms\n", t * 1e3);
	t = run_op("Softmax", a, NULL, NULL, NULL, 5);
	printf("Softmax 4096x1024:              %6.2f ms\n", t * 1e3);
	flow_tensor_unref(a);
	flow_tensor_unref(b);
	flow_tensor_unref(b2);
	flow_tensor_unref(t0);
	flow_tensor_unref(t1);
	flow_status_free(st);
	flow_shutdown();
	return 0;
}
