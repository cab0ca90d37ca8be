/* cli_opt.c — table-driven option parsing and help (see cli_opt.h). */
#include "cli_opt.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

void cli_parse_init(cli_parse *p, const char *cmd, const cli_opt *opts, void (*usage)(FILE *),
		    int argc, char **argv, int flags)
{
	memset(p, 0, sizeof *p);
	p->cmd = cmd;
	p->opts = opts;
	p->usage = usage;
	p->argc = argc;
	p->argv = argv;
	p->i = 1;
	p->flags = flags;
}

/* "--json, --run N, -o FILE": what the command accepts, for an error line. */
static void valid_list(const cli_opt *opts, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (const cli_opt *o = opts; o->id && n < len; o++) {
		if (!o->help)
			continue;
		int w;
		if (o->long_name)
			w = snprintf(buf + n, len - n, "%s--%s%s%s", n ? ", " : "", o->long_name,
				     o->nargs ? " " : "", o->nargs ? o->metavar : "");
		else
			w = snprintf(buf + n, len - n, "%s-%c%s%s", n ? ", " : "", o->short_name,
				     o->nargs ? " " : "", o->nargs ? o->metavar : "");
		n += w > 0 ? (size_t)w : 0;
	}
	if (n < len)
		snprintf(buf + n, len - n, "%s--help", n ? ", " : "");
}

static int unknown(cli_parse *p, const char *a)
{
	char valid[512];
	valid_list(p->opts, valid, sizeof valid);
	cli_error("%s: unknown option '%s' (valid: %s)", p->cmd, a, valid);
	return cli_parse_fail(p);
}

static int take_values(cli_parse *p, const cli_opt *o, const char *inline_val)
{
	int k = 0;
	if (inline_val) {
		if (o->nargs != 1) {
			cli_error("%s: %s takes %s", p->cmd, p->name,
				  o->nargs ? "two values, given as separate arguments" : "no value");
			return cli_parse_fail(p);
		}
		p->val[k++] = inline_val;
	}
	for (; k < o->nargs; k++) {
		if (p->i >= p->argc) {
			cli_error("%s: %s needs %s", p->cmd, p->name, o->need ? o->need : "a value");
			return cli_parse_fail(p);
		}
		p->val[k] = p->argv[p->i++];
	}
	return o->id;
}

int cli_parse_next(cli_parse *p)
{
	p->val[0] = p->val[1] = NULL;
	if (p->i >= p->argc)
		return CLI_END;
	const char *a = p->argv[p->i];
	if (p->only_args || a[0] != '-' || a[1] == 0) {
		if (p->flags & CLI_STOP_AT_ARG)
			return CLI_END;
		p->i++;
		p->val[0] = a;
		return CLI_ARG;
	}
	p->i++;
	p->name = a;
	if (strcmp(a, "--") == 0) {
		if (p->flags & CLI_STOP_AT_ARG)
			return CLI_END;
		p->only_args = 1;
		return cli_parse_next(p);
	}
	if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
		if (p->usage)
			p->usage(stdout);
		p->status = 0;
		return CLI_EXIT;
	}
	if (a[1] == '-') {
		const char *eq = strchr(a + 2, '=');
		size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
		if (eq) {
			snprintf(p->name_buf, sizeof p->name_buf, "%.*s", (int)(eq - a), a);
			p->name = p->name_buf;
		}
		for (const cli_opt *o = p->opts; o->id; o++)
			if (o->long_name && strlen(o->long_name) == n && strncmp(o->long_name, a + 2, n) == 0)
				return take_values(p, o, eq ? eq + 1 : NULL);
		return unknown(p, a);
	}
	if (a[2] == 0)
		for (const cli_opt *o = p->opts; o->id; o++)
			if (o->short_name == a[1])
				return take_values(p, o, NULL);
	return unknown(p, a);
}

int cli_parse_fail(cli_parse *p)
{
	p->status = 2;
	return CLI_EXIT;
}

int cli_parse_one_arg(cli_parse *p, const char **slot)
{
	if (*slot) {
		cli_error("%s: unexpected argument '%s'", p->cmd, p->val[0]);
		return cli_parse_fail(p);
	}
	*slot = p->val[0];
	return 0;
}

void cli_opt_help(FILE *out, const cli_opt *opts)
{
	char left[96];
	int width = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (const cli_opt *o = opts; o->id; o++) {
			if (!o->help)
				continue;
			const char *mv = o->nargs ? o->metavar : NULL;
			if (o->short_name && o->long_name)
				snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->long_name,
					 mv ? " " : "", mv ? mv : "");
			else if (o->long_name)
				snprintf(left, sizeof left, "--%s%s%s", o->long_name, mv ? " " : "",
					 mv ? mv : "");
			else
				snprintf(left, sizeof left, "-%c%s%s", o->short_name, mv ? " " : "",
					 mv ? mv : "");
			int l = (int)strlen(left);
			if (pass == 0) {
				if (l > width)
					width = l;
				continue;
			}
			fprintf(out, "  %-*s  ", width, left);
			for (const char *h = o->help; *h;) {
				const char *nl = strchr(h, '\n');
				int n = nl ? (int)(nl - h) : (int)strlen(h);
				fprintf(out, "%.*s\n", n, h);
				if (!nl)
					break;
				h = nl + 1;
				fprintf(out, "  %-*s  ", width, "");
			}
		}
	}
	fprintf(out, "  %-*s  %s\n", width, "-h, --help", "this help");
}
