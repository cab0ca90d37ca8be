/* Allocator invariants: BFC chunks tile their regions, free neighbours are
 * coalesced, bins hold exactly the free chunks, statistics add up — checked
 * after every step of random alloc/free sequences. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static void check(flow_allocator *a)
{
	char msg[256] = "";
	int rc = flow_allocator_check(a, msg, sizeof msg);
	if (rc)
		fail_msg("allocator invariant broken: %s", msg);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static void test_random_sequences(void **state)
{
	(void)state;
	for (int round = 0; round < 4; round++) {
		flow_allocator_options o = {.kind = FLOW_ALLOC_BFC, .reserve = round & 1 ? (1 << 20) : 0};
		flow_allocator *a = flow_allocator_new(&o, NULL);
		assert_non_null(a);
		enum { N = 400 };
		void *p[N] = {0};
		size_t sz[N] = {0};
		uint64_t live = 0;
		for (int step = 0; step < 6000; step++) {
			int i = (int)(next() % N);
			if (p[i]) {
				/* The memory must still hold what we wrote. */
				unsigned char *c = p[i];
				assert_int_equal(c[0], (unsigned char)i);
				assert_int_equal(c[sz[i] - 1], (unsigned char)i);
				flow_allocator_release(a, p[i]);
				p[i] = NULL;
				live -= (sz[i] + 255) & ~(size_t)255;
			} else {
				/* Mostly small, sometimes large: exercises bins and splits. */
				sz[i] = next() % 8 == 0 ? 1 + next() % (3 << 20) : 1 + next() % 20000;
				p[i] = flow_allocator_alloc(a, sz[i]);
				assert_non_null(p[i]);
				assert_int_equal((uintptr_t)p[i] % 256, 0);
				memset(p[i], i, sz[i]);
				live += (sz[i] + 255) & ~(size_t)255;
			}
			if (step % 50 == 0)
				check(a);
			flow_allocator_stats s;
			flow_allocator_stats_get(a, &s);
			/* In use counts whole chunks: at least the rounded requests,
			 * and under twice them (a chunk is split when >= 2x). */
			assert_true(s.bytes_in_use >= live);
			assert_true(s.bytes_in_use < 2 * live || live == 0);
			assert_true(s.peak_bytes_in_use >= s.bytes_in_use);
			assert_true(s.bytes_reserved >= s.bytes_in_use + s.total_free - 0);
		}
		for (int i = 0; i < N; i++)
			flow_allocator_release(a, p[i]);
		check(a);
		flow_allocator_stats s;
		flow_allocator_stats_get(a, &s);
		assert_int_equal(s.bytes_in_use, 0);
		assert_int_equal(s.live_allocs, 0);
		assert_int_equal(s.num_allocs, s.num_frees);
		/* Everything coalesced: each region is one free chunk again. */
		assert_int_equal(s.total_free, s.bytes_reserved);
		flow_allocator_free(a);
	}
}

static void test_rounding_split_coalesce(void **state)
{
	(void)state;
	flow_allocator_options o = {.kind = FLOW_ALLOC_BFC, .reserve = 1 << 16};
	flow_allocator *a = flow_allocator_new(&o, NULL);
	flow_allocator_stats s;
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.bytes_reserved, 1 << 16);
	assert_int_equal(s.num_regions, 1);
	void *x = flow_allocator_alloc(a, 1);
	void *y = flow_allocator_alloc(a, 257);
	void *z = flow_allocator_alloc(a, 1000);
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.bytes_in_use, 256 + 512 + 1024);
	/* Adjacent chunks: a split region hands out consecutive addresses. */
	assert_ptr_equal((char *)y, (char *)x + 256);
	assert_ptr_equal((char *)z, (char *)y + 512);
	/* Free the middle one: a hole; fragmentation = 1 - largest/total. */
	flow_allocator_release(a, y);
	flow_allocator_stats_get(a, &s);
	uint64_t tail = (1 << 16) - 256 - 512 - 1024;
	assert_int_equal(s.total_free, tail + 512);
	assert_int_equal(s.largest_free, tail);
	assert_true(s.fragmentation > 0.0);
	assert_float_equal(s.fragmentation, 1.0 - (double)tail / (double)(tail + 512), 1e-12);
	/* A 512-byte request reuses the hole (best fit), not the tail. */
	void *w = flow_allocator_alloc(a, 500);
	assert_ptr_equal(w, y);
	flow_allocator_release(a, w);
	flow_allocator_release(a, x);
	flow_allocator_release(a, z);
	check(a);
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.largest_free, 1 << 16);
	assert_float_equal(s.fragmentation, 0.0, 0.0);
	flow_allocator_free(a);
}

static void test_growth_doubles(void **state)
{
	(void)state;
	flow_allocator *a = flow_allocator_new(NULL, NULL);
	flow_allocator_stats s;
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.bytes_reserved, 0); /* nothing until first use */
	void *p1 = flow_allocator_alloc(a, 1 << 20);      /* 2 MiB region */
	void *p2 = flow_allocator_alloc(a, 3 << 20);      /* 4 MiB region */
	void *p3 = flow_allocator_alloc(a, 5 << 20);      /* 8 MiB region */
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.num_regions, 3);
	assert_int_equal(s.bytes_reserved, (2u + 4u + 8u) << 20);
	/* Freed memory is reused: no new region for a same-size request. */
	flow_allocator_release(a, p2);
	void *p4 = flow_allocator_alloc(a, 3 << 20);
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.num_regions, 3);
	flow_allocator_release(a, p1);
	flow_allocator_release(a, p3);
	flow_allocator_release(a, p4);
	check(a);
	flow_allocator_free(a);
}

static void test_limit_and_malloc_mode(void **state)
{
	(void)state;
	flow_allocator_options o = {.kind = FLOW_ALLOC_BFC, .limit = 4 << 20};
	flow_allocator *a = flow_allocator_new(&o, NULL);
	void *p = flow_allocator_alloc(a, 3 << 20);
	assert_non_null(p);
	assert_null(flow_allocator_alloc(a, 3 << 20)); /* over the limit: NULL, no crash */
	flow_allocator_release(a, p);
	check(a);
	flow_allocator_free(a);

	flow_allocator_options m = {.kind = FLOW_ALLOC_MALLOC};
	a = flow_allocator_new(&m, NULL);
	void *q = flow_allocator_alloc(a, 1000);
	assert_int_equal((uintptr_t)q % 64, 0);
	flow_allocator_stats s;
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.bytes_in_use, 1000);
	assert_int_equal(s.num_allocs, 1);
	flow_allocator_release(a, q);
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.bytes_in_use, 0);
	assert_int_equal(s.peak_bytes_in_use, 1000);
	flow_allocator_free(a);

	flow_status *st = flow_status_new();
	flow_allocator_options bad = {.kind = 7};
	assert_null(flow_allocator_new(&bad, st));
	assert_int_equal(flow_status_code(st), FLOW_INVALID_ARGUMENT);
	flow_status_free(st);
}

static void test_tensor_refcount(void **state)
{
	(void)state;
	flow_allocator *a = flow_allocator_new(NULL, NULL);
	int64_t d[2] = {3, 5};
	flow_tensor *t = flow_tensor_new_in(a, FLOW_F64, 2, d, NULL);
	assert_int_equal(flow_tensor_nbytes(t), 120);
	for (int i = 0; i < 15; i++)
		assert_true(flow_tensor_get(t, i) == 0.0);
	flow_tensor_ref(t);
	flow_tensor_unref(t);
	flow_allocator_stats s;
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.live_allocs, 1);
	int64_t d2[1] = {15};
	flow_tensor *v = flow_tensor_alias(t, 1, d2, NULL);
	flow_tensor_unref(t);
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.live_allocs, 1); /* the alias keeps the buffer */
	flow_tensor_unref(v);
	flow_allocator_stats_get(a, &s);
	assert_int_equal(s.live_allocs, 0);
	flow_status *st = flow_status_new();
	int64_t bad[2] = {3, -1};
	assert_null(flow_tensor_new_in(a, FLOW_F32, 2, bad, st));
	assert_non_null(strstr(flow_status_message(st), "dim 1"));
	flow_status_free(st);
	flow_allocator_free(a);
}

static int hook_allocs, hook_frees;
static void *hook_alloc(void *ctx, size_t n)
{
	(void)ctx;
	hook_allocs++;
	return aligned_alloc(4096, n);
}
static void hook_free(void *ctx, void *p, size_t n)
{
	(void)ctx, (void)n;
	hook_frees++;
	free(p);
}

static void test_region_hooks(void **state)
{
	(void)state;
	flow_allocator_options o = {.kind = FLOW_ALLOC_BFC, .region_alloc = hook_alloc, .region_free = hook_free};
	flow_allocator *a = flow_allocator_new(&o, NULL);
	void *p = flow_allocator_alloc(a, 100), *q = flow_allocator_alloc(a, 5 << 20);
	assert_int_equal(hook_allocs, 2); /* 2 MiB, then 8 MiB (doubling past the request) */
	flow_allocator_release(a, p);
	flow_allocator_release(a, q);
	flow_allocator_free(a);
	assert_int_equal(hook_frees, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_sequences),
		cmocka_unit_test(test_rounding_split_coalesce),
		cmocka_unit_test(test_growth_doubles),
		cmocka_unit_test(test_limit_and_malloc_mode),
		cmocka_unit_test(test_tensor_refcount),
		cmocka_unit_test(test_region_hooks),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	flow_shutdown();
	return rc;
}
