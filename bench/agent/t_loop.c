/* Benchmark workload: N malloc/free pairs of a varying small size. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	unsigned long sum = 0;
	for (long i = 0; i < n; i++) {
		char *p = malloc(16 + (size_t)(i & 255));
		p[0] = (char)i;
		sum += (unsigned char)p[0];
		free(p);
	}
	printf("%lu\n", sum);
	return 0;
}
