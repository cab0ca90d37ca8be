/*
 * spool.h — the binary spool format: written by record/ (the recorder,
 * the LD_PRELOAD agent, the CUPTI collector), read by ingest/.
 *
 * A spool is append-only: a file header, then self-delimiting chunks. A
 * process that dies mid-write leaves at most one incomplete chunk at the
 * tail; ingest keeps everything before it. Each chunk carries a CRC32 of its
 * payload, so torn or overwritten bytes are detected, not ingested.
 * Little-endian, 8-byte aligned chunks.
 */
#ifndef PP_SPOOL_H
#define PP_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define PP_SPOOL_MAGIC "PPSPOOL1"
/* Version 2: the header's `reserved` field holds the CRC-32 (zlib's) of the
 * header with that field 0, and a chunk's `crc` covers its type, flags, tid
 * and size (bytes 4..15 of its header) before the payload: a flipped bit in
 * a header or a chunk type is damage, not different content. Version 1
 * (payload CRC only) is still read. */
#define PP_SPOOL_VERSION 2
#define PP_SPOOL_VERSION_MIN 1
#define PP_CHUNK_CRC_FIELDS 4  /* offset of the fields the chunk CRC covers first */
#define PP_CHUNK_CRC_LEN 12
/* Bytes after the header kept for the losses of a spool that could not be
 * written to its end (disk full, file size limit): a PAD chunk, on disk
 * from the start, overwritten in place with LOSS and META chunks then. */
#define PP_SPOOL_RESERVE 512
#define PP_CHUNK_MAGIC 0x4b4e4843u /* "CHNK" */

typedef struct pp_spool_header {
	char magic[8];            /* PP_SPOOL_MAGIC */
	uint32_t version;
	uint32_t header_size;     /* sizeof(pp_spool_header) */
	uint32_t pid, ppid;
	uint32_t clock;           /* enum pp_clock_kind */
	uint32_t reserved;
	uint64_t start_unix_ns;   /* CLOCK_REALTIME at open */
	uint64_t start_mono_ns;   /* CLOCK_MONOTONIC at open: t=0 of the run */
	uint64_t start_ticks;     /* raw clock ticks at open */
	uint64_t reserved2[3];
} pp_spool_header;
_Static_assert(sizeof(pp_spool_header) == 80, "the spool header is 80 bytes on disk");
_Static_assert(offsetof(pp_spool_header, reserved) == 28 &&
		       offsetof(pp_spool_header, start_unix_ns) == 32,
	       "the header's CRC field and times sit where version 1 readers expect them");

enum pp_clock_kind { PP_CLOCK_MONO = 0, PP_CLOCK_TSC = 1 };

typedef struct pp_chunk_header {
	uint32_t magic;           /* PP_CHUNK_MAGIC */
	uint16_t type;            /* enum pp_chunk_type */
	uint16_t flags;
	uint32_t tid;             /* writing thread (0 if none) */
	uint32_t size;            /* payload bytes, excluding padding */
	uint32_t crc;             /* crc32 of the payload */
	uint32_t reserved;
} pp_chunk_header;            /* payload padded to 8 */
_Static_assert(sizeof(pp_chunk_header) == 24, "a chunk header is 24 bytes on disk");
_Static_assert(offsetof(pp_chunk_header, type) == PP_CHUNK_CRC_FIELDS &&
		       offsetof(pp_chunk_header, crc) == PP_CHUNK_CRC_FIELDS + PP_CHUNK_CRC_LEN,
	       "the chunk CRC covers exactly type, flags, tid and size");

enum pp_chunk_type {
	PP_CHUNK_EVENTS = 1,      /* pp_event[] of one thread, in time order */
	PP_CHUNK_STRING = 2,      /* u32 id, then the bytes (no NUL) */
	PP_CHUNK_THREAD = 3,      /* thread name bytes (tid in header) */
	PP_CHUNK_META = 4,        /* key NUL value NUL */
	PP_CHUNK_CLOCK = 5,       /* u64 ticks, u64 mono_ns: a calibration point */
	PP_CHUNK_LOSS = 6,        /* u64 count, then source name bytes */
	PP_CHUNK_ROW = 7,         /* a structured row, see below */
	PP_CHUNK_END = 8,         /* clean close: u64 ticks at close */
	PP_CHUNK_EXIT = 9,        /* i32 exit code, i32 signal (agent, at exit / crash) */
	PP_CHUNK_EVENTS_PACKED = 10, /* the same events, packed (below) */
	PP_CHUNK_PAD = 11,        /* ignored: the room kept after the header (PP_SPOOL_RESERVE) */
};

/* Event types in an EVENTS chunk. */
enum pp_event_type {
	PP_EV_BEGIN = 1,          /* kind, name: a phase/span opens; arg = step or -1 */
	PP_EV_END = 2,            /* closes the innermost open phase of the thread */
	PP_EV_MARK = 3,           /* name */
	PP_EV_COUNTER = 4,        /* name, arg = double bits */
	PP_EV_OP = 5,             /* name = node, arg = (type id << 32); ts = start; followed by */
	PP_EV_OP_END = 6,         /*   the end: ts = end, arg = step */
};

typedef struct pp_event {
	uint64_t ts;              /* raw clock ticks (see header.clock) */
	uint8_t type;             /* enum pp_event_type */
	uint8_t kind;             /* pp_kind for BEGIN */
	uint16_t reserved;        /* 1 on BEGIN/END: ts is pp_now() ns (pp_phase_at) */
	uint32_t name;            /* interned string id */
	uint64_t arg;
} pp_event;
_Static_assert(sizeof(pp_event) == 24, "an event is 24 bytes in an EVENTS chunk");
_Static_assert(offsetof(pp_event, name) == 12 && offsetof(pp_event, arg) == 16,
	       "an event's fields sit where ingest reads them");

/*
 * EVENTS_PACKED payload: one record per event, in order. A tag byte: the
 * type in its low 3 bits, then flags for the fields that follow it, each
 * an LEB128 varint unless noted: the ts delta from the previous event of
 * the chunk (zigzag; the first from 0), always; kind (1 byte) if nonzero;
 * reserved, name if nonzero; arg if neither 0 nor UINT64_MAX (a flag says
 * which). Tag 0: a raw pp_event follows.
 */
#define PP_PACK_TYPE_MASK 0x07
#define PP_PACK_KIND 0x08
#define PP_PACK_RESERVED 0x10
#define PP_PACK_NAME 0x20
#define PP_PACK_ARG 0x40
#define PP_PACK_ARG_NONE 0x80
#define PP_PACK_MAX 30            /* bytes one event can take packed */

/* spool_pack.c: packs n events into out (room for n * PP_PACK_MAX);
 * returns the bytes written. */
size_t pp_events_pack(const pp_event *ev, size_t n, unsigned char *out);
typedef struct pp_unpack {
	const unsigned char *p;
	size_t len, off;
	uint64_t ts;              /* previous event's */
} pp_unpack;
/* Unpacks up to cap events from u (start with off = ts = 0); returns how
 * many, 0 at the end, -1 if the payload is malformed. */
long pp_events_unpack(pp_unpack *u, pp_event *out, size_t cap);

/*
 * ROW payload: u32 table-name length, table name bytes, u32 column count,
 * then per column a tag byte and its value:
 *   'i' int64 (8 bytes), 'd' double (8), 'n' nothing,
 *   's' u32 len + bytes (interned into strings, stored as id),
 *   't' u32 len + bytes (stored as TEXT).
 * Ingest inserts into `table` with run_id as the first column. Rows into
 * graphs/graph_nodes/graph_edges are re-keyed by ingest (graph ids are per run
 * in the spool, global in the store). A `samples` row of (tid, ts, 't' text
 * "ip,ip,…" leaf first) is a raw CPU sample: ingest symbolises it against the
 * run's `libraries` rows and stores the stack id. An entry "p<decimal id>" is
 * a Python frame, named by the run's `py_frames` row of that id. The one reader of this
 * format is ingest/include/spool_reader.h.
 */

#endif
