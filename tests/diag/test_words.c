/* Findings in the framework's own words: every rule that can fire, on
 * hand-built recordings marked as PyTorch programs (run_meta
 * python.adapter.torch, as the Python layer writes it), says nothing in
 * TensorFlow's terms (a word list) and says it in PyTorch's; the same
 * recordings as flow runs (no such meta) keep the runtime's words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag_check.h"

static trec T;
static pp_diag_result R;

static int setup(void **state)
{
	(void)state;
	trec_open(&T, "words.db");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pp_diag_result_free(&R);
	trec_close(&T);
	return 0;
}

/* TensorFlow's (and the flow runtime's) vocabulary: none of it may reach a
 * PyTorch user. Matched case-insensitively anywhere in a text. */
static const char *const tf_words[] = {
	"tensorflow", "keras", "tf.", "tf1", "session", "finaliz", "slot", "arena",
	"graph build", "graph_build", "default graph", "op registration", "op_registration",
	"variable", "initializer", "retrac", "traced function", "input signature",
	"compiled plan", "bfc", "feed", "shape_inference", "shape inference", "gradient_build",
	"placeholder", "memory plan",
};

static int has_word(const char *text, const char *word)
{
	size_t n = strlen(text), w = strlen(word);
	for (size_t i = 0; i + w <= n; i++) {
		size_t k = 0;
		while (k < w && tolower((unsigned char)text[i + k]) == word[k])
			k++;
		if (k == w)
			return 1;
	}
	return 0;
}

/* n steps of base ns with relative noise, the first first_mult times
 * longer; ids/starts may be NULL. */
static int64_t steps(int64_t t0, int n, double base, double noise, double slope, double first_mult,
		     uint64_t seed, int64_t *ids, int64_t *starts)
{
	int64_t *dur = malloc((size_t)n * sizeof *dur);
	for (int i = 0; i < n; i++) {
		double d = (base + slope * i) * (1 + noise * trand_normal(&seed));
		if (i == 0)
			d = base * first_mult;
		dur[i] = (int64_t)(d < base * 0.1 ? base * 0.1 : d);
	}
	int64_t end = trec_steps(&T, t0, dur, n, 10 * US, ids, starts);
	free(dur);
	return end;
}

/* ---- one recording per rule (or per branch of a rule's text) ---- */

static void rec_growth(void)
{
	steps(0, 200, 1 * MS, 0.15, 0.01 * MS, 30, 1, NULL, NULL);
}

/* First step 1 s against 40 ms steps, dominated by kind (-1: untracked). */
static void first_step(int kind)
{
	int64_t ids[20], starts[20];
	steps(0, 20, 40 * MS, 0.05, 0, 25, 6, ids, starts);
	if (kind >= 0)
		trec_span(&T, kind, "one-time", starts[0] + 20 * MS, starts[0] + 700 * MS, ids[0], 0);
}
static void rec_fs_compile(void) { first_step(PP_COMPILE); }
static void rec_fs_optimizer(void) { first_step(PP_OPTIMIZER_SETUP); }
static void rec_fs_alloc(void) { first_step(PP_MEMORY_ALLOC); }
static void rec_fs_graph(void) { first_step(PP_GRAPH_BUILD); }
static void rec_fs_gradient(void) { first_step(PP_GRADIENT_BUILD); }
static void rec_fs_untracked(void) { first_step(-1); }
static void rec_fs_forward(void) { first_step(PP_FORWARD); }
static void rec_fs_data(void) { first_step(PP_DATA_WAIT); }
static void rec_fs_device(void) { first_step(PP_DEVICE_INIT); }

static void rec_session_per_step(void)
{
	int64_t ids[30], starts[30];
	steps(0, 30, 4 * MS, 0.02, 0, 1, 9, ids, starts);
	for (int i = 0; i < 30; i++) {
		trec_span(&T, PP_SESSION_CREATE, "setup", starts[i], starts[i] + 1 * MS, ids[i], i);
		trec_span(&T, PP_SESSION_CLOSE, "close", starts[i] + 3 * MS, starts[i] + 3200 * US, ids[i], i);
	}
}

static void rec_sessions_no_loop(void)
{
	for (int i = 0; i < 12; i++)
		trec_span(&T, PP_SESSION_CREATE, "setup", i * 10 * MS, i * 10 * MS + 5 * MS, 0, -1);
}

static void rec_graph_snapshots(void)
{
	for (int v = 0; v < 10; v++)
		trec_graph(&T, "default", v, v * MS, 20 + 5 * v);
}

static void rec_graph_build_per_step(void)
{
	int64_t now = 0;
	trec_span(&T, PP_STEP, "step", now, now + 5 * MS, 0, 0);
	now += 5 * MS;
	for (int i = 1; i < 40; i++) {
		trec_span(&T, PP_GRAPH_BUILD, "build", now, now + 50 * US, 0, -1);
		now += 60 * US;
		trec_span(&T, PP_STEP, "step", now, now + MS, 0, i);
		now += MS + 10 * US;
	}
}

static void rec_repeated_init(void)
{
	uint64_t seed = 31;
	int64_t now = 0;
	for (int i = 0; i < 50; i++) {
		int64_t d = (int64_t)(MS * (1 + 0.06 * i) * (1 + 0.05 * trand_normal(&seed)));
		trec_span(&T, PP_VARIABLE_INIT, "init", now, now + d, 0, -1);
		now += d + 300 * US;
	}
}

static void rec_retracing(void)
{
	int64_t ids[12], starts[12];
	steps(0, 12, 3 * MS, 0.02, 0, 1, 13, ids, starts);
	for (int i = 0; i < 12; i++) {
		char sig[64];
		snprintf(sig, sizeof sig, "predict(f32[%d,784])", i + 1);
		trec_span(&T, PP_RETRACE, sig, starts[i], starts[i] + 1 * MS, ids[i], i);
	}
}

static void rec_op_registration(void)
{
	trec_span(&T, PP_RUNTIME_INIT, "init", 0, 2 * MS, 0, -1);
	trec_span(&T, PP_OP_REGISTRATION, "register all", 2 * MS, 32 * MS, 0, -1);
	trec_span(&T, PP_GRAPH_BUILD, "build", 32 * MS, 40 * MS, 0, -1);
	trec_counter(&T, "ops.registered", 32 * MS, 1300);
	steps(40 * MS, 10, 1 * MS, 0.02, 0, 1, 15, NULL, NULL);
}

static void rec_initializer(void)
{
	trec_span(&T, PP_VARIABLE_CREATE, "dense/kernel", 0, 20 * MS, 0, -1);
	trec_span(&T, PP_VARIABLE_INIT, "kaiming_uniform:fc.weight", 20 * MS, 820 * MS, 0, -1);
	trec_span(&T, PP_VARIABLE_INIT, "orthogonal:rnn.weight", 840 * MS, 940 * MS, 0, -1);
	steps(1000 * MS, 10, 1 * MS, 0.02, 0, 1, 17, NULL, NULL);
}

static void rec_alloc(void)
{
	int64_t ids[60], starts[60];
	steps(0, 60, 2 * MS, 0.02, 0, 3, 22, ids, starts);
	double count = 0, sys = 0, tns = 0;
	for (int i = 0; i < 60; i++) {
		double per = 200 + 5 * i;
		count += per;
		sys += 150;
		tns += per * 300;
		int64_t ts = starts[i] + 1900 * US;
		trec_counter(&T, "alloc.count", ts, count);
		trec_counter(&T, "alloc.sys_count", ts, sys);
		trec_counter(&T, "alloc.time_ns", ts, tns);
	}
}

static void rec_libraries(void)
{
	trec_span(&T, PP_PROCESS_START, "to main", 0, 50 * MS, 0, -1);
	trec_lib(&T, "/usr/lib/libtorch_cpu.so", 50 * MS, 550 * MS, 300 << 20, 200 * MS);
}

/* Shares of phases that have a text of their own in phase_share. */
static void share_run(int kind)
{
	trec_span(&T, PP_RUNTIME_INIT, "init", 0, 10 * MS, 0, -1);
	int64_t ids[40], starts[40];
	steps(1210 * MS, 40, 470 * MS, 0.0, 0, 1, 23, ids, starts);
	for (int i = 1; i < 40; i++)
		trec_span(&T, kind, "part", starts[i], starts[i] + 150 * MS, ids[i], i);
}
static void rec_share_compile(void) { share_run(PP_COMPILE); }
static void rec_share_alloc(void) { share_run(PP_MEMORY_ALLOC); }
static void rec_share_shapes(void) { share_run(PP_SHAPE_INFERENCE); }
static void rec_share_init(void) { share_run(PP_VARIABLE_INIT); }

static const struct fixture {
	const char *label;
	void (*build)(void);
	int64_t duration_ns;      /* 0: from the rows */
	const char *rule;         /* must fire, flow or PyTorch */
	const char *flow_word;    /* in the flow run's finding (title, evidence or fix) */
	const char *torch_word;   /* in the PyTorch run's finding */
} fixtures[] = {
	{"growth", rec_growth, 0, "iteration_time_grows", "finalize the graph", "hook"},
	{"first step compile", rec_fs_compile, 0, "first_step_slow", "compiled plan", "torch.compile"},
	{"first step optimizer", rec_fs_optimizer, 0, "first_step_slow", "slot", "optimizer.step()"},
	{"first step alloc", rec_fs_alloc, 0, "first_step_slow", "arena", "caching allocator"},
	{"first step graph", rec_fs_graph, 0, "first_step_slow", "graph_build", "warm-up step"},
	{"first step gradients", rec_fs_gradient, 0, "first_step_slow", "gradient_build", "autograd"},
	{"first step untracked", rec_fs_untracked, 0, "first_step_slow", "slots, arena",
	 "DataLoader worker"},
	{"first step forward", rec_fs_forward, 0, "first_step_slow", "warm-up", "cuDNN"},
	{"first step data", rec_fs_data, 0, "first_step_slow", "warm-up", "persistent_workers"},
	{"first step device", rec_fs_device, 0, "first_step_slow", "PTX", "torch.cuda"},
	{"session per step", rec_session_per_step, 0, "session_per_iteration", "session",
	 "optimizer"},
	{"sessions, no loop", rec_sessions_no_loop, 0, "session_per_iteration", "session",
	 "runtime context"},
	{"graph snapshots", rec_graph_snapshots, 0, "graph_grows", "finalize", "autograd graph"},
	{"graph per step", rec_graph_build_per_step, 0, "graph_grows", "graph_build phases",
	 "graph construction phases"},
	{"repeated init", rec_repeated_init, 0, "repeated_phase_grows", "default graph",
	 "parameter initialisation"},
	{"retracing", rec_retracing, 0, "repeated_retracing", "reduce_retracing", "mark_dynamic"},
	{"op registration", rec_op_registration, 0, "op_registration_startup", "Op registration",
	 "Operator registration"},
	{"initializer", rec_initializer, 0, "initializer_dominates_init", "Variable initialisers",
	 "meta device"},
	{"alloc churn", rec_alloc, 0, "alloc_count_not_flat", "arena", "caching allocator"},
	{"libraries", rec_libraries, 1000 * MS, "library_load_startup", "TensorFlow", "torchvision"},
	{"share compile", rec_share_compile, 0, "phase_share.compile", "TensorFlow profiler",
	 "TORCHINDUCTOR_CACHE_DIR"},
	{"share alloc", rec_share_alloc, 0, "phase_share.memory_alloc", "arena allocator",
	 "caching allocator"},
	{"share shapes", rec_share_shapes, 0, "phase_share.shape_inference", "shape_inference",
	 "shape propagation"},
	{"share init", rec_share_init, 0, "phase_share.variable_init", "variable_init",
	 "meta device"},
};
#define N_FIXTURES ((int)(sizeof fixtures / sizeof fixtures[0]))

static int finding_has(const pp_finding *f, const char *word)
{
	return strstr(f->title, word) || strstr(f->evidence, word) || strstr(f->fix, word);
}

/* Records fixture x as a PyTorch run (meta key, or none for flow). */
static void record(const struct fixture *x, const char *meta_key)
{
	trec_run(&T, x->label, x->duration_ns);
	if (meta_key && pp_store_set_run_meta(T.st, T.run, meta_key, "installed") != 0)
		fail_msg("cannot set %s", meta_key);
	x->build();
	tdiag_analyze(&T, &R);
}

static void test_torch_runs_speak_torch(void **state)
{
	(void)state;
	for (int i = 0; i < N_FIXTURES; i++) {
		const struct fixture *x = &fixtures[i];
		record(x, "python.adapter.torch");
		const pp_finding *f = tdiag_must(&R, x->rule);
		if (!finding_has(f, x->torch_word)) {
			pp_diag_print(stderr, f, 1, 0);
			fail_msg("%s: %s lacks '%s'", x->label, x->rule, x->torch_word);
		}
		/* every finding of the run, not only the one the fixture is for */
		for (int k = 0; k < R.n; k++) {
			const pp_finding *g = &R.findings[k];
			const char *texts[3] = {g->title, g->evidence, g->fix};
			for (int t = 0; t < 3; t++)
				for (size_t w = 0; w < sizeof tf_words / sizeof tf_words[0]; w++)
					if (has_word(texts[t], tf_words[w])) {
						pp_diag_print(stderr, g, 1, 0);
						fail_msg("%s: %s says '%s' to a PyTorch program", x->label,
							 g->rule, tf_words[w]);
					}
		}
	}
}

static void test_flow_runs_keep_their_words(void **state)
{
	(void)state;
	for (int i = 0; i < N_FIXTURES; i++) {
		const struct fixture *x = &fixtures[i];
		record(x, NULL);
		const pp_finding *f = tdiag_must(&R, x->rule);
		if (!finding_has(f, x->flow_word)) {
			pp_diag_print(stderr, f, 1, 0);
			fail_msg("%s: flow run's %s lacks '%s'", x->label, x->rule, x->flow_word);
		}
	}
}

/* A Lightning program is a PyTorch program, and an adapter that failed to
 * install still means the program imported torch. */
static void test_other_torch_markers(void **state)
{
	(void)state;
	record(&fixtures[0], "python.adapter.pytorch_lightning");
	assert_true(finding_has(tdiag_must(&R, "iteration_time_grows"), "hook"));
	trec_run(&T, "adapter failed", 0);
	assert_int_equal(pp_store_set_run_meta(T.st, T.run, "python.adapter.torch",
					       "failed: RuntimeError: boom"), 0);
	rec_fs_optimizer();
	tdiag_analyze(&T, &R);
	assert_true(finding_has(tdiag_must(&R, "first_step_slow"), "optimizer.step()"));
	/* an adapter of another library alone: not a PyTorch program */
	trec_run(&T, "numpy only", 0);
	assert_int_equal(pp_store_set_run_meta(T.st, T.run, "python.adapter.numpy", "installed"), 0);
	rec_fs_optimizer();
	tdiag_analyze(&T, &R);
	assert_true(finding_has(tdiag_must(&R, "first_step_slow"), "slot"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_torch_runs_speak_torch),
		cmocka_unit_test(test_flow_runs_keep_their_words),
		cmocka_unit_test(test_other_torch_markers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
