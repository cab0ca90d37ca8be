/* fixture.c — see fixture.h. No sleeps: span durations are whatever the
 * recorder measures; ops carry exact synthetic durations through pp_op so
 * tests can assert on numbers. */
#include "fixture.h"
#include "phaseprof.h"
#include "store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ftw.h>
#include <math.h>

static volatile double sink;

/* A little real work so spans have a measurable length. */
static void work(int n)
{
	double a = 0;
	for (int i = 0; i < n; i++)
		a += (double)i * 0.5;
	sink = a;
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[32];
	snprintf(name, sizeof name, "worker-%d", id);
	pp_thread_name(name);
	for (int i = 0; i < 3; i++) {
		pp_phase_begin(PP_DATA_TRANSFER, "prefetch");
		pp_phase_begin(PP_SPAN, "decode");
		work(2000);
		pp_phase_end();
		pp_phase_end();
	}
	return NULL;
}

static void snapshot(int64_t version, int n_nodes)
{
	pp_graph_node *nodes = calloc((size_t)n_nodes, sizeof *nodes);
	pp_graph_edge *edges = calloc((size_t)n_nodes, sizeof *edges);
	char (*names)[48] = calloc((size_t)n_nodes, sizeof *names);
	if (!nodes || !edges || !names)
		goto out;
	static const char *const ops[] = {"Placeholder", "MatMul", "Relu", "Add", "Softmax"};
	for (int i = 0; i < n_nodes; i++) {
		if (i == 1)
			snprintf(names[i], sizeof names[i], "dense/MatMul");
		else if (i == 2)
			snprintf(names[i], sizeof names[i], "dense/Relu");
		else
			snprintf(names[i], sizeof names[i], "layer%d/op%d", i / 4, i);
		nodes[i].name = names[i];
		nodes[i].op = ops[i % 5];
		nodes[i].device = "cpu:0";
		nodes[i].shape = "128x784";
		nodes[i].cost_ns = i == 0 ? 0 : 0;
	}
	int ne = 0;
	for (int i = 1; i < n_nodes; i++)
		edges[ne++] = (pp_graph_edge){i - 1 - (i > 3 ? i % 3 : 0), i, 0};
	pp_graph_snapshot("train", version, nodes, n_nodes, edges, ne);
out:
	free(nodes);
	free(edges);
	free(names);
}

int64_t vfix_record(const char *db, const char *spool_dir, const vfix_opts *o)
{
	char spool[1024];
	static int seq;
	snprintf(spool, sizeof spool, "%s/run%d-%d.spool", spool_dir, (int)getpid(), seq++);
	pp_options po = {.spool_path = spool, .label = o->label, .scenario = o->scenario, .variant = o->variant,
			 .buffer_events = o->buffer_events, .max_buffers = o->max_buffers};
	if (pp_open(&po) != 0) {
		fprintf(stderr, "fixture: pp_open: %s\n", pp_last_error());
		return -1;
	}
	pp_meta("command", "viewers-fixture --steps N");
	pp_meta("framework", "flow 0.1");
	pp_thread_name("main");
	pp_phase_begin(PP_PROCESS_START, "process_start");
	work(5000);
	pp_phase_end();
	pp_phase_begin(PP_RUNTIME_INIT, "runtime_init");
	pp_phase_begin(PP_OP_REGISTRATION, "op_registration");
	work(20000);
	pp_phase_end();
	pp_phase_end();
	pp_row("libraries", "siiiiiiiit", "/usr/lib/libopenblas.so.0", (int64_t)0x7f0000000000, (int64_t)30000000,
	       (int64_t)1000, (int64_t)2000, (int64_t)901000, (int64_t)300000, (int64_t)500000, (int64_t)1, "dlopen");
	pp_row("libraries", "siiiiiiiit", "/usr/lib/libgomp.so.1", (int64_t)0x7f1000000000, (int64_t)300000,
	       (int64_t)2000, (int64_t)2100, (int64_t)52000, (int64_t)10000, (int64_t)20000, (int64_t)2, "needed");
	pp_phase_begin(PP_GRAPH_BUILD, "graph_build");
	int nodes = o->graph_nodes > 0 ? o->graph_nodes : 6;
	if (o->graph_versions > 0)
		snapshot(1, nodes);
	work(10000);
	pp_phase_end();
	pp_phase_begin(PP_WEIGHT_LOAD, "weight_load");
	pp_row("io", "istiiii", (int64_t)0, "/data/weights.npy", "read", (int64_t)4096, (int64_t)4096 * 64,
	       (int64_t)3000000, (int64_t)4000);
	work(3000);
	pp_phase_end();
	pp_phase_begin(PP_SESSION_CREATE, "session_create");
	work(3000);
	pp_phase_end();
	pp_phase_begin(PP_COMPILE, "compile");
	work(15000);
	pp_phase_end();
	if (o->gpu)
		pp_row("gpu_status", "itii", (int64_t)1, "CUPTI activity API", (int64_t)0, (int64_t)0);
	else
		pp_row("gpu_status", "itii", (int64_t)0, "no CUDA driver (libcuda.so.1 not found)", (int64_t)0, (int64_t)0);

	pthread_t th[8];
	int nth = o->threads > 8 ? 8 : o->threads;
	for (int i = 0; i < nth; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);

	int64_t corr = 1;
	uint64_t op_cursor = 0, gpu_cursor = 0;   /* ops and kernels run one after another */
	for (int s = 0; s < o->steps; s++) {
		pp_step_begin(s);
		if (s == 0) {
			pp_phase_begin(PP_OPTIMIZER_SETUP, "optimizer_setup");
			work(8000);
			pp_phase_end();
		}
		for (int k = 0; k < o->ops_per_step; k++) {
			uint64_t t = pp_now();
			if (t < op_cursor)
				t = op_cursor;
			op_cursor = t + (k % 2 == 0 ? (s == 0 ? VFIX_MATMUL_FIRST_NS : VFIX_MATMUL_STEADY_NS) : VFIX_RELU_NS);
			if (k % 2 == 0)
				pp_op("dense/MatMul", "MatMul", t, t + (s == 0 ? VFIX_MATMUL_FIRST_NS : VFIX_MATMUL_STEADY_NS), s);
			else
				pp_op("dense/Relu", "Relu", t, t + VFIX_RELU_NS, s);
		}
		work(o->graph_versions > 1 ? 500 + 40 * s : 500);   /* grows per step only when the graph does */
		if (o->graph_versions > 1 && s > 0 && s < o->graph_versions)
			snapshot(s + 1, nodes + 3 * s);
		pp_counter("bytes_in_use", (double)(1 << 20) * (1 + s % 7));
		pp_counter("fragmentation", 0.05 * (s % 5));
		/* a training loss with one NaN, as real losses sometimes are */
		pp_counter("loss", s == 3 ? NAN : 2.0 / (s + 1));
		pp_row("allocations", "iistiiiiii", (int64_t)0, (int64_t)pp_now(), "bfc", "alloc", (int64_t)10,
		       (int64_t)10 * 4096, (int64_t)5000, (int64_t)(1 << 20) * (1 + s % 7), (int64_t)(8 << 20), (int64_t)4096);
		if (o->gpu) {
			uint64_t t = pp_now();
			if (t + 5000 < gpu_cursor)   /* the stream is busy: this kernel queues */
				t = gpu_cursor - 5000;
			gpu_cursor = t + 30000;
			pp_row("gpu_activity", "tiiiiiisiiiiiiitttii", "runtime", (int64_t)t, (int64_t)t + 3000, (int64_t)0,
			       (int64_t)1, (int64_t)0, corr, "cudaLaunchKernel", (int64_t)0, (int64_t)0, (int64_t)0,
			       (int64_t)0, (int64_t)0, (int64_t)0, (int64_t)0, NULL, NULL, NULL, (int64_t)0, (int64_t)0);
			pp_row("gpu_activity", "tiiiiiisiiiiiiitttii", "kernel", (int64_t)t + 5000, (int64_t)t + 25000,
			       (int64_t)0, (int64_t)1, (int64_t)7, corr, "sgemm_128x64", (int64_t)64, (int64_t)1, (int64_t)1,
			       (int64_t)128, (int64_t)1, (int64_t)1, (int64_t)0, NULL, NULL, NULL, (int64_t)0, (int64_t)0);
			pp_row("gpu_activity", "tiiiiiisiiiiiiitttii", "memcpy", (int64_t)t + 26000, (int64_t)t + 30000,
			       (int64_t)0, (int64_t)1, (int64_t)8, corr + 1, "async", (int64_t)0, (int64_t)0, (int64_t)0,
			       (int64_t)0, (int64_t)0, (int64_t)0, (int64_t)1 << 20, "HtoD", "pageable", "device",
			       (int64_t)0, (int64_t)0);
			corr += 2;
		}
		pp_step_end();
	}
	pp_mark("training done");
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	if (o->samples) {
		/* stacks form a tree: 1 main, 2 main>train, 3 main>train>matmul,
		 * 4 main>train>relu, 5 main>load (frame i = stack i). */
		static const struct { int64_t id, parent; const char *sym; } tree[] = {
			{1, 0, "main"}, {2, 1, "train_loop"}, {3, 2, "sgemm_kernel"}, {4, 2, "relu_fwd"},
			{5, 1, "load_weights"}};
		for (int i = 0; i < 5; i++) {
			pp_row("frames", "iiss", tree[i].id, (int64_t)0x1000 * tree[i].id, tree[i].sym, "/usr/bin/fixture");
			pp_row("stacks", "iii", tree[i].id, tree[i].parent, tree[i].id);
		}
		static const int64_t leaf[] = {3, 3, 3, 3, 3, 3, 4, 4, 5, 2};
		for (int i = 0; i < o->samples; i++)
			pp_row("samples", "iii", (int64_t)0, (int64_t)(1000 * i), leaf[i % 10]);
	}
	pp_phase_begin(PP_SESSION_CLOSE, "session_close");
	pp_phase_end();
	if (pp_close() != 0) {
		fprintf(stderr, "fixture: pp_close: %s\n", pp_last_error());
		return -1;
	}
	char err[512];
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	if (!st) {
		fprintf(stderr, "fixture: %s\n", err);
		return -1;
	}
	pp_ingest_result res;
	if (pp_store_ingest(st, spool, NULL, &res, err, sizeof err) != 0) {
		fprintf(stderr, "fixture: ingest: %s\n", err);
		pp_store_close(st, NULL, 0);
		return -1;
	}
	if (pp_store_close(st, err, sizeof err) != 0) {
		fprintf(stderr, "fixture: close: %s\n", err);
		return -1;
	}
	unlink(spool);
	return res.run_id;
}

char *vfix_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char tmpl[1024];
	snprintf(tmpl, sizeof tmpl, "%s/ppview-XXXXXX", base && *base ? base : "/tmp");
	char *d = mkdtemp(tmpl);
	return d ? strdup(d) : NULL;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return remove(p);
}

void vfix_rmdir(char *dir)
{
	if (dir)
		nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

char *vfix_slurp(const char *path, long *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	if (b) {
		b[n] = 0;
		if (len)
			*len = n;
	}
	return b;
}
