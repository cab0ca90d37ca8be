/* MatMul through a session (feeds, plan, BFC output, kernel) vs a direct
 * cblas_sgemm on the same data, in the same run. Target: within 10%. */
#include <cblas.h>
#include <string.h>

#include "../bench_common.h"
#include "flow.h"

static void one(int m, int k, int n, int reps)
{
	flow_status *st = flow_status_new();
	flow_graph *g = flow_graph_new();
	flow_shape sa = flow_shape_make(2, (int64_t[]){m, k}), sb = flow_shape_make(2, (int64_t[]){k, n});
	flow_output a = flow_placeholder(g, "a", FLOW_F32, &sa, st);
	flow_output b = flow_placeholder(g, "b", FLOW_F32, &sb, st);
	flow_output in[2] = {a, b};
	flow_output c = flow_simple(g, "MatMul", "c", in, 2, st);
	BENCH_CHECK(st);
	flow_tensor *ta = flow_tensor_new(FLOW_F32, 2, sa.dims, st), *tb = flow_tensor_new(FLOW_F32, 2, sb.dims, st);
	float *pa = flow_tensor_data(ta), *pb = flow_tensor_data(tb);
	for (int64_t i = 0; i < (int64_t)m * k; i++)
		pa[i] = (float)((i * 7) % 13) * 0.01f;
	for (int64_t i = 0; i < (int64_t)k * n; i++)
		pb[i] = (float)((i * 5) % 11) * 0.01f;
	float *pc = malloc(sizeof(float) * (size_t)m * (size_t)n);
	flow_session *s = flow_session_new(g, NULL, st);
	flow_output feeds[2] = {a, b};
	flow_tensor *fv[2] = {ta, tb};
	double *ts = malloc(sizeof(double) * (size_t)reps), *td = malloc(sizeof(double) * (size_t)reps);
	/* Warm both paths (compile, arena, BLAS threads), then interleave. */
	for (int w = 0; w < 2; w++) {
		flow_tensor *out = NULL;
		flow_session_run(s, feeds, fv, 2, &c, &out, 1, NULL, 0, st);
		flow_tensor_unref(out);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, pa, k, pb, n, 0.f, pc, n);
	}
	BENCH_CHECK(st);
	double maxdiff = 0;
	for (int r = 0; r < reps; r++) {
		flow_tensor *out = NULL;
		/* Alternate which path goes first so cache warmth favours neither. */
		double t0, t1, t2, t3;
		if (r & 1) {
			t2 = bench_now();
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, pa, k, pb, n, 0.f, pc, n);
			t3 = bench_now();
		}
		t0 = bench_now();
		flow_session_run(s, feeds, fv, 2, &c, &out, 1, NULL, 0, st);
		t1 = bench_now();
		if (!(r & 1)) {
			t2 = bench_now();
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, pa, k, pb, n, 0.f, pc, n);
			t3 = bench_now();
		}
		ts[r] = t1 - t0;
		td[r] = t3 - t2;
		if (r == 0) {
			const float *po = flow_tensor_data(out);
			for (int64_t i = 0; i < (int64_t)m * n; i++) {
				double d = po[i] - pc[i];
				if (d < 0)
					d = -d;
				if (d > maxdiff)
					maxdiff = d;
			}
		}
		flow_tensor_unref(out);
	}
	BENCH_CHECK(st);
	double ms = bench_median(ts, reps) * 1e3, md = bench_median(td, reps) * 1e3;
	double mins = ts[0] * 1e3, mind = td[0] * 1e3; /* sorted by bench_median */
	double gf = 2.0 * m * k * n / 1e9;
	printf("matmul %4dx%4dx%4d  session %8.3f ms (%6.1f GFLOP/s)  cblas_sgemm %8.3f ms (%6.1f GFLOP/s)  "
	       "session/direct %.3f (best of each: %.3f)  max|diff| %.2g  (median of %d)\n",
	       m, k, n, ms, gf / (ms * 1e-3), md, gf / (md * 1e-3), ms / md, mins / mind, maxdiff, reps);
	free(ts);
	free(td);
	free(pc);
	flow_tensor_unref(ta);
	flow_tensor_unref(tb);
	flow_session_free(s);
	flow_graph_free(g);
	flow_status_free(st);
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 15;
	flow_status *st = flow_status_new();
	flow_init(NULL, st);
	BENCH_CHECK(st);
	printf("threads: flow pool %d\n", flow_threadpool_size(flow_default_pool()));
	one(1024, 1024, 1024, reps);
	one(128, 784, 1024, reps * 4);
	flow_status_free(st);
	flow_shutdown();
	return 0;
}
