/* The CUPTI activity collector. libcupti is dlopen'ed (never linked) so the
 * CPU build needs no CUDA; the driver is probed before CUPTI is touched,
 * because CUPTI without a driver only says CUPTI_ERROR_UNKNOWN. Sequence as in
 * NVIDIA's cupti_trace_injection sample and Kineto: timestamp callback first,
 * buffer callbacks, enable kinds; at the end a forced flush bounded in time
 * (HPCToolkit guards it with an alarm; here a helper thread and a timed wait),
 * disable, cuptiFinalize. */
#include "gpu_internal.h"
#include "phaseprof.h"
#include "pp_rows.h"

#include <cupti_activity.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef CUptiResult (*reg_ts_fn)(CUpti_TimestampCallbackFunc);
typedef CUptiResult (*reg_cb_fn)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*kind_fn)(CUpti_ActivityKind);
typedef CUptiResult (*flush_fn)(uint32_t);
typedef CUptiResult (*next_fn)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*dropped_fn)(CUcontext, uint32_t, size_t *);
typedef CUptiResult (*push_fn)(CUpti_ExternalCorrelationKind, uint64_t);
typedef CUptiResult (*pop_fn)(CUpti_ExternalCorrelationKind, uint64_t *);
typedef CUptiResult (*void_fn)(void);
typedef CUptiResult (*ts_fn)(uint64_t *);
typedef CUptiResult (*domain_fn)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);

static struct {
	reg_ts_fn register_timestamp;
	reg_cb_fn register_callbacks;
	kind_fn enable, disable;
	flush_fn flush_all;
	next_fn next_record;
	dropped_fn dropped;
	push_fn push;
	pop_fn pop;
	void_fn finalize;
	ts_fn get_timestamp;
	domain_fn enable_domain; /* optional: without it no cold-start phases */
} api;

static const CUpti_ActivityKind kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
	CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t decode_lock = PTHREAD_MUTEX_INITIALIZER; /* never held across CUPTI calls */
static ppgpu_probe_result status;
static int status_valid;
static atomic_int active;
static int stopped, enabled[N_KINDS];
static void *subscriber;
static ppgpu_decoder *decoder;
static ppgpu_clock_pair clock_pair;
static int own_clock;           /* 1: CUPTI stamps with pp_now() itself */
static size_t buffer_bytes;
static uint32_t flush_timeout_ms;
static atomic_uint_fast64_t next_ext_id = 1;
static atomic_uint_fast64_t buffers_out, buffers_alloc_failed;
/* Set when a CUPTI call at stop (the forced flush, or the teardown) did not
 * return in time: the collector has let go of CUPTI, and buffers CUPTI hands
 * back later are freed, never decoded (the recorder may be
 * closed by then), and the collector is not started again in this process. */
static atomic_int detached;

/* phases tied to GPU work (at the end of this file) */
static int hook_set;
static void phase_hook(int begin, int kind, const char *name, void *ud);
static void ext_close_all(void);

/* ---- the cold start ----
 * The first CUDA work of a process pays one-time costs: the context, the
 * lazy loading of the kernel's module, CUPTI instrumenting the code (a cold
 * first measurement ~100x the warm ones, ../shared/research/peers-and-users.md).
 * Left alone, that time sits inside whatever phase was open: step 1. From
 * the start until the first kernel launch (cudaLaunch*, cudaGraphLaunch*)
 * has returned, the runtime API domain's callbacks time each call on its
 * own thread; a call of COLD_MIN_NS or more (copies, sets and
 * synchronisations excepted: their time is bytes or waiting) becomes a device_init phase "GPU cold start: <call>"
 * there, nested in the phase it interrupted, so the first step's breakdown
 * names it. Then the domain is switched off again (at the next phase
 * boundary or the stop): no callback cost in the steady state. */
#define COLD_MIN_NS 1000000ull
static atomic_int cold_watch;       /* 1 until the first launch returned */
static atomic_int cold_off_pending; /* the domain is to be switched off */
static void *_Atomic cb_subscriber; /* the handle the domain was enabled on */
static atomic_uint_fast64_t cold_ns, cold_calls;
static __thread uint64_t cold_enter;

static int is_launch(const char *fn)
{
	return fn && (strncmp(fn, "cudaLaunch", 10) == 0 || strncmp(fn, "cudaGraphLaunch", 15) == 0);
}

/* Calls whose time is the work or the wait, not a one-time cost: copies,
 * sets (their bytes), synchronisations (the GPU work they wait for). */
static int not_cold(const char *fn)
{
	return fn && (strstr(fn, "Memcpy") || strstr(fn, "Memset") || strstr(fn, "Synchronize"));
}

static void api_callback(void *ud, int domain, uint32_t cbid, const void *data)
{
	(void)ud, (void)cbid;
	if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || !data ||
	    !atomic_load_explicit(&cold_watch, memory_order_relaxed))
		return;
	const CUpti_CallbackData *d = data;
	if (d->callbackSite == CUPTI_API_ENTER) {
		cold_enter = pp_now();
		return;
	}
	uint64_t end = pp_now(), start = cold_enter;
	cold_enter = 0;
	const char *fn = d->functionName;
	if (start && end - start >= COLD_MIN_NS && !not_cold(fn)) {
		char name[128];
		snprintf(name, sizeof name, "GPU cold start: %s", fn ? fn : "CUDA runtime call");
		pp_phase_at(PP_DEVICE_INIT, name, start, end);
		atomic_fetch_add(&cold_ns, end - start);
		atomic_fetch_add(&cold_calls, 1);
	}
	if (is_launch(fn) && atomic_exchange(&cold_watch, 0))
		atomic_store(&cold_off_pending, 1);
}

/* Switches the runtime domain's callbacks off once the watch is over (never
 * from inside a callback). At stop (!call_cupti) the watch only ends: the
 * teardown's unsubscribe switches every callback off, under the hang guard. */
static void cold_watch_off(int call_cupti)
{
	if (call_cupti && !atomic_load_explicit(&cold_off_pending, memory_order_relaxed))
		return;
	atomic_store(&cold_off_pending, 0);
	atomic_store(&cold_watch, 0);
	void *h = atomic_exchange(&cb_subscriber, NULL);
	if (h && call_cupti)
		api.enable_domain(0, (CUpti_SubscriberHandle)h, CUPTI_CB_DOMAIN_RUNTIME_API);
}

static uint64_t CUPTIAPI timestamp_cb(void)
{
	return pp_now();
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	/* CUPTI requires 8-byte alignment; 4 MiB is Kineto's choice */
	void *p = NULL;
	if (posix_memalign(&p, 8, buffer_bytes) != 0)
		p = NULL;
	if (!p)
		atomic_fetch_add(&buffers_alloc_failed, 1);
	else
		atomic_fetch_add(&buffers_out, 1);
	*buf = p;
	*size = p ? buffer_bytes : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				      size_t valid)
{
	(void)size;
	pthread_mutex_lock(&decode_lock);
	if (!atomic_load(&detached) && decoder && buf && valid) {
		CUpti_Activity *rec = NULL;
		for (;;) {
			CUptiResult rc = api.next_record(buf, valid, &rec);
			if (rc != CUPTI_SUCCESS)
				break; /* CUPTI_ERROR_MAX_LIMIT_REACHED ends the buffer */
			size_t left = valid - (size_t)((uint8_t *)rec - buf);
			ppgpu_decode_record(decoder, rec, left);
		}
		size_t dropped = 0;
		if (api.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
			ppgpu_decoder_add_dropped(decoder, dropped);
	}
	pthread_mutex_unlock(&decode_lock);
	if (buf)
		atomic_fetch_sub(&buffers_out, 1);
	free(buf);
}

#define LOAD(field, sym) (api.field = (__typeof__(api.field))dlsym(lib, sym))

static int load_api(void *lib)
{
	LOAD(register_timestamp, "cuptiActivityRegisterTimestampCallback");
	LOAD(register_callbacks, "cuptiActivityRegisterCallbacks");
	LOAD(enable, "cuptiActivityEnable");
	LOAD(disable, "cuptiActivityDisable");
	LOAD(flush_all, "cuptiActivityFlushAll");
	LOAD(next_record, "cuptiActivityGetNextRecord");
	LOAD(dropped, "cuptiActivityGetNumDroppedRecords");
	LOAD(push, "cuptiActivityPushExternalCorrelationId");
	LOAD(pop, "cuptiActivityPopExternalCorrelationId");
	LOAD(finalize, "cuptiFinalize");
	LOAD(get_timestamp, "cuptiGetTimestamp");
	LOAD(enable_domain, "cuptiEnableDomain");
	return api.register_callbacks && api.enable && api.disable && api.flush_all &&
	       api.next_record && api.dropped && api.push && api.pop && api.finalize &&
	       api.get_timestamp;
}

static uint64_t gpu_clock(void *ud)
{
	(void)ud;
	uint64_t t = 0;
	api.get_timestamp(&t);
	return t;
}

static uint64_t cpu_clock(void *ud)
{
	(void)ud;
	return pp_now();
}

static const char *kind_label(CUpti_ActivityKind k)
{
	switch (k) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CONCURRENT_KERNEL";
	case CUPTI_ACTIVITY_KIND_MEMCPY: return "MEMCPY";
	case CUPTI_ACTIVITY_KIND_MEMCPY2: return "MEMCPY2";
	case CUPTI_ACTIVITY_KIND_MEMSET: return "MEMSET";
	case CUPTI_ACTIVITY_KIND_RUNTIME: return "RUNTIME";
	case CUPTI_ACTIVITY_KIND_DRIVER: return "DRIVER";
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return "SYNCHRONIZATION";
	case CUPTI_ACTIVITY_KIND_OVERHEAD: return "OVERHEAD";
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return "EXTERNAL_CORRELATION";
	default: return "?";
	}
}

/* Activity kinds off, callbacks unsubscribed, CUPTI finalised. */
static void cupti_detach(void)
{
	for (size_t i = 0; i < N_KINDS; i++)
		if (enabled[i]) {
			api.disable(kinds[i]);
			enabled[i] = 0;
		}
	ppgpu__cupti_unsubscribe(subscriber);
	subscriber = NULL;
	/* 13.0 crashes at unload without it (papi PR #594) */
	api.finalize();
}

int ppgpu_start(const ppgpu_options *opts)
{
	ppgpu_options o = {0};
	if (opts)
		o = *opts;
	pthread_mutex_lock(&state_lock);
	if (atomic_load(&active)) {
		pthread_mutex_unlock(&state_lock);
		return 0;
	}
	if (atomic_load(&detached)) {
		/* a helper may still be inside CUPTI, touching the collector's state */
		status.state = PPGPU_CUPTI_ERROR;
		snprintf(status.reason, sizeof status.reason,
			 "a CUPTI call from the last stop never returned (detached): GPU tracing stays off in this process");
		pthread_mutex_unlock(&state_lock);
		return -1;
	}
	buffer_bytes = o.buffer_bytes ? (o.buffer_bytes + 7) & ~(size_t)7 : (size_t)4 << 20;
	flush_timeout_ms = o.flush_timeout_ms ? o.flush_timeout_ms : 2000;
	stopped = 0;
	status_valid = 1;

	if (o.skip_driver_probe) {
		/* Inside cuInit (CUDA_INJECTION64_PATH): the driver is present and
		 * calling cuInit again from here would recurse. */
		memset(&status, 0, sizeof status);
		status.state = PPGPU_OK;
		status.cu_result = 0;
		status.cupti_result = -1;
		snprintf(status.reason, sizeof status.reason, "loaded by the CUDA driver (CUDA_INJECTION64_PATH)");
	} else if (ppgpu_probe_driver(NULL, &status) != PPGPU_OK) {
		pthread_mutex_unlock(&state_lock);
		return -1;
	}
	/* Loads libcupti and checks for another subscriber; keeps ours. */
	if (ppgpu_probe_cupti(o.libcupti, &status) != PPGPU_OK) {
		pthread_mutex_unlock(&state_lock);
		return -1;
	}
	void *lib = ppgpu__cupti_lib();
	if (!load_api(lib)) {
		status.state = PPGPU_CUPTI_ERROR;
		snprintf(status.reason, sizeof status.reason,
			 "%s lacks the CUPTI activity API this phaseprof needs (CUDA 13)", status.cupti_path);
		pthread_mutex_unlock(&state_lock);
		return -1;
	}
	int rc = ppgpu__cupti_subscribe(&subscriber, status.holder, sizeof status.holder);
	if (rc != CUPTI_SUCCESS) {
		ppgpu__cupti_failure(&status, "cuptiSubscribe_v2", rc);
		pthread_mutex_unlock(&state_lock);
		return -1;
	}
	/* Must precede any enable (cupti_activity.h). */
	own_clock = api.register_timestamp && api.register_timestamp(timestamp_cb) == CUPTI_SUCCESS;
	if (!own_clock)
		ppgpu_clock_calibrate(gpu_clock, NULL, cpu_clock, NULL, 16, &clock_pair);
	else
		memset(&clock_pair, 0, sizeof clock_pair);

	pthread_mutex_lock(&decode_lock);
	ppgpu_decoder_free(decoder);
	decoder = ppgpu_decoder_new(own_clock ? NULL : &clock_pair, ppgpu_row_to_recorder, NULL);
	pthread_mutex_unlock(&decode_lock);

	rc = api.register_callbacks(buffer_requested, buffer_completed);
	if (rc != CUPTI_SUCCESS) {
		ppgpu__cupti_failure(&status, "cuptiActivityRegisterCallbacks", rc);
		goto fail;
	}
	for (size_t i = 0; i < N_KINDS; i++) {
		rc = api.enable(kinds[i]);
		if (rc != CUPTI_SUCCESS) {
			char what[64];
			snprintf(what, sizeof what, "cuptiActivityEnable(%s)", kind_label(kinds[i]));
			ppgpu__cupti_failure(&status, what, rc);
			goto fail;
		}
		enabled[i] = 1;
	}
	atomic_store(&cold_ns, 0);
	atomic_store(&cold_calls, 0);
	atomic_store(&cold_off_pending, 0);
	if (api.enable_domain) {
		ppgpu__cupti_set_callback(api_callback);
		atomic_store(&cold_watch, 1);
		if (api.enable_domain(1, (CUpti_SubscriberHandle)subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) ==
		    CUPTI_SUCCESS)
			atomic_store(&cb_subscriber, subscriber);
		else
			atomic_store(&cold_watch, 0); /* no cold-start phases; tracing goes on */
	}
	size_t len = strlen(status.reason);
	snprintf(status.reason + len, sizeof status.reason - len, "; tracing %zu activity kinds%s", N_KINDS,
		 own_clock ? "" : " (CUPTI clock, offset-corrected)");
	atomic_store(&active, 1);
	/* One hook per process: the collector is its only user (phaseprof.h). */
	pp_set_phase_hook(phase_hook, NULL);
	hook_set = 1;
	pthread_mutex_unlock(&state_lock);
	return 0;
fail:
	cupti_detach();
	pthread_mutex_unlock(&state_lock);
	return -1;
}

int ppgpu_active(void)
{
	return atomic_load(&active);
}

const ppgpu_probe_result *ppgpu_status(void)
{
	return status_valid ? &status : NULL;
}

void ppgpu_collector_stats(ppgpu_decoder_stats *out)
{
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&decode_lock);
	if (decoder)
		ppgpu_decoder_stats_get(decoder, out);
	pthread_mutex_unlock(&decode_lock);
}

/* The hang guard. The forced flush and the teardown (disable, unsubscribe,
 * cuptiFinalize) each run on a helper thread so that a wedged driver or a
 * stuck CUPTI cannot hang the program's exit; the caller waits at most
 * flush_timeout_ms for each, then detaches (see `detached`). The helper's
 * state is shared by reference count: a helper that returns after the
 * caller gave up frees it. */
typedef struct bounded_call {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done, refs;
	void (*fn)(void);
} bounded_call;

static void bounded_unref(bounded_call *b)
{
	pthread_mutex_lock(&b->lock);
	int last = --b->refs == 0;
	pthread_mutex_unlock(&b->lock);
	if (last) {
		pthread_mutex_destroy(&b->lock);
		pthread_cond_destroy(&b->cond);
		free(b);
	}
}

static void *bounded_thread(void *arg)
{
	bounded_call *b = arg;
	b->fn();
	pthread_mutex_lock(&b->lock);
	b->done = 1;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	bounded_unref(b);
	return NULL;
}

/* Runs fn, waiting at most ms; 0 if it returned, -1 if it is still running. */
static int bounded(void (*fn)(void), uint32_t ms)
{
	bounded_call *b = calloc(1, sizeof *b);
	if (!b) {
		fn(); /* no memory for the guard: call inline */
		return 0;
	}
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->fn = fn;
	b->refs = 2;
	pthread_t th;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, bounded_thread, b) != 0) {
		pthread_attr_destroy(&attr);
		b->refs = 1;
		bounded_unref(b);
		fn(); /* no thread: call inline */
		return 0;
	}
	pthread_attr_destroy(&attr);
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	int timed_out = 0;
	pthread_mutex_lock(&b->lock);
	while (!b->done && !timed_out)
		timed_out = pthread_cond_timedwait(&b->cond, &b->lock, &dl) == ETIMEDOUT;
	int done = b->done;
	pthread_mutex_unlock(&b->lock);
	bounded_unref(b);
	return done ? 0 : -1;
}

static void flush_forced(void)
{
	api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void ppgpu_stop(void)
{
	pthread_mutex_lock(&state_lock);
	if (stopped || !status_valid) {
		pthread_mutex_unlock(&state_lock);
		return;
	}
	stopped = 1;
	if (hook_set) {
		pp_set_phase_hook(NULL, NULL);
		hook_set = 0;
	}
	if (atomic_load(&active)) {
		ext_close_all(); /* before the final flush, so its external ids are delivered */
		cold_watch_off(0);
	}
	int was_active = atomic_exchange(&active, 0);
	int flush_hung = 0, teardown_hung = 0;
	if (was_active) {
		flush_hung = bounded(flush_forced, flush_timeout_ms) != 0;
		/* after a hung flush CUPTI's locks are likely held: no teardown */
		if (!flush_hung)
			teardown_hung = bounded(cupti_detach, flush_timeout_ms) != 0;
		if (flush_hung || teardown_hung) {
			pthread_mutex_lock(&decode_lock);
			atomic_store(&detached, 1);
			pthread_mutex_unlock(&decode_lock);
		}
	}
	ppgpu_decoder_stats st;
	ppgpu_collector_stats(&st);
	uint64_t lost_buffers = atomic_load(&buffers_alloc_failed);
	if (st.dropped)
		pp_row_losses("cupti", (int64_t)st.dropped,
			      "activity records CUPTI dropped (buffers full or not returned in time)");
	if (lost_buffers)
		pp_row_losses("cupti_buffers", (int64_t)lost_buffers,
			      "activity buffers phaseprof could not allocate");
	if (flush_hung) {
		uint64_t out = atomic_load(&buffers_out);
		pp_row_losses("cupti_flush", (int64_t)out,
			      "forced CUPTI flush did not finish in time; buffers still held by CUPTI were not decoded");
		size_t len = strlen(status.reason);
		snprintf(status.reason + len, sizeof status.reason - len,
			 "; the final CUPTI flush did not finish within %u ms; detached from CUPTI "
			 "(later buffers dropped)", flush_timeout_ms);
	}
	if (teardown_hung) {
		pp_row_losses("cupti_teardown", (int64_t)1,
			      "CUPTI teardown (disable, unsubscribe, cuptiFinalize) did not finish in time; detached");
		size_t len = strlen(status.reason);
		snprintf(status.reason + len, sizeof status.reason - len,
			 "; CUPTI teardown (disable, unsubscribe, cuptiFinalize) did not finish within %u ms; "
			 "detached from CUPTI", flush_timeout_ms);
	}
	if (flush_hung || teardown_hung)
		pp_meta("gpu.detached", flush_hung ? "flush" : "teardown");
	if (was_active || own_clock) {
		char pair[96];
		if (own_clock)
			snprintf(pair, sizeof pair, "recorder clock (timestamp callback)");
		else
			snprintf(pair, sizeof pair, "gpu=%llu cpu=%llu bracket=%llu",
				 (unsigned long long)clock_pair.gpu_ns, (unsigned long long)clock_pair.cpu_ns,
				 (unsigned long long)clock_pair.bracket_ns);
		pp_meta("gpu.clock", pair);
	}
	if (atomic_load(&cold_calls)) {
		char cold[96];
		snprintf(cold, sizeof cold, "%llu ns in %llu call%s", (unsigned long long)atomic_load(&cold_ns),
			 (unsigned long long)atomic_load(&cold_calls), atomic_load(&cold_calls) == 1 ? "" : "s");
		pp_meta("gpu.cold_start", cold);
	}
	ppgpu_record_status(&status, st.dropped, own_clock ? 0 : clock_pair.offset_ns);
	/* a helper still inside CUPTI finds the decoder gone or `detached` set,
	 * both under decode_lock */
	pthread_mutex_lock(&decode_lock);
	ppgpu_decoder_free(decoder);
	decoder = NULL;
	pthread_mutex_unlock(&decode_lock);
	pthread_mutex_unlock(&state_lock);
}

/* ---- phases tied to GPU work ----
 * One per-thread stack mirrors CUPTI's per-thread external correlation
 * stack. Frames come from the recorder's phase hook (every phase opened
 * while the collector runs) or from explicit ppgpu_phase_push calls (ranges
 * that are not recorder phases). Each pop writes a gpu_activity row of kind
 * "phase" naming the id, so kernels and copies join to phases by
 * external_id. A stack belongs to one collector generation: frames left on
 * a thread when the collector stopped are forgotten at the next start. */

typedef struct ext_frame {
	uint64_t id, start;
	int from_hook;
	char name[64];
} ext_frame;
#define EXT_DEPTH 32 /* deeper phases are not pushed (their work joins the phase above) */
static __thread ext_frame ext_stack[EXT_DEPTH];
static __thread int ext_depth;
static __thread int ext_skipped;    /* hook phases opened beyond EXT_DEPTH, still open */
static __thread uint64_t ext_gen;   /* generation the stack belongs to */
static atomic_uint_fast64_t generation = 1;

static void ext_sync_gen(void)
{
	uint64_t g = atomic_load(&generation);
	if (ext_gen != g) {
		ext_gen = g;
		ext_depth = 0;
		ext_skipped = 0;
	}
}

static uint64_t ext_push(const char *name, int from_hook)
{
	ext_sync_gen();
	if (ext_depth >= EXT_DEPTH)
		return 0;
	uint64_t id = atomic_fetch_add(&next_ext_id, 1);
	if (api.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id) != CUPTI_SUCCESS)
		return 0;
	ext_frame *f = &ext_stack[ext_depth++];
	f->id = id;
	f->start = pp_now();
	f->from_hook = from_hook;
	snprintf(f->name, sizeof f->name, "%s", name ? name : "");
	return id;
}

/* Pops the top frame from CUPTI and writes its phase row (end = now). */
static void ext_pop_top(void)
{
	const ext_frame *f = &ext_stack[--ext_depth];
	uint64_t last = 0;
	api.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
	ppgpu_row r;
	ppgpu_row_init(&r, "phase");
	r.start_ns = (int64_t)f->start;
	r.end_ns = (int64_t)pp_now();
	r.name = f->name;
	r.external_id = (int64_t)f->id;
	r.tid = (int64_t)syscall(SYS_gettid);
	ppgpu_row_to_recorder(&r, NULL);
}

uint64_t ppgpu_phase_push(const char *name)
{
	if (!atomic_load(&active))
		return 0;
	return ext_push(name, 0);
}

void ppgpu_phase_pop(void)
{
	ext_sync_gen();
	if (ext_depth > 0 && !ext_stack[ext_depth - 1].from_hook)
		ext_pop_top();
}

/* The recorder's phase observer. Phases nest per thread, so an end with no
 * hook frame on top belongs to a phase opened before the collector started
 * (flow_cuda_open's own device_init phase, an enclosing step): nothing to
 * pop. Ends of phases opened beyond EXT_DEPTH are matched by the count. */
static void phase_hook(int begin, int kind, const char *name, void *ud)
{
	(void)kind, (void)ud;
	if (!atomic_load(&active))
		return;
	cold_watch_off(1);
	ext_sync_gen();
	if (begin) {
		/* a refused push is skipped too, so its end pops nothing */
		if (ext_depth >= EXT_DEPTH || ext_skipped || !ext_push(name, 1))
			ext_skipped++;
		return;
	}
	if (ext_skipped)
		ext_skipped--;
	else if (ext_depth > 0 && ext_stack[ext_depth - 1].from_hook)
		ext_pop_top();
}

/* At stop: the calling thread's frames still open are closed now (their
 * phases end after the collector); other threads' frames cannot be popped
 * from here (CUPTI's stack is per thread) and are dropped with the
 * generation. */
static void ext_close_all(void)
{
	ext_sync_gen();
	while (ext_depth > 0)
		ext_pop_top();
	ext_skipped = 0;
	atomic_fetch_add(&generation, 1);
}

/* ---- CUDA_INJECTION64_PATH entry point ---- */

static void stop_at_exit(void)
{
	ppgpu_stop();
}

__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
	static atomic_int once;
	if (atomic_exchange(&once, 1))
		return 1;
	ppgpu_options o = {0};
	o.skip_driver_probe = 1;
	ppgpu_start(&o); /* a failure leaves the reason for the status row */
	atexit(stop_at_exit);
	return 1;
}
