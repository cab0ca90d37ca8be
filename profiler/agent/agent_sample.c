/*
 * agent_sample.c — optional CPU sampling (--sample HZ).
 *
 * One POSIX timer per thread (CLOCK_MONOTONIC, SIGEV_THREAD_ID) delivering
 * a real-time signal, so a program's own SIGPROF/ITIMER_PROF use is left
 * alone. The handler takes a backtrace with libunwind's unw_backtrace into
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
static int sig_no;
static long period_ns;
static _Atomic int active;
static pthread_key_t timer_key;
static int key_made;

static void handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	if (!atomic_load_explicit(&active, memory_order_relaxed))
		return;
	int saved = errno;
	uint64_t w = atomic_load_explicit(&ring_w, memory_order_relaxed);
	do {
		if (w - ring_r >= RING) { /* ring_r is only read: a stale value only drops more */
			atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
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
	errno = saved;
}

static void timer_gone(void *p)
{
	timer_t t = (timer_t)p;
	timer_delete(t);
}

void ppa_sampler_thread_start(void)
{
	if (!atomic_load(&active))
		return;
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sig_no;
	sev._sigev_un._tid = (pid_t)ppa_gettid();
	timer_t t;
	if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0)
		return;
	struct itimerspec its;
	memset(&its, 0, sizeof its);
	its.it_interval.tv_sec = period_ns / 1000000000L;
	its.it_interval.tv_nsec = period_ns % 1000000000L;
	its.it_value = its.it_interval;
	timer_settime(t, 0, &its, NULL);
	pthread_setspecific(timer_key, (void *)t);
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
		ring = p;
	}
	ppa_pystack_start();
	if (!key_made) {
		pthread_key_create(&timer_key, timer_gone);
		key_made = 1;
	}
	sig_no = SIGRTMIN + 4;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig_no, &sa, NULL);
	period_ns = 1000000000L / hz;
	atomic_store(&active, 1);
	char v[64];
	snprintf(v, sizeof v, "%d", hz);
	pp_meta("agent.sample_hz", v);
	ppa_sampler_thread_start();
	return 0;
}

uint64_t ppa_sampler_written(void)
{
	return atomic_load(&ring_w);
}

void ppa_sampler_stop(void)
{
	ppa_pystack_stop();
	if (!atomic_exchange(&active, 0))
		return;
	timer_t t = (timer_t)pthread_getspecific(timer_key);
	if (t) {
		timer_delete(t);
		pthread_setspecific(timer_key, NULL);
	}
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
			pp_row("samples", "iit", (int64_t)s->tid, ppa_rel(s->ts), text);
		atomic_store_explicit(&s->ready, 0, memory_order_relaxed);
		ring_r++;
	}
	uint64_t l = atomic_exchange(&lost, 0);
	if (l && atomic_load(&ppa_recording)) {
		char v[32];
		snprintf(v, sizeof v, "%llu", (unsigned long long)l);
		pp_meta("agent.samples_lost", v);
	}
	if (!atomic_load(&active))
		ppa_pystack_report(); /* the final drain, after stop */
}

void ppa_sampler_after_fork(void)
{
	/* timers are not inherited: the child's only thread gets a new one */
	ppa_pystack_after_fork();
	if (atomic_load(&active) && ppa_cfg.follow_fork)
		ppa_sampler_thread_start();
}
