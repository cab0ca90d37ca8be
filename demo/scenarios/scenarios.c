/* scenarios.c — the scenario table, its accessors and the child-side runner. */
#include "scn_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phaseprof.h"
#include "pp_env.h"

/* Order of `phaseprof list` and `run --all`: start-up first, then the loop
 * problems, as a user meets them. */
static const pp_scenario *const table[] = {
	&scn_startup, &scn_model_init, &scn_repeated_init, &scn_growing_graph,
	&scn_first_step, &scn_retracing,  &scn_alloc_churn,   &scn_transfer,
};

const char *pp_scn_size_name(int size)
{
	switch (size) {
	case PP_SCN_FULL:
		return "full";
	case PP_SCN_QUICK:
		return "quick";
	case PP_SCN_SMOKE:
		return "smoke";
	}
	return "?";
}

int pp_scn_size_from_name(const char *s)
{
	for (int i = PP_SCN_FULL; i <= PP_SCN_SMOKE; i++)
		if (strcmp(s, pp_scn_size_name(i)) == 0)
			return i;
	return -1;
}

int pp_scenario_count(void)
{
	return SCN_COUNT(table);
}

const pp_scenario *pp_scenario_at(int i)
{
	return i >= 0 && i < SCN_COUNT(table) ? table[i] : NULL;
}

const pp_scenario *pp_scenario_find(const char *name)
{
	for (int i = 0; i < SCN_COUNT(table); i++)
		if (strcmp(table[i]->name, name) == 0)
			return table[i];
	return NULL;
}

const char *pp_scenario_name(const pp_scenario *s) { return s->name; }
const char *pp_scenario_complaint(const pp_scenario *s) { return s->complaint; }
const char *pp_scenario_source(const pp_scenario *s) { return s->source; }
const char *pp_scenario_metric_name(const pp_scenario *s) { return s->metric; }
int pp_scenario_num_variants(const pp_scenario *s) { return s->n_variants; }

const char *pp_scenario_variant_name(const pp_scenario *s, int v)
{
	return v >= 0 && v < s->n_variants ? s->variants[v].name : NULL;
}

int pp_scenario_variant_kind(const pp_scenario *s, int v)
{
	return v >= 0 && v < s->n_variants ? s->variants[v].kind : -1;
}

const char *pp_scn_variant_kind_name(int kind)
{
	return kind == SCN_SLOW ? "slow" : kind == SCN_FIX ? "fix" : kind == SCN_PROBE ? "probe" : "?";
}

const char *pp_scenario_variant_expect(const pp_scenario *s, int v)
{
	if (v < 0 || v >= s->n_variants || s->variants[v].kind != SCN_SLOW)
		return NULL;
	if (s->variants[v].expect)
		return s->variants[v].expect;
	return s->n_rules > 0 ? s->rules[0] : NULL;
}

const char *pp_scenario_variant_what(const pp_scenario *s, int v)
{
	return v >= 0 && v < s->n_variants ? s->variants[v].what : NULL;
}

int pp_scenario_variant_find(const pp_scenario *s, const char *name)
{
	for (int v = 0; v < s->n_variants; v++)
		if (strcmp(s->variants[v].name, name) == 0)
			return v;
	return -1;
}

const char *const *pp_scenario_rules(const pp_scenario *s, int *n)
{
	*n = s->n_rules;
	return s->rules;
}

int pp_scenario_available(const pp_scenario *s, char *why, size_t len)
{
	if (why && len)
		why[0] = 0;
	return s->available ? s->available(why, len) : 1;
}

int pp_scenario_prepare(const pp_scenario *s, const char *workdir, int size, char *err,
			size_t errlen)
{
	return s->prepare ? s->prepare(workdir, size, err, errlen) : 0;
}

/* Test hook: PHASEPROF_SCN_CRASH=<scenario>/<variant> makes that variant's
 * process abort after its work, before the recorder is closed, so the
 * crash path (partial spool, status "crashed") can be tested end to end. */
static int crash_requested(const pp_scenario *s, int v)
{
	const char *c = getenv(PP_ENV_SCN_CRASH);
	if (!c)
		return 0;
	size_t n = strlen(s->name);
	return strncmp(c, s->name, n) == 0 && c[n] == '/' &&
	       strcmp(c + n + 1, s->variants[v].name) == 0;
}

int pp_scenario_child(const pp_scenario *s, int v, const pp_scn_child_opts *o, char *err,
		      size_t errlen)
{
	uint64_t main_ns = scn_mono_ns();
	if (v < 0 || v >= s->n_variants) {
		snprintf(err, errlen, "%s: no variant %d", s->name, v);
		return -1;
	}
	char label[160];
	snprintf(label, sizeof label, "%s:%s", s->name, s->variants[v].name);
	pp_options po;
	memset(&po, 0, sizeof po);
	po.spool_path = o->spool_path;
	po.label = label;
	po.scenario = s->name;
	po.variant = s->variants[v].name;
	po.fork_policy = PP_FORK_DISABLE;
	/* drain often: a variant that crashes keeps all but its last 10 ms */
	po.flush_ms = 10;
	if (pp_open(&po) != 0) {
		snprintf(err, errlen, "%s", pp_last_error());
		return -1;
	}
	pp_meta("scenario.size", pp_scn_size_name(o->size));
	pp_meta("scenario.what", s->variants[v].what);
	if (o->fork_mono_ns && main_ns > o->fork_mono_ns) {
		/* fork + exec + dynamic loading + constructors, until main: the part
		 * of start-up no in-process phase can see. */
		char b[32];
		snprintf(b, sizeof b, "%llu", (unsigned long long)(main_ns - o->fork_mono_ns));
		pp_meta("scenario.fork_to_main_ns", b);
	}
	scn_env e = {o->size, o->workdir, o->fork_mono_ns, err, errlen};
	err[0] = 0;
	scn_sample_proc();
	int rc = s->variants[v].run(&e);
	scn_sample_proc();
	if (rc != 0 && !err[0])
		snprintf(err, errlen, "%s: failed without a message", label);
	if (rc != 0)
		pp_meta("scenario.error", err);
	if (crash_requested(s, v))
		abort();
	pp_close();
	return rc;
}
