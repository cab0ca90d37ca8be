/* phaseprof — one small dispatcher over the subcommands in cli/cmd_*.c. The
 * same file is the main of phaseprof-scenarios, whose table holds only the
 * commands phaseprof execs it for. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct command {
	const char *name;
	int (*fn)(int, char **);   /* NULL: in CLI_SCENARIOS_EXE */
	const char *summary;
};

static const struct command commands[] = {
#define PP_CMD(n) {#n, cmd_##n, cmd_##n##_summary},
#define PP_EXT_CMD(n, summary) {#n, NULL, summary},
#include "commands.inc"
#undef PP_CMD
#undef PP_EXT_CMD
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
	fprintf(out, "usage: phaseprof <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'phaseprof <command> --help' describes a command.\n");
}

/* Runs argv[0] (argc arguments, NULL-terminated) in CLI_SCENARIOS_EXE by
 * exec: the same process, so the caller sees its output and exit status as
 * if it ran here. Returns only on failure. */
static int exec_scenarios(int argc, char **argv)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", cli_self_dir(), CLI_SCENARIOS_EXE);
	char **args = calloc((size_t)argc + 2, sizeof *args);
	if (!args) {
		cli_error("%s: out of memory", argv[0]);
		return 2;
	}
	args[0] = "phaseprof";
	memcpy(args + 1, argv, (size_t)argc * sizeof *args);
	fflush(NULL);
	execv(path, args);
	cli_error("%s: cannot run %s: %s (phaseprof's scenario commands live there)", argv[0], path,
		  strerror(errno));
	free(args);
	return 2;
}

static int run_command(const struct command *c, int argc, char **argv)
{
	return c->fn ? c->fn(argc, argv) : exec_scenarios(argc, argv);
}

const char cmd_help_summary[] = "describe the commands";

int cmd_help(int argc, char **argv)
{
	if (argc > 1) {
		for (size_t i = 0; i < N_COMMANDS; i++)
			if (strcmp(commands[i].name, argv[1]) == 0) {
				char *sub[] = {argv[1], "--help", NULL};
				return run_command(&commands[i], 2, sub);
			}
		cli_error("unknown command '%s' (see 'phaseprof help')", argv[1]);
		return 2;
	}
	usage(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (cli_is_help(argv[1]))
		return cmd_help(1, argv + 1);
	/* text only to the terminal: export and report may write their file
	 * (gzip included) to stdout as it is */
	(void)cli_safe_stdio(strcmp(argv[1], "export") != 0 && strcmp(argv[1], "report") != 0);
	/* one thread uses SQLite here: no reason to pay for its locks */
	(void)pp_store_single_threaded();
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, argv[1]) == 0)
			return run_command(&commands[i], argc - 1, argv + 1);
	cli_error("unknown command '%s' (see 'phaseprof help')", argv[1]);
	return 2;
}
