/*
 * agent_io.c — file I/O per path and mmap/munmap.
 *
 * Counters live per file descriptor while the file is open (I/O calls are
 * system calls: an atomic add per call is lost in their cost) and are
 * folded into a per-path table at close. Rows are written once, at the
 * end of the recording: io(path, op, calls, bytes, time, small_calls), where
 * a "small" call asked for at most 4 KiB — a weight file read in 4 KiB
 * pieces shows as millions of small reads.
 */
#include "agent_internal.h"
#include "recorder_internal.h"
#include "phaseprof.h"
#include "pp_rows.h"
#include "pp_hash.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

enum { OP_OPEN, OP_OPEN_FAILED, OP_READ, OP_WRITE, OP_MMAP, OP_FREAD, OP_FWRITE, OP_N };
static const char *const op_names[OP_N] = {"open", "open_failed", "read", "write", "mmap", "fread", "fwrite"};
enum { C_CALLS, C_BYTES, C_NS, C_SMALL, C_N };
#define SMALL_IO 4096

#define MAX_FDS 16384
typedef struct fdent {
	_Atomic uint32_t path; /* path id + 1; 0: not known yet */
	_Atomic uint64_t c[OP_N][C_N];
} fdent;
static fdent *fds;
static _Atomic int fds_state;
/* one past the highest descriptor given a slot: the table is 3.8 MB and a
 * scan of all of it at exit faulted in ~900 pages */
static _Atomic int fds_end;

typedef struct pathent {
	char *path;
	uint64_t c[OP_N][C_N];
} pathent;
static pthread_mutex_t paths_lock = PTHREAD_MUTEX_INITIALIZER;
static pathent *paths;       /* by id */
static uint32_t n_paths, cap_paths;

/* Tables and path copies come from raw anonymous mappings, never malloc:
 * read/write/close are async-signal-safe, so these hooks run inside the
 * program's signal handlers, possibly while the interrupted thread holds
 * the allocator's lock. */
static pp_hash path_index = {.al = &ppa_map_alloc}; /* path hash -> id */

static ssize_t (*r_read)(int, void *, size_t);
static ssize_t (*r_write)(int, const void *, size_t);
static ssize_t (*r_pread)(int, void *, size_t, off_t);
static ssize_t (*r_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*r_readv)(int, const struct iovec *, int);
static ssize_t (*r_writev)(int, const struct iovec *, int);
static int (*r_open)(const char *, int, ...);
static int (*r_openat)(int, const char *, int, ...);
static int (*r_close)(int);
static int (*r_dup2)(int, int);
static int (*r_dup3)(int, int, int);
static int (*r_close_range)(unsigned int, unsigned int, int);
static FILE *(*r_fopen)(const char *, const char *);
static size_t (*r_fread)(void *, size_t, size_t, FILE *);
static size_t (*r_fwrite)(const void *, size_t, size_t, FILE *);
static int (*r_fclose)(FILE *);
static void *(*r_mmap)(void *, size_t, int, int, int, off_t);
static int (*r_munmap)(void *, size_t);

#define REAL(f) ((__typeof__(r_##f))ppa_next((void **)&r_##f, #f))

static fdent *fd_slot(int fd)
{
	if (fd < 0 || fd >= MAX_FDS)
		return NULL;
	if (PPA_UNLIKELY(atomic_load_explicit(&fds_state, memory_order_acquire) != 2)) {
		int zero = 0;
		if (atomic_compare_exchange_strong(&fds_state, &zero, 1)) {
			fds = ppa_map(sizeof(fdent) * MAX_FDS);
			atomic_store_explicit(&fds_state, 2, memory_order_release);
		} else {
			while (atomic_load_explicit(&fds_state, memory_order_acquire) != 2)
				;
		}
	}
	if (!fds)
		return NULL;
	int end = atomic_load_explicit(&fds_end, memory_order_relaxed);
	while (fd >= end && !atomic_compare_exchange_weak_explicit(&fds_end, &end, fd + 1, memory_order_relaxed,
								   memory_order_relaxed))
		;
	return &fds[fd];
}

static void *map_grow(void *old, size_t old_bytes, size_t new_bytes)
{
	void *p = ppa_map(new_bytes);
	if (!p)
		return NULL;
	if (old) {
		memcpy(p, old, old_bytes);
		ppa_unmap(old, old_bytes);
	}
	return p;
}

#define STR_CHUNK (64u << 10)
static char *str_arena;
static size_t str_left;

static char *str_copy(const char *s, size_t n)
{
	if (n + 1 > str_left) {
		size_t want = n + 1 > STR_CHUNK ? n + 1 : STR_CHUNK;
		char *a = ppa_map(want);
		if (!a)
			return NULL;
		str_arena = a;
		str_left = want;
	}
	char *d = str_arena;
	memcpy(d, s, n);
	d[n] = 0;
	str_arena += n + 1;
	str_left -= n + 1;
	return d;
}

/* Interns a path; returns id + 1 (0 on failure). Caller holds paths_lock. */
static uint32_t path_intern_locked(const char *path)
{
	/* room for the paths of a typical run (import numpy: ~160) at once:
	 * each growth maps a new table and unmaps the old, and an unmapping
	 * waits for the TLBs of the CPUs our threads ran on */
	if (!path_index.cap)
		pp_hash_reserve(&path_index, 512);
	uint32_t h = pp_hash_str(path);
	for (uint32_t it = 0, id; pp_hash_next(&path_index, h, &it, &id);)
		if (strcmp(paths[id].path, path) == 0)
			return id + 1;
	if (n_paths == cap_paths) {
		uint32_t cap = cap_paths ? cap_paths * 2 : 256;
		pathent *p = map_grow(paths, cap_paths * sizeof *p, cap * sizeof *p);
		if (!p)
			return 0;
		paths = p;
		cap_paths = cap;
	}
	char *copy = str_copy(path, strlen(path));
	if (!copy || pp_hash_add(&path_index, h, n_paths) != 0)
		return 0;
	pathent *e = &paths[n_paths];
	memset(e, 0, sizeof *e);
	e->path = copy;
	return ++n_paths;
}

/* Bounded string building without stdio (snprintf is not async-signal-safe). */
static size_t put_str(char *out, size_t outlen, size_t at, const char *s)
{
	while (*s && at + 1 < outlen)
		out[at++] = *s++;
	out[at] = 0;
	return at;
}

static size_t put_int(char *out, size_t outlen, size_t at, int v)
{
	char d[16];
	int n = 0;
	unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
	do
		d[n++] = (char)('0' + u % 10);
	while ((u /= 10) && n < 15);
	if (v < 0)
		d[n++] = '-';
	while (n && at + 1 < outlen)
		out[at++] = d[--n];
	out[at] = 0;
	return at;
}

/* An absolute-ish name for a path opened relative to dirfd. */
static void full_path(int dirfd, const char *path, char *out, size_t outlen)
{
	if (!path) {
		put_str(out, outlen, 0, "?");
		return;
	}
	if (path[0] == '/' || dirfd == AT_FDCWD) {
		put_str(out, outlen, 0, path);
		return;
	}
	fdent *d = fd_slot(dirfd);
	uint32_t id = d ? atomic_load(&d->path) : 0;
	pthread_mutex_lock(&paths_lock);
	size_t at = 0;
	if (id && id <= n_paths) {
		at = put_str(out, outlen, 0, paths[id - 1].path);
		at = put_str(out, outlen, at, "/");
	}
	put_str(out, outlen, at, path);
	pthread_mutex_unlock(&paths_lock);
}

static uint32_t intern(const char *path)
{
	pthread_mutex_lock(&paths_lock);
	uint32_t id = path_intern_locked(path);
	pthread_mutex_unlock(&paths_lock);
	return id;
}

/* A descriptor we did not see opened (stdin, pipes, sockets, inherited):
 * name it once from /proc/self/fd. */
static uint32_t fd_path(int fd, fdent *e)
{
	uint32_t id = atomic_load_explicit(&e->path, memory_order_relaxed);
	if (PPA_LIKELY(id))
		return id;
	char link[64], buf[512];
	put_int(link, sizeof link, put_str(link, sizeof link, 0, "/proc/self/fd/"), fd);
	ssize_t n = readlink(link, buf, sizeof buf - 1);
	if (n <= 0)
		put_str(buf, sizeof buf, put_int(buf, sizeof buf, put_str(buf, sizeof buf, 0, "<fd "), fd), ">");
	else {
		buf[n] = 0;
		/* pipe:[1234] → pipe: one row for all pipes, not one per inode */
		char *br = strstr(buf, ":[");
		if (br && (strncmp(buf, "pipe", 4) == 0 || strncmp(buf, "socket", 6) == 0))
			br[1] = 0;
	}
	id = intern(buf);
	atomic_store_explicit(&e->path, id, memory_order_relaxed);
	return id;
}

static inline void fd_count(int fd, int op, uint64_t bytes, uint64_t ns, int small)
{
	fdent *e = fd_slot(fd);
	if (!e)
		return;
	fd_path(fd, e);
	atomic_fetch_add_explicit(&e->c[op][C_CALLS], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&e->c[op][C_BYTES], bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&e->c[op][C_NS], ns, memory_order_relaxed);
	if (small)
		atomic_fetch_add_explicit(&e->c[op][C_SMALL], 1, memory_order_relaxed);
}

/* Moves a descriptor's counters into its path's totals. */
static void fd_fold(int fd)
{
	fdent *e = fd_slot(fd);
	if (!e)
		return;
	uint32_t id = atomic_exchange(&e->path, 0);
	uint64_t v[OP_N][C_N];
	for (int o = 0; o < OP_N; o++)
		for (int c = 0; c < C_N; c++)
			v[o][c] = atomic_exchange_explicit(&e->c[o][c], 0, memory_order_relaxed);
	if (!id)
		return;
	pthread_mutex_lock(&paths_lock);
	if (id <= n_paths)
		for (int o = 0; o < OP_N; o++)
			for (int c = 0; c < C_N; c++)
				paths[id - 1].c[o][c] += v[o][c];
	pthread_mutex_unlock(&paths_lock);
}

static void opened(int fd, int dirfd, const char *path, uint64_t ns)
{
	char full[4096];
	full_path(dirfd, path, full, sizeof full);
	if (fd < 0) {
		uint32_t id = intern(full);
		pthread_mutex_lock(&paths_lock);
		if (id && id <= n_paths) {
			paths[id - 1].c[OP_OPEN_FAILED][C_CALLS]++;
			paths[id - 1].c[OP_OPEN_FAILED][C_NS] += ns;
		}
		pthread_mutex_unlock(&paths_lock);
		return;
	}
	fdent *e = fd_slot(fd);
	if (!e)
		return;
	fd_fold(fd); /* a descriptor closed behind our back (close_range, dup2) */
	atomic_store(&e->path, intern(full));
	atomic_fetch_add_explicit(&e->c[OP_OPEN][C_CALLS], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&e->c[OP_OPEN][C_NS], ns, memory_order_relaxed);
}

#define TRACKING() (PPA_LIKELY(!ppa_guard && !atomic_load_explicit(&ppa_quiet, memory_order_relaxed)))

static int open_common(int dirfd, const char *path, int flags, mode_t mode, int at)
{
	uint64_t t0 = ppa_mono();
	int fd = at ? REAL(openat)(dirfd, path, flags, mode) : REAL(open)(path, flags, mode);
	if (TRACKING()) {
		ppa_guard_set(1);
		opened(fd, at ? dirfd : AT_FDCWD, path, ppa_mono() - t0);
		ppa_guard_set(0);
	}
	return fd;
}

static mode_t va_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

PPA_API int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return open_common(AT_FDCWD, path, flags, m, 0);
}
PPA_API int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return open_common(AT_FDCWD, path, flags, m, 0);
}
PPA_API int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return open_common(dirfd, path, flags, m, 1);
}
PPA_API int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return open_common(dirfd, path, flags, m, 1);
}
/* _FORTIFY_SOURCE builds call these */
PPA_API int __open_2(const char *path, int flags) { return open_common(AT_FDCWD, path, flags, 0, 0); }
PPA_API int __open64_2(const char *path, int flags) { return open_common(AT_FDCWD, path, flags, 0, 0); }
PPA_API int __openat_2(int d, const char *path, int flags) { return open_common(d, path, flags, 0, 1); }
PPA_API int __openat64_2(int d, const char *path, int flags) { return open_common(d, path, flags, 0, 1); }
PPA_API int creat(const char *path, mode_t mode)
{
	return open_common(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, 0);
}
PPA_API int creat64(const char *path, mode_t mode)
{
	return open_common(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, 0);
}

/* The program may close or replace any descriptor, the spool's included:
 * the spool steps aside first and stays out of the way until the call
 * returned (pp_spool_fd_enter/leave), so its chunks never land in the
 * program's file. */
PPA_API int dup2(int oldfd, int newfd)
{
	if (oldfd == newfd || newfd < 0)
		return REAL(dup2)(oldfd, newfd);
	pp_spool_fd_enter((unsigned int)newfd, (unsigned int)newfd);
	int r = REAL(dup2)(oldfd, newfd);
	pp_spool_fd_leave();
	return r;
}

PPA_API int dup3(int oldfd, int newfd, int flags)
{
	if (newfd < 0)
		return REAL(dup3)(oldfd, newfd, flags);
	pp_spool_fd_enter((unsigned int)newfd, (unsigned int)newfd);
	int r = REAL(dup3)(oldfd, newfd, flags);
	pp_spool_fd_leave();
	return r;
}

PPA_API int close_range(unsigned int first, unsigned int last, int flags)
{
	if (flags & CLOSE_RANGE_CLOEXEC) /* closes nothing; the spool is close-on-exec already */
		return REAL(close_range)(first, last, flags);
	pp_spool_fd_enter(first, last);
	int r = REAL(close_range)(first, last, flags);
	pp_spool_fd_leave();
	return r;
}

PPA_API int close(int fd)
{
	if (TRACKING()) {
		ppa_guard_set(1);
		fd_fold(fd);
		ppa_guard_set(0);
	}
	if (fd < 0)
		return REAL(close)(fd);
	pp_spool_fd_enter((unsigned int)fd, (unsigned int)fd);
	int r = REAL(close)(fd);
	pp_spool_fd_leave();
	return r;
}

static inline void rw_done(int fd, int op, ssize_t r, size_t asked, uint64_t t0)
{
	if (!TRACKING())
		return;
	ppa_guard_set(1);
	fd_count(fd, op, r > 0 ? (uint64_t)r : 0, ppa_mono() - t0, asked <= SMALL_IO);
	ppa_guard_set(0);
}

PPA_API ssize_t read(int fd, void *buf, size_t n)
{
	uint64_t t0 = ppa_mono();
	ssize_t r = REAL(read)(fd, buf, n);
	rw_done(fd, OP_READ, r, n, t0);
	return r;
}
PPA_API ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		abort(); /* what glibc's __read_chk does (via __chk_fail) */
	return read(fd, buf, n);
}
PPA_API ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	uint64_t t0 = ppa_mono();
	ssize_t r = REAL(pread)(fd, buf, n, off);
	rw_done(fd, OP_READ, r, n, t0);
	return r;
}
PPA_API ssize_t pread64(int fd, void *buf, size_t n, off_t off) { return pread(fd, buf, n, off); }
PPA_API ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	if (n > buflen)
		abort();
	return pread(fd, buf, n, off);
}
PPA_API ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	if (n > buflen)
		abort();
	return pread(fd, buf, n, off);
}
PPA_API ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	uint64_t t0 = ppa_mono();
	ssize_t r = REAL(readv)(fd, iov, cnt);
	size_t asked = 0;
	for (int i = 0; i < cnt; i++)
		asked += iov[i].iov_len;
	rw_done(fd, OP_READ, r, asked, t0);
	return r;
}
PPA_API ssize_t write(int fd, const void *buf, size_t n)
{
	uint64_t t0 = ppa_mono();
	ssize_t r = REAL(write)(fd, buf, n);
	rw_done(fd, OP_WRITE, r, n, t0);
	return r;
}
PPA_API ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	uint64_t t0 = ppa_mono();
	ssize_t r = REAL(pwrite)(fd, buf, n, off);
	rw_done(fd, OP_WRITE, r, n, t0);
	return r;
}
PPA_API ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }
PPA_API ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	uint64_t t0 = ppa_mono();
	ssize_t r = REAL(writev)(fd, iov, cnt);
	size_t asked = 0;
	for (int i = 0; i < cnt; i++)
		asked += iov[i].iov_len;
	rw_done(fd, OP_WRITE, r, asked, t0);
	return r;
}

/* ---- stdio: fopen/fread/fwrite/fclose reach the PLT; the reads inside
 * them do not, so they are counted here against the stream's descriptor */
/* The process's own /proc stat file ("/proc/self/stat", "/proc/<pid>/stat")
 * read through stdio: field 20 is its thread count, and the agent's own
 * threads are not the program's. CPython 3.12+ reads it there before
 * os.fork() and warns "This process is multi-threaded" (a DeprecationWarning
 * on stderr) when it is above one: every fork of a single-threaded Python
 * warned under `record`. The stream is then the file's text with the count
 * less the agent's live threads, in a memory file (memfd). NULL: not that
 * file, or no thread of ours, or it could not be made (the real file is
 * opened then). */
static int own_stat_path(const char *path)
{
	if (strcmp(path, "/proc/self/stat") == 0)
		return 1;
	char mine[40];
	snprintf(mine, sizeof mine, "/proc/%d/stat", (int)getpid());
	return strcmp(path, mine) == 0;
}

static FILE *stat_without_agent(const char *path, const char *mode)
{
	if (mode[0] != 'r' || strchr(mode, '+') || strchr(mode, 'w') || strchr(mode, 'a') || !own_stat_path(path))
		return NULL;
	int own = ppa_own_threads();
	if (own <= 0)
		return NULL;
	char buf[4096];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	/* after the command's name (in parentheses, any characters): fields 3.. */
	char *p = strrchr(buf, ')');
	int field = 2;
	while (p && *p && field < 20) {
		p = strchr(p, ' ');
		if (p)
			p++, field++;
	}
	if (!p || field != 20 || *p < '0' || *p > '9')
		return NULL;
	char *end;
	long threads = strtol(p, &end, 10);
	long shown = threads - own > 1 ? threads - own : 1;
	char out[4096 + 32];
	int w = snprintf(out, sizeof out, "%.*s%ld%s", (int)(p - buf), buf, shown, end);
	if (w <= 0 || (size_t)w >= sizeof out)
		return NULL;
	int m = (int)syscall(SYS_memfd_create, "stat", strchr(mode, 'e') ? MFD_CLOEXEC : 0u);
	if (m < 0)
		return NULL;
	if (syscall(SYS_write, m, out, (size_t)w) != w || syscall(SYS_lseek, m, 0, SEEK_SET) != 0) {
		syscall(SYS_close, m);
		return NULL;
	}
	FILE *f = fdopen(m, mode);
	if (!f)
		syscall(SYS_close, m);
	return f;
}

static FILE *fopen_common(const char *path, const char *mode)
{
	uint64_t t0 = ppa_mono();
	FILE *f = path && mode ? stat_without_agent(path, mode) : NULL;
	if (!f)
		f = REAL(fopen)(path, mode);
	if (TRACKING()) {
		ppa_guard_set(1);
		opened(f ? fileno(f) : -1, AT_FDCWD, path, ppa_mono() - t0);
		ppa_guard_set(0);
	}
	return f;
}
PPA_API FILE *fopen(const char *path, const char *mode) { return fopen_common(path, mode); }
PPA_API FILE *fopen64(const char *path, const char *mode) { return fopen_common(path, mode); }

PPA_API size_t fread(void *buf, size_t size, size_t n, FILE *f)
{
	uint64_t t0 = ppa_mono();
	size_t r = REAL(fread)(buf, size, n, f);
	if (TRACKING()) {
		ppa_guard_set(1);
		fd_count(fileno(f), OP_FREAD, (uint64_t)r * size, ppa_mono() - t0, size * n <= SMALL_IO);
		ppa_guard_set(0);
	}
	return r;
}
PPA_API size_t __fread_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *f)
{
	if (size && n > buflen / size)
		abort();
	return fread(buf, size, n, f);
}
PPA_API size_t fwrite(const void *buf, size_t size, size_t n, FILE *f)
{
	uint64_t t0 = ppa_mono();
	size_t r = REAL(fwrite)(buf, size, n, f);
	if (TRACKING()) {
		ppa_guard_set(1);
		fd_count(fileno(f), OP_FWRITE, (uint64_t)r * size, ppa_mono() - t0, size * n <= SMALL_IO);
		ppa_guard_set(0);
	}
	return r;
}
PPA_API int fclose(FILE *f)
{
	if (TRACKING() && f) {
		ppa_guard_set(1);
		fd_fold(fileno(f));
		ppa_guard_set(0);
	}
	return REAL(fclose)(f);
}

/* ---- mmap ---- */
PPA_API void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	uint64_t t0 = ppa_mono();
	void *p = REAL(mmap)(addr, len, prot, flags, fd, off);
	if (TRACKING() && p != MAP_FAILED) {
		uint64_t ns = ppa_mono() - t0;
		ppa_tstats *t = ppa_self();
		ppa_add(&t->mmap_calls, 1);
		ppa_add(&t->mmap_bytes, len);
		ppa_add(&t->mmap_ns, ns);
		if (fd >= 0 && !(flags & MAP_ANONYMOUS)) {
			ppa_guard_set(1);
			fd_count(fd, OP_MMAP, len, ns, 0);
			ppa_guard_set(0);
		}
	}
	return p;
}
PPA_API void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}
PPA_API int munmap(void *addr, size_t len)
{
	int r = REAL(munmap)(addr, len);
	if (TRACKING() && r == 0) {
		ppa_tstats *t = ppa_self();
		ppa_add(&t->munmap_calls, 1);
		ppa_add(&t->munmap_bytes, len);
	}
	return r;
}

/* ---- rows ---- */
void ppa_io_emit(void) {}

void ppa_io_flush_all(void)
{
	int end = atomic_load(&fds_end);
	if (atomic_load(&fds_state) == 2 && fds)
		for (int fd = 0; fd < end; fd++)
			if (atomic_load_explicit(&fds[fd].path, memory_order_relaxed)) {
				/* still open: fold, but keep the name for later calls */
				uint32_t id = atomic_load(&fds[fd].path);
				fd_fold(fd);
				atomic_store(&fds[fd].path, id);
			}
	pthread_mutex_lock(&paths_lock);
	for (uint32_t i = 0; i < n_paths; i++) {
		pathent *e = &paths[i];
		for (int o = 0; o < OP_N; o++) {
			if (!e->c[o][C_CALLS])
				continue;
			pp_row_io(0, e->path, op_names[o], (int64_t)e->c[o][C_CALLS], (int64_t)e->c[o][C_BYTES],
				  (int64_t)e->c[o][C_NS], (int64_t)e->c[o][C_SMALL]);
			memset(e->c[o], 0, sizeof e->c[o]);
		}
	}
	pthread_mutex_unlock(&paths_lock);
}

void ppa_io_after_fork(void)
{
	/* descriptors are inherited, counts are not: the child's run starts at 0 */
	int end = atomic_load(&fds_end);
	if (atomic_load(&fds_state) == 2 && fds)
		for (int fd = 0; fd < end; fd++)
			if (atomic_load_explicit(&fds[fd].path, memory_order_relaxed))
				for (int o = 0; o < OP_N; o++)
					for (int c = 0; c < C_N; c++)
						atomic_store_explicit(&fds[fd].c[o][c], 0, memory_order_relaxed);
	pthread_mutex_init(&paths_lock, NULL);
	for (uint32_t i = 0; i < n_paths; i++)
		memset(paths[i].c, 0, sizeof paths[i].c);
}
