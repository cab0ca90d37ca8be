/* 300,000 marks, then exit 0: a spool of several MiB. Run with a file
 * size limit of its own (a full disk for the spool), its run must say how
 * many events it lacks (issue 22, item 10: "0 events lost"). */
#include <stdio.h>

#include "phaseprof_annotate.h"

int main(void)
{
	for (int i = 0; i < 300000; i++)
		PPA_MARK("flood");
	printf("flood done\n");
	return 0;
}
