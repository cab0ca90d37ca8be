/* Blocks SIGALRM (as programs that sigwait for their timers do), starts a
 * thread, then frees a 5000-byte block twice: glibc aborts from inside
 * free() with the arena lock held. Exit 134, at once. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *idle(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

int main(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	pthread_t t;
	pthread_create(&t, NULL, idle, NULL);
	for (int i = 0; i < 1000; i++)
		free(malloc(100));
	char *volatile p = malloc(5000);
	char *volatile q = malloc(5000); /* keeps p off the top chunk */
	printf("about to free twice\n");
	fflush(stdout);
	free(p);
	free(p);
	free(q);
	return 0;
}
