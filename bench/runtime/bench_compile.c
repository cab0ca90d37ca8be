/* First run of a signature (whole-graph validation + compile passes + arena
 * growth) vs later runs, on an MLP 784->1024->10, batch 128; and the first
 * run when the compiled plan comes from a plan file written by an earlier
 * "process" (same graph rebuilt). */
#include <string.h>
#include <unistd.h>

#include "../bench_common.h"
#include "flow.h"

typedef struct mlp {
	flow_graph *g;
	flow_output x, y;
	flow_op *init;
} mlp;

static mlp build(flow_status *st)
{
	mlp m;
	m.g = flow_graph_new();
	flow_shape xs = flow_shape_make(2, (int64_t[]){128, 784});
	m.x = flow_placeholder(m.g, "x", FLOW_F32, &xs, st);
	int64_t dims[3] = {784, 1024, 10};
	flow_output h = m.x;
	for (int l = 0; l < 2; l++) {
		char nm[32];
		flow_tensor *w = flow_tensor_new(FLOW_F32, 2, (int64_t[]){dims[l], dims[l + 1]}, st);
		float *p = flow_tensor_data(w);
		for (int64_t i = 0; i < dims[l] * dims[l + 1]; i++)
			p[i] = (float)((i * 31) % 17 - 8) * 0.002f;
		flow_tensor *b = flow_tensor_new(FLOW_F32, 1, &dims[l + 1], st);
		snprintf(nm, sizeof nm, "w%d_init", l);
		flow_output wi = flow_const(m.g, nm, w, st);
		snprintf(nm, sizeof nm, "b%d_init", l);
		flow_output bi = flow_const(m.g, nm, b, st);
		snprintf(nm, sizeof nm, "w%d", l);
		flow_output wv = flow_variable(m.g, nm, wi, st);
		snprintf(nm, sizeof nm, "b%d", l);
		flow_output bv = flow_variable(m.g, nm, bi, st);
		flow_tensor_unref(w);
		flow_tensor_unref(b);
		flow_output in[2] = {h, wv};
		snprintf(nm, sizeof nm, "mm%d", l);
		h = flow_simple(m.g, "MatMul", nm, in, 2, st);
		flow_output in2[2] = {h, bv};
		snprintf(nm, sizeof nm, "ba%d", l);
		h = flow_simple(m.g, "BiasAdd", nm, in2, 2, st);
		if (l == 0)
			h = flow_simple(m.g, "Relu", "relu0", &h, 1, st);
	}
	m.y = flow_simple(m.g, "Softmax", "probs", &h, 1, st);
	m.init = flow_global_variables_initializer(m.g, st);
	BENCH_CHECK(st);
	return m;
}

static void run_series(const char *label, const char *plan_dir, int steps)
{
	flow_status *st = flow_status_new();
	mlp m = build(st);
	flow_allocator *a = flow_allocator_new(NULL, st);
	flow_session_options o = {.allocator = a, .plan_cache_dir = plan_dir ? plan_dir : ""};
	flow_session *s = flow_session_new(m.g, &o, st);
	flow_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &m.init, 1, st);
	BENCH_CHECK(st);
	flow_tensor *xv = flow_tensor_new(FLOW_F32, 2, (int64_t[]){128, 784}, st);
	double t[256];
	for (int i = 0; i < steps; i++) {
		flow_tensor *out = NULL;
		double t0 = bench_now();
		flow_session_run(s, &m.x, &xv, 1, &m.y, &out, 1, NULL, 0, st);
		t[i] = bench_now() - t0;
		flow_tensor_unref(out);
	}
	BENCH_CHECK(st);
	flow_session_stats ss;
	flow_session_stats_get(s, &ss);
	double first = t[0];
	double later = bench_median(t + 1, steps - 1);
	printf("%-22s first run %8.3f ms (compile %.3f ms, %d plan nodes, fused %d, folded %d, disk hits %llu)  "
	       "later runs median %7.3f ms  first/later %.1fx\n",
	       label, first * 1e3, ss.compiles ? (double)ss.last_compile_ns * 1e-6 : 0.0, ss.last_plan_nodes,
	       ss.last_fused, ss.last_folded, (unsigned long long)ss.plan_disk_hits, later * 1e3, first / later);
	flow_tensor_unref(xv);
	flow_session_free(s);
	flow_allocator_free(a);
	flow_graph_free(m.g);
	flow_status_free(st);
}

/* A graph that grows between runs (an op added per iteration, the
 * growing-graph complaint): each run re-validates the whole graph and
 * compiles the new signature, so the cost per iteration rises with size. */
static void growing(int iters)
{
	flow_status *st = flow_status_new();
	flow_graph *g = flow_graph_new();
	flow_tensor *t = flow_tensor_new(FLOW_F32, 2, (int64_t[]){10, 10}, st);
	flow_output c = flow_const(g, "c", t, st);
	flow_session *s = flow_session_new(g, NULL, st);
	double first = 0, last = 0;
	int win = iters / 10;
	for (int i = 0; i < iters; i++) {
		double t0 = bench_now();
		flow_output in[2] = {c, c};
		flow_output m = flow_simple(g, "Mul", NULL, in, 2, st);
		flow_tensor *o = NULL;
		flow_session_run(s, NULL, NULL, 0, &m, &o, 1, NULL, 0, st);
		flow_tensor_unref(o);
		double dt = bench_now() - t0;
		if (i < win)
			first += dt;
		if (i >= iters - win)
			last += dt;
	}
	BENCH_CHECK(st);
	flow_session_stats ss;
	flow_session_stats_get(s, &ss);
	printf("growing graph, %d iterations: first %d %.1f us/iter, last %d %.1f us/iter (x%.1f); "
	       "last whole-graph validation %.1f us over %d nodes\n",
	       iters, win, first / win * 1e6, win, last / win * 1e6, last / first,
	       (double)ss.last_validate_ns / 1e3, flow_graph_num_ops(g));
	flow_tensor_unref(t);
	flow_session_free(s);
	flow_graph_free(g);
	flow_status_free(st);
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 30;
	if (steps > 256)
		steps = 256;
	if (steps < 3)
		steps = 3;
	flow_init(NULL, NULL);
	char dir[] = "/tmp/flow_bench_plans_XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	run_series("compile (no cache)", NULL, steps);
	run_series("compile + save plan", dir, steps);
	run_series("plan loaded from disk", dir, steps);
	growing(1000);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	flow_shutdown();
	return 0;
}
