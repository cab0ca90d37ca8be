/*
 * safetensors.c — strict reader and atomic writer.
 *
 * Format (huggingface/safetensors): u64 LE header size N, N bytes of JSON
 * starting with '{' (maybe space-padded), then the byte buffer. Each entry
 * is {"dtype","shape","data_offsets":[begin,end]} relative to the buffer;
 * "__metadata__" holds string->string. The buffer must be covered exactly:
 * no holes, no overlaps, no bytes past the last tensor. Errors name the
 * file, the tensor and the absolute byte offset.
 */
#include "weights_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jp {
	const unsigned char *s;
	size_t n, i;
	const char *label;
	char *err;
	size_t errlen;
	int failed;
} jp;

#define HDR_OFF(p) ((unsigned long long)(8 + (p)->i))

static int jfail(jp *p, const char *what)
{
	if (!p->failed)
		werr(p->err, p->errlen, p->label, "safetensors header: %s at offset %llu", what,
		     HDR_OFF(p));
	p->failed = 1;
	return -1;
}

static void jws(jp *p)
{
	while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
			       p->s[p->i] == '\r'))
		p->i++;
}

static int jexpect(jp *p, char c, const char *what)
{
	jws(p);
	if (p->i >= p->n || p->s[p->i] != (unsigned char)c)
		return jfail(p, what);
	p->i++;
	return 0;
}

/* A container's opening character (else `what` is the error), then 1 if
 * its closing one follows at once (consumed), 0 if items follow; -1 on error. */
static int jopen(jp *p, char open, char close, const char *what)
{
	if (jexpect(p, open, what))
		return -1;
	jws(p);
	if (p->i < p->n && p->s[p->i] == (unsigned char)close) {
		p->i++;
		return 1;
	}
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

static int put_utf8(char *o, size_t *k, uint32_t cp)
{
	if (cp < 0x80) {
		o[(*k)++] = (char)cp;
	} else if (cp < 0x800) {
		o[(*k)++] = (char)(0xc0 | (cp >> 6));
		o[(*k)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		o[(*k)++] = (char)(0xe0 | (cp >> 12));
		o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[(*k)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		o[(*k)++] = (char)(0xf0 | (cp >> 18));
		o[(*k)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[(*k)++] = (char)(0x80 | (cp & 0x3f));
	}
	return 0;
}

/* Length of a valid UTF-8 sequence at s (max n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp;
	if (c < 0x80) return 1;
	if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
	else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
	else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
	else return 0;
	if (len > n) return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* A JSON string, decoded to UTF-8 (malloc'd), or NULL on error. */
static char *jstring(jp *p)
{
	jws(p);
	if (p->i >= p->n || p->s[p->i] != '"') {
		jfail(p, "expected a string");
		return NULL;
	}
	p->i++;
	/* decoded is never longer than the raw text */
	size_t start = p->i, end = start;
	while (end < p->n && p->s[end] != '"') {
		if (p->s[end] == '\\')
			end++;
		end++;
	}
	if (end >= p->n) {
		jfail(p, "unterminated string");
		return NULL;
	}
	char *o = malloc(end - start + 1);
	size_t k = 0;
	if (!o) {
		jfail(p, "out of memory");
		return NULL;
	}
	while (p->i < end) {
		unsigned c = p->s[p->i];
		if (c < 0x20) {
			free(o);
			jfail(p, "control character in string");
			return NULL;
		}
		if (c != '\\') {
			size_t l = utf8_len(p->s + p->i, end - p->i);
			if (!l) {
				free(o);
				jfail(p, "invalid UTF-8 in string");
				return NULL;
			}
			memcpy(o + k, p->s + p->i, l);
			k += l;
			p->i += l;
			continue;
		}
		p->i++;
		c = p->s[p->i++];
		switch (c) {
		case '"': o[k++] = '"'; break;
		case '\\': o[k++] = '\\'; break;
		case '/': o[k++] = '/'; break;
		case 'b': o[k++] = '\b'; break;
		case 'f': o[k++] = '\f'; break;
		case 'n': o[k++] = '\n'; break;
		case 'r': o[k++] = '\r'; break;
		case 't': o[k++] = '\t'; break;
		case 'u': {
			uint32_t cp = 0;
			for (int h = 0; h < 4; h++) {
				int v = p->i < end ? hexval(p->s[p->i]) : -1;
				if (v < 0) {
					free(o);
					jfail(p, "bad \\u escape");
					return NULL;
				}
				cp = cp * 16 + (uint32_t)v;
				p->i++;
			}
			if (cp >= 0xd800 && cp <= 0xdbff) {
				uint32_t lo = 0;
				if (p->i + 6 > end || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') {
					free(o);
					jfail(p, "unpaired surrogate in \\u escape");
					return NULL;
				}
				p->i += 2;
				for (int h = 0; h < 4; h++) {
					int v = hexval(p->s[p->i]);
					if (v < 0) {
						free(o);
						jfail(p, "bad \\u escape");
						return NULL;
					}
					lo = lo * 16 + (uint32_t)v;
					p->i++;
				}
				if (lo < 0xdc00 || lo > 0xdfff) {
					free(o);
					jfail(p, "unpaired surrogate in \\u escape");
					return NULL;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp <= 0xdfff) {
				free(o);
				jfail(p, "unpaired surrogate in \\u escape");
				return NULL;
			}
			put_utf8(o, &k, cp);
			break;
		}
		default:
			free(o);
			p->i--;
			jfail(p, "bad escape in string");
			return NULL;
		}
	}
	p->i = end + 1;
	o[k] = 0;
	return o;
}

/* A non-negative JSON integer (no sign, fraction or exponent). */
static int juint(jp *p, uint64_t *out)
{
	jws(p);
	size_t s = p->i;
	uint64_t v = 0;
	while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
		unsigned d = p->s[p->i] - '0';
		if (v > (UINT64_MAX - d) / 10)
			return jfail(p, "integer overflows 64 bits");
		v = v * 10 + d;
		p->i++;
	}
	if (p->i == s)
		return jfail(p, "expected a non-negative integer");
	if (p->i - s > 1 && p->s[s] == '0') {
		p->i = s;
		return jfail(p, "leading zero in integer");
	}
	if (p->i < p->n && (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E'))
		return jfail(p, "expected an integer, got a fraction");
	*out = v;
	return 0;
}

/* '[' uint (',' uint)* ']' or '[]'; at most max items. */
static int juint_array(jp *p, uint64_t *v, int max, int *count, const char *what)
{
	char msg[96];
	*count = 0;
	int empty = jopen(p, '[', ']', what);
	if (empty)
		return empty < 0 ? -1 : 0;
	for (;;) {
		if (*count == max) {
			snprintf(msg, sizeof msg, "more than %d items in %s", max, what);
			return jfail(p, msg);
		}
		if (juint(p, &v[(*count)++]))
			return -1;
		jws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		return jexpect(p, ']', "expected ',' or ']'");
	}
}

typedef struct st_entry {
	size_t idx;        /* tensor index */
	uint64_t begin, end;
	size_t key_off;    /* header offset of the entry, for messages */
} st_entry;

static int cmp_entry(const void *a, const void *b)
{
	const st_entry *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	const flow_weight *const *x = a, *const *y = b;
	return strcmp((*x)->name, (*y)->name);
}

static int parse_dtype(const char *s, flow_wdtype *out)
{
	for (int t = 0; t < FLOW_WD_COUNT; t++)
		if (strcmp(s, flow_wdtype_safetensors_name((flow_wdtype)t)) == 0) {
			*out = (flow_wdtype)t;
			return 0;
		}
	return -1;
}

static int parse_metadata(jp *p, flow_weights *w)
{
	int empty = jopen(p, '{', '}', "__metadata__ must be an object");
	if (empty)
		return empty < 0 ? -1 : 0;
	for (;;) {
		char *k = jstring(p);
		if (!k)
			return -1;
		if (jexpect(p, ':', "expected ':'")) {
			free(k);
			return -1;
		}
		jws(p);
		if (p->i >= p->n || p->s[p->i] != '"') {
			free(k);
			return jfail(p, "__metadata__ values must be strings");
		}
		char *v = jstring(p);
		if (!v) {
			free(k);
			return -1;
		}
		for (int i = 0; i < w->n_meta; i++)
			if (strcmp(w->meta[2 * i], k) == 0) {
				free(k);
				free(v);
				return jfail(p, "duplicate key in __metadata__");
			}
		char **m = realloc(w->meta, (size_t)(w->n_meta + 1) * 2 * sizeof *m);
		if (!m) {
			free(k);
			free(v);
			return jfail(p, "out of memory");
		}
		w->meta = m;
		m[2 * w->n_meta] = k;
		m[2 * w->n_meta + 1] = v;
		w->n_meta++;
		jws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		return jexpect(p, '}', "expected ',' or '}' in __metadata__");
	}
}

/* {"dtype": .., "shape": [..], "data_offsets": [b, e]} in any order. */
static int parse_info(jp *p, flow_weight *t, uint64_t off[2])
{
	int have_dtype = 0, have_shape = 0, have_off = 0;
	char msg[256];
	if (jexpect(p, '{', "tensor info must be an object"))
		return -1;
	jws(p);
	if (p->i < p->n && p->s[p->i] == '}')
		return jfail(p, "tensor info is empty");
	for (;;) {
		size_t kpos = p->i;
		char *k = jstring(p);
		if (!k)
			return -1;
		if (jexpect(p, ':', "expected ':'")) {
			free(k);
			return -1;
		}
		int *seen = strcmp(k, "dtype") == 0 ? &have_dtype
			    : strcmp(k, "shape") == 0 ? &have_shape
			    : strcmp(k, "data_offsets") == 0 ? &have_off : NULL;
		if (!seen || *seen) {
			p->i = kpos;
			snprintf(msg, sizeof msg, "%s field \"%.40s\" in tensor '%.80s'",
				 seen ? "duplicate" : "unknown", k, t->name);
			free(k);
			return jfail(p, msg);
		}
		*seen = 1;
		if (strcmp(k, "dtype") == 0) {
			size_t vpos;
			free(k);
			jws(p);
			vpos = p->i;
			char *d = jstring(p);
			if (!d)
				return -1;
			if (parse_dtype(d, &t->dtype)) {
				p->i = vpos;
				snprintf(msg, sizeof msg,
					 "unsupported dtype \"%.20s\" for tensor '%.80s' (supported: F32 F64 I32 I64 BOOL F16 BF16 I8 U8 I16)",
					 d, t->name);
				free(d);
				return jfail(p, msg);
			}
			free(d);
		} else if (strcmp(k, "shape") == 0) {
			uint64_t dims[FLOW_WEIGHTS_MAX_RANK];
			free(k);
			if (juint_array(p, dims, FLOW_WEIGHTS_MAX_RANK, &t->rank, "shape"))
				return -1;
			for (int i = 0; i < t->rank; i++) {
				if (dims[i] > (uint64_t)INT64_MAX)
					return jfail(p, "shape dimension too large");
				t->shape[i] = (int64_t)dims[i];
			}
		} else {
			int cnt;
			uint64_t v[2];
			free(k);
			if (juint_array(p, v, 2, &cnt, "data_offsets"))
				return -1;
			if (cnt != 2)
				return jfail(p, "data_offsets must have exactly 2 items");
			off[0] = v[0];
			off[1] = v[1];
		}
		jws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		if (jexpect(p, '}', "expected ',' or '}' in tensor info"))
			return -1;
		break;
	}
	if (!have_dtype || !have_shape || !have_off) {
		snprintf(msg, sizeof msg, "tensor '%.80s' lacks \"%s\"", t->name,
			 !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
		return jfail(p, msg);
	}
	return 0;
}

flow_weights *flow_safetensors_parse(const void *buf, size_t len, const char *label,
				     char *err, size_t errlen)
{
	const unsigned char *b = buf;
	if (!label)
		label = "(memory)";
	if (len < 8)
		return werr(err, errlen, label,
			    "truncated: %zu bytes, the 8-byte header length needs 8", len);
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = (hlen << 8) | b[i];
	if (hlen > FLOW_SAFETENSORS_MAX_HEADER)
		return werr(err, errlen, label,
			    "header length %llu at offset 0 exceeds the cap of %llu bytes",
			    (unsigned long long)hlen, (unsigned long long)FLOW_SAFETENSORS_MAX_HEADER);
	if (hlen > len - 8)
		return werr(err, errlen, label,
			    "header length %llu at offset 0 runs past the end of the file (%zu bytes)",
			    (unsigned long long)hlen, len);
	if (hlen < 2 || b[8] != '{')
		return werr(err, errlen, label,
			    "header at offset 8 must be a JSON object starting with '{'");
	flow_weights *w = weights_new();
	st_entry *ents = NULL;
	size_t n_ents = 0, cap_ents = 0;
	if (!w)
		return werr(err, errlen, label, "out of memory");
	jp p = {b + 8, (size_t)hlen, 0, label, err, errlen, 0};
	int seen_meta = 0;
	const unsigned char *data = b + 8 + hlen;
	size_t dlen = len - 8 - (size_t)hlen;
	char msg[200];

	int empty = jopen(&p, '{', '}', "expected '{'");
	if (empty < 0)
		goto fail;
	if (!empty) {
		for (;;) {
			size_t kpos;
			jws(&p);
			kpos = p.i;
			char *k = jstring(&p);
			if (!k)
				goto fail;
			if (jexpect(&p, ':', "expected ':'")) {
				free(k);
				goto fail;
			}
			if (strcmp(k, "__metadata__") == 0) {
				free(k);
				if (seen_meta) {
					p.i = kpos;
					jfail(&p, "duplicate __metadata__");
					goto fail;
				}
				seen_meta = 1;
				if (parse_metadata(&p, w))
					goto fail;
			} else {
				flow_weight *t = weights_add(w, k);
				uint64_t off[2] = {0, 0};
				if (!t) {
					jfail(&p, "out of memory");
					goto fail;
				}
				if (parse_info(&p, t, off))
					goto fail;
				if (n_ents == cap_ents) {
					size_t c = cap_ents ? cap_ents * 2 : 16;
					st_entry *e = realloc(ents, c * sizeof *e);
					if (!e) {
						jfail(&p, "out of memory");
						goto fail;
					}
					ents = e;
					cap_ents = c;
				}
				ents[n_ents++] = (st_entry){(size_t)(w->n - 1), off[0], off[1], kpos};
			}
			jws(&p);
			if (p.i < p.n && p.s[p.i] == ',') {
				p.i++;
				continue;
			}
			if (jexpect(&p, '}', "expected ',' or '}'"))
				goto fail;
			break;
		}
	}
	jws(&p);
	if (p.i != p.n) {
		jfail(&p, "trailing bytes after the header object");
		goto fail;
	}

	/* Per tensor: offsets ordered, inside the buffer, size matches shape. */
	for (size_t i = 0; i < n_ents; i++) {
		flow_weight *t = &w->t[ents[i].idx];
		size_t need;
		if (ents[i].begin > ents[i].end) {
			werr(err, errlen, label, "tensor '%.80s': data_offsets [%llu, %llu] begin after end",
			     t->name, (unsigned long long)ents[i].begin, (unsigned long long)ents[i].end);
			goto fail;
		}
		if (ents[i].end > dlen) {
			werr(err, errlen, label,
			     "tensor '%.80s': data_offsets [%llu, %llu] (file offsets %llu..%llu) outside the file of %zu bytes",
			     t->name, (unsigned long long)ents[i].begin, (unsigned long long)ents[i].end,
			     (unsigned long long)(8 + hlen + ents[i].begin),
			     (unsigned long long)(8 + hlen + ents[i].end), len);
			goto fail;
		}
		if (weights_nbytes(t->dtype, t->shape, t->rank, &need) ||
		    need != ents[i].end - ents[i].begin) {
			werr(err, errlen, label,
			     "tensor '%.80s': data_offsets [%llu, %llu] hold %llu bytes but dtype %s and its shape need %s%zu",
			     t->name, (unsigned long long)ents[i].begin, (unsigned long long)ents[i].end,
			     (unsigned long long)(ents[i].end - ents[i].begin),
			     flow_wdtype_safetensors_name(t->dtype),
			     weights_nbytes(t->dtype, t->shape, t->rank, &need) ? "more than " : "",
			     weights_nbytes(t->dtype, t->shape, t->rank, &need) ? SIZE_MAX : need);
			goto fail;
		}
		t->data = data + ents[i].begin;
		t->nbytes = need;
	}
	/* The buffer is covered exactly: sorted by offset, each starts where
	 * the previous ended, the last ends at the end of the file. */
	if (n_ents)
		qsort(ents, n_ents, sizeof *ents, cmp_entry);
	uint64_t at = 0;
	for (size_t i = 0; i < n_ents; i++) {
		const char *name = w->t[ents[i].idx].name;
		if (ents[i].begin > at) {
			werr(err, errlen, label,
			     "hole in the data: bytes %llu..%llu (file offset %llu) belong to no tensor (next is '%.80s')",
			     (unsigned long long)at, (unsigned long long)ents[i].begin,
			     (unsigned long long)(8 + hlen + at), name);
			goto fail;
		}
		if (ents[i].begin < at) {
			werr(err, errlen, label,
			     "tensor '%.80s' overlaps the previous tensor: data_offsets begin %llu < %llu (file offset %llu)",
			     name, (unsigned long long)ents[i].begin, (unsigned long long)at,
			     (unsigned long long)(8 + hlen + ents[i].begin));
			goto fail;
		}
		at = ents[i].end;
	}
	if (at != dlen) {
		werr(err, errlen, label,
		     "%llu bytes after the last tensor (file offsets %llu..%zu) belong to no tensor",
		     (unsigned long long)(dlen - at), (unsigned long long)(8 + hlen + at), len);
		goto fail;
	}
	/* Duplicate names (JSON allows them; safetensors does not). */
	if (w->n > 1) {
		const flow_weight **byname = malloc((size_t)w->n * sizeof *byname);
		if (!byname) {
			werr(err, errlen, label, "out of memory");
			goto fail;
		}
		for (int i = 0; i < w->n; i++)
			byname[i] = &w->t[i];
		qsort(byname, (size_t)w->n, sizeof *byname, cmp_name);
		for (int i = 1; i < w->n; i++)
			if (strcmp(byname[i]->name, byname[i - 1]->name) == 0) {
				snprintf(msg, sizeof msg, "duplicate tensor name '%.80s' in the header",
					 byname[i]->name);
				werr(err, errlen, label, "%s", msg);
				free(byname);
				goto fail;
			}
		free(byname);
	}
	free(ents);
	w->file_bytes = len;
	return w;
fail:
	free(ents);
	flow_weights_close(w);
	return NULL;
}

/* ---- writer ---- */

typedef struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
} sbuf;

static void sb_put(sbuf *s, const char *t, size_t k)
{
	if (s->oom)
		return;
	if (s->n + k + 1 > s->cap) {
		size_t c = s->cap ? s->cap : 256;
		while (c < s->n + k + 1)
			c *= 2;
		char *q = realloc(s->p, c);
		if (!q) {
			s->oom = 1;
			return;
		}
		s->p = q;
		s->cap = c;
	}
	memcpy(s->p + s->n, t, k);
	s->n += k;
	s->p[s->n] = 0;
}

static void sb_str(sbuf *s, const char *t) { sb_put(s, t, strlen(t)); }

static void sb_json(sbuf *s, const char *t)
{
	sb_put(s, "\"", 1);
	for (const unsigned char *c = (const unsigned char *)t; *c; c++) {
		char e[8];
		if (*c == '"' || *c == '\\') {
			e[0] = '\\';
			e[1] = (char)*c;
			sb_put(s, e, 2);
		} else if (*c < 0x20) {
			snprintf(e, sizeof e, "\\u%04x", *c);
			sb_put(s, e, 6);
		} else {
			sb_put(s, (const char *)c, 1);
		}
	}
	sb_put(s, "\"", 1);
}

int flow_safetensors_write(const char *path, const flow_weight *ts, int n,
			   const char *const *meta_kv, int n_meta, char *err, size_t errlen)
{
	sbuf h = {0};
	char num[64];
	uint64_t off = 0;
	struct iovec *iov = calloc((size_t)n + 2, sizeof *iov);
	if (!iov) {
		werr(err, errlen, path, "out of memory");
		return -1;
	}
	sb_str(&h, "{");
	if (n_meta > 0) {
		sb_str(&h, "\"__metadata__\":{");
		for (int i = 0; i < n_meta; i++) {
			if (i)
				sb_str(&h, ",");
			sb_json(&h, meta_kv[2 * i]);
			sb_str(&h, ":");
			sb_json(&h, meta_kv[2 * i + 1]);
		}
		sb_str(&h, "}");
	}
	for (int i = 0; i < n; i++) {
		size_t need;
		const flow_weight *t = &ts[i];
		if (!t->name || !*t->name || strcmp(t->name, "__metadata__") == 0 ||
		    (unsigned)t->dtype >= FLOW_WD_COUNT || t->rank < 0 ||
		    t->rank > FLOW_WEIGHTS_MAX_RANK ||
		    weights_nbytes(t->dtype, t->shape, t->rank, &need) || need != t->nbytes ||
		    (need && !t->data)) {
			werr(err, errlen, path, "tensor %d ('%.80s'): bad name, dtype, shape or size", i,
			     t->name ? t->name : "");
			goto fail;
		}
		for (int j = 0; j < i; j++)
			if (strcmp(ts[j].name, t->name) == 0) {
				werr(err, errlen, path, "tensor name '%.80s' given twice", t->name);
				goto fail;
			}
		if (i || n_meta > 0)
			sb_str(&h, ",");
		sb_json(&h, t->name);
		sb_str(&h, ":{\"dtype\":\"");
		sb_str(&h, flow_wdtype_safetensors_name(t->dtype));
		sb_str(&h, "\",\"shape\":[");
		for (int d = 0; d < t->rank; d++) {
			snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)t->shape[d]);
			sb_str(&h, num);
		}
		snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}",
			 (unsigned long long)off, (unsigned long long)(off + need));
		sb_str(&h, num);
		off += need;
		iov[i + 2].iov_base = (void *)t->data;
		iov[i + 2].iov_len = need;
	}
	sb_str(&h, "}");
	while (h.n % 8)  /* data 8-byte aligned after mmap, as the reference writer */
		sb_str(&h, " ");
	if (h.oom) {
		werr(err, errlen, path, "out of memory building the header");
		goto fail;
	}
	unsigned char lenb[8];
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
	iov[0].iov_base = lenb;
	iov[0].iov_len = 8;
	iov[1].iov_base = h.p;
	iov[1].iov_len = h.n;
	int rc = weights_atomic_write(path, iov, n + 2, err, errlen);
	free(h.p);
	free(iov);
	return rc;
fail:
	free(h.p);
	free(iov);
	return -1;
}
