/* phaseprof run — runs built-in scenarios: every variant in its own fresh
 * process (fork + exec of this binary with the hidden --child argument) with
 * its own spool, all ingested into one database as one run per variant, the
 * diagnostics run on each, and a short summary: per-variant totals, each
 * fix's speed-up, the findings, and which claimed causes the numbers support. */
#include "cli.h"
#include "cli_opt.h"
#include "scenarios.h"
#include "diagnostics.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char cmd_run_summary[] = "run built-in scenarios (slow variant and fixes) into one database";

#define DEFAULT_DB "phaseprof-run.db"
#define MAX_VARIANTS 16

enum { OPT_ALL = 1, OPT_OUTPUT, OPT_QUICK, OPT_KEEP, OPT_NO_DIAG, OPT_SIZE };
static const cli_opt opts[] = {
	{OPT_ALL, 0, "all", 0, NULL, "every scenario that can run on this machine", NULL},
	{OPT_OUTPUT, 'o', "output", 1, "DB", "database to write", "a database path"},
	{OPT_QUICK, 0, "quick", 0, NULL, "smaller workloads (the tests' size)", NULL},
	{OPT_KEEP, 0, "keep-spools", 0, NULL, "keep the per-variant spool files (their folder is printed)", NULL},
	{OPT_NO_DIAG, 0, "no-diag", 0, NULL, "do not run the diagnostics", NULL},
	{OPT_SIZE, 0, "size", 1, "S", NULL, "full, quick or smoke"}, /* hidden: smoke for sanitizer builds */
	{0},
};

static void usage(FILE *o)
{
	fprintf(o,
		"usage: phaseprof run <scenario>[:<variant>]... | --all [-o DB] [--quick]\n"
		"                     [--keep-spools] [--no-diag]\n\n"
		"Runs each variant of the named scenarios (see 'phaseprof list') in its own\n"
		"fresh process, records all of them into DB (default %s, runs are\n"
		"appended), runs the diagnostics on every run and prints a summary: totals,\n"
		"the speed-up of each fix, the findings, and which of the write-up's claimed\n"
		"causes the numbers support.\n\n",
		DEFAULT_DB);
	cli_opt_help(o, opts);
}

static void list_valid(FILE *o)
{
	fprintf(o, "valid scenarios:");
	for (int i = 0; i < pp_scenario_count(); i++)
		fprintf(o, " %s", pp_scenario_name(pp_scenario_at(i)));
	fprintf(o, "\n");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- child: one variant in this fresh process ---- */

enum { CH_CHILD = 1, CH_SPOOL, CH_WORKDIR, CH_SIZE, CH_FORK_NS };
static const cli_opt child_opts[] = {
	{CH_CHILD, 0, "child", 1, "SCENARIO:VARIANT", NULL, NULL},
	{CH_SPOOL, 0, "spool", 1, "PATH", NULL, NULL},
	{CH_WORKDIR, 0, "workdir", 1, "DIR", NULL, NULL},
	{CH_SIZE, 0, "size", 1, "S", NULL, NULL},
	{CH_FORK_NS, 0, "fork-ns", 1, "NS", NULL, NULL},
	{0},
};

static int run_child(int argc, char **argv)
{
	const char *which = NULL, *spool = NULL, *workdir = NULL;
	int size = PP_SCN_FULL;
	unsigned long long fork_ns = 0;
	cli_parse p;
	cli_parse_init(&p, "run --child", child_opts, NULL, argc, argv, 0);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		const char *v = p.val[0];
		switch (c) {
		case CH_CHILD:
			which = v;
			break;
		case CH_SPOOL:
			spool = v;
			break;
		case CH_WORKDIR:
			workdir = v;
			break;
		case CH_SIZE:
			size = pp_scn_size_from_name(v);
			break;
		case CH_FORK_NS:
			fork_ns = strtoull(v, NULL, 10);
			break;
		case CLI_EXIT:
			return p.status;
		default:
			cli_error("run --child: unexpected argument '%s'", p.val[0] ? p.val[0] : "--help");
			return 2;
		}
	}
	const char *colon = which ? strchr(which, ':') : NULL;
	if (!which || !colon || !spool || !workdir || size < 0) {
		cli_error("run --child: needs --child SCENARIO:VARIANT --spool PATH --workdir DIR "
			  "[--size full|quick|smoke]");
		return 2;
	}
	char name[128];
	snprintf(name, sizeof name, "%.*s", (int)(colon - which), which);
	const pp_scenario *s = pp_scenario_find(name);
	int v = s ? pp_scenario_variant_find(s, colon + 1) : -1;
	if (v < 0) {
		cli_error("run --child: unknown scenario variant '%s'", which);
		return 2;
	}
	pp_scn_child_opts o = {spool, workdir, size, (uint64_t)fork_ns};
	char err[512];
	if (pp_scenario_child(s, v, &o, err, sizeof err) != 0) {
		cli_error("%s: %s", which, err);
		return 1;
	}
	return 0;
}

/* ---- parent ---- */

typedef struct selection {
	const pp_scenario *s;
	unsigned mask;            /* variants to run (bit v) */
	int explicit_;            /* named on the command line */
} selection;

typedef struct variant_result {
	int ran;                  /* a run was ingested */
	int64_t run_id;
	int ok;                   /* exited 0 */
	char status[160];         /* "ok", "exit 1", "killed by signal 6 (Aborted)" */
	pp_scn_measure m;
	int n_findings;
	char top_rule[64], top_title[256];
	char scn_rules_hit[256];  /* this scenario's rules found on this run */
} variant_result;

typedef struct run_ctx {
	pp_store *st;
	const char *tmp;
	int size;
	int diag;
	int failures;
} run_ctx;

static int mkdir_p(const char *path)
{
	if (mkdir(path, 0700) == 0 || errno == EEXIST)
		return 0;
	return -1;
}

/* Forks and execs this binary as the child of one variant; returns the wait
 * status, or -1 if the process could not be started. */
static int spawn_variant(const pp_scenario *s, int v, const char *spool, const char *workdir,
			 int size)
{
	char which[160], fork_ns[32];
	snprintf(which, sizeof which, "%s:%s", pp_scenario_name(s), pp_scenario_variant_name(s, v));
	fflush(stdout);
	fflush(stderr);
	snprintf(fork_ns, sizeof fork_ns, "%llu", (unsigned long long)mono_ns());
	pid_t pid = fork();
	if (pid < 0) {
		cli_error("run: %s: cannot fork: %s", which, strerror(errno));
		return -1;
	}
	if (pid == 0) {
		char *args[] = {"phaseprof", "run", "--child", which, "--spool", (char *)spool,
				"--workdir", (char *)workdir, "--size", (char *)pp_scn_size_name(size),
				"--fork-ns", fork_ns, NULL};
		execv("/proc/self/exe", args);
		fprintf(stderr, "phaseprof: run: %s: cannot exec /proc/self/exe: %s\n", which,
			strerror(errno));
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			cli_error("run: %s: waitpid: %s", which, strerror(errno));
			return -1;
		}
	return status;
}

static void read_findings(run_ctx *c, const pp_scenario *s, variant_result *r)
{
	pp_finding *f = NULL;
	int n = 0;
	if (c->diag) {
		pp_diag_result d;
		if (pp_diag_run(c->st, r->run_id, &d) != 0) {
			cli_error("run: diagnostics: %s", d.error);
			return;
		}
		f = d.findings;
		n = d.n;
	}
	if (!f && pp_store_findings(c->st, r->run_id, &f, &n) != 0)
		return;
	r->n_findings = n;
	if (n > 0) {
		snprintf(r->top_rule, sizeof r->top_rule, "%s", f[0].rule);
		snprintf(r->top_title, sizeof r->top_title, "%s", f[0].title);
	}
	int nr;
	const char *const *rules = pp_scenario_rules(s, &nr);
	size_t used = 0;
	for (int k = 0; k < nr; k++)
		for (int i = 0; i < n; i++)
			if (strcmp(f[i].rule, rules[k]) == 0) {
				used += (size_t)snprintf(r->scn_rules_hit + used,
							 used < sizeof r->scn_rules_hit
								 ? sizeof r->scn_rules_hit - used
								 : 0,
							 "%s%s", used ? ", " : "", rules[k]);
				if (used >= sizeof r->scn_rules_hit)
					used = sizeof r->scn_rules_hit - 1;
				break;
			}
	free(f);
}

static void run_variant(run_ctx *c, const pp_scenario *s, int v, const char *workdir,
			variant_result *r)
{
	memset(r, 0, sizeof *r);
	const char *vn = pp_scenario_variant_name(s, v);
	char spool[PATH_MAX + 320];
	snprintf(spool, sizeof spool, "%s/%s.%s.spool", c->tmp, pp_scenario_name(s), vn);
	unlink(spool);
	printf("  %-5s %-18s ", pp_scn_variant_kind_name(pp_scenario_variant_kind(s, v)), vn);
	fflush(stdout);
	uint64_t t0 = mono_ns();
	int status = spawn_variant(s, v, spool, workdir, c->size);
	double wall = (double)(mono_ns() - t0) / 1e9;
	pp_ingest_opts io = {.exit_code = -1};
	char cmd[256];
	snprintf(cmd, sizeof cmd, "phaseprof run %s:%s (%s)", pp_scenario_name(s), vn,
		 pp_scn_size_name(c->size));
	io.command = cmd;
	if (status == -1) {
		snprintf(r->status, sizeof r->status, "could not start");
	} else if (WIFEXITED(status)) {
		io.exit_code = WEXITSTATUS(status);
		r->ok = io.exit_code == 0;
		if (r->ok)
			snprintf(r->status, sizeof r->status, "ok");
		else
			snprintf(r->status, sizeof r->status, "failed (exit %d)", io.exit_code);
	} else if (WIFSIGNALED(status)) {
		io.term_signal = WTERMSIG(status);
		snprintf(r->status, sizeof r->status, "crashed (signal %d, %s)", io.term_signal,
			 strsignal(io.term_signal));
	}
	if (!r->ok)
		c->failures++;
	struct stat sb;
	if (stat(spool, &sb) != 0) {
		printf("%s after %.2f s; no recording (the process ended before opening it)\n",
		       r->status, wall);
		return;
	}
	pp_ingest_result res;
	char err[512];
	if (pp_store_ingest(c->st, spool, &io, &res, err, sizeof err) != 0) {
		printf("%s after %.2f s; recording unreadable\n", r->status, wall);
		cli_error("run: %s", err);
		return;
	}
	r->ran = 1;
	r->run_id = res.run_id;
	pp_scenario_measure(c->st, r->run_id, &r->m);
	char a[32];
	if (r->m.measured_ns >= 0)
		snprintf(a, sizeof a, "%.3f s", (double)r->m.measured_ns / 1e9);
	else
		snprintf(a, sizeof a, "-");
	printf("%-10s measured %s, process %.2f s  (run %lld)%s\n", r->status, a, wall,
	       (long long)r->run_id, res.truncated ? " [partial recording kept]" : "");
	if (res.note[0] && (res.truncated || !r->ok))
		printf("        ingest: %s\n", res.note);
	read_findings(c, s, r);
}

static void summarize(run_ctx *c, const pp_scenario *s, const unsigned mask,
		      variant_result *res)
{
	int nv = pp_scenario_num_variants(s);
	printf("  summary (%s):\n", pp_scenario_metric_name(s));
	double base = res[0].ran && res[0].m.measured_ns > 0 ? (double)res[0].m.measured_ns : 0;
	for (int v = 0; v < nv; v++) {
		if (!(mask & (1u << v)) || !res[v].ran)
			continue;
		variant_result *r = &res[v];
		char speed[48] = "";
		if (v > 0 && pp_scenario_variant_kind(s, v) != PP_SCN_VARIANT_SLOW && base > 0 &&
		    r->m.measured_ns > 0) {
			double x = base / (double)r->m.measured_ns;
			snprintf(speed, sizeof speed, "  speed-up x%.2f%s", x, x < 1 ? " (slower)" : "");
		}
		printf("    %-18s %10.3f s%s", pp_scenario_variant_name(s, v),
		       r->m.measured_ns >= 0 ? (double)r->m.measured_ns / 1e9 : 0.0, speed);
		if (!r->ok)
			printf("  [%s]", r->status);
		if (r->m.n_steps >= 10)
			printf("  [steps %d: first %.2f ms, median %.2f ms, first-10%% %.2f ms, "
			       "last-10%% %.2f ms]",
			       r->m.n_steps, r->m.first_step_ns / 1e6, r->m.median_step_ns / 1e6,
			       r->m.first10_ns / 1e6, r->m.last10_ns / 1e6);
		else if (r->m.n_steps >= 2)
			printf("  [steps %d: first %.2f ms, median of the rest %.2f ms]", r->m.n_steps,
			       r->m.first_step_ns / 1e6, r->m.median_step_ns / 1e6);
		printf("\n");
	}
	if (c->diag) {
		printf("  findings:\n");
		int nr;
		const char *const *rules = pp_scenario_rules(s, &nr);
		for (int v = 0; v < nv; v++) {
			if (!(mask & (1u << v)) || !res[v].ran)
				continue;
			variant_result *r = &res[v];
			if (r->n_findings == 0)
				printf("    %-18s none\n", pp_scenario_variant_name(s, v));
			else
				printf("    %-18s %d, top: [%s] %s\n", pp_scenario_variant_name(s, v),
				       r->n_findings, r->top_rule, r->top_title);
		}
		/* The scenario's own check: the slow variant names the cause, no fix
		 * shows it. */
		if (nr > 0) {
			int good = 1;
			char why[512] = "";
			size_t u = 0;
			for (int v = 0; v < nv && u < sizeof why; v++) {
				if (!(mask & (1u << v)) || !res[v].ran)
					continue;
				int kind = pp_scenario_variant_kind(s, v);
				const char *want = pp_scenario_variant_expect(s, v);
				if (kind == PP_SCN_VARIANT_SLOW && want && strcmp(res[v].top_rule, want) != 0) {
					good = 0;
					u += (size_t)snprintf(why + u, sizeof why - u,
							      "%s's top finding is %s, expected %s; ",
							      pp_scenario_variant_name(s, v),
							      res[v].top_rule[0] ? res[v].top_rule : "none",
							      want);
				} else if (kind == PP_SCN_VARIANT_FIX && res[v].scn_rules_hit[0]) {
					good = 0;
					u += (size_t)snprintf(why + u, sizeof why - u, "%s shows %s; ",
							      pp_scenario_variant_name(s, v),
							      res[v].scn_rules_hit);
				}
			}
			if (good)
			{
				printf("  diagnosis: as expected (each slow variant's top finding names its "
				       "cause; no fix shows any of");
				for (int k = 0; k < nr; k++)
					printf("%s %s", k ? "," : "", rules[k]);
				printf(")\n");
			}
			else
				printf("  diagnosis: NOT as expected: %s\n", why);
		}
	}
	int64_t ids[MAX_VARIANTS] = {0};
	for (int v = 0; v < nv && v < MAX_VARIANTS; v++)
		ids[v] = res[v].ran ? res[v].run_id : 0;
	pp_scn_claim claims[12];
	int n = pp_scenario_claims(s, c->st, ids, claims, 12);
	if (n > 0) {
		printf("  the write-up's claims:\n");
		for (int i = 0; i < n; i++)
			printf("    [%s] %s\n        %s\n", pp_claim_verdict_name(claims[i].verdict),
			       claims[i].claim, claims[i].evidence);
	}
}

static int run_scenario(run_ctx *c, const selection *sel)
{
	const pp_scenario *s = sel->s;
	char why[512];
	printf("== %s: %s\n", pp_scenario_name(s), pp_scenario_complaint(s));
	if (!pp_scenario_available(s, why, sizeof why)) {
		printf("  skipped: cannot run here: %s\n\n", why);
		return sel->explicit_ ? -1 : 0;
	}
	char workdir[PATH_MAX + 160];
	snprintf(workdir, sizeof workdir, "%s/%s", c->tmp, pp_scenario_name(s));
	if (mkdir_p(workdir) != 0) {
		cli_error("run: cannot create %s: %s", workdir, strerror(errno));
		return -1;
	}
	char err[512] = "";
	if (pp_scenario_prepare(s, workdir, c->size, err, sizeof err) != 0) {
		cli_error("run: %s: preparing: %s", pp_scenario_name(s), err);
		c->failures++;
		return -1;
	}
	int nv = pp_scenario_num_variants(s);
	variant_result res[MAX_VARIANTS];
	memset(res, 0, sizeof res);
	for (int v = 0; v < nv && v < MAX_VARIANTS; v++)
		if (sel->mask & (1u << v))
			run_variant(c, s, v, workdir, &res[v]);
	summarize(c, s, sel->mask, res);
	printf("\n");
	return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path) == 0 ? 0 : -1;
}

/* Removes our own temporary folder (spools, per-scenario scratch files). */
static int rm_tree(const char *path)
{
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int cmd_run(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--child") == 0)
			return run_child(argc, argv);

	const char *db = DEFAULT_DB;
	int all = 0, keep = 0, size = PP_SCN_FULL, diag = 1;
	selection sel[64];
	int nsel = 0;
	cli_parse p;
	cli_parse_init(&p, "run", opts, usage, argc, argv, 0);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		const char *a = p.val[0];
		if (c == CLI_EXIT) {
			return p.status;
		} else if (c == OPT_ALL) {
			all = 1;
		} else if (c == OPT_QUICK) {
			size = PP_SCN_QUICK;
		} else if (c == OPT_SIZE) {
			if ((size = pp_scn_size_from_name(a)) < 0) {
				cli_error("run: --size needs full, quick or smoke");
				return 2;
			}
		} else if (c == OPT_KEEP) {
			keep = 1;
		} else if (c == OPT_NO_DIAG) {
			diag = 0;
		} else if (c == OPT_OUTPUT) {
			db = a;
		} else {
			char name[128];
			const char *colon = strchr(a, ':');
			snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - a) : (int)strlen(a), a);
			const pp_scenario *s = pp_scenario_find(name);
			if (!s) {
				cli_error("run: unknown scenario '%s'", name);
				list_valid(stderr);
				return 2;
			}
			unsigned mask;
			if (colon) {
				int v = pp_scenario_variant_find(s, colon + 1);
				if (v < 0) {
					cli_error("run: scenario %s has no variant '%s'", name, colon + 1);
					fprintf(stderr, "valid variants of %s:", name);
					for (int k = 0; k < pp_scenario_num_variants(s); k++)
						fprintf(stderr, " %s", pp_scenario_variant_name(s, k));
					fprintf(stderr, "\n");
					return 2;
				}
				mask = 1u << v;
			} else {
				mask = (1u << pp_scenario_num_variants(s)) - 1;
			}
			int k = 0;
			while (k < nsel && sel[k].s != s)
				k++;
			if (k == nsel) {
				if (nsel == (int)(sizeof sel / sizeof sel[0])) {
					cli_error("run: too many scenarios named");
					return 2;
				}
				sel[nsel++] = (selection){s, 0, 1};
			}
			sel[k].mask |= mask;
		}
	}
	if (all && nsel) {
		cli_error("run: give scenario names or --all, not both");
		return 2;
	}
	if (all)
		for (int i = 0; i < pp_scenario_count(); i++)
			sel[nsel++] = (selection){pp_scenario_at(i),
						  (1u << pp_scenario_num_variants(pp_scenario_at(i))) - 1, 0};
	if (!nsel) {
		cli_error("run: name at least one scenario, or --all");
		usage(stderr);
		list_valid(stderr);
		return 2;
	}

	pp_store *st = cli_open_store(db, PP_STORE_WRITE);
	if (!st)
		return 1;
	const char *tdir = getenv("TMPDIR");
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s/phaseprof-run-XXXXXX", tdir && tdir[0] ? tdir : "/tmp");
	if (!mkdtemp(tmp)) {
		cli_error("run: cannot create a temporary folder %s: %s", tmp, strerror(errno));
		pp_store_close(st, NULL, 0);
		return 1;
	}
	run_ctx c = {st, tmp, size, diag, 0};
	printf("phaseprof run: %d scenario%s, %s size, into %s\n\n", nsel, nsel == 1 ? "" : "s",
	       pp_scn_size_name(size), db);
	int unavailable = 0;
	for (int i = 0; i < nsel; i++)
		if (run_scenario(&c, &sel[i]) != 0)
			unavailable++;
	int rc = cli_close_store(st);
	if (keep || c.failures)
		printf("spools and scratch files kept in %s\n", tmp);
	else
		rm_tree(tmp);
	if (c.failures)
		printf("%d variant%s failed or crashed; what they recorded is in %s\n", c.failures,
		       c.failures == 1 ? "" : "s", db);
	printf("database: %s (phaseprof report %s -o report.html; phaseprof stats %s)\n", db, db,
	       db);
	return rc || c.failures || unavailable ? 1 : 0;
}
