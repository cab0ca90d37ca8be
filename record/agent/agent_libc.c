/*
 * agent_libc.c — the recorder linked into the agent calls libc through
 * these (its objects are copied with `objcopy --redefine-syms`, see
 * CMakeLists.txt), so the recorder's own allocations, spool writes and
 * writer thread never reach the agent's hooks and never count as the
 * program's work.
 */
#include "agent_internal.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define NEXT(type, name)                                                       \
	static __typeof__(type) p_;                                            \
	if (!p_)                                                               \
		p_ = (__typeof__(type))dlsym(RTLD_NEXT, name)

/* never the program's malloc: agent_mem.c says why */
void *ppa_libc_malloc(size_t n) { return ppa_mem_alloc(n); }
void ppa_libc_free(void *p) { ppa_mem_free(p); }
void *ppa_libc_calloc(size_t n, size_t m) { return ppa_mem_calloc(n, m); }
void *ppa_libc_realloc(void *p, size_t n) { return ppa_mem_realloc(p, n); }

char *ppa_libc_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = ppa_mem_alloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

int ppa_libc_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	NEXT(int (*)(const char *, int, ...), "open");
	return p_(path, flags, mode);
}

int ppa_libc_close(int fd)
{
	NEXT(int (*)(int), "close");
	return p_(fd);
}

ssize_t ppa_libc_read(int fd, void *b, size_t n)
{
	NEXT(ssize_t(*)(int, void *, size_t), "read");
	return p_(fd, b, n);
}

ssize_t ppa_libc_write(int fd, const void *b, size_t n)
{
	NEXT(ssize_t(*)(int, const void *, size_t), "write");
	return p_(fd, b, n);
}

ssize_t ppa_libc_writev(int fd, const struct iovec *iov, int cnt)
{
	NEXT(ssize_t(*)(int, const struct iovec *, int), "writev");
	return p_(fd, iov, cnt);
}

ssize_t ppa_libc_pwrite(int fd, const void *b, size_t n, off_t off)
{
	NEXT(ssize_t(*)(int, const void *, size_t, off_t), "pwrite");
	return p_(fd, b, n, off);
}

FILE *ppa_libc_fopen(const char *path, const char *mode)
{
	NEXT(FILE * (*)(const char *, const char *), "fopen");
	int g = ppa_guard;
	ppa_guard_set(1); /* its FILE buffer is ours, not the program's */
	FILE *f = p_(path, mode);
	ppa_guard_set(g);
	return f;
}

int ppa_libc_fclose(FILE *f)
{
	NEXT(int (*)(FILE *), "fclose");
	int g = ppa_guard;
	ppa_guard_set(1);
	int r = p_(f);
	ppa_guard_set(g);
	return r;
}

void *ppa_libc_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
	NEXT(void *(*)(void *, size_t, int, int, int, off_t), "mmap");
	return p_(a, n, prot, flags, fd, off);
}

int ppa_libc_munmap(void *a, size_t n)
{
	NEXT(int (*)(void *, size_t), "munmap");
	return p_(a, n);
}

/* zlib's crc32, looked up in zlib itself: a program (with exported
 * symbols, as python's are) may define its own crc32, and the global
 * lookup would find the program's first. */
unsigned long ppa_libc_crc32(unsigned long crc, const unsigned char *buf, unsigned int len)
{
	static unsigned long (*z)(unsigned long, const unsigned char *, unsigned int);
	if (!z) {
		void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
		if (!h)
			h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
		if (h)
			z = (unsigned long (*)(unsigned long, const unsigned char *, unsigned int))dlsym(h, "crc32");
		if (!z)
			return 0; /* unreachable: the agent is linked against zlib */
	}
	return z(crc, buf, len);
}

/* The recorder's writer thread: marked as ours for its whole life. */
typedef struct start { void *(*fn)(void *); void *arg; } start;

static void *own_thread(void *p)
{
	start s = *(start *)p;
	ppa_mem_free(p);
	ppa_guard_set(1);
	return s.fn(s.arg);
}

int ppa_libc_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	NEXT(int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *), "pthread_create");
	start *s = ppa_mem_alloc(sizeof *s);
	if (!s)
		return p_(t, a, fn, arg);
	s->fn = fn;
	s->arg = arg;
	pthread_attr_t small;
	if (!a) {
		pthread_attr_init(&small);
		pthread_attr_setstacksize(&small, PPA_THREAD_STACK);
	}
	int r = p_(t, a ? a : &small, own_thread, s);
	if (!a)
		pthread_attr_destroy(&small);
	if (r)
		ppa_mem_free(s);
	return r;
}
