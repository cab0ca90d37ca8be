/*
 * elementwise.c — unary and binary elementwise ops: math, activations and
 * their gradient helpers, comparisons, logical and bitwise ops.
 *
 * Binary ops broadcast like numpy. Kernels are generated per dtype from one
 * expression: float math through <tgmath.h>, integer helpers through
 * _Generic, so each op is written once. Large tensors are split across the
 * intra-op pool; outputs reuse a dying input's buffer when the memory plan
 * allows (flow_ctx_output_inplace).
 */
#include "ops_common.h"

#include <stdio.h>
#include <tgmath.h>

/* ---- per-type scalar helpers ---- */
#define GEN2(name, body_f, body_i)                                                   \
	static inline float name##_f32(float x, float y) { typedef float S; (void)sizeof(S); body_f } \
	static inline double name##_f64(double x, double y) { typedef double S; (void)sizeof(S); body_f } \
	static inline int32_t name##_i32(int32_t x, int32_t y)                       \
	{ typedef int32_t S; typedef uint32_t U; (void)sizeof(S); (void)sizeof(U); body_i } \
	static inline int64_t name##_i64(int64_t x, int64_t y)                       \
	{ typedef int64_t S; typedef uint64_t U; (void)sizeof(S); (void)sizeof(U); body_i }
#define G2(name, x, y) \
	_Generic((x), float: name##_f32, double: name##_f64, int32_t: name##_i32, int64_t: name##_i64)(x, y)
#define GEN1(name, body_f, body_i)                                                   \
	static inline float name##_f32(float x) { typedef float S; (void)sizeof(S); body_f } \
	static inline double name##_f64(double x) { typedef double S; (void)sizeof(S); body_f } \
	static inline int32_t name##_i32(int32_t x)                                  \
	{ typedef int32_t S; typedef uint32_t U; (void)sizeof(S); (void)sizeof(U); body_i } \
	static inline int64_t name##_i64(int64_t x)                                  \
	{ typedef int64_t S; typedef uint64_t U; (void)sizeof(S); (void)sizeof(U); body_i }
#define G1(name, x) \
	_Generic((x), float: name##_f32, double: name##_f64, int32_t: name##_i32, int64_t: name##_i64)(x)

GEN2(add, return x + y;, return (S)((U)x + (U)y);)
GEN2(sub, return x - y;, return (S)((U)x - (U)y);)
GEN2(mul, return x * y;, return (S)((U)x * (U)y);)
/* Integer division: y == 0 is rejected before the loop; y == -1 wraps. */
GEN2(tdiv, return x / y;, if (y == 0) return 0; if (y == -1) return (S)(0 - (U)x); return x / y;)
GEN2(fdiv, return floor(x / y);,
     if (y == 0) return 0; if (y == -1) return (S)(0 - (U)x);
     S q = x / y; if (x % y != 0 && ((x < 0) != (y < 0))) q--; return q;)
GEN2(tmod, return fmod(x, y);, if (y == 0 || y == -1) return 0; return x % y;)
GEN2(fmodf_, S r = fmod(x, y); if (r != 0 && ((r < 0) != (y < 0))) r += y; return r;,
     if (y == 0 || y == -1) return 0; S r = x % y; if (r != 0 && ((r < 0) != (y < 0))) r += y; return r;)
GEN2(ipow, return pow(x, y);,
     U r = 1; U b = (U)x; S e = y; if (e < 0) return 0;
     while (e) { if (e & 1) r *= b; b *= b; e >>= 1; } return (S)r;)
GEN2(maxi, return (x > y || isnan(x)) ? x : y;, return x > y ? x : y;)
GEN2(mini, return (x < y || isnan(x)) ? x : y;, return x < y ? x : y;)
GEN2(sqdiff, S d = x - y; return d * d;, U d = (U)x - (U)y; return (S)(d * d);)
GEN1(neg, return -x;, return (S)(0 - (U)x);)
GEN1(absv, return fabs(x);, return x < 0 ? (S)(0 - (U)x) : x;)
GEN1(sign, return x > 0 ? (S)1 : x < 0 ? (S)-1 : x;, return (S)((x > 0) - (x < 0));)
GEN1(square, return x * x;, return (S)((U)x * (U)x);)
GEN1(relu, return x > 0 ? x : (S)0;, return x > 0 ? x : 0;)
GEN1(relu6, return x > 0 ? (x < 6 ? x : (S)6) : (S)0;, return x > 0 ? (x < 6 ? x : 6) : 0;)

#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717

static inline float sigm_f32(float x)
{
	return x >= 0 ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
}
static inline double sigm_f64(double x)
{
	return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}
#define SIGM(x) _Generic((x), float: sigm_f32, double: sigm_f64)(x)
static inline float softplus_f32(float x) { return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
static inline double softplus_f64(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
#define SOFTPLUS(x) _Generic((x), float: softplus_f32, double: softplus_f64)(x)

/* ---- unary kernels ---- */
typedef struct un_job {
	const void *x;
	void *y;
	double alpha;
} un_job;

static void unary_run(flow_kernel_ctx *k, void (*fn)(void *, int64_t, int64_t),
		      const char *alpha_attr, double alpha_dflt, int same_type)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	flow_tensor *y = same_type ? flow_ctx_output_inplace(k, 0, 0, x->ndim, x->dims)
				   : flow_ctx_output(k, 0, x->ndim, x->dims);
	if (!y)
		return;
	un_job j = {flow_tensor_ptr(x), flow_tensor_ptr(y),
		    alpha_attr ? flow_ctx_attr_float(k, alpha_attr, alpha_dflt) : alpha_dflt};
	ops_parallel(k, x->nelem, OPS_GRAIN, fn, &j);
}

#define UNARY_T(NAME, T, OT, SFX, EXPR, ATTR, DFLT)                                   \
	static void u_##NAME##_##SFX(void *ud, int64_t lo, int64_t hi)                 \
	{                                                                              \
		un_job *j = ud;                                                        \
		const T *X = j->x;                                                     \
		OT *Y = j->y;                                                          \
		const T alpha = (T)j->alpha;                                           \
		(void)alpha;                                                           \
		for (int64_t i = lo; i < hi; i++) {                                    \
			T x = X[i];                                                    \
			Y[i] = (OT)(EXPR);                                             \
		}                                                                      \
	}                                                                              \
	static void k_##NAME##_##SFX(flow_kernel_ctx *k)                               \
	{                                                                              \
		unary_run(k, u_##NAME##_##SFX, ATTR, DFLT, sizeof(T) == sizeof(OT));   \
	}

#define UN_F(NAME, EXPR) UNARY_T(NAME, float, float, f32, EXPR, NULL, 0) \
			 UNARY_T(NAME, double, double, f64, EXPR, NULL, 0)
#define UN_FA(NAME, EXPR, ATTR, DFLT) UNARY_T(NAME, float, float, f32, EXPR, ATTR, DFLT) \
				      UNARY_T(NAME, double, double, f64, EXPR, ATTR, DFLT)
#define UN_N(NAME, EXPR) UN_F(NAME, EXPR) UNARY_T(NAME, int32_t, int32_t, i32, EXPR, NULL, 0) \
			 UNARY_T(NAME, int64_t, int64_t, i64, EXPR, NULL, 0)
#define UN_FB(NAME, EXPR) UNARY_T(NAME, float, uint8_t, f32, EXPR, NULL, 0) \
			  UNARY_T(NAME, double, uint8_t, f64, EXPR, NULL, 0)

UN_N(Neg, G1(neg, x))
UN_N(Abs, G1(absv, x))
UN_N(Sign, G1(sign, x))
UN_N(Square, G1(square, x))
UN_N(Relu, G1(relu, x))
UN_N(Relu6, G1(relu6, x))
UN_F(Sqrt, sqrt(x))
UN_F(Rsqrt, 1 / sqrt(x))
UN_F(Exp, exp(x))
UN_F(Expm1, expm1(x))
UN_F(Log, log(x))
UN_F(Log1p, log1p(x))
UN_F(Sin, sin(x))
UN_F(Cos, cos(x))
UN_F(Tan, tan(x))
UN_F(Asin, asin(x))
UN_F(Acos, acos(x))
UN_F(Atan, atan(x))
UN_F(Sinh, sinh(x))
UN_F(Cosh, cosh(x))
UN_F(Tanh, tanh(x))
UN_F(Asinh, asinh(x))
UN_F(Acosh, acosh(x))
UN_F(Atanh, atanh(x))
UN_F(Floor, floor(x))
UN_F(Ceil, ceil(x))
UN_F(Round, nearbyint(x))   /* half to even, as TF's Round */
UN_F(Rint, rint(x))
UN_F(Reciprocal, 1 / x)
UN_F(Sigmoid, SIGM(x))
UN_F(Elu, x > 0 ? x : expm1(x))
UN_F(Selu, x > 0 ? x * SELU_SCALE : SELU_SCALE * SELU_ALPHA * expm1(x))
UN_F(Softplus, SOFTPLUS(x))
UN_F(Softsign, x / (1 + fabs(x)))
UN_FA(Gelu, alpha != 0 ? x * 0.5 * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
			: x * 0.5 * (1 + erf(x * 0.7071067811865476)), "approximate", 0)
UN_F(Silu, x * SIGM(x))
UN_FA(LeakyRelu, x > 0 ? x : alpha * x, "alpha", 0.2)
UN_F(Erf, erf(x))
UN_F(Erfc, erfc(x))
UN_F(Lgamma, lgamma(x))
UN_F(Mish, x * tanh(SOFTPLUS(x)))
UN_F(HardSigmoid, x <= -3 ? 0 : x >= 3 ? 1 : x / 6 + 0.5)
UN_F(HardSwish, x <= -3 ? 0 : x >= 3 ? x : x * (x + 3) / 6)
UN_F(Log2, log2(x))
UN_F(Exp2, exp2(x))
UN_F(Cbrt, cbrt(x))
UN_FB(IsNan, isnan(x))
UN_FB(IsInf, isinf(x))
UN_FB(IsFinite, isfinite(x))
UNARY_T(LogicalNot, uint8_t, uint8_t, bool, !x, NULL, 0)
UNARY_T(Invert, int32_t, int32_t, i32, (int32_t)~(uint32_t)x, NULL, 0)
UNARY_T(Invert, int64_t, int64_t, i64, (int64_t)~(uint64_t)x, NULL, 0)

/* ---- binary kernels ---- */
enum { CHK_NONE = 0, CHK_DIV0 = 1, CHK_NEGPOW = 2 };

typedef struct bin_job {
	ops_bcast bc;
	const void *a, *b;
	void *o;
	double alpha;
} bin_job;

static int has_zero(const flow_tensor *t)
{
	const void *p = flow_tensor_cdata(t);
	for (int64_t i = 0; i < t->nelem; i++)
		if (t->dtype == FLOW_I32 ? ((const int32_t *)p)[i] == 0 : ((const int64_t *)p)[i] == 0)
			return 1;
	return 0;
}

static int has_negative(const flow_tensor *t)
{
	const void *p = flow_tensor_cdata(t);
	for (int64_t i = 0; i < t->nelem; i++)
		if (t->dtype == FLOW_I32 ? ((const int32_t *)p)[i] < 0 : ((const int64_t *)p)[i] < 0)
			return 1;
	return 0;
}

static void binary_run(flow_kernel_ctx *k, void (*fn)(void *, int64_t, int64_t), int check,
		       const char *alpha_attr, double alpha_dflt, int same_type)
{
	flow_tensor *a = flow_ctx_input(k, 0), *b = flow_ctx_input(k, 1);
	bin_job j;
	char msg[200];
	if (ops_bcast_init(&j.bc, a, b, msg, sizeof msg)) {
		char sa[96], sb[96];
		flow_shape xa = flow_tensor_shape(a), xb = flow_tensor_shape(b);
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s (%s vs %s)", msg,
			      flow_shape_str(&xa, sa, sizeof sa), flow_shape_str(&xb, sb, sizeof sb));
		return;
	}
	if ((check & CHK_DIV0) && (b->dtype == FLOW_I32 || b->dtype == FLOW_I64) && has_zero(b)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "integer division by zero (input 1 has a 0)");
		return;
	}
	if ((check & CHK_NEGPOW) && (b->dtype == FLOW_I32 || b->dtype == FLOW_I64) && has_negative(b)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT,
			      "integers to negative integer powers are not allowed (input 1)");
		return;
	}
	flow_tensor *o;
	if (same_type && a->nelem == j.bc.nelem && a->ndim == j.bc.ndim)
		o = flow_ctx_output_inplace(k, 0, 0, j.bc.ndim, j.bc.dims);
	else if (same_type && b->nelem == j.bc.nelem && b->ndim == j.bc.ndim)
		o = flow_ctx_output_inplace(k, 0, 1, j.bc.ndim, j.bc.dims);
	else
		o = flow_ctx_output(k, 0, j.bc.ndim, j.bc.dims);
	if (!o)
		return;
	j.a = flow_tensor_cdata(a);
	j.b = flow_tensor_cdata(b);
	j.o = flow_tensor_ptr(o);
	j.alpha = alpha_attr ? flow_ctx_attr_float(k, alpha_attr, alpha_dflt) : alpha_dflt;
	if (j.bc.mode == BC_GENERAL)
		ops_parallel(k, j.bc.rows, ops_grain_for(j.bc.inner), fn, &j);
	else
		ops_parallel(k, j.bc.nelem, OPS_GRAIN, fn, &j);
}

#define BINARY_T(NAME, T, OT, SFX, EXPR, CHECK, ATTR, DFLT)                                  \
	static void b_##NAME##_##SFX(void *ud, int64_t lo, int64_t hi)                        \
	{                                                                                     \
		bin_job *j = ud;                                                              \
		const T *A = j->a, *B = j->b;                                                 \
		OT *O = j->o;                                                                 \
		const T alpha = (T)j->alpha;                                                  \
		(void)alpha;                                                                  \
		switch (j->bc.mode) {                                                         \
		case BC_SAME:                                                                 \
			for (int64_t i = lo; i < hi; i++) {                                   \
				T x = A[i], y = B[i];                                         \
				O[i] = (OT)(EXPR);                                            \
			}                                                                     \
			break;                                                                \
		case BC_SCALAR_A: {                                                           \
			const T x = A[0];                                                     \
			for (int64_t i = lo; i < hi; i++) {                                   \
				T y = B[i];                                                   \
				O[i] = (OT)(EXPR);                                            \
			}                                                                     \
			break;                                                                \
		}                                                                             \
		case BC_SCALAR_B: {                                                           \
			const T y = B[0];                                                     \
			for (int64_t i = lo; i < hi; i++) {                                   \
				T x = A[i];                                                   \
				O[i] = (OT)(EXPR);                                            \
			}                                                                     \
			break;                                                                \
		}                                                                             \
		default: {                                                                    \
			const int64_t n = j->bc.inner, sa = j->bc.sa[j->bc.ndim - 1],         \
				      sb = j->bc.sb[j->bc.ndim - 1];                          \
			for (int64_t r = lo; r < hi; r++) {                                   \
				int64_t oa, ob;                                               \
				ops_bcast_row(&j->bc, r, &oa, &ob);                           \
				OT *o = O + r * n;                                            \
				const T *pa = A + oa, *pb = B + ob;                           \
				for (int64_t c = 0; c < n; c++) {                             \
					T x = pa[c * sa], y = pb[c * sb];                     \
					o[c] = (OT)(EXPR);                                    \
				}                                                             \
			}                                                                     \
		}                                                                             \
		}                                                                             \
	}                                                                                     \
	static void k_##NAME##_##SFX(flow_kernel_ctx *k)                                      \
	{                                                                                     \
		binary_run(k, b_##NAME##_##SFX, CHECK, ATTR, DFLT, sizeof(T) == sizeof(OT));  \
	}

#define BI_F(NAME, EXPR) BINARY_T(NAME, float, float, f32, EXPR, 0, NULL, 0) \
			 BINARY_T(NAME, double, double, f64, EXPR, 0, NULL, 0)
#define BI_FA(NAME, EXPR, ATTR, DFLT) BINARY_T(NAME, float, float, f32, EXPR, 0, ATTR, DFLT) \
				      BINARY_T(NAME, double, double, f64, EXPR, 0, ATTR, DFLT)
#define BI_NC(NAME, EXPR, CHECK) BINARY_T(NAME, float, float, f32, EXPR, CHECK, NULL, 0)  \
				 BINARY_T(NAME, double, double, f64, EXPR, CHECK, NULL, 0) \
				 BINARY_T(NAME, int32_t, int32_t, i32, EXPR, CHECK, NULL, 0) \
				 BINARY_T(NAME, int64_t, int64_t, i64, EXPR, CHECK, NULL, 0)
#define BI_N(NAME, EXPR) BI_NC(NAME, EXPR, 0)
#define BI_I(NAME, EXPR) BINARY_T(NAME, int32_t, int32_t, i32, EXPR, 0, NULL, 0) \
			 BINARY_T(NAME, int64_t, int64_t, i64, EXPR, 0, NULL, 0)
/* comparisons: bool output */
#define CMP_N(NAME, EXPR) BINARY_T(NAME, float, uint8_t, f32, EXPR, 0, NULL, 0)  \
			  BINARY_T(NAME, double, uint8_t, f64, EXPR, 0, NULL, 0) \
			  BINARY_T(NAME, int32_t, uint8_t, i32, EXPR, 0, NULL, 0) \
			  BINARY_T(NAME, int64_t, uint8_t, i64, EXPR, 0, NULL, 0)
#define CMP_ALL(NAME, EXPR) CMP_N(NAME, EXPR) BINARY_T(NAME, uint8_t, uint8_t, bool, EXPR, 0, NULL, 0)

BI_N(Add, G2(add, x, y))
BI_N(AddV2, G2(add, x, y))
BI_N(Sub, G2(sub, x, y))
BI_N(Mul, G2(mul, x, y))
BI_NC(Div, G2(tdiv, x, y), CHK_DIV0)
BI_F(RealDiv, x / y)
BI_NC(FloorDiv, G2(fdiv, x, y), CHK_DIV0)
BI_NC(FloorMod, G2(fmodf_, x, y), CHK_DIV0)
BI_NC(TruncateDiv, G2(tdiv, x, y), CHK_DIV0)
BI_NC(TruncateMod, G2(tmod, x, y), CHK_DIV0)
BI_NC(Mod, G2(tmod, x, y), CHK_DIV0)
BI_NC(Pow, G2(ipow, x, y), CHK_NEGPOW)
BI_N(Maximum, G2(maxi, x, y))
BI_N(Minimum, G2(mini, x, y))
BI_N(SquaredDifference, G2(sqdiff, x, y))
BI_F(DivNoNan, y == 0 ? 0 : x / y)
BI_F(MulNoNan, y == 0 ? 0 : x * y)
BI_F(Xdivy, x == 0 ? 0 : x / y)
BI_F(Xlogy, x == 0 ? 0 : x * log(y))
BI_F(Xlog1py, x == 0 ? 0 : x * log1p(y))
BI_F(Atan2, atan2(x, y))
/* Gradient helpers, named and ordered as TensorFlow's. */
BI_N(ReluGrad, y > 0 ? x : 0)                 /* (gradients, features) */
BI_N(Relu6Grad, (y > 0 && y < 6) ? x : 0)     /* (gradients, features) */
BI_F(SigmoidGrad, y * x * (1 - x))            /* (y, dy) */
BI_F(TanhGrad, y * (1 - x * x))               /* (y, dy) */
BI_F(SoftplusGrad, x * SIGM(y))               /* (gradients, features) */
BI_F(SoftsignGrad, x / ((1 + fabs(y)) * (1 + fabs(y))))
BI_F(EluGrad, y > 0 ? x : x * (y + 1))        /* (gradients, outputs) */
BI_F(SeluGrad, y > 0 ? x * SELU_SCALE : x * (y + SELU_SCALE * SELU_ALPHA))
BI_F(RsqrtGrad, y * (-0.5) * x * x * x)       /* (y, dy) */
BI_F(SqrtGrad, y * 0.5 / x)                   /* (y, dy) */
BI_F(ReciprocalGrad, -y * x * x)              /* (y, dy) */
BI_FA(LeakyReluGrad, y > 0 ? x : alpha * x, "alpha", 0.2)
BINARY_T(ApproximateEqual, float, uint8_t, f32, fabs(x - y) < alpha, 0, "tolerance", 1e-5)
BINARY_T(ApproximateEqual, double, uint8_t, f64, fabs(x - y) < alpha, 0, "tolerance", 1e-5)
CMP_ALL(Equal, x == y)
CMP_ALL(NotEqual, x != y)
CMP_N(Less, x < y)
CMP_N(LessEqual, x <= y)
CMP_N(Greater, x > y)
CMP_N(GreaterEqual, x >= y)
BINARY_T(LogicalAnd, uint8_t, uint8_t, bool, x && y, 0, NULL, 0)
BINARY_T(LogicalOr, uint8_t, uint8_t, bool, x || y, 0, NULL, 0)
BINARY_T(LogicalXor, uint8_t, uint8_t, bool, (!x) != (!y), 0, NULL, 0)
BI_I(BitwiseAnd, x & y)
BI_I(BitwiseOr, x | y)
BI_I(BitwiseXor, x ^ y)
/* Shifts by a negative or too large amount give 0 (left) or the sign fill
 * (right) instead of undefined behaviour. */
BINARY_T(LeftShift, int32_t, int32_t, i32, (y < 0 || y > 31) ? 0 : (int32_t)((uint32_t)x << y), 0, NULL, 0)
BINARY_T(LeftShift, int64_t, int64_t, i64, (y < 0 || y > 63) ? 0 : (int64_t)((uint64_t)x << y), 0, NULL, 0)
BINARY_T(RightShift, int32_t, int32_t, i32, (y < 0 || y > 31) ? (x < 0 ? -1 : 0) : x >> y, 0, NULL, 0)
BINARY_T(RightShift, int64_t, int64_t, i64, (y < 0 || y > 63) ? (x < 0 ? -1 : 0) : x >> y, 0, NULL, 0)

/* AddN: sum of a list of same-shape tensors (gradient accumulation). */
typedef struct addn_job {
	const void **in;
	int n;
	void *out;
	flow_dtype dt;
} addn_job;

static void addn_range(void *ud, int64_t lo, int64_t hi)
{
	addn_job *j = ud;
	switch (j->dt) {
#define ADDN_CASE(DT, T, SUMEXPR)                                                      \
	case DT: {                                                                     \
		T *o = j->out;                                                         \
		for (int64_t i = lo; i < hi; i++) {                                    \
			T s = ((const T *)j->in[0])[i];                                \
			for (int k = 1; k < j->n; k++) {                               \
				T v = ((const T *)j->in[k])[i];                        \
				s = SUMEXPR;                                           \
			}                                                              \
			o[i] = s;                                                      \
		}                                                                      \
		break;                                                                 \
	}
	ADDN_CASE(FLOW_F32, float, s + v)
	ADDN_CASE(FLOW_F64, double, s + v)
	ADDN_CASE(FLOW_I32, int32_t, (int32_t)((uint32_t)s + (uint32_t)v))
	ADDN_CASE(FLOW_I64, int64_t, (int64_t)((uint64_t)s + (uint64_t)v))
#undef ADDN_CASE
	default:
		break;
	}
}

static void k_AddN(flow_kernel_ctx *k)
{
	int n = flow_ctx_num_inputs(k);
	const void *ptrs[64];
	flow_tensor *t0 = flow_ctx_input(k, 0);
	if (n > 64) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "AddN takes at most 64 inputs, got %d", n);
		return;
	}
	for (int i = 0; i < n; i++) {
		flow_tensor *t = flow_ctx_input(k, i);
		if (t->nelem != t0->nelem || t->ndim != t0->ndim ||
		    memcmp(t->dims, t0->dims, sizeof(int64_t) * (size_t)t0->ndim)) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "input %d has a different shape than input 0", i);
			return;
		}
		ptrs[i] = flow_tensor_cdata(t);
	}
	flow_tensor *o = flow_ctx_output(k, 0, t0->ndim, t0->dims);
	if (!o)
		return;
	addn_job j = {ptrs, n, flow_tensor_ptr(o), t0->dtype};
	ops_parallel(k, t0->nelem, OPS_GRAIN, addn_range, &j);
}

static int shape_addn(flow_shape_ctx *c)
{
	int n = flow_shape_num_inputs(c);
	flow_shape s = *flow_shape_input(c, 0);
	for (int i = 1; i < n; i++) {
		const flow_shape *t = flow_shape_input(c, i);
		if (s.ndim < 0) {
			s = *t;
			continue;
		}
		if (t->ndim < 0)
			continue;
		if (t->ndim != s.ndim)
			return flow_shape_error(c, "input %d has rank %d, input 0 rank %d", i, t->ndim, s.ndim);
		for (int d = 0; d < s.ndim; d++) {
			if (s.dims[d] >= 0 && t->dims[d] >= 0 && s.dims[d] != t->dims[d])
				return flow_shape_error(c, "input %d dimension %d is %lld, input 0 has %lld", i, d,
							(long long)t->dims[d], (long long)s.dims[d]);
			if (s.dims[d] < 0)
				s.dims[d] = t->dims[d];
		}
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- op definitions ---- */
#define FT "T: {f32,f64}"
#define NT "T: {f32,f64,i32,i64}"
#define IT "T: {i32,i64}"
#define AT "T: {f32,f64,i32,i64,bool}"
#define UOP(NAME, ATTRS) {.name = #NAME, .inputs = "x: T", .outputs = "y: T", .attrs = ATTRS, \
			  .shape_fn = flow_shape_fn_unchanged}
#define UOPB(NAME, ATTRS) {.name = #NAME, .inputs = "x: T", .outputs = "y: bool", .attrs = ATTRS, \
			   .shape_fn = flow_shape_fn_unchanged}
#define BOP(NAME, ATTRS) {.name = #NAME, .inputs = "x: T, y: T", .outputs = "z: T", .attrs = ATTRS, \
			  .shape_fn = flow_shape_fn_broadcast}
#define BOPC(NAME, ATTRS) {.name = #NAME, .inputs = "x: T, y: T", .outputs = "z: T", .attrs = ATTRS, \
			   .shape_fn = flow_shape_fn_broadcast, .flags = FLOW_OP_COMMUTATIVE}
#define CMP(NAME, ATTRS) {.name = #NAME, .inputs = "x: T, y: T", .outputs = "z: bool", .attrs = ATTRS, \
			  .shape_fn = flow_shape_fn_broadcast}
#define GOP(NAME, A, B) {.name = #NAME, .inputs = A ": T, " B ": T", .outputs = "backprops: T", \
			 .attrs = FT, .shape_fn = flow_shape_fn_broadcast}

static const flow_op_def elementwise_ops[] = {
	UOP(Neg, NT), UOP(Abs, NT), UOP(Sign, NT), UOP(Square, NT), UOP(Relu, NT), UOP(Relu6, NT),
	UOP(Sqrt, FT), UOP(Rsqrt, FT), UOP(Exp, FT), UOP(Expm1, FT), UOP(Log, FT), UOP(Log1p, FT),
	UOP(Sin, FT), UOP(Cos, FT), UOP(Tan, FT), UOP(Asin, FT), UOP(Acos, FT), UOP(Atan, FT),
	UOP(Sinh, FT), UOP(Cosh, FT), UOP(Tanh, FT), UOP(Asinh, FT), UOP(Acosh, FT), UOP(Atanh, FT),
	UOP(Floor, FT), UOP(Ceil, FT), UOP(Round, FT), UOP(Rint, FT), UOP(Reciprocal, FT),
	UOP(Sigmoid, FT), UOP(Elu, FT), UOP(Selu, FT), UOP(Softplus, FT), UOP(Softsign, FT),
	UOP(Gelu, FT "; approximate: bool = false"), UOP(Silu, FT),
	UOP(LeakyRelu, FT "; alpha: float = 0.2"), UOP(Erf, FT), UOP(Erfc, FT), UOP(Lgamma, FT),
	UOP(Mish, FT), UOP(HardSigmoid, FT), UOP(HardSwish, FT), UOP(Log2, FT), UOP(Exp2, FT),
	UOP(Cbrt, FT),
	UOPB(IsNan, FT), UOPB(IsInf, FT), UOPB(IsFinite, FT),
	{.name = "LogicalNot", .inputs = "x: bool", .outputs = "y: bool", .shape_fn = flow_shape_fn_unchanged}, UOP(Invert, IT),
	BOPC(Add, NT), BOPC(AddV2, NT), BOP(Sub, NT), BOPC(Mul, NT), BOP(Div, NT), BOP(RealDiv, FT),
	BOP(FloorDiv, NT), BOP(FloorMod, NT), BOP(TruncateDiv, NT), BOP(TruncateMod, NT), BOP(Mod, NT),
	BOP(Pow, NT), BOPC(Maximum, NT), BOPC(Minimum, NT), BOPC(SquaredDifference, NT),
	BOP(DivNoNan, FT), BOP(MulNoNan, FT), BOP(Xdivy, FT), BOP(Xlogy, FT), BOP(Xlog1py, FT),
	BOP(Atan2, FT),
	{.name = "ReluGrad", .inputs = "gradients: T, features: T", .outputs = "backprops: T",
	 .attrs = NT, .shape_fn = flow_shape_fn_broadcast},
	{.name = "Relu6Grad", .inputs = "gradients: T, features: T", .outputs = "backprops: T",
	 .attrs = NT, .shape_fn = flow_shape_fn_broadcast},
	GOP(SigmoidGrad, "y", "dy"), GOP(TanhGrad, "y", "dy"), GOP(SoftplusGrad, "gradients", "features"),
	GOP(SoftsignGrad, "gradients", "features"), GOP(EluGrad, "gradients", "outputs"),
	GOP(SeluGrad, "gradients", "outputs"), GOP(RsqrtGrad, "y", "dy"), GOP(SqrtGrad, "y", "dy"),
	GOP(ReciprocalGrad, "y", "dy"),
	{.name = "LeakyReluGrad", .inputs = "gradients: T, features: T", .outputs = "backprops: T",
	 .attrs = FT "; alpha: float = 0.2", .shape_fn = flow_shape_fn_broadcast},
	{.name = "ApproximateEqual", .inputs = "x: T, y: T", .outputs = "z: bool",
	 .attrs = FT "; tolerance: float = 0.00001", .shape_fn = flow_shape_fn_broadcast},
	CMP(Equal, AT), CMP(NotEqual, AT), CMP(Less, NT), CMP(LessEqual, NT), CMP(Greater, NT),
	CMP(GreaterEqual, NT),
	{.name = "LogicalAnd", .inputs = "x: bool, y: bool", .outputs = "z: bool",
	 .shape_fn = flow_shape_fn_broadcast, .flags = FLOW_OP_COMMUTATIVE},
	{.name = "LogicalOr", .inputs = "x: bool, y: bool", .outputs = "z: bool",
	 .shape_fn = flow_shape_fn_broadcast, .flags = FLOW_OP_COMMUTATIVE},
	{.name = "LogicalXor", .inputs = "x: bool, y: bool", .outputs = "z: bool",
	 .shape_fn = flow_shape_fn_broadcast, .flags = FLOW_OP_COMMUTATIVE},
	BOPC(BitwiseAnd, IT), BOPC(BitwiseOr, IT), BOPC(BitwiseXor, IT), BOP(LeftShift, IT),
	BOP(RightShift, IT),
	{.name = "AddN", .inputs = "inputs: N*T", .outputs = "sum: T", .attrs = "N: int >= 1; " NT,
	 .shape_fn = shape_addn, .flags = FLOW_OP_COMMUTATIVE},
};

#define KU_N(op) KNUM(#op, k_##op)
#define KU_F(op) KFLOAT(#op, k_##op)
static const flow_kernel_def elementwise_kernels[] = {
	KU_N(Neg), KU_N(Abs), KU_N(Sign), KU_N(Square), KU_N(Relu), KU_N(Relu6),
	KU_F(Sqrt), KU_F(Rsqrt), KU_F(Exp), KU_F(Expm1), KU_F(Log), KU_F(Log1p), KU_F(Sin), KU_F(Cos),
	KU_F(Tan), KU_F(Asin), KU_F(Acos), KU_F(Atan), KU_F(Sinh), KU_F(Cosh), KU_F(Tanh), KU_F(Asinh),
	KU_F(Acosh), KU_F(Atanh), KU_F(Floor), KU_F(Ceil), KU_F(Round), KU_F(Rint), KU_F(Reciprocal),
	KU_F(Sigmoid), KU_F(Elu), KU_F(Selu), KU_F(Softplus), KU_F(Softsign), KU_F(Gelu), KU_F(Silu),
	KU_F(LeakyRelu), KU_F(Erf), KU_F(Erfc), KU_F(Lgamma), KU_F(Mish), KU_F(HardSigmoid),
	KU_F(HardSwish), KU_F(Log2), KU_F(Exp2), KU_F(Cbrt),
	KU_F(IsNan), KU_F(IsInf), KU_F(IsFinite),
	K1("LogicalNot", FLOW_DT_INVALID, k_LogicalNot_bool), KINT("Invert", k_Invert),
	KU_N(Add), KU_N(AddV2), KU_N(Sub), KU_N(Mul), KU_N(Div), KU_F(RealDiv), KU_N(FloorDiv),
	KU_N(FloorMod), KU_N(TruncateDiv), KU_N(TruncateMod), KU_N(Mod), KU_N(Pow), KU_N(Maximum),
	KU_N(Minimum), KU_N(SquaredDifference), KU_F(DivNoNan), KU_F(MulNoNan), KU_F(Xdivy),
	KU_F(Xlogy), KU_F(Xlog1py), KU_F(Atan2),
	KU_N(ReluGrad), KU_N(Relu6Grad), KU_F(SigmoidGrad), KU_F(TanhGrad), KU_F(SoftplusGrad),
	KU_F(SoftsignGrad), KU_F(EluGrad), KU_F(SeluGrad), KU_F(RsqrtGrad), KU_F(SqrtGrad),
	KU_F(ReciprocalGrad), KU_F(LeakyReluGrad), KU_F(ApproximateEqual),
	KALL("Equal", k_Equal), KALL("NotEqual", k_NotEqual), KU_N(Less), KU_N(LessEqual),
	KU_N(Greater), KU_N(GreaterEqual),
	K1("LogicalAnd", FLOW_DT_INVALID, k_LogicalAnd_bool), K1("LogicalOr", FLOW_DT_INVALID, k_LogicalOr_bool),
	K1("LogicalXor", FLOW_DT_INVALID, k_LogicalXor_bool),
	KINT("BitwiseAnd", k_BitwiseAnd), KINT("BitwiseOr", k_BitwiseOr), KINT("BitwiseXor", k_BitwiseXor),
	KINT("LeftShift", k_LeftShift), KINT("RightShift", k_RightShift),
	KANYNUM("AddN", k_AddN),
};

FLOW_OP_LIBRARY(elementwise, elementwise_ops, elementwise_kernels)
