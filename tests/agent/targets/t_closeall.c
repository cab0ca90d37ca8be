/* The classic daemon start: close every descriptor up to RLIMIT_NOFILE, one
 * close() each, then open a file: it must get 3, as without phaseprof (the
 * spool once followed the loop up to the limit and fell back to 3, ~19,000
 * fcntls later). Then allocations, so the spool is written after the loop,
 * and a close_range(3, ~0U) for the same in one call. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static int check_first_open(const char *when)
{
	int o = open("/dev/null", O_RDONLY);
	if (o != 3) {
		printf("%s: first open returned %d\n", when, o);
		return 1;
	}
	close(o);
	return 0;
}

int main(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	long max = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1 << 20) ? (1 << 20) : (long)rl.rlim_cur;
	for (long fd = 3; fd < max; fd++)
		close((int)fd);
	if (check_first_open("after the close loop"))
		return 1;
	for (int i = 0; i < 20000; i++)
		free(malloc(64 + (size_t)(i & 255)));
	usleep(60000); /* the spool's writes happen now */
	if (check_first_open("after writes"))
		return 1;
	close_range(3, ~0U, 0);
	for (int i = 0; i < 20000; i++)
		free(malloc(64 + (size_t)(i & 255)));
	usleep(60000);
	if (check_first_open("after close_range"))
		return 1;
	printf("closeall done\n");
	return 0;
}
