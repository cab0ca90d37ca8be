/* The CUPTI activity decoder over synthetic buffers built from the CUDA 13.0
 * record structs: every kind we enable, records of one launch split across
 * buffers, dropped-record counts, clock conversion, and malformed buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppgpu.h"

/* ---- a sink that copies rows ---- */
typedef struct got_row {
	ppgpu_row r;
	char kind[16], name[128], copy[16], src[16], dst[16];
} got_row;
typedef struct sink {
	got_row rows[64];
	int n;
} sink;

static void collect(const ppgpu_row *r, void *ud)
{
	sink *s = ud;
	if (s->n >= 64)
		return;
	got_row *g = &s->rows[s->n++];
	g->r = *r;
	snprintf(g->kind, sizeof g->kind, "%s", r->kind);
	snprintf(g->name, sizeof g->name, "%s", r->name ? r->name : "");
	snprintf(g->copy, sizeof g->copy, "%s", r->copy_kind ? r->copy_kind : "");
	snprintf(g->src, sizeof g->src, "%s", r->src_kind ? r->src_kind : "");
	snprintf(g->dst, sizeof g->dst, "%s", r->dst_kind ? r->dst_kind : "");
}

static const got_row *find(const sink *s, const char *kind, int nth)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->rows[i].kind, kind) == 0 && nth-- == 0)
			return &s->rows[i];
	return NULL;
}

/* ---- a buffer laid out as CUPTI lays records out ---- */
typedef struct buf {
	uint64_t mem[4096]; /* 8-byte aligned */
	size_t n;
} buf;

static void put(buf *b, const void *rec, size_t size)
{
	assert_true(b->n + size <= sizeof b->mem);
	memcpy((uint8_t *)b->mem + b->n, rec, size);
	b->n += size;
}

static void put_ext(buf *b, uint64_t ext, uint32_t corr)
{
	CUpti_ActivityExternalCorrelation x;
	memset(&x, 0, sizeof x);
	x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
	x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
	x.externalId = ext;
	x.correlationId = corr;
	put(b, &x, sizeof x);
}

static void put_api(buf *b, int runtime, uint32_t cbid, uint32_t corr, uint32_t tid, uint64_t s, uint64_t e)
{
	CUpti_ActivityAPI a;
	memset(&a, 0, sizeof a);
	a.kind = runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
	a.cbid = cbid;
	a.start = s;
	a.end = e;
	a.processId = 100;
	a.threadId = tid;
	a.correlationId = corr;
	put(b, &a, sizeof a);
}

static void put_kernel(buf *b, const char *name, uint32_t corr, uint64_t s, uint64_t e)
{
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof k);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = s;
	k.end = e;
	k.deviceId = 1;
	k.contextId = 2;
	k.streamId = 13;
	k.gridX = 128, k.gridY = 2, k.gridZ = 1;
	k.blockX = 256, k.blockY = 1, k.blockZ = 1;
	k.correlationId = corr;
	k.name = name;
	put(b, &k, sizeof k);
}

static void test_struct_sizes(void **st)
{
	(void)st;
	/* the 13.0 structs, 8-byte aligned as CUPTI lays them out */
	assert_int_equal(ppgpu_record_size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), sizeof(CUpti_ActivityKernel10));
	assert_int_equal(ppgpu_record_size(CUPTI_ACTIVITY_KIND_KERNEL), sizeof(CUpti_ActivityKernel10));
	assert_int_equal(ppgpu_record_size(CUPTI_ACTIVITY_KIND_MEMCPY), sizeof(CUpti_ActivityMemcpy6));
	assert_int_equal(ppgpu_record_size(CUPTI_ACTIVITY_KIND_MEMCPY2), sizeof(CUpti_ActivityMemcpyPtoP4));
	assert_int_equal(ppgpu_record_size(CUPTI_ACTIVITY_KIND_MEMSET), sizeof(CUpti_ActivityMemset4));
	assert_int_equal(ppgpu_record_size(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), sizeof(CUpti_ActivitySynchronization2));
	assert_int_equal(ppgpu_record_size(CUPTI_ACTIVITY_KIND_OVERHEAD), sizeof(CUpti_ActivityOverhead3));
	assert_int_equal(ppgpu_record_size(CUPTI_ACTIVITY_KIND_MARKER), 0);
	for (uint32_t k = 0; k < 60; k++)
		assert_int_equal(ppgpu_record_size(k) % 8, 0);
}

static void test_every_kind(void **st)
{
	(void)st;
	sink s = {0};
	ppgpu_decoder *d = ppgpu_decoder_new(NULL, collect, &s);
	static buf b;
	memset(&b, 0, sizeof b);

	put_ext(&b, 77, 10);
	put_api(&b, 1, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 10, 4242, 1000, 1500);
	put_kernel(&b, "_Z6matmulPfS_S_i", 10, 2000, 9000);

	CUpti_ActivityMemcpy6 m;
	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.flags = 0;
	m.bytes = 1 << 20;
	m.start = 10000, m.end = 12000;
	m.deviceId = 1, m.contextId = 2, m.streamId = 7, m.correlationId = 11;
	put(&b, &m, sizeof m);

	CUpti_ActivityMemcpyPtoP4 p;
	memset(&p, 0, sizeof p);
	p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
	p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
	p.srcKind = p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	p.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
	p.bytes = 4096;
	p.start = 12500, p.end = 12600;
	p.correlationId = 12;
	put(&b, &p, sizeof p);

	CUpti_ActivityMemset4 ms;
	memset(&ms, 0, sizeof ms);
	ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	ms.bytes = 512;
	ms.start = 13000, ms.end = 13100;
	ms.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	ms.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
	ms.streamId = 7;
	ms.correlationId = 13;
	put(&b, &ms, sizeof ms);

	CUpti_ActivitySynchronization2 sy;
	memset(&sy, 0, sizeof sy);
	sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
	sy.start = 14000, sy.end = 20000;
	sy.contextId = 2;
	sy.streamId = (uint32_t)-1;
	sy.correlationId = 14;
	put(&b, &sy, sizeof sy);
	put_api(&b, 1, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 14, 4242, 13900, 20100);

	CUpti_ActivityOverhead3 o;
	memset(&o, 0, sizeof o);
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o.objectId.pt.processId = 100;
	o.objectId.pt.threadId = 4343;
	o.start = 21000, o.end = 21500;
	put(&b, &o, sizeof o);

	put_api(&b, 0, 99999, 15, 4242, 22000, 22010); /* driver cbid beyond the table */

	long n = ppgpu_decode_buffer(d, (const uint8_t *)b.mem, b.n);
	assert_int_equal(n, 10);

	const got_row *k = find(&s, "kernel", 0);
	assert_non_null(k);
	assert_string_equal(k->name, "_Z6matmulPfS_S_i");
	assert_int_equal(k->r.start_ns, 2000);
	assert_int_equal(k->r.end_ns, 9000);
	assert_int_equal(k->r.device, 1);
	assert_int_equal(k->r.context, 2);
	assert_int_equal(k->r.stream, 13);
	assert_int_equal(k->r.correlation_id, 10);
	assert_int_equal(k->r.grid[0], 128);
	assert_int_equal(k->r.grid[1], 2);
	assert_int_equal(k->r.block[0], 256);
	assert_int_equal(k->r.external_id, 77);
	assert_int_equal(k->r.tid, 4242); /* joined through the API record */
	assert_int_equal(k->r.bytes, -1);

	const got_row *rt = find(&s, "runtime", 0);
	assert_string_equal(rt->name, "cudaLaunchKernel");
	assert_int_equal(rt->r.tid, 4242);
	assert_int_equal(rt->r.external_id, 77);
	assert_string_equal(find(&s, "runtime", 1)->name, "cudaDeviceSynchronize");
	assert_string_equal(find(&s, "driver", 0)->name, "driver cbid 99999");

	const got_row *mc = find(&s, "memcpy", 0);
	assert_string_equal(mc->copy, "HtoD");
	assert_string_equal(mc->src, "pageable");
	assert_string_equal(mc->dst, "device");
	assert_string_equal(mc->name, "sync");
	assert_int_equal(mc->r.bytes, 1 << 20);
	assert_int_equal(mc->r.stream, 7);
	assert_int_equal(mc->r.external_id, -1);

	const got_row *p2 = find(&s, "memcpy", 1);
	assert_string_equal(p2->copy, "PtoP");
	assert_string_equal(p2->name, "async");

	const got_row *mset = find(&s, "memset", 0);
	assert_int_equal(mset->r.bytes, 512);
	assert_string_equal(mset->dst, "device");
	assert_string_equal(mset->name, "async");

	const got_row *sync = find(&s, "sync", 0);
	assert_string_equal(sync->name, "context_synchronize");
	assert_int_equal(sync->r.stream, -1);
	assert_int_equal(sync->r.end_ns - sync->r.start_ns, 6000);

	const got_row *ov = find(&s, "overhead", 0);
	assert_string_equal(ov->name, "cupti_buffer_flush");
	assert_int_equal(ov->r.tid, 4343);

	const got_row *ex = find(&s, "external", 0);
	assert_int_equal(ex->r.external_id, 77);
	assert_int_equal(ex->r.correlation_id, 10);
	assert_string_equal(ex->name, "custom0");

	ppgpu_decoder_stats stt;
	ppgpu_decoder_stats_get(d, &stt);
	assert_int_equal(stt.records, 10);
	assert_int_equal(stt.kernels, 1);
	assert_int_equal(stt.memcpys, 2);
	assert_int_equal(stt.memsets, 1);
	assert_int_equal(stt.apis, 3);
	assert_int_equal(stt.syncs, 1);
	assert_int_equal(stt.overheads, 1);
	assert_int_equal(stt.externals, 1);
	ppgpu_decoder_free(d);
}

/* The launching thread's buffer (external correlation + API record) and the
 * device buffer (the kernel) arrive separately; the join must survive. */
static void test_split_across_buffers(void **st)
{
	(void)st;
	sink s = {0};
	ppgpu_decoder *d = ppgpu_decoder_new(NULL, collect, &s);
	static buf a, b, c;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	memset(&c, 0, sizeof c);
	put_ext(&a, 5, 100);
	put_api(&a, 1, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 100, 17, 50, 60);
	put_ext(&a, 6, 101);
	put_api(&a, 1, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 101, 18, 70, 80);
	put_kernel(&b, "k_first", 100, 90, 95);
	put_kernel(&c, "k_second", 101, 96, 99);
	put_kernel(&c, "k_unknown", 555, 100, 110); /* its API record never came */
	assert_int_equal(ppgpu_decode_buffer(d, (const uint8_t *)a.mem, a.n), 4);
	assert_int_equal(ppgpu_decode_buffer(d, (const uint8_t *)b.mem, b.n), 1);
	assert_int_equal(ppgpu_decode_buffer(d, (const uint8_t *)c.mem, c.n), 2);
	const got_row *k1 = find(&s, "kernel", 0), *k2 = find(&s, "kernel", 1), *k3 = find(&s, "kernel", 2);
	assert_string_equal(k1->name, "k_first");
	assert_int_equal(k1->r.external_id, 5);
	assert_int_equal(k1->r.tid, 17);
	assert_string_equal(k2->name, "k_second");
	assert_int_equal(k2->r.external_id, 6);
	assert_int_equal(k2->r.tid, 18);
	assert_int_equal(k3->r.external_id, -1);
	assert_int_equal(k3->r.tid, -1);
	assert_int_equal(k3->r.correlation_id, 555);
	ppgpu_decoder_free(d);
}

/* Many correlation ids: the map grows past its first size and still joins. */
typedef struct check_sink {
	int kernels, bad;
} check_sink;

static void check_join(const ppgpu_row *r, void *ud)
{
	check_sink *c = ud;
	if (strcmp(r->kind, "kernel") != 0)
		return;
	c->kernels++;
	if (r->external_id != r->correlation_id * 3)
		c->bad++;
}

static void test_many_correlations(void **st)
{
	(void)st;
	check_sink c = {0};
	ppgpu_decoder *d = ppgpu_decoder_new(NULL, check_join, &c);
	static buf a;
	for (uint32_t base = 1; base < 20000; base += 500) {
		memset(&a, 0, sizeof a);
		for (uint32_t i = 0; i < 500; i++)
			put_ext(&a, (uint64_t)(base + i) * 3, base + i);
		assert_int_equal(ppgpu_decode_buffer(d, (const uint8_t *)a.mem, a.n), 500);
	}
	memset(&a, 0, sizeof a);
	for (uint32_t corr = 7; corr < 20000; corr += 197)
		put_kernel(&a, "k", corr, 1, 2);
	assert_true(ppgpu_decode_buffer(d, (const uint8_t *)a.mem, a.n) > 100);
	assert_true(c.kernels > 100);
	assert_int_equal(c.bad, 0);
	ppgpu_decoder_free(d);
}

static void test_dropped_counts(void **st)
{
	(void)st;
	ppgpu_decoder *d = ppgpu_decoder_new(NULL, NULL, NULL);
	ppgpu_decoder_add_dropped(d, 3);
	ppgpu_decoder_add_dropped(d, 0);
	ppgpu_decoder_add_dropped(d, 1000);
	ppgpu_decoder_stats stt;
	ppgpu_decoder_stats_get(d, &stt);
	assert_int_equal(stt.dropped, 1003);
	ppgpu_decoder_free(d);
}

static void test_clock_and_unknown_times(void **st)
{
	(void)st;
	sink s = {0};
	ppgpu_clock_pair cp = {.gpu_ns = 1700000000000000000ull, .cpu_ns = 5000, .offset_ns = 0};
	cp.offset_ns = (int64_t)(cp.gpu_ns - cp.cpu_ns);
	ppgpu_decoder *d = ppgpu_decoder_new(&cp, collect, &s);
	static buf b;
	memset(&b, 0, sizeof b);
	put_kernel(&b, "k", 1, cp.gpu_ns + 100, cp.gpu_ns + 350);
	put_kernel(&b, "cut", 2, cp.gpu_ns + 400, 0);            /* end unknown (forced flush) */
	put_kernel(&b, "backwards", 3, cp.gpu_ns + 500, cp.gpu_ns + 499);
	assert_int_equal(ppgpu_decode_buffer(d, (const uint8_t *)b.mem, b.n), 3);
	assert_int_equal(s.rows[0].r.start_ns, 5100);
	assert_int_equal(s.rows[0].r.end_ns, 5350);
	assert_int_equal(s.rows[1].r.start_ns, 5400);
	assert_int_equal(s.rows[1].r.end_ns, -1);
	assert_int_equal(s.rows[2].r.end_ns, -1);
	ppgpu_decoder_free(d);
}

static void test_malformed(void **st)
{
	(void)st;
	sink s = {0};
	ppgpu_decoder *d = ppgpu_decoder_new(NULL, collect, &s);
	static buf b;
	memset(&b, 0, sizeof b);
	put_kernel(&b, "ok", 1, 10, 20);
	size_t good = b.n;
	put_kernel(&b, "cut", 2, 30, 40);
	/* the second record is cut short: the first is kept, the error names the offset */
	assert_int_equal(ppgpu_decode_buffer(d, (const uint8_t *)b.mem, b.n - 16), -1);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.rows[0].name, "ok");
	char want[64];
	snprintf(want, sizeof want, "offset %zu", good);
	assert_non_null(strstr(ppgpu_decoder_error(d), want));

	/* an unknown kind cannot be stepped over */
	memset(&b, 0, sizeof b);
	put_kernel(&b, "ok2", 1, 10, 20);
	uint32_t bogus[2] = {12345, 0};
	put(&b, bogus, sizeof bogus);
	assert_int_equal(ppgpu_decode_buffer(d, (const uint8_t *)b.mem, b.n), -1);
	assert_non_null(strstr(ppgpu_decoder_error(d), "kind 12345"));

	/* stray bytes shorter than a kind field */
	assert_int_equal(ppgpu_decode_buffer(d, (const uint8_t *)b.mem, 2), -1);
	assert_non_null(strstr(ppgpu_decoder_error(d), "stray bytes at offset 0"));

	/* decode_record itself refuses short input and skips kinds it does not store */
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof k);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	assert_int_equal(ppgpu_decode_record(d, &k, sizeof k - 8), -1);
	k.kind = CUPTI_ACTIVITY_KIND_NAME;
	assert_int_equal(ppgpu_decode_record(d, &k, sizeof k), 0);
	assert_int_equal(ppgpu_decode_record(d, NULL, 0), -1);
	ppgpu_decoder_stats stt;
	ppgpu_decoder_stats_get(d, &stt);
	assert_int_equal(stt.skipped, 1);
	assert_true(stt.malformed >= 4);
	ppgpu_decoder_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_struct_sizes),
		cmocka_unit_test(test_every_kind),
		cmocka_unit_test(test_split_across_buffers),
		cmocka_unit_test(test_many_correlations),
		cmocka_unit_test(test_dropped_counts),
		cmocka_unit_test(test_clock_and_unknown_times),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
