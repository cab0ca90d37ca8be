/* The transfer scenario without a GPU: its availability says the probe's
 * reason for each way a GPU can be missing, the question is answered in a
 * child process (the caller must never initialise CUDA: the scenario's
 * variants run in forked children, and CUDA does not survive a fork), and a
 * run of it is refused with the same reason. One case per process (the
 * answer is cached for the process):
 *   test_gpu_transfer nodriver|nodevice|stub|noruntime FAKE_LIBCUDA [PHASEPROF]
 * Exit 77 (skipped) if a real GPU answered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenarios.h"

static int failures;
#define CHECK(cond, ...)                                                                          \
	do {                                                                                      \
		if (!(cond)) {                                                                    \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);           \
			fprintf(stderr, __VA_ARGS__);                                             \
			fputc('\n', stderr);                                                      \
			failures++;                                                               \
		}                                                                                 \
	} while (0)

/* 1 if a library whose path contains `needle` is mapped in this process. */
static int mapped(const char *needle)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	char line[1024];
	int hit = 0;
	while (!hit && fgets(line, sizeof line, f))
		hit = strstr(line, needle) != NULL;
	fclose(f);
	return hit;
}

/* Runs `phaseprof args...` with stdout+stderr captured into out. */
static int run_cli(const char *exe, char *out, size_t len, const char *a1, const char *a2, const char *a3,
		   const char *a4)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		dup2(fd[1], 2);
		close(fd[0]);
		close(fd[1]);
		execl(exe, exe, a1, a2, a3, a4, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	size_t got = 0;
	ssize_t r;
	while ((r = read(fd[0], out + got, len - 1 - got)) > 0 && (got += (size_t)r) < len - 1)
		;
	out[got] = 0;
	close(fd[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s nodriver|nodevice|stub|noruntime FAKE_LIBCUDA [PHASEPROF]\n", argv[0]);
		return 2;
	}
	const char *mode = argv[1], *fake = argv[2], *cli = argc > 3 ? argv[3] : NULL;
	const char *want;
	if (strcmp(mode, "nodriver") == 0) {
		setenv("PHASEPROF_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
		want = "no usable GPU (no_driver): no NVIDIA driver";
	} else if (strcmp(mode, "nodevice") == 0) {
		setenv("PHASEPROF_LIBCUDA", fake, 1);
		setenv("FAKE_CUINIT", "100", 1);
		want = "no usable GPU (no_device)";
	} else if (strcmp(mode, "stub") == 0) {
		setenv("PHASEPROF_LIBCUDA", fake, 1);
		setenv("FAKE_CUINIT", "34", 1);
		want = "no usable GPU (stub_driver)";
	} else {
		/* the probe passes (fake driver); the CUDA runtime then finds no
		 * real driver, or the build has no CUDA backend */
		setenv("PHASEPROF_LIBCUDA", fake, 1);
		setenv("FAKE_CUINIT", "0", 1);
#ifdef PP_HAVE_FLOW_CUDA
		want = "GPU unavailable, running on the CPU: cudaSetDevice(0)";
#else
		want = "built without flow's CUDA backend";
#endif
	}
	const pp_scenario *s = pp_scenario_find("transfer");
	CHECK(s != NULL, "no transfer scenario");
	if (!s)
		return 1;
	CHECK(pp_scenario_num_variants(s) == 3, "%d variants", pp_scenario_num_variants(s));
	char why[600] = "";
	int ok = pp_scenario_available(s, why, sizeof why);
	if (ok) {
		printf("transfer %s: a real GPU answered (%s): skipped\n", mode, why);
		return 77;
	}
	CHECK(strstr(why, want) != NULL, "reason '%s' lacks '%s'", why, want);
	/* asked in a child: neither the driver nor the CUDA runtime's view of it
	 * is loaded here */
	CHECK(!mapped("fake_libcuda") && !mapped("libcuda.so"), "the driver was loaded in the caller");
	char again[600] = "";
	CHECK(pp_scenario_available(s, again, sizeof again) == 0 && strcmp(again, why) == 0,
	      "second answer '%s'", again);
	/* a short buffer gets a truncated, terminated reason */
	char tiny[8];
	pp_scenario_available(s, tiny, sizeof tiny);
	CHECK(strlen(tiny) == sizeof tiny - 1, "tiny '%s'", tiny);

	if (cli) {
		char out[8192], db[256];
		snprintf(db, sizeof db, "%s/ppgpu-transfer-%d.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
			 (int)getpid());
		int rc = run_cli(cli, out, sizeof out, "list", NULL, NULL, NULL);
		CHECK(rc == 0, "list exit %d", rc);
		CHECK(strstr(out, want) != NULL, "list lacks the reason: %s", out);
		rc = run_cli(cli, out, sizeof out, "run", "transfer", "-o", db);
		CHECK(rc == 1, "run exit %d", rc);
		CHECK(strstr(out, "skipped: cannot run here: ") && strstr(out, want), "run output: %s", out);
		unlink(db);
	}
	if (failures)
		fprintf(stderr, "transfer %s: %d check(s) failed\n", mode, failures);
	else
		printf("transfer %s: ok (%s)\n", mode, why);
	return failures ? 1 : 0;
}
