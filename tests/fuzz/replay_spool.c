/* Replays the committed spool seed corpus through the reader and ingest in
 * the normal build: ok_* spools are ingested, bad_* refused with a one-line
 * message naming the file. Usage: replay_spool <corpus dir>. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>

#include "fuzz_spool_common.h"

static const char *corpus;

static void test_spool_corpus(void **state)
{
	(void)state;
	char dir[1024], path[2048], db[64], work[64], err[512];
	snprintf(dir, sizeof dir, "%s/spool", corpus);
	snprintf(db, sizeof db, "/tmp/pp-replay-spool-%d.db", (int)getpid());
	unlink(db);
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	int ok = 0, bad = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		static unsigned char buf[1 << 16];
		size_t n = fread(buf, 1, sizeof buf, f);
		fclose(f);
		/* the copy is named like the seed, so messages name it */
		snprintf(work, sizeof work, "/tmp/pp-replay-%d-%.20s", (int)getpid(), e->d_name);
		int rc = spool_fuzz_one(st, work, buf, n, err, sizeof err);
		unlink(work);
		int want_ok = strncmp(e->d_name, "ok_", 3) == 0;
		if ((rc == 0) != want_ok) {
			print_error("%s: expected %s, got %s\n", path, want_ok ? "accept" : "reject",
				    rc == 0 ? "accept" : err);
			fail();
		}
		if (rc == 0)
			ok++;
		else
			bad++;
	}
	closedir(d);
	assert_true(ok >= 5 && bad >= 4);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	unlink(db);
}

int main(int argc, char **argv)
{
	corpus = argc > 1 ? argv[1] : "corpus";
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_spool_corpus)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
