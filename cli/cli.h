/* cli.h — shared helpers for the phaseprof subcommands (cli/cmd_*.c). */
#ifndef PP_CLI_H
#define PP_CLI_H

#include <stdio.h>
#include "pp_fmt.h"
#include "pp_json.h"
#include "store.h"

/* Every subcommand: int cmd_<name>(int argc, char **argv), argv[0] = name;
 * returns the process exit status. cmd_<name>_summary is its one-line help. */
#define PP_CMD(name)                                                           \
	int cmd_##name(int argc, char **argv);                                 \
	extern const char cmd_##name##_summary[];
#include "commands.inc"
#undef PP_CMD

/* "phaseprof: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Opens a store or prints the store's one-line error; NULL on failure. */
pp_store *cli_open_store(const char *path, int mode);
/* Closes a store opened for writing, printing any error; returns 0 or 1. */
int cli_close_store(pp_store *st);
/* True if argv[i] is -h/--help. */
int cli_is_help(const char *arg);
/* Path of the running phaseprof binary's folder (for the agent .so). */
const char *cli_self_dir(void);
/* Parses a run selector "N" (run id) into *out; prints an error if bad. */
int cli_parse_int64(const char *what, const char *s, long long *out);

#endif
