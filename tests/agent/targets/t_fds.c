/* A daemon-style program that closes every inherited descriptor, then
 * points every slot at its own file (as `exec 3>file` does for one): the
 * recording must survive (argv[1] = close: close them all first) and the program's file hold only its own bytes. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int close_first = argc > 1 && strcmp(argv[1], "close") == 0;
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	int max = rl.rlim_cur > 4096 ? 4096 : (int)rl.rlim_cur;
	if (close_first)
		for (int fd = 3; fd < max; fd++)
			close(fd);
	int own = open("own.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int round = 0; round < 3; round++) {
		for (int fd = 3; fd < max; fd++)
			if (fd != own)
				dup2(own, fd);
		for (int i = 0; i < 1000; i++)
			free(malloc(100 + (size_t)i));
		usleep(120000); /* the spool writer's flushes happen now */
		for (int fd = 3; fd < max; fd++)
			if (fd != own)
				close(fd);
	}
	const char msg[] = "program's own line\n";
	if (write(own, msg, strlen(msg)) != (ssize_t)strlen(msg))
		return 1;
	close(own);
	printf("fds done\n");
	return 0;
}
