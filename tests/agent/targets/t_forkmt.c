/* Forks from a multi-threaded parent whose threads keep recording (and so
 * keep waking the spool writer); each child records enough to hand the
 * writer several full buffers, then leaves with _exit. No child may hang. */
#include "phaseprof_annotate.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;

static void *work(void *arg)
{
	(void)arg;
	while (!stop) {
		for (int i = 0; i < 16384 && !stop; i++) /* one recorder buffer */
			PPA_MARK("parent tick");
		usleep(20000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int forks = argc > 1 ? atoi(argv[1]) : 10;
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, work, NULL);
	int ok = 0;
	for (int f = 0; f < forks; f++) {
		usleep(7000);
		pid_t c = fork();
		if (c == 0) {
			for (int i = 0; i < 40000; i++)
				PPA_MARK("child tick");
			_exit(0);
		}
		int st;
		if (waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("children exited: %d of %d\n", ok, forks);
	return 0;
}
