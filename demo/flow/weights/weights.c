/*
 * weights.c — the opened-file object, mmap, atomic writes, conversions.
 */
#include "weights_internal.h"
#include "phaseprof.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	const char *st, *npy;
	size_t size;
} dtypes[FLOW_WD_COUNT] = {
	[FLOW_WD_F32] = {"F32", "<f4", 4},  [FLOW_WD_F64] = {"F64", "<f8", 8},
	[FLOW_WD_I32] = {"I32", "<i4", 4},  [FLOW_WD_I64] = {"I64", "<i8", 8},
	[FLOW_WD_BOOL] = {"BOOL", "|b1", 1}, [FLOW_WD_F16] = {"F16", "<f2", 2},
	[FLOW_WD_BF16] = {"BF16", NULL, 2},  [FLOW_WD_I8] = {"I8", "|i1", 1},
	[FLOW_WD_U8] = {"U8", "|u1", 1},     [FLOW_WD_I16] = {"I16", "<i2", 2},
};

size_t flow_wdtype_size(flow_wdtype t)
{
	return (unsigned)t < FLOW_WD_COUNT ? dtypes[t].size : 0;
}

const char *flow_wdtype_safetensors_name(flow_wdtype t)
{
	return (unsigned)t < FLOW_WD_COUNT ? dtypes[t].st : NULL;
}

const char *flow_wdtype_npy_descr(flow_wdtype t)
{
	return (unsigned)t < FLOW_WD_COUNT ? dtypes[t].npy : NULL;
}

void *werr(char *err, size_t errlen, const char *label, const char *fmt, ...)
{
	if (err && errlen) {
		int k = snprintf(err, errlen, "%s: ", label ? label : "(memory)");
		if (k < 0)
			k = 0;
		if ((size_t)k < errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
			va_end(ap);
		}
		/* one line, whatever a tensor name in the file contains */
		for (char *c = err; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	}
	return NULL;
}

const char *weights_basename(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

flow_weights *weights_new(void)
{
	return calloc(1, sizeof(flow_weights));
}

flow_weight *weights_add(flow_weights *w, char *name)
{
	if (w->n == w->cap) {
		int cap = w->cap ? w->cap * 2 : 8;
		flow_weight *t = realloc(w->t, (size_t)cap * sizeof *t);
		if (!t) {
			free(name);
			return NULL;
		}
		w->t = t;
		w->cap = cap;
	}
	flow_weight *t = &w->t[w->n++];
	memset(t, 0, sizeof *t);
	t->name = name;
	return t;
}

int weights_own(flow_weights *w, void *buf)
{
	if (w->n_heap == w->cap_heap) {
		int cap = w->cap_heap ? w->cap_heap * 2 : 8;
		void **h = realloc(w->heap, (size_t)cap * sizeof *h);
		if (!h)
			return -1;
		w->heap = h;
		w->cap_heap = cap;
	}
	w->heap[w->n_heap++] = buf;
	return 0;
}

int weights_nbytes(flow_wdtype t, const int64_t *shape, int rank, size_t *out)
{
	size_t n = flow_wdtype_size(t);
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0)
			return -1;
		if (shape[i] && n > SIZE_MAX / (size_t)shape[i])
			return -1;
		n *= (size_t)shape[i];
	}
	*out = n;
	return 0;
}

void flow_weights_close(flow_weights *w)
{
	if (!w)
		return;
	for (int i = 0; i < w->n; i++)
		free((char *)w->t[i].name);
	for (int i = 0; i < w->n_heap; i++)
		free(w->heap[i]);
	for (int i = 0; i < 2 * w->n_meta; i++)
		free(w->meta[i]);
	free(w->meta);
	free(w->heap);
	free(w->t);
	if (w->map)
		munmap(w->map, w->map_len);
	free(w);
}

int flow_weights_count(const flow_weights *w) { return w ? w->n : 0; }

const flow_weight *flow_weights_at(const flow_weights *w, int i)
{
	return w && i >= 0 && i < w->n ? &w->t[i] : NULL;
}

const flow_weight *flow_weights_find(const flow_weights *w, const char *name)
{
	for (int i = 0; w && i < w->n; i++)
		if (strcmp(w->t[i].name, name) == 0)
			return &w->t[i];
	return NULL;
}

const char *flow_weights_metadata(const flow_weights *w, const char *key)
{
	for (int i = 0; w && i < w->n_meta; i++)
		if (strcmp(w->meta[2 * i], key) == 0)
			return w->meta[2 * i + 1];
	return NULL;
}

size_t flow_weights_file_bytes(const flow_weights *w) { return w ? w->file_bytes : 0; }

static float half_to_f32(uint16_t h)
{
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
	if (e == 0) {
		if (m == 0) {
			bits = s;
		} else { /* subnormal: renormalise */
			e = 127 - 15 + 1;
			while (!(m & 0x400)) {
				m <<= 1;
				e--;
			}
			bits = s | (e << 23) | ((m & 0x3ff) << 13);
		}
	} else if (e == 31) {
		bits = s | 0x7f800000u | (m << 13);
	} else {
		bits = s | ((e + 127 - 15) << 23) | (m << 13);
	}
	float f;
	memcpy(&f, &bits, sizeof f);
	return f;
}

void flow_weights_to_f32(const flow_weight *t, float *out)
{
	size_t sz = flow_wdtype_size(t->dtype), n = sz ? t->nbytes / sz : 0;
	const unsigned char *p = t->data;
	/* memcpy per element: file data need not be aligned for its type. */
	for (size_t i = 0; i < n; i++, p += sz) {
		switch (t->dtype) {
		case FLOW_WD_F32: memcpy(&out[i], p, 4); break;
		case FLOW_WD_F64: { double v; memcpy(&v, p, 8); out[i] = (float)v; break; }
		case FLOW_WD_I32: { int32_t v; memcpy(&v, p, 4); out[i] = (float)v; break; }
		case FLOW_WD_I64: { int64_t v; memcpy(&v, p, 8); out[i] = (float)v; break; }
		case FLOW_WD_BOOL: out[i] = *p ? 1.0f : 0.0f; break;
		case FLOW_WD_F16: { uint16_t v; memcpy(&v, p, 2); out[i] = half_to_f32(v); break; }
		case FLOW_WD_BF16: {
			uint16_t v;
			memcpy(&v, p, 2);
			uint32_t bits = (uint32_t)v << 16;
			memcpy(&out[i], &bits, 4);
			break;
		}
		case FLOW_WD_I8: out[i] = (float)(int8_t)*p; break;
		case FLOW_WD_U8: out[i] = (float)*p; break;
		case FLOW_WD_I16: { int16_t v; memcpy(&v, p, 2); out[i] = (float)v; break; }
		default: out[i] = 0; break;
		}
	}
}

flow_weights *flow_text_weights_read(const char *path, char *err, size_t errlen,
				     uint64_t *reads);

static flow_weights *open_mapped(const char *path, flow_weights_format fmt, char *err,
				 size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return werr(err, errlen, path, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return werr(err, errlen, path, "cannot stat: %s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return werr(err, errlen, path, "not a regular file");
	}
	if (st.st_size == 0) {
		close(fd);
		return werr(err, errlen, path, "empty file (0 bytes)");
	}
	size_t len = (size_t)st.st_size;
	/* Private and writable: a tensor wrapping this memory (LoadWeight's zero
	 * copy) may later be updated in place, e.g. a variable's AssignAdd.
	 * Written pages become private copies; the file never changes. */
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	int e = errno;
	close(fd);
	if (map == MAP_FAILED)
		return werr(err, errlen, path, "mmap of %zu bytes failed: %s", len, strerror(e));
	flow_weights *w = fmt == FLOW_WF_SAFETENSORS ? flow_safetensors_parse(map, len, path, err, errlen)
						     : flow_npy_parse(map, len, path, err, errlen);
	if (!w) {
		munmap(map, len);
		return NULL;
	}
	w->map = map;
	w->map_len = len;
	w->file_bytes = len;
	return w;
}

flow_weights *flow_weights_open(const char *path, flow_weights_format fmt, char *err,
				size_t errlen)
{
	static const char *const fmt_names[] = {"safetensors", "npy", "text"};
	char phase[256];
	if (!path)
		return werr(err, errlen, "(null)", "no path given");
	if ((unsigned)fmt > FLOW_WF_TEXT)
		return werr(err, errlen, path, "unknown weights format %d", (int)fmt);
	snprintf(phase, sizeof phase, "%s:%s", fmt_names[fmt], weights_basename(path));
	pp_phase_begin(PP_WEIGHT_LOAD, phase);
	flow_weights *w;
	uint64_t reads = 0;
	if (fmt == FLOW_WF_TEXT)
		w = flow_text_weights_read(path, err, errlen, &reads);
	else
		w = open_mapped(path, fmt, err, errlen);
	if (w) {
		/* Once per load, that load's totals (the diagnostics sum them):
		 * the text reader makes one small read per line; a mapped file
		 * is one large read of the whole file. */
		uint64_t calls = fmt == FLOW_WF_TEXT ? reads : 1;
		uint64_t small = fmt == FLOW_WF_TEXT ? reads : (w->file_bytes < 4096);
		pp_counter("weights.read_calls", (double)calls);
		pp_counter("weights.read_bytes", (double)w->file_bytes);
		pp_counter("weights.small_reads", (double)small);
		pp_counter("weights.reads", (double)calls);
		pp_counter("weights.bytes", (double)w->file_bytes);
	}
	pp_phase_end();
	return w;
}

static int ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

flow_weights *flow_weights_open_any(const char *path, char *err, size_t errlen)
{
	if (path && ends_with(path, ".safetensors"))
		return flow_weights_open(path, FLOW_WF_SAFETENSORS, err, errlen);
	if (path && ends_with(path, ".npy"))
		return flow_weights_open(path, FLOW_WF_NPY, err, errlen);
	return flow_weights_open(path, FLOW_WF_TEXT, err, errlen);
}

int weights_atomic_write(const char *path, const struct iovec *iov, int n, char *err,
			 size_t errlen)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	if (!tmp) {
		werr(err, errlen, path, "out of memory");
		return -1;
	}
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".tmp.XXXXXX", 12);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		werr(err, errlen, path, "cannot create temporary file %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	const char *what = NULL;
	int e = 0;
	for (int i = 0; i < n && !what; i++) {
		const char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;
		while (left) {
			ssize_t k = write(fd, p, left > (1u << 30) ? (1u << 30) : left);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				e = k < 0 ? errno : ENOSPC;
				what = "write";
				break;
			}
			p += k;
			left -= (size_t)k;
		}
	}
	if (!what && fchmod(fd, 0644) != 0) {
		e = errno;
		what = "chmod";
	}
	if (!what && fsync(fd) != 0) {
		e = errno;
		what = "fsync";
	}
	if (close(fd) != 0 && !what) {
		e = errno;
		what = "close";
	}
	if (!what && rename(tmp, path) != 0) {
		e = errno;
		what = "rename";
	}
	if (what) {
		unlink(tmp);
		werr(err, errlen, path, "%s failed: %s (nothing written)", what, strerror(e));
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
}
