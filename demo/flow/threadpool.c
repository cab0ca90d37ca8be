/*
 * threadpool.c — the intra-op pool: fixed workers; flow_parallel_for splits
 * a range into chunks that the workers and the caller take from a shared
 * counter, so an uneven chunk does not stall the others.
 */
#include "core.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct job {
	void (*fn)(void *ud, int64_t b, int64_t e);
	void *ud;
	int64_t n, chunk;
	atomic_llong next;
	atomic_int pending;          /* workers still inside this job */
} job;

struct flow_threadpool {
	int n;                       /* threads including the caller */
	pthread_t *th;
	pthread_mutex_t mu;          /* serialises parallel_for callers and guards gen */
	pthread_mutex_t wmu;
	pthread_cond_t wake, done;
	job *cur;
	uint64_t gen;
	int quit;
};

static void run_chunks(job *j)
{
	for (;;) {
		int64_t b = atomic_fetch_add(&j->next, j->chunk);
		if (b >= j->n)
			break;
		int64_t e = b + j->chunk < j->n ? b + j->chunk : j->n;
		j->fn(j->ud, b, e);
	}
}

static void *worker(void *arg)
{
	flow_threadpool *p = arg;
	uint64_t seen = 0;
	pthread_mutex_lock(&p->wmu);
	for (;;) {
		while (!p->quit && p->gen == seen)
			pthread_cond_wait(&p->wake, &p->wmu);
		if (p->quit)
			break;
		seen = p->gen;
		job *j = p->cur;
		pthread_mutex_unlock(&p->wmu);
		run_chunks(j);
		pthread_mutex_lock(&p->wmu);
		if (atomic_fetch_sub(&j->pending, 1) == 1)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->wmu);
	return NULL;
}

flow_threadpool *flow__pool_new(int n)
{
	flow_threadpool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->n = n < 1 ? 1 : n;
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutex_init(&p->wmu, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	p->th = calloc((size_t)p->n, sizeof *p->th);
	for (int i = 0; i < p->n - 1; i++)
		if (pthread_create(&p->th[i], NULL, worker, p)) {
			p->n = i + 1; /* fewer threads: still correct */
			break;
		}
	return p;
}

void flow__pool_free(flow_threadpool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->wmu);
	p->quit = 1;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->wmu);
	for (int i = 0; i < p->n - 1; i++)
		pthread_join(p->th[i], NULL);
	free(p->th);
	pthread_mutex_destroy(&p->mu);
	pthread_mutex_destroy(&p->wmu);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->done);
	free(p);
}

int flow_threadpool_size(const flow_threadpool *p)
{
	return p ? p->n : 1;
}

void flow_parallel_for(flow_threadpool *p, int64_t n, int64_t grain,
		       void (*fn)(void *ud, int64_t begin, int64_t end), void *ud)
{
	if (n <= 0)
		return;
	if (grain < 1)
		grain = 1;
	/* Inline when small, single-threaded, or called from inside a pool
	 * task (nested parallelism would deadlock on p->mu). */
	if (!p || p->n == 1 || n <= grain || pthread_mutex_trylock(&p->mu)) {
		fn(ud, 0, n);
		return;
	}
	int64_t chunks = (n + grain - 1) / grain;
	int64_t max_chunks = (int64_t)p->n * 4;
	if (chunks > max_chunks)
		chunks = max_chunks;
	job j;
	j.fn = fn;
	j.ud = ud;
	j.n = n;
	j.chunk = (n + chunks - 1) / chunks;
	if (j.chunk < grain)
		j.chunk = grain; /* the promise: no chunk under the grain but the last */
	atomic_init(&j.next, 0);
	atomic_init(&j.pending, p->n - 1);
	pthread_mutex_lock(&p->wmu);
	p->cur = &j;
	p->gen++;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->wmu);
	run_chunks(&j);
	pthread_mutex_lock(&p->wmu);
	while (atomic_load(&j.pending) > 0)
		pthread_cond_wait(&p->done, &p->wmu);
	pthread_mutex_unlock(&p->wmu);
	pthread_mutex_unlock(&p->mu);
}
