/* 64 threads allocating and freeing at once on a machine with few cores:
 * most timed allocator calls are preempted somewhere in the middle. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *churn(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100000; i++)
		free(malloc(64 + (size_t)(i & 255)));
	return NULL;
}

int main(void)
{
	pthread_t t[64];
	for (int i = 0; i < 64; i++)
		pthread_create(&t[i], NULL, churn, NULL);
	for (int i = 0; i < 64; i++)
		pthread_join(t[i], NULL);
	printf("64 threads done\n");
	return 0;
}
