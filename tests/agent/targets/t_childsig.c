/* Children that die by a signal their own agent cannot see: the first
 * replaces the SIGABRT handler (as Open MPI does: a message, then the
 * signal again under the default action) and aborts; the second is
 * killed by SIGKILL. The parent reaps both with waitpid and says how
 * they ended. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_abrt(int sig)
{
	static const char msg[] = "own SIGABRT handler\n";
	(void)!write(2, msg, sizeof msg - 1);
	raise(sig); /* SA_RESETHAND: the default action now */
}

int main(void)
{
	fflush(stdout);
	pid_t a = fork();
	if (a == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_abrt;
		sa.sa_flags = SA_RESETHAND | SA_NODEFER;
		sigaction(SIGABRT, &sa, NULL);
		abort();
	}
	int st;
	waitpid(a, &st, 0);
	printf("child 1: signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	fflush(stdout);
	pid_t k = fork();
	if (k == 0) {
		raise(SIGKILL);
		_exit(0);
	}
	waitpid(k, &st, 0);
	printf("child 2: signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return 0;
}
