/* A thread sends the process SIGTERM 200 times in a row while the main
 * thread allocates: the process dies by SIGTERM (exit 143), it never hangs.
 * The sender blocks SIGTERM itself (while the main thread has one pending
 * the kernel would hand the next to the sender), so every one lands on the
 * main thread, inside malloc or free or inside the agent's handler. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *storm(void *arg)
{
	(void)arg;
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	usleep(20000);
	for (int i = 0; i < 200; i++)
		kill(getpid(), SIGTERM);
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, storm, NULL);
	void *keep[8] = {0};
	for (long i = 0;; i++) {
		int k = (int)(i & 7);
		free(keep[k]);
		keep[k] = malloc(2000 + (size_t)(i & 1023) * 8);
	}
	return 0;
}
