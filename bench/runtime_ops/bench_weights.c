/* Loading the model-init scenario's weights (Dense 784->1024->10, 814,090
 * parameters) from safetensors (mmap), .npy (mmap) and the naive text
 * format (fgets + strtod per value): open + touch every value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench_common.h"
#include "init.h"
#include "weights.h"

static double touch(flow_weights *w)
{
	double s = 0;
	for (int i = 0; i < flow_weights_count(w); i++) {
		const flow_weight *t = flow_weights_at(w, i);
		const float *f = t->data;
		for (size_t k = 0; k < t->nbytes / 4; k++)
			s += f[k];
	}
	return s;
}

int main(void)
{
	char dir[] = "/tmp/flow_bench_w_XXXXXX", p[4][256], err[512];
	if (!mkdtemp(dir))
		return 1;
	int64_t s1[2] = {784, 1024}, s2[1] = {1024}, s3[2] = {1024, 10}, s4[1] = {10};
	float *k1 = malloc(784 * 1024 * 4), *b1 = calloc(1024, 4), *k2 = malloc(1024 * 10 * 4), *b2 = calloc(10, 4);
	flow_init_spec g = flow_init_default(FLOW_INIT_GLOROT_UNIFORM, 1);
	flow_init_fill_f32(&g, s1, 2, k1, err, sizeof err);
	flow_init_fill_f32(&g, s3, 2, k2, err, sizeof err);
	flow_weight ts[4] = {
		{.name = "dense/kernel", .dtype = FLOW_WD_F32, .rank = 2, .shape = {784, 1024}, .data = k1, .nbytes = 784 * 1024 * 4},
		{.name = "dense/bias", .dtype = FLOW_WD_F32, .rank = 1, .shape = {1024}, .data = b1, .nbytes = 4096},
		{.name = "dense_1/kernel", .dtype = FLOW_WD_F32, .rank = 2, .shape = {1024, 10}, .data = k2, .nbytes = 40960},
		{.name = "dense_1/bias", .dtype = FLOW_WD_F32, .rank = 1, .shape = {10}, .data = b2, .nbytes = 40},
	};
	(void)s2;
	(void)s4;
	snprintf(p[0], sizeof p[0], "%s/model.safetensors", dir);
	snprintf(p[1], sizeof p[1], "%s/dense_kernel.npy", dir);
	snprintf(p[2], sizeof p[2], "%s/model.txt", dir);
	double tw[3];
	BENCH_BEST(3, tw[0], flow_safetensors_write(p[0], ts, 4, NULL, 0, err, sizeof err));
	BENCH_BEST(3, tw[1], flow_npy_write(p[1], &ts[0], err, sizeof err));
	BENCH_BEST(1, tw[2], flow_text_weights_write(p[2], ts, 4, err, sizeof err));
	printf("write (atomic: temp + fsync + rename): safetensors %.1f ms, npy (kernel only) %.1f ms, text %.1f ms\n",
	       tw[0] * 1e3, tw[1] * 1e3, tw[2] * 1e3);
	const char *names[3] = {"safetensors (mmap)", "npy kernel (mmap)", "text (fgets/strtod)"};
	flow_weights_format fm[3] = {FLOW_WF_SAFETENSORS, FLOW_WF_NPY, FLOW_WF_TEXT};
	printf("load + touch every value, 814,090 params (npy: the 802,816-value kernel), best of 5:\n");
	double base = 0;
	for (int i = 0; i < 3; i++) {
		double sec, chk = 0;
		size_t bytes = 0;
		BENCH_BEST(5, sec, {
			flow_weights *w = flow_weights_open(p[i], fm[i], err, sizeof err);
			if (!w) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			chk = touch(w);
			bytes = flow_weights_file_bytes(w);
			flow_weights_close(w);
		});
		if (i == 0)
			base = sec;
		printf("  %-20s %8.2f ms  %7.1f MB/s  file %6.2f MB  (%.1fx safetensors; checksum %.3f)\n", names[i],
		       sec * 1e3, (double)bytes / sec / 1e6, (double)bytes / 1e6, sec / base, chk);
	}
	for (int i = 0; i < 3; i++)
		unlink(p[i]);
	rmdir(dir);
	free(k1);
	free(b1);
	free(k2);
	free(b2);
	return 0;
}
