/* Multi-threaded allocator churn: THREADS named threads, each ROUNDS
 * malloc/free pairs of 48 bytes and ROUNDS/10 of 100000 bytes, one
 * malloc(0) and one request no allocator can meet. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 20000

static void *work(void *arg)
{
	char name[16];
	snprintf(name, sizeof name, "churn-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	unsigned sum = 0;
	static volatile size_t huge = (size_t)1 << 62, zero = 0;
	char *f = malloc(huge); /* fails: still a request, in the top size class */
	sum += f != NULL;
	free(f);
	free(malloc(zero));
	for (int i = 0; i < ROUNDS; i++) {
		char *p = malloc(48);
		p[0] = (char)i;
		sum += (unsigned char)p[0];
		free(p);
		if (i % 10 == 0) {
			char *q = malloc(100000);
			memset(q, 1, 64);
			sum += (unsigned char)q[1];
			free(q);
		}
	}
	return (void *)(long)sum;
}

int main(void)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, work, (void *)(long)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("churn done\n");
	return 0;
}
