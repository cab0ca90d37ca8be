/* The intra-op pool: every index covered exactly once, chunks respect the
 * grain, nested and concurrent callers do not deadlock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef struct cover {
	_Atomic int *hits;
	int64_t grain, n;
	_Atomic int small_chunks;
} cover;

static void mark(void *ud, int64_t b, int64_t e)
{
	cover *c = ud;
	if (e - b < c->grain && e != c->n)
		atomic_fetch_add(&c->small_chunks, 1);
	for (int64_t i = b; i < e; i++)
		atomic_fetch_add(&c->hits[i], 1);
}

static void test_cover(void **state)
{
	(void)state;
	flow_threadpool *p = flow__pool_new(4);
	assert_int_equal(flow_threadpool_size(p), 4);
	int64_t sizes[] = {0, 1, 7, 100, 1000, 12345};
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
		for (int64_t grain = 1; grain <= 64; grain *= 8) {
			int64_t n = sizes[s];
			cover c = {calloc((size_t)n + 1, sizeof(_Atomic int)), grain, n, 0};
			flow_parallel_for(p, n, grain, mark, &c);
			for (int64_t i = 0; i < n; i++)
				assert_int_equal(c.hits[i], 1);
			assert_int_equal(c.small_chunks, 0);
			free(c.hits);
		}
	flow__pool_free(p);
}

static flow_threadpool *shared;

static void inner(void *ud, int64_t b, int64_t e)
{
	_Atomic int64_t *sum = ud;
	for (int64_t i = b; i < e; i++)
		atomic_fetch_add(sum, i);
}

static void outer(void *ud, int64_t b, int64_t e)
{
	for (int64_t i = b; i < e; i++)
		flow_parallel_for(shared, 100, 1, inner, ud); /* nested: runs inline */
}

static void *caller(void *ud)
{
	for (int r = 0; r < 50; r++)
		flow_parallel_for(shared, 64, 1, outer, ud);
	return NULL;
}

static void test_nested_and_concurrent(void **state)
{
	(void)state;
	shared = flow__pool_new(3);
	_Atomic int64_t sum1 = 0, sum2 = 0;
	pthread_t t1, t2;
	pthread_create(&t1, NULL, caller, (void *)&sum1);
	pthread_create(&t2, NULL, caller, (void *)&sum2);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	assert_int_equal(sum1, 50LL * 64 * 4950);
	assert_int_equal(sum2, 50LL * 64 * 4950);
	flow__pool_free(shared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cover),
		cmocka_unit_test(test_nested_and_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
