/* phaseprof stats DB — terminal tables: runs, phase totals, ops, findings. */
#include "cli.h"
#include "cli_opt.h"
#include "viewers.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

const char cmd_stats_summary[] = "terminal tables: runs, phase totals, top ops, findings (--json)";

enum { OPT_RUN = 1, OPT_JSON, OPT_WIDTH };
static const cli_opt opts[] = {
	{OPT_RUN, 0, "run", 1, "N", "only run N", NULL},
	{OPT_JSON, 0, "json", 0, NULL, "one JSON document instead of tables", NULL},
	{OPT_WIDTH, 0, "width", 1, "N", "table width in columns (default: the terminal's, at most 80 when piped)", NULL},
	{0},
};

static void usage(FILE *o)
{
	fprintf(o, "usage: phaseprof stats DB [--run N] [--json] [--width N]\n\n"
		   "Prints aligned tables that fit the terminal (80 columns by default): the runs,\n"
		   "phase totals per run, the top ops (first step vs steady) and the findings.\n\n");
	cli_opt_help(o, opts);
}

int cmd_stats(int argc, char **argv)
{
	const char *db = NULL;
	long long run = 0, width = 0;
	int json = 0;
	cli_parse p;
	cli_parse_init(&p, "stats", opts, usage, argc, argv, 0);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		long long *dst = c == OPT_RUN ? &run : &width;
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case OPT_JSON:
			json = 1;
			break;
		case OPT_RUN:
		case OPT_WIDTH:
			if (cli_parse_int64(p.name, p.val[0], dst) != 0)
				return 2;
			if (*dst <= 0 || (dst == &width && *dst > 1000)) {
				cli_error("stats: %s out of range: %lld", p.name, *dst);
				return 2;
			}
			break;
		default:
			if (cli_parse_one_arg(&p, &db) != 0)
				return p.status;
		}
	}
	if (!db) {
		usage(stderr);
		return 2;
	}
	if (!width) {
		struct winsize ws;
		width = 80;
		if (isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 60)
			width = ws.ws_col;
	}
	pp_store *st = cli_open_store(db, PP_STORE_READ);
	if (!st)
		return 1;
	char err[512];
	int rc = pp_stats_print(st, run, json, (int)width, stdout, err, sizeof err);
	pp_store_close(st, NULL, 0);
	if (rc != 0) {
		cli_error("stats: %s", err);
		return 1;
	}
	return 0;
}
