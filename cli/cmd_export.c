/* phaseprof export --format F DB -o FILE — Chrome trace, folded stacks,
 * graph DOT/SVG, phase CSV (and the HTML report). */
#include "cli.h"
#include "viewers.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

const char cmd_export_summary[] = "export a run as Chrome trace JSON, folded stacks, DOT/SVG or CSV";

static void usage(FILE *o)
{
	fprintf(o, "usage: phaseprof export --format FORMAT DB [-o FILE] [--run N] [--gzip]\n"
		   "                        [--graph ID] [--max-nodes N] [--source samples|spans]\n\n"
		   "formats:\n");
	const pp_view_ops *const *b = pp_view_backends();
	for (int i = 0; b[i]; i++)
		fprintf(o, "  %-8s %s\n", b[i]->name, b[i]->description);
	fprintf(o, "\n  -f, --format FORMAT   one of the formats above (required)\n"
		   "  -o, --output FILE     output file (default: standard output)\n"
		   "  --run N               only run N (default: every run; dot/svg: the latest graph)\n"
		   "  --gzip                compress the output with gzip (Perfetto opens .json.gz)\n"
		   "  --graph ID            dot/svg: graphs.id of the snapshot (see 'phaseprof stats')\n"
		   "  --max-nodes N         dot/svg: group nodes above N (svg default %d, dot: no cap)\n"
		   "  --source S            folded: 'samples' (CPU samples) or 'spans' (phase self time, us);\n"
		   "                        default: samples when the run has them\n",
		PP_GRAPH_DEFAULT_CAP);
}

int cmd_export(int argc, char **argv)
{
	const char *db = NULL, *out = "-", *format = NULL;
	pp_view_opts opts = {0};
	long long v;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int has_val = i + 1 < argc;
		if (cli_is_help(a)) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--gzip") || !strcmp(a, "-z")) {
			opts.gzip = 1;
		} else if (!strcmp(a, "-f") || !strcmp(a, "--format") || !strcmp(a, "-o") || !strcmp(a, "--output") ||
			   !strcmp(a, "--run") || !strcmp(a, "--graph") || !strcmp(a, "--max-nodes") ||
			   !strcmp(a, "--source")) {
			if (!has_val) {
				cli_error("export: %s needs a value", a);
				return 2;
			}
			const char *val = argv[++i];
			if (a[1] == 'f' || !strcmp(a, "--format")) {
				format = val;
			} else if (a[1] == 'o' || !strcmp(a, "--output")) {
				out = val;
			} else if (!strcmp(a, "--source")) {
				if (!strcmp(val, "samples"))
					opts.folded_source = PP_FOLDED_SAMPLES;
				else if (!strcmp(val, "spans"))
					opts.folded_source = PP_FOLDED_SPANS;
				else {
					cli_error("export: --source must be 'samples' or 'spans', not '%s'", val);
					return 2;
				}
			} else {
				if (cli_parse_int64(a, val, &v) != 0)
					return 2;
				if (v <= 0 || v > 2000000000) {
					cli_error("export: %s must be a positive number, not %lld", a, v);
					return 2;
				}
				if (!strcmp(a, "--run"))
					opts.run_id = v;
				else if (!strcmp(a, "--graph"))
					opts.graph_id = v;
				else
					opts.max_graph_nodes = (int)v;
			}
		} else if (a[0] == '-' && a[1]) {
			cli_error("export: unknown option '%s'", a);
			usage(stderr);
			return 2;
		} else if (!db) {
			db = a;
		} else {
			cli_error("export: unexpected argument '%s'", a);
			return 2;
		}
	}
	if (!format) {
		cli_error("export: --format is required (chrome, folded, dot, svg, csv, html)");
		return 2;
	}
	if (!pp_view_backend(format)) {
		cli_error("export: unknown format '%s' (chrome, folded, dot, svg, csv, html)", format);
		return 2;
	}
	if (!db) {
		usage(stderr);
		return 2;
	}
	pp_store *st = cli_open_store(db, PP_STORE_READ);
	if (!st)
		return 1;
	/* writing the output over the database would destroy the recording */
	if (strcmp(out, "-") != 0 && pp_store_is_file(st, out)) {
		cli_error("export: %s: is the database being read; choose another output file", out);
		pp_store_close(st, NULL, 0);
		return 2;
	}
	char err[512];
	int rc = pp_view_write(st, format, &opts, out, err, sizeof err);
	pp_store_close(st, NULL, 0);
	if (rc != 0) {
		cli_error("export: %s", err);
		return 1;
	}
	return 0;
}
