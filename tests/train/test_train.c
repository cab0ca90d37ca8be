/*
 * Training end to end: optimiser updates against hand-computed values, lazy
 * slots, an MLP and a small CNN learning separable synthetic data, loss NaN
 * and label-shape errors, safetensors save/load, eager (tape) vs graph with
 * the same seed, and the phases a recording of fit() contains.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flow_train.h"
#include "train_internal.h"
#include "phaseprof.h"
#include "store.h"

static flow_status *S;

#define OK(expr)                                                                   \
	do {                                                                       \
		if ((expr) != 0)                                                   \
			fail_msg("%s: %s", #expr, flow_status_message(S));         \
	} while (0)
#define NN(expr)                                                                   \
	({                                                                         \
		__typeof__(expr) v_ = (expr);                                      \
		if (!v_)                                                           \
			fail_msg("%s: %s", #expr, flow_status_message(S));         \
		v_;                                                                \
	})

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand(void)
{
	double u = urand() + 1e-12, v = urand();
	return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* ---- optimisers against hand-computed values ---- */

static void hand_update(int kind, double *w, double *m, double *v, double g, int t)
{
	const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-7, mu = 0.9, rho = 0.9;
	switch (kind) {
	case FLOW_OPT_SGD:
		*w -= lr * g;
		break;
	case FLOW_OPT_MOMENTUM:
		*m = mu * *m - lr * g;
		*w += *m;
		break;
	case FLOW_OPT_RMSPROP:
		*m = rho * *m + (1 - rho) * g * g;
		*w -= lr * g / sqrt(*m + eps);
		break;
	case FLOW_OPT_ADAM: {
		*m = b1 * *m + (1 - b1) * g;
		*v = b2 * *v + (1 - b2) * g * g;
		double lrt = lr * sqrt(1 - pow(b2, t)) / (1 - pow(b1, t));
		*w -= lrt * *m / (sqrt(*v) + eps);
		break;
	}
	}
}

static void test_optimizer_updates(void **state)
{
	(void)state;
	for (int kind = FLOW_OPT_SGD; kind <= FLOW_OPT_ADAM; kind++) {
		flow_graph *g = flow_graph_new();
		float w0[3] = {1.0f, -2.0f, 0.5f};
		/* loss = sum(w*w*c) so the gradient 2*w*c changes every step */
		float c[3] = {0.5f, 1.5f, -1.0f};
		int64_t d = 3;
		flow_tensor *tc = flow_tensor_from_data(FLOW_F32, 1, &d, c, S);
		flow_graph_free(g);
		g = flow_graph_new();
		flow_tensor *tw = flow_tensor_from_data(FLOW_F32, 1, &d, w0, S);
		flow_output wv = flow_variable(g, "w", flow_const(g, NULL, tw, S), S);
		flow_tensor_unref(tw);
		flow_output cc = flow_const(g, NULL, tc, S);
		flow_tensor_unref(tc);
		flow_output in[2] = {wv, wv};
		flow_output sq = flow_simple(g, "Mul", NULL, in, 2, S);
		flow_output in2[2] = {sq, cc};
		flow_output prod = flow_simple(g, "Mul", NULL, in2, 2, S);
		flow_output loss = flow_simple(g, "_SumAll", NULL, &prod, 1, S), grad;
		assert_non_null(loss.op);
		OK(flow_gradients(g, &loss, 1, NULL, &wv, 1, &grad, S));
		flow_optimizer_options oo = flow_optimizer_defaults(kind);
		oo.learning_rate = 0.1;
		flow_optimizer *opt = NN(flow_optimizer_new(&oo, S));
		assert_int_equal(flow_optimizer_num_slots(opt), 0);   /* lazy */
		flow_op *train = NN(flow_optimizer_apply(opt, g, &grad, &wv, 1, S));
		assert_int_equal(flow_optimizer_num_slots(opt), flow_optimizer_slots_per_var(opt));
		flow_session *s = NN(flow_session_new(g, NULL, S));
		flow_op *init = NN(flow_global_variables_initializer(g, S));
		OK(flow_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, S));
		double hw[3], hm[3] = {0}, hv[3] = {0};
		for (int i = 0; i < 3; i++)
			hw[i] = w0[i];
		for (int t = 1; t <= 4; t++) {
			OK(flow_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &train, 1, S));
			for (int i = 0; i < 3; i++)
				hand_update(kind, &hw[i], &hm[i], &hv[i], 2 * hw[i] * c[i], t);
			flow_tensor *cur = NN(flow_session_variable_value(s, wv.op, S));
			for (int i = 0; i < 3; i++)
				if (fabs(flow_tensor_get(cur, i) - hw[i]) > 1e-5 * (1 + fabs(hw[i])))
					fail_msg("%s step %d w[%d]: flow %.8f, hand %.8f",
						 flow_optimizer_name(kind), t, i, flow_tensor_get(cur, i),
						 hw[i]);
			flow_tensor_unref(cur);
		}
		/* The plain-array update (what the eager optimiser runs) agrees. */
		float ew[3], em[3] = {0}, ev[3] = {0};
		double dw[3], dm[3] = {0}, dv[3] = {0};
		for (int i = 0; i < 3; i++)
			ew[i] = w0[i], dw[i] = w0[i];
		for (int t = 1; t <= 3; t++) {
			float gg[3];
			for (int i = 0; i < 3; i++) {
				gg[i] = 2 * ew[i] * c[i];
				hand_update(kind, &dw[i], &dm[i], &dv[i], 2 * dw[i] * c[i], t);
			}
			flow_optimizer_update_f32(&oo, t, ew, em, ev, gg, 3);
		}
		for (int i = 0; i < 3; i++)
			assert_float_equal(ew[i], dw[i], 1e-5 * (1 + fabs(dw[i])));
		flow_optimizer_free(opt);
		flow_session_free(s);
		flow_graph_free(g);
	}
}

/* ---- data ---- */

/* n examples of dim features in `classes` separable Gaussian clusters. */
static void clusters(int n, int dim, int classes, uint64_t seed, flow_tensor **x, flow_tensor **y)
{
	uint64_t keep = rng;
	rng = 0x1234567ull;
	float *centers = malloc(sizeof(float) * (size_t)(classes * dim));
	for (int i = 0; i < classes * dim; i++)
		centers[i] = (float)nrand();
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	int64_t xd[2] = {n, dim}, yd[1] = {n};
	*x = flow_tensor_new(FLOW_F32, 2, xd, S);
	*y = flow_tensor_new(FLOW_I32, 1, yd, S);
	float *xp = flow_tensor_data(*x);
	int32_t *yp = flow_tensor_data(*y);
	for (int i = 0; i < n; i++) {
		int c = (int)(urand() * classes) % classes;
		yp[i] = c;
		for (int j = 0; j < dim; j++)
			xp[i * dim + j] = centers[c * dim + j] + 1.5f * (float)nrand();
	}
	free(centers);
	rng = keep;
}

/* 12x12x1 images: a bright 3x3 blob in one of four quadrants, plus noise. */
static void blobs(int n, uint64_t seed, flow_tensor **x, flow_tensor **y)
{
	rng = seed * 0x9e3779b97f4a7c15ull + 7;
	int64_t xd[4] = {n, 12, 12, 1}, yd[1] = {n};
	*x = flow_tensor_new(FLOW_F32, 4, xd, S);
	*y = flow_tensor_new(FLOW_I32, 1, yd, S);
	float *xp = flow_tensor_data(*x);
	int32_t *yp = flow_tensor_data(*y);
	for (int i = 0; i < n; i++) {
		int c = (int)(urand() * 4) % 4;
		yp[i] = c;
		for (int k = 0; k < 144; k++)
			xp[i * 144 + k] = (float)(0.3 * nrand());
		int oy = (c / 2) * 6 + 1 + (int)(urand() * 3), ox = (c % 2) * 6 + 1 + (int)(urand() * 3);
		for (int a = 0; a < 3; a++)
			for (int b = 0; b < 3; b++)
				xp[i * 144 + (oy + a) * 12 + ox + b] += 1.5f;
	}
}

static int mlp_act = FLOW_ACT_RELU;
static flow_model *mlp(uint64_t seed, int hidden, int slots_up_front, int kind)
{
	flow_model_options mo = {.seed = seed, .op_timing = -1};
	flow_model *m = NN(flow_model_sequential(&mo));
	OK(flow_model_add(m, flow_layer_dense(hidden, mlp_act, "glorot_uniform", "zeros"), S));
	OK(flow_model_add(m, flow_layer_dense(10, FLOW_ACT_SOFTMAX, NULL, NULL), S));
	int64_t in = 784;
	flow_shape is = flow_shape_make(1, &in);
	OK(flow_model_build(m, FLOW_F32, &is, S));
	flow_optimizer_options oo = flow_optimizer_defaults(kind);
	oo.slots_up_front = slots_up_front;
	OK(flow_model_compile(m, "sparse_categorical_crossentropy", &oo, S));
	return m;
}

/* MLP 784 -> 1024 -> 10 with Adam: >= 95% held-out accuracy within 40
 * steps of batch 64 on 10 Gaussian clusters (noise 1.5 per feature). */
static void test_mlp_adam_learns(void **state)
{
	(void)state;
	flow_tensor *x, *y, *tx, *ty;
	clusters(1024, 784, 10, 1, &x, &y);
	clusters(512, 784, 10, 2, &tx, &ty);
	flow_model *m = mlp(42, 1024, 0, FLOW_OPT_ADAM);
	assert_int_equal(flow_model_num_weights(m), 814090);
	double l0, a0;
	OK(flow_model_evaluate(m, tx, ty, 256, &l0, &a0, S));
	flow_fit_result r;
	OK(flow_model_fit(m, x, y, 64, 40, &r, S));
	double l1, a1;
	OK(flow_model_evaluate(m, tx, ty, 256, &l1, &a1, S));
	printf("mlp: held-out loss %.3f -> %.3f, accuracy %.3f -> %.3f; first step %.1f ms, "
	       "median %.1f ms\n", l0, l1, a0, a1, r.first_step_ns / 1e6, r.median_step_ns / 1e6);
	assert_int_equal(r.steps, 40);
	assert_true(a1 >= 0.95);
	assert_true(l1 < l0 / 4);
	/* Adam's two slots per variable were created on the first step. */
	assert_int_equal(flow_optimizer_num_slots(flow_model_optimizer(m)), 8);
	/* predict is softmax: rows sum to 1 */
	flow_tensor *p = NN(flow_model_predict(m, tx, S));
	assert_int_equal(flow_tensor_dim(p, 1), 10);
	double s = 0;
	for (int j = 0; j < 10; j++)
		s += flow_tensor_get(p, j);
	assert_float_equal(s, 1.0, 1e-4);
	flow_tensor_unref(p);
	flow_model_free(m);
	flow_tensor_unref(x), flow_tensor_unref(y), flow_tensor_unref(tx), flow_tensor_unref(ty);
}

/* Conv(8,3x3,same,relu) -> MaxPool 2 -> Flatten -> Dropout -> Dense(4):
 * >= 90% on held-out blobs within 60 steps of batch 32. */
static void test_cnn_learns(void **state)
{
	(void)state;
	flow_tensor *x, *y, *tx, *ty;
	blobs(640, 1, &x, &y);
	blobs(256, 2, &tx, &ty);
	flow_model_options mo = {.seed = 3, .op_timing = -1};
	flow_model *m = NN(flow_model_sequential(&mo));
	OK(flow_model_add(m, flow_layer_conv2d(8, 3, 3, 1, "same", FLOW_ACT_RELU, "he_uniform"), S));
	OK(flow_model_add(m, flow_layer_maxpool2d(2, 2), S));
	OK(flow_model_add(m, flow_layer_flatten(), S));
	OK(flow_model_add(m, flow_layer_dropout(0.1), S));
	OK(flow_model_add(m, flow_layer_dense(4, FLOW_ACT_NONE, NULL, NULL), S));
	int64_t in[3] = {12, 12, 1};
	flow_shape is = flow_shape_make(3, in);
	OK(flow_model_build(m, FLOW_F32, &is, S));
	flow_optimizer_options oo = flow_optimizer_defaults(FLOW_OPT_ADAM);
	oo.learning_rate = 0.01;
	OK(flow_model_compile(m, "sparse_categorical_crossentropy", &oo, S));
	flow_fit_result r;
	OK(flow_model_fit(m, x, y, 32, 60, &r, S));
	double l, a;
	OK(flow_model_evaluate(m, tx, ty, 64, &l, &a, S));
	printf("cnn: loss %.3f -> %.3f (train batches), held-out accuracy %.3f\n", r.first_loss,
	       r.last_loss, a);
	assert_true(a >= 0.9);
	flow_model_free(m);
	flow_tensor_unref(x), flow_tensor_unref(y), flow_tensor_unref(tx), flow_tensor_unref(ty);
}

/* SGD/momentum/RMSprop also train the MLP (smaller hidden layer). */
static void test_other_optimizers_learn(void **state)
{
	(void)state;
	flow_tensor *x, *y;
	clusters(512, 784, 10, 5, &x, &y);
	for (int kind = FLOW_OPT_SGD; kind < FLOW_OPT_ADAM; kind++) {
		flow_model *m = mlp(7, 64, kind == FLOW_OPT_RMSPROP, kind);
		double l0, a0, l1, a1;
		OK(flow_model_evaluate(m, x, y, 512, &l0, &a0, S));
		OK(flow_model_fit(m, x, y, 48, 30, NULL, S));   /* 512 % 48 != 0: batches wrap */
		OK(flow_model_evaluate(m, x, y, 512, &l1, &a1, S));
		printf("%s: loss %.3f -> %.3f, accuracy %.3f\n", flow_optimizer_name(kind), l0, l1, a1);
		assert_true(l1 < l0 * 0.7);
		assert_true(a1 > 0.8);
		flow_model_free(m);
	}
	flow_tensor_unref(x), flow_tensor_unref(y);
}

/* NaN in the data: fit stops with the step number, the model stays usable. */
static void test_nan_loss(void **state)
{
	(void)state;
	flow_tensor *x, *y;
	clusters(256, 784, 10, 3, &x, &y);
	((float *)flow_tensor_data(x))[2 * 64 * 784 + 5] = NAN;   /* a row of batch 2 */
	mlp_act = FLOW_ACT_TANH;   /* (Relu maps NaN to 0 and would hide it) */
	flow_model *m = mlp(1, 32, 0, FLOW_OPT_ADAM);
	mlp_act = FLOW_ACT_RELU;
	flow_fit_result r;
	assert_int_equal(flow_model_fit(m, x, y, 64, 5, &r, S), -1);
	assert_non_null(strstr(flow_status_message(S), "loss is NaN at step 2"));
	assert_int_equal(r.steps, 2);
	flow_status_clear(S);
	flow_model_free(m);
	flow_tensor_unref(x), flow_tensor_unref(y);
}

static void test_bad_labels(void **state)
{
	(void)state;
	flow_tensor *x, *y, *x2, *y2;
	clusters(64, 784, 10, 3, &x, &y);
	clusters(32, 784, 10, 3, &x2, &y2);
	flow_model *m = mlp(1, 16, 0, FLOW_OPT_SGD);
	/* 64 examples, 32 labels */
	assert_int_equal(flow_model_fit(m, x, y2, 16, 1, NULL, S), -1);
	assert_non_null(strstr(flow_status_message(S), "labels"));
	flow_status_clear(S);
	/* f32 one-hot labels with a sparse loss */
	int64_t d[2] = {64, 10};
	flow_tensor *oh = flow_tensor_new(FLOW_F32, 2, d, S);
	assert_int_equal(flow_model_fit(m, x, oh, 16, 1, NULL, S), -1);
	assert_non_null(strstr(flow_status_message(S), "labels"));
	flow_status_clear(S);
	/* wrong feature count */
	int64_t xd[2] = {8, 100};
	flow_tensor *bx = flow_tensor_new(FLOW_F32, 2, xd, S);
	assert_null(flow_model_predict(m, bx, S));
	assert_non_null(strstr(flow_status_message(S), "8x100"));
	flow_status_clear(S);
	/* label value out of range fails in the kernel, naming the row */
	((int32_t *)flow_tensor_data(y))[3] = 12;
	assert_int_equal(flow_model_fit(m, x, y, 64, 1, NULL, S), -1);
	assert_non_null(strstr(flow_status_message(S), "label"));
	assert_non_null(strstr(flow_status_message(S), "12"));
	flow_status_clear(S);
	/* nothing trained is lost: evaluate still runs */
	((int32_t *)flow_tensor_data(y))[3] = 1;
	double l, a;
	OK(flow_model_evaluate(m, x, y, 64, &l, &a, S));
	flow_model_free(m);
	flow_tensor_unref(oh), flow_tensor_unref(bx);
	flow_tensor_unref(x), flow_tensor_unref(y), flow_tensor_unref(x2), flow_tensor_unref(y2);
}

static void test_save_load(void **state)
{
	(void)state;
	char path[] = "/tmp/flow_train_wXXXXXX.safetensors";
	int fd = mkstemps(path, 12);
	assert_true(fd >= 0);
	close(fd);
	flow_tensor *x, *y;
	clusters(128, 784, 10, 9, &x, &y);
	flow_model *a = mlp(11, 32, 0, FLOW_OPT_ADAM), *b = mlp(12, 32, 0, FLOW_OPT_ADAM);
	OK(flow_model_fit(a, x, y, 64, 3, NULL, S));
	OK(flow_model_save_weights(a, path, S));
	flow_tensor *pa = NN(flow_model_predict(a, x, S)), *pb0 = NN(flow_model_predict(b, x, S));
	OK(flow_model_load_weights(b, path, S));
	flow_tensor *pb = NN(flow_model_predict(b, x, S));
	int differ = 0;
	for (int64_t i = 0; i < flow_tensor_nelem(pa); i++) {
		assert_float_equal(flow_tensor_get(pa, i), flow_tensor_get(pb, i), 1e-6);
		differ |= fabs(flow_tensor_get(pa, i) - flow_tensor_get(pb0, i)) > 1e-4;
	}
	assert_true(differ);   /* the load changed something */
	/* A truncated file is refused with the file named; weights unchanged. */
	assert_int_equal(truncate(path, 200), 0);
	assert_int_equal(flow_model_load_weights(b, path, S), -1);
	assert_non_null(strstr(flow_status_message(S), path));
	flow_status_clear(S);
	/* A model of another shape is refused naming the tensor. */
	OK(flow_model_save_weights(a, path, S));
	flow_model *c = mlp(1, 16, 0, FLOW_OPT_ADAM);
	assert_int_equal(flow_model_load_weights(c, path, S), -1);
	assert_non_null(strstr(flow_status_message(S), "dense_1/kernel"));
	flow_status_clear(S);
	flow_tensor *pb2 = NN(flow_model_predict(b, x, S));
	for (int64_t i = 0; i < flow_tensor_nelem(pa); i++)
		assert_float_equal(flow_tensor_get(pb2, i), flow_tensor_get(pb, i), 0);
	/* The naive text format round-trips too (the model-init scenario's slow path). */
	char tpath[] = "/tmp/flow_train_wXXXXXX.txt";
	fd = mkstemps(tpath, 4);
	close(fd);
	OK(flow_model_save_weights(a, tpath, S));
	flow_model *d2 = mlp(99, 32, 0, FLOW_OPT_ADAM);
	OK(flow_model_load_weights(d2, tpath, S));
	flow_tensor *pd = NN(flow_model_predict(d2, x, S));
	for (int64_t i = 0; i < flow_tensor_nelem(pa); i++)
		assert_float_equal(flow_tensor_get(pd, i), flow_tensor_get(pa, i), 1e-5);
	flow_tensor_unref(pd);
	flow_model_free(d2);
	unlink(tpath);
	flow_tensor_unref(pa), flow_tensor_unref(pb), flow_tensor_unref(pb0), flow_tensor_unref(pb2);
	flow_model_free(a), flow_model_free(b), flow_model_free(c);
	flow_tensor_unref(x), flow_tensor_unref(y);
	unlink(path);
}

/* Eager (tape) and graph training give the same numbers from the same
 * initial weights (the graph model's, seed 5) on the same batches. */
static void test_eager_matches_graph(void **state)
{
	(void)state;
	flow_tensor *x, *y;
	clusters(192, 784, 10, 4, &x, &y);
	flow_model *m = mlp(5, 64, 0, FLOW_OPT_ADAM);
	/* Eager variables from the same initialisers and seeds as the model's
	 * layers (seed + 2*layer for kernels, + 1 for biases). */
	int64_t shapes[4][2] = {{784, 64}, {64, 0}, {64, 10}, {10, 0}};
	static const char *const kinds[4] = {"glorot_uniform", "zeros", "glorot_uniform", "zeros"};
	flow_tensor *w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = NN(flow_eager_initializer(kinds[i], shapes[i][1] ? 2 : 1, shapes[i],
						 5 + (uint64_t)i, S));
		flow_tensor *v = NN(flow_model_param_value(m, i, S));
		for (int64_t k = 0; k < flow_tensor_nelem(v); k++)
			assert_float_equal(flow_tensor_get(v, k), flow_tensor_get(w[i], k), 0);
		flow_tensor_unref(v);
	}
	flow_fit_result r;
	OK(flow_model_fit(m, x, y, 64, 3, &r, S));
	flow_optimizer *opt = NN(flow_optimizer_new(NULL, S));   /* Adam defaults */
	flow_tape *tp = NN(flow_tape_new());
	double eager_loss = 0;
	for (int step = 0; step < 3; step++) {
		int64_t xd[2] = {64, 784}, yd[1] = {64};
		flow_tensor *bx = flow_tensor_from_data(
			FLOW_F32, 2, xd, (float *)flow_tensor_data(x) + step * 64 * 784, S);
		flow_tensor *by = flow_tensor_from_data(
			FLOW_I32, 1, yd, (int32_t *)flow_tensor_data(y) + step * 64, S);
		for (int i = 0; i < 4; i++)
			flow_tape_watch(tp, w[i]);
		flow_tape_begin(tp);
		flow_tensor *h = NN(flow_eager_matmul(bx, w[0], 0, 0, S));
		flow_tensor *hb = NN(flow_eager_binary("BiasAdd", h, w[1], S));
		flow_tensor *hr = NN(flow_eager_unary("Relu", hb, S));
		flow_tensor *lg = NN(flow_eager_matmul(hr, w[2], 0, 0, S));
		flow_tensor *lb = NN(flow_eager_binary("BiasAdd", lg, w[3], S));
		flow_tensor *loss = NN(flow_eager_sparse_xent_mean(lb, by, S));
		flow_tape_end(tp);
		flow_tensor *gr[4];
		OK(flow_tape_gradient(tp, loss, w, 4, gr, S));
		OK(flow_optimizer_apply_eager(opt, w, gr, 4, S));
		eager_loss = flow_tensor_get(loss, 0);
		if (step == 0)
			assert_float_equal(eager_loss, r.first_loss, 1e-5 * (1 + fabs(r.first_loss)));
		for (int i = 0; i < 4; i++)
			flow_tensor_unref(gr[i]);
		flow_tensor *tmp[] = {bx, by, h, hb, hr, lg, lb, loss};
		for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++)
			flow_tensor_unref(tmp[i]);
	}
	assert_float_equal(eager_loss, r.last_loss, 1e-4 * (1 + fabs(r.last_loss)));
	assert_true(flow_tape_cache_size() > 0);
	for (int i = 0; i < 4; i++) {
		flow_tensor *gv = NN(flow_model_param_value(m, i, S));
		double worst = 0;
		for (int64_t k = 0; k < flow_tensor_nelem(gv); k++) {
			double d = fabs(flow_tensor_get(gv, k) - flow_tensor_get(w[i], k));
			worst = d > worst ? d : worst;
		}
		if (worst > 1e-5)
			fail_msg("param %d: eager and graph differ by %g", i, worst);
		flow_tensor_unref(gv);
		flow_tensor_unref(w[i]);
	}
	flow_tape_free(tp);
	flow_optimizer_free(opt);
	flow_model_free(m);
	flow_tensor_unref(x), flow_tensor_unref(y);
}

/* The tape: list inputs (AddN), fan-out, ops on unwatched tensors not
 * recorded (their sources get zeros), a Sigmoid whose gradient needs its
 * output, and a refusal naming an op without a gradient. */
static void test_tape_basics(void **state)
{
	(void)state;
	int64_t d[1] = {3};
	float av[3] = {1, -2, 0.5f}, bv[3] = {3, 4, -1};
	flow_tensor *a = flow_tensor_from_data(FLOW_F32, 1, d, av, S);
	flow_tensor *b = flow_tensor_from_data(FLOW_F32, 1, d, bv, S);
	flow_tensor *u = flow_tensor_from_data(FLOW_F32, 1, d, bv, S);
	flow_tape *tp = NN(flow_tape_new());
	flow_tape_watch(tp, a);
	flow_tape_watch(tp, b);
	flow_tape_begin(tp);
	flow_tensor *c = NN(flow_eager_binary("Mul", a, b, S));      /* a*b */
	flow_tensor *sg = NN(flow_eager_unary("Sigmoid", a, S));     /* sigmoid(a) */
	flow_tensor *uu = NN(flow_eager_binary("Mul", u, u, S));     /* unwatched: not recorded */
	flow_op_desc *dd = flow_eager_new("AddN");
	flow_tensor *list[3] = {c, a, sg};
	flow_op_add_tensor_list(dd, list, 3);
	flow_tensor *sum = NULL;
	OK(flow_tape_execute(dd, &sum, 1, S));
	flow_tensor *loss = NN(flow_eager_unary("_SumAll", sum, S));
	flow_tape_end(tp);
	flow_tensor *src[3] = {a, b, u}, *gr[3];
	OK(flow_tape_gradient(tp, loss, src, 3, gr, S));
	for (int i = 0; i < 3; i++) {
		double s = 1 / (1 + exp(-av[i]));
		assert_float_equal(flow_tensor_get(gr[0], i), bv[i] + 1 + s * (1 - s), 1e-5);
		assert_float_equal(flow_tensor_get(gr[1], i), av[i], 1e-6);
		assert_float_equal(flow_tensor_get(gr[2], i), 0, 0);
	}
	for (int i = 0; i < 3; i++)
		flow_tensor_unref(gr[i]);
	/* An op without a gradient on the tape is named. */
	flow_tape_watch(tp, a);
	flow_tape_begin(tp);
	flow_tensor *fl = NN(flow_eager_unary("Floor", a, S));
	flow_tensor *l2 = NN(flow_eager_unary("_SumAll", fl, S));
	flow_tape_end(tp);
	assert_int_equal(flow_tape_gradient(tp, l2, &a, 1, gr, S), -1);
	assert_non_null(strstr(flow_status_message(S), "Floor"));
	assert_null(gr[0]);
	flow_tensor *tmp[] = {a, b, u, c, sg, uu, sum, loss, fl, l2};
	for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++)
		flow_tensor_unref(tmp[i]);
	flow_tape_free(tp);
}

/* A recording of fit() has gradient_build, optimizer_setup, compile, one
 * first_step and a step per iteration. */
static int clear_status(void **state)
{
	(void)state;
	flow_status_clear(S);
	return 0;
}

static int count_kind(pp_span_list *l, int kind)
{
	int n = 0;
	for (int i = 0; i < l->n; i++)
		n += l->rows[i].kind == kind;
	return n;
}

static void test_phases_recorded(void **state)
{
	(void)state;
	char spool[] = "/tmp/flow_train_phasesXXXXXX", db[64];
	int fd = mkstemp(spool);
	close(fd);
	snprintf(db, sizeof db, "%s.db", spool);
	pp_options po = {.spool_path = spool, .label = "train-test"};
	assert_int_equal(pp_open(&po), 0);
	flow_tensor *x, *y;
	clusters(128, 784, 10, 6, &x, &y);
	flow_model *m = mlp(2, 32, 0, FLOW_OPT_ADAM);
	OK(flow_model_fit(m, x, y, 32, 5, NULL, S));
	flow_model_free(m);
	assert_int_equal(pp_close(), 0);
	char err[256];
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	if (!st)
		fail_msg("store: %s", err);
	pp_ingest_result res;
	assert_int_equal(pp_store_ingest(st, spool, NULL, &res, err, sizeof err), 0);
	pp_span_list l;
	assert_int_equal(pp_store_spans(st, res.run_id, -1, &l), 0);
	assert_int_equal(count_kind(&l, PP_FIRST_STEP), 1);
	assert_int_equal(count_kind(&l, PP_STEP), 5);
	assert_int_equal(count_kind(&l, PP_GRADIENT_BUILD), 1);
	assert_true(count_kind(&l, PP_OPTIMIZER_SETUP) >= 1);
	assert_true(count_kind(&l, PP_COMPILE) >= 1);
	/* the gradient build and slot creation happen inside the first step */
	int64_t fs0 = 0, fs1 = 0, steps[5], ns = 0;
	for (int i = 0; i < l.n; i++) {
		if (l.rows[i].kind == PP_FIRST_STEP)
			fs0 = l.rows[i].start_ns, fs1 = l.rows[i].end_ns;
		if (l.rows[i].kind == PP_STEP && ns < 5)
			steps[ns++] = l.rows[i].step;
	}
	for (int i = 0; i < l.n; i++)
		if (l.rows[i].kind == PP_GRADIENT_BUILD)
			assert_true(l.rows[i].start_ns >= fs0 && l.rows[i].end_ns <= fs1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(steps[i], i);
	pp_span_list_free(&l);
	pp_store_close(st, err, sizeof err);
	unlink(spool);
	unlink(db);
	flow_tensor_unref(x), flow_tensor_unref(y);
}

static int has_span(pp_span_list *l, int kind, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (l->rows[i].kind == kind && !strcmp(l->rows[i].name, name))
			return 1;
	return 0;
}

/* Initialisers are demo/flow/ops' Initializer (flow_train registers no twin)
 * under its seed rule: a seeded model is the same every build, seed 0 is
 * unseeded in every layer. */
static void test_initializer_seeds(void **state)
{
	(void)state;
	assert_false(train_op_exists("_Initializer"));
	assert_true(train_op_exists("Initializer"));
	flow_model *m[4] = {mlp(3, 16, 0, FLOW_OPT_SGD), mlp(3, 16, 0, FLOW_OPT_SGD),
			    mlp(0, 16, 0, FLOW_OPT_SGD), mlp(0, 16, 0, FLOW_OPT_SGD)};
	for (int p = 0; p < 4; p += 2) {   /* the two kernels (the biases are zeros) */
		flow_tensor *v[4];
		for (int k = 0; k < 4; k++)
			v[k] = NN(flow_model_param_value(m[k], p, S));
		int seeded_same = 1, unseeded_differ = 0;
		for (int64_t i = 0; i < flow_tensor_nelem(v[0]); i++) {
			seeded_same &= flow_tensor_get(v[0], i) == flow_tensor_get(v[1], i);
			unseeded_differ |= flow_tensor_get(v[2], i) != flow_tensor_get(v[3], i);
		}
		assert_true(seeded_same);
		assert_true(unseeded_differ);
		for (int k = 0; k < 4; k++)
			flow_tensor_unref(v[k]);
	}
	for (int k = 0; k < 4; k++)
		flow_model_free(m[k]);
}

/* flow_model_warmup: the training graph, slots and compile land in a
 * "warmup" span, the loop's steps start at 0 after it; each variable's
 * initialiser is a variable_init phase "<initializer>:<variable>". */
static void test_warmup_recorded(void **state)
{
	(void)state;
	char spool[] = "/tmp/flow_train_warmupXXXXXX", db[64];
	int fd = mkstemp(spool);
	close(fd);
	snprintf(db, sizeof db, "%s.db", spool);
	pp_options po = {.spool_path = spool, .label = "train-warmup"};
	assert_int_equal(pp_open(&po), 0);
	flow_tensor *x, *y;
	clusters(96, 784, 10, 6, &x, &y);
	flow_model *m = mlp(2, 32, 1, FLOW_OPT_ADAM);
	assert_int_equal(flow_optimizer_num_slots(flow_model_optimizer(m)), 8);   /* up front */
	OK(flow_model_warmup(m, x, y, S));
	assert_int_equal(flow_model_steps(m), 0);
	OK(flow_model_fit(m, x, y, 32, 3, NULL, S));
	assert_int_equal(flow_model_steps(m), 3);
	flow_model_free(m);
	assert_int_equal(pp_close(), 0);
	char err[256];
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	if (!st)
		fail_msg("store: %s", err);
	pp_ingest_result res;
	assert_int_equal(pp_store_ingest(st, spool, NULL, &res, err, sizeof err), 0);
	pp_span_list l;
	assert_int_equal(pp_store_spans(st, res.run_id, -1, &l), 0);
	assert_true(has_span(&l, PP_SPAN, "warmup"));
	assert_true(has_span(&l, PP_VARIABLE_INIT, "glorot_uniform:dense_1/kernel"));
	assert_true(has_span(&l, PP_VARIABLE_INIT, "zeros:dense_1/bias"));
	assert_int_equal(count_kind(&l, PP_STEP), 3);
	int64_t w0 = 0, w1 = 0;
	for (int i = 0; i < l.n; i++)
		if (l.rows[i].kind == PP_SPAN && !strcmp(l.rows[i].name, "warmup"))
			w0 = l.rows[i].start_ns, w1 = l.rows[i].end_ns;
	for (int i = 0; i < l.n; i++) {
		if (l.rows[i].kind == PP_GRADIENT_BUILD)
			assert_true(l.rows[i].start_ns >= w0 && l.rows[i].end_ns <= w1);
		if (l.rows[i].kind == PP_STEP)
			assert_true(l.rows[i].start_ns >= w1);
		/* slots up front: optimizer_setup happens before the warm-up */
		if (l.rows[i].kind == PP_OPTIMIZER_SETUP)
			assert_true(l.rows[i].end_ns <= w0);
	}
	pp_span_list_free(&l);
	pp_store_close(st, err, sizeof err);
	unlink(spool);
	unlink(db);
	flow_tensor_unref(x), flow_tensor_unref(y);
}

int main(void)
{
	S = flow_status_new();
	if (flow_train_init(S)) {
		fprintf(stderr, "flow_train_init: %s\n", flow_status_message(S));
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_optimizer_updates, clear_status),
		cmocka_unit_test_setup(test_mlp_adam_learns, clear_status),
		cmocka_unit_test_setup(test_cnn_learns, clear_status),
		cmocka_unit_test_setup(test_other_optimizers_learn, clear_status),
		cmocka_unit_test_setup(test_nan_loss, clear_status),
		cmocka_unit_test_setup(test_bad_labels, clear_status),
		cmocka_unit_test_setup(test_save_load, clear_status),
		cmocka_unit_test_setup(test_eager_matches_graph, clear_status),
		cmocka_unit_test_setup(test_tape_basics, clear_status),
		cmocka_unit_test_setup(test_phases_recorded, clear_status),
		cmocka_unit_test_setup(test_warmup_recorded, clear_status),
		cmocka_unit_test_setup(test_initializer_seeds, clear_status),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	flow_status_free(S);
	return rc;
}
