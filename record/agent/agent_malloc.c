/*
 * agent_malloc.c — the malloc family, heaptrack style: the real functions
 * are resolved lazily in every hook; dlsym's own calloc during resolution
 * is served from a static bootstrap pool that free() recognises and
 * ignores; a thread-local guard keeps the agent's own allocations out of
 * the program's numbers.
 *
 * Default mode counts calls and bytes per size class and times one call in
 * 1024 (two clock reads on every call would triple the cost of a malloc/free
 * pair on a VM clock); the reported time is that sample scaled to all calls.
 * Bytes in use come from the chunk header when the allocator is glibc's
 * (what malloc_usable_size computes, without the call), else from
 * malloc_usable_size. The histogram counts requests (a failed one too) by
 * requested size, so it is counted before the call and the hot path keeps
 * a single register across it. The call to time is picked by a down-counter
 * per thread (ppa_countdown), one for allocations and one for frees.
 *
 * The hot paths handle only blocks in the heap proper: a chunk with the
 * IS_MMAPPED bit (a large block glibc mapped on its own, or a block of the
 * bootstrap pool, whose planted header carries that bit) goes out of line,
 * so free() tests one header bit instead of the pool's address range and
 * the usable size is two instructions. Chunks of 64 KiB or more go out of
 * line too, in the same test (CHUNK_BIG): the live table of memory kept
 * across steps (agent_kept.c) records them with their Python frames, and
 * forgets them when freed.
 */
#include "agent_internal.h"
#include "phaseprof.h"
#include "pp_rows.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#elif defined(__x86_64__)
#include <cpuid.h>
#endif

#define TIME_MASK 1023u

static void *(*r_malloc)(size_t);
static void (*r_free)(void *);
static void *(*r_calloc)(size_t, size_t);
static void *(*r_realloc)(void *, size_t);
static int (*r_posix_memalign)(void **, size_t, size_t);
static void *(*r_aligned_alloc)(size_t, size_t);
static void *(*r_memalign)(size_t, size_t);
static void *(*r_valloc)(size_t);
static void *(*r_pvalloc)(size_t);
static size_t (*r_usable)(void *);
static int glibc_heap;
static void calibrate_clock(void);

/* glibc chunk: size word before the payload; low bits are flags
 * (IS_MMAPPED = 2). An in-use chunk's payload is its size minus the
 * header word (two for mmapped chunks). */
#define CHUNK_MMAPPED ((size_t)2)
/* One test for "out of line": the IS_MMAPPED bit, or a chunk of 64 KiB or
 * more (bits 16 and up: PPA_KEPT_MIN), which the live table may hold; the
 * other flag bits (PREV_INUSE, NON_MAIN_ARENA) and sizes below 64 KiB are
 * masked out. As cheap as the bit test alone. */
#define CHUNK_BIG (~(size_t)0xfffd)
_Static_assert(PPA_KEPT_MIN == 0x10000, "CHUNK_BIG assumes 64 KiB");

static inline size_t chunk_word(const void *p) { return ((const size_t *)p)[-1]; }

static inline size_t glibc_usable(void *p)
{
	size_t sz = chunk_word(p);
	return (sz & ~(size_t)7) - sizeof(size_t) - ((sz & CHUNK_MMAPPED) << 2);
}

/* the same for a chunk known not to be mmapped */
static inline size_t heap_usable(size_t sz) { return (sz & ~(size_t)7) - sizeof(size_t); }

static inline size_t usable(void *p)
{
	return PPA_LIKELY(glibc_heap) ? glibc_usable(p) : r_usable(p);
}

static int has_lzcnt;

/* From the loader's copy of cpuid (glibc >= 2.33), not cpuid itself nor
 * __builtin_cpu_init: in a VM every cpuid traps to the hypervisor (~20 us
 * each here), and libgcc's CPU probe runs a dozen of them in each of the
 * agent's two copies. */
static int cpu_has_lzcnt(void)
{
#if defined(__x86_64__) && __has_include(<sys/platform/x86.h>)
	return CPU_FEATURE_ACTIVE(LZCNT);
#elif defined(__x86_64__)
	unsigned a, b, c, d;
	return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & bit_LZCNT);
#else
	return 0;
#endif
}

/* The hooks' fast path applies (glibc's chunk layout, default mode, an
 * lzcnt instruction): the slow paths publish the thread's counters to it
 * only then. */
static inline int fast_ok(void) { return glibc_heap && has_lzcnt && !ppa_cfg.detailed; }

/* dlsym may call calloc before we know where calloc is */
static _Alignas(64) char boot_pool[16384];
static size_t boot_used;
static int booting;

/* Each block gets a chunk word with IS_MMAPPED set, so free()'s header
 * test sends it out of line (where in_boot catches it) without a range
 * check on the hot path. */
static void *boot_alloc(size_t n)
{
	size_t off = ((boot_used + 15) & ~(size_t)15) + 16;
	if (off + n > sizeof boot_pool)
		return NULL;
	boot_used = off + n;
	((size_t *)(boot_pool + off))[-1] = CHUNK_MMAPPED;
	return boot_pool + off;
}

static inline int in_boot(const void *p)
{
	return (const char *)p >= boot_pool && (const char *)p < boot_pool + sizeof boot_pool;
}

void ppa_malloc_resolve(void)
{
	if (r_malloc || booting)
		return;
	booting = 1;
	r_calloc = dlsym(RTLD_NEXT, "calloc");
	r_free = dlsym(RTLD_NEXT, "free");
	r_realloc = dlsym(RTLD_NEXT, "realloc");
	r_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	r_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	r_memalign = dlsym(RTLD_NEXT, "memalign");
	r_valloc = dlsym(RTLD_NEXT, "valloc");
	r_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	r_usable = dlsym(RTLD_NEXT, "malloc_usable_size");
	void *m = dlsym(RTLD_NEXT, "malloc");
	struct link_map *lm = m ? ppa_object_of(m) : NULL;
	glibc_heap = lm && lm->l_name && strstr(lm->l_name, "/libc.so.6") ? 1 : 0;
	const char *tun = getenv("GLIBC_TUNABLES");
	if (getenv("MALLOC_CHECK_") || (tun && (strstr(tun, "malloc.check") || strstr(tun, "mem.tagging"))))
		glibc_heap = 0; /* checking / tagging change the chunk layout */
	has_lzcnt = cpu_has_lzcnt();
	calibrate_clock();
	__atomic_store_n(&r_malloc, m, __ATOMIC_RELEASE);
	booting = 0;
}

#define RESOLVE()                                                              \
	do {                                                                   \
		if (PPA_UNLIKELY(!r_malloc))                                   \
			ppa_malloc_resolve();                                  \
	} while (0)

/* For the agent's own bookkeeping (never counted). */
void *ppa_real_malloc(size_t n) { RESOLVE(); return r_malloc ? r_malloc(n) : boot_alloc(n); }
void ppa_real_free(void *p)
{
	if (p && !in_boot(p)) {
		RESOLVE();
		r_free(p);
	}
}

/* the slot of hist[]: n's leading zero bits, 64 for 0 */
static inline unsigned size_slot(size_t n)
{
	return n ? (unsigned)__builtin_clzll((unsigned long long)n) : 64u;
}

/* The same in one instruction, for the fast path (which runs only where
 * the CPU has lzcnt: fast_ok). */
static inline size_t size_slot_lzcnt(size_t n)
{
#if defined(__x86_64__)
	size_t z;
	__asm__("lzcnt %1, %0" : "=r"(z) : "rm"(n) : "cc");
	return z;
#else
	return size_slot(n);
#endif
}

static inline int countdown_alloc(ppa_tstats *t)
{
	if (PPA_LIKELY(!ppa_countdown(&t->alloc_left)))
		return 0;
	atomic_store_explicit(&t->alloc_left, TIME_MASK, memory_order_relaxed);
	return 1;
}

/* Counts the request (the histogram is the call count too); says whether
 * to time it. */
static inline int count_request(ppa_tstats *t, size_t n)
{
	ppa_add(&t->hist[size_slot(n)], 1);
	if (PPA_LIKELY(!ppa_countdown(&t->alloc_left)))
		return 0;
	atomic_store_explicit(&t->alloc_left, TIME_MASK, memory_order_relaxed);
	return 1;
}

static inline int count_free(ppa_tstats *t, size_t usable_bytes)
{
	ppa_add(&t->free_calls, 1);
	ppa_add(&t->free_usable, usable_bytes);
	if (PPA_LIKELY(!ppa_countdown(&t->free_left)))
		return 0;
	atomic_store_explicit(&t->free_left, TIME_MASK, memory_order_relaxed);
	return 1;
}

/* Detailed mode: one allocation in N becomes an event row. */
static void sample_event(ppa_tstats *t, size_t n)
{
	if (!ppa_cfg.detailed || !atomic_load_explicit(&ppa_recording, memory_order_relaxed))
		return;
	uint64_t c = ppa_inc(&t->detail_seq);
	if ((c % (uint64_t)(ppa_cfg.alloc_sample > 0 ? ppa_cfg.alloc_sample : 1)) != 0)
		return;
	ppa_guard_set(1);
	pp_row_allocations(t->tid, (int64_t)pp_now(), "malloc", "alloc", 1, (int64_t)n, PP_NULL,
			   PP_NULL, PP_NULL, PP_NULL);
	ppa_guard_set(0);
}

static inline void account_alloc(ppa_tstats *t, size_t n, void *p)
{
	if (PPA_UNLIKELY(!p))
		return;
	/* requested bytes are the histogram's; totals use the usable size
	 * (one counter less on the hot path) */
	ppa_add(&t->alloc_usable, usable(p));
	if (PPA_UNLIKELY(ppa_cfg.detailed))
		sample_event(t, n);
	if (PPA_UNLIKELY(n >= PPA_KEPT_MIN))
		ppa_kept_alloc(p, n);
}

/* What two back-to-back clock reads cost (a VM clock: tens of ns, several
 * times a malloc): subtracted from every timed call. */
static uint64_t clock_cost;

static void calibrate_clock(void)
{
	/* the median of 63 pairs: the typical cost, not the luckiest */
	uint64_t d[63];
	for (int i = 0; i < 63; i++) {
		uint64_t a = ppa_mono(), b = ppa_mono();
		d[i] = b - a;
	}
	for (int i = 1; i < 63; i++)
		for (int j = i; j > 0 && d[j - 1] > d[j]; j--) {
			uint64_t x = d[j];
			d[j] = d[j - 1];
			d[j - 1] = x;
		}
	clock_cost = d[31];
}

/* A timed call longer than this was descheduled mid-call (64 threads on 2
 * cores): the wait is not time inside the allocator, and scaled by 1024 it
 * would swamp the estimate. */
#define TIMED_MAX_NS 200000u

static inline void account_time(ppa_tstats *t, uint64_t t0)
{
	uint64_t dt = ppa_mono() - t0;
	if (dt > TIMED_MAX_NS)
		dt = TIMED_MAX_NS;
	ppa_add(&t->timed_calls, 1);
	ppa_add(&t->timed_ns, dt > clock_cost ? dt - clock_cost : 0);
}

/* The hot paths below do only: one TLS load, the call, three counter
 * updates, one register kept across the call. Everything else (first call,
 * guard, timed call, detailed mode, another allocator) is out of line. */
static __attribute__((noinline)) void *malloc_slow(size_t n)
{
	if (!r_malloc) {
		if (booting)
			return boot_alloc(n);
		ppa_malloc_resolve();
	}
	if (ppa_guard)
		return r_malloc(n);
	ppa_tstats *t = ppa_self();
	if (fast_ok())
		ppa_mts_set(t); /* resolved and counted from now on: the fast path */
	void *p;
	if (count_request(t, n)) {
		uint64_t t0 = ppa_mono();
		p = r_malloc(n);
		account_time(t, t0);
	} else {
		p = r_malloc(n);
	}
	account_alloc(t, n, p);
	return p;
}

static __attribute__((noinline)) void *malloc_timed(ppa_tstats *t, size_t n)
{
	uint64_t t0 = ppa_mono();
	void *p = r_malloc(n);
	account_time(t, t0);
	account_alloc(t, n, p);
	return p;
}

/* A block glibc mapped alone, or a chunk of 64 KiB or more: the live
 * table tracks it (agent_kept.c) by its usable size, so the request's size
 * need not be kept across the call on the fast path (a second saved
 * register: +5 instructions a call). */
static __attribute__((noinline)) void *malloc_big(ppa_tstats *t, void *p)
{
	size_t u = glibc_usable(p);
	ppa_add(&t->alloc_usable, u);
	ppa_kept_alloc(p, u);
	return p;
}

PPA_API void *malloc(size_t n)
{
	ppa_tstats *t = ppa_tls.fast;
	if (PPA_UNLIKELY(!t))
		return malloc_slow(n);
	ppa_add(&t->hist[size_slot_lzcnt(n)], 1);
	if (PPA_UNLIKELY(countdown_alloc(t)))
		return malloc_timed(t, n);
	void *p = r_malloc(n);
	if (PPA_UNLIKELY(!p))
		return p;
	size_t sz = chunk_word(p);
	if (PPA_UNLIKELY(sz & CHUNK_BIG))
		return malloc_big(t, p);
	ppa_add(&t->alloc_usable, heap_usable(sz));
	return p;
}

static __attribute__((noinline)) void free_slow(void *p)
{
	if (in_boot(p))
		return;
	if (PPA_UNLIKELY(atomic_load_explicit(&ppa_kept_live, memory_order_relaxed)))
		ppa_kept_free(p);
	if (!r_free)
		ppa_malloc_resolve();
	if (ppa_guard) {
		r_free(p);
		return;
	}
	ppa_tstats *t = ppa_self();
	if (r_malloc && fast_ok())
		ppa_mts_set(t);
	if (count_free(t, usable(p))) {
		uint64_t t0 = ppa_mono();
		r_free(p);
		account_time(t, t0);
	} else {
		r_free(p);
	}
}

static __attribute__((noinline)) void free_timed(ppa_tstats *t, void *p)
{
	uint64_t t0 = ppa_mono();
	r_free(p);
	account_time(t, t0);
}

PPA_API void free(void *p)
{
	if (PPA_UNLIKELY(!p))
		return;
	ppa_tstats *t = ppa_tls.fast;
	size_t sz;
	/* not counted yet, guarded, a large block (mapped on its own, or one
	 * the live table may hold: agent_kept.c) or one of the bootstrap
	 * pool's: out of line */
	if (PPA_UNLIKELY(!t || ((sz = chunk_word(p)) & CHUNK_BIG))) {
		free_slow(p);
		return;
	}
	if (PPA_UNLIKELY(count_free(t, heap_usable(sz)))) {
		free_timed(t, p);
		return;
	}
	r_free(p);
}

PPA_API void *calloc(size_t n, size_t m)
{
	if (PPA_UNLIKELY(!r_calloc)) {
		if (booting) {
			size_t total;
			if (__builtin_mul_overflow(n, m, &total))
				return NULL;
			return boot_alloc(total); /* static: already zero */
		}
		ppa_malloc_resolve();
	}
	if (PPA_UNLIKELY(ppa_guard))
		return r_calloc(n, m);
	ppa_tstats *t = ppa_self();
	void *p;
	if (PPA_UNLIKELY(count_request(t, n * m))) {
		uint64_t t0 = ppa_mono();
		p = r_calloc(n, m);
		account_time(t, t0);
	} else {
		p = r_calloc(n, m);
	}
	account_alloc(t, n * m, p);
	return p;
}

PPA_API void *realloc(void *old, size_t n)
{
	if (PPA_UNLIKELY(in_boot(old))) {
		/* moved out of the bootstrap pool into the real heap */
		void *p = malloc(n);
		if (p) {
			size_t avail = (size_t)(boot_pool + sizeof boot_pool - (char *)old);
			memcpy(p, old, n < avail ? n : avail);
		}
		return p;
	}
	if (PPA_UNLIKELY(!r_realloc)) {
		if (booting)
			return old ? NULL : boot_alloc(n);
		ppa_malloc_resolve();
	}
	if (PPA_UNLIKELY(ppa_guard))
		return r_realloc(old, n);
	ppa_tstats *t = ppa_self();
	int timed = count_request(t, n);
	ppa_add(&t->realloc_calls, 1);
	size_t old_usable = old ? usable(old) : 0;
	if (old && PPA_UNLIKELY(atomic_load_explicit(&ppa_kept_live, memory_order_relaxed)))
		ppa_kept_free(old); /* tracked again below if the new block is large */
	void *p;
	if (PPA_UNLIKELY(timed)) {
		uint64_t t0 = ppa_mono();
		p = r_realloc(old, n);
		account_time(t, t0);
	} else {
		p = r_realloc(old, n);
	}
	if (p || n == 0) /* realloc(p, 0) frees p */
		ppa_add(&t->free_usable, old_usable);
	account_alloc(t, n, p);
	return p;
}

typedef void *(*align_fn)(size_t, size_t);

static void *aligned_common(align_fn fn, size_t a, size_t n)
{
	RESOLVE();
	if (PPA_UNLIKELY(ppa_guard))
		return fn(a, n);
	ppa_tstats *t = ppa_self();
	(void)count_request(t, n); /* not timed: a pick here is a sample skipped */
	void *p = fn(a, n);
	account_alloc(t, n, p);
	return p;
}

PPA_API int posix_memalign(void **out, size_t a, size_t n)
{
	RESOLVE();
	if (PPA_UNLIKELY(ppa_guard))
		return r_posix_memalign(out, a, n);
	ppa_tstats *t = ppa_self();
	(void)count_request(t, n); /* not timed: a pick here is a sample skipped */
	int rc = r_posix_memalign(out, a, n);
	if (rc == 0)
		account_alloc(t, n, *out);
	return rc;
}

PPA_API void *aligned_alloc(size_t a, size_t n)
{
	RESOLVE();
	return aligned_common(r_aligned_alloc, a, n);
}

PPA_API void *memalign(size_t a, size_t n)
{
	RESOLVE();
	return aligned_common(r_memalign, a, n);
}

static void *valloc_shim(size_t a, size_t n) { (void)a; return r_valloc(n); }
static void *pvalloc_shim(size_t a, size_t n) { (void)a; return r_pvalloc(n); }

PPA_API void *valloc(size_t n) { RESOLVE(); return aligned_common(valloc_shim, 0, n); }
PPA_API void *pvalloc(size_t n) { RESOLVE(); return aligned_common(pvalloc_shim, 0, n); }
