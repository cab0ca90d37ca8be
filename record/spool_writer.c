/*
 * spool_writer.c — the spool file: created without following links, its
 * descriptor kept high and close-on-exec, and re-validated before every
 * write, because it lives in a program that owns the descriptor table
 * (daemons close or dup2 over inherited descriptors; shells run
 * `exec 3>file`). A descriptor that no longer refers to our spool is
 * abandoned (it is the program's now) and the spool reopened by name.
 */
#include "recorder_internal.h"
#include "pp_assert.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* The lowest descriptor the spool may take: far above what programs use
 * or hand to their children, below the descriptor limit. */
static int high_floor(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 4096)
		return 1000;
	return rl.rlim_cur > 64 ? (int)(rl.rlim_cur * 3 / 4) : 3;
}

/* Moves fd above the program's range (close-on-exec). Returns the new fd. */
static int move_high(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, high_floor());
	if (h < 0)
		return fd; /* no room up there: keep it where it is, still validated */
	close(fd);
	return h;
}

static int adopt(pp_spool_writer *w, int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return -1;
	}
	w->fd = move_high(fd);
	w->dev = (uint64_t)st.st_dev;
	w->ino = (uint64_t)st.st_ino;
	return 0;
}

void pp_spool_lock_init(pp_spool_writer *w)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&w->lock, &a);
	pthread_mutexattr_destroy(&a);
}

int pp_spool_create(pp_spool_writer *w, const char *path, int exclusive, char *err, size_t errlen)
{
	memset(w, 0, sizeof *w);
	pp_spool_lock_init(w);
	w->fd = -1;
	/* Always created, never adopted: never through a link, never a file
	 * or FIFO someone put there first (an open for writing of a FIFO waits
	 * for a reader: pp_open hung). A regular file of our own with one link
	 * (a leftover of an earlier run at a fixed path, PHASEPROF_OUT) is
	 * replaced, unless the caller asked for a new name (exclusive). */
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_APPEND | O_NOFOLLOW;
	int fd = open(path, flags, 0600);
	if (fd < 0 && errno == EEXIST && !exclusive) {
		struct stat st;
		if (lstat(path, &st) != 0) {
			snprintf(err, errlen, "cannot create spool %s: %s", path, strerror(errno));
			return -1;
		}
		if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
			snprintf(err, errlen, "refusing spool %s: it exists and is %s", path,
				 S_ISFIFO(st.st_mode) ? "a named pipe" : S_ISLNK(st.st_mode) ? "a symbolic link"
				 : !S_ISREG(st.st_mode) ? "not a regular file"
				 : st.st_uid != geteuid() ? "another user's file" : "a file with other links");
			errno = EEXIST;
			return -1;
		}
		if (unlink(path) == 0)
			fd = open(path, flags, 0600);
	}
	if (fd < 0 || adopt(w, fd) != 0) {
		snprintf(err, errlen, "cannot create spool %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(w->path, sizeof w->path, "%s", path);
	w->pid = (int)getpid();
	return 0;
}

/* 1 if w->fd still refers to the spool we created (async-signal-safe). */
static int fd_is_ours(const pp_spool_writer *w)
{
	struct stat st;
	return w->fd >= 0 && fstat(w->fd, &st) == 0 && (uint64_t)st.st_dev == w->dev &&
	       (uint64_t)st.st_ino == w->ino;
}

/* The program closed or replaced our descriptor: reopen the spool by name
 * (the same file, checked) and move it high, or give up and let the writes
 * count as lost. Never left in the program's low range: with no room up
 * there the spool is given up rather than kept where the program's next
 * open() would have landed. */
static int reclaim(pp_spool_writer *w)
{
	w->fd = -1; /* whatever is at that number now is not ours to close */
	int fd = open(w->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		w->failed = errno ? errno : EBADF;
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != w->dev || (uint64_t)st.st_ino != w->ino) {
		close(fd);
		w->failed = ESTALE;
		return -1;
	}
	int h = fcntl(fd, F_DUPFD_CLOEXEC, high_floor());
	close(fd);
	if (h < 0) {
		w->failed = EMFILE;
		return -1;
	}
	w->fd = h;
	w->reclaimed++;
	return 0;
}

/* The program is about to close or replace [first, last], which holds the
 * spool's number: the spool takes the lowest free number at or above the
 * high floor outside that range (a close loop going up passes the floor
 * once: the spool steps back to a number the loop has done, ~2 moves where
 * following the loop up to RLIMIT_NOFILE took ~19,000 and ended on fd 3),
 * else just above the range; never a number below the floor. With neither
 * (close_range(3, ~0U)) it lets go, and pp_spool_reopen puts it back high
 * when the program's call returned. */
void pp_spool_move(pp_spool_writer *w, unsigned int first, unsigned int last)
{
	if (w->fd < 0)
		return;
	int h = fcntl(w->fd, F_DUPFD_CLOEXEC, high_floor());
	if (h >= 0 && (unsigned int)h >= first && (unsigned int)h <= last) {
		close(h); /* ours, and inside the range */
		h = last < (unsigned int)INT_MAX ? fcntl(w->fd, F_DUPFD_CLOEXEC, (int)last + 1) : -1;
	}
	w->fd = h; /* the old number is the program's to close; -1: reopened after its call */
	w->reclaimed++;
}

/* After the program's close/dup2/close_range returned, on its thread, under
 * the descriptor's lock: a spool that had to let go is reopened high now,
 * not by some later write on another thread (whose open() would take the
 * program's lowest free number for a moment). */
void pp_spool_reopen(pp_spool_writer *w)
{
	if (w->fd < 0 && !w->failed && w->path[0])
		reclaim(w);
}

static int write_direct_locked(pp_spool_writer *w, struct iovec *iov, int n);

/* A write past the program's file size limit (ulimit -f) fails with EFBIG
 * and sends SIGXFSZ to the writing thread, whose default action kills the
 * program: ours, not the program's. Every spool write runs with the
 * thread's signals blocked (the writer thread, a program thread under the
 * write lock), so it is still pending here: taken, never delivered. */
static void take_own_sigxfsz(void)
{
	sigset_t x, pend;
	sigemptyset(&x);
	sigaddset(&x, SIGXFSZ);
	if (sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ)) {
		struct timespec zero = {0, 0};
		sigtimedwait(&x, NULL, &zero);
	}
}

#define BATCH_CAP (64u << 10)
#define BATCH_SMALL (8u << 10) /* larger chunks skip the copy */

static int batch_flush_locked(pp_spool_writer *w)
{
	if (!w->batch_n)
		return 0;
	struct iovec iov = {w->batch, w->batch_n};
	int rc = write_direct_locked(w, &iov, 1);
	w->batch_n = 0;
	return rc;
}

static int write_all_locked(pp_spool_writer *w, struct iovec *iov, int n)
{
	if (!w->batching)
		return write_direct_locked(w, iov, n);
	if (w->failed)
		return -1;
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	if (!w->batch && total <= BATCH_SMALL) {
		w->batch = malloc(BATCH_CAP);
		w->batch_cap = w->batch ? BATCH_CAP : 0;
	}
	if (w->batch && total <= BATCH_SMALL) {
		if (w->batch_n + total > w->batch_cap && batch_flush_locked(w) != 0)
			return -1;
		PP_ASSERT(w->batch_n + total <= w->batch_cap);
		for (int i = 0; i < n; i++) {
			if (!iov[i].iov_len)
				continue;
			memcpy(w->batch + w->batch_n, iov[i].iov_base, iov[i].iov_len);
			w->batch_n += (uint32_t)iov[i].iov_len;
		}
		return 0;
	}
	if (batch_flush_locked(w) != 0)
		return -1;
	return write_direct_locked(w, iov, n);
}

void pp_spool_batch_begin(pp_spool_writer *w)
{
	pthread_mutex_lock(&w->lock);
	w->batching = 1;
	pthread_mutex_unlock(&w->lock);
}

int pp_spool_batch_end(pp_spool_writer *w)
{
	pthread_mutex_lock(&w->lock);
	int rc = batch_flush_locked(w);
	w->batching = 0;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

static int write_direct_locked(pp_spool_writer *w, struct iovec *iov, int n)
{
	if (w->failed)
		return -1;
	/* a raw clone3/clone child: the descriptor is its parent's spool */
	if (w->pid != (int)getpid())
		return -1;
	if (!fd_is_ours(w) && reclaim(w) != 0)
		return -1;
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	while (total > 0) {
		ssize_t k = writev(w->fd, iov, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			w->failed = errno;
			if (errno == EFBIG)
				take_own_sigxfsz();
			return -1;
		}
		w->bytes += (uint64_t)k;
		total -= (size_t)k;
		/* advance the iovecs past what was written (short writes are rare) */
		while (k > 0 && n > 0) {
			if ((size_t)k >= iov->iov_len) {
				k -= (ssize_t)iov->iov_len;
				iov++;
				n--;
			} else {
				iov->iov_base = (char *)iov->iov_base + k;
				iov->iov_len -= (size_t)k;
				k = 0;
			}
		}
	}
	return 0;
}

/* No program thread's handler runs here: the writer blocks every signal,
 * and a program thread writes only with its signals held (recorder.c). */
static int write_all(pp_spool_writer *w, struct iovec *iov, int n)
{
	pthread_mutex_lock(&w->lock);
	int rc = write_all_locked(w, iov, n);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

/* A whole chunk into dst (header, payloads, padding): its length, 0 if
 * it does not fit. */
size_t pp_spool_put_chunk(void *dst, size_t cap, uint16_t type, const void *p1, uint32_t n1, const void *p2,
			  uint32_t n2)
{
	size_t total = sizeof(pp_chunk_header) + (((size_t)n1 + n2 + 7) & ~(size_t)7);
	if (total > cap)
		return 0;
	unsigned char *d = dst;
	memset(d, 0, total);
	pp_chunk_header h = {0};
	h.magic = PP_CHUNK_MAGIC;
	h.type = type;
	h.size = n1 + n2;
	if (n1)
		memcpy(d + sizeof h, p1, n1);
	if (n2)
		memcpy(d + sizeof h + n1, p2, n2);
	h.crc = pp_crc32(pp_crc32(0, (const char *)&h + PP_CHUNK_CRC_FIELDS, PP_CHUNK_CRC_LEN), d + sizeof h, h.size);
	memcpy(d, &h, sizeof h);
	/* a whole chunk: the reader's cursor stays 8-aligned after it */
	PP_ASSERT((total & 7) == 0 && total >= sizeof h + h.size);
	return total;
}

/* The room for the losses, right after the header, on disk now: when the
 * disk fills up later, its blocks are already the file's. */
int pp_spool_write_reserve(pp_spool_writer *w)
{
	unsigned char buf[PP_SPOOL_RESERVE];
	if (pp_spool_put_chunk(buf, sizeof buf, PP_CHUNK_PAD, NULL, 0, NULL, 0) == 0)
		return -1;
	pp_chunk_header h;
	memcpy(&h, buf, sizeof h);
	memset(buf + sizeof h, 0, sizeof buf - sizeof h);
	h.size = (uint32_t)(sizeof buf - sizeof h);
	h.crc = pp_crc32(pp_crc32(0, (const char *)&h + PP_CHUNK_CRC_FIELDS, PP_CHUNK_CRC_LEN), buf + sizeof h, h.size);
	memcpy(buf, &h, sizeof h);
	pthread_mutex_lock(&w->lock);
	int rc = batch_flush_locked(w);
	uint64_t at = w->bytes;
	struct iovec iov = {buf, sizeof buf};
	if (rc == 0)
		rc = write_direct_locked(w, &iov, 1);
	if (rc == 0)
		w->reserve_at = at;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int pp_spool_fill_reserve(pp_spool_writer *w, const void *chunks, size_t n)
{
	unsigned char buf[PP_SPOOL_RESERVE];
	if (!w->reserve_at || n + sizeof(pp_chunk_header) > sizeof buf)
		return -1;
	/* whole chunks (pp_spool_put_chunk's): the PAD after them starts aligned */
	PP_ASSERT((n & 7) == 0);
	memcpy(buf, chunks, n);
	pp_chunk_header h = {0};
	h.magic = PP_CHUNK_MAGIC;
	h.type = PP_CHUNK_PAD;
	h.size = (uint32_t)(sizeof buf - n - sizeof h);
	memset(buf + n + sizeof h, 0, h.size);
	h.crc = pp_crc32(pp_crc32(0, (const char *)&h + PP_CHUNK_CRC_FIELDS, PP_CHUNK_CRC_LEN), buf + n + sizeof h,
			 h.size);
	memcpy(buf + n, &h, sizeof h);
	pthread_mutex_lock(&w->lock);
	int rc = -1;
	if (fd_is_ours(w)) {
		/* pwrite on an O_APPEND descriptor appends (Linux): off for this one write */
		int fl = fcntl(w->fd, F_GETFL);
		if (fl >= 0 && fcntl(w->fd, F_SETFL, fl & ~O_APPEND) == 0) {
			long r = syscall(SYS_pwrite64, w->fd, buf, sizeof buf, (long)w->reserve_at);
			rc = r == (long)sizeof buf ? 0 : -1;
			fcntl(w->fd, F_SETFL, fl);
		}
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

/* Version 2: the header's CRC in its reserved field. */
void pp_spool_header_seal(pp_spool_header *h)
{
	h->reserved = 0;
	h->reserved = pp_crc32(0, h, sizeof *h);
}

int pp_spool_write_header(pp_spool_writer *w, const pp_spool_header *h)
{
	struct iovec iov = {(void *)h, sizeof *h};
	return write_all(w, &iov, 1);
}

int pp_spool_write_chunk2(pp_spool_writer *w, uint16_t type, uint32_t tid, const void *p1,
			  uint32_t n1, const void *p2, uint32_t n2)
{
	static const char pad[8];
	pp_chunk_header h = {0};
	h.magic = PP_CHUNK_MAGIC;
	h.type = type;
	h.tid = tid;
	/* the size field holds both payloads */
	PP_ASSERT(n1 <= UINT32_MAX - n2 && (n1 == 0 || p1) && (n2 == 0 || p2));
	h.size = n1 + n2;
	uint32_t crc = pp_crc32(pp_crc32(0, (const char *)&h + PP_CHUNK_CRC_FIELDS, PP_CHUNK_CRC_LEN), p1, n1);
	h.crc = n2 ? pp_crc32(crc, p2, n2) : crc;
	struct iovec iov[4] = {
		{&h, sizeof h}, {(void *)p1, n1}, {(void *)p2, n2}, {(void *)pad, (8 - (h.size & 7)) & 7},
	};
	return write_all(w, iov, 4);
}

int pp_spool_write_chunk(pp_spool_writer *w, uint16_t type, uint32_t tid, const void *payload,
			 uint32_t size)
{
	return pp_spool_write_chunk2(w, type, tid, payload, size, NULL, 0);
}

/* Bitwise CRC-32 (zlib's polynomial): for the few bytes of the signal path,
 * where neither zlib nor a table lookup through a relocation is wanted. */
static uint32_t crc32_small(uint32_t crc, const unsigned char *p, size_t n)
{
	uint32_t c = ~crc;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
	}
	return ~c;
}

void pp_spool_exit_chunk(pp_exit_chunk *c, int32_t code, int32_t sig)
{
	memset(c, 0, sizeof *c);
	c->v[0] = code;
	c->v[1] = sig;
	c->h.magic = PP_CHUNK_MAGIC;
	c->h.type = PP_CHUNK_EXIT;
	c->h.size = sizeof c->v;
	c->h.crc = crc32_small(crc32_small(0, (const unsigned char *)&c->h + PP_CHUNK_CRC_FIELDS, PP_CHUNK_CRC_LEN),
			       (const unsigned char *)c->v, sizeof c->v);
}

int pp_spool_write_exit_signal_safe(pp_spool_writer *w, int32_t code, int32_t sig)
{
	pp_exit_chunk c;
	pp_spool_exit_chunk(&c, code, sig);
	if (w->failed || w->pid != (int)getpid() || !fd_is_ours(w))
		return -1;
	/* raw system call: no hook, no lazy symbol lookup */
	long r = syscall(SYS_write, w->fd, &c, sizeof c);
	return r == (long)sizeof c ? 0 : -1;
}

void pp_spool_close(pp_spool_writer *w, int release)
{
	pthread_mutex_lock(&w->lock);
	batch_flush_locked(w);
	w->batching = 0;
	if (release)
		free(w->batch);
	w->batch = NULL;
	w->batch_cap = 0;
	if (fd_is_ours(w))
		close(w->fd);
	w->fd = -1;
	pthread_mutex_unlock(&w->lock);
}

static size_t put_str(char *d, size_t at, size_t cap, const char *s)
{
	while (*s && at + 1 < cap)
		d[at++] = *s++;
	d[at] = 0;
	return at;
}

static size_t put_uint(char *d, size_t at, size_t cap, unsigned long v)
{
	char t[24];
	int n = 0;
	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n > 0 && at + 1 < cap)
		d[at++] = t[--n];
	d[at] = 0;
	return at;
}

/* The end of the spool's last whole chunk, the file cut there: a process
 * killed by a fatal signal in the middle of a writev of several pages (the
 * kernel stops a write between pages when a fatal signal is pending)
 * leaves a torn chunk at its end, and an EXIT chunk appended after it
 * would be read as part of it — the run then ended 'truncated' instead
 * of 'crashed'. Walks the chunk
 * headers with pread (async-signal-safe); -1 if the file is not a spool. */
static long spool_whole_end(long fd)
{
	struct stat st;
	if (syscall(SYS_fstat, fd, &st) != 0 || st.st_size < (off_t)sizeof(pp_spool_header))
		return -1;
	long size = (long)st.st_size, at = (long)sizeof(pp_spool_header);
	while (at < size) {
		pp_chunk_header ch;
		long r = syscall(SYS_pread64, fd, &ch, sizeof ch, at);
		if (r != (long)sizeof ch || ch.magic != PP_CHUNK_MAGIC)
			break;
		long next = at + (long)sizeof ch + (long)(((size_t)ch.size + 7) & ~(size_t)7);
		if (next > size)
			break;
		at = next;
	}
	if (at < size && syscall(SYS_ftruncate, fd, at) != 0)
		return -1;
	return at;
}

int pp_spool_note_exit(const char *dir, int32_t pid, uint32_t parent, int32_t code, int32_t sig)
{
	if (!dir || dir[0] != '/' || pid <= 0)
		return -1;
	int saved = errno;
	char path[4200], best[sizeof path];
	best[0] = 0;
	/* a pid's spools are numbered from 0 without gaps; its last image's is
	 * the highest (the pid is not reused before its process is reaped) */
	for (unsigned long seq = 0; seq < 10000; seq++) {
		size_t n = put_str(path, 0, sizeof path, dir);
		n = put_str(path, n, sizeof path, "/");
		n = put_uint(path, n, sizeof path, (unsigned long)pid);
		n = put_str(path, n, sizeof path, "-");
		n = put_uint(path, n, sizeof path, seq);
		put_str(path, n, sizeof path, ".spool");
		long fd = syscall(SYS_openat, (long)AT_FDCWD, path, (long)(O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
		if (fd < 0)
			break;
		pp_spool_header h;
		long r = syscall(SYS_pread64, fd, &h, sizeof h, 0L);
		syscall(SYS_close, fd);
		if (r == (long)sizeof h && memcmp(h.magic, PP_SPOOL_MAGIC, 8) == 0 && h.pid == (uint32_t)pid &&
		    (!parent || h.ppid == parent))
			memcpy(best, path, sizeof path);
	}
	int rc = -1;
	if (best[0]) {
		long fd = syscall(SYS_openat, (long)AT_FDCWD, best, (long)(O_RDWR | O_CLOEXEC | O_NOFOLLOW));
		if (fd >= 0) {
			pp_exit_chunk c;
			pp_spool_exit_chunk(&c, code, sig);
			long at = spool_whole_end(fd);
			rc = at >= 0 && syscall(SYS_pwrite64, fd, &c, sizeof c, at) == (long)sizeof c ? 0 : -1;
			syscall(SYS_close, fd);
		}
	}
	errno = saved;
	return rc;
}
