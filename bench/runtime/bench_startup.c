/* Runtime start-up: FULL registration (every op def parsed and validated,
 * every kernel registration checked) vs LITE (only the ops a graph uses),
 * each followed by building and running a small MLP graph. */
#include <string.h>

#include "../bench_common.h"
#include "flow.h"

static double build_and_run(void)
{
	flow_status *st = flow_status_new();
	double t0 = bench_now();
	flow_graph *g = flow_graph_new();
	flow_shape xs = flow_shape_make(2, (int64_t[]){32, 64});
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &xs, st);
	flow_tensor *w = flow_tensor_new(FLOW_F32, 2, (int64_t[]){64, 32}, st);
	flow_tensor *bb = flow_tensor_new(FLOW_F32, 1, (int64_t[]){32}, st);
	flow_output in[2] = {x, flow_const(g, "w", w, st)};
	flow_output h = flow_simple(g, "MatMul", "mm", in, 2, st);
	flow_output in2[2] = {h, flow_const(g, "b", bb, st)};
	h = flow_simple(g, "BiasAdd", "ba", in2, 2, st);
	h = flow_simple(g, "Relu", "relu", &h, 1, st);
	h = flow_simple(g, "Softmax", "sm", &h, 1, st);
	BENCH_CHECK(st);
	flow_session *s = flow_session_new(g, NULL, st);
	flow_tensor *xv = flow_tensor_new(FLOW_F32, 2, xs.dims, st), *out = NULL;
	flow_session_run(s, &x, &xv, 1, &h, &out, 1, NULL, 0, st);
	BENCH_CHECK(st);
	double t = bench_now() - t0;
	flow_tensor_unref(out);
	flow_tensor_unref(xv);
	flow_tensor_unref(w);
	flow_tensor_unref(bb);
	flow_session_free(s);
	flow_graph_free(g);
	flow_status_free(st);
	return t;
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 15;
	double fi[64], fg[64], li[64], lg[64];
	if (reps > 64)
		reps = 64;
	flow_registry_stats full = {0}, lite = {0};
	for (int r = 0; r < reps; r++) {
		for (int mode = 0; mode < 2; mode++) {
			flow_init_options o = {.registration = mode ? FLOW_REGISTER_LITE : FLOW_REGISTER_FULL};
			flow_status *st = flow_status_new();
			double t0 = bench_now();
			flow_init(&o, st);
			double t1 = bench_now();
			BENCH_CHECK(st);
			double tg = build_and_run();
			(mode ? li : fi)[r] = t1 - t0;
			(mode ? lg : fg)[r] = tg;
			flow_registry_stats_get(mode ? &lite : &full);
			flow_status_free(st);
			flow_shutdown();
		}
	}
	double a = bench_median(fi, reps), b = bench_median(fg, reps);
	double c = bench_median(li, reps), d = bench_median(lg, reps);
	printf("startup FULL: init %8.3f ms + graph/run %7.3f ms = %8.3f ms  (%d ops, %d kernels registered)\n",
	       a * 1e3, b * 1e3, (a + b) * 1e3, full.ops_registered, full.kernels_registered);
	printf("startup LITE: init %8.3f ms + graph/run %7.3f ms = %8.3f ms  (%d ops, %d kernels registered)\n",
	       c * 1e3, d * 1e3, (c + d) * 1e3, lite.ops_registered, lite.kernels_registered);
	printf("startup full/lite ratio %.2f  (median of %d, in-process re-init)\n", (a + b) / (c + d), reps);
	return 0;
}
