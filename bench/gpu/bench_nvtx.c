/* Cost of an NVTX push/pop pair and a mark as the program sees it: run once
 * plain (NVTX's no-op) and once with NVTX_INJECTION64_PATH pointing at a
 * phaseprof injection library (run.sh does both). Prints figures only. */
#include <nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	nvtxRangePushA("warm-up"); /* the first call loads the injection library */
	nvtxRangePop();
	double best_pair = 1e9, best_mark = 1e9;
	for (int r = 0; r < 5; r++) {
		double a = now_s();
		for (long i = 0; i < n; i++) {
			nvtxRangePushA("step");
			nvtxRangePop();
		}
		double b = now_s();
		for (long i = 0; i < n; i++)
			nvtxMarkA("tick");
		double c = now_s();
		if ((b - a) / n < best_pair)
			best_pair = (b - a) / n;
		if ((c - b) / n < best_mark)
			best_mark = (c - b) / n;
	}
	printf("nvtx %-12s push+pop %7.1f ns   mark %7.1f ns   (best of 5 x %ld)\n",
	       getenv("NVTX_INJECTION64_PATH") ? "injected:" : "no tool:", best_pair * 1e9, best_mark * 1e9, n);
	return 0;
}
