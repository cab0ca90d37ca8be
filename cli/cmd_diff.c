/* phaseprof diff — phase-by-phase comparison of two runs. The comparison is
 * viewers/diag (pp_diag_diff); this file parses arguments and prints through
 * an ops struct, one backend per output format (uftrace style). */
#include "cli.h"
#include "diagnostics.h"
#include "phaseprof.h"

#include <stdlib.h>
#include <string.h>

const char cmd_diff_summary[] = "compare two runs phase by phase, flag regressions beyond step noise";

static void usage(FILE *out)
{
	fprintf(out,
		"usage: phaseprof diff A.db B.db [--runs RA RB] [--json]\n"
		"       phaseprof diff RUN.db --runs RA RB [--json]\n"
		"       phaseprof diff RUN.db            (a database holding exactly two runs)\n"
		"\n"
		"Compares run A (baseline) with run B: run total, median steady step (the first\n"
		"step is left out), and the total time of every phase kind. A row is flagged\n"
		"when its change exceeds the noise seen between repeated steps: 3x the robust\n"
		"spread of step-to-step differences (1.4826 x MAD / sqrt 2, relative to the\n"
		"median step), at least 5%%, and at least 0.1%% of the run (10 us minimum).\n"
		"Without --runs, each database's last run is used.\n"
		"\n"
		"  --runs RA RB   run ids (RA in A.db, RB in B.db, or both in RUN.db)\n"
		"  --ranks        distributed jobs: one line per rank present in both (matched by\n"
		"                 rank number): step median, comm and comm_init of A and B\n"
		"  --json         one JSON object on stdout\n");
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

static const char *fmt_ns(char *buf, size_t len, double ns)
{
	double a = ns < 0 ? -ns : ns;
	if (a >= 1e9)
		snprintf(buf, len, "%.3f s", ns / 1e9);
	else if (a >= 1e6)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else if (a >= 1e3)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else
		snprintf(buf, len, "%.0f ns", ns);
	return buf;
}

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
	if (d->noise_from_steps)
		fprintf(out, "noise: steps vary by %.1f%% from one to the next (robust); a change "
			     "counts beyond max(3 x noise, 5%%)\n\n",
			100 * d->noise_rel);
	else
		fprintf(out, "noise: no repeated steps to measure it; a change counts beyond %.0f%%\n\n",
			100 * (3 * d->noise_rel > 0.05 ? 3 * d->noise_rel : 0.05));
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
	fmt_ns(a, sizeof a, (double)r->ns_a);
	fmt_ns(b, sizeof b, (double)r->ns_b);
	fmt_ns(d + 1, sizeof d - 1, (double)(r->ns_b - r->ns_a));
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

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void json_run(FILE *out, const pp_run_info *r, const struct diff_src *s, int steps)
{
	fprintf(out, "{\"db\":");
	json_str(out, s->path);
	fprintf(out, ",\"run\":%lld,\"label\":", (long long)r->id);
	json_str(out, r->label);
	fprintf(out, ",\"scenario\":");
	json_str(out, r->scenario);
	fprintf(out, ",\"variant\":");
	json_str(out, r->variant);
	fprintf(out, ",\"steps\":%d,\"duration_ns\":%lld}", steps, (long long)r->duration_ns);
}

static void json_begin(FILE *out, const pp_diff *d, const struct diff_src *a, const struct diff_src *b)
{
	fprintf(out, "{\"a\":");
	json_run(out, &d->a, a, d->n_steps_a);
	fprintf(out, ",\"b\":");
	json_run(out, &d->b, b, d->n_steps_b);
	fprintf(out, ",\"noise_rel\":%.6g,\"noise_from_steps\":%s,\"rows\":[", d->noise_rel,
		d->noise_from_steps ? "true" : "false");
}

static void json_row(FILE *out, const pp_diff_row *r, int index)
{
	fprintf(out, "%s{\"name\":", index ? "," : "");
	json_str(out, r->name);
	fprintf(out, ",\"kind\":%d,\"count_a\":%lld,\"count_b\":%lld,\"a_ns\":%lld,\"b_ns\":%lld,"
		     "\"delta_ns\":%lld,\"ratio\":%.6g,\"threshold_ns\":%lld,\"verdict\":\"%s\"}",
		r->kind, (long long)r->count_a, (long long)r->count_b, (long long)r->ns_a,
		(long long)r->ns_b, (long long)(r->ns_b - r->ns_a), r->ratio,
		(long long)r->threshold_ns, pp_diff_verdict_name(r->verdict));
}

static void json_end(FILE *out, const pp_diff *d)
{
	fprintf(out, "],\"regressions\":%d,\"improvements\":%d}\n", d->regressions, d->improvements);
}

static const struct diff_ops json_ops = {json_begin, json_row, json_end};

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
	fmt_ns(a, sizeof a, (double)r->ns_a);
	fmt_ns(b, sizeof b, (double)r->ns_b);
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
	int npaths = 0, json = 0, have_runs = 0, ranks = 0;
	long long ra = 0, rb = 0;
	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--ranks") == 0) {
			ranks = 1;
		} else if (strcmp(argv[i], "--runs") == 0) {
			if (i + 2 >= argc) {
				cli_error("diff: --runs needs two run ids");
				return 2;
			}
			if (cli_parse_int64("diff: --runs", argv[i + 1], &ra) != 0 ||
			    cli_parse_int64("diff: --runs", argv[i + 2], &rb) != 0)
				return 2;
			have_runs = 1;
			i += 2;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			cli_error("diff: unknown option '%s' (see 'phaseprof diff --help')", argv[i]);
			return 2;
		} else if (npaths < 2) {
			paths[npaths++] = argv[i];
		} else {
			cli_error("diff: too many databases ('%s'); give one or two", argv[i]);
			return 2;
		}
	}
	if (npaths == 0) {
		usage(stderr);
		return 2;
	}
	pp_store *sa = cli_open_store(paths[0], PP_STORE_READ);
	if (!sa)
		return 1;
	pp_store *sb = sa;
	if (npaths == 2) {
		sb = cli_open_store(paths[1], PP_STORE_READ);
		if (!sb) {
			pp_store_close(sa, NULL, 0);
			return 1;
		}
	}
	struct diff_src a = {paths[0], ra}, b = {npaths == 2 ? paths[1] : paths[0], rb};
	int rc = 1, na = 0, nb = 0;
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
	const struct diff_ops *ops = json ? &json_ops : &text_ops;
	ops->begin(stdout, &d, &a, &b);
	for (int i = 0; i < d.n; i++)
		ops->row(stdout, &d.rows[i], i);
	ops->end(stdout, &d);
	if (!json && (na > 1 || nb > 1))
		fprintf(stdout, "(compared the last run of each database; --runs picks others)\n");
	pp_diff_free(&d);
	rc = 0;
out:
	if (sb != sa)
		pp_store_close(sb, NULL, 0);
	pp_store_close(sa, NULL, 0);
	return rc;
}
