/* Usable-size accounting: N rounds of blocks of every kind the hooks see
 * (heap, mmapped, calloc, realloc, aligned), all freed; prints the sum of
 * malloc_usable_size over every block made, which is both what the agent
 * must count as allocated and as freed beyond a run with N = 0. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	unsigned long long sum = 0;
	for (long i = 0; i < n; i++) {
		char *a = malloc(24), *b = malloc(1000), *c = malloc(200000); /* c: mmapped */
		char *d = calloc(10, 100), *e = malloc(40), *f = NULL;
		if (!a || !b || !c || !d || !e || posix_memalign((void **)&f, 64, 300))
			return 1;
		sum += malloc_usable_size(a) + malloc_usable_size(b) + malloc_usable_size(c) +
		       malloc_usable_size(d) + malloc_usable_size(e) + malloc_usable_size(f);
		char *g = realloc(e, 5000); /* frees e's block */
		if (!g)
			return 1;
		sum += malloc_usable_size(g);
		memset(c, 1, 200000);
		free(a), free(b), free(c), free(d), free(f), free(g);
	}
	printf("%llu\n", sum);
	return 0;
}
