/*
 * spool_reader.h — the one reader of spool files (format: spool.h).
 *
 * Checks the header's magic, version and size, then hands out chunks one by
 * one, each checked for framing (magic, size within the file) and CRC. The
 * first damaged chunk ends the trustworthy data: next() returns 0 there and
 * damage() says what and where. A second walk (after rewind) trusts what the
 * first one checked and skips the CRCs. The file is mapped, and pages behind
 * the cursor are dropped as the walk goes on, so memory stays bounded for
 * any spool size.
 */
#ifndef PP_SPOOL_READER_H
#define PP_SPOOL_READER_H

#include <stddef.h>
#include <stdint.h>

#include "spool.h"

typedef struct pp_spool_reader pp_spool_reader;

typedef struct pp_spool_chunk {
	uint16_t type;               /* enum pp_chunk_type */
	uint32_t tid;
	uint32_t size;               /* payload bytes */
	uint64_t offset;             /* of the chunk header in the file */
	const unsigned char *data;   /* payload (8-byte aligned); valid until close */
	uint32_t crc;                /* as written in the chunk header */
	uint32_t seed;               /* CRC of the header fields it covers (version 2), else 0 */
} pp_spool_chunk;

/* Opens a spool file. NULL with a one-line message naming the file (and the
 * offset or field) in err when it is not a spool this build can read. */
pp_spool_reader *pp_spool_reader_open(const char *path, char *err, size_t errlen);
/* The same over bytes in memory (copied); name is used in messages. */
pp_spool_reader *pp_spool_reader_open_mem(const void *data, size_t size, const char *name,
					  char *err, size_t errlen);
void pp_spool_reader_close(pp_spool_reader *r);

const pp_spool_header *pp_spool_reader_header(const pp_spool_reader *r);
uint64_t pp_spool_reader_size(const pp_spool_reader *r);
const char *pp_spool_reader_name(const pp_spool_reader *r);

/* The next whole, checked chunk: 1, or 0 where the trustworthy data ends. */
int pp_spool_reader_next(pp_spool_reader *r, pp_spool_chunk *c);
/* The next chunk whose framing is whole, without checking its CRC (a quick
 * look ahead, e.g. for clock points: check those with pp_spool_chunk_intact).
 * Does not move where next() stops. 1, or 0 at the first framing error. */
int pp_spool_reader_skim(pp_spool_reader *r, pp_spool_chunk *c);
/* The chunk's payload matches its CRC. */
int pp_spool_chunk_intact(const pp_spool_chunk *c);
/* Back to the first chunk. */
void pp_spool_reader_rewind(pp_spool_reader *r);
/* After next() returned 0: the offset where trustworthy data ends, and why
 * it ends before the end of the file ("" when the file ended cleanly). */
uint64_t pp_spool_reader_end(const pp_spool_reader *r);
const char *pp_spool_reader_damage(const pp_spool_reader *r);

/* What a session needs to order and link its spools before ingesting them:
 * the header's process ids and start, and the agent's own account of how
 * the process ended (META agent.exit_code / agent.exit_signal / agent.end). */
typedef struct pp_spool_summary {
	uint32_t pid, ppid;
	uint64_t start_mono_ns;
	int exit_code;               /* -1 if the spool does not say */
	int exit_signal;             /* 0 if none */
	int agent_closed;            /* the agent wrote its final rows */
	char end[16];                /* agent.end value ("exit", "_exit", "signal"…) */
} pp_spool_summary;
int pp_spool_summarise(const char *path, pp_spool_summary *s, char *err, size_t errlen);

#endif
