/* A program that takes its descriptor table in hand at start-up, as a
 * daemon or a test harness does: its first open() must return the lowest free number, dup2 over
 * the numbers above up to 4095 must never fail (EBUSY: another thread was between allocating a
 * number and installing it) and every descriptor it made must still be open
 * afterwards. The agent's threads start while main runs; before the fix the
 * stats thread's sysconf() opened and closed a /sys file then. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOP 4096

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	int bad = 0;
	double end = now() + 0.03;
	for (int round = 0; now() < end || round < 3; round++) {
		int want = 0; /* the lowest free number (a test harness may leave some open) */
		while (fcntl(want, F_GETFD) >= 0)
			want++;
		int o = open("/dev/null", O_RDONLY);
		if (o != want) {
			printf("round %d: open returned %d, not %d\n", round, o, want);
			bad = 1;
		}
		for (int fd = o + 1; fd < TOP; fd++)
			if (dup2(o, fd) < 0) {
				printf("round %d: dup2 over %d: %s\n", round, fd, strerror(errno));
				bad = 1;
			}
		for (int fd = o; fd < TOP; fd++)
			if (fcntl(fd, F_GETFD) < 0) {
				printf("round %d: descriptor %d closed behind our back\n", round, fd);
				bad = 1;
			}
		for (int fd = o; fd < TOP; fd++)
			close(fd);
		if (bad)
			return 1;
	}
	printf("startfds done\n");
	return 0;
}
