/* Does some recorded work, then crashes (SIGSEGV) or aborts (argv[1] = abort). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	for (int i = 0; i < 1000; i++)
		free(malloc(4096));
	int fd = open("/proc/self/status", O_RDONLY);
	char buf[256];
	while (read(fd, buf, sizeof buf) > 0)
		;
	close(fd);
	printf("about to crash\n");
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "abort") == 0)
		abort();
	volatile int *p = NULL;
	*p = 1;
	return 0;
}
