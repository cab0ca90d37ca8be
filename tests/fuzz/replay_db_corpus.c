/* Replays the database seed corpus through the store's read API in the
 * normal build: ok_* files open and read without error, bad_* are refused
 * at open (one line naming the file) or report a read error; none crashes.
 * Usage: replay_db_corpus <corpus/db dir>. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>

#include "fuzz_db_common.h"

static const char *dir;

static void test_replay(void **state)
{
	(void)state;
	char path[2048], err[512];
	int ok = 0, bad = 0;
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		int r = fz_read_db(path, err, sizeof err);
		int want_ok = strncmp(e->d_name, "ok_", 3) == 0;
		if ((r == 1) != want_ok) {
			print_error("%s: expected %s, got %s\n", path, want_ok ? "clean reads" : "a refusal or read error",
				    r == 1 ? "clean reads" : r == 0 ? err : "a read error");
			fail();
		}
		if (want_ok)
			ok++;
		else
			bad++;
	}
	closedir(d);
	assert_true(ok >= 1);
	assert_true(bad >= 3);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: replay_db_corpus DIR\n");
		return 2;
	}
	dir = argv[1];
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_replay)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
