/* The CUPTI collector end to end without a GPU: a fake libcuda says the
 * driver works, a fake libcupti (tests/gpu/fake_cupti.c) produces real 13.0
 * records when the test "launches" work. The recording is ingested and the
 * store checked: kernels joined to phases and threads, copies, API names,
 * status row, dropped-record losses, clock alignment, refusals, and the
 * time bound on the final flush. One scenario per process (argv[1]): the
 * collector is process-wide state, as CUPTI is. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "phaseprof.h"
#include "ppgpu.h"
#include "store.h"
#include "store_internal.h"

static int failures;
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			failures++;                                            \
		}                                                              \
	} while (0)

static void (*fake_launch)(const char *, uint32_t);
static void (*fake_memcpy)(uint64_t, int, uint32_t);
static void (*fake_set_dropped)(size_t);
static void (*fake_hang_flush)(int);
static int (*fake_finalized)(void);
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
	fake_ext_counts = (void (*)(unsigned *, unsigned *, unsigned *, int *))dlsym(h, "fake_cupti_ext_counts");
}

static int64_t q1(pp_store *st, const char *sql)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(pp_store_db(st), sql, -1, &s, NULL) != SQLITE_OK) {
		fprintf(stderr, "bad sql %s: %s\n", sql, sqlite3_errmsg(pp_store_db(st)));
		failures++;
		return -999;
	}
	int64_t v = -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static char *q1s(pp_store *st, const char *sql, char *out, size_t n)
{
	sqlite3_stmt *s;
	out[0] = 0;
	if (sqlite3_prepare_v2(pp_store_db(st), sql, -1, &s, NULL) != SQLITE_OK)
		return out;
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(out, n, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return out;
}

static char spool[512], db[512];

static pp_store *record_done(void)
{
	pp_close();
	char err[512];
	unlink(db);
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	if (!st) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	pp_ingest_result res;
	if (pp_store_ingest(st, spool, NULL, &res, err, sizeof err) != 0) {
		fprintf(stderr, "ingest: %s\n", err);
		exit(2);
	}
	CHECK(res.rows_lost == 0, "rows lost at ingest: %llu (%s)", (unsigned long long)res.rows_lost, res.note);
	return st;
}

static void open_recording(const char *name)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(spool, sizeof spool, "%s/ppgpu-%s-%d.spool", dir, name, (int)getpid());
	snprintf(db, sizeof db, "%s/ppgpu-%s-%d.db", dir, name, (int)getpid());
	pp_options o = {.spool_path = spool, .scenario = "gpu", .variant = name};
	if (pp_open(&o) != 0) {
		fprintf(stderr, "pp_open: %s\n", pp_last_error());
		exit(2);
	}
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
static int scenario_trace(int own_clock)
{
	if (!own_clock)
		setenv("FAKE_CUPTI_TSCB", "999", 1); /* CUPTI refuses our clock: offset pair path */
	open_recording(own_clock ? "trace" : "offset");
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	ppgpu_options o = {.buffer_bytes = 64 << 10};
	int rc = ppgpu_start(&o);
	CHECK(rc == 0, "ppgpu_start: %s", ppgpu_status() ? ppgpu_status()->reason : "?");
	if (rc != 0)
		return 1;
	CHECK(ppgpu_active(), "collector not active");
	uint64_t t_before = pp_now();

	pp_step_begin(0);
	uint64_t ext = ppgpu_phase_push("step 0");
	CHECK(ext > 0, "no external id");
	fake_launch("matmul_kernel", tid);
	fake_memcpy(1 << 20, 0, tid);
	ppgpu_phase_pop();
	pp_step_end();
	fake_launch("outside_kernel", tid);
	uint64_t t_after = pp_now();
	fake_set_dropped(5);
	ppgpu_stop();
	CHECK(fake_finalized() == 1, "cuptiFinalize called %d times", fake_finalized());
	ppgpu_stop(); /* twice is harmless */

	pp_store *st = record_done();
	char sql[512], s[256];
	CHECK(q1(st, "SELECT count(*) FROM gpu_activity WHERE kind='kernel'") == 2, "kernels");
	snprintf(sql, sizeof sql,
		 "SELECT external_id FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		 "WHERE kind='kernel' AND n.value='matmul_kernel'");
	CHECK(q1(st, sql) == (int64_t)ext, "kernel external id %lld, want %llu", (long long)q1(st, sql),
	      (unsigned long long)ext);
	CHECK(q1(st, "SELECT external_id FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE n.value='outside_kernel'") == -2, "outside kernel must have no phase");
	snprintf(sql, sizeof sql, "SELECT tid FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
				  "WHERE n.value='matmul_kernel'");
	CHECK(q1(st, sql) == tid, "kernel tid");
	CHECK(q1(st, "SELECT grid_x*1000+block_x FROM gpu_activity WHERE kind='kernel' LIMIT 1") == 4256, "grid/block");
	CHECK(q1(st, "SELECT typeof(start_ns)='integer' AND typeof(grid_x)='integer' "
		     "FROM gpu_activity WHERE kind='kernel' LIMIT 1") == 1, "integer storage");
	/* the phase row names the phase the kernels joined to */
	snprintf(sql, sizeof sql, "SELECT n.value FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
				  "WHERE kind='phase' AND external_id=%llu", (unsigned long long)ext);
	CHECK(strcmp(q1s(st, sql, s, sizeof s), "step 0") == 0, "phase row: '%s'", s);
	/* copy details */
	CHECK(strcmp(q1s(st, "SELECT copy_kind||'/'||src_kind||'/'||dst_kind FROM gpu_activity WHERE kind='memcpy'",
			 s, sizeof s), "HtoD/pageable/device") == 0, "memcpy kinds '%s'", s);
	CHECK(q1(st, "SELECT bytes FROM gpu_activity WHERE kind='memcpy'") == 1 << 20, "bytes");
	CHECK(strcmp(q1s(st, "SELECT n.value FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
			     "WHERE kind='memcpy'", s, sizeof s), "sync") == 0, "sync memcpy");
	CHECK(q1(st, "SELECT count(*) FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE kind='runtime' AND n.value='cudaLaunchKernel'") == 2, "runtime names");
	CHECK(q1(st, "SELECT count(*) FROM gpu_activity WHERE kind='external'") == 2, "external rows");
	/* every timestamp on the recorder's clock, inside the traced interval */
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM gpu_activity WHERE kind IN ('kernel','memcpy','runtime') "
		 "AND (start_ns < %llu OR end_ns > %llu OR end_ns < start_ns)",
		 (unsigned long long)t_before, (unsigned long long)t_after);
	CHECK(q1(st, sql) == 0, "%lld rows outside [%llu,%llu]", (long long)q1(st, sql),
	      (unsigned long long)t_before, (unsigned long long)t_after);
	CHECK(q1(st, "SELECT available FROM gpu_status") == 1, "available");
	CHECK(q1(st, "SELECT records_dropped FROM gpu_status") == 5, "dropped in status");
	CHECK(q1(st, "SELECT count FROM losses WHERE source='cupti'") == 5, "losses row");
	if (own_clock)
		CHECK(q1(st, "SELECT clock_offset_ns FROM gpu_status") == 0, "own clock: offset 0");
	else
		CHECK(q1(st, "SELECT clock_offset_ns FROM gpu_status") > 1000000000, "realtime offset expected");
	CHECK(strcmp(q1s(st, "SELECT value FROM run_meta WHERE key='gpu.state'", s, sizeof s), "ok") == 0,
	      "meta gpu.state '%s'", s);
	q1s(st, "SELECT value FROM run_meta WHERE key='gpu.clock'", s, sizeof s);
	CHECK(strstr(s, own_clock ? "timestamp callback" : "bracket=") != NULL, "gpu.clock '%s'", s);
	cleanup(st);
	return 0;
}

/* Refusals: the status row carries the reason; CPU recording continues. */
static int scenario_refused(const char *what)
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
	CHECK(ppgpu_start(NULL) == -1, "start must fail");
	CHECK(!ppgpu_active(), "not active");
	CHECK(ppgpu_phase_push("x") == 0, "push is a no-op");
	ppgpu_phase_pop();
	pp_phase_end();
	ppgpu_stop();
	pp_store *st = record_done();
	char s[512];
	q1s(st, "SELECT reason FROM gpu_status", s, sizeof s);
	CHECK(strstr(s, want) != NULL, "reason '%s' lacks '%s'", s, want);
	CHECK(q1(st, "SELECT available FROM gpu_status") == 0, "unavailable");
	CHECK(q1(st, "SELECT count(*) FROM spans_v WHERE name='cpu work'") == 1, "CPU phase kept");
	CHECK(q1(st, "SELECT count(*) FROM gpu_activity") == 0, "no activity rows");
	cleanup(st);
	return 0;
}

/* A forced flush that never returns must not hang the program's exit. */
static int scenario_hung_flush(void)
{
	open_recording("hang");
	ppgpu_options o = {.flush_timeout_ms = 200};
	CHECK(ppgpu_start(&o) == 0, "start");
	fake_launch("k", 1);
	fake_hang_flush(1);
	ppgpu_stop();
	CHECK(fake_finalized() == 0, "finalize must not run while a flush is stuck");
	pp_store *st = record_done();
	char s[512];
	q1s(st, "SELECT reason FROM gpu_status", s, sizeof s);
	CHECK(strstr(s, "did not finish within 200 ms") != NULL, "reason '%s'", s);
	CHECK(q1(st, "SELECT count(*) FROM losses WHERE source='cupti_flush'") == 1, "flush loss row");
	cleanup(st);
	return 0;
}

/* CUDA_INJECTION64_PATH: the driver calls InitializeInjection from inside
 * cuInit; no driver probe then (it would recurse into cuInit), CUPTI still
 * checked; ppgpu_finish at exit stops it and writes the status row. */
int InitializeInjection(void);
static int scenario_inject(void)
{
	setenv("PHASEPROF_LIBCUDA", "/nonexistent/libcuda.so.1", 1); /* must not be consulted */
	open_recording("inject");
	CHECK(InitializeInjection() == 1, "InitializeInjection must return 1");
	CHECK(InitializeInjection() == 1, "a second call is harmless");
	CHECK(ppgpu_active(), "collector active: %s", ppgpu_status() ? ppgpu_status()->reason : "?");
	fake_launch("injected_kernel", 7);
	ppgpu_finish();
	pp_store *st = record_done();
	char s[512];
	q1s(st, "SELECT reason FROM gpu_status", s, sizeof s);
	CHECK(strstr(s, "CUDA_INJECTION64_PATH") != NULL, "reason '%s'", s);
	CHECK(q1(st, "SELECT available FROM gpu_status") == 1, "available");
	CHECK(q1(st, "SELECT count(*) FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE kind='kernel' AND n.value='injected_kernel'") == 1, "kernel recorded");
	cleanup(st);
	return 0;
}

/* A wrapped program that never initialised CUDA: the status row says so. */
static int scenario_unused(void)
{
	open_recording("unused");
	pp_phase_begin(PP_STEP, "cpu only");
	pp_phase_end();
	ppgpu_finish();
	pp_store *st = record_done();
	char s[512];
	q1s(st, "SELECT reason FROM gpu_status", s, sizeof s);
	CHECK(strstr(s, "did not initialise CUDA") != NULL, "reason '%s'", s);
	CHECK(q1(st, "SELECT count(*) FROM gpu_status WHERE available=0") == 1, "one unavailable row");
	CHECK(strcmp(q1s(st, "SELECT value FROM run_meta WHERE key='gpu.state'", s, sizeof s), "unused") == 0,
	      "state '%s'", s);
	cleanup(st);
	return 0;
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
	return q1(st, sql);
}

/* external_id of the phase row named `name`; -1 if none, -999 on error. */
static int64_t phase_id(pp_store *st, const char *name)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT external_id FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
				  "WHERE kind='phase' AND n.value='%s'", name);
	return q1(st, sql);
}

/* Every phase opened while the collector runs pushes an id at its begin and
 * pops it at its end; a pop writes the id -> phase name row. Phases opened
 * before the start pop nothing, phases deeper than the collector's stack
 * join the phase above, a phase still open at stop is closed by the stop,
 * and after the stop no phase touches CUPTI. */
static int scenario_hook(void)
{
	open_recording("hook");
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	pp_phase_begin(PP_DEVICE_INIT, "before start");
	ppgpu_options o = {.buffer_bytes = 64 << 10};
	int rc = ppgpu_start(&o);
	CHECK(rc == 0, "ppgpu_start: %s", ppgpu_status() ? ppgpu_status()->reason : "?");
	if (rc != 0)
		return 1;
	pp_phase_end(); /* opened before the collector: nothing to pop */
	ext_counts c = counts();
	CHECK(c.pushes == 0 && c.pops == 0 && c.bad_pops == 0, "before: %u pushes %u pops %u bad", c.pushes,
	      c.pops, c.bad_pops);

	pp_step_begin(0);
	fake_launch("step_kernel", tid);
	pp_phase_begin(PP_DATA_TRANSFER, "h2d");
	c = counts();
	CHECK(c.depth == 2, "two ids pushed inside step/h2d, got %d", c.depth);
	fake_memcpy(1 << 20, 1, tid);
	pp_phase_end();
	pp_step_end();
	c = counts();
	CHECK(c.pushes == 2 && c.pops == 2 && c.depth == 0, "step: %u pushes %u pops depth %d", c.pushes,
	      c.pops, c.depth);

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
	CHECK(c.pushes - before.pushes == 32 && c.pops - before.pops == 32 && c.depth == 0,
	      "deep: %u pushes %u pops depth %d", c.pushes - before.pushes, c.pops - before.pops, c.depth);

	/* an explicit range (not a recorder phase) inside a phase */
	pp_phase_begin(PP_SPAN, "outer");
	CHECK(ppgpu_phase_push("range") != 0, "explicit push");
	fake_launch("range_kernel", tid);
	ppgpu_phase_pop();
	fake_launch("outer_kernel", tid);
	pp_phase_end();

	/* still open at stop: closed by the stop, its end later pops nothing */
	pp_phase_begin(PP_SESSION_CLOSE, "open at stop");
	fake_launch("late_kernel", tid);
	ppgpu_stop();
	c = counts();
	CHECK(c.depth == 0 && c.pushes == c.pops, "stop left %d ids (%u pushes %u pops)", c.depth, c.pushes,
	      c.pops);
	pp_phase_end();
	pp_phase_begin(PP_STEP, "after stop");
	pp_phase_end();
	ext_counts after = counts();
	CHECK(after.pushes == c.pushes && after.pops == c.pops && after.bad_pops == 0,
	      "after stop: %u pushes %u pops %u bad pops", after.pushes, after.pops, after.bad_pops);

	pp_store *st = record_done();
	char sql[512];
	/* step, h2d, worker step, deep 0..31, outer, range, open at stop */
	CHECK(q1(st, "SELECT count(*) FROM gpu_activity WHERE kind='phase'") == 38, "phase rows: %lld",
	      (long long)q1(st, "SELECT count(*) FROM gpu_activity WHERE kind='phase'"));
	CHECK(q1(st, "SELECT count(DISTINCT external_id) FROM gpu_activity WHERE kind='phase'") == 38,
	      "ids are fresh per phase");
	CHECK(phase_id(st, "before start") == -1, "a phase opened before the start has no id");
	CHECK(phase_id(st, "after stop") == -1, "a phase opened after the stop has no id");
	CHECK(phase_id(st, "deep 32") == -1, "deeper than the stack: no id");
	int64_t step = phase_id(st, "step"), h2d = phase_id(st, "h2d");
	CHECK(step > 0 && h2d > 0 && step != h2d, "step %lld h2d %lld", (long long)step, (long long)h2d);
	CHECK(ext_of(st, "kernel", "step_kernel") == step, "step_kernel joins the step");
	CHECK(q1(st, "SELECT external_id FROM gpu_activity WHERE kind='memcpy'") == h2d, "the copy joins h2d");
	CHECK(ext_of(st, "kernel", "worker_kernel") == phase_id(st, "worker step"), "worker kernel");
	CHECK(q1(st, "SELECT tid FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE kind='phase' AND n.value='worker step'") == wtid, "worker phase row tid");
	CHECK(q1(st, "SELECT tid FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "WHERE kind='phase' AND n.value='step'") == tid, "step phase row tid");
	CHECK(ext_of(st, "kernel", "deep_kernel") == phase_id(st, "deep 31"), "deep kernel joins deep 31");
	CHECK(ext_of(st, "kernel", "range_kernel") == phase_id(st, "range"), "range kernel");
	CHECK(ext_of(st, "kernel", "outer_kernel") == phase_id(st, "outer"), "outer kernel");
	CHECK(ext_of(st, "kernel", "late_kernel") == phase_id(st, "open at stop"), "late kernel");
	/* each id's row lies inside its recorder phase, give or take the
	 * recorder's tick-to-ns conversion (spans are stamped in TSC ticks and
	 * converted at ingest; these rows carry pp_now() ns: a few us apart
	 * here), and nested ids nest exactly (one clock) */
	CHECK(q1(st, "SELECT count(*) FROM gpu_activity g JOIN strings n ON n.id=g.name_id "
		     "JOIN spans_v s ON s.name=n.value WHERE g.kind='phase' "
		     "AND g.start_ns >= s.start_ns - 1000000 AND g.end_ns <= s.end_ns + 1000000 "
		     "AND g.start_ns <= g.end_ns") == 37, /* all but the explicit 'range' */
	      "phase rows inside their phases");
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM gpu_activity a, gpu_activity b WHERE a.kind='phase' AND b.kind='phase' "
		 "AND a.external_id=%lld AND b.external_id=%lld AND b.start_ns >= a.start_ns AND b.end_ns <= a.end_ns",
		 (long long)step, (long long)h2d);
	CHECK(q1(st, sql) == 1, "h2d inside step");
	cleanup(st);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s trace|offset|busy|enable|nodevice|nodriver|hang|unused|inject|hook\n", argv[0]);
		return 2;
	}
	setenv("PHASEPROF_LIBCUDA", FAKE_LIBCUDA, 1);
	setenv("PHASEPROF_LIBCUPTI", FAKE_LIBCUPTI, 1);
	load_fake();
	const char *s = argv[1];
	if (strcmp(s, "trace") == 0)
		scenario_trace(1);
	else if (strcmp(s, "offset") == 0)
		scenario_trace(0);
	else if (strcmp(s, "hang") == 0)
		scenario_hung_flush();
	else if (strcmp(s, "unused") == 0)
		scenario_unused();
	else if (strcmp(s, "inject") == 0)
		scenario_inject();
	else if (strcmp(s, "hook") == 0)
		scenario_hook();
	else
		scenario_refused(s);
	if (failures)
		fprintf(stderr, "%s: %d check(s) failed\n", s, failures);
	else
		printf("%s: ok\n", s);
	return failures ? 1 : 0;
}
