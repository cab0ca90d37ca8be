/* recorder_internal.h — shared between the recorder's files (private). */
#ifndef PP_RECORDER_INTERNAL_H
#define PP_RECORDER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include "spool.h"
#include "spool_writer.h"

/* crc32.c: zlib's crc32() (same polynomial and result), faster on long buffers */
uint32_t pp_crc32(uint32_t crc, const void *buf, size_t len);

/* clock.c: raw ticks for the hot path (TSC when invariant, else CLOCK_MONOTONIC ns). */
void pp_clock_init(void);
int pp_clock_kind(void);
uint64_t pp_mono_ns(void);
uint64_t pp_realtime_ns(void);
#if defined(__x86_64__)
#include <x86intrin.h>
extern int pp_clock_use_tsc __attribute__((visibility("hidden")));
static inline uint64_t pp_ticks(void)
{
	return pp_clock_use_tsc ? __rdtsc() : pp_mono_ns();
}
#else
static inline uint64_t pp_ticks(void) { return pp_mono_ns(); }
#endif

/* spool_writer.c: append-only chunk writer over a file descriptor. */
typedef struct pp_spool_writer {
	/* The descriptor's lock (recursive): held from a write's check of fd
	 * to the write itself, and while the program closes or replaces
	 * descriptors (pp_spool_fd_enter..leave). No other recorder lock is
	 * waited for under it, so a program's signal handler may take it on a
	 * thread that holds any other; a handler that ends the process from
	 * inside the program's close (exit, _exit) re-takes it. */
	pthread_mutex_t lock;
	int fd;
	uint64_t bytes;
	uint64_t reserve_at;      /* offset of the PP_SPOOL_RESERVE room (0: none) */
	int failed;               /* a write failed (disk full…): further writes are counted as lost */
	uint64_t dev, ino;        /* the spool file fd must still refer to */
	uint32_t reclaimed;       /* times the program closed/replaced fd: the spool moved or was reopened */
	char path[4096];
	/* A drain's small chunks, gathered and written together (or when
	 * full): one check and one write instead of one per chunk. */
	unsigned char *batch;
	uint32_t batch_n, batch_cap;
	int batching;
	/* The process that created the spool: a child made by a raw clone3 or
	 * clone system call (no fork handler ran in it) holds a copy of this
	 * writer and the parent's descriptor; it never writes through them. */
	int pid;
} pp_spool_writer;

int pp_spool_create(pp_spool_writer *w, const char *path, int exclusive, char *err, size_t errlen);
void pp_spool_lock_init(pp_spool_writer *w);
void pp_spool_header_seal(pp_spool_header *h);
int pp_spool_write_reserve(pp_spool_writer *w);
/* Writes chunks (n bytes, whole chunks, n <= PP_SPOOL_RESERVE - 24) over the
 * room kept after the header, the rest padded; for a spool whose writes
 * failed. */
int pp_spool_fill_reserve(pp_spool_writer *w, const void *chunks, size_t n);
size_t pp_spool_put_chunk(void *dst, size_t cap, uint16_t type, const void *p1, uint32_t n1, const void *p2,
			  uint32_t n2);
int pp_spool_write_header(pp_spool_writer *w, const pp_spool_header *h);
/* Writes one chunk (header + payload + padding) in a single writev. */
int pp_spool_write_chunk(pp_spool_writer *w, uint16_t type, uint32_t tid, const void *payload,
			 uint32_t size);
/* Two-part payload (prefix + body) without copying. */
int pp_spool_write_chunk2(pp_spool_writer *w, uint16_t type, uint32_t tid, const void *p1,
			  uint32_t n1, const void *p2, uint32_t n2);
/* release: free the batch buffer (not when the process is ending) */
void pp_spool_close(pp_spool_writer *w, int release);
/* Between begin and end, small chunks are gathered in memory and written
 * together (at end, or when the batch is full); large ones are written at
 * once, after what was gathered. end returns -1 if a write failed. */
void pp_spool_batch_begin(pp_spool_writer *w);
int pp_spool_batch_end(pp_spool_writer *w);
/* An EXIT chunk from a signal handler: no allocation, no lock, one write(2). */
int pp_spool_write_exit_signal_safe(pp_spool_writer *w, int32_t code, int32_t sig);
/* The same chunk, formatted (async-signal-safe): for a parent that saw how
 * a child ended which the child's own agent could not record. */
typedef struct pp_exit_chunk {
	pp_chunk_header h;
	int32_t v[2];
} pp_exit_chunk;
_Static_assert(sizeof(pp_exit_chunk) == sizeof(pp_chunk_header) + 8,
	       "an EXIT chunk is its header and two int32, no padding: written whole");
void pp_spool_exit_chunk(pp_exit_chunk *c, int32_t code, int32_t sig);

/* The program closes or replaces descriptors first..last (close, dup2,
 * dup3, close_range) between these two calls: if the spool's is among
 * them it moves out of the way first, and no spool write or reopen runs
 * meanwhile, so none can land in the program's file or lose its
 * descriptor to the program. Safe to call with the recorder closed, and
 * from signal handlers. */
void pp_spool_fd_enter(unsigned int first, unsigned int last);
void pp_spool_fd_leave(void);
/* spool_writer.c: moves w->fd to a number outside [first, last], or to none
 * (the next write reopens the spool by name); the old number is left to
 * the program. Caller holds w->lock. */
void pp_spool_move(pp_spool_writer *w, unsigned int first, unsigned int last);
void pp_spool_reopen(pp_spool_writer *w);

/* recorder.c: the process's exit or fatal signal, from a signal handler */
int pp_exit_note_signal_safe(int32_t code, int32_t sig);
/* recorder.c: in a child made by a raw clone3/clone system call (the
 * recorder's state copied without a fork handler), says once in the
 * parent's spool that it was not followed; 1 in such a child, else 0 and
 * nothing done. For its _exit, which reaches no other recorder path. */
int pp_foreign_child(void);
/* pp_close for a process that is ending: the recorder's memory is left
 * to the exit (no unmapping, see recorder.c). */
int pp_close_at_exit(void);

#endif
