/*
 * Training step time for an MLP 784 -> 1024 (relu) -> 10, batch 128, Adam,
 * sparse softmax cross-entropy: graph mode (flow_model_fit, one session
 * plan) and eager mode (per-op dispatch with a gradient tape). Prints the
 * first step and the median of the later steps. Figures only, no asserts.
 *
 * usage: bench_train_step [steps=50] [graph|eager|both] [plan]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flow_train.h"

#define B 128
#define IN 784
#define HID 1024
#define OUT 10

static flow_status *S;
static int dump_plan;

static void die(const char *what)
{
	fprintf(stderr, "bench_train_step: %s: %s\n", what, flow_status_message(S));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Process CPU time (all threads): on a loaded machine this tracks the work
 * done better than wall time; for one thread it equals wall time when idle. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double median_ms(uint64_t *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, cmp_u64);
	return n ? t[n / 2] / 1e6 : 0;
}

static void data(int n, flow_tensor **x, flow_tensor **y)
{
	int64_t xd[2] = {n, IN}, yd[1] = {n};
	*x = flow_tensor_new(FLOW_F32, 2, xd, S);
	*y = flow_tensor_new(FLOW_I32, 1, yd, S);
	uint64_t r = 12345;
	for (int i = 0; i < n; i++) {
		int c = i % OUT;
		((int32_t *)flow_tensor_data(*y))[i] = c;
		for (int j = 0; j < IN; j++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			float u = (float)(r >> 40) / (float)(1 << 24);
			((float *)flow_tensor_data(*x))[i * IN + j] = u - 0.5f + (j % OUT == c ? 0.02f : 0.0f);
		}
	}
}

/* The benchmark's MLP (IN-HID relu-OUT, seed 1), built; *build_ns: the
 * time flow_model_build took. */
static flow_model *mlp_built(uint64_t *build_ns)
{
	flow_model_options mo = {.seed = 1, .op_timing = 0};
	flow_model *m = flow_model_sequential(&mo);
	if (flow_model_add(m, flow_layer_dense(HID, FLOW_ACT_RELU, NULL, NULL), S) ||
	    flow_model_add(m, flow_layer_dense(OUT, FLOW_ACT_NONE, NULL, NULL), S))
		die("model");
	int64_t in = IN;
	flow_shape is = flow_shape_make(1, &in);
	uint64_t t0 = now_ns();
	if (flow_model_build(m, FLOW_F32, &is, S))
		die("build");
	*build_ns = now_ns() - t0;
	return m;
}

static void bench_graph(int steps, flow_tensor *x, flow_tensor *y)
{
	uint64_t build_ns;
	flow_model *m = mlp_built(&build_ns);
	flow_optimizer_options oo = flow_optimizer_defaults(FLOW_OPT_ADAM);
	if (flow_model_compile(m, "sparse_categorical_crossentropy", &oo, S))
		die("compile");
	/* fit one step at a time to also take CPU time per step */
	flow_fit_result r = {0}, r1;
	uint64_t *cpu = calloc((size_t)steps, sizeof *cpu), *wall = calloc((size_t)steps, sizeof *wall);
	int64_t n = flow_tensor_dim(x, 0);
	for (int s = 0; s < steps; s++) {
		int64_t off = (s * B) % n;
		int64_t xd[2] = {B, IN}, yd[1] = {B};
		flow_tensor *bx = flow_tensor_wrap(FLOW_F32, 2, xd, (float *)flow_tensor_data(x) + off * IN,
						   B * IN * sizeof(float), NULL, NULL, S);
		flow_tensor *by = flow_tensor_wrap(FLOW_I32, 1, yd, (int32_t *)flow_tensor_data(y) + off,
						   B * sizeof(int32_t), NULL, NULL, S);
		uint64_t c0 = cpu_ns();
		if (flow_model_fit(m, bx, by, B, 1, &r1, S))
			die("fit");
		cpu[s] = cpu_ns() - c0;
		wall[s] = r1.first_step_ns;
		if (!s)
			r.first_loss = r1.first_loss;
		r.last_loss = r1.last_loss;
		flow_tensor_unref(bx);
		flow_tensor_unref(by);
	}
	r.steps = steps;
	r.first_step_ns = wall[0];
	r.median_step_ns = (uint64_t)(median_ms(wall + 1, steps - 1) * 1e6);
	double cpu_med = median_ms(cpu + 1, steps - 1);
	free(cpu);
	free(wall);
	if (dump_plan) {
		flow_graph *g = flow_model_graph(m);
		flow_output feeds[2] = {flow_out(flow_graph_op_by_name(g, "input"), 0),
					flow_out(flow_graph_op_by_name(g, "labels"), 0)};
		flow_op *train = NULL;
		for (int i = flow_graph_num_ops(g) - 1; i >= 0 && !train; i--)
			for (int c = 0; c < flow_op_num_control_inputs(flow_graph_op_at(g, i)); c++)
				if (!strcmp(flow_op_type(flow_op_control_input(flow_graph_op_at(g, i), c)),
					    "_Increment"))
					train = flow_graph_op_at(g, i);
		char *d = flow_session_plan_dump(flow_model_session(m), feeds, 2, NULL, 0, &train, 1, S);
		printf("%s\n", d ? d : flow_status_message(S));
		free(d);
	}
	printf("flow graph : build+init %7.2f ms | first step %7.2f ms | median step %6.2f ms "
	       "(cpu %6.2f ms) (%d steps) | loss %.3f -> %.3f\n",
	       build_ns / 1e6, r.first_step_ns / 1e6, r.median_step_ns / 1e6, cpu_med, r.steps,
	       r.first_loss, r.last_loss);
	flow_model_free(m);
}

static void bench_eager(int steps, flow_tensor *x, flow_tensor *y)
{
	/* Same initial weights as a graph model with the same seed. */
	uint64_t build_ns;
	flow_model *m = mlp_built(&build_ns);
	flow_tensor *w[4];
	for (int i = 0; i < 4; i++) {
		flow_tensor *v = flow_model_param_value(m, i, S);
		w[i] = flow_tensor_copy(v, S);
		flow_tensor_unref(v);
	}
	flow_model_free(m);
	flow_optimizer *opt = flow_optimizer_new(NULL, S);
	flow_tape *tp = flow_tape_new();
	uint64_t *t = calloc((size_t)steps, sizeof *t), *cpu = calloc((size_t)steps, sizeof *cpu);
	int64_t n = flow_tensor_dim(x, 0);
	double l0 = 0, l1 = 0;
	for (int s = 0; s < steps; s++) {
		int64_t off = (s * B) % n;
		int64_t xd[2] = {B, IN}, yd[1] = {B};
		flow_tensor *bx = flow_tensor_wrap(FLOW_F32, 2, xd,
						   (float *)flow_tensor_data(x) + off * IN,
						   B * IN * sizeof(float), NULL, NULL, S);
		flow_tensor *by = flow_tensor_wrap(FLOW_I32, 1, yd, (int32_t *)flow_tensor_data(y) + off,
						   B * sizeof(int32_t), NULL, NULL, S);
		uint64_t t0 = now_ns(), c0 = cpu_ns();
		for (int i = 0; i < 4; i++)
			flow_tape_watch(tp, w[i]);
		flow_tape_begin(tp);
		flow_tensor *h = flow_eager_matmul(bx, w[0], 0, 0, S);
		flow_tensor *hb = h ? flow_eager_binary("BiasAdd", h, w[1], S) : NULL;
		flow_tensor *hr = hb ? flow_eager_unary("Relu", hb, S) : NULL;
		flow_tensor *lg = hr ? flow_eager_matmul(hr, w[2], 0, 0, S) : NULL;
		flow_tensor *lb = lg ? flow_eager_binary("BiasAdd", lg, w[3], S) : NULL;
		flow_tensor *loss = lb ? flow_eager_sparse_xent_mean(lb, by, S) : NULL;
		flow_tape_end(tp);
		if (!loss)
			die("eager forward");
		flow_tensor *gr[4];
		if (flow_tape_gradient(tp, loss, w, 4, gr, S) ||
		    flow_optimizer_apply_eager(opt, w, gr, 4, S))
			die("eager backward");
		t[s] = now_ns() - t0;
		cpu[s] = cpu_ns() - c0;
		if (!s)
			l0 = flow_tensor_get(loss, 0);
		l1 = flow_tensor_get(loss, 0);
		for (int i = 0; i < 4; i++)
			flow_tensor_unref(gr[i]);
		flow_tensor *tmp[] = {bx, by, h, hb, hr, lg, lb, loss};
		for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++)
			flow_tensor_unref(tmp[i]);
	}
	uint64_t first = t[0];
	printf("flow eager : %27s first step %7.2f ms | median step %6.2f ms (cpu %6.2f ms) "
	       "(%d steps) | loss %.3f -> %.3f\n",
	       "", first / 1e6, median_ms(t + 1, steps - 1), median_ms(cpu + 1, steps - 1), steps,
	       l0, l1);
	free(t);
	free(cpu);
	flow_tape_free(tp);
	flow_optimizer_free(opt);
	for (int i = 0; i < 4; i++)
		flow_tensor_unref(w[i]);
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 50;
	if (steps < 2)
		steps = 2;
	S = flow_status_new();
	flow_init_options io = {0};
	if (flow_init(&io, S) || flow_train_init(S))
		die("init");
	printf("MLP 784-1024-10, batch %d, Adam, sparse softmax cross-entropy; flow threads %d\n", B,
	       flow_threadpool_size(flow_default_pool()));
	flow_tensor *x, *y;
	data(B * 8, &x, &y);
	const char *mode = argc > 2 ? argv[2] : "both";
	dump_plan = argc > 3 && !strcmp(argv[3], "plan");
	if (strcmp(mode, "eager"))
		bench_graph(steps, x, y);
	if (strcmp(mode, "graph"))
		bench_eager(steps, x, y);
	flow_tensor_unref(x);
	flow_tensor_unref(y);
	flow_status_free(S);
	return 0;
}
