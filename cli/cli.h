/* cli.h — shared helpers for the phaseprof subcommands (cli/cmd_*.c). */
#ifndef PP_CLI_H
#define PP_CLI_H

#include <stdio.h>
#include "pp_fmt.h"
#include "pp_json.h"
#include "store.h"

/* Every subcommand: int cmd_<name>(int argc, char **argv), argv[0] = name;
 * returns the process exit status. cmd_<name>_summary is its one-line help.
 * PP_EXT_CMD names a command built into phaseprof-scenarios (see
 * cli/CMakeLists.txt), which the dispatcher execs. */
#define PP_CMD(name)                                                           \
	int cmd_##name(int argc, char **argv);                                 \
	extern const char cmd_##name##_summary[];
#define PP_EXT_CMD(name, summary)
#include "commands.inc"
#undef PP_CMD
#undef PP_EXT_CMD

/* The executable next to phaseprof that holds the PP_EXT_CMD commands. */
#define CLI_SCENARIOS_EXE "phaseprof-scenarios"

/* "phaseprof: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Opens a store or prints the store's one-line error; NULL on failure. */
pp_store *cli_open_store(const char *path, int mode);
/* Opens db to read for a command that writes out ("-": stdout); refuses
 * when out is db itself (it would destroy the recording). NULL with the
 * exit status in *status (1: cannot open, 2: out is db) on failure. */
pp_store *cli_open_store_for_output(const char *cmd, const char *db, const char *out, int *status);
/* Closes a store opened for writing, printing any error; returns 0 or 1. */
int cli_close_store(pp_store *st);
/* True if argv[i] is -h/--help. */
int cli_is_help(const char *arg);
/* Path of the running phaseprof binary's folder (for the agent .so). */
const char *cli_self_dir(void);
/* Where an installed phaseprof keeps its libraries, from its own folder
 * (the top CMakeLists.txt's installed layout). */
#define CLI_PKGLIB_FROM_BIN "../lib/phaseprof"
/* The path of one of phaseprof's libraries (libphaseprof-agent.so...) in
 * out: beside the binary (the build folder), else in CLI_PKGLIB_FROM_BIN
 * (installed). -1 when neither is readable, out then the one beside. */
int cli_lib_path(const char *file, char *out, size_t cap);
/* Sends stderr, and stdout when filter_stdout, through a filter that writes
 * control bytes (ESC, BEL, CR, C1, bytes that are not UTF-8) as \xNN:
 * names from a recording reach the terminal as text, never as commands
 * to it. 0, or -1 (the streams unchanged). */
int cli_safe_stdio(int filter_stdout);
/* Parses a run selector "N" (run id) into *out; prints an error if bad. */
int cli_parse_int64(const char *what, const char *s, long long *out);

/* record_ranks.c: the rank a launcher gave this process, or NULL. */
const char *cli_env_rank(void);
/* Expands %r (rank), %h (host), %p (pid), %% in an output name; -1 with a
 * message when a %r has no rank or the result does not fit. */
int cli_expand_output(const char *in, char *out, size_t outlen);

#endif
