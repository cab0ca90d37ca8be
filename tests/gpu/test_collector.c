/* The CUPTI collector end to end without a GPU: a fake libcuda says the
 * driver works, a fake libcupti (tests/gpu/fake_cupti.c) produces real 13.0
 * records when the test "launches" work. The recording is ingested and the
 * store checked: kernels joined to phases and threads, copies, API names,
 * status row, dropped-record losses, clock alignment, refusals, and the
 * time bound on the final flush. One scenario per process (argv[1]): the
 * collector is process-wide state, as CUPTI is. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "phaseprof.h"
#include "ppgpu.h"
#include "store.h"

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
	unlink(db);
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

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s trace|offset|busy|enable|nodevice|nodriver|hang|unused|inject\n", argv[0]);
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
	else
		scenario_refused(s);
	if (failures)
		fprintf(stderr, "%s: %d check(s) failed\n", s, failures);
	else
		printf("%s: ok\n", s);
	return failures ? 1 : 0;
}
