/* phaseprof info DB — what a database holds: runs, their status and losses,
 * and row counts per table. */
#include "cli.h"
#include "cli_opt.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char cmd_info_summary[] = "what a database holds: runs, status, losses, table sizes";

static const cli_opt opts[] = {{0}};

static void usage(FILE *o)
{
	fprintf(o, "usage: phaseprof info DB\n\n"
		   "Lists the runs in a phaseprof database (label, scenario/variant, status,\n"
		   "duration, events and losses) and how many rows each table holds.\n\n");
	cli_opt_help(o, opts);
}

int cmd_info(int argc, char **argv)
{
	const char *db = NULL;
	cli_parse p;
	cli_parse_init(&p, "info", opts, usage, argc, argv, 0);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		if (c == CLI_EXIT || cli_parse_one_arg(&p, &db) != 0)
			return p.status;
	}
	if (!db) {
		usage(stderr);
		return 2;
	}
	pp_store *st = cli_open_store(db, PP_STORE_READ);
	if (!st)
		return 1;
	pp_run_info *runs;
	int n;
	if (pp_store_runs(st, &runs, &n) != 0) {
		cli_error("%s: cannot read runs: %s", db, pp_store_error(st));
		pp_store_close(st, NULL, 0);
		return 1;
	}
	printf("%s: %d run%s\n", db, n, n == 1 ? "" : "s");
	printf("%4s  %-28s %-10s %10s %9s %6s  %s\n", "run", "label / scenario:variant", "status",
	       "duration", "events", "lost", "started");
	for (int i = 0; i < n; i++) {
		pp_run_info *r = &runs[i];
		char name[64];
		if (r->scenario[0])
			snprintf(name, sizeof name, "%.30s:%.30s", r->scenario, r->variant);
		else
			snprintf(name, sizeof name, "%.60s", r->label[0] ? r->label : r->command);
		char when[32] = "";
		time_t t = (time_t)(r->start_unix_ns / 1000000000);
		struct tm tm;
		if (localtime_r(&t, &tm))
			strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
		printf("%4lld  %-28.28s %-10s %9.3fs %9lld %6lld  %s\n", (long long)r->id, name,
		       r->status, (double)r->duration_ns / 1e9, (long long)r->events,
		       (long long)(r->events_lost + r->rows_lost), when);
		if (!r->scenario[0] && r->label[0] && strlen(name) > 28) /* a label cut above */
			printf("      %s\n", name);
		if (r->note[0])
			printf("      note: %s\n", r->note);
		if (r->parent_run)
			printf("      child of run %lld (pid %lld)\n", (long long)r->parent_run,
			       (long long)r->pid);
		if (r->exit_code > 0)
			printf("      exit code %d\n", r->exit_code);
		char py[512];
		if (pp_store_python_status(st, r->id, py, sizeof py) == 1)
			printf("      python: %s\n", py);
		char got[32], merged[32];
		if (pp_store_run_meta(st, r->id, "agent.sample_periods_merged", merged, sizeof merged) == 0 &&
		    pp_store_run_meta(st, r->id, "agent.sample_hz", got, sizeof got) == 0)
			printf("      CPU samples: %s timer periods merged by the kernel (a CPU-clock timer fires at most "
			       "once per scheduler tick, so %s Hz gives at most the tick rate; shares stay right)\n",
			       merged, got);
		char pyf[256];
		if (pp_store_python_frames_state(st, r->id, pyf, sizeof pyf) == 0)
			printf("      python frames in samples: %s\n", pyf);
	}
	free(runs);
	const char *const *tables;
	int64_t *counts;
	if (pp_store_table_rows(st, &tables, &counts) != 0) {
		cli_error("%s: cannot count rows: %s", db, pp_store_error(st));
		pp_store_close(st, NULL, 0);
		return 1;
	}
	printf("\nrows:");
	for (int i = 0; tables[i]; i++)
		printf(" %s %lld%s", tables[i], (long long)counts[i], tables[i + 1] ? "," : "\n");
	free(counts);
	pp_store_close(st, NULL, 0);
	return 0;
}
