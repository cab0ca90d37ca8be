/* A child made by a raw clone3 (or clone) system call, not fork(): no
 * atfork handler runs in it, so it holds a copy of the agent's state,
 * the parent's spool descriptor included. It allocates (filling the
 * recorder's buffers), then leaves by exit() (atexit handlers run) or
 * _exit(). It must run and exit as it would without phaseprof (no hang on
 * a lock or a thread of the parent's), write nothing into the parent's
 * spool, and the parent's run must say that a child was not followed
 * (issue 22, item 10). The parent records before and after. With "marks"
 * the child also records marks through the agent's pp_mark (looked up:
 * absent in a plain run), enough to fill the recorder's buffers. */
#include <dlfcn.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void churn(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(64 + (size_t)(i % 512));
		if (p)
			memset(p, i, 16);
		free(p);
	}
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "clone3";
	const char *leave = argc > 2 ? argv[2] : "exit";
	int marks = argc > 3 && strcmp(argv[3], "marks") == 0;
	void (*mark)(const char *) = marks ? (void (*)(const char *))dlsym(RTLD_DEFAULT, "pp_mark") : NULL;
	churn(20000);
	long pid;
	if (strcmp(how, "clone") == 0) {
		pid = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
	} else {
		struct clone_args a;
		memset(&a, 0, sizeof a);
		a.exit_signal = SIGCHLD;
		pid = syscall(SYS_clone3, &a, sizeof a);
	}
	if (pid < 0) {
		perror("clone");
		return 4;
	}
	if (pid == 0) {
		churn(200000);
		for (int i = 0; mark && i < 300000; i++)
			mark("child mark");
		if (strcmp(leave, "_exit") == 0)
			_exit(7);
		exit(7);
	}
	int st;
	if (waitpid((pid_t)pid, &st, 0) != (pid_t)pid) {
		perror("waitpid");
		return 5;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 7) {
		printf("child status %#x\n", st);
		return 6;
	}
	churn(20000);
	printf("clone3 done\n");
	return 0;
}
