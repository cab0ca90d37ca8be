/* make_nested DB — two runs of a loop of 30 iterations whose every step
 * holds a nested step (what demo/flow/session.c records for session.run inside
 * a training loop): 2 ms outer steps, each with a 0.2 ms inner step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static void nested_run(trec *t, const char *label, uint64_t seed)
{
	trec_run(t, label, 0);
	int64_t now = 0;
	trec_span(t, PP_RUNTIME_INIT, "init", now, now + 3 * MS, 0, -1);
	now += 3 * MS;
	for (int i = 0; i < 30; i++) {
		int64_t d = (int64_t)(2 * MS * (1 + 0.02 * trand_normal(&seed)));
		int64_t outer = trec_span(t, PP_STEP, "step", now, now + d, 0, i);
		trec_span(t, PP_STEP, "session.run", now + 100 * US, now + 300 * US, outer, i);
		now += d + 5 * US;
	}
	char sql[128];
	snprintf(sql, sizeof sql, "UPDATE runs SET duration_ns = %lld WHERE id = %lld", (long long)now,
		 (long long)t->run);
	trec_exec(t, sql);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_nested DB\n");
		return 2;
	}
	trec t;
	memset(&t, 0, sizeof t);
	snprintf(t.path, sizeof t.path, "%s", argv[1]);
	unlink(t.path);
	char err[512];
	t.st = pp_store_open(t.path, PP_STORE_WRITE, err, sizeof err);
	if (!t.st) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	nested_run(&t, "before", 1);
	nested_run(&t, "after", 2);
	trec_close(&t);
	return 0;
}
