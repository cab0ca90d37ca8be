/* fixtures.c — recordings shared by the diff tests and the CLI test. */
#include "fixtures.h"

#include "testutil.h"

/* A training-like run: start-up phases, then n steps of step_ns with
 * relative noise, each with an op-like compute span. */
int64_t fixture_run(trec *t, const char *label, int n, double step_ns, double noise,
		    int64_t compile_ns, int64_t weight_ns, uint64_t seed)
{
	trec_run(t, label, 0);
	int64_t now = 0;
	trec_span(t, PP_RUNTIME_INIT, "init", now, now + 3 * MS, 0, -1);
	now += 3 * MS;
	if (weight_ns) {
		trec_span(t, PP_WEIGHT_LOAD, "weights", now, now + weight_ns, 0, -1);
		now += weight_ns;
	}
	if (compile_ns) {
		trec_span(t, PP_COMPILE, "compile", now, now + compile_ns, 0, -1);
		now += compile_ns;
	}
	for (int i = 0; i < n; i++) {
		double d = step_ns * (1 + noise * trand_normal(&seed));
		if (d < step_ns / 10)
			d = step_ns / 10;
		trec_span(t, PP_STEP, "step", now, now + (int64_t)d, 0, i);
		now += (int64_t)d + 5 * US;
	}
	char sql[128];
	snprintf(sql, sizeof sql, "UPDATE runs SET duration_ns = %lld WHERE id = %lld", (long long)now,
		 (long long)t->run);
	trec_exec(t, sql);
	return t->run;
}
