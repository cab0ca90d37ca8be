/* phaseprof — one small dispatcher over the subcommands in cli/cmd_*.c. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int, char **);
	const char *summary;
};

static const struct command commands[] = {
#define PP_CMD(n) {#n, cmd_##n, cmd_##n##_summary},
#include "commands.inc"
#undef PP_CMD
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
	fprintf(out, "usage: phaseprof <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'phaseprof <command> --help' describes a command.\n");
}

const char cmd_help_summary[] = "describe the commands";

int cmd_help(int argc, char **argv)
{
	if (argc > 1) {
		for (size_t i = 0; i < N_COMMANDS; i++)
			if (strcmp(commands[i].name, argv[1]) == 0) {
				char *sub[] = {argv[1], "--help", NULL};
				return commands[i].fn(2, sub);
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
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, argv[1]) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	cli_error("unknown command '%s' (see 'phaseprof help')", argv[1]);
	return 2;
}
