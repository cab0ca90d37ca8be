/* Preloaded after the agent (record puts the agent first), so finalised after
 * it: changes how the program ends once the agent has closed its spool.
 * LATE_EXIT=N: _exit(N); LATE_EXIT=kill: SIGKILL. Only in a recorded
 * program (not in `phaseprof record` itself, which gets LD_PRELOAD too). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((destructor)) static void late_exit(void)
{
	const char *how = getenv("LATE_EXIT");
	if (!how || !getenv("PHASEPROF_SPOOL_DIR"))
		return;
	usleep(300 * 1000); /* record has seen the spool closed by now */
	if (!strcmp(how, "kill"))
		raise(SIGKILL);
	_exit(atoi(how));
}
