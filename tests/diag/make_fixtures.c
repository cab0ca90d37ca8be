/* make_fixtures DIR — writes the databases tests/diag/diff_cli.sh compares:
 *   a.db     one run: 40 steps of 2 ms, compile 10 ms, weights 20 ms
 *   b.db     one run: steps 3 ms (regression), weights 8 ms (improvement)
 *   two.db   both runs in one database
 *   three.db three runs (diff needs --runs)
 *   empty.db no runs */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"

static void make(const char *dir, const char *name, int which)
{
	trec t;
	memset(&t, 0, sizeof t);
	snprintf(t.path, sizeof t.path, "%s/%s", dir, name);
	unlink(t.path);
	char err[512];
	t.st = pp_store_open(t.path, PP_STORE_WRITE, err, sizeof err);
	if (!t.st) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	if (which & 1)
		fixture_run(&t, "base", 40, 2 * MS, 0.03, 10 * MS, 20 * MS, 1);
	if (which & 2)
		fixture_run(&t, "slower \"quoted\"", 40, 3 * MS, 0.03, 10200 * US, 8 * MS, 2);
	if (which & 4)
		fixture_run(&t, "third", 40, 2 * MS, 0.03, 10 * MS, 20 * MS, 3);
	trec_close(&t);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_fixtures DIR\n");
		return 2;
	}
	make(argv[1], "a.db", 1);
	make(argv[1], "b.db", 2);
	make(argv[1], "two.db", 3);
	make(argv[1], "three.db", 7);
	make(argv[1], "empty.db", 0);
	return 0;
}
