/* phaseprof stats DB — terminal tables: runs, phase totals, ops, findings. */
#include "cli.h"
#include "viewers.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

const char cmd_stats_summary[] = "terminal tables: runs, phase totals, top ops, findings (--json)";

static void usage(FILE *o)
{
	fprintf(o, "usage: phaseprof stats DB [--run N] [--json] [--width N]\n\n"
		   "Prints aligned tables that fit the terminal (80 columns by default): the runs,\n"
		   "phase totals per run, the top ops (first step vs steady) and the findings.\n\n"
		   "  --run N     only run N\n"
		   "  --json      one JSON document instead of tables\n"
		   "  --width N   table width in columns (default: the terminal's, at most 80 when piped)\n");
}

int cmd_stats(int argc, char **argv)
{
	const char *db = NULL;
	long long run = 0, width = 0;
	int json = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cli_is_help(a)) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--run") || !strcmp(a, "--width")) {
			if (i + 1 >= argc) {
				cli_error("stats: %s needs a value", a);
				return 2;
			}
			long long *dst = a[2] == 'r' ? &run : &width;
			if (cli_parse_int64(a, argv[++i], dst) != 0)
				return 2;
			if (*dst <= 0 || (dst == &width && *dst > 1000)) {
				cli_error("stats: %s out of range: %lld", a, *dst);
				return 2;
			}
		} else if (a[0] == '-' && a[1]) {
			cli_error("stats: unknown option '%s'", a);
			usage(stderr);
			return 2;
		} else if (!db) {
			db = a;
		} else {
			cli_error("stats: unexpected argument '%s'", a);
			return 2;
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
