/* A program for the regression-gate test: a weight_load phase, a compile
 * phase and 20 steps, each a busy loop (no sleeping: the time is CPU work,
 * as a real regression would be). PP_GATE_SLOW=1 makes weight_load 4x the
 * work: the regression the gate must catch; PP_GATE_SLOW=2 makes every step
 * 2x the work (diff_load.sh). Annotated through the weak
 * symbols, so it runs the same without phaseprof. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "phaseprof_annotate.h"

static volatile uint64_t sink;

static void work(uint64_t iters)
{
	uint64_t x = sink + 1;
	for (uint64_t i = 0; i < iters; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

int main(void)
{
	const char *slow = getenv("PP_GATE_SLOW");
	uint64_t unit = 200000; /* about 0.2-0.5 ms of work on this machine */
	PPA_PHASE_BEGIN(PP_WEIGHT_LOAD, "load weights");
	work((slow && slow[0] == '1' ? 4 : 1) * 60 * unit);
	PPA_PHASE_END();
	PPA_PHASE_BEGIN(PP_COMPILE, "compile");
	work(10 * unit);
	PPA_PHASE_END();
	/* steps of ~10 ms: long enough that a loaded machine's preemption
	 * averages out instead of making every step a different length */
	for (int i = 0; i < 20; i++) {
		PPA_STEP_BEGIN(i);
		work((slow && slow[0] == '2' ? 2 : 1) * 30 * unit);
		PPA_STEP_END();
	}
	printf("done %llu\n", (unsigned long long)(sink & 1));
	return 0;
}
