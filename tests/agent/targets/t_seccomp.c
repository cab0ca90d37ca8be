/* A program that sandboxes itself: after some work it installs a seccomp
 * allow-list of exactly the calls it makes from then on (write, exit_group;
 * anything else: SIGSYS), writes, allocates a little (served from memory
 * the allocator already has) and exits 0. argv[1] = "syscall": installed
 * through syscall(SYS_seccomp) as libseccomp does, else prctl. Under
 * record it died by SIGSYS (159): the agent named fd 1 with readlink after
 * the first write. */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	for (int i = 0; i < 1000; i++)
		free(malloc(64));
	void *keep = malloc(256); /* the allocator's memory is in place before the filter */
	free(keep);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit_group, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return 2;
	int r = argc > 1 && strcmp(argv[1], "syscall") == 0
			? (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)
			: prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
	if (r != 0)
		return 3;
	static const char msg[] = "sandboxed\n";
	if (write(1, msg, sizeof msg - 1) != (ssize_t)(sizeof msg - 1))
		return 4;
	for (int i = 0; i < 100; i++)
		free(malloc(64));
	if (write(1, msg, sizeof msg - 1) != (ssize_t)(sizeof msg - 1))
		return 4;
	syscall(SYS_exit_group, 0); /* exit() would flush stdio: nothing there, but no fstat either */
	return 0;
}
