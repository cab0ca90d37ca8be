/* scn_testutil.c — see scn_testutil.h. */
#include "scn_testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int scn_t_run(const char *bin, const char *const *args, const char *env, char **out)
{
	char tmpl[] = "/tmp/scn-test-out-XXXXXX";
	int fd = mkstemp(tmpl);
	if (fd < 0)
		return -1;
	unlink(tmpl);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		if (env)
			putenv((char *)env);
		const char *argv[64];
		int n = 0;
		argv[n++] = bin;
		for (int i = 0; args[i] && n < 63; i++)
			argv[n++] = args[i];
		argv[n] = NULL;
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (out) {
		off_t len = lseek(fd, 0, SEEK_END);
		*out = malloc((size_t)len + 1);
		if (*out) {
			ssize_t got = pread(fd, *out, (size_t)len, 0);
			(*out)[got > 0 ? got : 0] = 0;
		}
	}
	close(fd);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

char *scn_t_tmpdir(void)
{
	static char buf[64];
	snprintf(buf, sizeof buf, "/tmp/scn-test-XXXXXX");
	return mkdtemp(buf);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void scn_t_rmdir(const char *dir)
{
	if (dir && strncmp(dir, "/tmp/scn-test-", 14) == 0)
		nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int64_t scn_t_run_id(pp_store *st, const char *scenario, const char *variant)
{
	pp_run_info *runs;
	int n;
	int64_t id = 0;
	if (pp_store_runs(st, &runs, &n) != 0)
		return 0;
	for (int i = 0; i < n; i++)
		if (strcmp(runs[i].scenario, scenario) == 0 && strcmp(runs[i].variant, variant) == 0)
			id = runs[i].id;
	free(runs);
	return id;
}

int scn_t_has(const char *str, const char *sub)
{
	return str && strstr(str, sub) != NULL;
}
