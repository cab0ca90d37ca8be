/*
 * text.c — the naive weights format, for comparison with mmap'd binaries.
 *
 * This is how many hand-rolled pipelines store weights: a text file with
 * one decimal number per line, read back with fgets into a small line
 * buffer and strtod per value. It is honest work (parsing, small reads),
 * and it is what the model-init scenario's slow variant loads.
 *
 *   flowtxt 1
 *   tensor dense/kernel F32 2 784 1024
 *   0.0123
 *   ...
 */
#include "weights_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const flow_wdtype text_types[] = {FLOW_WD_F32, FLOW_WD_F64, FLOW_WD_I32, FLOW_WD_I64,
					 FLOW_WD_BOOL};

/* Reads one line into a small buffer; a line longer than the buffer is an
 * error (no number needs 64 characters). Returns 1, 0 at EOF, -1 too long. */
static int read_line(FILE *f, char *buf, size_t n, uint64_t *reads)
{
	(*reads)++;
	if (!fgets(buf, (int)n, f))
		return 0;
	size_t k = strlen(buf);
	if (k && buf[k - 1] == '\n') {
		buf[--k] = 0;
		if (k && buf[k - 1] == '\r')
			buf[--k] = 0;
		return 1;
	}
	if (feof(f))
		return 1;
	return -1;
}

flow_weights *flow_text_weights_read(const char *path, char *err, size_t errlen,
				     uint64_t *reads)
{
	char line[64], hdr[512];
	unsigned long lineno = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return werr(err, errlen, path, "cannot open: %s", strerror(errno));
	flow_weights *w = weights_new();
	if (!w) {
		fclose(f);
		return werr(err, errlen, path, "out of memory");
	}
	lineno++;
	if (read_line(f, line, sizeof line, reads) != 1 || strcmp(line, "flowtxt 1") != 0) {
		werr(err, errlen, path, "line 1: expected \"flowtxt 1\"");
		goto fail;
	}
	for (;;) {
		int r;
		lineno++;
		(*reads)++;
		if (!fgets(hdr, sizeof hdr, f))
			break; /* clean end: after a complete tensor */
		size_t hl = strlen(hdr);
		if (hl && hdr[hl - 1] == '\n')
			hdr[--hl] = 0;
		if (hl == 0 && feof(f))
			break;
		char name[256], dts[16];
		int rank, pos = 0;
		if (sscanf(hdr, "tensor %255s %15s %d%n", name, dts, &rank, &pos) != 3 ||
		    rank < 0 || rank > FLOW_WEIGHTS_MAX_RANK) {
			werr(err, errlen, path, "line %lu: expected \"tensor <name> <dtype> <rank> <dims>\"",
			     lineno);
			goto fail;
		}
		int dt = -1;
		for (size_t i = 0; i < sizeof text_types / sizeof *text_types; i++)
			if (strcmp(dts, flow_wdtype_safetensors_name(text_types[i])) == 0)
				dt = (int)text_types[i];
		if (dt < 0) {
			werr(err, errlen, path, "line %lu: unsupported dtype '%s'", lineno, dts);
			goto fail;
		}
		if (flow_weights_find(w, name)) {
			werr(err, errlen, path, "line %lu: duplicate tensor '%s'", lineno, name);
			goto fail;
		}
		char *nm = strdup(name);
		flow_weight *t = nm ? weights_add(w, nm) : NULL;
		if (!t) {
			free(nm);
			werr(err, errlen, path, "out of memory");
			goto fail;
		}
		t->dtype = (flow_wdtype)dt;
		t->rank = rank;
		const char *q = hdr + pos;
		for (int d = 0; d < rank; d++) {
			char *end;
			errno = 0;
			long long v = strtoll(q, &end, 10);
			if (end == q || v < 0 || errno) {
				werr(err, errlen, path, "line %lu: dimension %d of '%s' is not a non-negative integer",
				     lineno, d, name);
				goto fail;
			}
			t->shape[d] = v;
			q = end;
		}
		size_t need, esz = flow_wdtype_size(t->dtype);
		if (weights_nbytes(t->dtype, t->shape, t->rank, &need)) {
			werr(err, errlen, path, "line %lu: shape of '%s' too large", lineno, name);
			goto fail;
		}
		unsigned char *data = malloc(need ? need : 1);
		if (!data || weights_own(w, data)) {
			free(data);
			werr(err, errlen, path, "out of memory for '%s' (%zu bytes)", name, need);
			goto fail;
		}
		t->data = data;
		t->nbytes = need;
		for (size_t i = 0; i < need / esz; i++) {
			lineno++;
			r = read_line(f, line, sizeof line, reads);
			if (r != 1) {
				werr(err, errlen, path, "line %lu: %s in tensor '%s' (value %zu of %zu)",
				     lineno, r == 0 ? "unexpected end of file" : "line too long", name, i,
				     need / esz);
				goto fail;
			}
			char *end;
			errno = 0;
			if (t->dtype == FLOW_WD_F32 || t->dtype == FLOW_WD_F64) {
				double v = strtod(line, &end);
				if (end == line || *end) {
					werr(err, errlen, path, "line %lu: expected a number, got '%.32s'",
					     lineno, line);
					goto fail;
				}
				if (t->dtype == FLOW_WD_F32)
					((float *)data)[i] = (float)v;
				else
					((double *)data)[i] = v;
			} else {
				long long v = strtoll(line, &end, 10);
				if (end == line || *end || errno ||
				    (t->dtype == FLOW_WD_I32 && (v < INT32_MIN || v > INT32_MAX)) ||
				    (t->dtype == FLOW_WD_BOOL && v != 0 && v != 1)) {
					werr(err, errlen, path, "line %lu: expected %s, got '%.32s'", lineno,
					     t->dtype == FLOW_WD_BOOL ? "0 or 1" : "an integer in range", line);
					goto fail;
				}
				if (t->dtype == FLOW_WD_I32)
					((int32_t *)data)[i] = (int32_t)v;
				else if (t->dtype == FLOW_WD_I64)
					((int64_t *)data)[i] = v;
				else
					data[i] = (unsigned char)v;
			}
		}
	}
	if (ferror(f)) {
		werr(err, errlen, path, "read error at line %lu", lineno);
		goto fail;
	}
	w->file_bytes = (size_t)ftell(f);
	fclose(f);
	return w;
fail:
	fclose(f);
	flow_weights_close(w);
	return NULL;
}

int flow_text_weights_write(const char *path, const flow_weight *ts, int n, char *err,
			    size_t errlen)
{
	size_t tmplen = strlen(path) + 16;
	char *tmp = malloc(tmplen);
	if (!tmp) {
		werr(err, errlen, path, "out of memory");
		return -1;
	}
	snprintf(tmp, tmplen, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		werr(err, errlen, path, "cannot create temporary file %s: %s", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		free(tmp);
		return -1;
	}
	fprintf(f, "flowtxt 1\n");
	for (int i = 0; i < n; i++) {
		const flow_weight *t = &ts[i];
		size_t need;
		int ok = 0;
		for (size_t k = 0; k < sizeof text_types / sizeof *text_types; k++)
			ok |= t->dtype == text_types[k];
		if (!ok || !t->name || strpbrk(t->name, " \t\n") || !*t->name ||
		    weights_nbytes(t->dtype, t->shape, t->rank, &need) || need != t->nbytes) {
			werr(err, errlen, path, "tensor %d ('%.80s'): unsupported dtype, bad name or size",
			     i, t->name ? t->name : "");
			fclose(f);
			unlink(tmp);
			free(tmp);
			return -1;
		}
		fprintf(f, "tensor %s %s %d", t->name, flow_wdtype_safetensors_name(t->dtype), t->rank);
		for (int d = 0; d < t->rank; d++)
			fprintf(f, " %lld", (long long)t->shape[d]);
		fputc('\n', f);
		size_t cnt = need / flow_wdtype_size(t->dtype);
		for (size_t e = 0; e < cnt; e++) {
			switch (t->dtype) {
			case FLOW_WD_F32: fprintf(f, "%.9g\n", (double)((const float *)t->data)[e]); break;
			case FLOW_WD_F64: fprintf(f, "%.17g\n", ((const double *)t->data)[e]); break;
			case FLOW_WD_I32: fprintf(f, "%d\n", ((const int32_t *)t->data)[e]); break;
			case FLOW_WD_I64: fprintf(f, "%lld\n", (long long)((const int64_t *)t->data)[e]); break;
			default: fprintf(f, "%d\n", ((const unsigned char *)t->data)[e] ? 1 : 0); break;
			}
		}
	}
	int bad = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
	int e = errno;
	if (fclose(f) != 0)
		bad = 1;
	if (!bad && rename(tmp, path) != 0) {
		e = errno;
		bad = 1;
	}
	if (bad) {
		unlink(tmp);
		werr(err, errlen, path, "write failed: %s (nothing written)", strerror(e));
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
}
