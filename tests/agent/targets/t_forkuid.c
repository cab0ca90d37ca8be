/* A program that drops its privileges (setresuid to nobody) or changes its
 * root (chroot into an empty folder), then forks a child that allocates
 * and exits: the child cannot reach the spool folder, and must not be
 * missing silently (issue 22, item 10): the parent's run says so. Root
 * only (the test skips otherwise). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (strcmp(argv[1], "chroot") == 0) {
		mkdir("jail", 0755);
		if (chroot("jail") != 0 || chdir("/") != 0)
			return 3;
	} else if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) {
		return 3;
	}
	pid_t p = fork();
	if (p < 0)
		return 4;
	if (p == 0) {
		for (int i = 0; i < 100; i++)
			free(malloc(100));
		_exit(0);
	}
	int st;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 5;
	printf("forkuid done\n");
	return 0;
}
