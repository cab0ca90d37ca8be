/*
 * cmd_ingest.c — `phaseprof ingest [-o run.db] FILE.spool…`
 *
 * Ingests spool files left behind (a recording whose `record` could not
 * finish, `--keep-spools`, a program that wrote its own spool) as one
 * session: runs in start order, children linked to their parents. The
 * spools are left where they are; `--rm` removes the ones ingested.
 */
#include "cli.h"
#include "cli_opt.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char cmd_ingest_summary[] = "store leftover spool files as runs";

enum { OPT_OUTPUT = 1, OPT_KEEP_ALL, OPT_RM, OPT_FORCE };
static const cli_opt opts[] = {
	{OPT_OUTPUT, 'o', "output", 1, "FILE", "database to write (appended to if it exists)", NULL},
	{OPT_KEEP_ALL, 0, "keep-all-spans", 0, NULL, "a row for every span (see 'phaseprof record --help')", NULL},
	{OPT_RM, 0, "rm", 0, NULL, "remove each spool once it is stored", NULL},
	{OPT_FORCE, 0, "force", 0, NULL, "append to a database owned by another user", NULL},
	{0},
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: phaseprof ingest [-o run.db] [--keep-all-spans] [--rm] FILE.spool...\n"
		"\n"
		"Stores each spool file as a run in run.db (default phaseprof.db; runs are\n"
		"appended): spools of one session (a program, its forks and execs) are\n"
		"linked parent to child. A damaged tail is cut and the run marked truncated.\n"
		"\n");
	cli_opt_help(out, opts);
	fprintf(out, "\nExit status: 0 if every spool was stored, 1 if any was not.\n");
}

int cmd_ingest(int argc, char **argv)
{
	const char *out = "phaseprof.db";
	int keep_all = 0, rm = 0;
	cli_parse p;
	cli_parse_init(&p, "ingest", opts, usage, argc, argv, CLI_STOP_AT_ARG);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		if (c == CLI_EXIT)
			return p.status;
		else if (c == OPT_OUTPUT)
			out = p.val[0];
		else if (c == OPT_KEEP_ALL)
			keep_all = 1;
		else if (c == OPT_RM)
			rm = 1;
		else if (c == OPT_FORCE)
			pp_store_allow_foreign(1);
	}
	int i = p.i; /* the spools: from the first positional, or after "--" */
	int n = argc - i;
	if (n <= 0) {
		cli_error("ingest: no spool files given (phaseprof ingest [-o run.db] FILE.spool...)");
		return 2;
	}
	pp_ingest_spool *sp = calloc((size_t)n, sizeof *sp);
	if (!sp) {
		cli_error("ingest: out of memory");
		return 1;
	}
	for (int k = 0; k < n; k++) {
		sp[k].path = argv[i + k];
		/* regular files only, before the database is touched: a named pipe
		 * would block the read, a device never ends */
		struct stat sb;
		if (stat(sp[k].path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
			cli_error("ingest: %s: is %s, not a spool (regular files only)", sp[k].path,
				  S_ISFIFO(sb.st_mode) ? "a named pipe" : S_ISDIR(sb.st_mode) ? "a directory"
				  : S_ISCHR(sb.st_mode) ? "a character device" : "not a regular file");
			free(sp);
			return 1;
		}
	}
	/* a full disk (RLIMIT_FSIZE) must fail the write, not kill us mid-commit */
	signal(SIGXFSZ, SIG_IGN);
	pp_store *st = cli_open_store(out, PP_STORE_WRITE);
	if (!st) {
		free(sp);
		return 1;
	}
	pp_ingest_session_opts so = {0, -1, 0, keep_all, NULL, NULL, 1};
	int done = pp_store_ingest_session(st, sp, n, &so);
	for (int k = 0; k < n; k++) {
		if (!sp[k].run_id) {
			cli_error("ingest: %s", sp[k].err);
			continue;
		}
		pp_run_info ri;
		const char *status = pp_store_run(st, sp[k].run_id, &ri) == 0 ? ri.status : "?";
		printf("%s: run %lld, %s, %llu events", sp[k].path, (long long)sp[k].run_id, status,
		       (unsigned long long)sp[k].res.events);
		if (sp[k].res.note[0])
			printf(" (%s)", sp[k].res.note);
		printf("\n");
	}
	int rc = cli_close_store(st);
	/* removed only once the database is closed and whole */
	for (int k = 0; rm && rc == 0 && k < n; k++)
		if (sp[k].run_id && unlink(sp[k].path) != 0)
			cli_error("ingest: cannot remove %s", sp[k].path);
	free(sp);
	return rc || done < n ? 1 : 0;
}
