/* Declares its own phases through phaseprof_annotate.h: nothing happens
 * unless it runs under `phaseprof record`. */
#include "phaseprof_annotate.h"
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	PPA_PHASE_BEGIN(PP_WEIGHT_LOAD, "load weights");
	for (int i = 0; i < 100; i++)
		free(malloc(1024));
	PPA_PHASE_END();
	for (int s = 0; s < 3; s++) {
		PPA_STEP_BEGIN(s);
		PPA_STEP_END();
	}
	printf("annotated\n");
	return 0;
}
