/* pp_debug.h — the PHASEPROF_DEBUG channel of the CLI-side modules.
 *
 *   PHASEPROF_DEBUG=store,ingest,diag   those areas (1 or all: every one)
 *
 * pp_debug("store", "%s: opened for writing", path) then writes
 * "phaseprof[debug store]: <path>: opened for writing" to stderr. Off, each
 * call costs one load and a branch (the arguments are not evaluated). The
 * variable is read once, at the first call. Never in the agent: it runs
 * inside other programs, whose environment and stderr are theirs. */
#ifndef PP_DEBUG_H
#define PP_DEBUG_H

/* -1 until the variable is read, 0 when it is unset or empty, 1 when set */
extern int pp_debug_state;

/* 1 when area's messages are wanted */
int pp_debug_on(const char *area);
void pp_debug_emit(const char *area, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pp_debug(area, ...)                                 \
	do {                                                \
		if (pp_debug_state != 0)                    \
			pp_debug_emit((area), __VA_ARGS__); \
	} while (0)

#endif
