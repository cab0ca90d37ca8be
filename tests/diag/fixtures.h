#ifndef PP_DIAG_FIXTURES_H
#define PP_DIAG_FIXTURES_H
#include <stdio.h>
#include "testutil.h"
int64_t fixture_run(trec *t, const char *label, int n, double step_ns, double noise,
		    int64_t compile_ns, int64_t weight_ns, uint64_t seed);
#endif
