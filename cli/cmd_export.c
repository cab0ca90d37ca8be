/* phaseprof export --format F DB -o FILE — Chrome trace, folded stacks,
 * graph DOT/SVG, phase CSV (and the HTML report). */
#include "cli.h"
#include "cli_opt.h"
#include "viewers.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

const char cmd_export_summary[] = "export a run as Chrome trace JSON, folded stacks, DOT/SVG or CSV";

enum { OPT_FORMAT = 1, OPT_OUTPUT, OPT_RUN, OPT_GZIP, OPT_GRAPH, OPT_MAX_NODES, OPT_SOURCE };
static const cli_opt opts[] = {
	{OPT_FORMAT, 'f', "format", 1, "FORMAT", "one of the formats above (required)", NULL},
	{OPT_OUTPUT, 'o', "output", 1, "FILE", "output file (default: standard output)", NULL},
	{OPT_RUN, 0, "run", 1, "N", "only run N (default: every run; dot/svg: the latest graph)", NULL},
	{OPT_GZIP, 'z', "gzip", 0, NULL, "compress the output with gzip (Perfetto opens .json.gz)", NULL},
	{OPT_GRAPH, 0, "graph", 1, "ID", "dot/svg: graphs.id of the snapshot (see 'phaseprof stats')", NULL},
	{OPT_MAX_NODES, 0, "max-nodes", 1, "N", "dot/svg: group nodes above N (svg default "
	 CLI_STR(PP_GRAPH_DEFAULT_CAP) ", dot: no cap)", NULL},
	{OPT_SOURCE, 0, "source", 1, "S", "folded: 'samples' (CPU samples) or 'spans' (phase self time, us);\n"
	 "default: samples when the run has them", NULL},
	{0},
};

static void usage(FILE *o)
{
	fprintf(o, "usage: phaseprof export --format FORMAT DB [-o FILE] [--run N] [--gzip]\n"
		   "                        [--graph ID] [--max-nodes N] [--source samples|spans]\n\n"
		   "formats:\n");
	const pp_view_ops *const *b = pp_view_backends();
	for (int i = 0; b[i]; i++)
		fprintf(o, "  %-8s %s\n", b[i]->name, b[i]->description);
	fprintf(o, "\n");
	cli_opt_help(o, opts);
}

int cmd_export(int argc, char **argv)
{
	const char *db = NULL, *out = "-", *format = NULL;
	pp_view_opts opts_v = {0};
	long long v;
	cli_parse p;
	cli_parse_init(&p, "export", opts, usage, argc, argv, 0);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		const char *val = p.val[0];
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case OPT_GZIP:
			opts_v.gzip = 1;
			break;
		case OPT_FORMAT:
			format = val;
			break;
		case OPT_OUTPUT:
			out = val;
			break;
		case OPT_SOURCE:
			if (!strcmp(val, "samples"))
				opts_v.folded_source = PP_FOLDED_SAMPLES;
			else if (!strcmp(val, "spans"))
				opts_v.folded_source = PP_FOLDED_SPANS;
			else {
				cli_error("export: --source must be 'samples' or 'spans', not '%s'", val);
				return 2;
			}
			break;
		case OPT_RUN:
		case OPT_GRAPH:
		case OPT_MAX_NODES:
			if (cli_parse_int64(p.name, val, &v) != 0)
				return 2;
			if (v <= 0 || v > 2000000000) {
				cli_error("export: %s must be a positive number, not %lld", p.name, v);
				return 2;
			}
			if (c == OPT_RUN)
				opts_v.run_id = v;
			else if (c == OPT_GRAPH)
				opts_v.graph_id = v;
			else
				opts_v.max_graph_nodes = (int)v;
			break;
		default:
			if (cli_parse_one_arg(&p, &db) != 0)
				return p.status;
		}
	}
	if (!format) {
		cli_error("export: --format is required (chrome, perfetto, folded, dot, svg, csv, html)");
		return 2;
	}
	if (!pp_view_backend(format)) {
		cli_error("export: unknown format '%s' (chrome, perfetto, folded, dot, svg, csv, html)", format);
		return 2;
	}
	if (!db) {
		usage(stderr);
		return 2;
	}
	int status;
	pp_store *st = cli_open_store_for_output("export", db, out, &status);
	if (!st)
		return status;
	char err[512];
	int rc = pp_view_write(st, format, &opts_v, out, err, sizeof err);
	pp_store_close(st, NULL, 0);
	if (rc != 0) {
		cli_error("export: %s", err);
		return 1;
	}
	return 0;
}
