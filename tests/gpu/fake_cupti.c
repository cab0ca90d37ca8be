/* A fake libcupti implementing the slice of the activity API the collector
 * uses, so the collector runs end to end on a machine without a GPU. It
 * produces CUDA 13.0 records (the real structs) when the test "launches" work
 * through the fake_cupti_* hooks, keeps thread-side records (API, external
 * correlation) and device-side records (kernels, copies) in separate pending
 * lists, and delivers them as separate buffers at flush, as CUPTI does.
 * Knobs via environment: FAKE_CUPTI_SUBSCRIBE (result of cuptiSubscribe_v2),
 * FAKE_CUPTI_HOLDER (name reported), FAKE_CUPTI_TSCB (result of the timestamp
 * callback registration), FAKE_CUPTI_ENABLE (result of cuptiActivityEnable).
 * fake_cupti_hang_flush / fake_cupti_hang_finalize wedge the forced flush /
 * cuptiFinalize until fake_cupti_release. With the runtime API domain
 * enabled (cuptiEnableDomain), the fake's API calls call the subscriber's
 * callback at ENTER and EXIT; fake_cupti_set_api_delay makes them slow. */
#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_TimestampCallbackFunc ts_cb;
static CUpti_BuffersCallbackRequestFunc req_cb;
static CUpti_BuffersCallbackCompleteFunc done_cb;
static int enabled[64];
static uint64_t ext_stack[64];
static int ext_depth;
static unsigned ext_pushes, ext_pops, ext_bad_pops;
static uint32_t next_corr = 1;
static size_t dropped_pending;
static int finalized, hang_flush, hang_finalize, subscribed, flushes_done;
/* the subscriber's callback, the runtime API domain's switch, and how long
 * the next API calls take between their ENTER and EXIT callbacks */
static CUpti_CallbackFunc sub_cb;
static void *sub_ud;
static int runtime_domain_on;
static unsigned api_delay_us, callbacks_made;

typedef struct pending {
	uint8_t *p;
	size_t n, cap;
} pending;
static pending thread_side, device_side;

static uint64_t now(void)
{
	if (ts_cb)
		return ts_cb();
	struct timespec t; /* CUPTI's default clock on Linux */
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void append(pending *q, const void *rec, size_t n)
{
	if (q->n + n > q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 4096;
		while (cap < q->n + n)
			cap *= 2;
		q->p = realloc(q->p, cap);
		q->cap = cap;
	}
	memcpy(q->p + q->n, rec, n);
	q->n += n;
}

static size_t rec_size(uint32_t kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
	default: return 0;
	}
}

CUptiResult cuptiGetVersion(uint32_t *v)
{
	*v = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t *t)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	*t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud,
			      CUpti_SubscriberParams *p)
{
	int rc = env_int("FAKE_CUPTI_SUBSCRIBE", 0);
	if (rc) {
		const char *holder = getenv("FAKE_CUPTI_HOLDER");
		if (p && p->oldSubscriberName && p->oldSubscriberSize && holder) {
			strncpy(p->oldSubscriberName, holder, p->oldSubscriberSize - 1);
			p->oldSubscriberName[p->oldSubscriberSize - 1] = 0;
		}
		return (CUptiResult)rc;
	}
	if (subscribed)
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	subscribed = 1;
	sub_cb = cb;
	sub_ud = ud;
	*s = (CUpti_SubscriberHandle)&subscribed;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle s, CUpti_CallbackDomain domain)
{
	if (s != (CUpti_SubscriberHandle)&subscribed || !subscribed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		runtime_domain_on = enable != 0;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s)
{
	if (s != (CUpti_SubscriberHandle)&subscribed || !subscribed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	subscribed = 0;
	sub_cb = NULL;
	runtime_domain_on = 0;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
	int rc = env_int("FAKE_CUPTI_TSCB", 0);
	if (rc)
		return (CUptiResult)rc;
	ts_cb = f;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
					   CUpti_BuffersCallbackCompleteFunc d)
{
	req_cb = r;
	done_cb = d;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
	int rc = env_int("FAKE_CUPTI_ENABLE", 0);
	if (rc)
		return (CUptiResult)rc;
	if ((unsigned)k < 64)
		enabled[k] = 1;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
	if ((unsigned)k < 64)
		enabled[k] = 0;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind k, uint64_t id)
{
	if (k != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || ext_depth >= 64)
		return CUPTI_ERROR_INVALID_PARAMETER;
	ext_stack[ext_depth++] = id;
	ext_pushes++;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind k, uint64_t *last)
{
	if (k != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || ext_depth <= 0) {
		ext_bad_pops++;
		return CUPTI_ERROR_QUEUE_EMPTY;
	}
	uint64_t v = ext_stack[--ext_depth];
	ext_pops++;
	if (last)
		*last = v;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	size_t off = 0;
	if (*rec) {
		off = (size_t)((uint8_t *)*rec - buf) + rec_size((*rec)->kind);
	}
	if (off >= valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)(buf + off);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped)
{
	(void)ctx, (void)stream;
	pthread_mutex_lock(&lock);
	*dropped = dropped_pending;
	dropped_pending = 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

static void deliver(pending *q)
{
	if (!q->n)
		return;
	uint8_t *buf = NULL;
	size_t size = 0, max = 0;
	req_cb(&buf, &size, &max);
	if (!buf || size < q->n) { /* CUPTI would drop these */
		dropped_pending += q->n / sizeof(CUpti_ActivityAPI);
		q->n = 0;
		return;
	}
	memcpy(buf, q->p, q->n);
	size_t valid = q->n;
	q->n = 0;
	done_cb(NULL, 0, buf, size, valid);
}

/* A wedged driver: the caller must not wait for these forever. The test
 * can let them go (fake_cupti_release) to see what the collector does with
 * what a late CUPTI call hands back. */
static pthread_cond_t unwedge = PTHREAD_COND_INITIALIZER;

static void wait_while(int *hang)
{
	pthread_mutex_lock(&lock);
	while (*hang)
		pthread_cond_wait(&unwedge, &lock);
	pthread_mutex_unlock(&lock);
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
		wait_while(&hang_flush);
	pthread_mutex_lock(&lock);
	pending t = thread_side, d = device_side;
	memset(&thread_side, 0, sizeof thread_side);
	memset(&device_side, 0, sizeof device_side);
	pthread_mutex_unlock(&lock);
	/* thread-side first, then the device buffer: separate buffers */
	deliver(&t);
	deliver(&d);
	free(t.p);
	free(d.p);
	pthread_mutex_lock(&lock);
	flushes_done++;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiFinalize(void)
{
	wait_while(&hang_finalize);
	finalized++;
	ts_cb = NULL;
	req_cb = NULL;
	done_cb = NULL;
	return CUPTI_SUCCESS;
}

/* ---- hooks for the test ---- */

/* The runtime domain's callback at one site of an API call, on the calling
 * thread, outside the fake's lock (CUPTI calls it in the API call itself). */
static void runtime_cb(CUpti_ApiCallbackSite site, uint32_t cbid, const char *fn)
{
	if (!runtime_domain_on || !sub_cb)
		return;
	CUpti_CallbackData d;
	memset(&d, 0, sizeof d);
	d.callbackSite = site;
	d.functionName = fn;
	__atomic_fetch_add(&callbacks_made, 1, __ATOMIC_RELAXED);
	sub_cb(sub_ud, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &d);
}

static void api_wait(void)
{
	unsigned us = __atomic_load_n(&api_delay_us, __ATOMIC_RELAXED);
	if (us) {
		struct timespec t = {us / 1000000, (long)(us % 1000000) * 1000};
		nanosleep(&t, NULL);
	}
}

/* The next API calls take `us` microseconds (a cold first call). */
void fake_cupti_set_api_delay(unsigned us)
{
	__atomic_store_n(&api_delay_us, us, __ATOMIC_RELAXED);
}

/* Callbacks made so far (runtime domain on). */
unsigned fake_cupti_callbacks(void)
{
	return __atomic_load_n(&callbacks_made, __ATOMIC_RELAXED);
}

/* An API call with no GPU work (cudaMalloc, cudaStreamCreate…): callbacks only. */
void fake_cupti_api(const char *fn)
{
	runtime_cb(CUPTI_API_ENTER, 0, fn);
	api_wait();
	runtime_cb(CUPTI_API_EXIT, 0, fn);
}

static uint32_t api_call(uint32_t cbid, uint32_t tid, uint64_t start)
{
	uint32_t corr = next_corr++;
	if (ext_depth > 0 && enabled[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION]) {
		CUpti_ActivityExternalCorrelation x;
		memset(&x, 0, sizeof x);
		x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
		x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
		x.externalId = ext_stack[ext_depth - 1];
		x.correlationId = corr;
		append(&thread_side, &x, sizeof x);
	}
	if (enabled[CUPTI_ACTIVITY_KIND_RUNTIME]) {
		CUpti_ActivityAPI a;
		memset(&a, 0, sizeof a);
		a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
		a.cbid = cbid;
		a.start = start;
		a.end = now();
		a.processId = 1;
		a.threadId = tid;
		a.correlationId = corr;
		append(&thread_side, &a, sizeof a);
	}
	return corr;
}

static void launch_locked(const char *kernel, uint32_t tid);

void fake_cupti_launch(const char *kernel, uint32_t tid)
{
	runtime_cb(CUPTI_API_ENTER, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel");
	api_wait();
	launch_locked(kernel, tid);
	runtime_cb(CUPTI_API_EXIT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel");
}

static void launch_locked(const char *kernel, uint32_t tid)
{
	pthread_mutex_lock(&lock);
	uint64_t t0 = now();
	uint32_t corr = api_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, tid, t0);
	if (enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) {
		CUpti_ActivityKernel10 k;
		memset(&k, 0, sizeof k);
		k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k.start = now();
		k.end = now();
		k.deviceId = 0;
		k.contextId = 1;
		k.streamId = 7;
		k.gridX = 4, k.gridY = 1, k.gridZ = 1;
		k.blockX = 256, k.blockY = 1, k.blockZ = 1;
		k.correlationId = corr;
		k.name = kernel; /* CUPTI's strings outlive the buffer; so do the test's */
		append(&device_side, &k, sizeof k);
	}
	pthread_mutex_unlock(&lock);
}

static void memcpy_locked(uint64_t bytes, int async, uint32_t tid);

void fake_cupti_memcpy(uint64_t bytes, int async, uint32_t tid)
{
	const char *fn = async ? "cudaMemcpyAsync" : "cudaMemcpy";
	runtime_cb(CUPTI_API_ENTER, 0, fn);
	api_wait();
	memcpy_locked(bytes, async, tid);
	runtime_cb(CUPTI_API_EXIT, 0, fn);
}

static void memcpy_locked(uint64_t bytes, int async, uint32_t tid)
{
	pthread_mutex_lock(&lock);
	uint64_t t0 = now();
	uint32_t corr = api_call(async ? CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020
				       : CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, tid, t0);
	if (enabled[CUPTI_ACTIVITY_KIND_MEMCPY]) {
		CUpti_ActivityMemcpy6 m;
		memset(&m, 0, sizeof m);
		m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
		m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
		m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
		m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		m.flags = async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
		m.bytes = bytes;
		m.start = now();
		m.end = now();
		m.contextId = 1;
		m.streamId = 7;
		m.correlationId = corr;
		append(&device_side, &m, sizeof m);
	}
	pthread_mutex_unlock(&lock);
}

void fake_cupti_set_dropped(size_t n)
{
	pthread_mutex_lock(&lock);
	dropped_pending = n;
	pthread_mutex_unlock(&lock);
}

void fake_cupti_hang_flush(int on)
{
	pthread_mutex_lock(&lock);
	hang_flush = on;
	pthread_mutex_unlock(&lock);
}

void fake_cupti_hang_finalize(int on)
{
	pthread_mutex_lock(&lock);
	hang_finalize = on;
	pthread_mutex_unlock(&lock);
}

/* Lets every wedged call go on. */
void fake_cupti_release(void)
{
	pthread_mutex_lock(&lock);
	hang_flush = hang_finalize = 0;
	pthread_cond_broadcast(&unwedge);
	pthread_mutex_unlock(&lock);
}

int fake_cupti_flushes_done(void)
{
	pthread_mutex_lock(&lock);
	int n = flushes_done;
	pthread_mutex_unlock(&lock);
	return n;
}

int fake_cupti_finalized(void)
{
	return finalized;
}

int fake_cupti_enabled(int kind)
{
	return kind >= 0 && kind < 64 ? enabled[kind] : 0;
}

/* External correlation calls so far, and the ids pushed now. The stack is
 * process-wide here (CUPTI's is per thread): tests push from one thread at
 * a time. */
void fake_cupti_ext_counts(unsigned *pushes, unsigned *pops, unsigned *bad_pops, int *depth)
{
	*pushes = ext_pushes;
	*pops = ext_pops;
	*bad_pops = ext_bad_pops;
	*depth = ext_depth;
}
