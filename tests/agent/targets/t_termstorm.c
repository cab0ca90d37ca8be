/* A thread sends the process SIGTERM 200 times in a row while the main
 * thread allocates: the process dies by SIGTERM (exit 143), it never hangs. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *storm(void *arg)
{
	(void)arg;
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
