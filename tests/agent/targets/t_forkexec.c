/* fork + exec chain. The parent forks; the child rewrites its environment
 * (drops everything, LD_PRELOAD included) and execs this program again as
 * "stage2", which posix_spawns /bin/true and exits 7. The parent waits and
 * reports the child's status. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "stage2") == 0) {
		pid_t p;
		char *av[] = {"true", NULL};
		char *env[] = {"PATH=/usr/bin:/bin", NULL};
		if (posix_spawn(&p, "/bin/true", NULL, NULL, av, env) != 0)
			return 2;
		int st;
		waitpid(p, &st, 0);
		printf("stage2 spawned true: %d\n", WEXITSTATUS(st));
		fflush(stdout);
		return 7;
	}
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		clearenv();
		setenv("PATH", "/usr/bin:/bin", 1);
		char *av[] = {argv[0], "stage2", NULL};
		execv("/proc/self/exe", av);
		_exit(99);
	}
	int st;
	waitpid(c, &st, 0);
	printf("child exited %d\n", WEXITSTATUS(st));
	return 0;
}
