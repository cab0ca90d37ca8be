/* The transfer scenario without a GPU: its availability says the probe's
 * reason for each way a GPU can be missing, the question is answered in a
 * child process (the caller must never initialise CUDA: the scenario's
 * variants run in forked children, and CUDA does not survive a fork), and a
 * run of it is refused with the same reason. One case per process (the
 * answer is cached for the process):
 *   test_gpu_transfer nodriver|nodevice|stub|noruntime FAKE_LIBCUDA [PHASEPROF]
 * Exit 77 (skipped) if a real GPU answered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios.h"
#include "pp_testutil.h"

static const char *mode, *fake, *cli;
static int skipped; /* a real GPU answered: exit 77 so ctest says skipped */

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

static void test_unavailable(void **state)
{
	(void)state;
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
	assert_non_null(s);
	assert_int_equal(pp_scenario_num_variants(s), 3);
	char why[600] = "";
	if (pp_scenario_available(s, why, sizeof why)) {
		printf("transfer %s: a real GPU answered (%s): skipped\n", mode, why);
		skipped = 1;
		skip();
	}
	if (!strstr(why, want))
		fail_msg("reason '%s' lacks '%s'", why, want);
	/* asked in a child: neither the driver nor the CUDA runtime's view of it
	 * is loaded here */
	if (mapped("fake_libcuda") || mapped("libcuda.so"))
		fail_msg("the driver was loaded in the caller");
	char again[600] = "";
	assert_int_equal(pp_scenario_available(s, again, sizeof again), 0);
	assert_string_equal(again, why);
	/* a short buffer gets a truncated, terminated reason */
	char tiny[8];
	pp_scenario_available(s, tiny, sizeof tiny);
	assert_int_equal(strlen(tiny), sizeof tiny - 1);

	if (cli) {
		char out[8192], db[256];
		snprintf(db, sizeof db, "%s/ppgpu-transfer-%d.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
			 (int)getpid());
		char *list[] = {(char *)cli, "list", NULL}, *run[] = {(char *)cli, "run", "transfer", "-o", db, NULL};
		assert_int_equal(ppt_run(list, NULL, 1, out, sizeof out), 0);
		if (!strstr(out, want))
			fail_msg("list lacks the reason: %s", out);
		assert_int_equal(ppt_run(run, NULL, 1, out, sizeof out), 1);
		unlink(db);
		if (!strstr(out, "skipped: cannot run here: ") || !strstr(out, want))
			fail_msg("run output: %s", out);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s nodriver|nodevice|stub|noruntime FAKE_LIBCUDA [PHASEPROF]\n", argv[0]);
		return 2;
	}
	mode = argv[1], fake = argv[2], cli = argc > 3 ? argv[3] : NULL;
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_unavailable)};
	int rc = cmocka_run_group_tests_name(mode, tests, NULL, NULL);
	return rc == 0 && skipped ? 77 : rc;
}
