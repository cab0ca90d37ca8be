/* diag_check.h — running the diagnostics over a hand-built recording and
 * checking which rules fired (the rule tests). A failed check prints every
 * finding, then fails the current cmocka test. Include after <cmocka.h>. */
#ifndef PP_DIAG_CHECK_H
#define PP_DIAG_CHECK_H

#include <stdio.h>
#include <string.h>

#include "diagnostics.h"
#include "testutil.h"

/* r's findings for t's current run (r's old ones freed). */
static inline void tdiag_analyze(trec *t, pp_diag_result *r)
{
	pp_diag_result_free(r);
	if (pp_diag_analyze(t->st, t->run, r) != 0)
		fail_msg("pp_diag_analyze: %s", r->error);
}

static inline const pp_finding *tdiag_get(const pp_diag_result *r, const char *rule)
{
	int i = pp_diag_find(r->findings, r->n, rule);
	return i >= 0 ? &r->findings[i] : NULL;
}

/* The finding of rule, which must be there. */
static inline const pp_finding *tdiag_must(const pp_diag_result *r, const char *rule)
{
	const pp_finding *f = tdiag_get(r, rule);
	if (!f) {
		pp_diag_print(stderr, r->findings, r->n, 0);
		fail_msg("expected a %s finding", rule);
	}
	return f;
}

static inline void tdiag_quiet(const pp_diag_result *r, const char *rule)
{
	if (tdiag_get(r, rule)) {
		pp_diag_print(stderr, r->findings, r->n, 0);
		fail_msg("unexpected %s finding", rule);
	}
}

#define tdiag_contains(hay, needle)                                                        \
	do {                                                                               \
		if (!strstr((hay), (needle)))                                              \
			fail_msg("'%s' does not contain '%s'", (hay), (needle));           \
	} while (0)

#endif
