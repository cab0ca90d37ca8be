/* A program run under a tight address-space limit (RLIMIT_AS, as batch
 * systems and `ulimit -v` set it):
 *   t_rlimit_as probe     the work without a limit; prints its VmPeak in KiB
 *   t_rlimit_as KIB       sets RLIMIT_AS to KIB, then the same work
 * The work: a thread of its own, 48 blocks of 1 MiB written, 300 ms idle
 * (the agent's threads tick and drain meanwhile), everything freed. Last,
 * the number of malloc arenas (malloc_info): the agent's threads must not
 * have added one. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void *worker(void *arg)
{
	void *p = malloc(1000);
	*(void **)arg = p;
	return NULL;
}

static long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, key, strlen(key)) == 0)
			v = atol(line + strlen(key) + 1);
	if (f)
		fclose(f);
	return v;
}

static int arenas(void)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	if (!m)
		return -1;
	malloc_info(0, m);
	fclose(m);
	int k = 0;
	for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++)
		k++;
	free(buf);
	return k;
}

int main(int argc, char **argv)
{
	int probe = argc < 2 || strcmp(argv[1], "probe") == 0;
	if (!probe) {
		struct rlimit rl;
		rl.rlim_cur = rl.rlim_max = (rlim_t)atol(argv[1]) * 1024;
		if (setrlimit(RLIMIT_AS, &rl) != 0) {
			perror("setrlimit");
			return 2;
		}
	}
	void *from_thread = NULL;
	pthread_t t;
	if (pthread_create(&t, NULL, worker, &from_thread) != 0 || pthread_join(t, NULL) != 0 ||
	    !from_thread) {
		printf("thread failed\n");
		return 1;
	}
	void *blocks[48];
	for (int i = 0; i < 48; i++) {
		blocks[i] = malloc(1 << 20);
		if (!blocks[i]) {
			printf("malloc failed at block %d\n", i);
			return 1;
		}
		memset(blocks[i], i, 1 << 20);
	}
	/* several periods of the agent's stats (20 ms) and writer (50 ms) threads: an
	 * arena either of them would make exists before it is counted */
	usleep(300000);
	long peak = status_kib("VmPeak:");
	int k = arenas();
	for (int i = 0; i < 48; i++)
		free(blocks[i]);
	free(from_thread);
	if (probe)
		printf("%ld\n", peak);
	else
		printf("48 MiB in 1 MiB blocks and a thread: ok; arenas %d\n", k);
	return 0;
}
