/*
 * agent.c — start-up, settings, per-thread counters, the stats thread and
 * the exit / crash paths of the LD_PRELOAD agent.
 *
 * The same file is loaded twice: as LD_PRELOAD (base namespace: hooks and
 * the recorder) and as LD_AUDIT (its own namespace: la_* callbacks only, see
 * agent_audit.c). The constructor tells the two apart and does nothing in
 * the audit copy.
 */
#include "agent_internal.h"
#include "phaseprof.h"
#include "pp_env.h"
#include "pp_rows.h"
#include "recorder_internal.h"
#include "pp_hash.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

ppa_settings ppa_cfg;
int ppa_is_audit_copy;
_Atomic int ppa_recording;
_Atomic int ppa_quiet;
uint64_t ppa_run_start;
pid_t ppa_pid;
__thread ppa_tls_block ppa_tls PPA_TLS;
__thread ppa_tstats *ppa_ts PPA_TLS;

/* ---- per-thread counter blocks ----
 * Blocks come from anonymous mappings (never malloc: the first malloc of a
 * thread is what asks for one), 64 blocks (256 KiB) at a time as threads
 * arrive — a block is a page, and 4096 of them reserved up front were
 * 16 MiB of the program's address space. They outlive their thread, so
 * totals of threads that exited are kept. When all are taken, late
 * threads share the last block: their counts stay right on average but
 * can lose updates. */
#define PPA_MAX_TSTATS 4096
#define PPA_TSTATS_SEG 64
static ppa_tstats *_Atomic segs[PPA_MAX_TSTATS / PPA_TSTATS_SEG];
static _Atomic uint32_t slab_used;

void *ppa_map(size_t n)
{
	long r = syscall(SYS_mmap, 0L, n, (long)(PROT_READ | PROT_WRITE),
			 (long)(MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE), -1L, 0L);
	return r == -1 ? NULL : (void *)r;
}

void ppa_unmap(void *p, size_t n) { syscall(SYS_munmap, p, n); }

static void *map_zalloc(size_t n, void *ud)
{
	(void)ud;
	return ppa_map(n); /* anonymous pages come zeroed */
}

static void map_free(void *p, size_t n, void *ud)
{
	(void)ud;
	ppa_unmap(p, n);
}

const pp_alloc ppa_map_alloc = {map_zalloc, map_free, NULL};

uint32_t ppa_gettid(void) { return (uint32_t)syscall(SYS_gettid); }

/* Block i's segment, mapped by the first thread that needs it (a thread
 * that loses the race unmaps its own). NULL if no memory. */
static ppa_tstats *segment(uint32_t i)
{
	ppa_tstats *_Atomic *slot = &segs[i / PPA_TSTATS_SEG];
	ppa_tstats *s = atomic_load(slot);
	if (!s) {
		ppa_tstats *m = ppa_map(sizeof(ppa_tstats) * PPA_TSTATS_SEG);
		if (!m)
			return NULL;
		ppa_tstats *none = NULL;
		if (atomic_compare_exchange_strong(slot, &none, m))
			s = m;
		else {
			ppa_unmap(m, sizeof(ppa_tstats) * PPA_TSTATS_SEG);
			s = none;
		}
	}
	return s;
}

ppa_tstats *ppa_tstats_slow(void)
{
	uint32_t i = atomic_fetch_add(&slab_used, 1);
	if (i >= PPA_MAX_TSTATS)
		i = PPA_MAX_TSTATS - 1;
	ppa_tstats *s = segment(i);
	if (!s) {
		static ppa_tstats fallback;
		ppa_ts = &fallback;
		return ppa_ts;
	}
	ppa_tstats *t = &s[i % PPA_TSTATS_SEG];
	t->tid = ppa_gettid();
	t->used = 1;
	ppa_ts = t;
	return t;
}

static uint32_t blocks_used(void)
{
	uint32_t n = atomic_load(&slab_used);
	return n > PPA_MAX_TSTATS ? PPA_MAX_TSTATS : n;
}

void ppa_for_each_tstats(void (*fn)(ppa_tstats *, void *), void *ud)
{
	uint32_t n = blocks_used();
	for (uint32_t i = 0; i < n; i++) {
		ppa_tstats *s = atomic_load(&segs[i / PPA_TSTATS_SEG]);
		if (s && s[i % PPA_TSTATS_SEG].used)
			fn(&s[i % PPA_TSTATS_SEG], ud);
	}
}

/* Fork child: only the forking thread survives; counts start again so the
 * child's run holds only its own work. */
void ppa_reset_tstats(void)
{
	uint32_t n = blocks_used();
	for (uint32_t k = 0; k * PPA_TSTATS_SEG < n; k++) {
		ppa_tstats *s = atomic_load(&segs[k]);
		if (s)
			memset(s, 0, sizeof(ppa_tstats) * PPA_TSTATS_SEG);
	}
	atomic_store(&slab_used, 0);
	ppa_ts = NULL;
	ppa_mts_set(NULL);
}

/* ---- totals ---- */
typedef struct totals {
	uint64_t alloc_calls, alloc_usable, free_calls, free_usable, realloc_calls;
	uint64_t timed_calls, timed_ns, mmap_calls, mmap_bytes, munmap_calls, munmap_bytes, mmap_ns;
	uint64_t threads_created;
	uint64_t hist[PPA_SIZE_CLASSES];
} totals;

static void add_totals(ppa_tstats *t, void *ud)
{
	totals *s = ud;
	s->alloc_calls += ppa_alloc_calls(t);
	s->alloc_usable += ppa_get(&t->alloc_usable);
	s->free_calls += ppa_get(&t->free_calls);
	s->free_usable += ppa_get(&t->free_usable);
	s->realloc_calls += ppa_get(&t->realloc_calls);
	s->timed_calls += ppa_get(&t->timed_calls);
	s->timed_ns += ppa_get(&t->timed_ns);
	s->mmap_calls += ppa_get(&t->mmap_calls);
	s->mmap_bytes += ppa_get(&t->mmap_bytes);
	s->munmap_calls += ppa_get(&t->munmap_calls);
	s->munmap_bytes += ppa_get(&t->munmap_bytes);
	s->mmap_ns += ppa_get(&t->mmap_ns);
	s->threads_created += ppa_get(&t->threads_created);
	for (int lz = 0; lz < PPA_SIZE_SLOTS; lz++) {
		int bits = 64 - lz; /* the requested size's bit length */
		s->hist[bits < PPA_SIZE_CLASSES ? bits : PPA_SIZE_CLASSES - 1] += ppa_get(&t->hist[lz]);
	}
}

static uint64_t peak_in_use;
/* CPUs this process may run on, counted before main (ppa_init) from
 * sched_getaffinity, a system call that needs no descriptor.
 * sysconf(_SC_NPROCESSORS_ONLN) opens and closes a /sys file: called from
 * the stats thread while main ran, it took a number from the program's
 * descriptor table (a program dup2ing over 3..4095 at start-up got EBUSY,
 * lost a descriptor or saw its first open() return 4). */
static _Atomic long ncpu_online;

static long cpus_usable(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 1;
	int n = CPU_COUNT(&set);
	return n > 0 ? n : 1;
}

/* Estimated time inside the allocator: the timed sample scaled to all
 * calls, never more than the time there was: the run's wall time for one
 * thread, wall time x the threads that could run at once for the total. */
static uint64_t est_ns(uint64_t calls, uint64_t timed_calls, uint64_t timed_ns, uint64_t cap)
{
	if (!timed_calls)
		return 0;
	double e = (double)timed_ns * (double)calls / (double)timed_calls;
	return e > (double)cap ? cap : (uint64_t)e;
}

static void count_alloc_threads(ppa_tstats *t, void *ud)
{
	if (ppa_alloc_calls(t) || ppa_get(&t->free_calls))
		(*(uint64_t *)ud)++;
}

static void emit_thread_rows(ppa_tstats *t, void *ud)
{
	int64_t ts = *(int64_t *)ud;
	uint64_t calls = ppa_alloc_calls(t), frees = ppa_get(&t->free_calls);
	if (calls || frees) {
		int64_t in_use = (int64_t)ppa_get(&t->alloc_usable) - (int64_t)ppa_get(&t->free_usable);
		pp_row_allocations(t->tid, ts, "malloc", "summary", (int64_t)calls,
				   (int64_t)ppa_get(&t->alloc_usable),
				   (int64_t)est_ns(calls + frees, ppa_get(&t->timed_calls),
						   ppa_get(&t->timed_ns), (uint64_t)(ts > 0 ? ts : 0)),
				   in_use, PP_NULL, PP_NULL);
		pp_row_allocations(t->tid, ts, "malloc", "free", (int64_t)frees,
				   (int64_t)ppa_get(&t->free_usable), 0, PP_NULL, PP_NULL, PP_NULL);
	}
	uint64_t mm = ppa_get(&t->mmap_calls), mu = ppa_get(&t->munmap_calls);
	if (mm || mu) {
		pp_row_allocations(t->tid, ts, "mmap", "summary", (int64_t)mm,
				   (int64_t)ppa_get(&t->mmap_bytes), (int64_t)ppa_get(&t->mmap_ns),
				   PP_NULL, PP_NULL, PP_NULL);
		pp_row_allocations(t->tid, ts, "mmap", "free", (int64_t)mu,
				   (int64_t)ppa_get(&t->munmap_bytes), 0, PP_NULL, PP_NULL, PP_NULL);
	}
}

static void emit_alloc_rows(void)
{
	totals s;
	memset(&s, 0, sizeof s);
	ppa_for_each_tstats(add_totals, &s);
	int64_t ts = (int64_t)pp_now();
	ppa_for_each_tstats(emit_thread_rows, &ts);
	uint64_t nthreads = 0;
	ppa_for_each_tstats(count_alloc_threads, &nthreads);
	long ncpu = atomic_load(&ncpu_online);
	if (ncpu > 0 && nthreads > (uint64_t)ncpu)
		nthreads = (uint64_t)ncpu;
	uint64_t total_cap = (uint64_t)(ts > 0 ? ts : 0) * (nthreads ? nthreads : 1);
	/* process-wide row (tid 0): totals, final bytes in use, sampled peak */
	int64_t in_use = (int64_t)s.alloc_usable - (int64_t)s.free_usable;
	if ((uint64_t)(in_use > 0 ? in_use : 0) > peak_in_use)
		peak_in_use = (uint64_t)in_use;
	pp_row_allocations(0, ts, "malloc", "total", (int64_t)s.alloc_calls, (int64_t)s.alloc_usable,
			   (int64_t)est_ns(s.alloc_calls + s.free_calls, s.timed_calls, s.timed_ns,
					   total_cap),
			   in_use, (int64_t)peak_in_use, PP_NULL);
	for (int k = 0; k < PPA_SIZE_CLASSES; k++)
		if (s.hist[k])
			pp_row_allocations(0, ts, "malloc", "histogram", (int64_t)s.hist[k], PP_NULL,
					   PP_NULL, PP_NULL, PP_NULL, k == 0 ? 0 : (1ll << (k - 1)));
	char v[64];
	snprintf(v, sizeof v, "%llu", (unsigned long long)s.threads_created);
	pp_meta("agent.threads_created", v);
	ppa_kept_report();
	snprintf(v, sizeof v, "%llu", (unsigned long long)s.realloc_calls);
	pp_meta("agent.realloc_calls", v);
}

/* ---- the stats thread: bytes in use over time, periodic drains ----
 * It sleeps on a semaphore (sem_post is async-signal-safe): the fatal
 * signal handler wakes it to write the final rows while the crashed
 * thread waits, bounded, without allocating. */
static pthread_t stats_thread;
static int stats_running;
static sem_t stats_sem;
static _Atomic int stats_stop;
static _Atomic int final_sig;   /* a fatal signal asks for the final rows */
static _Atomic int final_done;

static void stats_tick(void)
{
	totals s;
	memset(&s, 0, sizeof s);
	ppa_for_each_tstats(add_totals, &s);
	int64_t in_use = (int64_t)s.alloc_usable - (int64_t)s.free_usable;
	if (in_use < 0)
		in_use = 0;
	static int64_t last_in_use = -1, last_mmap = -1;
	if (in_use != last_in_use) {
		pp_counter("malloc.in_use_bytes", (double)in_use);
		last_in_use = in_use;
	}
	if ((uint64_t)in_use > peak_in_use)
		peak_in_use = (uint64_t)in_use;
	int64_t mm = (int64_t)s.mmap_bytes - (int64_t)s.munmap_bytes;
	if (mm != last_mmap) {
		pp_counter("mmap.in_use_bytes", (double)mm);
		last_mmap = mm;
	}
	ppa_libs_drain(0);
	ppa_io_emit();
	ppa_sampler_drain();
}

/* The agent's own threads (stats thread, spool writer, frame resolver), by
 * thread id: the program's view of its thread count leaves them out (see
 * ppa_own_threads). A slot whose thread is gone (a forked child sees its
 * parent's) is taken again. */
static _Atomic uint32_t own_tids[16];

static int tid_alive(uint32_t tid)
{
	return tid && syscall(SYS_tgkill, getpid(), (pid_t)tid, 0) == 0;
}

void ppa_own_thread(int enter)
{
	uint32_t me = ppa_gettid();
	for (int i = 0; i < 16; i++) {
		uint32_t v = atomic_load(&own_tids[i]);
		if (enter ? (v == 0 || (v != me && !tid_alive(v))) : v == me) {
			if (atomic_compare_exchange_strong(&own_tids[i], &v, enter ? me : 0))
				return;
		}
	}
}

int ppa_own_threads(void)
{
	int n = 0;
	for (int i = 0; i < 16; i++)
		n += tid_alive(atomic_load(&own_tids[i]));
	return n;
}

static void *stats_loop(void *arg);

static void *stats_main(void *arg)
{
	ppa_own_thread(1);
	void *r = stats_loop(arg);
	ppa_own_thread(0);
	return r;
}

static void *stats_loop(void *arg)
{
	(void)arg;
	ppa_guard_set(1); /* our own work is not the program's */
	pp_thread_name("phaseprof-agent");
	for (;;) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)ppa_cfg.period_ms * 1000000ull;
		ts.tv_sec += (time_t)(ns / 1000000000ull);
		ts.tv_nsec = (long)(ns % 1000000000ull);
		sem_clockwait(&stats_sem, CLOCK_MONOTONIC, &ts);
		int sig = atomic_load(&final_sig);
		if (sig) {
			ppa_close_recorder(sig == SIGTERM ? "killed" : "crashed");
			atomic_store(&final_done, 1);
			break;
		}
		if (atomic_load(&stats_stop))
			break;
		stats_tick();
	}
	return NULL;
}

/* Our threads: every signal blocked (none of the program's lands there), a
 * small stack, no name in the program's thread count. */
int ppa_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, PPA_THREAD_STACK);
	int r = ppa_real_pthread_create(th, &at, fn, arg);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

static void stats_start(void)
{
	sem_init(&stats_sem, 0, 0);
	atomic_store(&stats_stop, 0);
	atomic_store(&final_sig, 0);
	atomic_store(&final_done, 0);
	stats_running = ppa_thread_start(&stats_thread, stats_main, NULL) == 0;
}

static void stats_end(void)
{
	if (!stats_running || pthread_equal(pthread_self(), stats_thread))
		return;
	atomic_store(&stats_stop, 1);
	sem_post(&stats_sem);
	pthread_join(stats_thread, NULL);
	stats_running = 0;
}

/* From the fatal signal handler (async-signal-safe): the status first, in
 * one write; then the final rows by the stats thread, waited for at most
 * a second (it may need a lock the crashed thread holds). */
void ppa_final_from_signal(int sig)
{
	if (!atomic_load(&ppa_recording) || getpid() != ppa_pid)
		return;
	ppa_exit_status(-1, sig);
	pp_exit_note_signal_safe(-1, sig);
	if (!stats_running || pthread_equal(pthread_self(), stats_thread))
		return;
	atomic_store(&final_sig, sig);
	sem_post(&stats_sem);
	for (int i = 0; i < 400 && !atomic_load(&final_done); i++) {
		struct timespec t = {0, 2500000};
		nanosleep(&t, NULL);
	}
}

/* ---- recorder open / close ---- */
static int exit_code = -1, exit_signal;

void ppa_exit_status(int code, int sig)
{
	exit_code = code;
	exit_signal = sig;
}

void ppa_open_recorder(void)
{
	/* never a spool in the program's working directory: `record` always
	 * hands the agent an absolute private folder (or an explicit file) */
	if (ppa_cfg.spool_dir[0] != '/' && !getenv(PP_ENV_OUT)) {
		static const char msg[] = "phaseprof agent: PHASEPROF_SPOOL_DIR is not an absolute folder; not recording\n";
		(void)!write(2, msg, sizeof msg - 1);
		return;
	}
	int g = ppa_guard;
	ppa_guard_set(1);
	pp_options o;
	memset(&o, 0, sizeof o);
	o.fork_policy = ppa_cfg.follow_fork ? PP_FORK_FOLLOW : PP_FORK_DISABLE;
	o.buffer_events = ppa_cfg.buffer_events > 0 ? (uint32_t)ppa_cfg.buffer_events : 0;
	o.max_buffers = ppa_cfg.max_buffers > 0 ? (uint32_t)ppa_cfg.max_buffers : 0;
	if (pp_open(&o) == 0) {
		ppa_run_start = ppa_mono() - pp_now();
		ppa_pid = getpid();
		atomic_store(&ppa_recording, 1);
		pp_meta("agent", "libphaseprof-agent");
		pp_meta("agent.mode", ppa_cfg.detailed ? "detailed" : "default");
		ppa_rank_meta();
		char v[64];
		uint64_t ls = ppa_loader_start();
		if (ls) {
			snprintf(v, sizeof v, "%lld", (long long)ppa_rel(ls));
			pp_meta("agent.loader_start_ns", v);
		}
		exit_code = -1;
		exit_signal = 0;
		stats_start();
		if (ppa_cfg.sample_hz > 0)
			ppa_sampler_start(ppa_cfg.sample_hz);
	} else {
		/* one line, on stderr: the program still runs, unrecorded */
		char msg[600];
		int n = snprintf(msg, sizeof msg, "phaseprof agent: %s\n", pp_last_error());
		if (n > 0)
			(void)!write(2, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1));
	}
	ppa_guard_set(g);
}

void ppa_close_recorder(const char *why)
{
	static _Atomic int closing;
	if (!atomic_load(&ppa_recording) || atomic_exchange(&closing, 1))
		return;
	int g = ppa_guard;
	ppa_guard_set(1);
	stats_end();
	stats_tick(); /* final values, also for runs shorter than one period */
	ppa_sampler_stop();
	ppa_sampler_drain();
	ppa_libs_drain(1);
	ppa_io_flush_all();
	emit_alloc_rows();
	char v[64];
	snprintf(v, sizeof v, "%lld", (long long)pp_now());
	pp_meta("agent.end_ns", v);
	pp_meta("agent.end", why);
	if (exit_code >= 0) {
		snprintf(v, sizeof v, "%d", exit_code);
		pp_meta("agent.exit_code", v);
	}
	if (exit_signal) {
		snprintf(v, sizeof v, "%d", exit_signal);
		pp_meta("agent.exit_signal", v);
	}
	atomic_store(&ppa_recording, 0);
	/* an exec may fail and the recording go on: only it gives memory back */
	if (strcmp(why, "exec") == 0 || strcmp(why, "seccomp") == 0)
		pp_close();
	else
		pp_close_at_exit();
	atomic_store(&closing, 0);
	ppa_guard_set(g);
}

/* Fork child (following): the recorder has opened the child's spool in its
 * own atfork handler; restart what did not survive the fork. */
void ppa_after_fork_child(void)
{
	stats_running = 0;
	peak_in_use = 0;
	if (!pp_is_open()) {
		atomic_store(&ppa_recording, 0);
		return;
	}
	ppa_run_start = ppa_mono() - pp_now();
	pp_meta("agent", "libphaseprof-agent");
	pp_meta("agent.mode", ppa_cfg.detailed ? "detailed" : "default");
	pp_meta("agent.forked", "1");
	ppa_python_after_fork();
	stats_start();
}

/* ---- exit and crash ----
 * The final rows are written from our destructor: exit() runs _dl_fini
 * before handlers registered during start-up (our constructor runs before
 * __libc_start_main registers _dl_fini), and _dl_fini runs our destructors
 * before the recorder's own atexit close (registered for this DSO, run by
 * __cxa_finalize after them). Libraries finalised before us (the program's
 * and most of its dependencies) are still counted. */
__attribute__((destructor)) static void ppa_fini(void)
{
	if (ppa_is_audit_copy || getpid() != ppa_pid)
		return;
	ppa_python_at_exit();
	ppa_close_recorder("exit");
}

/* ---- settings ---- */
static int env_int(const char *name, int def)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	return atoi(s);
}

static void read_settings(void)
{
	const char *s = getenv(PP_ENV_AGENT);
	if (s)
		snprintf(ppa_cfg.agent_path, sizeof ppa_cfg.agent_path, "%s", s);
	else {
		Dl_info info;
		if (dladdr((void *)read_settings, &info) && info.dli_fname)
			snprintf(ppa_cfg.agent_path, sizeof ppa_cfg.agent_path, "%s", info.dli_fname);
	}
	s = getenv(PP_ENV_SPOOL_DIR);
	if (s)
		snprintf(ppa_cfg.spool_dir, sizeof ppa_cfg.spool_dir, "%s", s);
	ppa_cfg.sample_hz = env_int(PP_ENV_SAMPLE_HZ, 0);
	s = getenv(PP_ENV_MODE);
	ppa_cfg.detailed = s && strcmp(s, "detailed") == 0;
	ppa_cfg.follow_fork = env_int(PP_ENV_FOLLOW_FORK, 1);
	ppa_cfg.period_ms = env_int(PP_ENV_AGENT_PERIOD_MS, 20);
	if (ppa_cfg.period_ms < 1)
		ppa_cfg.period_ms = 1;
	ppa_cfg.alloc_sample = env_int(PP_ENV_ALLOC_SAMPLE, 1000);
	/* tests: few small buffers make recording threads write the spool themselves */
	ppa_cfg.buffer_events = env_int(PP_ENV_BUFFER_EVENTS, 0);
	ppa_cfg.max_buffers = env_int(PP_ENV_MAX_BUFFERS, 0);
}

/* The audit copy lives in its own link-map namespace. */
static int in_audit_namespace(void)
{
	Dl_info info;
	struct link_map *lm = NULL;
	if (!dladdr1((void *)in_audit_namespace, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return 0;
	Lmid_t id = LM_ID_BASE;
	if (dlinfo(lm, RTLD_DI_LMID, &id) != 0)
		return 0;
	return id != LM_ID_BASE;
}

__attribute__((constructor)) static void ppa_init(void)
{
	if (in_audit_namespace()) {
		ppa_is_audit_copy = 1;
		return;
	}
	uint64_t t_ctor = ppa_mono();
	ppa_guard_set(1);
	ppa_mem_init(); /* before the recorder registers its fork handlers */
	ppa_malloc_resolve();
	read_settings();
	if (ppa_cfg.detailed)
		ppa_mts_set(NULL); /* counted before the mode was known: the slow path from now on */
	ppa_proc_init();
	atomic_store(&ncpu_online, cpus_usable());
	ppa_guard_set(0);
	ppa_open_recorder();
	if (atomic_load(&ppa_recording)) {
		char v[64];
		snprintf(v, sizeof v, "%lld", (long long)ppa_rel(t_ctor));
		pp_meta("agent.ctor_ns", v);
		ppa_proc_after_open();
		ppa_proc_note_seccomp();
		ppa_python_init();
	}
	ppa_signals_install();
}
