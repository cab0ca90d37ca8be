/*
 * array.c — shape and data-movement ops: Reshape, ExpandDims, Squeeze
 * (buffer aliases, no copy), Transpose, Concat(V2), Pack, Unpack, Split,
 * Slice, StridedSlice, Gather(V2), Pad(V2), MirrorPad, Tile, ReverseV2,
 * BroadcastTo, Shape/Size/Rank, Fill, ZerosLike, OnesLike, Cast, Select(V2),
 * Where, Range, OneHot, ClipByValue, StopGradient, PreventGradient,
 * Snapshot, InvertPermutation.
 *
 * Most copies are one strided walk (strided_copy): output in row-major
 * order, the source addressed through per-dimension byte strides that may
 * be 0 (broadcast) or negative (reverse). Rows go to the intra-op pool.
 */
#include "ops_common.h"

#include <stdio.h>
#include <stdlib.h>

#define MAXD FLOW_MAX_DIMS

/* ---- the strided walk ---- */
typedef struct sc_job {
	const char *src;
	char *dst;
	int nd;
	int64_t dims[MAXD];
	int64_t stride[MAXD]; /* bytes, per output dim */
	size_t esz;
	int64_t inner;
} sc_job;

static void sc_range(void *ud, int64_t lo, int64_t hi)
{
	sc_job *j = ud;
	int64_t last = j->nd ? j->stride[j->nd - 1] : 0;
	for (int64_t r = lo; r < hi; r++) {
		int64_t off = 0, q = r;
		for (int d = j->nd - 2; d >= 0; d--) {
			int64_t i = q % j->dims[d];
			q /= j->dims[d];
			off += i * j->stride[d];
		}
		const char *s = j->src + off;
		char *o = j->dst + (size_t)(r * j->inner) * j->esz;
		if (last == (int64_t)j->esz) {
			memcpy(o, s, (size_t)j->inner * j->esz);
		} else if (j->esz == 4) {
			for (int64_t c = 0; c < j->inner; c++)
				memcpy(o + 4 * c, s + c * last, 4);
		} else if (j->esz == 8) {
			for (int64_t c = 0; c < j->inner; c++)
				memcpy(o + 8 * c, s + c * last, 8);
		} else {
			for (int64_t c = 0; c < j->inner; c++)
				memcpy(o + (size_t)c * j->esz, s + c * last, j->esz);
		}
	}
}

static void strided_copy(flow_kernel_ctx *k, const void *src, void *dst, int nd, const int64_t *dims,
			 const int64_t *stride_elems, size_t esz)
{
	sc_job j;
	int64_t n = 1;
	j.src = src;
	j.dst = dst;
	j.nd = nd;
	j.esz = esz;
	for (int d = 0; d < nd; d++) {
		j.dims[d] = dims[d];
		j.stride[d] = stride_elems[d] * (int64_t)esz;
		n *= dims[d];
	}
	if (n == 0)
		return;
	j.inner = nd ? dims[nd - 1] : 1;
	ops_parallel(k, n / j.inner, ops_grain_for(j.inner), sc_range, &j);
}

static void contiguous_strides(int nd, const int64_t *dims, int64_t *st)
{
	int64_t s = 1;
	for (int d = nd - 1; d >= 0; d--) {
		st[d] = s;
		s *= dims[d];
	}
}

static const char *cbytes(const flow_tensor *t) { return flow_tensor_cdata(t); }
static char *wbytes(flow_tensor *t) { return flow_tensor_ptr(t); }
static size_t esize(const flow_tensor *t) { return flow_dtype_size(t->dtype); }

/* Sets output 0 to an alias of input 0 with another shape. */
static void alias_out(flow_kernel_ctx *k, flow_tensor *x, int nd, const int64_t *dims)
{
	flow_status st = {0};
	flow_tensor *a = flow_tensor_alias(x, nd, dims, &st);
	if (!a) {
		flow_ctx_fail(k, st.code ? st.code : FLOW_INTERNAL, "%s", st.msg);
		return;
	}
	flow_ctx_set_output(k, 0, a);
	flow_tensor_unref(a);
}

/* ---- Reshape ---- */
static int reshape_dims(int64_t nelem_in, int64_t *d, int n, char *msg, size_t len)
{
	int unknown = -1;
	int64_t prod = 1;
	for (int i = 0; i < n; i++) {
		if (d[i] == -1) {
			if (unknown >= 0) {
				snprintf(msg, len, "only one dimension of the new shape may be -1");
				return -1;
			}
			unknown = i;
		} else if (d[i] < 0) {
			snprintf(msg, len, "dimension %d of the new shape is %lld", i, (long long)d[i]);
			return -1;
		} else {
			prod *= d[i];
		}
	}
	if (unknown >= 0) {
		if (nelem_in < 0)
			return 1; /* not computable (shape inference) */
		if (prod == 0 || nelem_in % prod) {
			snprintf(msg, len, "cannot reshape %lld elements with a -1 dimension into a multiple of %lld",
				 (long long)nelem_in, (long long)prod);
			return -1;
		}
		d[unknown] = nelem_in / prod;
	} else if (nelem_in >= 0 && prod != nelem_in) {
		snprintf(msg, len, "cannot reshape a tensor of %lld elements into one of %lld", (long long)nelem_in,
			 (long long)prod);
		return -1;
	}
	return 0;
}

static void k_Reshape(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t d[MAXD];
	char msg[160];
	int n = ops_read_ints(k, flow_ctx_input(k, 1), d, MAXD, "shape");
	if (n < 0)
		return;
	if (reshape_dims(x->nelem, d, n, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	alias_out(k, x, n, d);
}

static int shape_reshape(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0), *sh = flow_shape_input(c, 1);
	const flow_tensor *v = flow_shape_input_const(c, 1);
	int64_t d[MAXD];
	char msg[160];
	int n = ops_const_ints(v, d, MAXD);
	flow_shape s = flow_shape_unknown();
	if (n < 0) {
		if (sh->ndim == 1 && sh->dims[0] >= 0 && sh->dims[0] <= MAXD)
			s = ops_shape_unknown_rank((int)sh->dims[0]);
		else if (v && v->nelem > MAXD)
			return flow_shape_error(c, "new shape has %lld dimensions, at most %d allowed",
						(long long)v->nelem, MAXD);
		flow_shape_set_output(c, 0, &s);
		return 0;
	}
	int r = reshape_dims(flow_shape_nelem(x), d, n, msg, sizeof msg);
	if (r < 0)
		return flow_shape_error(c, "%s", msg);
	s = flow_shape_make(n, d);
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- ExpandDims / Squeeze ---- */
static int expand_dims(int nd, const int64_t *in, int64_t axis, int64_t *out)
{
	if (axis < 0)
		axis += nd + 1;
	if (axis < 0 || axis > nd || nd + 1 > MAXD)
		return -1;
	int o = 0;
	for (int d = 0; d <= nd; d++) {
		if (d == axis)
			out[o++] = 1;
		if (d < nd)
			out[o++] = in[d];
	}
	return 0;
}

static void k_ExpandDims(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t a[1], d[MAXD];
	if (ops_read_ints(k, flow_ctx_input(k, 1), a, 1, "axis") != 1) {
		if (flow_ctx_ok(k))
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis must hold one value");
		return;
	}
	if (expand_dims(x->ndim, x->dims, a[0], d)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis %lld out of range for a rank-%d input", (long long)a[0],
			      x->ndim);
		return;
	}
	alias_out(k, x, x->ndim + 1, d);
}

static int shape_expand_dims(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	int64_t a[1];
	flow_shape s = flow_shape_unknown();
	if (x->ndim >= 0 && ops_const_ints(flow_shape_input_const(c, 1), a, 1) == 1) {
		if (expand_dims(x->ndim, x->dims, a[0], s.dims))
			return flow_shape_error(c, "axis %lld out of range for a rank-%d input", (long long)a[0], x->ndim);
		s.ndim = x->ndim + 1;
	} else if (x->ndim >= 0 && x->ndim < MAXD) {
		s = ops_shape_unknown_rank(x->ndim + 1);
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* out dims of Squeeze; -1 with msg. Unknown input dims (-1) are kept when
 * not named explicitly (shape inference). */
static int squeeze_dims(int nd, const int64_t *in, const int64_t *ax, int nax, int64_t *out, int *ond,
			char *msg, size_t len)
{
	int drop[MAXD] = {0};
	for (int i = 0; i < nax; i++) {
		int a = ops_axis(ax[i], nd);
		if (a < 0) {
			snprintf(msg, len, "squeeze axis %lld out of range for rank %d", (long long)ax[i], nd);
			return -1;
		}
		if (in[a] != 1 && in[a] != -1) {
			snprintf(msg, len, "cannot squeeze dimension %d of size %lld", a, (long long)in[a]);
			return -1;
		}
		drop[a] = 1;
	}
	*ond = 0;
	for (int d = 0; d < nd; d++)
		if (!(nax ? drop[d] : in[d] == 1))
			out[(*ond)++] = in[d];
	return 0;
}

static void k_Squeeze(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int nax, ond;
	const int64_t *ax = flow_ctx_attr_ints(k, "squeeze_dims", &nax);
	int64_t d[MAXD];
	char msg[160];
	if (squeeze_dims(x->ndim, x->dims, ax, nax, d, &ond, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	alias_out(k, x, ond, d);
}

static int shape_squeeze(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	const flow_attr_value *a = flow_shape_attr(c, "squeeze_dims");
	int nax = a ? a->u.ints.n : 0, ond;
	flow_shape s = flow_shape_unknown();
	char msg[160];
	if (x->ndim >= 0) {
		if (!nax)
			for (int d = 0; d < x->ndim; d++)
				if (x->dims[d] < 0) {
					flow_shape_set_output(c, 0, &s); /* which dims go is unknown */
					return 0;
				}
		if (squeeze_dims(x->ndim, x->dims, nax ? a->u.ints.v : NULL, nax, s.dims, &ond, msg, sizeof msg))
			return flow_shape_error(c, "%s", msg);
		s.ndim = ond;
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- Transpose ---- */
static int check_perm(const int64_t *p, int n, int nd, char *msg, size_t len)
{
	int seen[MAXD] = {0};
	if (n != nd) {
		snprintf(msg, len, "perm has %d entries for a rank-%d input", n, nd);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (p[i] < 0 || p[i] >= nd || seen[p[i]]) {
			snprintf(msg, len, "perm is not a permutation of 0..%d (entry %d is %lld)", nd - 1, i,
				 (long long)p[i]);
			return -1;
		}
		seen[p[i]] = 1;
	}
	return 0;
}

static void k_Transpose(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t p[MAXD], od[MAXD], ist[MAXD], st[MAXD];
	char msg[160];
	int n = ops_read_ints(k, flow_ctx_input(k, 1), p, MAXD, "perm");
	if (n < 0)
		return;
	if (check_perm(p, n, x->ndim, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	contiguous_strides(x->ndim, x->dims, ist);
	for (int d = 0; d < n; d++) {
		od[d] = x->dims[p[d]];
		st[d] = ist[p[d]];
	}
	flow_tensor *y = flow_ctx_output(k, 0, n, od);
	if (!y)
		return;
	strided_copy(k, cbytes(x), wbytes(y), n, od, st, esize(x));
}

static int shape_transpose(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	int64_t p[MAXD];
	char msg[160];
	int n = ops_const_ints(flow_shape_input_const(c, 1), p, MAXD);
	flow_shape s = x->ndim >= 0 ? ops_shape_unknown_rank(x->ndim) : flow_shape_unknown();
	if (n >= 0 && x->ndim >= 0) {
		if (check_perm(p, n, x->ndim, msg, sizeof msg))
			return flow_shape_error(c, "%s", msg);
		for (int d = 0; d < n; d++)
			s.dims[d] = x->dims[p[d]];
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- Concat / ConcatV2 / Pack ---- */
static void concat_run(flow_kernel_ctx *k, flow_tensor **in, int n, int64_t axis_v, int stack)
{
	flow_tensor *t0 = in[0];
	int nd = t0->ndim + (stack ? 1 : 0);
	int axis = ops_axis(axis_v, nd);
	int64_t od[MAXD];
	if (axis < 0 || nd > MAXD) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis %lld out of range for rank %d", (long long)axis_v, nd);
		return;
	}
	for (int i = 0; i < n; i++) {
		if (in[i]->ndim != t0->ndim) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "input %d has rank %d, input 0 has rank %d", i,
				      in[i]->ndim, t0->ndim);
			return;
		}
		for (int d = 0; d < t0->ndim; d++)
			if ((stack || d != axis) && in[i]->dims[d] != t0->dims[d]) {
				flow_ctx_fail(k, FLOW_INVALID_ARGUMENT,
					      "input %d has %lld in dimension %d, input 0 has %lld", i,
					      (long long)in[i]->dims[d], d, (long long)t0->dims[d]);
				return;
			}
	}
	if (stack) {
		expand_dims(t0->ndim, t0->dims, axis, od);
		od[axis] = n;
	} else {
		memcpy(od, t0->dims, sizeof(int64_t) * (size_t)nd);
		od[axis] = 0;
		for (int i = 0; i < n; i++)
			od[axis] += in[i]->dims[axis];
	}
	flow_tensor *y = flow_ctx_output(k, 0, nd, od);
	if (!y)
		return;
	size_t esz = esize(t0);
	int64_t outer = 1, inner_out = 1;
	for (int d = 0; d < axis; d++)
		outer *= od[d];
	for (int d = axis; d < nd; d++)
		inner_out *= od[d];
	char *dst = wbytes(y);
	int64_t col = 0;
	for (int i = 0; i < n; i++) {
		int64_t inner_i = in[i]->nelem / (outer ? outer : 1);
		if (outer == 0)
			inner_i = 0;
		const char *src = cbytes(in[i]);
		for (int64_t o = 0; o < outer; o++)
			memcpy(dst + (size_t)(o * inner_out + col) * esz, src + (size_t)(o * inner_i) * esz,
			       (size_t)inner_i * esz);
		col += inner_i;
	}
}

/* Concat and ConcatV2: n values from input `first` on, the axis a scalar in
 * input axis_in (named `what` in messages). */
static void concat_kernel(flow_kernel_ctx *k, int first, int axis_in, const char *what)
{
	int n = flow_ctx_num_inputs(k) - 1;
	flow_tensor *in[256];
	int64_t a[1];
	if (n > 256) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "at most 256 inputs");
		return;
	}
	for (int i = 0; i < n; i++)
		in[i] = flow_ctx_input(k, first + i);
	if (ops_read_ints(k, flow_ctx_input(k, axis_in), a, 1, what) != 1) {
		if (flow_ctx_ok(k))
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s must be a scalar", what);
		return;
	}
	concat_run(k, in, n, a[0], 0);
}

static void k_ConcatV2(flow_kernel_ctx *k)
{
	concat_kernel(k, 0, flow_ctx_num_inputs(k) - 1, "axis");
}

static void k_Concat(flow_kernel_ctx *k)
{
	concat_kernel(k, 1, 0, "concat_dim");
}

static void k_Pack(flow_kernel_ctx *k)
{
	int n = flow_ctx_num_inputs(k);
	flow_tensor *in[256];
	if (n > 256) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "at most 256 inputs");
		return;
	}
	for (int i = 0; i < n; i++)
		in[i] = flow_ctx_input(k, i);
	concat_run(k, in, n, flow_ctx_attr_int(k, "axis", 0), 1);
}

static int shape_concat_common(flow_shape_ctx *c, int first, int n, int64_t axis_v, int have_axis, int stack)
{
	const flow_shape *s0 = NULL;
	for (int i = 0; i < n; i++) {
		const flow_shape *s = flow_shape_input(c, first + i);
		if (s->ndim >= 0) {
			if (s0 && s0->ndim != s->ndim)
				return flow_shape_error(c, "input %d has rank %d, another input rank %d", i, s->ndim, s0->ndim);
			s0 = s;
		}
	}
	flow_shape out = flow_shape_unknown();
	if (!s0) {
		flow_shape_set_output(c, 0, &out);
		return 0;
	}
	int nd = s0->ndim + (stack ? 1 : 0);
	if (nd > MAXD)
		return flow_shape_error(c, "result rank exceeds %d", MAXD);
	if (!have_axis) {
		out = ops_shape_unknown_rank(nd);
		flow_shape_set_output(c, 0, &out);
		return 0;
	}
	int axis = ops_axis(axis_v, nd);
	if (axis < 0)
		return flow_shape_error(c, "axis %lld out of range for rank %d", (long long)axis_v, nd);
	out.ndim = nd;
	int64_t cat = stack ? n : 0;
	for (int d = 0, sd = 0; d < nd; d++) {
		if (stack && d == axis) {
			out.dims[d] = n;
			continue;
		}
		int64_t v = -1;
		for (int i = 0; i < n; i++) {
			const flow_shape *s = flow_shape_input(c, first + i);
			if (s->ndim < 0)
				continue;
			int64_t x = s->dims[sd];
			if (!stack && d == axis) {
				if (x < 0 || cat < 0)
					cat = -1;
				else
					cat += x;
				continue;
			}
			if (x >= 0 && v >= 0 && x != v)
				return flow_shape_error(c, "input %d has %lld in dimension %d where another input has %lld",
							i, (long long)x, sd, (long long)v);
			if (x >= 0)
				v = x;
		}
		if (!stack && d == axis) {
			for (int i = 0; i < n; i++)
				if (flow_shape_input(c, first + i)->ndim < 0)
					cat = -1;
			out.dims[d] = cat;
		} else {
			out.dims[d] = v;
		}
		sd++;
	}
	flow_shape_set_output(c, 0, &out);
	return 0;
}

static int shape_concatv2(flow_shape_ctx *c)
{
	int n = flow_shape_num_inputs(c) - 1;
	int64_t a[1];
	int have = ops_const_ints(flow_shape_input_const(c, n), a, 1) == 1;
	return shape_concat_common(c, 0, n, have ? a[0] : 0, have, 0);
}

static int shape_concat(flow_shape_ctx *c)
{
	int n = flow_shape_num_inputs(c) - 1;
	int64_t a[1];
	int have = ops_const_ints(flow_shape_input_const(c, 0), a, 1) == 1;
	return shape_concat_common(c, 1, n, have ? a[0] : 0, have, 0);
}

static int shape_pack(flow_shape_ctx *c)
{
	return shape_concat_common(c, 0, flow_shape_num_inputs(c), flow_shape_attr_int(c, "axis", 0), 1, 1);
}

/* ---- Unpack / Split: outputs are slices along an axis ---- */
static void split_run(flow_kernel_ctx *k, flow_tensor *x, int64_t axis_v, int nout, int unstack)
{
	int axis = ops_axis(axis_v, x->ndim);
	if (axis < 0) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis %lld out of range for rank %d", (long long)axis_v, x->ndim);
		return;
	}
	int64_t len = x->dims[axis];
	if (unstack ? len != nout : (nout <= 0 || len % nout)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "dimension %d of size %lld cannot be split into %d", axis,
			      (long long)len, nout);
		return;
	}
	int64_t part = len / nout, od[MAXD], outer = 1, inner = 1;
	size_t esz = esize(x);
	for (int d = 0; d < axis; d++)
		outer *= x->dims[d];
	for (int d = axis + 1; d < x->ndim; d++)
		inner *= x->dims[d];
	int ond = 0;
	for (int d = 0; d < x->ndim; d++) {
		if (d == axis && unstack)
			continue;
		od[ond++] = d == axis ? part : x->dims[d];
	}
	for (int i = 0; i < nout; i++) {
		flow_tensor *y = flow_ctx_output(k, i, ond, od);
		if (!y)
			return;
		for (int64_t o = 0; o < outer; o++)
			memcpy(wbytes(y) + (size_t)(o * part * inner) * esz,
			       cbytes(x) + (size_t)((o * len + i * part) * inner) * esz, (size_t)(part * inner) * esz);
	}
}

static void k_Unpack(flow_kernel_ctx *k)
{
	split_run(k, flow_ctx_input(k, 0), flow_ctx_attr_int(k, "axis", 0), flow_ctx_num_outputs(k), 1);
}

static void k_Split(flow_kernel_ctx *k)
{
	int64_t a[1];
	if (ops_read_ints(k, flow_ctx_input(k, 0), a, 1, "split_dim") != 1) {
		if (flow_ctx_ok(k))
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "split_dim must be a scalar");
		return;
	}
	split_run(k, flow_ctx_input(k, 1), a[0], flow_ctx_num_outputs(k), 0);
}

static int shape_split_common(flow_shape_ctx *c, const flow_shape *x, int have_axis, int64_t axis_v, int unstack)
{
	int n = flow_shape_num_outputs(c);
	flow_shape s = flow_shape_unknown();
	if (x->ndim >= 0 && have_axis) {
		int axis = ops_axis(axis_v, x->ndim);
		if (axis < 0)
			return flow_shape_error(c, "axis %lld out of range for rank %d", (long long)axis_v, x->ndim);
		int64_t len = x->dims[axis];
		if (len >= 0 && (unstack ? len != n : len % n))
			return flow_shape_error(c, "dimension %d of size %lld cannot be split into %d", axis,
						(long long)len, n);
		s.ndim = 0;
		for (int d = 0; d < x->ndim; d++) {
			if (d == axis && unstack)
				continue;
			s.dims[s.ndim++] = d == axis ? (len >= 0 ? len / n : -1) : x->dims[d];
		}
	} else if (x->ndim >= 0) {
		s = ops_shape_unknown_rank(unstack ? x->ndim - 1 : x->ndim);
	}
	for (int i = 0; i < n; i++)
		flow_shape_set_output(c, i, &s);
	return 0;
}

static int shape_unpack(flow_shape_ctx *c)
{
	return shape_split_common(c, flow_shape_input(c, 0), 1, flow_shape_attr_int(c, "axis", 0), 1);
}

static int shape_split(flow_shape_ctx *c)
{
	int64_t a[1];
	int have = ops_const_ints(flow_shape_input_const(c, 0), a, 1) == 1;
	return shape_split_common(c, flow_shape_input(c, 1), have, have ? a[0] : 0, 0);
}

/* ---- Slice ---- */
static int slice_spec(int nd, const int64_t *dims, const int64_t *b, const int64_t *sz, int n, int64_t *ob,
		      int64_t *osz, char *msg, size_t len)
{
	if (n != nd) {
		snprintf(msg, len, "begin and size need %d values, got %d", nd, n);
		return -1;
	}
	for (int d = 0; d < nd; d++) {
		int64_t s = sz[d] == -1 && dims[d] >= 0 ? dims[d] - b[d] : sz[d];
		if (b[d] < 0 || (dims[d] >= 0 && (b[d] > dims[d] || s < 0 || b[d] + s > dims[d]))) {
			snprintf(msg, len, "slice [%lld, +%lld) out of bounds for dimension %d of size %lld",
				 (long long)b[d], (long long)sz[d], d, (long long)dims[d]);
			return -1;
		}
		ob[d] = b[d];
		osz[d] = s;
	}
	return 0;
}

static void k_Slice(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t b[MAXD], sz[MAXD], ob[MAXD], os[MAXD], st[MAXD];
	char msg[160];
	int nb = ops_read_ints(k, flow_ctx_input(k, 1), b, MAXD, "begin");
	int ns = nb < 0 ? -1 : ops_read_ints(k, flow_ctx_input(k, 2), sz, MAXD, "size");
	if (ns < 0)
		return;
	if (nb != ns || slice_spec(x->ndim, x->dims, b, sz, nb, ob, os, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", nb != ns ? "begin and size differ in length" : msg);
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, x->ndim, os);
	if (!y)
		return;
	contiguous_strides(x->ndim, x->dims, st);
	int64_t off = 0;
	for (int d = 0; d < x->ndim; d++)
		off += ob[d] * st[d];
	if (y->nelem)
		strided_copy(k, cbytes(x) + (size_t)off * esize(x), wbytes(y), x->ndim, os, st, esize(x));
}

static int shape_slice(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	int64_t b[MAXD], sz[MAXD], ob[MAXD], os[MAXD];
	char msg[160];
	int nb = ops_const_ints(flow_shape_input_const(c, 1), b, MAXD);
	int ns = ops_const_ints(flow_shape_input_const(c, 2), sz, MAXD);
	flow_shape s = x->ndim >= 0 ? ops_shape_unknown_rank(x->ndim) : flow_shape_unknown();
	if (x->ndim >= 0 && nb >= 0 && ns >= 0) {
		if (nb != ns || slice_spec(x->ndim, x->dims, b, sz, nb, ob, os, msg, sizeof msg))
			return flow_shape_error(c, "%s", nb != ns ? "begin and size differ in length" : msg);
		for (int d = 0; d < x->ndim; d++)
			s.dims[d] = os[d] >= 0 ? os[d] : -1;
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- StridedSlice (TF semantics incl. the five masks) ---- */
typedef struct ss_spec {
	int64_t begin[MAXD], stride[MAXD], size[MAXD]; /* per input dim */
	int ond;
	int64_t odims[MAXD];
} ss_spec;

/* dims may hold -1 (unknown) in shape inference: sizes come out -1. */
static int ss_compute(int nd, const int64_t *dims, const int64_t *b, const int64_t *e, const int64_t *s, int n,
		      int64_t bm, int64_t em, int64_t elm, int64_t nam, int64_t sam, ss_spec *sp, char *msg,
		      size_t len)
{
	int ellipsis_seen = 0, d = 0;
	sp->ond = 0;
	for (int i = 0; i < n; i++) {
		if (elm & (1LL << i)) {
			if (ellipsis_seen) {
				snprintf(msg, len, "multiple ellipses in the slice spec");
				return -1;
			}
			ellipsis_seen = 1;
			int rest = 0; /* spec entries after the ellipsis that consume a dim */
			for (int k = i + 1; k < n; k++)
				if (!(nam & (1LL << k)))
					rest++;
			int upto = nd - rest;
			for (; d < upto; d++) {
				sp->begin[d] = 0;
				sp->stride[d] = 1;
				sp->size[d] = dims[d];
				if (sp->ond == MAXD)
					goto too_many;
				sp->odims[sp->ond++] = dims[d];
			}
			continue;
		}
		if (nam & (1LL << i)) {
			if (sp->ond == MAXD)
				goto too_many;
			sp->odims[sp->ond++] = 1;
			continue;
		}
		if (d >= nd) {
			snprintf(msg, len, "slice spec has more entries (%d) than the input has dimensions (%d)", n, nd);
			return -1;
		}
		int64_t dim = dims[d], st = s[i];
		if (st == 0) {
			snprintf(msg, len, "stride %d is zero", i);
			return -1;
		}
		if (sam & (1LL << i)) {
			int64_t x = b[i];
			if (dim >= 0) {
				if (x < 0)
					x += dim;
				if (x < 0 || x >= dim) {
					snprintf(msg, len, "index %lld out of bounds for dimension %d of size %lld",
						 (long long)b[i], d, (long long)dim);
					return -1;
				}
			}
			sp->begin[d] = x;
			sp->stride[d] = 1;
			sp->size[d] = 1;
			d++;
			continue;
		}
		int64_t size = -1, bb = 0;
		if (dim >= 0) {
			int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? dim : dim - 1;
			int64_t ee;
			if (bm & (1LL << i))
				bb = st > 0 ? 0 : dim - 1;
			else {
				bb = b[i] < 0 ? b[i] + dim : b[i];
				bb = bb < lo ? lo : bb > hi ? hi : bb;
			}
			if (em & (1LL << i))
				ee = st > 0 ? dim : -1;
			else {
				ee = e[i] < 0 ? e[i] + dim : e[i];
				ee = ee < lo ? lo : ee > hi ? hi : ee;
			}
			size = st > 0 ? (ee > bb ? (ee - bb + st - 1) / st : 0)
				      : (bb > ee ? (bb - ee + (-st) - 1) / (-st) : 0);
		}
		sp->begin[d] = bb;
		sp->stride[d] = st;
		sp->size[d] = size;
		if (sp->ond == MAXD)
			goto too_many;
		sp->odims[sp->ond++] = size;
		d++;
	}
	for (; d < nd; d++) { /* unspecified trailing dims: whole */
		sp->begin[d] = 0;
		sp->stride[d] = 1;
		sp->size[d] = dims[d];
		if (sp->ond == MAXD)
			goto too_many;
		sp->odims[sp->ond++] = dims[d];
	}
	return 0;
too_many:
	snprintf(msg, len, "result has more than %d dimensions", MAXD);
	return -1;
}

static void k_StridedSlice(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t b[MAXD * 2], e[MAXD * 2], s[MAXD * 2], st[MAXD], pst[MAXD];
	char msg[160];
	ss_spec sp;
	int nb = ops_read_ints(k, flow_ctx_input(k, 1), b, MAXD * 2, "begin");
	int ne = nb < 0 ? -1 : ops_read_ints(k, flow_ctx_input(k, 2), e, MAXD * 2, "end");
	int ns = ne < 0 ? -1 : ops_read_ints(k, flow_ctx_input(k, 3), s, MAXD * 2, "strides");
	if (ns < 0)
		return;
	if (nb != ne || nb != ns) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "begin, end and strides differ in length (%d, %d, %d)", nb, ne, ns);
		return;
	}
	if (ss_compute(x->ndim, x->dims, b, e, s, nb, flow_ctx_attr_int(k, "begin_mask", 0),
		       flow_ctx_attr_int(k, "end_mask", 0), flow_ctx_attr_int(k, "ellipsis_mask", 0),
		       flow_ctx_attr_int(k, "new_axis_mask", 0), flow_ctx_attr_int(k, "shrink_axis_mask", 0), &sp,
		       msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, sp.ond, sp.odims);
	if (!y || y->nelem == 0)
		return;
	/* walk the input-aligned box begin + i*stride, size[d] per input dim */
	contiguous_strides(x->ndim, x->dims, st);
	int64_t off = 0;
	for (int d = 0; d < x->ndim; d++) {
		off += sp.begin[d] * st[d];
		pst[d] = sp.stride[d] * st[d];
	}
	strided_copy(k, cbytes(x) + (size_t)off * esize(x), wbytes(y), x->ndim, sp.size, pst, esize(x));
}

static int shape_strided_slice(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	int64_t b[MAXD * 2], e[MAXD * 2], s[MAXD * 2];
	char msg[160];
	ss_spec sp;
	int nb = ops_const_ints(flow_shape_input_const(c, 1), b, MAXD * 2);
	int ne = ops_const_ints(flow_shape_input_const(c, 2), e, MAXD * 2);
	int ns = ops_const_ints(flow_shape_input_const(c, 3), s, MAXD * 2);
	flow_shape out = flow_shape_unknown();
	if (x->ndim >= 0 && nb >= 0 && ne >= 0 && ns >= 0) {
		if (nb != ne || nb != ns)
			return flow_shape_error(c, "begin, end and strides differ in length (%d, %d, %d)", nb, ne, ns);
		if (ss_compute(x->ndim, x->dims, b, e, s, nb, flow_shape_attr_int(c, "begin_mask", 0),
			       flow_shape_attr_int(c, "end_mask", 0), flow_shape_attr_int(c, "ellipsis_mask", 0),
			       flow_shape_attr_int(c, "new_axis_mask", 0), flow_shape_attr_int(c, "shrink_axis_mask", 0),
			       &sp, msg, sizeof msg))
			return flow_shape_error(c, "%s", msg);
		out = flow_shape_make(sp.ond, sp.odims);
	}
	flow_shape_set_output(c, 0, &out);
	return 0;
}

/* ---- Gather / GatherV2 ---- */
static void gather_run(flow_kernel_ctx *k, flow_tensor *p, flow_tensor *idx, int64_t axis_v)
{
	int axis = ops_axis(axis_v, p->ndim);
	if (axis < 0) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis %lld out of range for params of rank %d",
			      (long long)axis_v, p->ndim);
		return;
	}
	int nd = p->ndim - 1 + idx->ndim;
	if (nd > MAXD) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "result rank %d exceeds %d", nd, MAXD);
		return;
	}
	int64_t od[MAXD], outer = 1, inner = 1, lim = p->dims[axis];
	int o = 0;
	for (int d = 0; d < axis; d++) {
		od[o++] = p->dims[d];
		outer *= p->dims[d];
	}
	for (int d = 0; d < idx->ndim; d++)
		od[o++] = idx->dims[d];
	for (int d = axis + 1; d < p->ndim; d++) {
		od[o++] = p->dims[d];
		inner *= p->dims[d];
	}
	const void *iv = flow_tensor_cdata(idx);
	for (int64_t i = 0; i < idx->nelem; i++) {
		int64_t v = idx->dtype == FLOW_I64 ? ((const int64_t *)iv)[i] : ((const int32_t *)iv)[i];
		if (v < 0 || v >= lim) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "indices[%lld] = %lld is not in [0, %lld)", (long long)i,
				      (long long)v, (long long)lim);
			return;
		}
	}
	flow_tensor *y = flow_ctx_output(k, 0, nd, od);
	if (!y)
		return;
	size_t esz = esize(p), blk = (size_t)inner * esz;
	char *dst = wbytes(y);
	const char *src = cbytes(p);
	for (int64_t a = 0; a < outer; a++)
		for (int64_t i = 0; i < idx->nelem; i++) {
			int64_t v = idx->dtype == FLOW_I64 ? ((const int64_t *)iv)[i] : ((const int32_t *)iv)[i];
			memcpy(dst + (size_t)(a * idx->nelem + i) * blk, src + (size_t)(a * lim + v) * blk, blk);
		}
}

static void k_GatherV2(flow_kernel_ctx *k)
{
	int64_t a[1];
	if (ops_read_ints(k, flow_ctx_input(k, 2), a, 1, "axis") != 1) {
		if (flow_ctx_ok(k))
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis must be a scalar");
		return;
	}
	if (flow_ctx_attr_int(k, "batch_dims", 0) != 0) {
		flow_ctx_fail(k, FLOW_UNIMPLEMENTED, "batch_dims other than 0 are not supported");
		return;
	}
	gather_run(k, flow_ctx_input(k, 0), flow_ctx_input(k, 1), a[0]);
}

static void k_Gather(flow_kernel_ctx *k)
{
	gather_run(k, flow_ctx_input(k, 0), flow_ctx_input(k, 1), 0);
}

static int shape_gather_common(flow_shape_ctx *c, int have_axis, int64_t axis_v)
{
	const flow_shape *p = flow_shape_input(c, 0), *ix = flow_shape_input(c, 1);
	flow_shape s = flow_shape_unknown();
	if (p->ndim >= 0 && ix->ndim >= 0) {
		int nd = p->ndim - 1 + ix->ndim;
		if (nd > MAXD)
			return flow_shape_error(c, "result rank %d exceeds %d", nd, MAXD);
		if (!have_axis) {
			s = ops_shape_unknown_rank(nd);
		} else {
			int axis = ops_axis(axis_v, p->ndim);
			if (axis < 0)
				return flow_shape_error(c, "axis %lld out of range for params of rank %d",
							(long long)axis_v, p->ndim);
			s.ndim = 0;
			for (int d = 0; d < axis; d++)
				s.dims[s.ndim++] = p->dims[d];
			for (int d = 0; d < ix->ndim; d++)
				s.dims[s.ndim++] = ix->dims[d];
			for (int d = axis + 1; d < p->ndim; d++)
				s.dims[s.ndim++] = p->dims[d];
		}
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

static int shape_gatherv2(flow_shape_ctx *c)
{
	int64_t a[1];
	int have = ops_const_ints(flow_shape_input_const(c, 2), a, 1) == 1;
	return shape_gather_common(c, have, have ? a[0] : 0);
}

static int shape_gather(flow_shape_ctx *c) { return shape_gather_common(c, 1, 0); }

/* ---- Pad / PadV2 / MirrorPad ---- */
enum { PAD_CONST, PAD_REFLECT, PAD_SYMMETRIC };

static int pad_read(flow_kernel_ctx *k, const flow_tensor *x, const flow_tensor *pt, int64_t *pads, int mode)
{
	if (pt->ndim != 2 || pt->dims[0] != x->ndim || pt->dims[1] != 2) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "paddings must have shape [%d, 2]", x->ndim);
		return -1;
	}
	if (ops_read_ints(k, pt, pads, MAXD * 2, "paddings") < 0)
		return -1;
	for (int d = 0; d < x->ndim; d++) {
		int64_t lim = mode == PAD_REFLECT ? x->dims[d] - 1 : mode == PAD_SYMMETRIC ? x->dims[d] : INT64_MAX;
		if (pads[2 * d] < 0 || pads[2 * d + 1] < 0 || pads[2 * d] > lim || pads[2 * d + 1] > lim) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "paddings for dimension %d ([%lld, %lld]) are %s", d,
				      (long long)pads[2 * d], (long long)pads[2 * d + 1],
				      mode == PAD_CONST ? "negative" : "negative or larger than the mirror allows");
			return -1;
		}
	}
	return 0;
}

static int64_t mirror(int64_t i, int64_t n, int mode)
{
	if (i < 0)
		return mode == PAD_REFLECT ? -i : -i - 1;
	if (i >= n)
		return mode == PAD_REFLECT ? 2 * n - 2 - i : 2 * n - 1 - i;
	return i;
}

static void pad_run(flow_kernel_ctx *k, int mode, const flow_tensor *cval)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t pads[MAXD * 2], od[MAXD], ist[MAXD];
	if (pad_read(k, x, flow_ctx_input(k, 1), pads, mode))
		return;
	if (cval && cval->nelem != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "constant_values must be a scalar");
		return;
	}
	for (int d = 0; d < x->ndim; d++)
		od[d] = x->dims[d] + pads[2 * d] + pads[2 * d + 1];
	flow_tensor *y = flow_ctx_output(k, 0, x->ndim, od);
	if (!y || y->nelem == 0)
		return;
	size_t esz = esize(x);
	char fill[8] = {0};
	if (cval)
		memcpy(fill, flow_tensor_cdata(cval), esz);
	contiguous_strides(x->ndim, x->dims, ist);
	int nd = x->ndim;
	int64_t inner = nd ? od[nd - 1] : 1, rows = y->nelem / inner;
	char *dst = wbytes(y);
	const char *src = cbytes(x);
	for (int64_t r = 0; r < rows; r++) {
		int64_t q = r, off = 0;
		int outside = 0;
		for (int d = nd - 2; d >= 0; d--) {
			int64_t i = q % od[d] - pads[2 * d];
			q /= od[d];
			if (mode == PAD_CONST) {
				if (i < 0 || i >= x->dims[d])
					outside = 1;
			} else {
				i = mirror(i, x->dims[d], mode);
			}
			off += i * ist[d];
		}
		char *o = dst + (size_t)(r * inner) * esz;
		for (int64_t c = 0; c < inner; c++) {
			int64_t i = nd ? c - pads[2 * (nd - 1)] : 0;
			int in = !outside && (nd == 0 || (i >= 0 && i < x->dims[nd - 1]));
			if (mode != PAD_CONST && nd) {
				i = mirror(i, x->dims[nd - 1], mode);
				in = 1;
			}
			if (in)
				memcpy(o + (size_t)c * esz, src + (size_t)(off + i) * esz, esz);
			else
				memcpy(o + (size_t)c * esz, fill, esz);
		}
	}
}

static void k_Pad(flow_kernel_ctx *k) { pad_run(k, PAD_CONST, NULL); }
static void k_PadV2(flow_kernel_ctx *k) { pad_run(k, PAD_CONST, flow_ctx_input(k, 2)); }
static void k_MirrorPad(flow_kernel_ctx *k)
{
	const char *m = flow_ctx_attr_string(k, "mode", "");
	if (strcmp(m, "REFLECT") && strcmp(m, "SYMMETRIC")) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "mode must be REFLECT or SYMMETRIC, got \"%s\"", m);
		return;
	}
	pad_run(k, strcmp(m, "REFLECT") == 0 ? PAD_REFLECT : PAD_SYMMETRIC, NULL);
}

static int shape_pad(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	const flow_tensor *pt = flow_shape_input_const(c, 1);
	int64_t p[MAXD * 2];
	flow_shape s = x->ndim >= 0 ? ops_shape_unknown_rank(x->ndim) : flow_shape_unknown();
	int n = ops_const_ints(pt, p, MAXD * 2);
	if (x->ndim >= 0 && n >= 0) {
		if (n != 2 * x->ndim)
			return flow_shape_error(c, "paddings must have shape [%d, 2]", x->ndim);
		for (int d = 0; d < x->ndim; d++) {
			if (p[2 * d] < 0 || p[2 * d + 1] < 0)
				return flow_shape_error(c, "paddings for dimension %d are negative", d);
			s.dims[d] = x->dims[d] >= 0 ? x->dims[d] + p[2 * d] + p[2 * d + 1] : -1;
		}
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- Tile ---- */
static void k_Tile(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t m[MAXD], od[MAXD], ist[MAXD];
	int n = ops_read_ints(k, flow_ctx_input(k, 1), m, MAXD, "multiples");
	if (n < 0)
		return;
	if (n != x->ndim) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "multiples has %d values for a rank-%d input", n, x->ndim);
		return;
	}
	for (int d = 0; d < n; d++) {
		if (m[d] < 0) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "multiples[%d] is negative", d);
			return;
		}
		od[d] = x->dims[d] * m[d];
	}
	flow_tensor *y = flow_ctx_output(k, 0, n, od);
	if (!y || y->nelem == 0)
		return;
	size_t esz = esize(x);
	if (n == 0) {
		memcpy(wbytes(y), cbytes(x), esz);
		return;
	}
	contiguous_strides(n, x->dims, ist);
	int64_t inner_in = x->dims[n - 1], inner = od[n - 1], rows = y->nelem / inner;
	for (int64_t r = 0; r < rows; r++) {
		int64_t q = r, off = 0;
		for (int d = n - 2; d >= 0; d--) {
			off += (q % od[d]) % x->dims[d] * ist[d];
			q /= od[d];
		}
		char *o = wbytes(y) + (size_t)(r * inner) * esz;
		for (int64_t t = 0; t < m[n - 1]; t++)
			memcpy(o + (size_t)(t * inner_in) * esz, cbytes(x) + (size_t)off * esz, (size_t)inner_in * esz);
	}
}

static int shape_tile(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	int64_t m[MAXD];
	int n = ops_const_ints(flow_shape_input_const(c, 1), m, MAXD);
	flow_shape s = x->ndim >= 0 ? ops_shape_unknown_rank(x->ndim) : flow_shape_unknown();
	if (x->ndim >= 0 && n >= 0) {
		if (n != x->ndim)
			return flow_shape_error(c, "multiples has %d values for a rank-%d input", n, x->ndim);
		for (int d = 0; d < n; d++) {
			if (m[d] < 0)
				return flow_shape_error(c, "multiples[%d] is negative", d);
			s.dims[d] = x->dims[d] >= 0 ? x->dims[d] * m[d] : -1;
		}
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- ReverseV2 / BroadcastTo ---- */
static void k_ReverseV2(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t ax[MAXD], st[MAXD];
	int rev[MAXD] = {0};
	int n = ops_read_ints(k, flow_ctx_input(k, 1), ax, MAXD, "axis");
	if (n < 0)
		return;
	for (int i = 0; i < n; i++) {
		int a = ops_axis(ax[i], x->ndim);
		if (a < 0 || rev[a]) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis %lld is out of range or repeated", (long long)ax[i]);
			return;
		}
		rev[a] = 1;
	}
	flow_tensor *y = flow_ctx_output(k, 0, x->ndim, x->dims);
	if (!y || y->nelem == 0)
		return;
	contiguous_strides(x->ndim, x->dims, st);
	int64_t off = 0;
	for (int d = 0; d < x->ndim; d++)
		if (rev[d]) {
			off += (x->dims[d] - 1) * st[d];
			st[d] = -st[d];
		}
	strided_copy(k, cbytes(x) + (size_t)off * esize(x), wbytes(y), x->ndim, x->dims, st, esize(x));
}

static int bcast_to_strides(const flow_tensor *x, const int64_t *to, int n, int64_t *st, char *msg, size_t len)
{
	int64_t ist[MAXD];
	if (n < x->ndim) {
		snprintf(msg, len, "target rank %d is below the input rank %d", n, x->ndim);
		return -1;
	}
	contiguous_strides(x->ndim, x->dims, ist);
	for (int d = 0; d < n; d++) {
		int xd = d - (n - x->ndim);
		int64_t dim = xd >= 0 ? x->dims[xd] : 1;
		if (dim != to[d] && dim != 1) {
			snprintf(msg, len, "cannot broadcast dimension %d of size %lld to %lld", d, (long long)dim,
				 (long long)to[d]);
			return -1;
		}
		st[d] = (xd >= 0 && dim != 1) ? ist[xd] : 0;
	}
	return 0;
}

static void k_BroadcastTo(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t to[MAXD], st[MAXD];
	char msg[160];
	int n = ops_read_ints(k, flow_ctx_input(k, 1), to, MAXD, "shape");
	if (n < 0)
		return;
	for (int d = 0; d < n; d++)
		if (to[d] < 0) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "shape[%d] is negative", d);
			return;
		}
	if (bcast_to_strides(x, to, n, st, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, n, to);
	if (y && y->nelem)
		strided_copy(k, cbytes(x), wbytes(y), n, to, st, esize(x));
}

static int shape_from_input(flow_shape_ctx *c, int in)
{
	const flow_shape *sh = flow_shape_input(c, in);
	int64_t d[MAXD];
	int n = ops_const_ints(flow_shape_input_const(c, in), d, MAXD);
	flow_shape s = flow_shape_unknown();
	if (n >= 0) {
		for (int i = 0; i < n; i++)
			if (d[i] < 0)
				return flow_shape_error(c, "shape[%d] is negative", i);
		s = flow_shape_make(n, d);
	} else if (sh->ndim == 1 && sh->dims[0] >= 0 && sh->dims[0] <= MAXD) {
		s = ops_shape_unknown_rank((int)sh->dims[0]);
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

static int shape_from_input1(flow_shape_ctx *c) { return shape_from_input(c, 1); }
static int shape_fill(flow_shape_ctx *c) { return shape_from_input(c, 0); }

/* ---- Shape / Size / Rank ---- */
static void k_Shape(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t n = x->ndim;
	flow_tensor *y = flow_ctx_output(k, 0, 1, &n);
	if (!y)
		return;
	for (int d = 0; d < x->ndim; d++) {
		if (y->dtype == FLOW_I64)
			FLOW_I64P(y)[d] = x->dims[d];
		else
			FLOW_I32P(y)[d] = (int32_t)x->dims[d];
	}
}

static int shape_shape(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	int64_t n = x->ndim;
	flow_shape s = flow_shape_make(1, &n);
	flow_shape_set_output(c, 0, &s);
	return 0;
}

static void k_Size(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	flow_tensor *y = flow_ctx_output(k, 0, 0, NULL);
	if (!y)
		return;
	if (y->dtype == FLOW_I64)
		*FLOW_I64P(y) = x->nelem;
	else
		*FLOW_I32P(y) = (int32_t)x->nelem;
}

static void k_Rank(flow_kernel_ctx *k)
{
	flow_tensor *y = flow_ctx_output(k, 0, 0, NULL);
	if (y)
		*FLOW_I32P(y) = flow_ctx_input(k, 0)->ndim;
}

/* ---- Fill / ZerosLike / OnesLike ---- */
static void fill_bytes(char *dst, int64_t n, const void *v, size_t esz)
{
	for (int64_t i = 0; i < n; i++)
		memcpy(dst + (size_t)i * esz, v, esz);
}

static void k_Fill(flow_kernel_ctx *k)
{
	int64_t d[MAXD];
	flow_tensor *v = flow_ctx_input(k, 1);
	int n = ops_read_ints(k, flow_ctx_input(k, 0), d, MAXD, "dims");
	if (n < 0)
		return;
	if (v->nelem != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "value must be a scalar, has %lld elements", (long long)v->nelem);
		return;
	}
	for (int i = 0; i < n; i++)
		if (d[i] < 0) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "dims[%d] is negative (%lld)", i, (long long)d[i]);
			return;
		}
	flow_tensor *y = flow_ctx_output(k, 0, n, d);
	if (y)
		fill_bytes(wbytes(y), y->nelem, flow_tensor_cdata(v), esize(v));
}

static void like_run(flow_kernel_ctx *k, int one)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	if (!one) {
		flow_ctx_output_zeros(k, 0, x->ndim, x->dims);
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, x->ndim, x->dims);
	if (!y)
		return;
	float f = 1;
	double g = 1;
	int32_t i = 1;
	int64_t l = 1;
	uint8_t b = 1;
	const void *v = x->dtype == FLOW_F32 ? (const void *)&f : x->dtype == FLOW_F64 ? (const void *)&g
		      : x->dtype == FLOW_I32 ? (const void *)&i : x->dtype == FLOW_I64 ? (const void *)&l
		      : (const void *)&b;
	fill_bytes(wbytes(y), y->nelem, v, esize(x));
}
static void k_ZerosLike(flow_kernel_ctx *k) { like_run(k, 0); }
static void k_OnesLike(flow_kernel_ctx *k) { like_run(k, 1); }

/* ---- Cast: saturating float->int, NaN -> 0 (no UB) ---- */
typedef struct cast_job {
	const void *x;
	void *y;
	flow_dtype src, dst;
} cast_job;

static int64_t sat_i64(double v, int64_t lo, int64_t hi)
{
	if (v != v)
		return 0;
	if (v <= (double)lo)
		return lo;
	if (v >= (double)hi)
		return hi;
	return (int64_t)v;
}

static void cast_range(void *ud, int64_t lo, int64_t hi)
{
	cast_job *j = ud;
	for (int64_t i = lo; i < hi; i++) {
		double fv = 0;
		int64_t iv = 0;
		int isf = j->src == FLOW_F32 || j->src == FLOW_F64;
		switch (j->src) {
		case FLOW_F32: fv = ((const float *)j->x)[i]; break;
		case FLOW_F64: fv = ((const double *)j->x)[i]; break;
		case FLOW_I32: iv = ((const int32_t *)j->x)[i]; break;
		case FLOW_I64: iv = ((const int64_t *)j->x)[i]; break;
		default: iv = ((const uint8_t *)j->x)[i] != 0; break;
		}
		switch (j->dst) {
		case FLOW_F32: ((float *)j->y)[i] = isf ? (float)fv : (float)iv; break;
		case FLOW_F64: ((double *)j->y)[i] = isf ? fv : (double)iv; break;
		case FLOW_I32:
			((int32_t *)j->y)[i] = isf ? (int32_t)sat_i64(fv, INT32_MIN, INT32_MAX) : (int32_t)(uint32_t)iv;
			break;
		case FLOW_I64:
			/* 2^63 is not representable: saturate below it */
			((int64_t *)j->y)[i] = isf ? (fv >= 9223372036854775807.0 ? INT64_MAX : sat_i64(fv, INT64_MIN, INT64_MAX))
						   : iv;
			break;
		default: ((uint8_t *)j->y)[i] = isf ? fv != 0 : iv != 0; break;
		}
	}
}

static void k_Cast(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	flow_dtype dst = flow_ctx_output_dtype(k, 0);
	if (dst == x->dtype) {
		flow_ctx_set_output(k, 0, x);
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, x->ndim, x->dims);
	if (!y)
		return;
	cast_job j = {flow_tensor_cdata(x), flow_tensor_ptr(y), x->dtype, dst};
	ops_parallel(k, x->nelem, OPS_GRAIN, cast_range, &j);
}

/* ---- Select (TF1: cond same shape or a vector over dim 0) / SelectV2 ---- */
static void k_Select(flow_kernel_ctx *k)
{
	flow_tensor *c = flow_ctx_input(k, 0), *t = flow_ctx_input(k, 1), *e = flow_ctx_input(k, 2);
	if (t->ndim != e->ndim || memcmp(t->dims, e->dims, sizeof(int64_t) * (size_t)t->ndim)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "'t' and 'e' must have the same shape");
		return;
	}
	int vec = c->ndim == 1 && t->ndim > 1;
	if (vec ? c->dims[0] != t->dims[0]
		: (c->ndim != t->ndim || memcmp(c->dims, t->dims, sizeof(int64_t) * (size_t)t->ndim))) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT,
			      "condition must have the shape of 't' or be a vector over its first dimension");
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, t->ndim, t->dims);
	if (!y)
		return;
	size_t esz = esize(t);
	int64_t inner = vec ? t->nelem / (t->dims[0] ? t->dims[0] : 1) : 1;
	const uint8_t *cv = flow_tensor_cdata(c);
	for (int64_t i = 0; i < t->nelem; i++)
		memcpy(wbytes(y) + (size_t)i * esz, (cv[vec ? i / inner : i] ? cbytes(t) : cbytes(e)) + (size_t)i * esz,
		       esz);
}

static void k_SelectV2(flow_kernel_ctx *k)
{
	flow_tensor *c = flow_ctx_input(k, 0), *t = flow_ctx_input(k, 1), *e = flow_ctx_input(k, 2);
	ops_bcast b1, b2;
	char msg[200];
	if (ops_bcast_init(&b1, t, e, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "'t' and 'e': %s", msg);
		return;
	}
	flow_tensor te = {0};
	te.ndim = b1.ndim;
	te.nelem = b1.nelem;
	memcpy(te.dims, b1.dims, sizeof te.dims);
	if (ops_bcast_init(&b2, c, &te, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "condition: %s", msg);
		return;
	}
	int nd = b2.ndim;
	flow_tensor *y = flow_ctx_output(k, 0, nd, b2.dims);
	if (!y || y->nelem == 0)
		return;
	int64_t st[3][MAXD];
	const flow_tensor *src[3] = {c, t, e};
	for (int s = 0; s < 3; s++)
		if (bcast_to_strides(src[s], b2.dims, nd, st[s], msg, sizeof msg)) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
			return;
		}
	size_t esz = esize(t);
	int64_t idx[MAXD] = {0}, off[3] = {0, 0, 0};
	const uint8_t *cv = flow_tensor_cdata(c);
	for (int64_t i = 0; i < y->nelem; i++) {
		memcpy(wbytes(y) + (size_t)i * esz, (cv[off[0]] ? cbytes(t) + (size_t)off[1] * esz
							       : cbytes(e) + (size_t)off[2] * esz), esz);
		for (int d = nd - 1; d >= 0; d--) {
			for (int s = 0; s < 3; s++)
				off[s] += st[s][d];
			if (++idx[d] < b2.dims[d])
				break;
			for (int s = 0; s < 3; s++)
				off[s] -= st[s][d] * b2.dims[d];
			idx[d] = 0;
		}
	}
}

static int shape_select(flow_shape_ctx *c)
{
	const flow_shape *t = flow_shape_input(c, 1), *e = flow_shape_input(c, 2);
	flow_shape_set_output(c, 0, t->ndim >= 0 ? t : e);
	return 0;
}

static int shape_select_v2(flow_shape_ctx *c)
{
	flow_shape a, b;
	char msg[200];
	if (flow_shape_broadcast(flow_shape_input(c, 1), flow_shape_input(c, 2), &a, msg, sizeof msg) ||
	    flow_shape_broadcast(flow_shape_input(c, 0), &a, &b, msg, sizeof msg))
		return flow_shape_error(c, "%s", msg);
	flow_shape_set_output(c, 0, &b);
	return 0;
}

/* ---- Where: coordinates of true / non-zero elements, [n, rank] i64 ---- */
static int nonzero(const flow_tensor *t, int64_t i)
{
	const void *p = flow_tensor_cdata(t);
	switch (t->dtype) {
	case FLOW_F32: return ((const float *)p)[i] != 0;
	case FLOW_F64: return ((const double *)p)[i] != 0;
	case FLOW_I32: return ((const int32_t *)p)[i] != 0;
	case FLOW_I64: return ((const int64_t *)p)[i] != 0;
	default: return ((const uint8_t *)p)[i] != 0;
	}
}

static void k_Where(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t n = 0;
	for (int64_t i = 0; i < x->nelem; i++)
		n += nonzero(x, i);
	int64_t od[2] = {n, x->ndim};
	flow_tensor *y = flow_ctx_output(k, 0, 2, od);
	if (!y)
		return;
	int64_t *o = FLOW_I64P(y), r = 0;
	for (int64_t i = 0; i < x->nelem; i++) {
		if (!nonzero(x, i))
			continue;
		int64_t q = i;
		for (int d = x->ndim - 1; d >= 0; d--) {
			o[r * x->ndim + d] = q % x->dims[d];
			q /= x->dims[d];
		}
		r++;
	}
}

static int shape_where(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	int64_t d[2] = {-1, x->ndim};
	flow_shape s = flow_shape_make(2, d);
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- Range ---- */
static int range_count(double start, double limit, double delta, int isint, int64_t *n, char *msg, size_t len)
{
	if (delta == 0) {
		snprintf(msg, len, "delta must not be 0");
		return -1;
	}
	if ((delta > 0 && start > limit) || (delta < 0 && start < limit)) {
		snprintf(msg, len, "start %g and limit %g do not match the sign of delta %g", start, limit, delta);
		return -1;
	}
	double c = isint ? floor((fabs(limit - start) + fabs(delta) - 1) / fabs(delta))
			 : ceil(fabs((limit - start) / delta));
	if (c > 1e12) {
		snprintf(msg, len, "range of %g elements is too large", c);
		return -1;
	}
	*n = (int64_t)c;
	return 0;
}

static void k_Range(flow_kernel_ctx *k)
{
	flow_tensor *s = flow_ctx_input(k, 0), *l = flow_ctx_input(k, 1), *d = flow_ctx_input(k, 2);
	if (s->nelem != 1 || l->nelem != 1 || d->nelem != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "start, limit and delta must be scalars");
		return;
	}
	double a = flow_tensor_get(s, 0), b = flow_tensor_get(l, 0), c = flow_tensor_get(d, 0);
	int isint = s->dtype == FLOW_I32 || s->dtype == FLOW_I64;
	int64_t n;
	char msg[160];
	if (range_count(a, b, c, isint, &n, msg, sizeof msg)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "%s", msg);
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, 1, &n);
	if (!y)
		return;
	for (int64_t i = 0; i < n; i++) {
		switch (y->dtype) {
		case FLOW_F32: FLOW_F32P(y)[i] = (float)(a + (double)i * c); break;
		case FLOW_F64: FLOW_F64P(y)[i] = a + (double)i * c; break;
		case FLOW_I32: FLOW_I32P(y)[i] = (int32_t)((int64_t)a + i * (int64_t)c); break;
		default: FLOW_I64P(y)[i] = FLOW_I64P(s)[0] + i * FLOW_I64P(d)[0]; break;
		}
	}
}

static int shape_range(flow_shape_ctx *c)
{
	const flow_tensor *s = flow_shape_input_const(c, 0), *l = flow_shape_input_const(c, 1),
			  *d = flow_shape_input_const(c, 2);
	int64_t n = -1;
	if (s && l && d && s->nelem == 1 && l->nelem == 1 && d->nelem == 1) {
		char msg[160];
		if (range_count(flow_tensor_get(s, 0), flow_tensor_get(l, 0), flow_tensor_get(d, 0),
				s->dtype == FLOW_I32 || s->dtype == FLOW_I64, &n, msg, sizeof msg))
			return flow_shape_error(c, "%s", msg);
	}
	flow_shape out = flow_shape_make(1, &n);
	flow_shape_set_output(c, 0, &out);
	return 0;
}

/* ---- OneHot ---- */
static void k_OneHot(flow_kernel_ctx *k)
{
	flow_tensor *ix = flow_ctx_input(k, 0), *dp = flow_ctx_input(k, 1);
	flow_tensor *on = flow_ctx_input(k, 2), *off = flow_ctx_input(k, 3);
	int64_t depth[1];
	if (ops_read_ints(k, dp, depth, 1, "depth") != 1 || depth[0] < 0) {
		if (flow_ctx_ok(k))
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "depth must be a non-negative scalar");
		return;
	}
	if (on->nelem != 1 || off->nelem != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "on_value and off_value must be scalars");
		return;
	}
	int nd = ix->ndim + 1;
	int64_t axis_v = flow_ctx_attr_int(k, "axis", -1), od[MAXD];
	int axis = axis_v == -1 ? ix->ndim : (int)axis_v;
	if (axis < 0 || axis > ix->ndim || nd > MAXD) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "axis %lld out of range", (long long)axis_v);
		return;
	}
	expand_dims(ix->ndim, ix->dims, axis, od);
	od[axis] = depth[0];
	flow_tensor *y = flow_ctx_output(k, 0, nd, od);
	if (!y || y->nelem == 0)
		return;
	size_t esz = esize(on);
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= ix->dims[d];
	for (int d = axis; d < ix->ndim; d++)
		inner *= ix->dims[d];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t c = 0; c < depth[0]; c++)
			for (int64_t i = 0; i < inner; i++) {
				int64_t v = (int64_t)flow_tensor_get(ix, o * inner + i);
				memcpy(wbytes(y) + (size_t)((o * depth[0] + c) * inner + i) * esz,
				       v == c ? flow_tensor_cdata(on) : flow_tensor_cdata(off), esz);
			}
}

static int shape_one_hot(flow_shape_ctx *c)
{
	const flow_shape *ix = flow_shape_input(c, 0);
	int64_t depth[1], axis_v = flow_shape_attr_int(c, "axis", -1);
	flow_shape s = flow_shape_unknown();
	if (ix->ndim >= 0) {
		int axis = axis_v == -1 ? ix->ndim : (int)axis_v;
		if (axis < 0 || axis > ix->ndim || ix->ndim + 1 > MAXD)
			return flow_shape_error(c, "axis %lld out of range", (long long)axis_v);
		expand_dims(ix->ndim, ix->dims, axis, s.dims);
		s.ndim = ix->ndim + 1;
		s.dims[axis] = ops_const_ints(flow_shape_input_const(c, 1), depth, 1) == 1 ? depth[0] : -1;
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- ClipByValue (min/max scalars or the input's shape) ---- */
static void k_ClipByValue(flow_kernel_ctx *k)
{
	flow_tensor *t = flow_ctx_input(k, 0), *lo = flow_ctx_input(k, 1), *hi = flow_ctx_input(k, 2);
	if ((lo->nelem != 1 && lo->nelem != t->nelem) || (hi->nelem != 1 && hi->nelem != t->nelem)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "clip_value_min/max must be scalars or have the input's shape");
		return;
	}
	flow_tensor *y = flow_ctx_output_inplace(k, 0, 0, t->ndim, t->dims);
	if (!y)
		return;
	for (int64_t i = 0; i < t->nelem; i++) {
		int64_t a = lo->nelem == 1 ? 0 : i, b = hi->nelem == 1 ? 0 : i;
		switch (t->dtype) {
#define CLIP(DT, T)                                                                   \
	case DT: {                                                                    \
		T v = ((const T *)flow_tensor_cdata(t))[i];                           \
		T l = ((const T *)flow_tensor_cdata(lo))[a], h = ((const T *)flow_tensor_cdata(hi))[b]; \
		((T *)flow_tensor_ptr(y))[i] = v < l ? l : v > h ? h : v;             \
		break;                                                                \
	}
		CLIP(FLOW_F32, float)
		CLIP(FLOW_F64, double)
		CLIP(FLOW_I32, int32_t)
		CLIP(FLOW_I64, int64_t)
#undef CLIP
		default:
			break;
		}
	}
}

/* ---- forwarding and copies ---- */
static void k_forward(flow_kernel_ctx *k) { flow_ctx_set_output(k, 0, flow_ctx_input(k, 0)); }

static void k_Snapshot(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	flow_tensor *y = flow_ctx_output(k, 0, x->ndim, x->dims);
	if (y && x->nelem)
		memcpy(wbytes(y), cbytes(x), (size_t)x->nelem * esize(x));
}

static void k_InvertPermutation(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	if (x->ndim != 1) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "x must be a vector");
		return;
	}
	flow_tensor *y = flow_ctx_output(k, 0, 1, x->dims);
	if (!y)
		return;
	int64_t n = x->nelem;
	for (int64_t i = 0; i < n; i++) {
		if (y->dtype == FLOW_I64)
			FLOW_I64P(y)[i] = -1;
		else
			FLOW_I32P(y)[i] = -1;
	}
	for (int64_t i = 0; i < n; i++) {
		int64_t v = (int64_t)flow_tensor_get(x, i);
		int64_t prev = v >= 0 && v < n ? (int64_t)flow_tensor_get(y, v) : 0;
		if (v < 0 || v >= n || prev != -1) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "x is not a permutation of 0..%lld (x[%lld] = %lld)",
				      (long long)(n - 1), (long long)i, (long long)v);
			return;
		}
		if (y->dtype == FLOW_I64)
			FLOW_I64P(y)[v] = i;
		else
			FLOW_I32P(y)[v] = (int32_t)i;
	}
}

/* ---- BroadcastGradientArgs: which axes each side's gradient sums over ---- */
static void k_BroadcastGradientArgs(flow_kernel_ctx *k)
{
	int64_t a[MAXD], b[MAXD];
	int na = ops_read_ints(k, flow_ctx_input(k, 0), a, MAXD, "s0");
	int nb = na < 0 ? -1 : ops_read_ints(k, flow_ctx_input(k, 1), b, MAXD, "s1");
	if (nb < 0)
		return;
	int nd = na > nb ? na : nb;
	int64_t ra[MAXD], rb[MAXD];
	int64_t nra = 0, nrb = 0;
	for (int d = 0; d < nd; d++) {
		int ia = d - (nd - na), ib = d - (nd - nb);
		int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
		if (da != db && da != 1 && db != 1) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT,
				      "incompatible shapes for broadcasting: dimension %d is %lld vs %lld", d,
				      (long long)da, (long long)db);
			return;
		}
		/* a side of size 1 (or missing) was broadcast: its gradient sums
		 * there (a size-1 output dim sums one element: harmless) */
		if (da == 1)
			ra[nra++] = d;
		if (db == 1)
			rb[nrb++] = d;
	}
	flow_tensor *o0 = flow_ctx_output(k, 0, 1, &nra), *o1 = o0 ? flow_ctx_output(k, 1, 1, &nrb) : NULL;
	if (!o1)
		return;
	for (int64_t i = 0; i < nra; i++) {
		if (o0->dtype == FLOW_I64) FLOW_I64P(o0)[i] = ra[i];
		else FLOW_I32P(o0)[i] = (int32_t)ra[i];
	}
	for (int64_t i = 0; i < nrb; i++) {
		if (o1->dtype == FLOW_I64) FLOW_I64P(o1)[i] = rb[i];
		else FLOW_I32P(o1)[i] = (int32_t)rb[i];
	}
}

static int shape_bga(flow_shape_ctx *c)
{
	flow_shape s = ops_shape_unknown_rank(1);
	flow_shape_set_output(c, 0, &s);
	flow_shape_set_output(c, 1, &s);
	return 0;
}

/* ---- UnsortedSegmentSum (the gradient of Gather) ---- */
static void k_UnsortedSegmentSum(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0), *ids = flow_ctx_input(k, 1);
	int64_t ns[1];
	if (ops_read_ints(k, flow_ctx_input(k, 2), ns, 1, "num_segments") != 1 || ns[0] < 0) {
		if (flow_ctx_ok(k))
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "num_segments must be a non-negative scalar");
		return;
	}
	if (ids->ndim > x->ndim || memcmp(ids->dims, x->dims, sizeof(int64_t) * (size_t)ids->ndim)) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "segment_ids' shape must be a prefix of data's shape");
		return;
	}
	int64_t od[MAXD], inner = 1;
	int nd = 1 + x->ndim - ids->ndim;
	od[0] = ns[0];
	for (int d = ids->ndim; d < x->ndim; d++) {
		od[1 + d - ids->ndim] = x->dims[d];
		inner *= x->dims[d];
	}
	for (int64_t i = 0; i < ids->nelem; i++) {
		int64_t v = (int64_t)flow_tensor_get(ids, i);
		if (v >= ns[0]) {
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "segment_ids[%lld] = %lld is not below num_segments %lld",
				      (long long)i, (long long)v, (long long)ns[0]);
			return;
		}
	}
	flow_tensor *y = flow_ctx_output_zeros(k, 0, nd, od);
	if (!y)
		return;
	for (int64_t i = 0; i < ids->nelem; i++) {
		int64_t v = (int64_t)flow_tensor_get(ids, i);
		if (v < 0) /* TF drops negative ids */
			continue;
		for (int64_t c = 0; c < inner; c++) {
			int64_t si = i * inner + c, di = v * inner + c;
			switch (x->dtype) {
			case FLOW_F32: FLOW_F32P(y)[di] += FLOW_F32P(x)[si]; break;
			case FLOW_F64: FLOW_F64P(y)[di] += FLOW_F64P(x)[si]; break;
			case FLOW_I32: FLOW_I32P(y)[di] = (int32_t)((uint32_t)FLOW_I32P(y)[di] + (uint32_t)FLOW_I32P(x)[si]); break;
			default: FLOW_I64P(y)[di] = (int64_t)((uint64_t)FLOW_I64P(y)[di] + (uint64_t)FLOW_I64P(x)[si]); break;
			}
		}
	}
}

static int shape_segment_sum(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0), *ids = flow_shape_input(c, 1);
	int64_t ns[1];
	flow_shape s = flow_shape_unknown();
	if (x->ndim >= 0 && ids->ndim >= 0) {
		if (ids->ndim > x->ndim)
			return flow_shape_error(c, "segment_ids has rank %d above data's %d", ids->ndim, x->ndim);
		s.ndim = 1 + x->ndim - ids->ndim;
		s.dims[0] = ops_const_ints(flow_shape_input_const(c, 2), ns, 1) == 1 ? ns[0] : -1;
		for (int d = ids->ndim; d < x->ndim; d++)
			s.dims[1 + d - ids->ndim] = x->dims[d];
	}
	flow_shape_set_output(c, 0, &s);
	return 0;
}

/* ---- TopKV2: k largest along the last axis, ties to the lower index ---- */
typedef struct topk_item { double v; int64_t i; } topk_item;

static int topk_cmp(const void *a, const void *b)
{
	const topk_item *x = a, *y = b;
	if (x->v != y->v)
		return x->v > y->v ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static void k_TopKV2(flow_kernel_ctx *k)
{
	flow_tensor *x = flow_ctx_input(k, 0);
	int64_t kk[1];
	if (ops_read_ints(k, flow_ctx_input(k, 1), kk, 1, "k") != 1) {
		if (flow_ctx_ok(k))
			flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "k must be a scalar");
		return;
	}
	if (x->ndim < 1 || kk[0] < 0 || kk[0] > x->dims[x->ndim - 1]) {
		flow_ctx_fail(k, FLOW_INVALID_ARGUMENT, "k = %lld must be in [0, %lld] (last dimension)", (long long)kk[0],
			      x->ndim ? (long long)x->dims[x->ndim - 1] : 0LL);
		return;
	}
	int64_t od[MAXD], n = x->dims[x->ndim - 1], rows = n ? x->nelem / n : 0;
	memcpy(od, x->dims, sizeof(int64_t) * (size_t)x->ndim);
	od[x->ndim - 1] = kk[0];
	flow_tensor *v = flow_ctx_output(k, 0, x->ndim, od), *ix = v ? flow_ctx_output(k, 1, x->ndim, od) : NULL;
	if (!ix || !n)
		return;
	topk_item *it = malloc((size_t)n * sizeof *it);
	if (!it) {
		flow_ctx_fail(k, FLOW_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	size_t esz = esize(x);
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t i = 0; i < n; i++) {
			it[i].v = flow_tensor_get(x, r * n + i);
			it[i].i = i;
		}
		qsort(it, (size_t)n, sizeof *it, topk_cmp);
		for (int64_t j = 0; j < kk[0]; j++) {
			memcpy(wbytes(v) + (size_t)(r * kk[0] + j) * esz, cbytes(x) + (size_t)(r * n + it[j].i) * esz, esz);
			FLOW_I32P(ix)[r * kk[0] + j] = (int32_t)it[j].i;
		}
	}
	free(it);
}

static int shape_topk(flow_shape_ctx *c)
{
	const flow_shape *x = flow_shape_input(c, 0);
	int64_t kk[1];
	flow_shape s = *x;
	if (x->ndim == 0)
		return flow_shape_error(c, "input must have rank >= 1");
	if (x->ndim > 0)
		s.dims[x->ndim - 1] = ops_const_ints(flow_shape_input_const(c, 1), kk, 1) == 1 ? kk[0] : -1;
	flow_shape_set_output(c, 0, &s);
	flow_shape_set_output(c, 1, &s);
	return 0;
}

#define TALL "T: {f32,f64,i32,i64,bool}"
#define TNUM "T: {f32,f64,i32,i64}"

static const flow_op_def array_ops[] = {
	{.name = "Reshape", .inputs = "tensor: T, shape: Tshape", .outputs = "output: T",
	 .attrs = TALL "; Tshape: {i32,i64} = i32", .shape_fn = shape_reshape},
	{.name = "ExpandDims", .inputs = "input: T, dim: Tdim", .outputs = "output: T",
	 .attrs = TALL "; Tdim: {i32,i64} = i32", .shape_fn = shape_expand_dims},
	{.name = "Squeeze", .inputs = "input: T", .outputs = "output: T",
	 .attrs = TALL "; squeeze_dims: ints = []", .shape_fn = shape_squeeze},
	{.name = "Transpose", .inputs = "x: T, perm: Tperm", .outputs = "y: T",
	 .attrs = TALL "; Tperm: {i32,i64} = i32", .shape_fn = shape_transpose},
	{.name = "ConcatV2", .inputs = "values: N*T, axis: Tidx", .outputs = "output: T",
	 .attrs = TALL "; N: int >= 1; Tidx: {i32,i64} = i32", .shape_fn = shape_concatv2},
	{.name = "Concat", .inputs = "concat_dim: i32, values: N*T", .outputs = "output: T",
	 .attrs = TALL "; N: int >= 1", .shape_fn = shape_concat},
	{.name = "Pack", .inputs = "values: N*T", .outputs = "output: T",
	 .attrs = TALL "; N: int >= 1; axis: int = 0", .shape_fn = shape_pack},
	{.name = "Unpack", .inputs = "value: T", .outputs = "output: num*T",
	 .attrs = TALL "; num: int >= 0; axis: int = 0", .shape_fn = shape_unpack},
	{.name = "Split", .inputs = "split_dim: i32, value: T", .outputs = "output: num_split*T",
	 .attrs = TALL "; num_split: int >= 1", .shape_fn = shape_split},
	{.name = "Slice", .inputs = "input: T, begin: Index, size: Index", .outputs = "output: T",
	 .attrs = TALL "; Index: {i32,i64} = i32", .shape_fn = shape_slice},
	{.name = "StridedSlice", .inputs = "input: T, begin: Index, end: Index, strides: Index",
	 .outputs = "output: T",
	 .attrs = TALL "; Index: {i32,i64} = i32; begin_mask: int = 0; end_mask: int = 0; "
		  "ellipsis_mask: int = 0; new_axis_mask: int = 0; shrink_axis_mask: int = 0",
	 .shape_fn = shape_strided_slice},
	{.name = "GatherV2", .inputs = "params: Tparams, indices: Tindices, axis: Taxis", .outputs = "output: Tparams",
	 .attrs = "Tparams: {f32,f64,i32,i64,bool}; Tindices: {i32,i64} = i32; Taxis: {i32,i64} = i32; batch_dims: int = 0",
	 .shape_fn = shape_gatherv2},
	{.name = "Gather", .inputs = "params: Tparams, indices: Tindices", .outputs = "output: Tparams",
	 .attrs = "Tparams: {f32,f64,i32,i64,bool}; Tindices: {i32,i64} = i32", .shape_fn = shape_gather},
	{.name = "Pad", .inputs = "input: T, paddings: Tpaddings", .outputs = "output: T",
	 .attrs = TALL "; Tpaddings: {i32,i64} = i32", .shape_fn = shape_pad},
	{.name = "PadV2", .inputs = "input: T, paddings: Tpaddings, constant_values: T", .outputs = "output: T",
	 .attrs = TALL "; Tpaddings: {i32,i64} = i32", .shape_fn = shape_pad},
	{.name = "MirrorPad", .inputs = "input: T, paddings: Tpaddings", .outputs = "output: T",
	 .attrs = TALL "; Tpaddings: {i32,i64} = i32; mode: string", .shape_fn = shape_pad},
	{.name = "Tile", .inputs = "input: T, multiples: Tmultiples", .outputs = "output: T",
	 .attrs = TALL "; Tmultiples: {i32,i64} = i32", .shape_fn = shape_tile},
	{.name = "ReverseV2", .inputs = "tensor: T, axis: Tidx", .outputs = "output: T",
	 .attrs = TALL "; Tidx: {i32,i64} = i32", .shape_fn = flow_shape_fn_unchanged},
	{.name = "BroadcastTo", .inputs = "input: T, shape: Tidx", .outputs = "output: T",
	 .attrs = TALL "; Tidx: {i32,i64} = i32", .shape_fn = shape_from_input1},
	{.name = "Shape", .inputs = "input: T", .outputs = "output: out_type",
	 .attrs = TALL "; out_type: {i32,i64} = i32", .shape_fn = shape_shape},
	{.name = "Size", .inputs = "input: T", .outputs = "output: out_type",
	 .attrs = TALL "; out_type: {i32,i64} = i32", .shape_fn = flow_shape_fn_scalar},
	{.name = "Rank", .inputs = "input: T", .outputs = "output: i32", .attrs = TALL,
	 .shape_fn = flow_shape_fn_scalar},
	{.name = "Fill", .inputs = "dims: index_type, value: T", .outputs = "output: T",
	 .attrs = TALL "; index_type: {i32,i64} = i32", .shape_fn = shape_fill},
	{.name = "ZerosLike", .inputs = "x: T", .outputs = "y: T", .attrs = TALL,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "OnesLike", .inputs = "x: T", .outputs = "y: T", .attrs = TALL,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "Cast", .inputs = "x: SrcT", .outputs = "y: DstT",
	 .attrs = "SrcT: {f32,f64,i32,i64,bool}; DstT: {f32,f64,i32,i64,bool}; Truncate: bool = false",
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "Select", .inputs = "condition: bool, t: T, e: T", .outputs = "output: T", .attrs = TALL,
	 .shape_fn = shape_select},
	{.name = "SelectV2", .inputs = "condition: bool, t: T, e: T", .outputs = "output: T", .attrs = TALL,
	 .shape_fn = shape_select_v2},
	{.name = "Where", .inputs = "input: T", .outputs = "index: i64", .attrs = "T: {f32,f64,i32,i64,bool} = bool",
	 .shape_fn = shape_where},
	{.name = "Range", .inputs = "start: Tidx, limit: Tidx, delta: Tidx", .outputs = "output: Tidx",
	 .attrs = "Tidx: {f32,f64,i32,i64} = i32", .shape_fn = shape_range},
	{.name = "OneHot", .inputs = "indices: TI, depth: i32, on_value: T, off_value: T", .outputs = "output: T",
	 .attrs = TALL "; TI: {i32,i64} = i64; axis: int = -1", .shape_fn = shape_one_hot},
	{.name = "ClipByValue", .inputs = "t: T, clip_value_min: T, clip_value_max: T", .outputs = "output: T",
	 .attrs = TNUM, .shape_fn = flow_shape_fn_unchanged},
	{.name = "StopGradient", .inputs = "input: T", .outputs = "output: T", .attrs = TALL,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "PreventGradient", .inputs = "input: T", .outputs = "output: T",
	 .attrs = TALL "; message: string = \"\"", .shape_fn = flow_shape_fn_unchanged},
	{.name = "Snapshot", .inputs = "input: T", .outputs = "output: T", .attrs = TALL,
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "InvertPermutation", .inputs = "x: T", .outputs = "y: T", .attrs = "T: {i32,i64} = i32",
	 .shape_fn = flow_shape_fn_unchanged},
	{.name = "BroadcastGradientArgs", .inputs = "s0: T, s1: T", .outputs = "r0: T, r1: T",
	 .attrs = "T: {i32,i64} = i32", .shape_fn = shape_bga},
	{.name = "UnsortedSegmentSum", .inputs = "data: T, segment_ids: Tindices, num_segments: Tnumsegments",
	 .outputs = "output: T", .attrs = TNUM "; Tindices: {i32,i64} = i32; Tnumsegments: {i32,i64} = i32",
	 .shape_fn = shape_segment_sum},
	{.name = "TopKV2", .inputs = "input: T, k: i32", .outputs = "values: T, indices: i32",
	 .attrs = TNUM "; sorted: bool = true", .shape_fn = shape_topk},
};

static const flow_kernel_def array_kernels[] = {
	KANY("Reshape", k_Reshape), KANY("ExpandDims", k_ExpandDims), KANY("Squeeze", k_Squeeze),
	KANY("Transpose", k_Transpose), KANY("ConcatV2", k_ConcatV2), KANY("Concat", k_Concat),
	KANY("Pack", k_Pack), KANY("Unpack", k_Unpack), KANY("Split", k_Split), KANY("Slice", k_Slice),
	KANY("StridedSlice", k_StridedSlice), KANY("GatherV2", k_GatherV2), KANY("Gather", k_Gather),
	KANY("Pad", k_Pad), KANY("PadV2", k_PadV2), KANY("MirrorPad", k_MirrorPad), KANY("Tile", k_Tile),
	KANY("ReverseV2", k_ReverseV2), KANY("BroadcastTo", k_BroadcastTo), KANY("Shape", k_Shape),
	KANY("Size", k_Size), KANY("Rank", k_Rank), KANY("Fill", k_Fill), KANY("ZerosLike", k_ZerosLike),
	KANY("OnesLike", k_OnesLike), KANY("Cast", k_Cast), KANY("Select", k_Select),
	KANY("SelectV2", k_SelectV2), KANY("Where", k_Where), KANYNUM("Range", k_Range),
	KANY("OneHot", k_OneHot), KANYNUM("ClipByValue", k_ClipByValue), KANY("StopGradient", k_forward),
	KANY("PreventGradient", k_forward), KANY("Snapshot", k_Snapshot),
	K1("InvertPermutation", FLOW_I32, k_InvertPermutation), K1("InvertPermutation", FLOW_I64, k_InvertPermutation),
	K1("BroadcastGradientArgs", FLOW_I32, k_BroadcastGradientArgs),
	K1("BroadcastGradientArgs", FLOW_I64, k_BroadcastGradientArgs),
	KANYNUM("UnsortedSegmentSum", k_UnsortedSegmentSum), KANYNUM("TopKV2", k_TopKV2),
};

FLOW_OP_LIBRARY(array, array_ops, array_kernels)
