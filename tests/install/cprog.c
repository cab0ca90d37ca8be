/* A C program declaring a phase and 5 steps through phaseprof_annotate.h
 * (no link to phaseprof), recorded by an installed phaseprof. Exits 3:
 * `record` must hand the status back and store it. */
#include "phaseprof_annotate.h"

#include <stdio.h>

int main(void)
{
	volatile double sum = 0;
	PPA_PHASE_BEGIN(PP_WEIGHT_LOAD, "load");
	for (int i = 0; i < 100000; i++)
		sum += i;
	PPA_PHASE_END();
	for (int s = 0; s < 5; s++) {
		PPA_STEP_BEGIN(s);
		for (int i = 0; i < 100000; i++)
			sum += i * 0.5;
		PPA_STEP_END();
	}
	PPA_MARK("done");
	printf("sum %.0f\n", sum);
	return 3;
}
