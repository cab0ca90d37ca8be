/* Philox fills and initialisers: throughput by thread count (the numbers
 * are identical for every thread count; see tests/runtime_ops). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../bench_common.h"
#include "init.h"
#include "random.h"

int main(void)
{
	const size_t n = 784 * 1024;
	float *x = malloc(n * sizeof *x);
	int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
	const char *dn[] = {"uniform", "normal", "truncated_normal"};
	if (!x)
		return 1;
	printf("Philox4x32-10 fill, %zu f32 (784x1024), best of 5:\n", n);
	for (int d = 0; d < 3; d++)
		for (int t = 1; t <= cores; t = t == cores ? cores + 1 : (t * 2 > cores ? cores : t * 2)) {
			double s;
			BENCH_BEST(5, s, flow_random_fill_f32(x, n, 1, 2, (flow_dist)d, 0, 1, t));
			printf("  %-17s threads %d: %7.2f ms  %6.2f ns/elem\n", dn[d], t, s * 1e3, s * 1e9 / (double)n);
		}
	int64_t shape[2] = {784, 1024}, sq[2] = {1024, 1024};
	char err[200];
	flow_init_kind kinds[] = {FLOW_INIT_ZEROS, FLOW_INIT_GLOROT_UNIFORM, FLOW_INIT_GLOROT_NORMAL,
				  FLOW_INIT_HE_NORMAL};
	printf("initialisers on 784x1024 f32, all cores, best of 5:\n");
	for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
		flow_init_spec s = flow_init_default(kinds[k], 7);
		double sec;
		BENCH_BEST(5, sec, flow_init_fill_f32(&s, shape, 2, x, err, sizeof err));
		printf("  %-15s %7.2f ms\n", flow_init_name(kinds[k]), sec * 1e3);
	}
	float *y = malloc(1024 * 1024 * sizeof *y);
	flow_init_spec o = flow_init_default(FLOW_INIT_ORTHOGONAL, 7);
	double sec;
	BENCH_BEST(3, sec, flow_init_fill_f32(&o, shape, 2, x, err, sizeof err));
	printf("  %-15s %7.2f ms (784x1024: QR of 1024x784)\n", "orthogonal", sec * 1e3);
	BENCH_BEST(3, sec, flow_init_fill_f32(&o, sq, 2, y, err, sizeof err));
	printf("  %-15s %7.2f ms (1024x1024)\n", "orthogonal", sec * 1e3);
	free(x);
	free(y);
	return 0;
}
