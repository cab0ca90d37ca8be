/* Decoder throughput: CUPTI 13.0 kernel/API/external-correlation records in
 * 4 MiB buffers, decoded with no sink, and with the recorder sink (rows into
 * a spool through pp_row). Prints figures; asserts nothing. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "phaseprof.h"
#include "ppgpu.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Fills buf with (external, API, kernel) triples; returns bytes used. */
static size_t fill(uint8_t *buf, size_t cap, uint32_t *corr, size_t *records)
{
	size_t off = 0, n = 0;
	size_t triple = sizeof(CUpti_ActivityExternalCorrelation) + sizeof(CUpti_ActivityAPI) +
			sizeof(CUpti_ActivityKernel10);
	while (off + triple <= cap) {
		uint32_t c = ++*corr;
		CUpti_ActivityExternalCorrelation x = {0};
		x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
		x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
		x.externalId = c / 16 + 1;
		x.correlationId = c;
		memcpy(buf + off, &x, sizeof x);
		off += sizeof x;
		CUpti_ActivityAPI a = {0};
		a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
		a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
		a.start = 1000 + (uint64_t)c * 100;
		a.end = a.start + 20;
		a.threadId = 4242;
		a.correlationId = c;
		memcpy(buf + off, &a, sizeof a);
		off += sizeof a;
		CUpti_ActivityKernel10 k = {0};
		k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k.start = a.end + 5;
		k.end = k.start + 50;
		k.gridX = k.gridY = k.gridZ = 1;
		k.blockX = 256, k.blockY = k.blockZ = 1;
		k.correlationId = c;
		k.name = (c & 1) ? "gemm_kernel" : "relu_kernel";
		memcpy(buf + off, &k, sizeof k);
		off += sizeof k;
		n += 3;
	}
	*records = n;
	return off;
}

int main(int argc, char **argv)
{
	int buffers = argc > 1 ? atoi(argv[1]) : 8;
	size_t cap = (size_t)4 << 20;
	uint8_t *buf = aligned_alloc(8, cap);
	uint32_t corr = 0;
	size_t records;

	ppgpu_decoder *d = ppgpu_decoder_new(NULL, NULL, NULL);
	/* warm-up: grows the correlation map to a realistic size */
	for (int i = 0; i < buffers; i++) {
		size_t used = fill(buf, cap, &corr, &records);
		ppgpu_decode_buffer(d, buf, used);
	}
	/* decode alone over one buffer, repeated */
	size_t used = fill(buf, cap, &corr, &records);
	double best = 1e9;
	for (int r = 0; r < 5; r++) {
		double a = now_s();
		ppgpu_decode_buffer(d, buf, used);
		double dt = now_s() - a;
		if (dt < best)
			best = dt;
	}
	printf("decode, no sink:        %8.1f M records/s  (%zu records per 4 MiB buffer, best of 5)\n",
	       records / best / 1e6, records);
	ppgpu_decoder_free(d);

	char spool[256];
	snprintf(spool, sizeof spool, "%s/ppgpu-bench-%d.spool", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		 (int)getpid());
	pp_options o = {.spool_path = spool};
	if (pp_open(&o) != 0) {
		fprintf(stderr, "pp_open: %s\n", pp_last_error());
		return 1;
	}
	d = ppgpu_decoder_new(NULL, ppgpu_row_to_recorder, NULL);
	double a = now_s();
	for (int i = 0; i < buffers; i++) {
		used = fill(buf, cap, &corr, &records);
		ppgpu_decode_buffer(d, buf, used);
	}
	double dt = now_s() - a;
	ppgpu_decoder_stats st;
	ppgpu_decoder_stats_get(d, &st);
	pp_recorder_stats rs;
	pp_stats(&rs);
	printf("decode + pp_row rows:   %8.2f M rows/s    (%llu rows from %d buffers, %.1f MB spool, %llu rows lost)\n",
	       st.rows / dt / 1e6, (unsigned long long)st.rows, buffers, rs.bytes_written / 1e6,
	       (unsigned long long)rs.rows_lost);
	ppgpu_decoder_free(d);
	pp_close();
	unlink(spool);
	free(buf);
	return 0;
}
