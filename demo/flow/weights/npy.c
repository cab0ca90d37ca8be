/*
 * npy.c — strict .npy reader (v1.0, v2.0, v3.0) and atomic writer.
 *
 * NEP 1: "\x93NUMPY", major, minor, header length (u16 LE for v1, u32 for
 * v2/v3), an ASCII Python dict literal {'descr','fortran_order','shape'}
 * padded with spaces and ended by '\n', then the raw array. The header is
 * capped at 10,000 bytes like numpy's default max_header_size. Fortran
 * order arrays are copied into C order; everything else is zero copy.
 */
#include "weights_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hp {
	const unsigned char *s;
	size_t n, i, base;   /* base: file offset of s[0] */
	const char *label;
	char *err;
	size_t errlen;
} hp;

static int hfail(hp *p, const char *what)
{
	werr(p->err, p->errlen, p->label, "npy header: %s at offset %zu", what, p->base + p->i);
	return -1;
}

static void hws(hp *p)
{
	while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
			       p->s[p->i] == '\r'))
		p->i++;
}

static int heat(hp *p, char c)
{
	hws(p);
	if (p->i < p->n && p->s[p->i] == (unsigned char)c) {
		p->i++;
		return 1;
	}
	return 0;
}

/* A Python string literal without escapes ('...' or "..."), into o. */
static int hstr(hp *p, char *o, size_t olen)
{
	hws(p);
	if (p->i >= p->n || (p->s[p->i] != '\'' && p->s[p->i] != '"'))
		return hfail(p, "expected a quoted string");
	unsigned char q = p->s[p->i++];
	size_t k = 0;
	while (p->i < p->n && p->s[p->i] != q) {
		unsigned char c = p->s[p->i];
		if (c == '\\' || c < 0x20 || c >= 0x7f)
			return hfail(p, "unsupported character in string");
		if (k + 1 >= olen)
			return hfail(p, "string too long");
		o[k++] = (char)c;
		p->i++;
	}
	if (p->i >= p->n)
		return hfail(p, "unterminated string");
	p->i++;
	o[k] = 0;
	return 0;
}

static int hint(hp *p, int64_t *out)
{
	hws(p);
	size_t s = p->i;
	int64_t v = 0;
	while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
		int d = p->s[p->i] - '0';
		if (v > (INT64_MAX - d) / 10)
			return hfail(p, "shape dimension overflows 64 bits");
		v = v * 10 + d;
		p->i++;
	}
	if (p->i == s)
		return hfail(p, "expected a non-negative integer in shape");
	if (p->i < p->n && p->s[p->i] == 'L') /* Python 2 long literal */
		p->i++;
	*out = v;
	return 0;
}

static int parse_descr(const char *d, flow_wdtype *t)
{
	for (int i = 0; i < FLOW_WD_COUNT; i++) {
		const char *nd = flow_wdtype_npy_descr((flow_wdtype)i);
		if (nd && strcmp(d, nd) == 0) {
			*t = (flow_wdtype)i;
			return 0;
		}
	}
	/* numpy writes '|' for 1-byte types; accept '<' spellings of them too */
	if (strcmp(d, "<b1") == 0) { *t = FLOW_WD_BOOL; return 0; }
	if (strcmp(d, "<u1") == 0) { *t = FLOW_WD_U8; return 0; }
	if (strcmp(d, "<i1") == 0) { *t = FLOW_WD_I8; return 0; }
	return -1;
}

/* Copies a Fortran-order array into C order. */
static void fortran_to_c(const unsigned char *src, unsigned char *dst, const int64_t *shape,
			 int rank, size_t esz)
{
	int64_t idx[FLOW_WEIGHTS_MAX_RANK] = {0};
	int64_t fstride[FLOW_WEIGHTS_MAX_RANK];
	size_t n = 1;
	for (int d = 0; d < rank; d++) {
		fstride[d] = d ? fstride[d - 1] * shape[d - 1] : 1;
		n *= (size_t)shape[d];
	}
	for (size_t c = 0; c < n; c++) {
		size_t f = 0;
		for (int d = 0; d < rank; d++)
			f += (size_t)(idx[d] * fstride[d]);
		memcpy(dst + c * esz, src + f * esz, esz);
		for (int d = rank - 1; d >= 0; d--) {
			if (++idx[d] < shape[d])
				break;
			idx[d] = 0;
		}
	}
}

static char *stem(const char *label)
{
	const char *b = weights_basename(label);
	size_t k = strlen(b);
	if (k > 4 && strcmp(b + k - 4, ".npy") == 0)
		k -= 4;
	char *s = malloc(k + 1);
	if (s) {
		memcpy(s, b, k);
		s[k] = 0;
	}
	return s;
}

flow_weights *flow_npy_parse(const void *buf, size_t len, const char *label, char *err,
			     size_t errlen)
{
	const unsigned char *b = buf;
	if (!label)
		label = "(memory)";
	if (len < 10)
		return werr(err, errlen, label,
			    "truncated: %zu bytes, magic, version and header length need at least 10",
			    len);
	if (memcmp(b, "\x93NUMPY", 6) != 0)
		return werr(err, errlen, label, "not an npy file: bad magic at offset 0");
	unsigned major = b[6], minor = b[7];
	size_t hstart, hlen;
	if (major == 1) {
		hlen = (size_t)b[8] | (size_t)b[9] << 8;
		hstart = 10;
	} else if (major == 2 || major == 3) {
		if (len < 12)
			return werr(err, errlen, label,
				    "truncated: %zu bytes, a v%u header length needs 12", len, major);
		hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
		hstart = 12;
	} else {
		return werr(err, errlen, label, "unsupported format version %u.%u at offset 6",
			    major, minor);
	}
	if (minor != 0)
		return werr(err, errlen, label, "unsupported format version %u.%u at offset 6",
			    major, minor);
	if (hlen > FLOW_NPY_MAX_HEADER)
		return werr(err, errlen, label,
			    "header length %zu at offset 8 exceeds the cap of %u bytes", hlen,
			    FLOW_NPY_MAX_HEADER);
	if (hlen > len - hstart)
		return werr(err, errlen, label,
			    "header length %zu at offset 8 runs past the end of the file (%zu bytes)",
			    hlen, len);

	hp p = {b + hstart, hlen, 0, hstart, label, err, errlen};
	char key[32], descr[32] = "";
	int have_descr = 0, have_fo = 0, have_shape = 0, fortran = 0, rank = 0;
	int64_t shape[FLOW_WEIGHTS_MAX_RANK];
	flow_wdtype dt = FLOW_WD_F32;

	if (!heat(&p, '{')) {
		hfail(&p, "expected '{'");
		return NULL;
	}
	while (!heat(&p, '}')) {
		size_t kpos;
		hws(&p);
		kpos = p.i;
		if (hstr(&p, key, sizeof key))
			return NULL;
		if (!heat(&p, ':')) {
			hfail(&p, "expected ':'");
			return NULL;
		}
		if (strcmp(key, "descr") == 0 && !have_descr) {
			size_t vpos;
			hws(&p);
			vpos = p.i;
			if (hstr(&p, descr, sizeof descr))
				return NULL;
			if (parse_descr(descr, &dt)) {
				p.i = vpos;
				char m[96];
				snprintf(m, sizeof m, "unsupported dtype descr '%s'%s", descr,
					 descr[0] == '>' ? " (big-endian)" : "");
				hfail(&p, m);
				return NULL;
			}
			have_descr = 1;
		} else if (strcmp(key, "fortran_order") == 0 && !have_fo) {
			hws(&p);
			if (p.n - p.i >= 4 && memcmp(p.s + p.i, "True", 4) == 0) {
				fortran = 1;
				p.i += 4;
			} else if (p.n - p.i >= 5 && memcmp(p.s + p.i, "False", 5) == 0) {
				p.i += 5;
			} else {
				hfail(&p, "fortran_order must be True or False");
				return NULL;
			}
			have_fo = 1;
		} else if (strcmp(key, "shape") == 0 && !have_shape) {
			if (!heat(&p, '(')) {
				hfail(&p, "shape must be a tuple");
				return NULL;
			}
			while (!heat(&p, ')')) {
				if (rank == FLOW_WEIGHTS_MAX_RANK) {
					hfail(&p, "shape has more than 8 dimensions");
					return NULL;
				}
				if (hint(&p, &shape[rank++]))
					return NULL;
				if (heat(&p, ','))
					continue;
				if (!heat(&p, ')')) {
					hfail(&p, "expected ',' or ')' in shape");
					return NULL;
				}
				break;
			}
			have_shape = 1;
		} else {
			p.i = kpos;
			char m[96];
			snprintf(m, sizeof m, "%s key '%s'",
				 (strcmp(key, "descr") && strcmp(key, "fortran_order") &&
				  strcmp(key, "shape")) ? "unexpected" : "duplicate", key);
			hfail(&p, m);
			return NULL;
		}
		if (heat(&p, ','))
			continue;
		if (!heat(&p, '}')) {
			hfail(&p, "expected ',' or '}'");
			return NULL;
		}
		break;
	}
	hws(&p);
	if (p.i != p.n) {
		hfail(&p, "unexpected bytes after the header dict");
		return NULL;
	}
	if (!have_descr || !have_fo || !have_shape) {
		werr(err, errlen, label, "npy header at offset %zu lacks '%s'", hstart,
		     !have_descr ? "descr" : !have_fo ? "fortran_order" : "shape");
		return NULL;
	}
	size_t need, dstart = hstart + hlen;
	if (weights_nbytes(dt, shape, rank, &need))
		return werr(err, errlen, label, "shape in the header at offset %zu is too large",
			    hstart);
	if (len - dstart < need)
		return werr(err, errlen, label,
			    "data truncated: %s shape needs %zu bytes at offset %zu, the file has %zu",
			    descr, need, dstart, len - dstart);
	if (len - dstart > need)
		return werr(err, errlen, label, "%zu unexpected bytes after the data at offset %zu",
			    len - dstart - need, dstart + need);

	flow_weights *w = weights_new();
	flow_weight *t = w ? weights_add(w, stem(label)) : NULL;
	if (!t || !t->name) {
		flow_weights_close(w);
		return werr(err, errlen, label, "out of memory");
	}
	t->dtype = dt;
	t->rank = rank;
	memcpy(t->shape, shape, sizeof(int64_t) * (size_t)rank);
	t->nbytes = need;
	t->data = b + dstart;
	if (fortran && rank > 1 && need) {
		unsigned char *c = malloc(need);
		if (!c || weights_own(w, c)) {
			free(c);
			flow_weights_close(w);
			return werr(err, errlen, label, "out of memory for the C-order copy");
		}
		fortran_to_c(b + dstart, c, shape, rank, flow_wdtype_size(dt));
		t->data = c;
	}
	w->file_bytes = len;
	return w;
}

int flow_npy_write(const char *path, const flow_weight *t, char *err, size_t errlen)
{
	char hdr[512];
	size_t need;
	const char *descr = flow_wdtype_npy_descr(t->dtype);
	if (!descr) {
		werr(err, errlen, path, "dtype %s cannot be written as npy",
		     flow_wdtype_safetensors_name(t->dtype));
		return -1;
	}
	if (t->rank < 0 || t->rank > FLOW_WEIGHTS_MAX_RANK ||
	    weights_nbytes(t->dtype, t->shape, t->rank, &need) || need != t->nbytes ||
	    (need && !t->data)) {
		werr(err, errlen, path, "bad shape or size for '%s'", t->name ? t->name : "");
		return -1;
	}
	int k = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (",
			 descr);
	for (int d = 0; d < t->rank; d++)
		k += snprintf(hdr + k, sizeof hdr - (size_t)k, "%s%lld", d ? ", " : "",
			      (long long)t->shape[d]);
	k += snprintf(hdr + k, sizeof hdr - (size_t)k, "%s), }", t->rank == 1 ? "," : "");
	/* pad with spaces so magic+version+len+header is a multiple of 64 and
	 * ends in '\n' (numpy's ARRAY_ALIGN) */
	size_t total = 10 + (size_t)k + 1;
	size_t pad = (64 - total % 64) % 64;
	memset(hdr + k, ' ', pad);
	hdr[k + (int)pad] = '\n';
	size_t hlen = (size_t)k + pad + 1;
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
				 (unsigned char)hlen, (unsigned char)(hlen >> 8)};
	struct iovec iov[3] = {{pre, 10}, {hdr, hlen}, {(void *)t->data, need}};
	return weights_atomic_write(path, iov, 3, err, errlen);
}
