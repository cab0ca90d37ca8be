/*
 * agent_internal.h — private to the LD_PRELOAD agent (libphaseprof-agent.so).
 *
 * The agent lives inside someone else's program: every hook resolves the
 * real function lazily (it may run before our constructor), never holds a
 * lock on the malloc path, and keeps its counters per thread so threads
 * never share a cache line on the hot path.
 */
#ifndef PPA_INTERNAL_H
#define PPA_INTERNAL_H

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>

#define PPA_API __attribute__((visibility("default")))
/* initial-exec: the hooks read these on every call. The recorder linked in
 * already needs static TLS, so the LD_AUDIT copy is given a larger static
 * TLS surplus through GLIBC_TUNABLES by `phaseprof record`. */
#define PPA_TLS __attribute__((tls_model("initial-exec")))
#define PPA_LIKELY(x) __builtin_expect(!!(x), 1)
#define PPA_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* log2 size classes: class k holds sizes in [2^(k-1), 2^k), class 0 holds 0;
 * the last reported class holds the rest. Counted in one slot per count of
 * leading zero bits (no clamp on the hot path) and folded when read. */
#define PPA_SIZE_CLASSES 48
#define PPA_SIZE_SLOTS 65

/* Thread-owned counters. Only the owner writes (a plain add, no lock
 * prefix); the stats thread and the exit path read them relaxed. One page
 * each, the counters in its second half: the hooks store to them around
 * glibc's loads of its thread cache (tcache, at the start of a heap page),
 * and a load whose address agrees with an earlier store's in the low 12
 * bits waits for it (4K aliasing: ~5 % of a malloc/free loop's time). */
typedef _Atomic uint64_t ppa_ctr;
typedef struct __attribute__((aligned(4096))) ppa_tstats {
	char away_from_tcache[2048];
	uint32_t tid;
	uint32_t used;
	ppa_ctr alloc_usable;                /* bytes: usable size of each block */
	ppa_ctr free_calls, free_usable;
	ppa_ctr realloc_calls;
	ppa_ctr timed_calls, timed_ns;       /* 1 call in 1024 is timed */
	ppa_ctr alloc_left, free_left;       /* calls until the next timed one (see ppa_countdown) */
	ppa_ctr mmap_calls, mmap_bytes, munmap_calls, munmap_bytes, mmap_ns;
	ppa_ctr threads_created;
	ppa_ctr hist[PPA_SIZE_SLOTS];        /* requests by leading zero bits of the requested size
	                                        (64 for 0 bytes): one lzcnt on the hot path */
	ppa_ctr detail_seq;                  /* --mode detailed: allocations seen, for 1 in N */
	char pad[64];
} ppa_tstats;

/* Allocation calls: every request is counted once in the histogram, so the
 * hot path keeps no separate call counter. */
static inline uint64_t ppa_alloc_calls(ppa_tstats *t)
{
	uint64_t n = 0;
	for (int i = 0; i < PPA_SIZE_SLOTS; i++)
		n += atomic_load_explicit(&t->hist[i], memory_order_relaxed);
	return n;
}

static inline void ppa_add(ppa_ctr *c, uint64_t v)
{
#if defined(__x86_64__)
	/* one add to memory: an aligned 8-byte store never tears, and the
	 * asm keeps the compiler from splitting or caching it */
	__asm__("addq %1, %0" : "+m"(*(uint64_t *)c) : "er"(v));
#else
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
#endif
}
static inline uint64_t ppa_get(ppa_ctr *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}
/* Takes one from a down-counter and says whether it was already 0 (the
 * borrow): one instruction and a branch on its flag. Starting at 0 and reset
 * to N-1 when it fires, it picks the first call and then one in N. */
static inline int ppa_countdown(ppa_ctr *c)
{
#if defined(__x86_64__)
	int borrow;
	__asm__("subq $1, %0" : "+m"(*(uint64_t *)c), "=@ccc"(borrow));
	return borrow;
#else
	uint64_t v = atomic_load_explicit(c, memory_order_relaxed);
	atomic_store_explicit(c, v - 1, memory_order_relaxed);
	return v == 0;
#endif
}

/* Adds one and returns the previous value (one load, one store). */
static inline uint64_t ppa_inc(ppa_ctr *c)
{
	uint64_t v = atomic_load_explicit(c, memory_order_relaxed);
	atomic_store_explicit(c, v + 1, memory_order_relaxed);
	return v;
}

static inline uint64_t ppa_mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline void *ppa_next(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (PPA_UNLIKELY(!p)) {
		p = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, p, __ATOMIC_RELAXED);
	}
	return p;
}

/* Anonymous memory for the agent's tables, straight from the kernel: the
 * agent's own mmap symbol is a hook. NULL on failure. */
void *ppa_map(size_t n);
void ppa_unmap(void *p, size_t n);
/* The same as a pp_alloc, for the agent's hash indexes (pp_hash): they
 * then never call malloc, not even from inside a signal handler. */
extern const struct pp_alloc ppa_map_alloc;

/* agent_mem.c: the recorder's allocator (never the program's malloc) */
void ppa_mem_init(void);
void *ppa_mem_alloc(size_t n);
void *ppa_mem_calloc(size_t n, size_t m);
void *ppa_mem_realloc(void *p, size_t n);
void ppa_mem_free(void *p);

/* Settings from PHASEPROF_* (copied at start-up: the program may rewrite
 * its environment, exec must still carry them). */
typedef struct ppa_settings {
	char agent_path[4096];
	char spool_dir[4096];
	int sample_hz;
	int detailed;              /* --mode detailed */
	int follow_fork;
	int period_ms;             /* stats thread period */
	int alloc_sample;          /* detailed mode: one allocation event in N */
	int buffer_events, max_buffers; /* recorder buffers (tests: 0 = the recorder's defaults) */
} ppa_settings;

extern ppa_settings ppa_cfg;
extern int ppa_is_audit_copy;      /* this copy was loaded by LD_AUDIT */
extern _Atomic int ppa_recording;  /* the recorder is open in this process */
extern _Atomic int ppa_quiet;      /* a seccomp filter came: hooks pass straight through */
extern uint64_t ppa_run_start;     /* CLOCK_MONOTONIC of the run's t = 0 */
extern pid_t ppa_pid;              /* pid the agent state belongs to */
/* The malloc hooks' thread state in one TLS block (one GOT load per hook).
 * mts is set once the allocator functions are resolved and the thread has
 * its counter block, and only where the fast path applies (glibc's heap,
 * default mode, lzcnt); fast is mts while the agent's guard is down and
 * NULL while it is up, so the hot path tests one pointer for both. */
typedef struct ppa_tls_block {
	struct ppa_tstats *fast;
	struct ppa_tstats *mts;
	int guard;                 /* the agent's own work: pass through uncounted */
} ppa_tls_block;
extern __thread ppa_tls_block ppa_tls PPA_TLS;
#define ppa_guard ((int)ppa_tls.guard) /* read it; raise and lower it with ppa_guard_set */
static inline void ppa_guard_set(int g)
{
	ppa_tls.guard = g;
	ppa_tls.fast = g ? NULL : ppa_tls.mts;
}
static inline void ppa_mts_set(struct ppa_tstats *t)
{
	ppa_tls.mts = t;
	ppa_tls.fast = ppa_tls.guard ? NULL : t;
}

static inline int64_t ppa_rel(uint64_t mono) { return (int64_t)(mono - ppa_run_start); }

/* agent.c */
ppa_tstats *ppa_tstats_slow(void);
extern __thread ppa_tstats *ppa_ts PPA_TLS;
static inline ppa_tstats *ppa_self(void)
{
	ppa_tstats *t = ppa_ts;
	return PPA_LIKELY(t != NULL) ? t : ppa_tstats_slow();
}
uint32_t ppa_gettid(void);
void ppa_open_recorder(void);     /* (re)opens the recorder: start-up, after exec failed, fork child */
void ppa_close_recorder(const char *why); /* final rows, then pp_close */
void ppa_exit_status(int code, int sig);
void ppa_for_each_tstats(void (*fn)(ppa_tstats *, void *), void *ud);
void ppa_reset_tstats(void);

/* agent_malloc.c */
void ppa_malloc_resolve(void);
void *ppa_real_malloc(size_t n);
void ppa_real_free(void *p);

/* agent_io.c */
void ppa_io_emit(void);           /* per-path rows of files closed since the last call (+ open files if final) */
void ppa_io_flush_all(void);
void ppa_io_after_fork(void);

/* agent_audit.c: shared block written by the LD_AUDIT copy */
void ppa_libs_drain(int final);
void ppa_libs_after_fork(void);
uint64_t ppa_loader_start(void); /* 0 if the audit copy is not loaded */
struct link_map;
struct link_map *ppa_object_of(const void *addr); /* the loaded object holding addr, or NULL */

/* agent_sample.c */
int ppa_sampler_start(int hz);
void ppa_sampler_thread_start(void);
void ppa_sampler_drain(void);
void ppa_sampler_stop(void);
void ppa_sampler_after_fork(void);
uint64_t ppa_sampler_written(void);    /* samples started so far (ring write index) */

/* agent_pystack.c: Python frames in samples. capture runs in the handler
 * (slot = the sample's ring slot); the rest in the drain. */
int ppa_pystack_start(void);
uint32_t ppa_pystack_frames(uint64_t *out, uint32_t max, uint32_t *truncated);
void ppa_pystack_probe(void);
int64_t ppa_pystack_site(const uint64_t *fw, uint32_t n, char *sym, size_t cap);
/* agent_kept.c: live allocations of 64 KiB and more, by site, per step */
#define PPA_KEPT_MIN ((size_t)64 << 10)
extern _Atomic uint32_t ppa_kept_live;  /* entries in the live table */
extern _Atomic int ppa_kept_on;
void ppa_kept_alloc(void *p, size_t n);
void ppa_kept_free(void *p);
void ppa_kept_step_begin(int64_t step);
void ppa_kept_step_end(void);
void ppa_kept_report(void);
void ppa_pystack_capture(uint64_t w);    /* w: the sample's index in the ring */
void ppa_pystack_stop(void);
void ppa_pystack_poll(void);
int ppa_pystack_active(void);
size_t ppa_pystack_format(uint32_t slot, const uintptr_t *ips, uint32_t n, int native_truncated,
			  char *out, size_t cap);
void ppa_pystack_report(void);
void ppa_pystack_after_fork(void);
int ppa_py_line(const unsigned char *tab, size_t len, int firstlineno, int index);

/* agent_signal.c */
int ppa_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void ppa_signal_hold(int sig, int sampling);  /* 0 none, 1 fatal, 2 sampling */
void ppa_signals_install(void);
void ppa_final_from_signal(int sig);          /* agent.c */
void ppa_sampler_yield(int sig);              /* agent_sample.c: the program took our signal */

/* Stack of the agent's own threads (stats, writer): they run no program
 * code, and 8 MiB each of address space breaks tight RLIMIT_AS budgets. */
#define PPA_THREAD_STACK (256u << 10)
#include <pthread.h>
int ppa_thread_start(pthread_t *th, void *(*fn)(void *), void *arg); /* agent.c */
/* the agent's own threads: each registers itself while it runs (agent.c);
 * ppa_own_threads() counts those alive in this process */
void ppa_own_thread(int enter);
int ppa_own_threads(void);
int ppa_real_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* agent_proc.c */
void ppa_proc_init(void);
void ppa_proc_after_open(void);   /* registers the atfork handlers (after the recorder's) */
void ppa_proc_note_seccomp(void);
void ppa_after_fork_child(void);  /* agent.c */

/* agent_rank.c */
void ppa_rank_meta(void);         /* rank, world_size, job… from a launcher's environment */

/* agent_python.c: CPython start-up, imports, the phaseprof module */
void ppa_python_init(void);       /* after the recorder opened, before Py_Initialize */
void ppa_python_after_fork(void);
void ppa_python_at_exit(void);    /* a start-up that never reached the first line ends */

#endif
