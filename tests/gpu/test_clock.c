/* Clock alignment arithmetic: the tightest cpu-gpu-cpu bracket wins, the
 * pair converts GPU timestamps, 0 stays "unknown", and nothing wraps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ppgpu.h"

/* Scripted clocks: each call returns the next value of a sequence. */
typedef struct script {
	const uint64_t *v;
	int i;
} script;

static uint64_t next_value(void *ud)
{
	script *s = ud;
	return s->v[s->i++];
}

static void test_tightest_bracket(void **st)
{
	(void)st;
	/* rounds: cpu a, gpu, cpu b. Widths 100, 10, 40; round 2 wins. */
	static const uint64_t cpu[] = {1000, 1100, 2000, 2010, 3000, 3040};
	static const uint64_t gpu[] = {900000, 901005, 902020};
	script c = {cpu, 0}, g = {gpu, 0};
	ppgpu_clock_pair p;
	ppgpu_clock_calibrate(next_value, &g, next_value, &c, 3, &p);
	assert_int_equal(p.bracket_ns, 10);
	assert_int_equal(p.cpu_ns, 2005);
	assert_int_equal(p.gpu_ns, 901005);
	assert_int_equal(p.offset_ns, 901005 - 2005);
	assert_int_equal(ppgpu_clock_to_cpu(&p, 901005), 2005);
	assert_int_equal(ppgpu_clock_to_cpu(&p, 901005 + 12345), 2005 + 12345);
}

static void test_backwards_clock_ignored(void **st)
{
	(void)st;
	static const uint64_t cpu[] = {5000, 4000, 6000, 6020};
	static const uint64_t gpu[] = {1, 7000};
	script c = {cpu, 0}, g = {gpu, 0};
	ppgpu_clock_pair p;
	ppgpu_clock_calibrate(next_value, &g, next_value, &c, 2, &p);
	assert_int_equal(p.bracket_ns, 20);
	assert_int_equal(p.cpu_ns, 6010);
	assert_int_equal(p.offset_ns, 7000 - 6010);
}

static void test_conversion_edges(void **st)
{
	(void)st;
	ppgpu_clock_pair p = {0};
	/* realtime-like GPU clock far ahead of a run-relative cpu clock */
	p.gpu_ns = 1795301195430528958ull;
	p.cpu_ns = 1000;
	p.offset_ns = (int64_t)(p.gpu_ns - p.cpu_ns);
	assert_int_equal(ppgpu_clock_to_cpu(&p, 0), 0);                 /* unknown stays unknown */
	assert_int_equal(ppgpu_clock_to_cpu(&p, p.gpu_ns - 5000), 0);   /* before the origin: clamped */
	assert_int_equal(ppgpu_clock_to_cpu(&p, p.gpu_ns + 1), 1001);
	/* GPU clock behind the cpu clock: negative offset adds */
	p.gpu_ns = 10;
	p.cpu_ns = 1000000;
	p.offset_ns = -999990;
	assert_int_equal(ppgpu_clock_to_cpu(&p, 20), 1000010);
	p.offset_ns = INT64_MIN;
	assert_int_equal(ppgpu_clock_to_cpu(&p, UINT64_MAX - 3), UINT64_MAX); /* saturates */
	assert_int_equal(ppgpu_clock_to_cpu(NULL, 77), 77);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tightest_bracket),
		cmocka_unit_test(test_backwards_clock_ignored),
		cmocka_unit_test(test_conversion_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
