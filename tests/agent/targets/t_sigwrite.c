/* A signal handler that writes (async-signal-safe) to descriptors the
 * program created without open() (memfd_create: a new name each round),
 * landing while the main thread is inside malloc/free of blocks above the
 * tcache limit (the arena lock held). Under an agent whose write hook
 * allocates, this deadlocks. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

static volatile int cur = -1;
static volatile long hits;

static void on_alarm(int sig)
{
	(void)sig;
	int fd = cur;
	if (fd >= 0 && write(fd, "x", 1) == 1)
		hits++;
}

int main(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 100}, {0, 100}};
	setitimer(ITIMER_REAL, &it, NULL);
	void *keep[8] = {0};
	for (int r = 0; r < 300; r++) {
		char name[32];
		snprintf(name, sizeof name, "pp-sigwrite-%d", r);
		int fd = memfd_create(name, 0);
		cur = fd;
		for (long i = 0; i < 20000; i++) {
			int k = (int)(i & 7);
			free(keep[k]);
			keep[k] = malloc(2000 + (size_t)(i & 1023) * 8);
		}
		cur = -1;
		close(fd);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	for (int k = 0; k < 8; k++)
		free(keep[k]);
	printf("signal writes done: %s\n", hits > 0 ? "yes" : "no");
	return 0;
}
