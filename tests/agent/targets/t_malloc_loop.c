/* Allocates and frees blocks above the tcache limit in a tight loop, so the
 * main arena's lock is held most of the time a signal lands. */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	void *keep[8] = {0};
	for (long i = 0; i < n; i++) {
		int k = (int)(i & 7);
		free(keep[k]);
		keep[k] = malloc(2000 + (size_t)(i & 1023) * 8);
	}
	for (int k = 0; k < 8; k++)
		free(keep[k]);
	printf("malloc loop done\n");
	return 0;
}
