/* spool_build.h — hand-made spool files for ingest tests: a header, then
 * chunks with correct (or deliberately wrong) CRCs. */
#ifndef SPOOL_BUILD_H
#define SPOOL_BUILD_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "spool.h"

typedef struct sb { unsigned char *p; size_t n, cap; } sb;

static void sb_put(sb *b, const void *v, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 256;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, v, n);
	b->n += n;
}

static void sb_header(sb *b, uint32_t pid, uint32_t ppid, uint64_t start)
{
	pp_spool_header h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, PP_SPOOL_MAGIC, 8);
	h.version = PP_SPOOL_VERSION;
	h.header_size = sizeof h;
	h.pid = pid;
	h.ppid = ppid;
	h.clock = PP_CLOCK_MONO;
	h.start_mono_ns = start;
	h.reserved = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const unsigned char *)&h, sizeof h);
	sb_put(b, &h, sizeof h);
}

/* a chunk; bad_crc writes a wrong checksum */
static void sb_chunk(sb *b, uint16_t type, uint32_t tid, const void *p, uint32_t n, int bad_crc)
{
	static const char pad[8];
	pp_chunk_header c = {PP_CHUNK_MAGIC, type, 0, tid, n, 0, 0};
	uLong seed = crc32(crc32(0L, Z_NULL, 0), (const unsigned char *)&c + PP_CHUNK_CRC_FIELDS, PP_CHUNK_CRC_LEN);
	c.crc = (uint32_t)crc32(seed, p, n) ^ (bad_crc ? 1u : 0u);
	sb_put(b, &c, sizeof c);
	sb_put(b, p, n);
	sb_put(b, pad, (8 - (n & 7)) & 7);
}

static void sb_string(sb *b, uint32_t id, const char *s)
{
	unsigned char buf[256];
	size_t l = strlen(s);
	memcpy(buf, &id, 4);
	memcpy(buf + 4, s, l);
	sb_chunk(b, PP_CHUNK_STRING, 0, buf, (uint32_t)(4 + l), 0);
}

static void sb_meta(sb *b, const char *k, const char *v, int bad_crc)
{
	char buf[256];
	size_t kl = strlen(k) + 1, vl = strlen(v) + 1;
	memcpy(buf, k, kl);
	memcpy(buf + kl, v, vl);
	sb_chunk(b, PP_CHUNK_META, 0, buf, (uint32_t)(kl + vl), bad_crc);
}

static void sb_end(sb *b, uint64_t ts)
{
	sb_chunk(b, PP_CHUNK_END, 0, &ts, 8, 0);
}

/* a ROW chunk: table, then one value per tag: "i" int64, "t" text, "s"
 * interned text, "n" null (no argument) */
static void sb_row(sb *b, const char *table, const char *tags, ...)
{
	sb r = {0};
	uint32_t tl = (uint32_t)strlen(table), nc = (uint32_t)strlen(tags);
	sb_put(&r, &tl, 4);
	sb_put(&r, table, tl);
	sb_put(&r, &nc, 4);
	va_list ap;
	va_start(ap, tags);
	for (const char *t = tags; *t; t++) {
		sb_put(&r, t, 1);
		if (*t == 'n')
			continue;
		if (*t == 'i') {
			int64_t v = va_arg(ap, int64_t);
			sb_put(&r, &v, 8);
		} else { /* 't' or 's' */
			const char *s = va_arg(ap, const char *);
			uint32_t l = (uint32_t)strlen(s);
			sb_put(&r, &l, 4);
			sb_put(&r, s, l);
		}
	}
	va_end(ap);
	sb_chunk(b, PP_CHUNK_ROW, 0, r.p, (uint32_t)r.n, 0);
	free(r.p);
}

static int sb_write(const sb *b, const char *path)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(b->p, 1, b->n, f);
	return fclose(f) == 0 && w == b->n ? 0 : -1;
}

#endif
