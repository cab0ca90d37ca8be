/* Op library: kernels against reference computations (incl. broadcasting),
 * error messages for bad inputs, registration counts. Ops run eagerly
 * (flow_execute), i.e. through the same registry, shape functions and
 * kernels as sessions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flow.h"
#include "flow_internal.h"
#include "random.h"
#include "weights.h"

static flow_status *st;

/* ---- helpers ---- */
static flow_tensor *tf32(int nd, const int64_t *d, const float *v)
{
	flow_tensor *t = flow_tensor_from_data(FLOW_F32, nd, d, v, st);
	assert_non_null(t);
	return t;
}
static flow_tensor *tdt(flow_dtype dt, int nd, const int64_t *d, const void *v)
{
	flow_tensor *t = flow_tensor_from_data(dt, nd, d, v, st);
	assert_non_null(t);
	return t;
}
static flow_tensor *ti32v(int n, const int32_t *v)
{
	int64_t d = n;
	return tdt(FLOW_I32, 1, &d, v);
}
static flow_tensor *scal_i32(int32_t v) { return flow_tensor_scalar_i32(v); }

/* Runs d with inputs (references consumed), n_out outputs; returns 0 or
 * -1 with the message in st. */
static int run(flow_op_desc *d, flow_tensor **in, int n_in, flow_tensor **out, int n_out)
{
	for (int i = 0; i < n_in; i++) {
		flow_op_add_tensor(d, in[i]);
		flow_tensor_unref(in[i]);
	}
	flow_status_clear(st);
	return flow_execute(d, out, n_out, st);
}

/* One-output convenience. */
static flow_tensor *op1(const char *type, flow_tensor *a, flow_tensor *b)
{
	flow_op_desc *d = flow_eager_new(type);
	flow_tensor *in[2] = {a, b}, *out = NULL;
	if (run(d, in, b ? 2 : 1, &out, 1))
		return NULL;
	return out;
}

static void expect_fail(flow_op_desc *d, flow_tensor **in, int n_in, int n_out, const char *msg)
{
	flow_tensor *out[4] = {0};
	int rc = run(d, in, n_in, out, n_out);
	if (rc == 0 || !strstr(flow_status_message(st), msg)) {
		print_error("expected failure containing \"%s\", got rc %d: %s\n", msg, rc, flow_status_message(st));
		fail();
	}
}

static void close_f(const float *a, const float *b, int64_t n, float tol)
{
	for (int64_t i = 0; i < n; i++) {
		float d = fabsf(a[i] - b[i]), s = fabsf(b[i]) > 1 ? fabsf(b[i]) : 1;
		if (!(d <= tol * s) && !(isnan(a[i]) && isnan(b[i]))) {
			print_error("element %lld: got %.9g, want %.9g\n", (long long)i, a[i], b[i]);
			fail();
		}
	}
}

static int setup(void **state)
{
	(void)state;
	st = flow_status_new();
	flow_init_options o = {0};
	o.registration = FLOW_REGISTER_FULL;
	return flow_init(&o, st);
}

static int teardown(void **state)
{
	(void)state;
	flow_status_free(st);
	flow_shutdown();
	return 0;
}

/* ---- registration ---- */
static void test_registry(void **state)
{
	(void)state;
	flow_registry_stats s;
	flow_registry_stats_get(&s);
	/* every linked op validated at init (FULL); this library alone has > 150 */
	assert_true(s.ops_registered == s.ops_known);
	assert_true(s.ops_known >= 170);
	assert_true(s.kernels_known >= 450);
	const char *mine[] = {"MatMul", "BatchMatMulV2", "Conv2D", "MaxPool", "StridedSlice", "GatherV2",
			      "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits", "Where",
			      "RandomUniform", "TruncatedNormal", "Initializer", "LoadWeight", "AddN", "Gelu"};
	for (size_t i = 0; i < sizeof mine / sizeof *mine; i++) {
		const flow_registered_op *r = flow_registry_lookup(mine[i], st);
		assert_non_null(r);
		assert_true(r->n_kernels >= 1);
	}
	assert_null(flow_registry_lookup("NoSuchOp", st));
}

/* ---- unary ---- */
typedef struct { const char *op; double (*f)(double); double lo, hi; } uref;
static double r_neg(double x) { return -x; }
static double r_sq(double x) { return x * x; }
static double r_rsqrt(double x) { return 1 / sqrt(x); }
static double r_recip(double x) { return 1 / x; }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_relu6(double x) { return x < 0 ? 0 : x > 6 ? 6 : x; }
static double r_elu(double x) { return x > 0 ? x : exp(x) - 1; }
static double r_selu(double x) { return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * (exp(x) - 1)); }
static double r_softplus(double x) { return log(1 + exp(x)); }
static double r_softsign(double x) { return x / (1 + fabs(x)); }
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2))); }
static double r_silu(double x) { return x / (1 + exp(-x)); }
static double r_leaky(double x) { return x > 0 ? x : 0.2 * x; }
static double r_sign(double x) { return (x > 0) - (x < 0); }
static double r_mish(double x) { return x * tanh(log(1 + exp(x))); }

static void test_unary(void **state)
{
	(void)state;
	const uref refs[] = {
		{"Neg", r_neg, -5, 5}, {"Abs", fabs, -5, 5}, {"Square", r_sq, -5, 5}, {"Sqrt", sqrt, 0, 9},
		{"Rsqrt", r_rsqrt, 0.1, 9}, {"Exp", exp, -5, 5}, {"Expm1", expm1, -1, 1}, {"Log", log, 0.1, 9},
		{"Log1p", log1p, -0.5, 9}, {"Sin", sin, -5, 5}, {"Cos", cos, -5, 5}, {"Tan", tan, -1, 1},
		{"Asin", asin, -0.9, 0.9}, {"Acos", acos, -0.9, 0.9}, {"Atan", atan, -5, 5}, {"Sinh", sinh, -3, 3},
		{"Cosh", cosh, -3, 3}, {"Tanh", tanh, -5, 5}, {"Asinh", asinh, -5, 5}, {"Acosh", acosh, 1, 9},
		{"Atanh", atanh, -0.9, 0.9}, {"Floor", floor, -5, 5}, {"Ceil", ceil, -5, 5},
		{"Reciprocal", r_recip, 0.5, 9}, {"Sigmoid", r_sigmoid, -20, 20}, {"Relu", r_relu, -5, 5},
		{"Relu6", r_relu6, -3, 9}, {"Elu", r_elu, -5, 5}, {"Selu", r_selu, -5, 5},
		{"Softplus", r_softplus, -20, 20}, {"Softsign", r_softsign, -5, 5}, {"Gelu", r_gelu, -5, 5},
		{"Silu", r_silu, -8, 8}, {"LeakyRelu", r_leaky, -5, 5}, {"Erf", erf, -3, 3}, {"Erfc", erfc, -3, 3},
		{"Lgamma", lgamma, 0.5, 9}, {"Sign", r_sign, -5, 5}, {"Mish", r_mish, -5, 5}, {"Cbrt", cbrt, -8, 8},
	};
	enum { N = 37 };
	for (size_t r = 0; r < sizeof refs / sizeof *refs; r++) {
		float x[N], want[N];
		double xd[N], wantd[N];
		for (int i = 0; i < N; i++) {
			xd[i] = refs[r].lo + (refs[r].hi - refs[r].lo) * i / (N - 1);
			x[i] = (float)xd[i];
			want[i] = (float)refs[r].f(x[i]);
			wantd[i] = refs[r].f(xd[i]);
		}
		int64_t d = N;
		flow_tensor *y = op1(refs[r].op, tf32(1, &d, x), NULL);
		if (!y) {
			print_error("%s: %s\n", refs[r].op, flow_status_message(st));
			fail();
		}
		close_f(FLOW_F32P(y), want, N, 2e-5f);
		flow_tensor_unref(y);
		y = op1(refs[r].op, tdt(FLOW_F64, 1, &d, xd), NULL);
		assert_non_null(y);
		for (int i = 0; i < N; i++)
			assert_true(fabs(FLOW_F64P(y)[i] - wantd[i]) <= 1e-12 * (fabs(wantd[i]) > 1 ? fabs(wantd[i]) : 1));
		flow_tensor_unref(y);
	}
	/* integer Neg/Abs wrap instead of UB at INT_MIN; Round is half to even */
	int32_t iv[3] = {INT32_MIN, -3, 7};
	flow_tensor *y = op1("Abs", ti32v(3, iv), NULL);
	assert_true(FLOW_I32P(y)[0] == INT32_MIN && FLOW_I32P(y)[1] == 3 && FLOW_I32P(y)[2] == 7);
	flow_tensor_unref(y);
	float rv[4] = {0.5f, 1.5f, 2.5f, -0.5f};
	int64_t d4 = 4;
	y = op1("Round", tf32(1, &d4, rv), NULL);
	assert_true(FLOW_F32P(y)[0] == 0 && FLOW_F32P(y)[1] == 2 && FLOW_F32P(y)[2] == 2 && FLOW_F32P(y)[3] == 0);
	flow_tensor_unref(y);
	float nv[3] = {NAN, INFINITY, 1};
	int64_t d3 = 3;
	y = op1("IsNan", tf32(1, &d3, nv), NULL);
	assert_int_equal(flow_tensor_dtype(y), FLOW_BOOL);
	assert_true(FLOW_BOOLP(y)[0] == 1 && FLOW_BOOLP(y)[1] == 0 && FLOW_BOOLP(y)[2] == 0);
	flow_tensor_unref(y);
	/* integer Sqrt has no kernel: a clear error */
	flow_op_desc *dd = flow_eager_new("Sqrt");
	flow_tensor *in[1] = {ti32v(3, iv)};
	expect_fail(dd, in, 1, 1, "Sqrt");
}

/* ---- binary with broadcasting ---- */
static void test_binary_broadcast(void **state)
{
	(void)state;
	/* a [2,3,4], b [3,1] -> [2,3,4]; a [2,1,4] vs b [3,1] -> [2,3,4] */
	float a[24], b[3], c[8];
	for (int i = 0; i < 24; i++)
		a[i] = (float)(i % 7) - 3;
	for (int i = 0; i < 3; i++)
		b[i] = (float)i + 0.5f;
	for (int i = 0; i < 8; i++)
		c[i] = (float)i * 0.25f;
	int64_t da[3] = {2, 3, 4}, db[2] = {3, 1}, dc[3] = {2, 1, 4};
	const char *ops[] = {"Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "SquaredDifference", "Pow",
			     "Atan2", "FloorMod"};
	for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
		for (int variant = 0; variant < 2; variant++) {
			const float *A = variant ? c : a;
			flow_tensor *y = op1(ops[o], variant ? tf32(3, dc, c) : tf32(3, da, a), tf32(2, db, b));
			if (!y) {
				print_error("%s: %s\n", ops[o], flow_status_message(st));
				fail();
			}
			assert_int_equal(flow_tensor_ndim(y), 3);
			assert_true(flow_tensor_dim(y, 0) == 2 && flow_tensor_dim(y, 1) == 3 && flow_tensor_dim(y, 2) == 4);
			float want[24];
			for (int i = 0; i < 2; i++)
				for (int j = 0; j < 3; j++)
					for (int k = 0; k < 4; k++) {
						float x = variant ? A[i * 4 + k] : A[(i * 3 + j) * 4 + k], yv = b[j], r;
						switch (o) {
						case 0: r = x + yv; break;
						case 1: r = x - yv; break;
						case 2: r = x * yv; break;
						case 3: r = x / yv; break;
						case 4: r = fmaxf(x, yv); break;
						case 5: r = fminf(x, yv); break;
						case 6: r = (x - yv) * (x - yv); break;
						case 7: r = powf(x, yv); break;
						case 8: r = atan2f(x, yv); break;
						default: r = fmodf(x, yv); if (r != 0 && ((r < 0) != (yv < 0))) r += yv; break;
						}
						want[(i * 3 + j) * 4 + k] = r;
					}
			close_f(FLOW_F32P(y), want, 24, 1e-6f);
			flow_tensor_unref(y);
		}
	}
	/* scalar on either side */
	float s = 2;
	flow_tensor *y = op1("Sub", tf32(0, NULL, &s), tf32(3, da, a));
	for (int i = 0; i < 24; i++)
		assert_true(FLOW_F32P(y)[i] == 2 - a[i]);
	flow_tensor_unref(y);
	/* incompatible shapes */
	int64_t d5 = 5;
	float f5[5] = {0};
	flow_op_desc *d = flow_eager_new("Add");
	flow_tensor *in[2] = {tf32(3, da, a), tf32(1, &d5, f5)};
	expect_fail(d, in, 2, 1, "Add");
	/* comparisons give bool */
	y = op1("Greater", tf32(3, da, a), tf32(2, db, b));
	assert_int_equal(flow_tensor_dtype(y), FLOW_BOOL);
	for (int i = 0; i < 24; i++)
		assert_int_equal(FLOW_BOOLP(y)[i], a[i] > b[(i / 4) % 3]);
	flow_tensor_unref(y);
}

static void test_integer_semantics(void **state)
{
	(void)state;
	int32_t x[6] = {-7, 7, -7, 7, INT32_MIN, 0}, yv[6] = {2, 2, -2, -2, -1, 5};
	flow_tensor *q = op1("FloorDiv", ti32v(6, x), ti32v(6, yv));
	flow_tensor *m = op1("FloorMod", ti32v(6, x), ti32v(6, yv));
	flow_tensor *t = op1("TruncateDiv", ti32v(6, x), ti32v(6, yv));
	flow_tensor *r = op1("TruncateMod", ti32v(6, x), ti32v(6, yv));
	int32_t wq[6] = {-4, 3, 3, -4, INT32_MIN, 0}, wm[6] = {1, 1, -1, -1, 0, 0};
	int32_t wt[6] = {-3, 3, 3, -3, INT32_MIN, 0}, wr[6] = {-1, 1, -1, 1, 0, 0};
	assert_memory_equal(FLOW_I32P(q), wq, sizeof wq);
	assert_memory_equal(FLOW_I32P(m), wm, sizeof wm);
	assert_memory_equal(FLOW_I32P(t), wt, sizeof wt);
	assert_memory_equal(FLOW_I32P(r), wr, sizeof wr);
	flow_tensor_unref(q);
	flow_tensor_unref(m);
	flow_tensor_unref(t);
	flow_tensor_unref(r);
	int32_t z[6] = {1, 1, 0, 1, 1, 1};
	flow_op_desc *d = flow_eager_new("FloorDiv");
	flow_tensor *in[2] = {ti32v(6, x), ti32v(6, z)};
	expect_fail(d, in, 2, 1, "integer division by zero");
	int32_t p[3] = {3, -2, 10}, e[3] = {4, 3, 0};
	flow_tensor *pw = op1("Pow", ti32v(3, p), ti32v(3, e));
	assert_true(FLOW_I32P(pw)[0] == 81 && FLOW_I32P(pw)[1] == -8 && FLOW_I32P(pw)[2] == 1);
	flow_tensor_unref(pw);
	int32_t ne[3] = {1, -1, 1};
	d = flow_eager_new("Pow");
	in[0] = ti32v(3, p);
	in[1] = ti32v(3, ne);
	expect_fail(d, in, 2, 1, "negative integer powers");
	/* wrapping add, shifts out of range */
	int32_t big[2] = {INT32_MAX, 1}, one[2] = {1, 40};
	flow_tensor *s = op1("Add", ti32v(2, big), ti32v(2, one));
	assert_true(FLOW_I32P(s)[0] == INT32_MIN);
	flow_tensor_unref(s);
	s = op1("LeftShift", ti32v(2, big), ti32v(2, one));
	assert_true(FLOW_I32P(s)[1] == 0);
	flow_tensor_unref(s);
	/* AddN over three */
	float a[2] = {1, 2}, b[2] = {10, 20}, c[2] = {100, 200};
	int64_t d2 = 2;
	flow_tensor *l[3] = {tf32(1, &d2, a), tf32(1, &d2, b), tf32(1, &d2, c)}, *o = NULL;
	flow_op_desc *an = flow_eager_new("AddN");
	flow_op_add_tensor_list(an, l, 3);
	for (int i = 0; i < 3; i++)
		flow_tensor_unref(l[i]);
	assert_int_equal(flow_execute(an, &o, 1, st), 0);
	assert_true(FLOW_F32P(o)[0] == 111 && FLOW_F32P(o)[1] == 222);
	flow_tensor_unref(o);
}

static void test_large_parallel(void **state)
{
	(void)state;
	/* big enough to be split across the pool; row-broadcast path too */
	int64_t d[2] = {1024, 1000}, db = 1000;
	size_t n = 1024 * 1000;
	float *a = malloc(n * sizeof *a), *b = malloc(1000 * sizeof *b);
	assert_non_null(a);
	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		a[i] = (float)(i % 977) * 0.01f;
	for (int i = 0; i < 1000; i++)
		b[i] = (float)i;
	flow_tensor *y = op1("Add", tf32(2, d, a), tf32(1, &db, b));
	assert_non_null(y);
	for (size_t i = 0; i < n; i += 997)
		assert_true(FLOW_F32P(y)[i] == a[i] + b[i % 1000]);
	flow_tensor_unref(y);
	y = op1("Tanh", tf32(2, d, a), NULL);
	for (size_t i = 0; i < n; i += 991)
		assert_true(fabsf(FLOW_F32P(y)[i] - tanhf(a[i])) < 1e-6f);
	flow_tensor_unref(y);
	free(a);
	free(b);
}

/* ---- reductions ---- */
static flow_tensor *reduce(const char *op, flow_tensor *x, const int32_t *axes, int n, int keep)
{
	flow_op_desc *d = flow_eager_new(op);
	flow_op_set_attr_bool(d, "keep_dims", keep);
	flow_tensor *in[2] = {x, ti32v(n, axes)}, *out = NULL;
	if (run(d, in, 2, &out, 1))
		return NULL;
	return out;
}

static void test_reductions(void **state)
{
	(void)state;
	float x[60];
	for (int i = 0; i < 60; i++)
		x[i] = (float)((i * 7) % 11) - 5;
	int64_t d[3] = {3, 4, 5};
	struct { int32_t ax[3]; int n; } cases[] = {{{0}, 1}, {{1}, 1}, {{2}, 1}, {{0, 2}, 2}, {{1, 2}, 2},
						  {{0, 1, 2}, 3}, {{-1, 0}, 2}};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		int mask[3] = {0};
		for (int i = 0; i < cases[c].n; i++)
			mask[(cases[c].ax[i] + 3) % 3] = 1;
		const char *ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};
		for (int o = 0; o < 5; o++) {
			flow_tensor *y = reduce(ops[o], tf32(3, d, x), cases[c].ax, cases[c].n, 1);
			if (!y) {
				print_error("%s: %s\n", ops[o], flow_status_message(st));
				fail();
			}
			assert_int_equal(flow_tensor_ndim(y), 3);
			int64_t od[3] = {mask[0] ? 1 : 3, mask[1] ? 1 : 4, mask[2] ? 1 : 5};
			for (int k = 0; k < 3; k++)
				assert_int_equal(flow_tensor_dim(y, k), od[k]);
			for (int i = 0; i < od[0]; i++)
				for (int j = 0; j < od[1]; j++)
					for (int k = 0; k < od[2]; k++) {
						double acc = o == 4 ? 1 : o == 2 ? -1e30 : o == 3 ? 1e30 : 0;
						int cnt = 0;
						for (int a = 0; a < 3; a++)
							for (int b = 0; b < 4; b++)
								for (int e = 0; e < 5; e++) {
									if ((!mask[0] && a != i) || (!mask[1] && b != j) ||
									    (!mask[2] && e != k))
										continue;
									double v = x[(a * 4 + b) * 5 + e];
									cnt++;
									if (o <= 1) acc += v;
									else if (o == 2) acc = fmax(acc, v);
									else if (o == 3) acc = fmin(acc, v);
									else acc *= v;
								}
						if (o == 1)
							acc /= cnt;
						float got = FLOW_F32P(y)[(i * od[1] + j) * od[2] + k];
						if (fabs(got - acc) > 1e-4 * (fabs(acc) > 1 ? fabs(acc) : 1)) {
							print_error("%s case %zu at %d,%d,%d: %g vs %g\n", ops[o], c, i, j, k,
								    got, acc);
							fail();
						}
					}
			flow_tensor_unref(y);
		}
	}
	/* keep_dims false drops axes; axis out of range is an error */
	int32_t ax1[1] = {1};
	flow_tensor *y = reduce("Sum", tf32(3, d, x), ax1, 1, 0);
	assert_int_equal(flow_tensor_ndim(y), 2);
	flow_tensor_unref(y);
	int32_t bad[1] = {3};
	flow_op_desc *dd = flow_eager_new("Sum");
	flow_tensor *in[2] = {tf32(3, d, x), ti32v(1, bad)};
	expect_fail(dd, in, 2, 1, "axis 3 out of range");
	/* ArgMax along 1 */
	flow_op_desc *am = flow_eager_new("ArgMax");
	flow_tensor *ain[2] = {tf32(3, d, x), scal_i32(1)}, *out = NULL;
	assert_int_equal(run(am, ain, 2, &out, 1), 0);
	assert_int_equal(flow_tensor_dtype(out), FLOW_I64);
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 5; k++) {
			int best = 0;
			for (int b = 1; b < 4; b++)
				if (x[(i * 4 + b) * 5 + k] > x[(i * 4 + best) * 5 + k])
					best = b;
			assert_int_equal(FLOW_I64P(out)[i * 5 + k], best);
		}
	flow_tensor_unref(out);
	/* All / Any on bool */
	uint8_t bv[6] = {1, 1, 0, 1, 1, 1};
	int64_t d23[2] = {2, 3};
	int32_t ax[1] = {1};
	y = reduce("All", tdt(FLOW_BOOL, 2, d23, bv), ax, 1, 0);
	assert_true(FLOW_BOOLP(y)[0] == 0 && FLOW_BOOLP(y)[1] == 1);
	flow_tensor_unref(y);
	/* CumSum exclusive reverse */
	float cv[4] = {1, 2, 3, 4};
	int64_t d4 = 4;
	flow_op_desc *cs = flow_eager_new("CumSum");
	flow_op_set_attr_bool(cs, "exclusive", 1);
	flow_op_set_attr_bool(cs, "reverse", 1);
	flow_tensor *cin[2] = {tf32(1, &d4, cv), scal_i32(0)};
	assert_int_equal(run(cs, cin, 2, &out, 1), 0);
	assert_true(FLOW_F32P(out)[0] == 9 && FLOW_F32P(out)[1] == 7 && FLOW_F32P(out)[2] == 4 && FLOW_F32P(out)[3] == 0);
	flow_tensor_unref(out);
}

/* ---- MatMul / BatchMatMul ---- */
static void test_matmul(void **state)
{
	(void)state;
	enum { M = 5, K = 7, N = 3 };
	float a[M * K], b[K * N], at[K * M], bt[N * K];
	double ad[M * K], bd[K * N];
	int32_t ai[M * K], bi[K * N];
	for (int i = 0; i < M * K; i++) {
		a[i] = (float)((i * 3) % 5) - 2;
		ad[i] = a[i];
		ai[i] = (int32_t)a[i];
	}
	for (int i = 0; i < K * N; i++) {
		b[i] = (float)((i * 5) % 7) - 3;
		bd[i] = b[i];
		bi[i] = (int32_t)b[i];
	}
	for (int i = 0; i < M; i++)
		for (int k = 0; k < K; k++)
			at[k * M + i] = a[i * K + k];
	for (int k = 0; k < K; k++)
		for (int j = 0; j < N; j++)
			bt[j * K + k] = b[k * N + j];
	float want[M * N];
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			float s = 0;
			for (int k = 0; k < K; k++)
				s += a[i * K + k] * b[k * N + j];
			want[i * N + j] = s;
		}
	int64_t dmk[2] = {M, K}, dkn[2] = {K, N}, dkm[2] = {K, M}, dnk[2] = {N, K};
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			flow_op_desc *d = flow_eager_new("MatMul");
			flow_op_set_attr_bool(d, "transpose_a", ta);
			flow_op_set_attr_bool(d, "transpose_b", tb);
			flow_tensor *in[2] = {ta ? tf32(2, dkm, at) : tf32(2, dmk, a), tb ? tf32(2, dnk, bt) : tf32(2, dkn, b)};
			flow_tensor *y = NULL;
			assert_int_equal(run(d, in, 2, &y, 1), 0);
			assert_true(flow_tensor_dim(y, 0) == M && flow_tensor_dim(y, 1) == N);
			close_f(FLOW_F32P(y), want, M * N, 1e-6f);
			flow_tensor_unref(y);
		}
	flow_tensor *y = op1("MatMul", tdt(FLOW_F64, 2, dmk, ad), tdt(FLOW_F64, 2, dkn, bd));
	for (int i = 0; i < M * N; i++)
		assert_true(FLOW_F64P(y)[i] == want[i]);
	flow_tensor_unref(y);
	y = op1("MatMul", tdt(FLOW_I32, 2, dmk, ai), tdt(FLOW_I32, 2, dkn, bi));
	for (int i = 0; i < M * N; i++)
		assert_int_equal(FLOW_I32P(y)[i], (int32_t)want[i]);
	flow_tensor_unref(y);
	flow_op_desc *d = flow_eager_new("MatMul");
	flow_tensor *in[2] = {tf32(2, dmk, a), tf32(2, dmk, a)};
	expect_fail(d, in, 2, 1, "inner dimensions differ");
	/* BatchMatMulV2: x [2,1,M,K] with y [3,K,N] -> [2,3,M,N] */
	float x[2 * M * K], yb[3 * K * N];
	for (int i = 0; i < 2 * M * K; i++)
		x[i] = (float)(i % 9) - 4;
	for (int i = 0; i < 3 * K * N; i++)
		yb[i] = (float)(i % 5) - 2;
	int64_t dx[4] = {2, 1, M, K}, dy[3] = {3, K, N};
	flow_tensor *o = op1("BatchMatMulV2", tf32(4, dx, x), tf32(3, dy, yb));
	assert_non_null(o);
	assert_int_equal(flow_tensor_ndim(o), 4);
	assert_true(flow_tensor_dim(o, 0) == 2 && flow_tensor_dim(o, 1) == 3);
	for (int p = 0; p < 2; p++)
		for (int q = 0; q < 3; q++)
			for (int i = 0; i < M; i++)
				for (int j = 0; j < N; j++) {
					float s = 0;
					for (int k = 0; k < K; k++)
						s += x[(p * M + i) * K + k] * yb[(q * K + k) * N + j];
					assert_true(fabsf(FLOW_F32P(o)[((p * 3 + q) * M + i) * N + j] - s) < 1e-4f);
				}
	flow_tensor_unref(o);
}

/* ---- nn ---- */
static void test_softmax_xent_bias(void **state)
{
	(void)state;
	float l[6] = {1, 2, 3, -1, 0, 1000};
	int64_t d[2] = {2, 3}, d3 = 3;
	flow_tensor *y = op1("Softmax", tf32(2, d, l), NULL);
	flow_tensor *ly = op1("LogSoftmax", tf32(2, d, l), NULL);
	for (int r = 0; r < 2; r++) {
		double mx = fmax(fmax(l[3 * r], l[3 * r + 1]), l[3 * r + 2]), s = 0;
		for (int i = 0; i < 3; i++)
			s += exp(l[3 * r + i] - mx);
		for (int i = 0; i < 3; i++) {
			double p = exp(l[3 * r + i] - mx) / s;
			assert_true(fabs(FLOW_F32P(y)[3 * r + i] - p) < 1e-6);
			assert_true(fabs(FLOW_F32P(ly)[3 * r + i] - log(p > 0 ? p : 1e-300)) < 1e-4 || p < 1e-30);
		}
	}
	flow_tensor_unref(y);
	flow_tensor_unref(ly);
	/* dense and sparse cross-entropy agree for one-hot labels */
	float lab[6] = {0, 0, 1, 0, 1, 0};
	int64_t sl[2] = {2, 1};
	flow_tensor *out[2], *out2[2];
	flow_op_desc *x1 = flow_eager_new("SoftmaxCrossEntropyWithLogits");
	flow_tensor *in[2] = {tf32(2, d, l), tf32(2, d, lab)};
	assert_int_equal(run(x1, in, 2, out, 2), 0);
	flow_op_desc *x2 = flow_eager_new("SparseSoftmaxCrossEntropyWithLogits");
	in[0] = tf32(2, d, l);
	int64_t two = 2;
	in[1] = tdt(FLOW_I64, 1, &two, sl);
	assert_int_equal(run(x2, in, 2, out2, 2), 0);
	double want0 = -(3 - (3 + log(exp(-2) + exp(-1) + 1)));
	assert_true(fabs(FLOW_F32P(out[0])[0] - want0) < 1e-5);
	assert_true(fabs(FLOW_F32P(out[0])[1] - 1000) < 1e-3); /* -log softmax of 0 vs 1000 */
	for (int i = 0; i < 2; i++)
		assert_true(fabsf(FLOW_F32P(out[0])[i] - FLOW_F32P(out2[0])[i]) < 1e-5f);
	for (int i = 0; i < 6; i++)
		assert_true(fabsf(FLOW_F32P(out[1])[i] - FLOW_F32P(out2[1])[i]) < 1e-6f);
	for (int i = 0; i < 2; i++) {
		flow_tensor_unref(out[i]);
		flow_tensor_unref(out2[i]);
	}
	int64_t badl[2] = {0, 3};
	flow_op_desc *x3 = flow_eager_new("SparseSoftmaxCrossEntropyWithLogits");
	in[0] = tf32(2, d, l);
	in[1] = tdt(FLOW_I64, 1, &two, badl);
	expect_fail(x3, in, 2, 2, "label value of 3 at index 1, outside the valid range [0, 3)");
	/* BiasAdd + BiasAddGrad */
	float bias[3] = {10, 20, 30};
	y = op1("BiasAdd", tf32(2, d, l), tf32(1, &d3, bias));
	for (int i = 0; i < 6; i++)
		assert_true(FLOW_F32P(y)[i] == l[i] + bias[i % 3]);
	flow_tensor_unref(y);
	y = op1("BiasAddGrad", tf32(2, d, l), NULL);
	assert_true(FLOW_F32P(y)[0] == 0 && FLOW_F32P(y)[1] == 2 && FLOW_F32P(y)[2] == 1003);
	flow_tensor_unref(y);
	flow_op_desc *bd = flow_eager_new("BiasAdd");
	float b2[2] = {0};
	int64_t d2 = 2;
	in[0] = tf32(2, d, l);
	in[1] = tf32(1, &d2, b2);
	expect_fail(bd, in, 2, 1, "bias has 2 elements but value's channel dimension has 3");
}

static void test_conv_pool(void **state)
{
	(void)state;
	enum { NB = 2, H = 7, W = 6, C = 3, KH = 3, KW = 2, OC = 4 };
	float x[NB * H * W * C], f[KH * KW * C * OC];
	for (int i = 0; i < NB * H * W * C; i++)
		x[i] = (float)((i * 13) % 17) / 4 - 2;
	for (int i = 0; i < KH * KW * C * OC; i++)
		f[i] = (float)((i * 7) % 11) / 5 - 1;
	int64_t dx[4] = {NB, H, W, C}, df[4] = {KH, KW, C, OC};
	struct { int sh, sw, dh, dw, same; } cfg[] = {{1, 1, 1, 1, 0}, {2, 2, 1, 1, 1}, {1, 2, 2, 1, 1}, {3, 1, 1, 1, 0}};
	for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++) {
		flow_op_desc *d = flow_eager_new("Conv2D");
		int64_t strides[4] = {1, cfg[c].sh, cfg[c].sw, 1}, dil[4] = {1, cfg[c].dh, cfg[c].dw, 1};
		flow_op_set_attr_ints(d, "strides", strides, 4);
		flow_op_set_attr_ints(d, "dilations", dil, 4);
		flow_op_set_attr_string(d, "padding", cfg[c].same ? "SAME" : "VALID");
		flow_tensor *in[2] = {tf32(4, dx, x), tf32(4, df, f)}, *y = NULL;
		if (run(d, in, 2, &y, 1)) {
			print_error("Conv2D: %s\n", flow_status_message(st));
			fail();
		}
		int ekh = (KH - 1) * cfg[c].dh + 1, ekw = (KW - 1) * cfg[c].dw + 1;
		int oh = cfg[c].same ? (H + cfg[c].sh - 1) / cfg[c].sh : (H - ekh) / cfg[c].sh + 1;
		int ow = cfg[c].same ? (W + cfg[c].sw - 1) / cfg[c].sw : (W - ekw) / cfg[c].sw + 1;
		int pt = cfg[c].same ? (((oh - 1) * cfg[c].sh + ekh - H) > 0 ? ((oh - 1) * cfg[c].sh + ekh - H) / 2 : 0) : 0;
		int pl = cfg[c].same ? (((ow - 1) * cfg[c].sw + ekw - W) > 0 ? ((ow - 1) * cfg[c].sw + ekw - W) / 2 : 0) : 0;
		assert_true(flow_tensor_dim(y, 1) == oh && flow_tensor_dim(y, 2) == ow && flow_tensor_dim(y, 3) == OC);
		for (int n = 0; n < NB; n++)
			for (int i = 0; i < oh; i++)
				for (int j = 0; j < ow; j++)
					for (int o = 0; o < OC; o++) {
						double s = 0;
						for (int ky = 0; ky < KH; ky++)
							for (int kx = 0; kx < KW; kx++) {
								int iy = i * cfg[c].sh - pt + ky * cfg[c].dh;
								int ix = j * cfg[c].sw - pl + kx * cfg[c].dw;
								if (iy < 0 || iy >= H || ix < 0 || ix >= W)
									continue;
								for (int ch = 0; ch < C; ch++)
									s += x[((n * H + iy) * W + ix) * C + ch] *
									     f[((ky * KW + kx) * C + ch) * OC + o];
							}
						float got = FLOW_F32P(y)[((n * oh + i) * ow + j) * OC + o];
						assert_true(fabs(got - s) < 1e-4);
					}
		flow_tensor_unref(y);
	}
	/* MaxPool / AvgPool 3x3 stride 2 SAME vs direct loops */
	for (int avg = 0; avg < 2; avg++) {
		flow_op_desc *d = flow_eager_new(avg ? "AvgPool" : "MaxPool");
		int64_t ks[4] = {1, 3, 3, 1}, s2[4] = {1, 2, 2, 1};
		flow_op_set_attr_ints(d, "ksize", ks, 4);
		flow_op_set_attr_ints(d, "strides", s2, 4);
		flow_op_set_attr_string(d, "padding", "SAME");
		flow_tensor *in[1] = {tf32(4, dx, x)}, *y = NULL;
		assert_int_equal(run(d, in, 1, &y, 1), 0);
		int oh = 4, ow = 3, pt = ((oh - 1) * 2 + 3 - H) / 2, pl = ((ow - 1) * 2 + 3 - W) / 2;
		assert_true(flow_tensor_dim(y, 1) == oh && flow_tensor_dim(y, 2) == ow);
		for (int n = 0; n < NB; n++)
			for (int i = 0; i < oh; i++)
				for (int j = 0; j < ow; j++)
					for (int ch = 0; ch < C; ch++) {
						double acc = avg ? 0 : -1e30;
						int cnt = 0;
						for (int ky = 0; ky < 3; ky++)
							for (int kx = 0; kx < 3; kx++) {
								int iy = i * 2 - pt + ky, ix = j * 2 - pl + kx;
								if (iy < 0 || iy >= H || ix < 0 || ix >= W)
									continue;
								double v = x[((n * H + iy) * W + ix) * C + ch];
								acc = avg ? acc + v : fmax(acc, v);
								cnt++;
							}
						if (avg)
							acc /= cnt;
						assert_true(fabs(FLOW_F32P(y)[((n * oh + i) * ow + j) * C + ch] - acc) < 1e-5);
					}
		flow_tensor_unref(y);
	}
	flow_op_desc *d = flow_eager_new("Conv2D");
	int64_t strides[4] = {1, 1, 1, 1};
	flow_op_set_attr_ints(d, "strides", strides, 4);
	flow_op_set_attr_string(d, "padding", "FULL");
	flow_tensor *in[2] = {tf32(4, dx, x), tf32(4, df, f)};
	expect_fail(d, in, 2, 1, "padding must be \"SAME\" or \"VALID\"");
}

/* ---- array ops ---- */
static void test_shape_ops(void **state)
{
	(void)state;
	float x[24];
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	int64_t d[3] = {2, 3, 4};
	int32_t ns[2] = {-1, 6};
	flow_tensor *y = op1("Reshape", tf32(3, d, x), ti32v(2, ns));
	assert_true(flow_tensor_ndim(y) == 2 && flow_tensor_dim(y, 0) == 4 && flow_tensor_dim(y, 1) == 6);
	flow_tensor_unref(y);
	int32_t bad[2] = {5, -1};
	flow_op_desc *dd = flow_eager_new("Reshape");
	flow_tensor *in[4] = {tf32(3, d, x), ti32v(2, bad)};
	expect_fail(dd, in, 2, 1, "cannot reshape 24 elements");
	/* Transpose perm [2,0,1] */
	int32_t perm[3] = {2, 0, 1};
	y = op1("Transpose", tf32(3, d, x), ti32v(3, perm));
	assert_true(flow_tensor_dim(y, 0) == 4 && flow_tensor_dim(y, 1) == 2 && flow_tensor_dim(y, 2) == 3);
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 3; j++)
				assert_true(FLOW_F32P(y)[(k * 2 + i) * 3 + j] == x[(i * 3 + j) * 4 + k]);
	flow_tensor_unref(y);
	/* ConcatV2 along 1 */
	float b[16];
	for (int i = 0; i < 16; i++)
		b[i] = 100 + (float)i;
	int64_t db[3] = {2, 2, 4};
	flow_op_desc *c = flow_eager_new("ConcatV2");
	flow_tensor *l[2] = {tf32(3, d, x), tf32(3, db, b)};
	flow_op_add_tensor_list(c, l, 2);
	flow_tensor_unref(l[0]);
	flow_tensor_unref(l[1]);
	flow_tensor *ax = scal_i32(1);
	flow_op_add_tensor(c, ax);
	flow_tensor_unref(ax);
	assert_int_equal(flow_execute(c, &y, 1, st), 0);
	assert_true(flow_tensor_dim(y, 1) == 5);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 5; j++)
			for (int k = 0; k < 4; k++)
				assert_true(FLOW_F32P(y)[(i * 5 + j) * 4 + k] ==
					    (j < 3 ? x[(i * 3 + j) * 4 + k] : b[(i * 2 + j - 3) * 4 + k]));
	flow_tensor_unref(y);
	/* Pack then Unpack round trip on axis 1 */
	flow_op_desc *p = flow_eager_new("Pack");
	flow_op_set_attr_int(p, "axis", 1);
	l[0] = tf32(3, d, x);
	l[1] = tf32(3, d, x);
	flow_op_add_tensor_list(p, l, 2);
	flow_tensor_unref(l[0]);
	flow_tensor_unref(l[1]);
	assert_int_equal(flow_execute(p, &y, 1, st), 0);
	assert_true(flow_tensor_ndim(y) == 4 && flow_tensor_dim(y, 1) == 2);
	flow_op_desc *u = flow_eager_new("Unpack");
	flow_op_set_attr_int(u, "axis", 1);
	flow_op_set_attr_int(u, "num", 2);
	flow_tensor *outs[2];
	in[0] = y;
	assert_int_equal(run(u, in, 1, outs, 2), 0);
	assert_memory_equal(FLOW_F32P(outs[1]), x, sizeof x);
	flow_tensor_unref(outs[0]);
	flow_tensor_unref(outs[1]);
	/* Split dim 2 into 2 */
	flow_op_desc *sp = flow_eager_new("Split");
	flow_op_set_attr_int(sp, "num_split", 2);
	in[0] = scal_i32(2);
	in[1] = tf32(3, d, x);
	assert_int_equal(run(sp, in, 2, outs, 2), 0);
	assert_true(flow_tensor_dim(outs[0], 2) == 2 && FLOW_F32P(outs[1])[0] == 2 && FLOW_F32P(outs[1])[2] == 6);
	flow_tensor_unref(outs[0]);
	flow_tensor_unref(outs[1]);
	/* ExpandDims / Squeeze */
	y = op1("ExpandDims", tf32(3, d, x), scal_i32(-1));
	assert_true(flow_tensor_ndim(y) == 4 && flow_tensor_dim(y, 3) == 1);
	flow_tensor *z = op1("Squeeze", y, NULL);
	assert_true(flow_tensor_ndim(z) == 3);
	flow_tensor_unref(z);
	/* Shape, Size, Rank */
	y = op1("Shape", tf32(3, d, x), NULL);
	assert_true(FLOW_I32P(y)[0] == 2 && FLOW_I32P(y)[1] == 3 && FLOW_I32P(y)[2] == 4);
	flow_tensor_unref(y);
	y = op1("Size", tf32(3, d, x), NULL);
	assert_int_equal(FLOW_I32P(y)[0], 24);
	flow_tensor_unref(y);
}

static flow_tensor *strided(const float *x, int nd, const int64_t *d, int n, const int32_t *b, const int32_t *e,
			    const int32_t *s, int bm, int em, int elm, int nam, int sam)
{
	flow_op_desc *o = flow_eager_new("StridedSlice");
	flow_op_set_attr_int(o, "begin_mask", bm);
	flow_op_set_attr_int(o, "end_mask", em);
	flow_op_set_attr_int(o, "ellipsis_mask", elm);
	flow_op_set_attr_int(o, "new_axis_mask", nam);
	flow_op_set_attr_int(o, "shrink_axis_mask", sam);
	flow_tensor *in[4] = {tf32(nd, d, x), ti32v(n, b), ti32v(n, e), ti32v(n, s)}, *y = NULL;
	if (run(o, in, 4, &y, 1))
		return NULL;
	return y;
}

static void test_slicing(void **state)
{
	(void)state;
	float x[24];
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	int64_t d[3] = {2, 3, 4};
	/* x[1:, ::-1, 1:3] */
	int32_t b1[3] = {1, 0, 1}, e1[3] = {0, 0, 3}, s1[3] = {1, -1, 1};
	flow_tensor *y = strided(x, 3, d, 3, b1, e1, s1, 2, 2 | 1, 0, 0, 0);
	assert_non_null(y);
	assert_true(flow_tensor_dim(y, 0) == 1 && flow_tensor_dim(y, 1) == 3 && flow_tensor_dim(y, 2) == 2);
	for (int j = 0; j < 3; j++)
		for (int k = 0; k < 2; k++)
			assert_true(FLOW_F32P(y)[j * 2 + k] == x[(1 * 3 + (2 - j)) * 4 + 1 + k]);
	flow_tensor_unref(y);
	/* x[..., 2] (ellipsis + shrink) and x[:, newaxis, 1] */
	int32_t b2[2] = {0, 2}, e2[2] = {0, 3}, s2[2] = {1, 1};
	y = strided(x, 3, d, 2, b2, e2, s2, 0, 0, 1, 0, 2);
	assert_non_null(y);
	assert_true(flow_tensor_ndim(y) == 2 && flow_tensor_dim(y, 0) == 2 && flow_tensor_dim(y, 1) == 3);
	for (int i = 0; i < 6; i++)
		assert_true(FLOW_F32P(y)[i] == x[i * 4 + 2]);
	flow_tensor_unref(y);
	int32_t b3[3] = {0, 0, 1}, e3[3] = {0, 0, 2}, s3[3] = {1, 1, 1};
	y = strided(x, 3, d, 3, b3, e3, s3, 1, 1, 0, 2, 4);
	assert_non_null(y);
	assert_true(flow_tensor_ndim(y) == 3 && flow_tensor_dim(y, 0) == 2 && flow_tensor_dim(y, 1) == 1 &&
		    flow_tensor_dim(y, 2) == 4);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 4; k++)
			assert_true(FLOW_F32P(y)[i * 4 + k] == x[(i * 3 + 1) * 4 + k]);
	flow_tensor_unref(y);
	int32_t b4[1] = {5}, e4[1] = {6}, s4[1] = {1};
	assert_null(strided(x, 3, d, 1, b4, e4, s4, 0, 0, 0, 0, 1));
	assert_non_null(strstr(flow_status_message(st), "index 5 out of bounds for dimension 0 of size 2"));
	/* Slice with size -1 */
	int32_t sb[3] = {0, 1, 2}, ss[3] = {-1, 2, -1};
	flow_op_desc *o = flow_eager_new("Slice");
	flow_tensor *in[3] = {tf32(3, d, x), ti32v(3, sb), ti32v(3, ss)};
	assert_int_equal(run(o, in, 3, &y, 1), 0);
	assert_true(flow_tensor_dim(y, 0) == 2 && flow_tensor_dim(y, 1) == 2 && flow_tensor_dim(y, 2) == 2);
	assert_true(FLOW_F32P(y)[0] == 6 && FLOW_F32P(y)[7] == 12 + 8 + 3);
	flow_tensor_unref(y);
	/* GatherV2 axis 1 and an out-of-range index */
	int32_t idx[4] = {2, 0, 2, 1};
	o = flow_eager_new("GatherV2");
	in[0] = tf32(3, d, x);
	in[1] = ti32v(4, idx);
	in[2] = scal_i32(1);
	assert_int_equal(run(o, in, 3, &y, 1), 0);
	assert_true(flow_tensor_dim(y, 1) == 4);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 4; j++)
			for (int k = 0; k < 4; k++)
				assert_true(FLOW_F32P(y)[(i * 4 + j) * 4 + k] == x[(i * 3 + idx[j]) * 4 + k]);
	flow_tensor_unref(y);
	int32_t bidx[2] = {0, 3};
	o = flow_eager_new("GatherV2");
	in[0] = tf32(3, d, x);
	in[1] = ti32v(2, bidx);
	in[2] = scal_i32(1);
	expect_fail(o, in, 3, 1, "indices[1] = 3 is not in [0, 3)");
	/* ReverseV2, Tile, Pad, MirrorPad on a [2,3] */
	float m[6] = {1, 2, 3, 4, 5, 6};
	int64_t dm[2] = {2, 3};
	int32_t ax[1] = {1};
	y = op1("ReverseV2", tf32(2, dm, m), ti32v(1, ax));
	float wr[6] = {3, 2, 1, 6, 5, 4};
	assert_memory_equal(FLOW_F32P(y), wr, sizeof wr);
	flow_tensor_unref(y);
	int32_t mult[2] = {2, 2};
	y = op1("Tile", tf32(2, dm, m), ti32v(2, mult));
	assert_true(flow_tensor_dim(y, 0) == 4 && flow_tensor_dim(y, 1) == 6);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 6; j++)
			assert_true(FLOW_F32P(y)[i * 6 + j] == m[(i % 2) * 3 + j % 3]);
	flow_tensor_unref(y);
	int32_t pads[4] = {1, 0, 2, 1};
	int64_t dp[2] = {2, 2};
	y = op1("Pad", tf32(2, dm, m), tdt(FLOW_I32, 2, dp, pads));
	assert_true(flow_tensor_dim(y, 0) == 3 && flow_tensor_dim(y, 1) == 6);
	float wp[18] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0};
	assert_memory_equal(FLOW_F32P(y), wp, sizeof wp);
	flow_tensor_unref(y);
	int32_t mp[4] = {1, 1, 2, 2};
	flow_op_desc *mpd = flow_eager_new("MirrorPad");
	flow_op_set_attr_string(mpd, "mode", "REFLECT");
	in[0] = tf32(2, dm, m);
	in[1] = tdt(FLOW_I32, 2, dp, mp);
	assert_int_equal(run(mpd, in, 2, &y, 1), 0);
	/* numpy.pad([[1,2,3],[4,5,6]], ((1,1),(2,2)), 'reflect') */
	float wmp[28] = {6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1};
	assert_memory_equal(FLOW_F32P(y), wmp, sizeof wmp);
	flow_tensor_unref(y);
	/* BroadcastTo [3] -> [2,3] */
	int64_t d3 = 3;
	int32_t to[2] = {2, 3};
	y = op1("BroadcastTo", tf32(1, &d3, m), ti32v(2, to));
	float wb[6] = {1, 2, 3, 1, 2, 3};
	assert_memory_equal(FLOW_F32P(y), wb, sizeof wb);
	flow_tensor_unref(y);
}

static void test_misc_array(void **state)
{
	(void)state;
	/* Cast saturates and maps NaN to 0 */
	float f[5] = {1.9f, -1.9f, 3e10f, -3e10f, NAN};
	int64_t d5 = 5;
	flow_op_desc *c = flow_eager_new("Cast");
	flow_op_set_attr_type(c, "DstT", FLOW_I32);
	flow_tensor *in[4] = {tf32(1, &d5, f)}, *y = NULL;
	assert_int_equal(run(c, in, 1, &y, 1), 0);
	int32_t wc[5] = {1, -1, INT32_MAX, INT32_MIN, 0};
	assert_memory_equal(FLOW_I32P(y), wc, sizeof wc);
	flow_tensor_unref(y);
	/* SelectV2 with broadcasting, Where, Range, OneHot, Fill, ZerosLike */
	uint8_t cond[3] = {1, 0, 1};
	float t[6] = {1, 2, 3, 4, 5, 6}, e = -1;
	int64_t d3 = 3, d23[2] = {2, 3};
	c = flow_eager_new("SelectV2");
	in[0] = tdt(FLOW_BOOL, 1, &d3, cond);
	in[1] = tf32(2, d23, t);
	in[2] = tf32(0, NULL, &e);
	assert_int_equal(run(c, in, 3, &y, 1), 0);
	float ws[6] = {1, -1, 3, 4, -1, 6};
	assert_memory_equal(FLOW_F32P(y), ws, sizeof ws);
	flow_tensor_unref(y);
	float wv[6] = {0, 1, 0, 0, 0, 2};
	y = op1("Where", tf32(2, d23, wv), NULL);
	assert_true(flow_tensor_dim(y, 0) == 2 && flow_tensor_dim(y, 1) == 2);
	assert_true(FLOW_I64P(y)[0] == 0 && FLOW_I64P(y)[1] == 1 && FLOW_I64P(y)[2] == 1 && FLOW_I64P(y)[3] == 2);
	flow_tensor_unref(y);
	c = flow_eager_new("Range");
	in[0] = scal_i32(3);
	in[1] = scal_i32(-4);
	in[2] = scal_i32(-2);
	assert_int_equal(run(c, in, 3, &y, 1), 0);
	assert_true(flow_tensor_dim(y, 0) == 4 && FLOW_I32P(y)[3] == -3);
	flow_tensor_unref(y);
	c = flow_eager_new("Range");
	in[0] = scal_i32(0);
	in[1] = scal_i32(4);
	in[2] = scal_i32(0);
	expect_fail(c, in, 3, 1, "delta must not be 0");
	int64_t ix[3] = {2, 0, 5};
	float on = 1, off = 0;
	c = flow_eager_new("OneHot");
	in[0] = tdt(FLOW_I64, 1, &d3, ix);
	in[1] = scal_i32(3);
	in[2] = tf32(0, NULL, &on);
	in[3] = tf32(0, NULL, &off);
	assert_int_equal(run(c, in, 4, &y, 1), 0);
	float wo[9] = {0, 0, 1, 1, 0, 0, 0, 0, 0};
	assert_memory_equal(FLOW_F32P(y), wo, sizeof wo);
	flow_tensor_unref(y);
	int32_t fd[2] = {2, 2};
	y = op1("Fill", ti32v(2, fd), tf32(0, NULL, &e));
	assert_true(flow_tensor_nelem(y) == 4 && FLOW_F32P(y)[3] == -1);
	flow_tensor *z = op1("OnesLike", y, NULL);
	assert_true(FLOW_F32P(z)[2] == 1);
	flow_tensor_unref(z);
}

/* ---- random ops and initialisers ---- */
static void test_random_ops(void **state)
{
	(void)state;
	int32_t shp[2] = {64, 33};
	flow_op_desc *d = flow_eager_new("RandomUniform");
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_int(d, "seed", 7);
	flow_op_set_attr_int(d, "seed2", 9);
	flow_tensor *in[1] = {ti32v(2, shp)}, *y = NULL, *y2 = NULL;
	assert_int_equal(run(d, in, 1, &y, 1), 0);
	float *want = malloc(64 * 33 * sizeof *want);
	assert_non_null(want);
	/* eager random ops share one process-wide state word: the stream
	 * starts where the previous eager random op left it */
	d = flow_eager_new("RandomUniform");
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_int(d, "seed", 7);
	flow_op_set_attr_int(d, "seed2", 9);
	in[0] = ti32v(2, shp);
	assert_int_equal(run(d, in, 1, &y2, 1), 0);
	assert_true(memcmp(FLOW_F32P(y), FLOW_F32P(y2), 64 * 33 * 4) != 0); /* next run: new numbers */
	/* both are slices of the same Philox stream: eager calls start at
	 * counter offsets (call number << 32) */
	int found = 0;
	uint64_t first = 0;
	for (uint64_t k = 0; k < 4096 && found < 2; k++) {
		flow_random_fill_f32_at(want, 4, 7, 9, k << 32, FLOW_DIST_UNIFORM, 0, 1, 1);
		for (int which = 0; which < 2; which++) {
			flow_tensor *t = which ? y2 : y;
			if (memcmp(want, FLOW_F32P(t), 4 * sizeof(float)) == 0) {
				flow_random_fill_f32_at(want, 64 * 33, 7, 9, k << 32, FLOW_DIST_UNIFORM, 0, 1, 1);
				assert_memory_equal(want, FLOW_F32P(t), 64 * 33 * sizeof(float));
				if (which)
					assert_true(k > first);
				else
					first = k;
				found++;
				break;
			}
		}
	}
	found = found == 2;
	assert_true(found);
	free(want);
	flow_tensor_unref(y);
	flow_tensor_unref(y2);
	d = flow_eager_new("TruncatedNormal");
	flow_op_set_attr_type(d, "dtype", FLOW_F64);
	flow_op_set_attr_int(d, "seed", 1);
	in[0] = ti32v(2, shp);
	assert_int_equal(run(d, in, 1, &y, 1), 0);
	for (int i = 0; i < 64 * 33; i++)
		assert_true(fabs(FLOW_F64P(y)[i]) < 2);
	flow_tensor_unref(y);
	d = flow_eager_new("RandomUniformInt");
	flow_op_set_attr_int(d, "seed", 3);
	flow_tensor *rin[3] = {ti32v(2, shp), scal_i32(-2), scal_i32(3)};
	assert_int_equal(run(d, rin, 3, &y, 1), 0);
	int seen[5] = {0};
	for (int i = 0; i < 64 * 33; i++) {
		assert_true(FLOW_I32P(y)[i] >= -2 && FLOW_I32P(y)[i] < 3);
		seen[FLOW_I32P(y)[i] + 2] = 1;
	}
	assert_true(seen[0] && seen[4]);
	flow_tensor_unref(y);
	/* Initializer op: glorot_uniform on 784x1024 */
	d = flow_eager_new("Initializer");
	int64_t gd[2] = {784, 1024};
	flow_shape gs = flow_shape_make(2, gd);
	flow_op_set_attr_shape(d, "shape", &gs);
	flow_op_set_attr_string(d, "kind", "glorot_uniform");
	flow_op_set_attr_int(d, "seed", 42);
	assert_int_equal(run(d, NULL, 0, &y, 1), 0);
	double mx = 0;
	for (int64_t i = 0; i < 784 * 1024; i++)
		mx = fmax(mx, fabs(FLOW_F32P(y)[i]));
	assert_true(mx <= 0.05761 + 1e-5 && mx > 0.0575);
	flow_tensor_unref(y);
	d = flow_eager_new("Initializer");
	flow_op_set_attr_shape(d, "shape", &gs);
	flow_op_set_attr_string(d, "kind", "xavier");
	expect_fail(d, NULL, 0, 1, "unknown initialiser kind \"xavier\"");
}

static void test_load_weight(void **state)
{
	(void)state;
	char dir[] = "/tmp/flow_ops_XXXXXX", path[128], err[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/m.safetensors", dir);
	float k[6] = {1, 2, 3, 4, 5, 6};
	double b[2] = {0.5, -0.5};
	flow_weight ts[2] = {
		{.name = "dense/kernel", .dtype = FLOW_WD_F32, .rank = 2, .shape = {2, 3}, .data = k, .nbytes = 24},
		{.name = "dense/bias", .dtype = FLOW_WD_F64, .rank = 1, .shape = {2}, .data = b, .nbytes = 16},
	};
	assert_int_equal(flow_safetensors_write(path, ts, 2, NULL, 0, err, sizeof err), 0);
	flow_op_desc *d = flow_eager_new("LoadWeight");
	int64_t dims[2] = {2, -1};
	flow_shape s = flow_shape_make(2, dims);
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_string(d, "path", path);
	flow_op_set_attr_string(d, "tensor_name", "dense/kernel");
	flow_op_set_attr_shape(d, "shape", &s);
	flow_tensor *y = NULL;
	assert_int_equal(run(d, NULL, 0, &y, 1), 0);
	assert_memory_equal(FLOW_F32P(y), k, sizeof k);
	/* the zero-copy tensor may be updated in place (a variable's AssignAdd):
	 * private pages, the file stays as written */
	FLOW_F32P(y)[0] = 42;
	flow_tensor_unref(y); /* closes the mapping */
	flow_weights *chk = flow_weights_open(path, FLOW_WF_SAFETENSORS, err, sizeof err);
	assert_non_null(chk);
	assert_memory_equal(flow_weights_find(chk, "dense/kernel")->data, k, sizeof k);
	flow_weights_close(chk);
	/* f64 in the file, f32 requested: converted */
	d = flow_eager_new("LoadWeight");
	flow_shape u = flow_shape_unknown();
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_string(d, "path", path);
	flow_op_set_attr_string(d, "tensor_name", "dense/bias");
	flow_op_set_attr_shape(d, "shape", &u);
	assert_int_equal(run(d, NULL, 0, &y, 1), 0);
	assert_true(FLOW_F32P(y)[0] == 0.5f && FLOW_F32P(y)[1] == -0.5f);
	flow_tensor_unref(y);
	d = flow_eager_new("LoadWeight");
	int64_t wrong[2] = {3, 3};
	flow_shape ws = flow_shape_make(2, wrong);
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_string(d, "path", path);
	flow_op_set_attr_string(d, "tensor_name", "dense/kernel");
	flow_op_set_attr_shape(d, "shape", &ws);
	expect_fail(d, NULL, 0, 1, "tensor 'dense/kernel' has shape 2x3, the graph expects 3x3");
	d = flow_eager_new("LoadWeight");
	flow_op_set_attr_type(d, "dtype", FLOW_F32);
	flow_op_set_attr_string(d, "path", path);
	flow_op_set_attr_string(d, "tensor_name", "nope");
	flow_op_set_attr_shape(d, "shape", &u);
	expect_fail(d, NULL, 0, 1, "no tensor named 'nope'");
	unlink(path);
	rmdir(dir);
}

/* ---- gradient kernels: numeric checks ---- */
static void conv_attrs_set(flow_op_desc *d, int sh, int sw, const char *pad)
{
	int64_t strides[4] = {1, sh, sw, 1};
	flow_op_set_attr_ints(d, "strides", strides, 4);
	flow_op_set_attr_string(d, "padding", pad);
}

/* L = sum(conv(x, f) * g) */
static double conv_loss(const float *x, const int64_t *dx, const float *f, const int64_t *df, const float *g,
			int sh, int sw, const char *pad)
{
	flow_op_desc *d = flow_eager_new("Conv2D");
	conv_attrs_set(d, sh, sw, pad);
	flow_tensor *in[2] = {tf32(4, dx, x), tf32(4, df, f)}, *y = NULL;
	assert_int_equal(run(d, in, 2, &y, 1), 0);
	double l = 0;
	for (int64_t i = 0; i < flow_tensor_nelem(y); i++)
		l += (double)FLOW_F32P(y)[i] * g[i];
	flow_tensor_unref(y);
	return l;
}

static void test_conv_pool_gradients(void **state)
{
	(void)state;
	enum { NB = 2, H = 6, W = 5, C = 2, KH = 3, KW = 3, OC = 3 };
	float x[NB * H * W * C], f[KH * KW * C * OC], g[NB * 3 * 3 * OC];
	for (int i = 0; i < NB * H * W * C; i++)
		x[i] = (float)((i * 37) % 23) / 8 - 1.4f;
	for (int i = 0; i < KH * KW * C * OC; i++)
		f[i] = (float)((i * 11) % 13) / 6 - 1;
	for (int i = 0; i < NB * 3 * 3 * OC; i++)
		g[i] = (float)((i * 5) % 7) / 3 - 1;
	int64_t dx[4] = {NB, H, W, C}, df[4] = {KH, KW, C, OC}, dg[4] = {NB, 3, 3, OC};
	int32_t xs[4] = {NB, H, W, C}, fs[4] = {KH, KW, C, OC};
	/* SAME with stride 2: 6x5 -> 3x3 */
	flow_op_desc *d = flow_eager_new("Conv2DBackpropInput");
	conv_attrs_set(d, 2, 2, "SAME");
	flow_tensor *in[3] = {ti32v(4, xs), tf32(4, df, f), tf32(4, dg, g)}, *gx = NULL, *gf = NULL;
	assert_int_equal(run(d, in, 3, &gx, 1), 0);
	d = flow_eager_new("Conv2DBackpropFilter");
	conv_attrs_set(d, 2, 2, "SAME");
	in[0] = tf32(4, dx, x);
	in[1] = ti32v(4, fs);
	in[2] = tf32(4, dg, g);
	assert_int_equal(run(d, in, 3, &gf, 1), 0);
	/* the loss is linear in x and in f: central differences with step 1 are exact */
	for (int i = 0; i < NB * H * W * C; i += 7) {
		float xp[NB * H * W * C], xm[NB * H * W * C];
		memcpy(xp, x, sizeof x);
		memcpy(xm, x, sizeof x);
		xp[i] += 1;
		xm[i] -= 1;
		double num = (conv_loss(xp, dx, f, df, g, 2, 2, "SAME") - conv_loss(xm, dx, f, df, g, 2, 2, "SAME")) / 2;
		assert_true(fabs(num - FLOW_F32P(gx)[i]) < 1e-3);
	}
	for (int i = 0; i < KH * KW * C * OC; i += 5) {
		float fp[KH * KW * C * OC], fm[KH * KW * C * OC];
		memcpy(fp, f, sizeof f);
		memcpy(fm, f, sizeof f);
		fp[i] += 1;
		fm[i] -= 1;
		double num = (conv_loss(x, dx, fp, df, g, 2, 2, "SAME") - conv_loss(x, dx, fm, df, g, 2, 2, "SAME")) / 2;
		assert_true(fabs(num - FLOW_F32P(gf)[i]) < 1e-3);
	}
	flow_tensor_unref(gx);
	flow_tensor_unref(gf);
	/* MaxPoolGrad: gradient lands on each window's maximum (finite differences) */
	int64_t ks[4] = {1, 2, 2, 1}, s2[4] = {1, 2, 2, 1};
	d = flow_eager_new("MaxPool");
	flow_op_set_attr_ints(d, "ksize", ks, 4);
	flow_op_set_attr_ints(d, "strides", s2, 4);
	flow_op_set_attr_string(d, "padding", "VALID");
	flow_tensor *pin[1] = {tf32(4, dx, x)}, *py = NULL;
	assert_int_equal(run(d, pin, 1, &py, 1), 0);
	int64_t pn = flow_tensor_nelem(py);
	float *pg = malloc((size_t)pn * sizeof *pg);
	for (int64_t i = 0; i < pn; i++)
		pg[i] = (float)(i % 5) - 2;
	flow_shape ps = flow_tensor_shape(py);
	d = flow_eager_new("MaxPoolGrad");
	flow_op_set_attr_ints(d, "ksize", ks, 4);
	flow_op_set_attr_ints(d, "strides", s2, 4);
	flow_op_set_attr_string(d, "padding", "VALID");
	flow_tensor *gin[3] = {tf32(4, dx, x), py, tf32(4, ps.dims, pg)}, *pgx = NULL;
	assert_int_equal(run(d, gin, 3, &pgx, 1), 0);
	double total = 0, want = 0;
	for (int64_t i = 0; i < flow_tensor_nelem(pgx); i++)
		total += FLOW_F32P(pgx)[i];
	for (int64_t i = 0; i < pn; i++)
		want += pg[i];
	assert_true(fabs(total - want) < 1e-4); /* every window routes all of its gradient */
	/* each non-zero lands on a window maximum */
	for (int n = 0; n < NB; n++)
		for (int oy = 0; oy < 3; oy++)
			for (int ox = 0; ox < 2; ox++)
				for (int c = 0; c < C; c++) {
					float mx = -1e30f;
					for (int ky = 0; ky < 2; ky++)
						for (int kx = 0; kx < 2; kx++)
							mx = fmaxf(mx, x[((n * H + oy * 2 + ky) * W + ox * 2 + kx) * C + c]);
					for (int ky = 0; ky < 2; ky++)
						for (int kx = 0; kx < 2; kx++) {
							int idx = ((n * H + oy * 2 + ky) * W + ox * 2 + kx) * C + c;
							if (FLOW_F32P(pgx)[idx] != 0)
								assert_true(x[idx] == mx);
						}
				}
	flow_tensor_unref(pgx);
	/* AvgPoolGrad spreads grad / window size */
	d = flow_eager_new("AvgPoolGrad");
	flow_op_set_attr_ints(d, "ksize", ks, 4);
	flow_op_set_attr_ints(d, "strides", s2, 4);
	flow_op_set_attr_string(d, "padding", "VALID");
	flow_tensor *ain[2] = {ti32v(4, xs), tf32(4, ps.dims, pg)};
	assert_int_equal(run(d, ain, 2, &pgx, 1), 0);
	assert_true(fabsf(FLOW_F32P(pgx)[0] - pg[0] / 4) < 1e-6f);
	assert_true(fabsf(FLOW_F32P(pgx)[C] - pg[0] / 4) < 1e-6f);
	flow_tensor_unref(pgx);
	free(pg);
}

static void test_grad_helpers(void **state)
{
	(void)state;
	int32_t a[3] = {2, 3, 4}, b[2] = {3, 1};
	flow_op_desc *d = flow_eager_new("BroadcastGradientArgs");
	flow_tensor *in[3] = {ti32v(3, a), ti32v(2, b)}, *out[2];
	assert_int_equal(run(d, in, 2, out, 2), 0);
	assert_int_equal(flow_tensor_nelem(out[0]), 0);
	assert_int_equal(flow_tensor_nelem(out[1]), 2);
	assert_true(FLOW_I32P(out[1])[0] == 0 && FLOW_I32P(out[1])[1] == 2);
	flow_tensor_unref(out[0]);
	flow_tensor_unref(out[1]);
	int32_t bad[1] = {5};
	d = flow_eager_new("BroadcastGradientArgs");
	in[0] = ti32v(3, a);
	in[1] = ti32v(1, bad);
	expect_fail(d, in, 2, 2, "incompatible shapes");
	/* UnsortedSegmentSum of rows */
	float x[6] = {1, 2, 3, 4, 5, 6};
	int64_t d32[2] = {3, 2};
	int32_t ids[3] = {1, -1, 1};
	d = flow_eager_new("UnsortedSegmentSum");
	in[0] = tf32(2, d32, x);
	in[1] = ti32v(3, ids);
	in[2] = scal_i32(2);
	flow_tensor *y = NULL;
	assert_int_equal(run(d, in, 3, &y, 1), 0);
	float ws[4] = {0, 0, 6, 8};
	assert_memory_equal(FLOW_F32P(y), ws, sizeof ws);
	flow_tensor_unref(y);
	/* TopKV2 with a tie: lower index first */
	float t[5] = {3, 9, 1, 9, 4};
	int64_t d5 = 5;
	d = flow_eager_new("TopKV2");
	in[0] = tf32(1, &d5, t);
	in[1] = scal_i32(3);
	assert_int_equal(run(d, in, 2, out, 2), 0);
	assert_true(FLOW_F32P(out[0])[0] == 9 && FLOW_F32P(out[0])[1] == 9 && FLOW_F32P(out[0])[2] == 4);
	assert_true(FLOW_I32P(out[1])[0] == 1 && FLOW_I32P(out[1])[1] == 3 && FLOW_I32P(out[1])[2] == 4);
	flow_tensor_unref(out[0]);
	flow_tensor_unref(out[1]);
}

/* Elementwise gradient helpers against central differences of their ops. */
static flow_tensor *f64v(int n, const double *v)
{
	int64_t d = n;
	return tdt(FLOW_F64, 1, &d, v);
}

static void test_elementwise_grads(void **state)
{
	(void)state;
	/* fwd op, grad op, grad's second input: 0 = x (features), 1 = y (outputs);
	 * order 0 = (g, z), 1 = (y, dy) */
	struct { const char *fwd, *grad; int uses_y, yfirst; double lo, hi; } c[] = {
		{"Relu", "ReluGrad", 0, 0, -2, 2}, {"Relu6", "Relu6Grad", 0, 0, -2, 8},
		{"Softplus", "SoftplusGrad", 0, 0, -4, 4}, {"Softsign", "SoftsignGrad", 0, 0, -4, 4},
		{"LeakyRelu", "LeakyReluGrad", 0, 0, -3, 3}, {"Elu", "EluGrad", 1, 0, -3, 3},
		{"Selu", "SeluGrad", 1, 0, -3, 3}, {"Sigmoid", "SigmoidGrad", 1, 1, -5, 5},
		{"Tanh", "TanhGrad", 1, 1, -3, 3}, {"Rsqrt", "RsqrtGrad", 1, 1, 0.2, 5},
		{"Sqrt", "SqrtGrad", 1, 1, 0.2, 5}, {"Reciprocal", "ReciprocalGrad", 1, 1, 0.3, 5},
	};
	enum { N = 16 };
	for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
		double x[N], g[N], xp[N], xm[N];
		for (int i = 0; i < N; i++) {
			x[i] = c[k].lo + (c[k].hi - c[k].lo) * (i + 0.37) / N; /* avoid kinks at 0 and 6 */
			g[i] = 1 + 0.1 * i;
			xp[i] = x[i] + 1e-6;
			xm[i] = x[i] - 1e-6;
		}
		flow_tensor *y = op1(c[k].fwd, f64v(N, x), NULL), *yp = op1(c[k].fwd, f64v(N, xp), NULL),
			    *ym = op1(c[k].fwd, f64v(N, xm), NULL);
		assert_non_null(y);
		flow_tensor *z = c[k].uses_y ? flow_tensor_ref(y) : f64v(N, x);
		flow_tensor *gr = c[k].yfirst ? op1(c[k].grad, z, f64v(N, g)) : op1(c[k].grad, f64v(N, g), z);
		if (!gr) {
			print_error("%s: %s\n", c[k].grad, flow_status_message(st));
			fail();
		}
		for (int i = 0; i < N; i++) {
			double num = g[i] * (FLOW_F64P(yp)[i] - FLOW_F64P(ym)[i]) / 2e-6;
			if (fabs(num - FLOW_F64P(gr)[i]) > 1e-5 * (1 + fabs(num))) {
				print_error("%s at x=%g: analytic %g numeric %g\n", c[k].grad, x[i], FLOW_F64P(gr)[i], num);
				fail();
			}
		}
		flow_tensor_unref(y);
		flow_tensor_unref(yp);
		flow_tensor_unref(ym);
		flow_tensor_unref(gr);
	}
	/* softmax cross-entropy backprop = d loss / d logits */
	double l[6] = {0.5, -1, 2, 0.1, 0.2, 0.3}, lab[6] = {0.2, 0.3, 0.5, 1, 0, 0};
	int64_t d23[2] = {2, 3};
	flow_op_desc *xd = flow_eager_new("SoftmaxCrossEntropyWithLogits");
	flow_tensor *in[2] = {tdt(FLOW_F64, 2, d23, l), tdt(FLOW_F64, 2, d23, lab)}, *out[2];
	assert_int_equal(run(xd, in, 2, out, 2), 0);
	for (int i = 0; i < 6; i++) {
		double lp[6], lm[6], fp[2], fm[2];
		memcpy(lp, l, sizeof l);
		memcpy(lm, l, sizeof l);
		lp[i] += 1e-6;
		lm[i] -= 1e-6;
		for (int s2 = 0; s2 < 2; s2++) {
			flow_op_desc *e = flow_eager_new("SoftmaxCrossEntropyWithLogits");
			flow_tensor *ein[2] = {tdt(FLOW_F64, 2, d23, s2 ? lm : lp), tdt(FLOW_F64, 2, d23, lab)}, *eo[2];
			assert_int_equal(run(e, ein, 2, eo, 2), 0);
			(s2 ? fm : fp)[0] = FLOW_F64P(eo[0])[i / 3];
			flow_tensor_unref(eo[0]);
			flow_tensor_unref(eo[1]);
		}
		assert_true(fabs((fp[0] - fm[0]) / 2e-6 - FLOW_F64P(out[1])[i]) < 1e-6);
	}
	flow_tensor_unref(out[0]);
	flow_tensor_unref(out[1]);
}

/* The same kernels inside a session: compile passes (folding, CSE, fusion,
 * in-place reuse of dying inputs) must not change results. */
static flow_output node(flow_graph *g, const char *type, flow_output a, flow_output b, int n)
{
	flow_output in[2] = {a, b};
	flow_output o = flow_simple(g, type, NULL, in, n, st);
	if (!o.op) {
		print_error("%s: %s\n", type, flow_status_message(st));
		fail();
	}
	return o;
}

static void test_session_chain(void **state)
{
	(void)state;
	enum { B = 8, I = 16, O = 12 };
	float w[I * O], b[O], x[B * I], c2[O];
	for (int i = 0; i < I * O; i++)
		w[i] = (float)((i * 13) % 17) / 10 - 0.8f;
	for (int i = 0; i < O; i++) {
		b[i] = (float)i / 10 - 0.5f;
		c2[i] = 0.25f * (float)(i % 3);
	}
	for (int i = 0; i < B * I; i++)
		x[i] = (float)((i * 7) % 11) / 5 - 1;
	int64_t dw[2] = {I, O}, db = O, dx[2] = {B, I};
	float results[2][B * O];
	for (int variant = 0; variant < 2; variant++) {
		flow_graph *g = flow_graph_new();
		int64_t pd[2] = {-1, I};
		flow_shape ps = flow_shape_make(2, pd);
		flow_output xin = flow_placeholder(g, "x", FLOW_F32, &ps, st);
		flow_tensor *tw = tf32(2, dw, w), *tb = tf32(1, &db, b), *tc = tf32(1, &db, c2);
		flow_output W = flow_const(g, "w", tw, st), Bv = flow_const(g, "b", tb, st), C = flow_const(g, "c", tc, st);
		flow_tensor_unref(tw);
		flow_tensor_unref(tb);
		flow_tensor_unref(tc);
		flow_output mm = node(g, "MatMul", xin, W, 2);
		flow_output ba = node(g, "BiasAdd", mm, Bv, 2);
		flow_output r = node(g, "Relu", ba, ba, 1);
		flow_output cc = node(g, "Mul", C, C, 2);           /* constant-foldable */
		flow_output ad = node(g, "Add", r, cc, 2);          /* broadcast, dying input 0 */
		flow_output t1 = node(g, "Tanh", ad, ad, 1);
		flow_output t2 = node(g, "Tanh", ad, ad, 1);        /* CSE twin */
		flow_output sq = node(g, "SquaredDifference", t1, t2, 2);
		flow_output s2 = node(g, "Add", sq, t1, 2);
		flow_output sm = node(g, "Softmax", s2, s2, 1);
		flow_session_options so = {0};
		so.op_timing = -1;
		so.disable_passes = variant ? (FLOW_PASS_CONSTANT_FOLDING | FLOW_PASS_CSE | FLOW_PASS_FUSION |
					       FLOW_PASS_MEMORY_PLAN) : 0;
		flow_session *sess = flow_session_new(g, &so, st);
		assert_non_null(sess);
		flow_tensor *feed = tf32(2, dx, x), *out = NULL;
		for (int rep = 0; rep < 2; rep++) {
			if (flow_session_run(sess, &xin, &feed, 1, &sm, &out, 1, NULL, 0, st)) {
				print_error("run: %s\n", flow_status_message(st));
				fail();
			}
			memcpy(results[variant], FLOW_F32P(out), sizeof results[variant]);
			flow_tensor_unref(out);
		}
		flow_session_stats ss;
		flow_session_stats_get(sess, &ss);
		if (variant == 0)
			assert_true(ss.last_folded + ss.last_cse_removed + ss.last_fused + ss.last_inplace > 0);
		flow_tensor_unref(feed);
		flow_session_free(sess);
		flow_graph_free(g);
	}
	close_f(results[0], results[1], B * O, 1e-5f);
	/* and the reference, computed here */
	for (int i = 0; i < B; i++) {
		double row[O], mx = -1e30, sum = 0;
		for (int j = 0; j < O; j++) {
			double acc = b[j];
			for (int k = 0; k < I; k++)
				acc += (double)x[i * I + k] * w[k * O + j];
			double t = tanh((acc > 0 ? acc : 0) + c2[j] * c2[j]);
			row[j] = t;
			mx = fmax(mx, t);
		}
		for (int j = 0; j < O; j++)
			sum += exp(row[j] - mx);
		for (int j = 0; j < O; j++)
			assert_true(fabs(results[0][i * O + j] - exp(row[j] - mx) / sum) < 1e-5);
	}
}

/* Random shape pairs up to rank 5 against an index-by-index reference. */
static void test_broadcast_random(void **state)
{
	(void)state;
	unsigned seed = 12345;
	for (int iter = 0; iter < 300; iter++) {
		int nd = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 5;
		int64_t out[5], da[5], db[5];
		int na = nd, nb = nd;
		for (int d = 0; d < nd; d++) {
			seed = seed * 1103515245u + 12345u;
			out[d] = 1 + (seed >> 16) % 3;
			int r = (int)((seed >> 20) % 4);
			da[d] = r == 0 ? 1 : out[d];
			db[d] = r == 1 ? 1 : out[d];
		}
		seed = seed * 1103515245u + 12345u;
		int drop = (int)((seed >> 16) % 3);
		if (drop == 1 && na > 1) { /* a loses leading dims (they broadcast) */
			memmove(da, da + 1, sizeof(int64_t) * (size_t)(na - 1));
			na--;
		} else if (drop == 2 && nb > 1) {
			memmove(db, db + 1, sizeof(int64_t) * (size_t)(nb - 1));
			nb--;
		}
		/* the output is what the (possibly shortened) inputs broadcast to */
		for (int d = 0; d < nd; d++) {
			int ia = d - (nd - na), ib = d - (nd - nb);
			int64_t xa = ia >= 0 ? da[ia] : 1, xb = ib >= 0 ? db[ib] : 1;
			out[d] = xa > xb ? xa : xb;
		}
		int64_t ne = 1, nea = 1, neb = 1;
		for (int d = 0; d < nd; d++)
			ne *= out[d];
		for (int d = 0; d < na; d++)
			nea *= da[d];
		for (int d = 0; d < nb; d++)
			neb *= db[d];
		double a[243], b[243];
		int32_t ai[243], bi[243];
		for (int64_t i = 0; i < nea; i++) {
			a[i] = (double)((i * 7 + iter) % 13) - 6;
			ai[i] = (int32_t)a[i];
		}
		for (int64_t i = 0; i < neb; i++) {
			b[i] = (double)((i * 5 + iter) % 11) - 5;
			bi[i] = (int32_t)b[i];
		}
		const char *op = (const char *[]){"Add", "Mul", "Maximum", "SquaredDifference"}[iter % 4];
		int ints = iter % 2;
		flow_tensor *y = ints ? op1(op, tdt(FLOW_I32, na, da, ai), tdt(FLOW_I32, nb, db, bi))
				      : op1(op, tdt(FLOW_F64, na, da, a), tdt(FLOW_F64, nb, db, b));
		if (!y) {
			print_error("%s: %s\n", op, flow_status_message(st));
			fail();
		}
		assert_int_equal(flow_tensor_ndim(y), nd);
		for (int64_t i = 0; i < ne; i++) {
			int64_t idx[5], q = i, oa = 0, ob = 0, sa = 1, sb = 1;
			for (int d = nd - 1; d >= 0; d--) {
				idx[d] = q % out[d];
				q /= out[d];
			}
			for (int d = nd - 1; d >= 0; d--) {
				int ia = d - (nd - na), ib = d - (nd - nb);
				if (ia >= 0) {
					oa += (da[ia] == 1 ? 0 : idx[d]) * sa;
					sa *= da[ia];
				}
				if (ib >= 0) {
					ob += (db[ib] == 1 ? 0 : idx[d]) * sb;
					sb *= db[ib];
				}
			}
			double x = a[oa], v = b[ob], w;
			switch (iter % 4) {
			case 0: w = x + v; break;
			case 1: w = x * v; break;
			case 2: w = x > v ? x : v; break;
			default: w = (x - v) * (x - v); break;
			}
			double got = ints ? FLOW_I32P(y)[i] : FLOW_F64P(y)[i];
			if (got != w) {
				print_error("iter %d %s: element %lld got %g want %g (na %d nb %d nd %d: a %lld,%lld,%lld b %lld,%lld,%lld)\n", iter, op, (long long)i, got, w, na, nb, nd, (long long)da[0], (long long)(na > 1 ? da[1] : 0), (long long)(na > 2 ? da[2] : 0), (long long)db[0], (long long)(nb > 1 ? db[1] : 0), (long long)(nb > 2 ? db[2] : 0));
				fail();
			}
		}
		flow_tensor_unref(y);
	}
}

/* Rank-5 reductions over alternating axes: several passes. */
static void test_reduce_multipass(void **state)
{
	(void)state;
	int64_t d[5] = {2, 3, 2, 3, 2};
	float x[72];
	for (int i = 0; i < 72; i++)
		x[i] = (float)((i * 29) % 31) - 15;
	int32_t sets[3][3] = {{1, 3}, {0, 2, 4}, {4, 0}};
	int nset[3] = {2, 3, 2};
	for (int sidx = 0; sidx < 3; sidx++)
		for (int op = 0; op < 2; op++) {
			int mask[5] = {0};
			for (int i = 0; i < nset[sidx]; i++)
				mask[sets[sidx][i]] = 1;
			flow_tensor *y = reduce(op ? "Max" : "Sum", tf32(5, d, x), sets[sidx], nset[sidx], 1);
			assert_non_null(y);
			int64_t od[5], on = 1;
			for (int k = 0; k < 5; k++) {
				od[k] = mask[k] ? 1 : d[k];
				on *= od[k];
			}
			for (int64_t o = 0; o < on; o++) {
				int64_t oi[5], q = o;
				for (int k = 4; k >= 0; k--) {
					oi[k] = q % od[k];
					q /= od[k];
				}
				double acc = op ? -1e30 : 0;
				for (int i = 0; i < 72; i++) {
					int64_t ii[5], r = i, ok = 1;
					for (int k = 4; k >= 0; k--) {
						ii[k] = r % d[k];
						r /= d[k];
					}
					for (int k = 0; k < 5; k++)
						if (!mask[k] && ii[k] != oi[k])
							ok = 0;
					if (ok)
						acc = op ? fmax(acc, x[i]) : acc + x[i];
				}
				assert_true(fabs(FLOW_F32P(y)[o] - acc) < 1e-4);
			}
			flow_tensor_unref(y);
		}
}

/* Empty tensors go through every kind of kernel without failing. */
static void test_empty_tensors(void **state)
{
	(void)state;
	int64_t e03[2] = {0, 3}, d3 = 3, e0 = 0, d32[2] = {3, 2};
	float v3[3] = {1, 2, 3}, v6[6] = {0};
	struct { const char *op; int two; } ops[] = {{"Add", 1}, {"Tanh", 0}, {"Softmax", 0}, {"Relu", 0},
						     {"Neg", 0}, {"Maximum", 1}, {"Greater", 1}};
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
		flow_tensor *y = op1(ops[i].op, tf32(2, e03, NULL), ops[i].two ? tf32(1, &d3, v3) : NULL);
		if (!y) {
			print_error("%s: %s\n", ops[i].op, flow_status_message(st));
			fail();
		}
		assert_true(flow_tensor_nelem(y) == 0 && flow_tensor_dim(y, 1) == 3);
		flow_tensor_unref(y);
	}
	flow_tensor *y = op1("MatMul", tf32(2, e03, NULL), tf32(2, d32, v6));
	assert_true(y && flow_tensor_dim(y, 0) == 0 && flow_tensor_dim(y, 1) == 2);
	flow_tensor_unref(y);
	int64_t d3x0[2] = {3, 0};
	int64_t d0x2[2] = {0, 2}; /* k = 0: a zero matrix */
	y = op1("MatMul", tf32(2, d3x0, NULL), tf32(2, d0x2, NULL));
	assert_true(y && flow_tensor_dim(y, 0) == 3 && flow_tensor_dim(y, 1) == 2);
	for (int i = 0; i < 6; i++)
		assert_true(FLOW_F32P(y)[i] == 0);
	flow_tensor_unref(y);
	int32_t ax[1] = {0};
	y = reduce("Sum", tf32(2, e03, NULL), ax, 1, 0);
	assert_true(y && flow_tensor_nelem(y) == 3 && FLOW_F32P(y)[0] == 0);
	flow_tensor_unref(y);
	y = reduce("Max", tf32(2, e03, NULL), ax, 1, 0);
	assert_true(y && flow_tensor_nelem(y) == 3 && isinf(FLOW_F32P(y)[0]));
	flow_tensor_unref(y);
	int32_t shp[2] = {3, 0};
	y = op1("Reshape", tf32(2, e03, NULL), ti32v(2, shp));
	assert_true(y && flow_tensor_dim(y, 0) == 3 && flow_tensor_dim(y, 1) == 0);
	flow_tensor_unref(y);
	int32_t perm[2] = {1, 0};
	y = op1("Transpose", tf32(2, e03, NULL), ti32v(2, perm));
	assert_true(y && flow_tensor_dim(y, 0) == 3);
	flow_tensor_unref(y);
	y = op1("Where", tf32(1, &e0, NULL), NULL);
	assert_true(y && flow_tensor_dim(y, 0) == 0 && flow_tensor_dim(y, 1) == 1);
	flow_tensor_unref(y);
	flow_op_desc *d = flow_eager_new("GatherV2");
	flow_tensor *in[3] = {tf32(1, &d3, v3), tdt(FLOW_I32, 1, &e0, NULL), scal_i32(0)};
	assert_int_equal(run(d, in, 3, &y, 1), 0);
	assert_true(flow_tensor_nelem(y) == 0);
	flow_tensor_unref(y);
	/* Conv2D on an empty batch */
	int64_t xd[4] = {0, 4, 4, 1}, fd[4] = {2, 2, 1, 1};
	float f4[4] = {1, 1, 1, 1};
	d = flow_eager_new("Conv2D");
	int64_t strides[4] = {1, 1, 1, 1};
	flow_op_set_attr_ints(d, "strides", strides, 4);
	flow_op_set_attr_string(d, "padding", "VALID");
	in[0] = tf32(4, xd, NULL);
	in[1] = tf32(4, fd, f4);
	assert_int_equal(run(d, in, 2, &y, 1), 0);
	assert_true(flow_tensor_dim(y, 0) == 0 && flow_tensor_dim(y, 1) == 3);
	flow_tensor_unref(y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_unary),
		cmocka_unit_test(test_binary_broadcast),
		cmocka_unit_test(test_broadcast_random),
		cmocka_unit_test(test_integer_semantics),
		cmocka_unit_test(test_large_parallel),
		cmocka_unit_test(test_reductions),
		cmocka_unit_test(test_reduce_multipass),
		cmocka_unit_test(test_matmul),
		cmocka_unit_test(test_softmax_xent_bias),
		cmocka_unit_test(test_conv_pool),
		cmocka_unit_test(test_shape_ops),
		cmocka_unit_test(test_slicing),
		cmocka_unit_test(test_misc_array),
		cmocka_unit_test(test_random_ops),
		cmocka_unit_test(test_load_weight),
		cmocka_unit_test(test_conv_pool_gradients),
		cmocka_unit_test(test_grad_helpers),
		cmocka_unit_test(test_elementwise_grads),
		cmocka_unit_test(test_session_chain),
		cmocka_unit_test(test_empty_tensors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
