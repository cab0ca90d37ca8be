/* Uses SIGRTMIN+4 (and every other real-time signal from SIGRTMIN+2 up,
 * argv[1] = all) for itself, after start-up: it must receive exactly its
 * own 1000 queued signals, none from anyone else, while it burns CPU. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile long own, foreign;

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code == SI_QUEUE && si->si_pid == getpid() && si->si_value.sival_int == 42)
		own++;
	else
		foreign++;
}

int main(int argc, char **argv)
{
	int all = argc > 1 && strcmp(argv[1], "all") == 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int s = all ? SIGRTMIN + 2 : SIGRTMIN + 4; s <= (all ? SIGRTMAX : SIGRTMIN + 4); s++)
		sigaction(s, &sa, NULL);
	volatile unsigned long x = 0;
	union sigval v = {.sival_int = 42};
	for (int i = 0; i < 1000; i++) {
		sigqueue(getpid(), SIGRTMIN + 4, v);
		for (int k = 0; k < 200000; k++)
			x++;
	}
	printf("own %ld foreign %ld\n", own, foreign);
	return 0;
}
