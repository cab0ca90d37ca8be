/* diag.c — the rules engine: runs every rule on a run, ranks, stores, prints. */
#include "diag_internal.h"
#include "pp_debug.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct rule {
	const char *id;
	diag_rule_fn fn;
	const char *summary;
} rules[] = {
	{"iteration_time_grows", rule_iteration_time_grows,
	 "step time rises over the iterations (Mann-Kendall trend test, Theil-Sen and least-squares slope)"},
	{"graph_grows", rule_graph_grows,
	 "the graph gains nodes between session runs (snapshots, graph.nodes counter, graph_build inside steps)"},
	{"session_per_iteration", rule_session_per_iteration,
	 "a session is created inside the step loop"},
	/* Before first_step_slow, which defers to it. */
	{"first_step_compile", rule_first_step_compile,
	 "the first step is mostly torch.compile compilation (Dynamo, AOTAutograd, Inductor, C++ build)"},
	{"first_step_slow", rule_first_step_slow,
	 "the first step is many times the median step, with the breakdown of what it paid for"},
	{"repeated_retracing", rule_repeated_retracing,
	 "a traced function is traced again and again (retrace phases with their signatures)"},
	{"recompile_storm", rule_recompile_storm,
	 "torch.compile recompiles a function again and again, with the guard that failed"},
	{"repeated_phase_grows", rule_repeated_phase_grows,
	 "a phase repeated once per iteration (variable_init, session_create, compile...) gets slower each time"},
	{"op_registration_startup", rule_op_registration_startup,
	 "op registration takes a large share of start-up"},
	{"initializer_dominates_init", rule_initializer_dominates_init,
	 "variable initialisers take most of the initialisation time"},
	{"weight_load_small_reads", rule_weight_load_small_reads,
	 "weight loading is made of many small reads"},
	{"alloc_count_not_flat", rule_alloc_count_not_flat,
	 "allocations per steady step are not flat (allocator counters per step)"},
	{"library_load_startup", rule_library_load_startup,
	 "loading shared libraries takes a large share of start-up"},
	{"gpu_idle_gaps", rule_gpu_idle_gaps,
	 "the GPU sits idle between kernels"},
	{"gpu_sync_copies", rule_gpu_sync_copies,
	 "host-device copies from pageable memory or through synchronous calls"},
	{"gpu_step_transfers", rule_gpu_step_transfers,
	 "host<->device transfers inside every step"},
	{"gpu_short_kernels", rule_gpu_short_kernels,
	 "kernels shorter than their launch overhead"},
	{"memory_grows_per_step", rule_memory_grows_per_step,
	 "resident memory at the end of each step keeps rising (step.rss_bytes): tensors kept across steps"},
	{"gpu_memory_grows_per_step", rule_gpu_memory_grows_per_step,
	 "GPU memory held by tensors at the end of each step keeps rising (torch.cuda.allocated_bytes)"},
	{"data_starvation", rule_data_starvation,
	 "the steps spend a large share of their time waiting for the next batch (data_wait)"},
	{"weight_load_slow", rule_weight_load_slow,
	 "loading weights (torch.load, load_state_dict...) takes a large share of the run"},
	{"ddp_comm_exposed", rule_ddp_comm_exposed,
	 "DDP's gradient all-reduce runs on after backward's computation for a large share of each step "
	 "(exposed communication, per bucket)"},
	{"import_startup", rule_import_startup,
	 "Python imports dominate start-up: the slowest module and the library loaded inside it"},
	{"ranks", rule_ranks,
	 "distributed jobs (on the lowest rank): a failed rank, init / first-collective skew, a straggler "
	 "rank, communication share per step, slow communicator set-up"},
	{"recording_incomplete", rule_recording_incomplete,
	 "the run was cut short or lost events/rows, so findings may be incomplete (info)"},
	/* Last: it skips kinds a specific rule already explained. */
	{"phase_share", rule_phase_share,
	 "a phase takes N% of the run or of step time (5% moderate, 20% high, as the TensorFlow profiler) and at least 1 s / 5 s could be won back"},
};
#define N_RULES ((int)(sizeof rules / sizeof rules[0]))

static pp_diag_rule_info rule_infos[N_RULES];

const pp_diag_rule_info *pp_diag_rules(int *n)
{
	for (int i = 0; i < N_RULES; i++)
		rule_infos[i] = (pp_diag_rule_info){rules[i].id, rules[i].summary};
	*n = N_RULES;
	return rule_infos;
}

const char *diag_sev_name(int sev)
{
	return sev >= DIAG_HIGH ? "high" : sev == DIAG_MODERATE ? "moderate" : "info";
}

int diag_sev_from_name(const char *s)
{
	if (strcmp(s, "high") == 0)
		return DIAG_HIGH;
	if (strcmp(s, "moderate") == 0)
		return DIAG_MODERATE;
	return DIAG_INFO;
}

int diag_sev_for_win(int sev, double win_ns)
{
	if (win_ns < DIAG_WIN_MODERATE_NS)
		return DIAG_INFO;
	if (win_ns < DIAG_WIN_HIGH_NS && sev > DIAG_MODERATE)
		return DIAG_MODERATE;
	return sev;
}

int diag_sev_for_startup(const diag_run *r, int sev, double startup_ns)
{
	if (!r->n_steps)
		return diag_sev_for_win(sev, startup_ns);
	if (startup_ns < DIAG_STARTUP_MODERATE_NS)
		return DIAG_INFO;
	if (startup_ns < DIAG_STARTUP_HIGH_NS && sev > DIAG_MODERATE)
		return DIAG_MODERATE;
	return sev;
}

pp_finding *diag_emit(diag_ctx *c, const char *rule, int sev, double share,
		      const char *fix, const char *title_fmt, ...)
{
	if (PP_GROW(c->f, c->n + 1, c->cap) != 0) {
		c->oom = 1;
		return NULL;
	}
	pp_finding *f = &c->f[c->n++];
	memset(f, 0, sizeof *f);
	f->run_id = c->run->run_id;
	snprintf(f->rule, sizeof f->rule, "%s", rule);
	snprintf(f->severity, sizeof f->severity, "%s", diag_sev_name(sev));
	if (share < 0)
		share = 0;
	if (share > 0.999)
		share = 0.999;
	f->score = sev + share;
	snprintf(f->fix, sizeof f->fix, "%s", fix);
	va_list ap;
	va_start(ap, title_fmt);
	vsnprintf(f->title, sizeof f->title, title_fmt, ap);
	va_end(ap);
	return f;
}

void diag_evidence(pp_finding *f, const char *fmt, ...)
{
	if (!f)
		return;
	size_t used = strlen(f->evidence);
	if (used + 1 >= sizeof f->evidence)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->evidence + used, sizeof f->evidence - used, fmt, ap);
	va_end(ap);
}

double diag_run_share(const diag_run *r, double t_ns)
{
	return r->total_ns > 0 ? t_ns / (double)r->total_ns : 0;
}

int diag_has(const diag_ctx *c, const char *rule)
{
	return pp_diag_find(c->f, c->n, rule) >= 0;
}

int pp_diag_find(const pp_finding *f, int n, const char *rule)
{
	for (int i = 0; i < n; i++)
		if (strcmp(f[i].rule, rule) == 0)
			return i;
	return -1;
}

/* A symptom is ranked below the causes found with it: "iteration time grows"
 * is what the user sees, "graph grows" is what to fix. */
static void link_causes(diag_ctx *c)
{
	static const char *const symptoms[] = {"iteration_time_grows", "repeated_phase_grows"};
	static const char *const causes[] = {"graph_grows", "session_per_iteration",
					     "repeated_retracing", "alloc_count_not_flat"};
	for (size_t y = 0; y < sizeof symptoms / sizeof symptoms[0]; y++) {
		int s = pp_diag_find(c->f, c->n, symptoms[y]);
		if (s < 0)
			continue;
		char names[160] = "";
		for (size_t k = 0; k < sizeof causes / sizeof causes[0]; k++) {
			int i = pp_diag_find(c->f, c->n, causes[k]);
			if (i < 0)
				continue;
			pp_finding *cause = &c->f[i];
			int sev = diag_sev_from_name(c->f[s].severity);
			if (diag_sev_from_name(cause->severity) < sev)
				snprintf(cause->severity, sizeof cause->severity, "%s", diag_sev_name(sev));
			/* Keep the cause's own share but rank it just above the symptom. */
			double share = cause->score - (int)cause->score;
			double floor_ = c->f[s].score + 0.001 * (double)(4 - k);
			if (diag_sev_from_name(cause->severity) + share > cause->score)
				cause->score = diag_sev_from_name(cause->severity) + share;
			if (cause->score < floor_)
				cause->score = floor_;
			size_t used = strlen(names);
			snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", causes[k]);
		}
		if (names[0])
			diag_evidence(&c->f[s], " Likely cause (see those findings): %s.", names);
	}
}

static int cmp_finding(const void *a, const void *b)
{
	const pp_finding *x = a, *y = b;
	return (x->score < y->score) - (x->score > y->score);
}

/* run_meta key written by pp_diag_run: the number of findings stored, so a
 * run diagnosed clean is told from one never diagnosed. */
#define DIAG_META_KEY "diag.findings"

static int analyze(pp_store *st, int64_t run_id, pp_diag_result *out)
{
	memset(out, 0, sizeof *out);
	diag_run run;
	if (diag_run_load(&run, st, run_id, out->error, sizeof out->error) != 0) {
		diag_run_free(&run);
		return -1;
	}
	diag_ctx c = {.run = &run};
	pp_debug("diag", "run %lld: %d spans, %d steps; running %d rules", (long long)run_id, run.spans.n,
		 run.n_steps, N_RULES);
	for (int i = 0; i < N_RULES; i++) {
		int before = c.n;
		struct timespec t0, t1;
		if (pp_debug_on("diag"))
			clock_gettime(CLOCK_MONOTONIC, &t0);
		rules[i].fn(&c);
		if (pp_debug_on("diag")) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			pp_debug("diag", "run %lld: rule %s: %d finding%s (%.2f ms)", (long long)run_id,
				 rules[i].id, c.n - before, c.n - before == 1 ? "" : "s",
				 (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
					 (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
		}
	}
	diag_run_free(&run);
	if (c.oom) {
		free(c.f);
		snprintf(out->error, sizeof out->error, "out of memory running the rules on run %lld",
			 (long long)run_id);
		return -1;
	}
	link_causes(&c);
	/* Stable ranking: ties keep the rule order. */
	for (int i = 0; i < c.n; i++)
		c.f[i].score += (c.n - i) * 1e-9;
	if (c.n > 1)
		qsort(c.f, (size_t)c.n, sizeof *c.f, cmp_finding);
	for (int i = 0; i < c.n; i++)
		c.f[i].score = (double)(int64_t)(c.f[i].score * 1e4 + 0.5) / 1e4;
	out->findings = c.f;
	out->n = c.n;
	return 0;
}

int pp_diag_analyze(pp_store *st, int64_t run_id, pp_diag_result *out)
{
	return analyze(st, run_id, out);
}

int pp_diag_findings(pp_store *st, int64_t run_id, pp_finding **out, int *n, int *computed)
{
	*out = NULL;
	*n = 0;
	*computed = 0;
	if (pp_store_findings(st, run_id, out, n) != 0)
		return -1;
	if (*n > 0) {
		pp_debug("diag", "run %lld: %d findings stored; rules not run", (long long)run_id, *n);
		return 0;
	}
	free(*out);
	*out = NULL;
	/* diagnosed and nothing found: the rules need not run again (on a
	 * 10^7-event run they take seconds) */
	char v[32];
	if (pp_store_run_meta(st, run_id, DIAG_META_KEY, v, sizeof v) == 0) {
		pp_debug("diag", "run %lld: diagnosed before, nothing found; rules not run",
			 (long long)run_id);
		return 0;
	}
	pp_debug("diag", "run %lld: never diagnosed; running the rules now (not stored)", (long long)run_id);
	pp_diag_result r;
	memset(&r, 0, sizeof r);
	if (analyze(st, run_id, &r) != 0)
		return -1;
	for (int i = 0; i < r.n; i++)
		r.findings[i].run_id = run_id;
	*out = r.findings;
	*n = r.n;
	*computed = 1;
	return 0;
}

int pp_diag_run(pp_store *st, int64_t run_id, pp_diag_result *out)
{
	pp_diag_result local;
	pp_diag_result *r = out ? out : &local;
	if (analyze(st, run_id, r) != 0)
		return -1;
	if (pp_store_clear_findings(st, run_id) != 0) {
		snprintf(r->error, sizeof r->error, "%s: run %lld: cannot replace its findings (%s)",
			 pp_store_path(st), (long long)run_id, pp_store_error(st));
		goto fail;
	}
	for (int i = 0; i < r->n; i++)
		if (pp_store_add_finding(st, &r->findings[i]) != 0) {
			snprintf(r->error, sizeof r->error, "%s: run %lld: cannot store finding %s (%s)",
				 pp_store_path(st), (long long)run_id, r->findings[i].rule,
				 pp_store_error(st));
			goto fail;
		}
	char nf[32];
	snprintf(nf, sizeof nf, "%d", r->n);
	if (pp_store_set_run_meta(st, run_id, DIAG_META_KEY, nf) != 0) {
		snprintf(r->error, sizeof r->error, "%s: run %lld: cannot mark it diagnosed (%s)",
			 pp_store_path(st), (long long)run_id, pp_store_error(st));
		goto fail;
	}
	if (!out)
		pp_diag_result_free(&local);
	return 0;
fail:
	free(r->findings);
	r->findings = NULL;
	r->n = 0;
	return -1;
}

int pp_diag_run_all(pp_store *st, int *n_findings, char *err, size_t errlen)
{
	pp_run_info *runs = NULL;
	int n = 0, total = 0;
	if (n_findings)
		*n_findings = 0;
	if (pp_store_runs(st, &runs, &n) != 0) {
		snprintf(err, errlen, "%s: cannot list its runs", pp_store_path(st));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		pp_diag_result r;
		if (pp_diag_run(st, runs[i].id, &r) != 0) {
			snprintf(err, errlen, "%s", r.error);
			free(runs);
			return -1;
		}
		total += r.n;
		pp_diag_result_free(&r);
	}
	free(runs);
	if (n_findings)
		*n_findings = total;
	return 0;
}

void pp_diag_result_free(pp_diag_result *r)
{
	if (!r)
		return;
	free(r->findings);
	r->findings = NULL;
	r->n = 0;
}

void pp_diag_print(FILE *out, const pp_finding *f, int n, int flags)
{
	int color = flags & PP_DIAG_PRINT_COLOR;
	if (n == 0) {
		fprintf(out, "no findings\n");
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *sev = f[i].severity;
		const char *on = "", *off = "";
		if (color) {
			on = strcmp(sev, "high") == 0       ? "\033[1;31m"
			     : strcmp(sev, "moderate") == 0 ? "\033[1;33m"
							    : "\033[1;36m";
			off = "\033[0m";
		}
		fprintf(out, "%d. %s[%s]%s %s  (%s)\n", i + 1, on, sev, off, f[i].title, f[i].rule);
		if (flags & PP_DIAG_PRINT_BRIEF)
			continue;
		if (f[i].evidence[0])
			fprintf(out, "   evidence: %s\n", f[i].evidence);
		if (f[i].fix[0])
			fprintf(out, "   fix:      %s\n", f[i].fix);
	}
}
