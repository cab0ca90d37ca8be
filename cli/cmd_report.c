/* phaseprof report DB -o report.html — the self-contained HTML report. */
#include "cli.h"
#include "cli_opt.h"
#include "viewers.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char cmd_report_summary[] = "write the self-contained HTML report of a database";

enum { OPT_OUTPUT = 1, OPT_RUN, OPT_TITLE, OPT_MAX_GRAPH_NODES, OPT_TIMELINE_BUDGET };
static const cli_opt opts[] = {
	{OPT_OUTPUT, 'o', "output", 1, "FILE", "output file (default: DB with .html)", NULL},
	{OPT_RUN, 0, "run", 1, "N", "only run N (default: every run)", NULL},
	{OPT_TITLE, 0, "title", 1, "TEXT", "page title (default: the database name)", NULL},
	{OPT_MAX_GRAPH_NODES, 0, "max-graph-nodes", 1, "N",
	 "group graph nodes above N (default " CLI_STR(PP_GRAPH_DEFAULT_CAP) ")", NULL},
	{OPT_TIMELINE_BUDGET, 0, "timeline-budget", 1, "N",
	 "timeline items kept before merging short ones (default " CLI_STR(PP_TIMELINE_DEFAULT_BUDGET) ")", NULL},
	{0},
};

static void usage(FILE *o)
{
	fprintf(o, "usage: phaseprof report DB [-o FILE] [--run N] [--title TEXT]\n"
		   "                        [--max-graph-nodes N] [--timeline-budget N]\n\n"
		   "Writes one HTML file (inline SVG and script, no network access) with the\n"
		   "findings, scenario variants side by side, phase waterfall, step chart,\n"
		   "zoomable timeline, ops, memory, Graphviz graph renderings, CPU flame graph,\n"
		   "libraries / I/O and run metadata.\n\n");
	cli_opt_help(o, opts);
}

int cmd_report(int argc, char **argv)
{
	const char *db = NULL, *out = NULL;
	pp_view_opts opts_v = {0};
	long long v;
	cli_parse p;
	cli_parse_init(&p, "report", opts, usage, argc, argv, 0);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case OPT_OUTPUT:
			out = p.val[0];
			break;
		case OPT_RUN:
			if (cli_parse_int64("--run", p.val[0], &v) != 0)
				return 2;
			if (v <= 0) {
				cli_error("report: --run: run ids start at 1, not %lld", v);
				return 2;
			}
			opts_v.run_id = v;
			break;
		case OPT_TITLE:
			opts_v.title = p.val[0];
			break;
		case OPT_MAX_GRAPH_NODES:
		case OPT_TIMELINE_BUDGET:
			if (cli_parse_int64(p.name, p.val[0], &v) != 0)
				return 2;
			if (v < 1 || v > 100000000) {
				cli_error("report: %s must be between 1 and 100000000", p.name);
				return 2;
			}
			if (c == OPT_MAX_GRAPH_NODES)
				opts_v.max_graph_nodes = (int)v;
			else
				opts_v.timeline_budget = (int)v;
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
	char deflt[4096];
	if (!out) {
		const char *dot = strrchr(db, '.'), *slash = strrchr(db, '/');
		int n = dot && (!slash || dot > slash) ? (int)(dot - db) : (int)strlen(db);
		snprintf(deflt, sizeof deflt, "%.*s.html", n, db);
		out = deflt;
	}
	int status;
	pp_store *st = cli_open_store_for_output("report", db, out, &status);
	if (!st)
		return status;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char err[512];
	int rc = pp_view_write(st, "html", &opts_v, out, err, sizeof err);
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
