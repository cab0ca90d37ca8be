/*
 * agent_sample.c — optional CPU sampling (--sample HZ).
 *
 * One POSIX timer per thread on the thread's own CPU clock
 * (CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID): a sleeping thread uses no CPU
 * and so gets no signal (its usleep/select/nanosleep/sem_timedwait never
 * return EINTR because of us). The signal is a real-time signal the program
 * does not use, chosen at start; if the program installs a handler for it
 * later, sampling stops (timers deleted, pending ticks discarded) and the
 * run says so. A program's own SIGPROF/ITIMER_PROF use is left alone. The handler takes a backtrace with libunwind's unw_backtrace into
 * a lock-free ring; the stats thread moves samples into `samples` rows whose
 * stack column temporarily holds the raw addresses as text, and `phaseprof
 * record` symbolises them after the run into frames/stacks. In a CPython
 * 3.11 process agent_pystack.c adds the Python frames.
 *
 * libunwind is dlopen'ed RTLD_LOCAL, never linked: linked into a preloaded
 * library its _Unwind_* exports would take over C++ exception handling of
 * the program (see research/library-loading.md).
 */
#include "agent_internal.h"
#include "phaseprof.h"
#include "pp_rows.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_DEPTH 64
#define RING 8192
#define SKIP 2 /* the handler and the signal trampoline */

typedef struct sample {
	_Atomic uint32_t ready;
	uint32_t tid;
	uint64_t ts;
	uint32_t n, pad;
	uintptr_t ip[MAX_DEPTH];
} sample;

static int (*unw_bt)(void **, int);
static sample *ring;
static _Atomic uint64_t ring_w;
static uint64_t ring_r;
static _Atomic uint64_t lost;
/* timer periods the kernel folded into a delivered signal (si_overrun): a
 * CPU-clock timer fires at most once per scheduler tick, so asking for more
 * than the tick rate gives the tick rate, and the run says so */
static _Atomic uint64_t merged;
static int sig_no;
static long period_ns;
static _Atomic int active;
static pthread_key_t timer_key;
static int key_made;

/* every live timer, so all can be deleted when the program takes our signal */
#define MAX_TIMERS 4096
static _Atomic(uintptr_t) *timers; /* timer id + 1; 0 free */
static int timer_slot_add(timer_t t)
{
	if (!timers)
		return -1;
	for (int i = 0; i < MAX_TIMERS; i++) {
		uintptr_t zero = 0;
		if (atomic_compare_exchange_strong(&timers[i], &zero, (uintptr_t)t + 1))
			return i;
	}
	return -1;
}

static void handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (!atomic_load_explicit(&active, memory_order_relaxed))
		return;
	if (si && si->si_code == SI_TIMER && si->si_overrun > 0)
		atomic_fetch_add_explicit(&merged, (uint64_t)si->si_overrun, memory_order_relaxed);
	int saved = errno;
	/* libunwind calls read/write/mmap (its memory-validation pipe): they
	 * must reach libc untouched, not the hooks, which may be what this
	 * signal interrupted */
	int g = ppa_guard;
	ppa_guard_set(1);
	uint64_t w = atomic_load_explicit(&ring_w, memory_order_relaxed);
	do {
		if (w - ring_r >= RING) { /* ring_r is only read: a stale value only drops more */
			atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
			ppa_guard_set(g);
			errno = saved;
			return;
		}
	} while (!atomic_compare_exchange_weak(&ring_w, &w, w + 1));
	sample *s = &ring[w % RING];
	void *buf[MAX_DEPTH + SKIP];
	int n = unw_bt(buf, MAX_DEPTH + SKIP);
	int k = 0;
	for (int i = SKIP; i < n; i++)
		s->ip[k++] = (uintptr_t)buf[i];
	s->n = (uint32_t)k;
	ppa_pystack_capture(w);
	s->tid = ppa_gettid();
	s->ts = ppa_mono();
	atomic_store_explicit(&s->ready, 1, memory_order_release);
	ppa_guard_set(g);
	errno = saved;
}

/* the thread-specific value is the slot + 1: whoever empties the slot deletes the timer */
static void timer_gone(void *p)
{
	int slot = (int)(uintptr_t)p - 1;
	uintptr_t v = slot >= 0 && timers ? atomic_exchange(&timers[slot], 0) : 0;
	if (v)
		timer_delete((timer_t)(v - 1));
}

void ppa_sampler_thread_start(void)
{
	if (!atomic_load(&active))
		return;
	/* libunwind keeps per-thread state in dynamic TLS, which the loader
	 * allocates with malloc on the thread's first backtrace: take that one
	 * here, not in the handler, whose signal may have interrupted malloc
	 * holding its arena lock (the thread then waits on itself) */
	void *warm[4];
	unw_bt(warm, 4);
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sig_no;
	sev._sigev_un._tid = (pid_t)ppa_gettid();
	timer_t t;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t) != 0)
		return;
	int slot = timer_slot_add(t);
	if (slot < 0) {
		timer_delete(t);
		return;
	}
	struct itimerspec its;
	memset(&its, 0, sizeof its);
	its.it_interval.tv_sec = period_ns / 1000000000L;
	its.it_interval.tv_nsec = period_ns % 1000000000L;
	its.it_value = its.it_interval;
	pthread_setspecific(timer_key, (void *)(uintptr_t)(slot + 1));
	timer_settime(t, 0, &its, NULL);
}

int ppa_sampler_start(int hz)
{
	if (hz <= 0)
		return -1;
	if (hz > 10000)
		hz = 10000;
	if (!unw_bt) {
		void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			pp_meta("agent.sampling", "unavailable: libunwind.so.8 could not be loaded");
			return -1;
		}
		unw_bt = (int (*)(void **, int))dlsym(h, "unw_backtrace");
		if (!unw_bt)
			unw_bt = (int (*)(void **, int))dlsym(h, "_ULx86_64_backtrace");
		if (!unw_bt) {
			pp_meta("agent.sampling", "unavailable: unw_backtrace not found in libunwind.so.8");
			return -1;
		}
	}
	if (!ring) {
		void *p = ppa_map(sizeof(sample) * RING);
		if (!p) {
			pp_meta("agent.sampling", "unavailable: no memory for the sample ring");
			return -1;
		}
		/* Touched whole now (4.4 MiB, ~1 ms): filled slot by slot, the
		 * ring's pages joined the program's resident memory one sample
		 * at a time, a slow steady rise in step.rss_bytes that the
		 * memory rule read as the program's growth (a loader-bound loop
		 * got a memory finding under --sample only). */
		memset(p, 0, sizeof(sample) * RING);
		ring = p;
	}
	ppa_pystack_start();
	if (!timers) {
		timers = ppa_map(sizeof *timers * MAX_TIMERS);
		if (!timers) {
			pp_meta("agent.sampling", "unavailable: no memory for the timer table");
			return -1;
		}
	}
	if (!key_made) {
		pthread_key_create(&timer_key, timer_gone);
		key_made = 1;
	}
	/* a real-time signal nobody handles yet (glibc's own are below SIGRTMIN;
	 * programs that use one usually take the first few) */
	sig_no = 0;
	for (int s = SIGRTMAX - 1; s >= SIGRTMIN + 2 && !sig_no; s--) {
		struct sigaction cur;
		if (ppa_real_sigaction(s, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL &&
		    !(cur.sa_flags & SA_SIGINFO))
			sig_no = s;
	}
	if (!sig_no) {
		pp_meta("agent.sampling", "unavailable: every real-time signal is in use by the program");
		return -1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (ppa_real_sigaction(sig_no, &sa, NULL) != 0) {
		pp_meta("agent.sampling", "unavailable: cannot install the sampling signal handler");
		return -1;
	}
	ppa_signal_hold(sig_no, 2);
	period_ns = 1000000000L / hz;
	atomic_store(&active, 1);
	char v[64];
	snprintf(v, sizeof v, "%d", hz);
	pp_meta("agent.sample_hz", v);
	snprintf(v, sizeof v, "%d", sig_no);
	pp_meta("agent.sample_signal", v);
	ppa_sampler_thread_start();
	return 0;
}

uint64_t ppa_sampler_written(void)
{
	return atomic_load(&ring_w);
}

static void delete_all_timers(void)
{
	if (!timers)
		return;
	for (int i = 0; i < MAX_TIMERS; i++) {
		uintptr_t v = atomic_exchange(&timers[i], 0);
		if (v)
			timer_delete((timer_t)(v - 1)); /* also discards its pending signal */
	}
}

void ppa_sampler_stop(void)
{
	ppa_pystack_stop();
	if (!atomic_exchange(&active, 0))
		return;
	delete_all_timers();
}

static _Atomic int yielded;

/* The program installs a handler for our signal: it is theirs from now on. */
void ppa_sampler_yield(int sig)
{
	if (sig != sig_no)
		return;
	atomic_store(&active, 0);
	delete_all_timers();
	atomic_store(&yielded, sig);
}

static uint64_t lost_said, merged_said;

static void meta_total(const char *key, uint64_t total, uint64_t *said)
{
	if (total == *said || !atomic_load(&ppa_recording))
		return;
	char v[32];
	snprintf(v, sizeof v, "%llu", (unsigned long long)total);
	pp_meta(key, v);
	*said = total;
}

void ppa_sampler_drain(void)
{
	if (!ring)
		return;
	char text[MAX_DEPTH * 19 + 64 * 12 + 8];
	ppa_pystack_poll();
	while (ring_r < atomic_load(&ring_w)) {
		sample *s = &ring[ring_r % RING];
		if (!atomic_load_explicit(&s->ready, memory_order_acquire))
			break; /* still being written */
		int n = 0;
		text[0] = 0;
		if (ppa_pystack_active())
			ppa_pystack_format((uint32_t)(ring_r % RING), s->ip, s->n, s->n == MAX_DEPTH, text, sizeof text);
		else
			for (uint32_t i = 0; i < s->n && n < (int)sizeof text - 20; i++)
				n += snprintf(text + n, sizeof text - (size_t)n, "%s%lx", i ? "," : "",
					      (unsigned long)s->ip[i]);
		if (atomic_load(&ppa_recording) && s->n)
			pp_row_samples_raw(s->tid, ppa_rel(s->ts), text);
		atomic_store_explicit(&s->ready, 0, memory_order_relaxed);
		ring_r++;
	}
	int y = atomic_exchange(&yielded, 0);
	if (y && atomic_load(&ppa_recording)) {
		char v[96];
		snprintf(v, sizeof v, "stopped: the program installed its own handler for signal %d", y);
		pp_meta("agent.sampling", v);
	}
	/* totals, written when they change: a reader takes the latest value */
	meta_total("agent.samples_lost", atomic_load(&lost), &lost_said);
	meta_total("agent.sample_periods_merged", atomic_load(&merged), &merged_said);
	if (!atomic_load(&active))
		ppa_pystack_report(); /* the final drain, after stop */
}

void ppa_sampler_after_fork(void)
{
	ppa_pystack_after_fork();
	atomic_store(&lost, 0); /* the child is a run of its own */
	atomic_store(&merged, 0);
	lost_said = merged_said = 0;
	/* timers are not inherited: forget the parent's ids (they may name
	 * the child's own timers later); the child's only thread gets a new one */
	if (timers)
		memset((void *)timers, 0, sizeof *timers * MAX_TIMERS);
	if (key_made)
		pthread_setspecific(timer_key, NULL);
	if (atomic_load(&active) && ppa_cfg.follow_fork)
		ppa_sampler_thread_start();
}
