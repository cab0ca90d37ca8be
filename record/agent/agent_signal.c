/*
 * agent_signal.c — the signals the agent holds, and how it gives them up.
 *
 * The agent installs a handler for a fatal signal (SEGV, BUS, FPE, ILL,
 * ABRT, TERM) only where the disposition is still the default, and for
 * the sampling signal (a free real-time signal). For those it keeps the
 * program's view: sigaction()/signal() queries report the default (a Rust
 * runtime installs its stack-overflow handler only over SIG_DFL), and a
 * handler the program installs goes to the kernel unchanged — the agent
 * steps aside (for the sampling signal: sampling stops and says so).
 *
 * The fatal handler allocates nothing and takes no lock: it writes a
 * preformatted EXIT chunk with one write(2), asks the agent's own thread
 * to write the final rows (bounded wait, no SIGALRM), and re-delivers the
 * signal under the default disposition, so the program dies exactly as it
 * would have.
 */
#include "agent_internal.h"
#include "phaseprof.h"
#include "recorder_internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { HELD_NONE, HELD_FATAL, HELD_SAMPLE };
#define NSIG_MAX 65
static _Atomic int held[NSIG_MAX];

static int (*r_sigaction)(int, const struct sigaction *, struct sigaction *);

int ppa_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return ((__typeof__(r_sigaction))ppa_next((void **)&r_sigaction, "sigaction"))(sig, act, old);
}

static void fill_default(struct sigaction *old)
{
	memset(old, 0, sizeof *old);
	old->sa_handler = SIG_DFL;
}

void ppa_signal_hold(int sig, int what)
{
	if (sig > 0 && sig < NSIG_MAX)
		atomic_store(&held[sig], what);
}

PPA_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int h = sig > 0 && sig < NSIG_MAX ? atomic_load(&held[sig]) : HELD_NONE;
	if (PPA_LIKELY(h == HELD_NONE) || ppa_guard)
		return ppa_real_sigaction(sig, act, old);
	if (act) {
		if (h == HELD_SAMPLE)
			ppa_sampler_yield(sig); /* before the program's handler can see our ticks */
		int r = ppa_real_sigaction(sig, act, NULL);
		if (r != 0)
			return r;
		atomic_store(&held[sig], HELD_NONE);
	}
	if (old)
		fill_default(old);
	return 0;
}

/* glibc's signal() reaches its sigaction internally, past the hook */
static __sighandler_t bsd_signal_common(int sig, __sighandler_t fn)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig);
	sa.sa_flags = SA_RESTART;
	if (sigaction(sig, &sa, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}
PPA_API __sighandler_t signal(int sig, __sighandler_t fn) { return bsd_signal_common(sig, fn); }
PPA_API __sighandler_t bsd_signal(int sig, __sighandler_t fn) { return bsd_signal_common(sig, fn); }

PPA_API __sighandler_t sysv_signal(int sig, __sighandler_t fn)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	if (sigaction(sig, &sa, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}
PPA_API __sighandler_t __sysv_signal(int sig, __sighandler_t fn) { return sysv_signal(sig, fn); }

/* ---- fatal signals ---- */
static _Atomic int fatal_once;

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int saved = errno;
	int g = ppa_guard;
	ppa_guard_set(1);
	/* SA_RESETHAND: the disposition is the default again */
	atomic_store(&held[sig], HELD_NONE);
	if (!atomic_exchange(&fatal_once, 1))
		ppa_final_from_signal(sig);
	ppa_guard_set(g);
	errno = saved;
	/* A fault raised by the kernel happens again on return, now under the
	 * default action (with the kernel's own siginfo and core dump); a sent
	 * signal (kill, raise, abort) is sent again. */
	int faulted = si && si->si_code > 0 &&
		      (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE);
	if (!faulted) {
		struct sigaction dfl;
		fill_default(&dfl);
		sigemptyset(&dfl.sa_mask);
		ppa_real_sigaction(sig, &dfl, NULL);
		syscall(SYS_tgkill, (long)getpid(), (long)syscall(SYS_gettid), (long)sig);
	}
}

void ppa_signals_install(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction old;
		if (ppa_real_sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue; /* the program (or its parent) chose already: leave it */
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_fatal;
		sigemptyset(&sa.sa_mask);
		/* on the program's alternate stack if it has one; a second signal
		 * during ours takes the default action at once */
		sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
		if (ppa_real_sigaction(sigs[i], &sa, NULL) == 0)
			ppa_signal_hold(sigs[i], HELD_FATAL);
	}
}
