/*
 * agent_mem.c — the recorder's memory inside the agent: never the
 * program's malloc.
 *
 * glibc gives every thread that first calls malloc — or free — an arena
 * of its own: 64 MiB of address space (128 MiB while it is being
 * aligned). The agent's two threads (stats thread, spool writer) would
 * take two, which a program run under a tight RLIMIT_AS cannot spare.
 * The recorder is linked with its malloc family renamed to ppa_libc_*
 * (agent_libc.c), which come here: small blocks from power-of-two free
 * lists carved out of 256 KiB anonymous mappings, large ones (event
 * buffers, the side buffer) mapped one each and remapped when they grow.
 *
 * One lock. Fork: registered (ppa_mem_init, from the constructor) before
 * the recorder's own atfork handlers, so the lock is taken after the
 * recorder's locks in the parent and re-initialised before the recorder
 * reopens its spool in the child.
 */
#include "agent_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MIN_SHIFT 5            /* 32-byte blocks (16 of them header) */
#define MAX_SHIFT 15           /* 32 KiB: larger blocks are mapped one each */
#define NCLASS (MAX_SHIFT - MIN_SHIFT + 1)
#define SLAB (256u << 10)
#define MAGIC 0x6d6d7070u      /* "ppmm" */
#define LARGE 0xffu

/* 16 bytes before every block: payloads stay 16-byte aligned */
typedef struct hdr {
	uint32_t magic, cls;
	size_t map_len;        /* LARGE: the whole mapping, header included */
} hdr;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static void *free_list[NCLASS];
static char *slab_p, *slab_end;

static void atfork_prepare(void) { pthread_mutex_lock(&mem_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&mem_lock); }
static void atfork_child(void) { pthread_mutex_init(&mem_lock, NULL); }

void ppa_mem_init(void)
{
	static int done;
	if (!done) {
		done = 1;
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	}
}

static size_t page_round(size_t n)
{
	size_t pg = 4096;
	return (n + pg - 1) & ~(pg - 1);
}

static hdr *large_alloc(size_t n)
{
	if (n > SIZE_MAX / 2)
		return NULL;
	size_t len = page_round(n + sizeof(hdr));
	hdr *h = ppa_map(len); /* zeroed */
	if (!h)
		return NULL;
	h->magic = MAGIC;
	h->cls = LARGE;
	h->map_len = len;
	return h;
}

static hdr *small_alloc(unsigned cls)
{
	size_t sz = (size_t)1 << cls;
	pthread_mutex_lock(&mem_lock);
	hdr *h = free_list[cls - MIN_SHIFT];
	if (h) {
		free_list[cls - MIN_SHIFT] = *(void **)(h + 1);
	} else {
		if ((size_t)(slab_end - slab_p) < sz) {
			char *s = ppa_map(SLAB); /* the rest of the old slab is left unused */
			if (!s) {
				pthread_mutex_unlock(&mem_lock);
				return NULL;
			}
			slab_p = s;
			slab_end = s + SLAB;
		}
		h = (hdr *)slab_p;
		slab_p += sz;
	}
	pthread_mutex_unlock(&mem_lock);
	h->magic = MAGIC;
	h->cls = cls;
	return h;
}

static unsigned class_of(size_t n)
{
	unsigned c = MIN_SHIFT;
	while (((size_t)1 << c) < n + sizeof(hdr))
		c++;
	return c;
}

static size_t usable(const hdr *h)
{
	return h->cls == LARGE ? h->map_len - sizeof(hdr) : ((size_t)1 << h->cls) - sizeof(hdr);
}

void *ppa_mem_alloc(size_t n)
{
	hdr *h = n > ((size_t)1 << MAX_SHIFT) - sizeof(hdr) ? large_alloc(n) : small_alloc(class_of(n));
	return h ? h + 1 : NULL;
}

void *ppa_mem_calloc(size_t n, size_t m)
{
	if (m && n > SIZE_MAX / m)
		return NULL;
	size_t sz = n * m;
	void *p = ppa_mem_alloc(sz);
	hdr *h = p ? (hdr *)p - 1 : NULL;
	if (h && h->cls != LARGE) /* large blocks are fresh mappings */
		memset(p, 0, sz);
	return p;
}

void ppa_mem_free(void *p)
{
	if (!p)
		return;
	hdr *h = (hdr *)p - 1;
	if (h->magic != MAGIC)
		return; /* not ours: never handed out, never freed */
	if (h->cls == LARGE) {
		h->magic = 0;
		ppa_unmap(h, h->map_len);
		return;
	}
	pthread_mutex_lock(&mem_lock);
	*(void **)p = free_list[h->cls - MIN_SHIFT];
	free_list[h->cls - MIN_SHIFT] = h;
	pthread_mutex_unlock(&mem_lock);
}

void *ppa_mem_realloc(void *p, size_t n)
{
	if (!p)
		return ppa_mem_alloc(n);
	hdr *h = (hdr *)p - 1;
	if (n <= usable(h))
		return p;
	if (h->cls == LARGE && n <= SIZE_MAX / 2) {
		size_t len = page_round(n + sizeof(hdr));
		long r = syscall(SYS_mremap, h, h->map_len, len, (long)MREMAP_MAYMOVE);
		if (r == -1)
			return NULL;
		h = (hdr *)r;
		h->map_len = len;
		return h + 1;
	}
	void *q = ppa_mem_alloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, usable(h));
	ppa_mem_free(p);
	return q;
}
