/* phaseprof report DB -o report.html — the self-contained HTML report. */
#include "cli.h"
#include "viewers.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char cmd_report_summary[] = "write the self-contained HTML report of a database";

static void usage(FILE *o)
{
	fprintf(o, "usage: phaseprof report DB [-o FILE] [--run N] [--title TEXT]\n"
		   "                        [--max-graph-nodes N] [--timeline-budget N]\n\n"
		   "Writes one HTML file (inline SVG and script, no network access) with the\n"
		   "findings, scenario variants side by side, phase waterfall, step chart,\n"
		   "zoomable timeline, ops, memory, Graphviz graph renderings, CPU flame graph,\n"
		   "libraries / I/O and run metadata.\n\n"
		   "  -o, --output FILE       output file (default: DB with .html)\n"
		   "  --run N                 only run N (default: every run)\n"
		   "  --title TEXT            page title (default: the database name)\n"
		   "  --max-graph-nodes N     group graph nodes above N (default %d)\n"
		   "  --timeline-budget N     timeline items kept before merging short ones (default %d)\n",
		PP_GRAPH_DEFAULT_CAP, PP_TIMELINE_DEFAULT_BUDGET);
}

static int need_arg(int i, int argc, char **argv)
{
	if (i + 1 >= argc) {
		cli_error("report: %s needs a value", argv[i]);
		return 0;
	}
	return 1;
}

int cmd_report(int argc, char **argv)
{
	const char *db = NULL, *out = NULL;
	pp_view_opts opts = {0};
	long long v;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cli_is_help(a)) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (!need_arg(i, argc, argv))
				return 2;
			out = argv[++i];
		} else if (!strcmp(a, "--run")) {
			if (!need_arg(i, argc, argv) || cli_parse_int64("--run", argv[++i], &v) != 0)
				return 2;
			if (v <= 0) {
				cli_error("report: --run: run ids start at 1, not %lld", v);
				return 2;
			}
			opts.run_id = v;
		} else if (!strcmp(a, "--title")) {
			if (!need_arg(i, argc, argv))
				return 2;
			opts.title = argv[++i];
		} else if (!strcmp(a, "--max-graph-nodes") || !strcmp(a, "--timeline-budget")) {
			if (!need_arg(i, argc, argv) || cli_parse_int64(a, argv[++i], &v) != 0)
				return 2;
			if (v < 1 || v > 100000000) {
				cli_error("report: %s must be between 1 and 100000000", a);
				return 2;
			}
			if (a[2] == 'm')
				opts.max_graph_nodes = (int)v;
			else
				opts.timeline_budget = (int)v;
		} else if (a[0] == '-' && a[1]) {
			cli_error("report: unknown option '%s'", a);
			usage(stderr);
			return 2;
		} else if (!db) {
			db = a;
		} else {
			cli_error("report: unexpected argument '%s'", a);
			return 2;
		}
	}
	if (!db) {
		usage(stderr);
		return 2;
	}
	char deflt[4096];
	if (!out) {
		const char *dot = strrchr(db, '.'), *slash = strrchr(db, '/');
		int n = dot && (!slash || dot > slash) ? (int)(dot - db) : (int)strlen(db);
		snprintf(deflt, sizeof deflt, "%.*s.html", n, db);
		out = deflt;
	}
	pp_store *st = cli_open_store(db, PP_STORE_READ);
	if (!st)
		return 1;
	/* writing the output over the database would destroy the recording */
	if (strcmp(out, "-") != 0 && pp_store_is_file(st, out)) {
		cli_error("report: %s: is the database being read; choose another output file", out);
		pp_store_close(st, NULL, 0);
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char err[512];
	int rc = pp_view_write(st, "html", &opts, out, err, sizeof err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pp_store_close(st, NULL, 0);
	if (rc != 0) {
		cli_error("report: %s", err);
		return 1;
	}
	FILE *f = fopen(out, "rb");
	long size = 0;
	if (f) {
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fclose(f);
	}
	fprintf(stderr, "phaseprof: report written to %s (%.1f KB in %.2f s)\n", out, size / 1024.0,
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
