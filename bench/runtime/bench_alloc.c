/* Allocator vs malloc for a typical step: the MLP 784->1024->10 forward
 * (batch 128) run through sessions whose allocator is the BFC arena or plain
 * malloc, and the same step's allocation pattern replayed directly. */
#include <string.h>

#include "../bench_common.h"
#include "flow.h"

static void session_step(int kind, int steps)
{
	flow_status *st = flow_status_new();
	flow_graph *g = flow_graph_new();
	flow_shape xs = flow_shape_make(2, (int64_t[]){128, 784});
	flow_output x = flow_placeholder(g, "x", FLOW_F32, &xs, st);
	flow_tensor *w0 = flow_tensor_new(FLOW_F32, 2, (int64_t[]){784, 1024}, st);
	flow_tensor *w1 = flow_tensor_new(FLOW_F32, 2, (int64_t[]){1024, 10}, st);
	flow_output in[2] = {x, flow_const(g, "w0", w0, st)};
	flow_output h = flow_simple(g, "MatMul", "mm0", in, 2, st);
	h = flow_simple(g, "Relu", "r0", &h, 1, st);
	flow_output in2[2] = {h, flow_const(g, "w1", w1, st)};
	h = flow_simple(g, "MatMul", "mm1", in2, 2, st);
	h = flow_simple(g, "Softmax", "sm", &h, 1, st);
	BENCH_CHECK(st);
	flow_allocator_options ao = {.kind = kind};
	flow_allocator *a = flow_allocator_new(&ao, st);
	/* Passes off: every op allocates its own output, the pattern the
	 * allocator sees without fusion. */
	flow_session_options so = {.allocator = a, .disable_passes = FLOW_PASS_FUSION};
	flow_session *s = flow_session_new(g, &so, st);
	flow_tensor *xv = flow_tensor_new(FLOW_F32, 2, xs.dims, st);
	double t[512];
	for (int i = 0; i < steps; i++) {
		flow_tensor *out = NULL;
		double t0 = bench_now();
		flow_session_run(s, &x, &xv, 1, &h, &out, 1, NULL, 0, st);
		t[i] = bench_now() - t0;
		flow_tensor_unref(out);
	}
	BENCH_CHECK(st);
	flow_allocator_stats as;
	flow_allocator_stats_get(a, &as);
	printf("session step, %-6s allocator: median %7.3f ms, allocations/step %.1f, time in allocator/step %.2f us, "
	       "peak %.2f MiB, reserved %.2f MiB, regions %llu\n",
	       kind ? "malloc" : "bfc", bench_median(t + 1, steps - 1) * 1e3, (double)as.num_allocs / steps,
	       (double)as.alloc_ns / steps / 1e3, as.peak_bytes_in_use / 1048576.0, as.bytes_reserved / 1048576.0,
	       (unsigned long long)as.num_regions);
	flow_tensor_unref(xv);
	flow_tensor_unref(w0);
	flow_tensor_unref(w1);
	flow_session_free(s);
	flow_allocator_free(a);
	flow_graph_free(g);
	flow_status_free(st);
}

/* The step's buffers (bytes), allocated in order and freed at last use. */
static void replay(int kind, int steps)
{
	static const size_t sizes[] = {128 * 1024 * 4, 128 * 1024 * 4, 128 * 10 * 4, 128 * 10 * 4, 1024 * 4, 10 * 4};
	flow_allocator_options ao = {.kind = kind};
	flow_allocator *a = flow_allocator_new(&ao, NULL);
	double t0 = bench_now();
	for (int i = 0; i < steps; i++) {
		void *p[6];
		for (int k = 0; k < 6; k++) {
			p[k] = flow_allocator_alloc(a, sizes[k]);
			memset(p[k], 0, sizes[k] < 64 ? sizes[k] : 64); /* touch: a kernel writes its output */
			if (k >= 1)
				flow_allocator_release(a, p[k - 1]);
		}
		flow_allocator_release(a, p[5]);
	}
	double t = bench_now() - t0;
	printf("replayed step pattern, %-6s: %.3f us per step (6 allocations)\n", kind ? "malloc" : "bfc",
	       t / steps * 1e6);
	flow_allocator_free(a);
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 40;
	if (steps > 512)
		steps = 512;
	if (steps < 3)
		steps = 3;
	flow_init(NULL, NULL);
	session_step(0, steps);
	session_step(1, steps);
	replay(0, 100000);
	replay(1, 100000);
	flow_shutdown();
	return 0;
}
