/* spool_reader.c — checked, bounded-memory walk over a spool file. */
#include "spool_reader.h"
#include "pp_assert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* pages behind the cursor are released in steps of this many bytes */
#define DROP_STEP (32u << 20)

struct pp_spool_reader {
	const unsigned char *data;
	size_t size;
	int mapped;                  /* data is an mmap (else malloc'd) */
	pp_spool_header h;
	size_t off;                  /* next chunk header */
	size_t checked;              /* everything before this passed its checks */
	size_t end;                  /* where trustworthy data ends (once known) */
	int end_known;
	size_t dropped;              /* pages before this were released */
	char damage[160];
	char name[512];
};

static int check_header(pp_spool_reader *r, char *err, size_t errlen)
{
	if (r->size < sizeof(pp_spool_header)) {
		snprintf(err, errlen, "%s: not a phaseprof spool (%zu bytes, shorter than its %zu-byte header)",
			 r->name, r->size, sizeof(pp_spool_header));
		return -1;
	}
	memcpy(&r->h, r->data, sizeof r->h);
	if (memcmp(r->h.magic, PP_SPOOL_MAGIC, 8) != 0) {
		snprintf(err, errlen, "%s: not a phaseprof spool (bad magic at offset 0)", r->name);
		return -1;
	}
	if (r->h.version < PP_SPOOL_VERSION_MIN || r->h.version > PP_SPOOL_VERSION || r->h.header_size != sizeof r->h) {
		snprintf(err, errlen, "%s: spool version %u (header %u bytes) not supported by this build (version %d)",
			 r->name, r->h.version, r->h.header_size, PP_SPOOL_VERSION);
		return -1;
	}
	if (r->h.version >= 2) {
		pp_spool_header z = r->h;
		z.reserved = 0;
		if ((uint32_t)crc32(crc32(0L, Z_NULL, 0), (const unsigned char *)&z, sizeof z) != r->h.reserved) {
			snprintf(err, errlen, "%s: spool header fails its checksum (damaged file)", r->name);
			return -1;
		}
	}
	r->off = r->checked = sizeof r->h;
	return 0;
}

pp_spool_reader *pp_spool_reader_open(const char *path, char *err, size_t errlen)
{
	pp_spool_reader *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	snprintf(r->name, sizeof r->name, "%s", path);
	/* O_NONBLOCK: a named pipe is refused below, not waited on */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0) {
		snprintf(err, errlen, "%s: cannot open spool: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: is %s, not a spool (regular files only)", path,
			 S_ISFIFO(sb.st_mode) ? "a named pipe" : S_ISDIR(sb.st_mode) ? "a directory"
			 : S_ISCHR(sb.st_mode) ? "a character device" : "not a regular file");
		goto fail;
	}
	r->size = (size_t)sb.st_size;
	if (r->size >= sizeof(pp_spool_header)) {
		void *p = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			snprintf(err, errlen, "%s: cannot map spool: %s", path, strerror(errno));
			goto fail;
		}
		r->data = p;
		r->mapped = 1;
		madvise(p, r->size, MADV_SEQUENTIAL);
	}
	close(fd);
	fd = -1;
	if (check_header(r, err, errlen) != 0)
		goto fail;
	return r;
fail:
	if (fd >= 0)
		close(fd);
	pp_spool_reader_close(r);
	return NULL;
}

pp_spool_reader *pp_spool_reader_open_mem(const void *data, size_t size, const char *name,
					  char *err, size_t errlen)
{
	pp_spool_reader *r = calloc(1, sizeof *r);
	unsigned char *copy = malloc(size ? size : 1);
	if (!r || !copy) {
		free(r);
		free(copy);
		snprintf(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	/* a malloc'd copy: chunk payloads are 8-byte aligned like in a mapping */
	memcpy(copy, data, size);
	r->data = copy;
	r->size = size;
	snprintf(r->name, sizeof r->name, "%s", name);
	if (check_header(r, err, errlen) != 0) {
		pp_spool_reader_close(r);
		return NULL;
	}
	return r;
}

void pp_spool_reader_close(pp_spool_reader *r)
{
	if (!r)
		return;
	if (r->mapped)
		munmap((void *)r->data, r->size);
	else
		free((void *)r->data);
	free(r);
}

const pp_spool_header *pp_spool_reader_header(const pp_spool_reader *r) { return &r->h; }
uint64_t pp_spool_reader_size(const pp_spool_reader *r) { return r->size; }
const char *pp_spool_reader_name(const pp_spool_reader *r) { return r->name; }
uint64_t pp_spool_reader_end(const pp_spool_reader *r) { return r->end_known ? r->end : r->checked; }
const char *pp_spool_reader_damage(const pp_spool_reader *r) { return r->damage; }

void pp_spool_reader_rewind(pp_spool_reader *r)
{
	r->off = sizeof r->h;
	r->dropped = 0;
}

/* Releases the mapped pages the walk has left behind (they are re-read
 * from the file if touched again). */
static void drop_behind(pp_spool_reader *r)
{
	if (!r->mapped || r->off < r->dropped + DROP_STEP)
		return;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t upto = r->off & ~(page - 1);
	if (upto > r->dropped)
		madvise((void *)(r->data + r->dropped), upto - r->dropped, MADV_DONTNEED);
	r->dropped = upto;
}

/* The trustworthy data ends at the cursor; r->damage says why. */
static int stop(pp_spool_reader *r)
{
	r->end = r->off;
	r->end_known = 1;
	return 0;
}

/* Framing of the chunk at the cursor: 1 and *c filled, or 0 with damage set. */
static int frame(pp_spool_reader *r, pp_spool_chunk *c, size_t *padded_out)
{
	size_t left = r->size - r->off;
	unsigned long long at = r->off;
	if (left < sizeof(pp_chunk_header)) {
		snprintf(r->damage, sizeof r->damage, "incomplete chunk header at offset %llu (%zu bytes left)",
			 at, left);
		return 0;
	}
	pp_chunk_header ch;
	memcpy(&ch, r->data + r->off, sizeof ch);
	if (ch.magic != PP_CHUNK_MAGIC) {
		snprintf(r->damage, sizeof r->damage, "bad chunk magic at offset %llu", at);
		return 0;
	}
	size_t padded = ((size_t)ch.size + 7) & ~(size_t)7;
	if (padded > left - sizeof ch) {
		snprintf(r->damage, sizeof r->damage,
			 "chunk at offset %llu runs past the end of the file (%u bytes)", at, ch.size);
		return 0;
	}
	c->type = ch.type;
	c->tid = ch.tid;
	c->size = ch.size;
	c->crc = ch.crc;
	c->seed = r->h.version >= 2 ? (uint32_t)crc32(crc32(0L, Z_NULL, 0), r->data + r->off + PP_CHUNK_CRC_FIELDS,
							  PP_CHUNK_CRC_LEN)
				    : 0;
	c->offset = r->off;
	c->data = r->data + r->off + sizeof ch;
	/* checked above: the payload and its padding lie inside the file */
	PP_ASSERT(r->off + sizeof ch + padded <= r->size && (size_t)ch.size <= padded);
	*padded_out = padded;
	return 1;
}

int pp_spool_chunk_intact(const pp_spool_chunk *c)
{
	/* zlib takes uInt lengths: a chunk's u32 size fits */
	return (uint32_t)crc32(c->seed, c->data, (uInt)c->size) == c->crc;
}

int pp_spool_reader_next(pp_spool_reader *r, pp_spool_chunk *c)
{
	if (r->end_known && r->off >= r->end)
		return 0;
	if (r->off >= r->size) {
		r->end = r->off;
		r->end_known = 1;
		return 0;
	}
	size_t padded;
	if (!frame(r, c, &padded))
		return stop(r);
	if (r->off >= r->checked && !pp_spool_chunk_intact(c)) {
		snprintf(r->damage, sizeof r->damage, "chunk at offset %llu fails its checksum",
			 (unsigned long long)r->off);
		return stop(r);
	}
	r->off += sizeof(pp_chunk_header) + padded;
	/* the 80-byte header and whole padded chunks: the cursor stays on an
	 * 8-byte boundary inside the file */
	PP_ASSERT(r->off <= r->size && (r->off & 7) == 0);
	if (r->off > r->checked)
		r->checked = r->off;
	drop_behind(r);
	return 1;
}

int pp_spool_reader_skim(pp_spool_reader *r, pp_spool_chunk *c)
{
	if (r->off >= r->size || (r->end_known && r->off >= r->end))
		return 0;
	char keep[sizeof r->damage];
	memcpy(keep, r->damage, sizeof keep);
	size_t padded;
	int ok = frame(r, c, &padded);
	memcpy(r->damage, keep, sizeof keep);
	if (!ok)
		return 0;
	r->off += sizeof(pp_chunk_header) + padded;
	drop_behind(r);
	return 1;
}

/* ---------------------------------------------------------------- summary */

static int meta_int(const pp_spool_chunk *c, const char *key, int *out)
{
	size_t kl = strlen(key);
	if (c->size <= kl + 1 || memcmp(c->data, key, kl + 1) != 0)
		return 0;
	char v[24];
	size_t vl = strnlen((const char *)c->data + kl + 1, c->size - kl - 1);
	snprintf(v, sizeof v, "%.*s", (int)(vl < sizeof v - 1 ? vl : sizeof v - 1),
		 (const char *)c->data + kl + 1);
	*out = atoi(v);
	return 1;
}

int pp_spool_summarise(const char *path, pp_spool_summary *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->exit_code = -1;
	pp_spool_reader *r = pp_spool_reader_open(path, err, errlen);
	if (!r)
		return -1;
	s->pid = r->h.pid;
	s->ppid = r->h.ppid;
	s->start_mono_ns = r->h.start_mono_ns;
	pp_spool_chunk c;
	/* framing only, and the CRC of the few chunks read */
	while (pp_spool_reader_skim(r, &c)) {
		if (c.type != PP_CHUNK_META || !pp_spool_chunk_intact(&c))
			continue;
		int v;
		if (meta_int(&c, "agent.exit_code", &v))
			s->exit_code = v;
		else if (meta_int(&c, "agent.exit_signal", &v))
			s->exit_signal = v;
		else if (c.size > 10 && memcmp(c.data, "agent.end", 10) == 0) {
			size_t vl = strnlen((const char *)c.data + 10, c.size - 10);
			snprintf(s->end, sizeof s->end, "%.*s", (int)(vl < 15 ? vl : 15), (const char *)c.data + 10);
			s->agent_closed = 1;
		}
	}
	pp_spool_reader_close(r);
	return 0;
}
