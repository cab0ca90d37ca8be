/* cli_opt.h — one option table per command: it parses argv and prints the
 * option part of --help, so the two never disagree.
 *
 *   static const cli_opt opts[] = {
 *           {OPT_OUT, 'o', "output", 1, "FILE", "output file"},
 *           {OPT_JSON, 0, "json", 0, NULL, "one JSON document"},
 *           {0},
 *   };
 *   cli_parse p;
 *   cli_parse_init(&p, "stats", opts, usage, argc, argv, 0);
 *   for (int c; (c = cli_parse_next(&p)) != CLI_END;)
 *           switch (c) { case CLI_EXIT: return p.status;   (--help printed, or an error)
 *                        case CLI_ARG: p.val[0] is a positional; case OPT_OUT: p.val[0] ... }
 *
 * Accepted forms: -o V, --output V, --output=V, -h/--help, "--" (the rest
 * positional), "-" (a positional). Errors are one line on stderr naming
 * the command and the option. */
#ifndef PP_CLI_OPT_H
#define PP_CLI_OPT_H

#include <stdio.h>

enum { CLI_END = -1, CLI_ARG = -2, CLI_EXIT = -3 };

/* A number macro as text, for help strings. */
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

/* flags */
#define CLI_STOP_AT_ARG 1 /* the first positional ends parsing (record's command) */

typedef struct cli_opt {
	int id;                 /* > 0, returned by cli_parse_next; 0 ends the table */
	char short_name;        /* 'o' for -o, or 0 */
	const char *long_name;  /* "output" for --output, or NULL */
	int nargs;              /* values after the option: 0, 1 or 2 */
	const char *metavar;    /* "FILE" in the help, "A B" for two */
	const char *help;       /* NULL: accepted but not listed; '\n' continues a line */
	const char *need;       /* what a missing value is called ("two run ids"); NULL "a value" */
} cli_opt;

typedef struct cli_parse {
	const char *cmd;        /* "stats": prefixes every error */
	const cli_opt *opts;
	int argc;
	char **argv;
	int i;                  /* next argv index; after CLI_END with CLI_STOP_AT_ARG,
				   the first positional */
	int flags, only_args;
	void (*usage)(FILE *);  /* prints the command's --help */
	int status;             /* after CLI_EXIT: 0 (--help) or 2 (usage error) */
	const char *val[2];     /* the option's values, or the positional */
	const char *name;       /* the option as spelt ("-o", "--output"), without "=value" */
	char name_buf[64];
} cli_parse;

void cli_parse_init(cli_parse *p, const char *cmd, const cli_opt *opts, void (*usage)(FILE *),
		    int argc, char **argv, int flags);
/* The next option id, CLI_ARG (positional in val[0]), CLI_END, or CLI_EXIT:
 * --help was printed (status 0) or a one-line error (status 2). */
int cli_parse_next(cli_parse *p);
/* Stores the positional just parsed in *slot; a second one is an error.
 * Returns 0, or CLI_EXIT (status 2) after "CMD: unexpected argument". */
int cli_parse_one_arg(cli_parse *p, const char **slot);
/* Fails the parse from a command's own check: the caller printed why. */
int cli_parse_fail(cli_parse *p);
/* The option lines of --help, aligned, from the table. */
void cli_opt_help(FILE *o, const cli_opt *opts);

#endif
