/* 64 threads allocating and freeing at once, through one malloc arena, on
 * a machine with few cores: the threads start together (a barrier) and
 * contend for the arena's lock, so many timed allocator calls wait,
 * descheduled, somewhere in the middle — the condition that once made the
 * time-inside-the-allocator estimate read 44-54 s for a 0.6 s run. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 64

static pthread_barrier_t start;

static void *churn(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < 100000; i++)
		free(malloc(2048 + (size_t)(i & 255) * 8)); /* past the per-thread cache: the arena's lock */
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	mallopt(M_ARENA_MAX, 1);
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, churn, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("64 threads done\n");
	return 0;
}
