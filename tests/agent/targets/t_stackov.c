/* What Rust's runtime does: install a SIGSEGV handler on an alternate
 * stack only if the disposition is still the default, then report a stack
 * overflow and die by SIGSEGV. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	static const char msg[] = "\nthread 'main' has overflowed its stack\nfatal runtime error: stack overflow\n";
	(void)!write(2, msg, sizeof msg - 1);
	signal(sig, SIG_DFL); /* return: the fault repeats under the default action */
}

#pragma GCC diagnostic ignored "-Winfinite-recursion"
static int recurse(volatile char *prev, int depth)
{
	volatile char buf[4096];
	buf[0] = (char)depth;
	buf[4095] = prev ? prev[0] : 0;
	return recurse(buf, depth + 1) + buf[100];
}

int main(void)
{
	struct sigaction cur;
	sigaction(SIGSEGV, NULL, &cur);
	if (cur.sa_handler == SIG_DFL && !(cur.sa_flags & SA_SIGINFO)) {
		stack_t ss;
		ss.ss_sp = malloc(65536);
		ss.ss_size = 65536;
		ss.ss_flags = 0;
		sigaltstack(&ss, NULL);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGSEGV, &sa, NULL);
	}
	printf("recursing\n");
	fflush(stdout);
	return recurse(NULL, 0);
}
