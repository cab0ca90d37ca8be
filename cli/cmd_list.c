/* phaseprof list — the built-in scenarios: complaint, variants, and whether
 * each can run on this machine (and why not). */
#include "cli.h"
#include "cli_opt.h"
#include "scenarios.h"

#include <stdlib.h>
#include <string.h>

const char cmd_list_summary[] = "the built-in slowdown scenarios and whether they run here";

enum { OPT_JSON = 1 };
static const cli_opt opts[] = {
	{OPT_JSON, 0, "json", 0, NULL, "one JSON array instead of text", NULL},
	{0},
};

static void usage(FILE *o)
{
	fprintf(o, "usage: phaseprof list [--json]\n\n"
		   "Lists the built-in scenarios ('phaseprof run <scenario>' runs one): the\n"
		   "complaint each reproduces, its slow variant and fixes, the diagnostics rule\n"
		   "expected to name the cause, and whether it can run on this machine.\n\n");
	cli_opt_help(o, opts);
}

/* Output backends (as uftrace's dump ops): one call per scenario. */
struct list_ops {
	void (*header)(FILE *o);
	void (*scenario)(FILE *o, const pp_scenario *s, int first, int available, const char *why);
	void (*footer)(FILE *o);
};

static void text_header(FILE *o)
{
	fprintf(o, "%-14s %-9s %s\n", "scenario", "runs here", "complaint");
}

static void text_scenario(FILE *o, const pp_scenario *s, int first, int available,
			  const char *why)
{
	(void)first;
	fprintf(o, "%-14s %-9s %s\n", pp_scenario_name(s), available ? "yes" : "no",
		pp_scenario_complaint(s));
	if (!available)
		fprintf(o, "%-14s %-9s unavailable: %s\n", "", "", why);
	for (int v = 0; v < pp_scenario_num_variants(s); v++)
		fprintf(o, "%-14s %-9s   %-5s %-18s %s\n", "", "",
			pp_scn_variant_kind_name(pp_scenario_variant_kind(s, v)),
			pp_scenario_variant_name(s, v), pp_scenario_variant_what(s, v));
	int nr;
	const char *const *rules = pp_scenario_rules(s, &nr);
	fprintf(o, "%-14s %-9s   findings: ", "", "");
	for (int i = 0; i < nr; i++)
		fprintf(o, "%s%s", i ? ", " : "", rules[i]);
	fprintf(o, "%s; source: %s\n", nr ? "" : "none", pp_scenario_source(s));
}

static void text_footer(FILE *o)
{
	fprintf(o, "\n'phaseprof run <scenario>…' or 'phaseprof run --all' runs them.\n");
}

static void json_header(FILE *o)
{
	fprintf(o, "[");
}

static void json_scenario(FILE *o, const pp_scenario *s, int first, int available,
			  const char *why)
{
	fprintf(o, "%s\n {\"name\": ", first ? "" : ",");
	pp_json_fputs(o, pp_scenario_name(s));
	fprintf(o, ", \"complaint\": ");
	pp_json_fputs(o, pp_scenario_complaint(s));
	fprintf(o, ", \"source\": ");
	pp_json_fputs(o, pp_scenario_source(s));
	fprintf(o, ", \"available\": %s, \"unavailable_reason\": ", available ? "true" : "false");
	pp_json_fputs(o, available ? "" : why);
	fprintf(o, ", \"variants\": [");
	for (int v = 0; v < pp_scenario_num_variants(s); v++) {
		fprintf(o, "%s{\"name\": ", v ? ", " : "");
		pp_json_fputs(o, pp_scenario_variant_name(s, v));
		fprintf(o, ", \"kind\": \"%s\", \"what\": ",
			pp_scn_variant_kind_name(pp_scenario_variant_kind(s, v)));
		pp_json_fputs(o, pp_scenario_variant_what(s, v));
		fprintf(o, ", \"expect\": ");
		if (pp_scenario_variant_expect(s, v))
			pp_json_fputs(o, pp_scenario_variant_expect(s, v));
		else
			fprintf(o, "null");
		fprintf(o, "}");
	}
	fprintf(o, "], \"rules\": [");
	int nr;
	const char *const *rules = pp_scenario_rules(s, &nr);
	for (int i = 0; i < nr; i++) {
		fprintf(o, "%s", i ? ", " : "");
		pp_json_fputs(o, rules[i]);
	}
	fprintf(o, "]}");
}

static void json_footer(FILE *o)
{
	fprintf(o, "\n]\n");
}

static const struct list_ops text_ops = {text_header, text_scenario, text_footer};
static const struct list_ops json_ops = {json_header, json_scenario, json_footer};

int cmd_list(int argc, char **argv)
{
	const struct list_ops *ops = &text_ops;
	cli_parse p;
	cli_parse_init(&p, "list", opts, usage, argc, argv, 0);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		if (c == CLI_EXIT) {
			return p.status;
		} else if (c == OPT_JSON) {
			ops = &json_ops;
		} else {
			cli_error("list: unexpected argument '%s' (valid: --json, --help)", p.val[0]);
			return 2;
		}
	}
	ops->header(stdout);
	for (int i = 0; i < pp_scenario_count(); i++) {
		const pp_scenario *s = pp_scenario_at(i);
		char why[512];
		int ok = pp_scenario_available(s, why, sizeof why);
		ops->scenario(stdout, s, i == 0, ok, why);
	}
	ops->footer(stdout);
	return 0;
}
