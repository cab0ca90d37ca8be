/* phaseprof diff — phase-by-phase comparison of two runs. The comparison is
 * diag (pp_diag_diff); this file parses arguments and prints through
 * an ops struct, one backend per output format (uftrace style). */
#include "cli.h"
#include "cli_opt.h"
#include "diagnostics.h"
#include "phaseprof.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char cmd_diff_summary[] = "compare two runs phase by phase, flag regressions beyond step noise";

enum { OPT_RUNS = 1, OPT_JSON, OPT_FAIL_ON, OPT_RANKS };
static const cli_opt opts[] = {
	{OPT_RUNS, 0, "runs", 2, "RA RB", "run ids (RA in A.db, RB in B.db, or both in RUN.db)", "two run ids"},
	{OPT_JSON, 0, "json", 0, NULL, "one JSON object on stdout", NULL},
	{OPT_FAIL_ON, 0, "fail-on", 1, "KIND=PCT,...",
	 "regression gate: exit 1 when a named row regressed\n"
	 "beyond noise AND grew by more than PCT%; KIND is a\n"
	 "phase kind (compile, weight_load, ...), total (run\n"
	 "duration), step (median step) or any; repeatable", NULL},
	{OPT_RANKS, 0, "ranks", 0, NULL, "distributed jobs: one line per rank present in both\n"
	 "(matched by rank number): step median, comm and\ncomm_init of A and B", NULL},
	{0},
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: phaseprof diff A.db B.db [--runs RA RB] [--json] [--fail-on KIND=PCT,...]\n"
		"       phaseprof diff RUN.db --runs RA RB [--json] [--fail-on KIND=PCT,...]\n"
		"       phaseprof diff RUN.db            (a database holding exactly two runs)\n"
		"\n"
		"Compares run A (baseline) with run B: run total, median steady step (the first\n"
		"step is left out), and the total time of every phase kind.\n"
		"Step median: flagged when a Mann-Whitney U test on the two runs' steady step\n"
		"times gives a two-sided p < 0.001 AND both the Hodges-Lehmann shift and the\n"
		"shift of the lower quartile exceed max(10%% of A's median step, 2 x the\n"
		"quieter run's sigma), sigma being a run's robust step-to-step noise (1.4826 x\n"
		"MAD of successive differences / sqrt 2). With fewer than 6 steady steps in a\n"
		"run: as below. When both runs carry each step's CPU time (step.cpu_ns, from\n"
		"pp_step_end), the same test runs on it and the row is flagged only when both\n"
		"tests agree: load stretches wall time, not CPU time. Then a total or phase\n"
		"row changes only if B / L also differs from A beyond its threshold, L being\n"
		"B's wall time per CPU time of a step over A's (printed as load:).\n"
		"Total and phase kinds: flagged when the change exceeds max(3 x noise x A,\n"
		"5%% of A, 0.5%% of the longer run, 10 us, 3 x sigma x sqrt(phase count)),\n"
		"sigma the larger of the runs', noise that sigma relative to its median step\n"
		"(a preemption adds time, not a share; each occurrence can be preempted).\n"
		"Without --runs, each database's last run is used.\n"
		"\n"
		"Exit status: 0, or 1 on bad input. With --fail-on: 0 not regressed,\n"
		"1 regressed, 2 bad usage or input.\n"
		"\n");
	cli_opt_help(out, opts);
}

struct diff_src {
	const char *path;
	int64_t run;
};

/* Output backends. */
struct diff_ops {
	void (*begin)(FILE *out, const pp_diff *d, const struct diff_src *a, const struct diff_src *b);
	void (*row)(FILE *out, const pp_diff_row *r, int index);
	void (*end)(FILE *out, const pp_diff *d);
};

/* ---- text ---- */

static void run_line(FILE *out, const char *tag, const pp_run_info *r, const struct diff_src *s,
		     int steps)
{
	fprintf(out, "%s: %s run %lld", tag, s->path, (long long)r->id);
	if (r->label[0])
		fprintf(out, " \"%s\"", r->label);
	if (r->scenario[0] || r->variant[0])
		fprintf(out, " (%s/%s)", r->scenario, r->variant);
	fprintf(out, ", %d steps\n", steps);
}

static int name_width = 12;

static void text_begin(FILE *out, const pp_diff *d, const struct diff_src *a, const struct diff_src *b)
{
	run_line(out, "A", &d->a, a, d->n_steps_a);
	run_line(out, "B", &d->b, b, d->n_steps_b);
	char t1[32], t2[32], t3[32], t4[32];
	if (d->noise_from_steps)
		fprintf(out, "noise: steps vary by %.1f%% from one to the next (robust sigma of "
			     "step-to-step differences)\n",
			100 * d->noise_rel);
	else
		fprintf(out, "noise: no repeated steps to measure it: %.0f%% assumed\n", 100 * d->noise_rel);
	/* the test each row gets, as applied: the reader can check every verdict */
	int has_step_row = d->n > 1 && strcmp(d->rows[1].name, "step median") == 0;
	if (has_step_row && d->step_test == PP_DIFF_TEST_MANN_WHITNEY)
		fprintf(out, "step median: Mann-Whitney U on %lld vs %lld steady steps, two-sided p %s %.2g "
			     "(flagged below %g); Hodges-Lehmann shift %s, lower quartile %s -> %s; "
			     "both shifts must exceed max(%.0f%% of A's median, %.0f x the quieter run's sigma) = %s\n",
			(long long)d->rows[1].count_a, (long long)d->rows[1].count_b,
			d->step_p < 1e-15 ? "<" : "=", d->step_p < 1e-15 ? 1e-15 : d->step_p,
			d->step_alpha, pp_fmt_dur(t1, sizeof t1, d->step_shift_ns),
			pp_fmt_dur(t2, sizeof t2, d->step_q25_a), pp_fmt_dur(t3, sizeof t3, d->step_q25_b),
			100 * PP_DIFF_STEP_MIN_REL, PP_DIFF_STEP_NOISE_K,
			pp_fmt_dur(t4, sizeof t4, d->step_min_effect_ns));
	else if (has_step_row)
		fprintf(out, "step median: fewer than %d steady steps in a run, no test: judged as the "
			     "phases below\n",
			PP_DIFF_MW_MIN_STEPS);
	if (has_step_row && d->step_cpu)
		fprintf(out, "step CPU time: %s -> %s median, the same test: p %s %.2g, Hodges-Lehmann shift "
			     "%s, minimum effect %s: %s (steps spend %.0f%% of their wall time on a CPU). %s\n",
			pp_fmt_dur(t1, sizeof t1, d->step_cpu_median_a),
			pp_fmt_dur(t2, sizeof t2, d->step_cpu_median_b), d->step_cpu_p < 1e-15 ? "<" : "=",
			d->step_cpu_p < 1e-15 ? 1e-15 : d->step_cpu_p,
			pp_fmt_dur(t3, sizeof t3, d->step_cpu_shift_ns),
			pp_fmt_dur(t4, sizeof t4, d->step_cpu_min_effect_ns),
			pp_diff_verdict_name(d->step_cpu_verdict), 100 * d->step_cpu_share,
			d->step_cpu_verdict == d->step_wall_verdict
				? "Both tests agree."
				: "The tests disagree, so the step row is same: wall time that changed off "
				  "the CPU is waiting, for a CPU (the machine's load), I/O or another thread; "
				  "waits the program reports have their own phase rows.");
	if (d->step_contention)
		fprintf(out, "step median: the runs' loads differed (wall per CPU time x%.2f, beyond "
			     "x%.2f), the more loaded run is the slower, and the steps' CPU time changed "
			     "x%.2f, within the x%.1f that contention for the CPUs makes on its own: same "
			     "(record both on a quiet machine to tell)\n",
			d->load_factor, PP_DIFF_LOAD_DIFFERS,
			d->step_cpu_median_a > 0 ? d->step_cpu_median_b / d->step_cpu_median_a : 1,
			PP_DIFF_CONTENTION);
	if (d->load_factor != 1)
		fprintf(out, "load: B's steps took %.2fx the wall time per CPU time of A's (the machine's "
			     "load, or more waiting in B's steps); a total or phase row changes only when "
			     "B / %.2f also differs from A beyond its threshold\n",
			d->load_factor, d->load_factor);
	if (d->common_rows)
		fprintf(out, "common slowdown: the run's other phases ran %.2f-%.2fx as long in B (the "
			     "time-weighted median of B/A over the other phase kinds, each row leaving "
			     "itself out); a phase row changes only when B / that also differs from A\n",
			d->common_min, d->common_max);
	fprintf(out, "total, phases: a change counts beyond max(3 x noise x A, 5%% of A, %s, "
		     "3 x the larger sigma x sqrt(phase count))\n\n",
		pp_fmt_dur(t1, sizeof t1, (double)d->floor_ns));
	name_width = 12;
	for (int i = 0; i < d->n; i++) {
		int l = (int)strlen(d->rows[i].name);
		if (l > name_width)
			name_width = l;
	}
	fprintf(out, "%-*s %7s %7s %11s %11s %12s %7s  %s\n", name_width, "phase", "n A", "n B",
		"A", "B", "change", "ratio", "verdict");
}

static void text_row(FILE *out, const pp_diff_row *r, int index)
{
	(void)index;
	char a[32], b[32], d[32], ratio[16];
	pp_fmt_dur(a, sizeof a, (double)r->ns_a);
	pp_fmt_dur(b, sizeof b, (double)r->ns_b);
	pp_fmt_dur(d + 1, sizeof d - 1, (double)(r->ns_b - r->ns_a));
	d[0] = r->ns_b >= r->ns_a ? '+' : ' ';
	const char *dp = d[0] == ' ' ? d + 1 : d;
	if (r->ns_a > 0)
		snprintf(ratio, sizeof ratio, "%.2fx", r->ratio);
	else
		snprintf(ratio, sizeof ratio, "new");
	const char *v = r->verdict == PP_DIFF_REGRESSION    ? "REGRESSION"
			: r->verdict == PP_DIFF_IMPROVEMENT ? "improvement"
							    : "~";
	fprintf(out, "%-*s %7lld %7lld %11s %11s %12s %7s  %s\n", name_width, r->name,
		(long long)r->count_a, (long long)r->count_b, a, b, dp, ratio, v);
}

static void text_end(FILE *out, const pp_diff *d)
{
	fprintf(out, "\n%d regression%s, %d improvement%s beyond noise\n", d->regressions,
		d->regressions == 1 ? "" : "s", d->improvements, d->improvements == 1 ? "" : "s");
}

static const struct diff_ops text_ops = {text_begin, text_row, text_end};

/* ---- JSON ---- */

static pp_json jw;

static void json_run(const pp_run_info *r, const struct diff_src *s, int steps)
{
	pp_json_obj(&jw);
	pp_json_kstr(&jw, "db", s->path);
	pp_json_kint(&jw, "run", r->id);
	pp_json_kstr(&jw, "label", r->label);
	pp_json_kstr(&jw, "scenario", r->scenario);
	pp_json_kstr(&jw, "variant", r->variant);
	pp_json_kint(&jw, "steps", steps);
	pp_json_kint(&jw, "duration_ns", r->duration_ns);
	pp_json_end(&jw);
}

static void json_begin(FILE *out, const pp_diff *d, const struct diff_src *a, const struct diff_src *b)
{
	pp_json_init_file(&jw, out);
	pp_json_obj(&jw);
	pp_json_key(&jw, "a");
	json_run(&d->a, a, d->n_steps_a);
	pp_json_key(&jw, "b");
	json_run(&d->b, b, d->n_steps_b);
	pp_json_knum(&jw, "noise_rel", d->noise_rel);
	pp_json_kbool(&jw, "noise_from_steps", d->noise_from_steps);
	pp_json_key(&jw, "step_test");
	pp_json_obj(&jw);
	pp_json_kstr(&jw, "test", d->step_test == PP_DIFF_TEST_MANN_WHITNEY ? "mann-whitney-u" : "threshold");
	pp_json_knum(&jw, "p_two_sided", d->step_p);
	pp_json_knum(&jw, "alpha", d->step_alpha);
	pp_json_knum(&jw, "hodges_lehmann_shift_ns", d->step_shift_ns);
	pp_json_knum(&jw, "q25_a_ns", d->step_q25_a);
	pp_json_knum(&jw, "q25_b_ns", d->step_q25_b);
	pp_json_knum(&jw, "min_effect_ns", d->step_min_effect_ns);
	pp_json_kstr(&jw, "wall_verdict", pp_diff_verdict_name(d->step_wall_verdict));
	pp_json_kbool(&jw, "contention", d->step_contention);
	pp_json_key(&jw, "cpu");
	if (d->step_cpu) {
		pp_json_obj(&jw);
		pp_json_knum(&jw, "median_a_ns", d->step_cpu_median_a);
		pp_json_knum(&jw, "median_b_ns", d->step_cpu_median_b);
		pp_json_knum(&jw, "p_two_sided", d->step_cpu_p);
		pp_json_knum(&jw, "hodges_lehmann_shift_ns", d->step_cpu_shift_ns);
		pp_json_knum(&jw, "min_effect_ns", d->step_cpu_min_effect_ns);
		pp_json_kstr(&jw, "verdict", pp_diff_verdict_name(d->step_cpu_verdict));
		pp_json_knum(&jw, "cpu_share", d->step_cpu_share);
		pp_json_end(&jw);
	} else {
		pp_json_null(&jw);
	}
	pp_json_end(&jw);
	pp_json_kint(&jw, "floor_ns", d->floor_ns);
	pp_json_knum(&jw, "load_factor", d->load_factor);
	pp_json_knum(&jw, "common_slowdown_min", d->common_rows ? d->common_min : 1);
	pp_json_knum(&jw, "common_slowdown_max", d->common_rows ? d->common_max : 1);
	pp_json_key(&jw, "rows");
	pp_json_arr(&jw);
}

static void json_row(FILE *out, const pp_diff_row *r, int index)
{
	(void)out;
	(void)index;
	pp_json_obj(&jw);
	pp_json_kstr(&jw, "name", r->name);
	pp_json_kint(&jw, "kind", r->kind);
	pp_json_kint(&jw, "count_a", r->count_a);
	pp_json_kint(&jw, "count_b", r->count_b);
	pp_json_kint(&jw, "a_ns", r->ns_a);
	pp_json_kint(&jw, "b_ns", r->ns_b);
	pp_json_kint(&jw, "delta_ns", r->ns_b - r->ns_a);
	pp_json_knum(&jw, "ratio", r->ratio);
	pp_json_kint(&jw, "threshold_ns", r->threshold_ns);
	pp_json_kstr(&jw, "verdict", pp_diff_verdict_name(r->verdict));
	pp_json_end(&jw);
}

static void json_end(FILE *out, const pp_diff *d)
{
	pp_json_end(&jw);
	pp_json_kint(&jw, "regressions", d->regressions);
	pp_json_kint(&jw, "improvements", d->improvements);
	(void)out;
}

static const struct diff_ops json_ops = {json_begin, json_row, json_end};

/* ---- the gate's verdict ---- */

static void gate_text(FILE *out, const pp_gate_check *c, int n, int failed)
{
	fprintf(out, "\ngate (--fail-on): ");
	if (failed)
		fprintf(out, "REGRESSED, %d of %d check%s failed\n", failed, n, n == 1 ? "" : "s");
	else
		fprintf(out, "not regressed, %d check%s passed\n", n, n == 1 ? "" : "s");
	for (int i = 0; i < n; i++) {
		char ch[32];
		if (!c[i].present)
			snprintf(ch, sizeof ch, "absent");
		else if (isinf(c[i].change_pct))
			snprintf(ch, sizeof ch, "new");
		else
			snprintf(ch, sizeof ch, "%+.1f%%", c[i].change_pct);
		fprintf(out, "  %-*s %9s  limit %g%%  %s\n", name_width, c[i].name, ch, c[i].limit_pct,
			c[i].failed		? "FAIL"
			: !c[i].present		? "ok (in neither run)"
			: c[i].verdict == PP_DIFF_REGRESSION ? "ok (within the limit)"
							      : "ok (within noise)");
	}
}

static void gate_json(const pp_gate_check *c, int n, int failed)
{
	pp_json_key(&jw, "gate");
	pp_json_obj(&jw);
	pp_json_kbool(&jw, "regressed", failed > 0);
	pp_json_kint(&jw, "failed", failed);
	pp_json_key(&jw, "checks");
	pp_json_arr(&jw);
	for (int i = 0; i < n; i++) {
		pp_json_obj(&jw);
		pp_json_kstr(&jw, "name", c[i].name);
		pp_json_knum(&jw, "limit_pct", c[i].limit_pct);
		pp_json_key(&jw, "change_pct");
		if (c[i].present)
			pp_json_num(&jw, c[i].change_pct); /* null for a new phase */
		else
			pp_json_null(&jw);
		pp_json_kstr(&jw, "verdict", c[i].present ? pp_diff_verdict_name(c[i].verdict) : "absent");
		pp_json_kbool(&jw, "failed", c[i].failed);
		pp_json_end(&jw);
	}
	pp_json_end(&jw);
	pp_json_end(&jw);
}

/* ---- rank by rank (distributed jobs) ---- */

static const pp_diff_row *diff_find(const pp_diff *d, const char *name, int kind)
{
	for (int i = 0; i < d->n; i++)
		if ((name && strcmp(d->rows[i].name, name) == 0) || (!name && d->rows[i].kind == kind))
			return &d->rows[i];
	return NULL;
}

static void rank_cell(FILE *out, const pp_diff_row *r)
{
	char a[32], b[32];
	if (!r) {
		fprintf(out, " %24s", "-");
		return;
	}
	pp_fmt_dur(a, sizeof a, (double)r->ns_a);
	pp_fmt_dur(b, sizeof b, (double)r->ns_b);
	fprintf(out, " %9s -> %-9s%c%c", a, b, r->verdict == PP_DIFF_REGRESSION ? '!' : ' ',
		r->verdict == PP_DIFF_IMPROVEMENT ? '+' : ' ');
}

/* Ranks of the first job of each store, paired by rank number. */
static int diff_ranks(pp_store *sa, pp_store *sb, const char *pa, const char *pb)
{
	pp_rank_run *ra = NULL, *rb = NULL;
	int na = 0, nb = 0, rc = 1, shown = 0;
	if (pp_store_rank_runs(sa, &ra, &na) != 0 || pp_store_rank_runs(sb, &rb, &nb) != 0) {
		cli_error("diff: cannot read the ranks");
		goto out;
	}
	if (!na || !nb) {
		cli_error("diff: --ranks: %s has no ranked runs (not recorded under a parallel launcher)",
			  !na ? pa : pb);
		goto out;
	}
	printf("A: %s job %s\nB: %s job %s\n", pa, ra[0].job, pb, rb[0].job);
	printf("(A -> B per column; ! regression, + improvement beyond step noise)\n\n");
	printf("%5s %24s %24s %24s\n", "rank", "step median", "comm", "comm_init");
	for (int i = 0; i < na && strcmp(ra[i].job, ra[0].job) == 0; i++)
		for (int j = 0; j < nb && strcmp(rb[j].job, rb[0].job) == 0; j++) {
			if (ra[i].rank != rb[j].rank)
				continue;
			pp_diff d;
			if (pp_diag_diff(sa, ra[i].run_id, sb, rb[j].run_id, &d) != 0) {
				cli_error("diff: rank %d: %s", ra[i].rank, d.error);
				pp_diff_free(&d);
				goto out;
			}
			printf("%5d", ra[i].rank);
			rank_cell(stdout, diff_find(&d, "step median", -1));
			rank_cell(stdout, diff_find(&d, NULL, PP_COMM));
			rank_cell(stdout, diff_find(&d, NULL, PP_COMM_INIT));
			putchar('\n');
			pp_diff_free(&d);
			shown++;
		}
	if (!shown) {
		cli_error("diff: --ranks: no rank number is in both jobs");
		goto out;
	}
	rc = 0;
out:
	free(ra);
	free(rb);
	return rc;
}

/* ---- arguments ---- */

/* The last run of a store (the default when no --runs is given). */
static int last_run(pp_store *st, const char *path, int64_t *out, int *n_runs)
{
	pp_run_info *runs = NULL;
	int n = 0;
	if (pp_store_runs(st, &runs, &n) != 0) {
		cli_error("%s: cannot list its runs", path);
		return -1;
	}
	*n_runs = n;
	if (n == 0) {
		free(runs);
		cli_error("%s: the database holds no runs", path);
		return -1;
	}
	int64_t best = runs[0].id;
	for (int i = 1; i < n; i++)
		if (runs[i].id > best)
			best = runs[i].id;
	*out = best;
	free(runs);
	return 0;
}

static int two_runs(pp_store *st, const char *path, int64_t *a, int64_t *b)
{
	pp_run_info *runs = NULL;
	int n = 0;
	if (pp_store_runs(st, &runs, &n) != 0) {
		cli_error("%s: cannot list its runs", path);
		return -1;
	}
	if (n != 2) {
		free(runs);
		cli_error("%s holds %d run%s: name the two to compare with --runs A B", path, n,
			  n == 1 ? "" : "s");
		return -1;
	}
	*a = runs[0].id < runs[1].id ? runs[0].id : runs[1].id;
	*b = runs[0].id < runs[1].id ? runs[1].id : runs[0].id;
	free(runs);
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	const char *paths[2] = {NULL, NULL};
	int npaths = 0, json = 0, have_runs = 0, n_rules = 0, ranks = 0;
	long long ra = 0, rb = 0;
	pp_gate_rule rules[PP_GATE_MAX];
	char err[256];
	cli_parse p;
	cli_parse_init(&p, "diff", opts, usage, argc, argv, 0);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case OPT_JSON:
			json = 1;
			break;
		case OPT_RANKS:
			ranks = 1;
			break;
		case OPT_RUNS:
			if (cli_parse_int64("diff: --runs", p.val[0], &ra) != 0 ||
			    cli_parse_int64("diff: --runs", p.val[1], &rb) != 0)
				return 2;
			have_runs = 1;
			break;
		case OPT_FAIL_ON:
			if (pp_gate_parse(p.val[0], rules, PP_GATE_MAX, &n_rules, err, sizeof err) != 0) {
				cli_error("diff: %s", err);
				return 2;
			}
			break;
		default:
			if (npaths == 2) {
				cli_error("diff: too many databases ('%s'); give one or two", p.val[0]);
				return 2;
			}
			paths[npaths++] = p.val[0];
		}
	}
	if (npaths == 0) {
		usage(stderr);
		return 2;
	}
	/* With a gate, 1 means "regressed": every input error is 2. */
	const int input_error = n_rules ? 2 : 1;
	pp_store *sa = cli_open_store(paths[0], PP_STORE_READ);
	if (!sa)
		return input_error;
	pp_store *sb = sa;
	if (npaths == 2) {
		sb = cli_open_store(paths[1], PP_STORE_READ);
		if (!sb) {
			pp_store_close(sa, NULL, 0);
			return input_error;
		}
	}
	struct diff_src a = {paths[0], ra}, b = {npaths == 2 ? paths[1] : paths[0], rb};
	int rc = input_error, na = 0, nb = 0;
	if (ranks) {
		rc = diff_ranks(sa, sb, a.path, b.path);
		goto out;
	}
	if (!have_runs) {
		if (npaths == 1) {
			if (two_runs(sa, paths[0], &a.run, &b.run) != 0)
				goto out;
		} else if (last_run(sa, paths[0], &a.run, &na) != 0 ||
			   last_run(sb, paths[1], &b.run, &nb) != 0) {
			goto out;
		}
	}
	pp_diff d;
	if (pp_diag_diff(sa, a.run, sb, b.run, &d) != 0) {
		cli_error("%s", d.error);
		pp_diff_free(&d);
		goto out;
	}
	pp_gate_check checks[PP_GATE_MAX * 4];
	int n_checks = 0, failed = 0;
	if (n_rules)
		failed = pp_gate_eval(&d, rules, n_rules, checks, (int)(sizeof checks / sizeof checks[0]),
				      &n_checks);
	const struct diff_ops *ops = json ? &json_ops : &text_ops;
	ops->begin(stdout, &d, &a, &b);
	for (int i = 0; i < d.n; i++)
		ops->row(stdout, &d.rows[i], i);
	ops->end(stdout, &d);
	if (json) {
		if (n_rules)
			gate_json(checks, n_checks, failed);
		pp_json_end(&jw);
		fputc('\n', stdout);
	} else {
		if (na > 1 || nb > 1)
			fprintf(stdout, "(compared the last run of each database; --runs picks others)\n");
		if (n_rules)
			gate_text(stdout, checks, n_checks, failed);
	}
	pp_diff_free(&d);
	rc = failed ? 1 : 0;
	if (fflush(stdout) != 0) {
		cli_error("diff: cannot write the output");
		rc = input_error;
	}
out:
	if (sb != sa)
		pp_store_close(sb, NULL, 0);
	pp_store_close(sa, NULL, 0);
	return rc;
}
