/* The CUPTI collector end to end without a GPU: a fake libcuda says the
 * driver works, a fake libcupti (tests/gpu/fake_cupti.c) produces real 13.0
 * records when the test "launches" work. The recording is ingested and the
 * store checked: kernels joined to phases and threads, copies, API names,
 * status row, dropped-record losses, clock alignment, refusals, and the
 * time bound on the final flush. One scenario per process (argv[1]): the
 * collector is process-wide state, as CUPTI is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "phaseprof.h"
#include "ppgpu.h"
#include "pp_testutil.h"

static void (*fake_launch)(const char *, uint32_t);
static void (*fake_memcpy)(uint64_t, int, uint32_t);
static void (*fake_set_dropped)(size_t);
static void (*fake_hang_flush)(int);
static int (*fake_finalized)(void);
static void (*fake_hang_finalize)(int);
static void (*fake_release)(void);
static int (*fake_flushes_done)(void);
static void (*fake_set_api_delay)(unsigned);
static unsigned (*fake_callbacks)(void);
static void (*fake_api)(const char *);
static void (*fake_ext_counts)(unsigned *, unsigned *, unsigned *, int *);

static void load_fake(void)
{
	void *h = dlopen(FAKE_LIBCUPTI, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "cannot load %s: %s\n", FAKE_LIBCUPTI, dlerror());
		exit(2);
	}
	fake_launch = (void (*)(const char *, uint32_t))dlsym(h, "fake_cupti_launch");
	fake_memcpy = (void (*)(uint64_t, int, uint32_t))dlsym(h, "fake_cupti_memcpy");
	fake_set_dropped = (void (*)(size_t))dlsym(h, "fake_cupti_set_dropped");
	fake_hang_flush = (void (*)(int))dlsym(h, "fake_cupti_hang_flush");
	fake_finalized = (int (*)(void))dlsym(h, "fake_cupti_finalized");
	fake_hang_finalize = (void (*)(int))dlsym(h, "fake_cupti_hang_finalize");
	fake_release = (void (*)(void))dlsym(h, "fake_cupti_release");
	fake_flushes_done = (int (*)(void))dlsym(h, "fake_cupti_flushes_done");
	fake_set_api_delay = (void (*)(unsigned))dlsym(h, "fake_cupti_set_api_delay");
	fake_callbacks = (unsigned (*)(void))dlsym(h, "fake_cupti_callbacks");
	fake_api = (void (*)(const char *))dlsym(h, "fake_cupti_api");
	fake_ext_counts = (void (*)(unsigned *, unsigned *, unsigned *, int *))dlsym(h, "fake_cupti_ext_counts");
}

static char spool[512], db[512];

static pp_store *record_done(void)
{
	pp_close();
	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	assert_int_equal(res.rows_lost, 0);
	return st;
}

static void open_recording(const char *name)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(spool, sizeof spool, "%s/ppgpu-%s-%d.spool", dir, name, (int)getpid());
	snprintf(db, sizeof db, "%s/ppgpu-%s-%d.db", dir, name, (int)getpid());
	pp_options o = {.spool_path = spool, .scenario = "gpu", .variant = name};
	if (pp_open(&o) != 0)
		fail_msg("pp_open: %s", pp_last_error());
}

static void cleanup(pp_store *st)
{
	char err[256];
	pp_store_close(st, err, sizeof err);
	unlink(spool);
	if (!getenv("KEEP_DB")) unlink(db);
}

/* Kernels and copies inside a phase carry its external id; API records
 * name their functions; the status row says available; drops are losses. */
static void trace(int own_clock)
{
	if (!own_clock)
		setenv("FAKE_CUPTI_TSCB", "999", 1); /* CUPTI refuses our clock: offset pair path */
	open_recording(own_clock ? "trace" : "offset");
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	ppgpu_options o = {.buffer_bytes = 64 << 10};
	if (ppgpu_start(&o) != 0)
		fail_msg("ppgpu_start: %s", ppgpu_status() ? ppgpu_status()->reason : "?");
	assert_true(ppgpu_active());
	uint64_t t_before = pp_now();

	pp_step_begin(0);
	uint64_t ext = ppgpu_phase_push("step 0");
	assert_true(ext > 0);
	fake_launch("matmul_kernel", tid);
	fake_memcpy(1 << 20, 0, tid);
	ppgpu_phase_pop();
	pp_step_end();
	fake_launch("outside_kernel", tid);
	uint64_t t_after = pp_now();
	fake_set_dropped(5);
	ppgpu_stop();
	assert_int_equal(fake_finalized(), 1);
	ppgpu_stop(); /* twice is harmless */

	pp_store *st = record_done();
	char sql[512], s[256];
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity WHERE kind='kernel'"), 2);
	snprintf(sql, sizeof sql,
		 "SELECT external_id FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		 "WHERE kind='kernel' AND n.value='matmul_kernel'");
	assert_int_equal(ppt_q_int(st, sql), (int64_t)ext);
	assert_int_equal(ppt_q_int(st, "SELECT external_id FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE n.value='outside_kernel'"), -2);
	snprintf(sql, sizeof sql, "SELECT tid FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
				  "WHERE n.value='matmul_kernel'");
	assert_int_equal(ppt_q_int(st, sql), tid);
	assert_int_equal(ppt_q_int(st, "SELECT grid_x*1000+block_x FROM gpu_activity WHERE kind='kernel' LIMIT 1"), 4256);
	assert_int_equal(ppt_q_int(st, "SELECT typeof(start_ns)='integer' AND typeof(grid_x)='integer' "
		     "FROM gpu_activity WHERE kind='kernel' LIMIT 1"), 1);
	/* the phase row names the phase the kernels joined to */
	snprintf(sql, sizeof sql, "SELECT n.value FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
				  "WHERE kind='phase' AND external_id=%llu", (unsigned long long)ext);
	assert_string_equal(ppt_q_text(st, sql, s, sizeof s), "step 0");
	/* copy details */
	assert_string_equal(ppt_q_text(st, "SELECT copy_kind||'/'||src_kind||'/'||dst_kind FROM gpu_activity WHERE kind='memcpy'",
			 s, sizeof s), "HtoD/pageable/device");
	assert_int_equal(ppt_q_int(st, "SELECT bytes FROM gpu_activity WHERE kind='memcpy'"), 1 << 20);
	assert_string_equal(ppt_q_text(st, "SELECT n.value FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
			     "WHERE kind='memcpy'", s, sizeof s), "sync");
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE kind='runtime' AND n.value='cudaLaunchKernel'"), 2);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity WHERE kind='external'"), 2);
	/* every timestamp on the recorder's clock, inside the traced interval */
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM gpu_activity WHERE kind IN ('kernel','memcpy','runtime') "
		 "AND (start_ns < %llu OR end_ns > %llu OR end_ns < start_ns)",
		 (unsigned long long)t_before, (unsigned long long)t_after);
	assert_int_equal(ppt_q_int(st, sql), 0);
	assert_int_equal(ppt_q_int(st, "SELECT available FROM gpu_status"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT records_dropped FROM gpu_status"), 5);
	assert_int_equal(ppt_q_int(st, "SELECT count FROM losses WHERE source='cupti'"), 5);
	if (own_clock)
		assert_int_equal(ppt_q_int(st, "SELECT clock_offset_ns FROM gpu_status"), 0);
	else /* the realtime offset */
		assert_true(ppt_q_int(st, "SELECT clock_offset_ns FROM gpu_status") > 1000000000);
	assert_string_equal(ppt_q_text(st, "SELECT value FROM run_meta WHERE key='gpu.state'", s, sizeof s), "ok");
	ppt_q_text(st, "SELECT value FROM run_meta WHERE key='gpu.clock'", s, sizeof s);
	if (!strstr(s, own_clock ? "timestamp callback" : "bracket="))
		fail_msg("gpu.clock '%s'", s);
	cleanup(st);
}

/* Refusals: the status row carries the reason; CPU recording continues. */
static void refused(const char *what)
{
	open_recording(what);
	const char *want;
	if (strcmp(what, "busy") == 0) {
		setenv("FAKE_CUPTI_SUBSCRIBE", "39", 1);
		setenv("FAKE_CUPTI_HOLDER", "Nsight Systems 2025.1", 1);
		want = "Nsight Systems 2025.1";
	} else if (strcmp(what, "enable") == 0) {
		setenv("FAKE_CUPTI_ENABLE", "999", 1);
		want = "cuptiActivityEnable(CONCURRENT_KERNEL): CUPTI_ERROR_UNKNOWN";
	} else if (strcmp(what, "nodevice") == 0) {
		setenv("FAKE_CUINIT", "100", 1);
		want = "no GPU is visible";
	} else {
		setenv("PHASEPROF_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
		want = "no NVIDIA driver";
	}
	pp_phase_begin(PP_STEP, "cpu work");
	assert_int_equal(ppgpu_start(NULL), -1);
	assert_false(ppgpu_active());
	assert_int_equal(ppgpu_phase_push("x"), 0);
	ppgpu_phase_pop();
	pp_phase_end();
	ppgpu_stop();
	pp_store *st = record_done();
	char s[512];
	ppt_q_text(st, "SELECT reason FROM gpu_status", s, sizeof s);
	if (!strstr(s, want))
		fail_msg("reason '%s' lacks '%s'", s, want);
	assert_int_equal(ppt_q_int(st, "SELECT available FROM gpu_status"), 0);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE name='cpu work'"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity"), 0);
	cleanup(st);
}

/* The hang guard, part 1: a forced flush that does not return must not
 * hang the program's exit. stop waits flush_timeout_ms, then detaches:
 * when the wedged flush finally returns, what it hands back is dropped,
 * never decoded into the recording; the collector does not start again. */
static void test_hang(void **state)
{
	(void)state;
	open_recording("hang");
	ppgpu_options o = {.flush_timeout_ms = 200};
	assert_int_equal(ppgpu_start(&o), 0);
	fake_launch("k", 1);
	fake_hang_flush(1);
	uint64_t t0 = pp_now();
	ppgpu_stop();
	uint64_t waited = pp_now() - t0;
	if (waited > 2000000000ull)
		fail_msg("stop waited %llu ms for a 200 ms bound", (unsigned long long)(waited / 1000000));
	assert_int_equal(fake_finalized(), 0);
	/* the wedged flush returns late and delivers the kernel */
	fake_release();
	for (int i = 0; i < 500 && fake_flushes_done() < 1; i++)
		usleep(10000);
	assert_int_equal(fake_flushes_done(), 1);
	assert_int_equal(ppgpu_start(&o), -1);
	if (!strstr(ppgpu_status()->reason, "detached"))
		fail_msg("restart: '%s'", ppgpu_status()->reason);
	pp_store *st = record_done();
	char s[512];
	ppt_q_text(st, "SELECT reason FROM gpu_status", s, sizeof s);
	if (!strstr(s, "did not finish within 200 ms") || !strstr(s, "detached from CUPTI"))
		fail_msg("reason '%s'", s);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM losses WHERE source='cupti_flush'"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity WHERE kind='kernel'"), 0);
	assert_string_equal(ppt_q_text(st, "SELECT value FROM run_meta WHERE key='gpu.detached'", s, sizeof s),
			    "flush");
	cleanup(st);
}

/* The hang guard, part 2: the flush returns but the teardown (disable,
 * unsubscribe, cuptiFinalize) does not: what the flush delivered is kept,
 * stop returns after the bound, the reason and a loss say so. */
static void test_teardown(void **state)
{
	(void)state;
	open_recording("teardown");
	ppgpu_options o = {.flush_timeout_ms = 200};
	assert_int_equal(ppgpu_start(&o), 0);
	fake_launch("before_teardown", 1);
	fake_hang_finalize(1);
	uint64_t t0 = pp_now();
	ppgpu_stop();
	uint64_t waited = pp_now() - t0;
	if (waited > 2000000000ull)
		fail_msg("stop waited %llu ms for a 200 ms bound", (unsigned long long)(waited / 1000000));
	assert_int_equal(fake_finalized(), 0);
	assert_false(ppgpu_active());
	pp_store *st = record_done();
	fake_release(); /* lets the helper finish; nothing it does reaches the recording */
	char s[512];
	ppt_q_text(st, "SELECT reason FROM gpu_status", s, sizeof s);
	if (!strstr(s, "CUPTI teardown (disable, unsubscribe, cuptiFinalize) did not finish within 200 ms"))
		fail_msg("reason '%s'", s);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE kind='kernel' AND n.value='before_teardown'"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count FROM losses WHERE source='cupti_teardown'"), 1);
	assert_string_equal(ppt_q_text(st, "SELECT value FROM run_meta WHERE key='gpu.detached'", s, sizeof s),
			    "teardown");
	cleanup(st);
}

/* The cold start as its own phase: until the first kernel launch has
 * returned, slow runtime calls (context creation in cudaMalloc, the first
 * launch's module load and CUPTI set-up) become device_init phases "GPU
 * cold start: <call>" nested in the step they happened in; a slow copy or
 * synchronisation is not one (bytes, waiting); after the first launch the callbacks are
 * switched off at the next phase boundary, and a slow call in step 1 is
 * just step 1. */
static void test_coldstart(void **state)
{
	(void)state;
	open_recording("coldstart");
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	ppgpu_options o = {.buffer_bytes = 64 << 10};
	if (ppgpu_start(&o) != 0)
		fail_msg("ppgpu_start: %s", ppgpu_status() ? ppgpu_status()->reason : "?");
	pp_step_begin(0);
	fake_set_api_delay(3000);
	fake_api("cudaMalloc");
	fake_memcpy(1 << 20, 0, tid);
	fake_api("cudaDeviceSynchronize");
	fake_launch("first_kernel", tid);
	fake_set_api_delay(0);
	fake_launch("warm_kernel", tid);
	pp_step_end();
	unsigned callbacks = fake_callbacks();
	assert_true(callbacks >= 10); /* ENTER and EXIT of the 5 calls */
	pp_step_begin(1);
	fake_set_api_delay(3000);
	fake_api("cudaMalloc");
	fake_launch("later_kernel", tid);
	fake_set_api_delay(0);
	pp_step_end();
	assert_int_equal(fake_callbacks(), callbacks); /* the domain is off */
	ppgpu_stop();
	pp_store *st = record_done();
	char s[256];
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE name LIKE 'GPU cold start:%'"), 2);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE kind_name='device_init' AND step=0 "
		     "AND end_ns - start_ns >= 3000000 AND name IN "
		     "('GPU cold start: cudaMalloc', 'GPU cold start: cudaLaunchKernel')"), 2);
	/* nested in step 0, inside its time */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v c JOIN spans_v p ON p.id = c.parent_id "
		     "WHERE c.name LIKE 'GPU cold start:%' AND p.kind_name = 'step' AND p.step = 0 "
		     "AND c.start_ns >= p.start_ns - 1000000 AND c.end_ns <= p.end_ns + 1000000"), 2);
	/* the copy and step 1's slow call are not cold starts */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE kind_name='device_init' AND step=1"), 0);
	ppt_q_text(st, "SELECT value FROM run_meta WHERE key='gpu.cold_start'", s, sizeof s);
	if (!strstr(s, " in 2 calls"))
		fail_msg("gpu.cold_start '%s'", s);
	/* the kernels are all there */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity WHERE kind='kernel'"), 3);
	cleanup(st);
}

/* CUDA_INJECTION64_PATH: the driver calls InitializeInjection from inside
 * cuInit; no driver probe then (it would recurse into cuInit), CUPTI still
 * checked; ppgpu_finish at exit stops it and writes the status row. */
int InitializeInjection(void);
static void test_inject(void **state)
{
	(void)state;
	setenv("PHASEPROF_LIBCUDA", "/nonexistent/libcuda.so.1", 1); /* must not be consulted */
	open_recording("inject");
	assert_int_equal(InitializeInjection(), 1);
	assert_int_equal(InitializeInjection(), 1);
	if (!ppgpu_active())
		fail_msg("collector inactive: %s", ppgpu_status() ? ppgpu_status()->reason : "?");
	fake_launch("injected_kernel", 7);
	ppgpu_finish();
	pp_store *st = record_done();
	char s[512];
	ppt_q_text(st, "SELECT reason FROM gpu_status", s, sizeof s);
	if (!strstr(s, "CUDA_INJECTION64_PATH"))
		fail_msg("reason '%s'", s);
	assert_int_equal(ppt_q_int(st, "SELECT available FROM gpu_status"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE kind='kernel' AND n.value='injected_kernel'"), 1);
	cleanup(st);
}

/* A wrapped program that never initialised CUDA: the status row says so. */
static void test_unused(void **state)
{
	(void)state;
	open_recording("unused");
	pp_phase_begin(PP_STEP, "cpu only");
	pp_phase_end();
	ppgpu_finish();
	pp_store *st = record_done();
	char s[512];
	ppt_q_text(st, "SELECT reason FROM gpu_status", s, sizeof s);
	if (!strstr(s, "did not initialise CUDA"))
		fail_msg("reason '%s'", s);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_status WHERE available=0"), 1);
	assert_string_equal(ppt_q_text(st, "SELECT value FROM run_meta WHERE key='gpu.state'", s, sizeof s), "unused");
	cleanup(st);
}

/* ---- ordinary recorder phases tied to GPU work (the phase hook) ---- */

typedef struct ext_counts {
	unsigned pushes, pops, bad_pops;
	int depth;
} ext_counts;

static ext_counts counts(void)
{
	ext_counts c;
	fake_ext_counts(&c.pushes, &c.pops, &c.bad_pops, &c.depth);
	return c;
}

static void *hook_worker(void *arg)
{
	uint32_t *tid = arg;
	*tid = (uint32_t)syscall(SYS_gettid);
	pp_phase_begin(PP_STEP, "worker step");
	fake_launch("worker_kernel", *tid);
	pp_phase_end();
	return NULL;
}

/* external_id of the one kernel/memcpy named `what` (or of kind `kind`). */
static int64_t ext_of(pp_store *st, const char *kind, const char *name)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT external_id FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
				  "WHERE kind='%s' AND n.value='%s'", kind, name);
	return ppt_q_int(st, sql);
}

/* external_id of the phase row named `name`; -1 if none. */
static int64_t phase_id(pp_store *st, const char *name)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT external_id FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
				  "WHERE kind='phase' AND n.value='%s'", name);
	return ppt_q_int(st, sql);
}

/* Every phase opened while the collector runs pushes an id at its begin and
 * pops it at its end; a pop writes the id -> phase name row. Phases opened
 * before the start pop nothing, phases deeper than the collector's stack
 * join the phase above, a phase still open at stop is closed by the stop,
 * and after the stop no phase touches CUPTI. */
static void test_hook(void **state)
{
	(void)state;
	open_recording("hook");
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	pp_phase_begin(PP_DEVICE_INIT, "before start");
	ppgpu_options o = {.buffer_bytes = 64 << 10};
	if (ppgpu_start(&o) != 0)
		fail_msg("ppgpu_start: %s", ppgpu_status() ? ppgpu_status()->reason : "?");
	pp_phase_end(); /* opened before the collector: nothing to pop */
	ext_counts c = counts();
	if (!(c.pushes == 0 && c.pops == 0 && c.bad_pops == 0))
		fail_msg("before: %u pushes %u pops %u bad", c.pushes, c.pops, c.bad_pops);

	pp_step_begin(0);
	fake_launch("step_kernel", tid);
	pp_phase_begin(PP_DATA_TRANSFER, "h2d");
	c = counts();
	assert_int_equal(c.depth, 2);
	fake_memcpy(1 << 20, 1, tid);
	pp_phase_end();
	pp_step_end();
	c = counts();
	if (!(c.pushes == 2 && c.pops == 2 && c.depth == 0))
		fail_msg("step: %u pushes %u pops depth %d", c.pushes, c.pops, c.depth);

	/* another thread: its own stack, its own ids */
	pthread_t th;
	uint32_t wtid = 0;
	pthread_create(&th, NULL, hook_worker, &wtid);
	pthread_join(th, NULL);

	/* 40 nested phases: the collector pushes 32, the kernel joins the 32nd */
	ext_counts before = counts();
	for (int i = 0; i < 40; i++) {
		char n[16];
		snprintf(n, sizeof n, "deep %d", i);
		pp_phase_begin(PP_SPAN, n);
	}
	fake_launch("deep_kernel", tid);
	for (int i = 0; i < 40; i++)
		pp_phase_end();
	c = counts();
	if (!(c.pushes - before.pushes == 32 && c.pops - before.pops == 32 && c.depth == 0))
		fail_msg("deep: %u pushes %u pops depth %d", c.pushes - before.pushes, c.pops - before.pops, c.depth);

	/* an explicit range (not a recorder phase) inside a phase */
	pp_phase_begin(PP_SPAN, "outer");
	assert_true(ppgpu_phase_push("range") != 0);
	fake_launch("range_kernel", tid);
	ppgpu_phase_pop();
	fake_launch("outer_kernel", tid);
	pp_phase_end();

	/* still open at stop: closed by the stop, its end later pops nothing */
	pp_phase_begin(PP_SESSION_CLOSE, "open at stop");
	fake_launch("late_kernel", tid);
	ppgpu_stop();
	c = counts();
	if (!(c.depth == 0 && c.pushes == c.pops))
		fail_msg("stop left %d ids (%u pushes %u pops)", c.depth, c.pushes, c.pops);
	pp_phase_end();
	pp_phase_begin(PP_STEP, "after stop");
	pp_phase_end();
	ext_counts after = counts();
	if (!(after.pushes == c.pushes && after.pops == c.pops && after.bad_pops == 0))
		fail_msg("after stop: %u pushes %u pops %u bad pops", after.pushes, after.pops, after.bad_pops);

	pp_store *st = record_done();
	char sql[512];
	/* step, h2d, worker step, deep 0..31, outer, range, open at stop */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity WHERE kind='phase'"), 38);
	assert_int_equal(ppt_q_int(st, "SELECT count(DISTINCT external_id) FROM gpu_activity WHERE kind='phase'"), 38);
	assert_int_equal(phase_id(st, "before start"), -1);
	assert_int_equal(phase_id(st, "after stop"), -1);
	assert_int_equal(phase_id(st, "deep 32"), -1);
	int64_t step = phase_id(st, "step"), h2d = phase_id(st, "h2d");
	if (!(step > 0 && h2d > 0 && step != h2d))
		fail_msg("step %lld h2d %lld", (long long)step, (long long)h2d);
	assert_int_equal(ext_of(st, "kernel", "step_kernel"), step);
	assert_int_equal(ppt_q_int(st, "SELECT external_id FROM gpu_activity WHERE kind='memcpy'"), h2d);
	assert_int_equal(ext_of(st, "kernel", "worker_kernel"), phase_id(st, "worker step"));
	assert_int_equal(ppt_q_int(st, "SELECT tid FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE kind='phase' AND n.value='worker step'"), wtid);
	assert_int_equal(ppt_q_int(st, "SELECT tid FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE kind='phase' AND n.value='step'"), tid);
	assert_int_equal(ext_of(st, "kernel", "deep_kernel"), phase_id(st, "deep 31"));
	assert_int_equal(ext_of(st, "kernel", "range_kernel"), phase_id(st, "range"));
	assert_int_equal(ext_of(st, "kernel", "outer_kernel"), phase_id(st, "outer"));
	assert_int_equal(ext_of(st, "kernel", "late_kernel"), phase_id(st, "open at stop"));
	/* each id's row lies inside its recorder phase, give or take the
	 * recorder's tick-to-ns conversion (spans are stamped in TSC ticks and
	 * converted at ingest; these rows carry pp_now() ns: a few us apart
	 * here), and nested ids nest exactly (one clock) */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "JOIN spans_v s ON s.name=n.value WHERE g.kind='phase' "
		     "AND g.start_ns >= s.start_ns - 1000000 AND g.end_ns <= s.end_ns + 1000000 "
		     "AND g.start_ns <= g.end_ns"), 37); /* all but the explicit 'range' */
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM gpu_activity a, gpu_activity b WHERE a.kind='phase' AND b.kind='phase' "
		 "AND a.external_id=%lld AND b.external_id=%lld AND b.start_ns >= a.start_ns AND b.end_ns <= a.end_ns",
		 (long long)step, (long long)h2d);
	assert_int_equal(ppt_q_int(st, sql), 1);
	cleanup(st);
}

/* trace/offset: own clock or the offset pair */
static void test_trace(void **state)
{
	trace(strcmp(*state, "trace") == 0);
}

static void test_refused(void **state)
{
	refused(*state);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s trace|offset|busy|enable|nodevice|nodriver|hang|teardown|coldstart|unused|inject|hook\n", argv[0]);
		return 2;
	}
	setenv("PHASEPROF_LIBCUDA", FAKE_LIBCUDA, 1);
	setenv("PHASEPROF_LIBCUPTI", FAKE_LIBCUPTI, 1);
	load_fake();
	/* one per process: the collector is process-wide, as CUPTI is */
	const struct CMUnitTest tests[] = {
		{"test_trace", test_trace, NULL, NULL, "trace"},
		{"test_offset", test_trace, NULL, NULL, "offset"},
		{"test_busy", test_refused, NULL, NULL, "busy"},
		{"test_enable", test_refused, NULL, NULL, "enable"},
		{"test_nodevice", test_refused, NULL, NULL, "nodevice"},
		{"test_nodriver", test_refused, NULL, NULL, "nodriver"},
		cmocka_unit_test(test_hang),
		cmocka_unit_test(test_teardown),
		cmocka_unit_test(test_coldstart),
		cmocka_unit_test(test_unused),
		cmocka_unit_test(test_inject),
		cmocka_unit_test(test_hook),
	};
	char filter[64];
	snprintf(filter, sizeof filter, "test_%s", argv[1]);
	cmocka_set_test_filter(filter);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
