/* Recorder + spool + ingest: nesting, threads, overflow accounting, fork,
 * round trip of every event kind, truncated and corrupt spools. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zlib.h>

#include "phaseprof.h"
#include "recorder_internal.h"
#include "store.h"
#include "store_internal.h"
#include "pp_testutil.h"

static char tmpdir[256];

static void path_in_tmp(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", tmpdir, name);
}

static void test_nesting(void **state)
{
	(void)state;
	char spool[512], db[512];
	path_in_tmp(spool, sizeof spool, "nest.spool");
	path_in_tmp(db, sizeof db, "nest.db");
	pp_options o = {.spool_path = spool, .scenario = "unit", .variant = "nest"};
	assert_int_equal(pp_open(&o), 0);
	pp_phase_begin(PP_RUNTIME_INIT, "init");
	{
		PP_PHASE(PP_OP_REGISTRATION, "register ops");
		pp_phase_begin(PP_SPAN, "inner");
		pp_phase_end();
	}
	pp_phase_end();
	for (int i = 0; i < 3; i++) {
		pp_step_begin(i);
		pp_phase_begin(PP_COMPILE, "compile");
		pp_phase_end();
		pp_step_end();
	}
	pp_meta("model", "mlp");
	pp_phase_at(PP_LIBRARY_LOAD, "before main", 100, 2100);
	pp_exit_status(0, 9);
	assert_int_equal(pp_close(), 0);

	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	assert_int_equal(res.truncated, 0);
	assert_int_equal(res.spans, 10);
	assert_int_equal(ppt_q_int(st, "SELECT end_ns - start_ns FROM spans_v WHERE name='before main'"), 2000);
	assert_int_equal(ppt_q_int(st, "SELECT start_ns FROM spans_v WHERE name='before main'"), 100);
	assert_int_equal(res.open_spans, 0);
	/* depth and parent links */
	assert_int_equal(ppt_q_int(st, "SELECT depth FROM spans_v WHERE name='inner'"), 2);
	assert_int_equal(ppt_q_int(st, "SELECT p.kind FROM spans c JOIN spans p ON p.id=c.parent_id "
				    "JOIN strings n ON n.id=c.name_id WHERE n.value='inner'"),
			 PP_OP_REGISTRATION);
	/* steps carry their iteration; nested phases inherit it */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans WHERE kind=16"), 3);
	assert_int_equal(ppt_q_int(st, "SELECT sum(step) FROM spans WHERE kind=14"), 0 + 1 + 2);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans WHERE end_ns < start_ns"), 0);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM run_meta WHERE key='model' AND value='mlp'"), 1);
	pp_run_info run;
	assert_int_equal(pp_store_run(st, res.run_id, &run), 0);
	assert_string_equal(run.scenario, "unit");
	assert_string_equal(run.variant, "nest");
	assert_string_equal(run.status, "killed"); /* pp_exit_status(0, SIGKILL) */
	assert_int_equal(run.term_signal, 9);

	pp_phase_total *tot;
	int n;
	assert_int_equal(pp_store_phase_totals(st, res.run_id, &tot, &n), 0);
	int seen = 0;
	for (int i = 0; i < n; i++)
		if (tot[i].kind == PP_COMPILE) {
			assert_int_equal(tot[i].count, 3);
			seen = 1;
		}
	assert_true(seen);
	free(tot);
	pp_step_row *steps;
	assert_int_equal(pp_store_steps(st, res.run_id, &steps, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(steps[2].step, 2);
	free(steps);
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

#define NTHREADS 8
#define PER_THREAD 20000

static void *thread_body(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[32];
	snprintf(name, sizeof name, "worker-%d", id);
	pp_thread_name(name);
	for (int i = 0; i < PER_THREAD / 2; i++) {
		pp_phase_begin(PP_SPAN, name);
		pp_phase_end();
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	char spool[512], db[512];
	path_in_tmp(spool, sizeof spool, "threads.spool");
	path_in_tmp(db, sizeof db, "threads.db");
	pp_options o = {.spool_path = spool, .buffer_events = 1024, .max_buffers = 4096};
	assert_int_equal(pp_open(&o), 0);
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, thread_body, (void *)(intptr_t)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	pp_recorder_stats rs;
	pp_stats(&rs);
	assert_int_equal(pp_close(), 0);
	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	assert_int_equal(res.events + res.events_lost, (uint64_t)NTHREADS * PER_THREAD);
	assert_int_equal(res.events_lost, 0);
	assert_int_equal(ppt_q_int(st, "SELECT count(DISTINCT tid) FROM spans"), NTHREADS);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM threads WHERE name LIKE 'worker-%'"), NTHREADS);
	/* every span is named after its own thread: no cross-thread mix-up */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans s JOIN strings n ON n.id=s.name_id "
				    "JOIN threads t ON t.run_id=s.run_id AND t.tid=s.tid WHERE n.value<>t.name"),
			 0);
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

static void test_overflow_accounting(void **state)
{
	(void)state;
	char spool[512], db[512];
	path_in_tmp(spool, sizeof spool, "overflow.spool");
	path_in_tmp(db, sizeof db, "overflow.db");
	/* two tiny buffers and a slow writer: most events must be dropped, and
	 * every one of them counted */
	pp_options o = {.spool_path = spool, .buffer_events = 64, .max_buffers = 2, .flush_ms = 1000,
			 .full_policy = PP_FULL_DROP};
	assert_int_equal(pp_open(&o), 0);
	const int N = 200000;
	for (int i = 0; i < N; i++)
		pp_mark("m");
	pp_recorder_stats rs;
	pp_stats(&rs);
	assert_true(rs.events_lost > 0);
	assert_int_equal(pp_close(), 0);
	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	assert_int_equal(res.events + res.events_lost, (uint64_t)N);
	assert_true(res.events_lost > 0);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM marks"), (int64_t)res.events);
	assert_int_equal(ppt_q_int(st, "SELECT sum(count) FROM losses WHERE source='events'"),
			 (int64_t)res.events_lost);
	assert_int_equal(ppt_q_int(st, "SELECT events_lost FROM runs"), (int64_t)res.events_lost);
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

/* Eight busy threads, four tiny buffers beyond their own, a writer that sleeps a second: with
 * the default policy the threads drain the spool themselves, so every event
 * arrives and none is dropped (the bound on memory still holds). */
enum { BUSY_EVENTS = 50000 };
static void *busy_marks(void *arg)
{
	(void)arg;
	for (int i = 0; i < BUSY_EVENTS; i++) {
		pp_phase_begin(PP_SPAN, "busy");
		pp_phase_end();
	}
	return NULL;
}

static void test_full_buffers_drain(void **state)
{
	(void)state;
	char spool[512], db[512];
	path_in_tmp(spool, sizeof spool, "drain.spool");
	path_in_tmp(db, sizeof db, "drain.db");
	pp_options o = {.spool_path = spool, .buffer_events = 64, .max_buffers = 12, .flush_ms = 1000};
	assert_int_equal(pp_open(&o), 0);
	pthread_t th[8];
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&th[i], NULL, busy_marks, NULL), 0);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	pp_recorder_stats rs;
	pp_stats(&rs);
	assert_int_equal(rs.events_lost, 0);
	assert_true(rs.self_drains > 0);
	assert_int_equal(pp_close(), 0);
	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	assert_int_equal(res.events_lost, 0);
	assert_int_equal(res.events, (uint64_t)8 * BUSY_EVENTS * 2);
	/* short leaf spans past 10,000 per thread and name are kept as groups */
	assert_int_equal(ppt_q_int(st, "SELECT (SELECT count(*) FROM spans) + (SELECT coalesce(sum(count), 0) FROM span_groups)"),
			 (int64_t)8 * BUSY_EVENTS);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans WHERE end_ns IS NULL"), 0);
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

static void test_round_trip(void **state)
{
	(void)state;
	char spool[512], db[512];
	path_in_tmp(spool, sizeof spool, "rt.spool");
	path_in_tmp(db, sizeof db, "rt.db");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .label = "round trip"}), 0);
	pp_counter("alloc.bytes_in_use", 1024.5);
	pp_counter("alloc.bytes_in_use", 2048);
	pp_mark("checkpoint");
	uint64_t t0 = pp_now();
	pp_op("dense/MatMul", "MatMul", t0, t0 + 5000, 7);
	assert_int_equal(pp_row("libraries", "siiiiiiiit", "/usr/lib/libfoo.so", (int64_t)0x1000,
				(int64_t)4096, (int64_t)10, (int64_t)20, (int64_t)30, (int64_t)5,
				(int64_t)5, (int64_t)1, "dlopen"),
			 0);
	pp_graph_node nodes[3] = {{"x", "Placeholder", NULL, "128x784", 0},
				  {"w", "VarHandle", "cpu", NULL, 0},
				  {"y", "MatMul", "cpu", "128x10", 1234}};
	pp_graph_edge edges[2] = {{0, 2, 0}, {1, 2, 0}};
	assert_int_equal(pp_graph_snapshot("main", 3, nodes, 3, edges, 2), 0);
	/* a name buffer reused with other content must not alias */
	char buf[32];
	strcpy(buf, "first");
	pp_mark(buf);
	strcpy(buf, "second");
	pp_mark(buf);
	assert_int_equal(pp_close(), 0);

	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM counters"), 2);
	assert_int_equal(ppt_q_int(st, "SELECT CAST(sum(value)*10 AS INTEGER) FROM counters"), 30725);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM marks m JOIN strings s ON s.id=m.name_id "
				    "WHERE s.value IN ('first','second','checkpoint')"),
			 3);
	assert_int_equal(ppt_q_int(st, "SELECT end_ns-start_ns FROM ops_v WHERE type='MatMul'"), 5000);
	assert_int_equal(ppt_q_int(st, "SELECT step FROM ops"), 7);
	assert_int_equal(ppt_q_int(st, "SELECT size FROM libraries l JOIN strings s ON s.id=l.path_id "
				    "WHERE s.value='/usr/lib/libfoo.so'"),
			 4096);
	assert_int_equal(ppt_q_int(st, "SELECT n_nodes FROM graphs WHERE version=3"), 3);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM graph_nodes n JOIN graphs g ON g.id=n.graph_id"), 3);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM graph_edges e JOIN graphs g ON g.id=e.graph_id "
				    "WHERE e.dst=2"),
			 2);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM runs WHERE label='round trip'"), 1);
	char **names = pp_store_counter_names(st, res.run_id);
	assert_non_null(names);
	assert_string_equal(names[0], "alloc.bytes_in_use");
	assert_null(names[1]);
	pp_store_free_names(names);
	/* a second recording into the same database is a second run */
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .label = "again"}), 0);
	pp_mark("checkpoint");
	assert_int_equal(pp_close(), 0);
	char err[256];
	assert_int_equal(pp_store_ingest(st, spool, NULL, &res, err, sizeof err), 0);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM runs"), 2);
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

/* Rows are encoded on the stack up to a size, then on the heap: a row
 * whose path outgrows that (and one just under it) arrives whole. */
static void test_long_rows(void **state)
{
	(void)state;
	char spool[512], db[512];
	path_in_tmp(spool, sizeof spool, "long.spool");
	path_in_tmp(db, sizeof db, "long.db");
	static char longp[3000], midp[480];
	memset(longp, 'a', sizeof longp - 1);
	longp[0] = '/';
	longp[sizeof longp - 2] = 'z';
	memset(midp, 'b', sizeof midp - 1);
	midp[0] = '/';
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool}), 0);
	assert_int_equal(pp_row("libraries", "siiiiiiiit", longp, (int64_t)1, (int64_t)3000, (int64_t)10,
				(int64_t)20, (int64_t)30, (int64_t)5, (int64_t)5, (int64_t)1, "dlopen"),
			 0);
	assert_int_equal(pp_row("libraries", "siiiiiiiit", midp, (int64_t)2, (int64_t)480, (int64_t)10,
				(int64_t)20, (int64_t)30, (int64_t)5, (int64_t)5, (int64_t)1, "dlopen"),
			 0);
	assert_int_equal(pp_close(), 0);
	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	char q[4096];
	snprintf(q, sizeof q, "SELECT size FROM libraries l JOIN strings s ON s.id=l.path_id WHERE s.value='%s'",
		 longp);
	assert_int_equal(ppt_q_int(st, q), 3000);
	snprintf(q, sizeof q, "SELECT size FROM libraries l JOIN strings s ON s.id=l.path_id WHERE s.value='%s'",
		 midp);
	assert_int_equal(ppt_q_int(st, q), 480);
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

/* The disk is full after the spool's start (a drain's small chunks go out
 * in one write, its events as they are packed): every event recorded
 * after is counted as lost, and the close says how many. */
static void test_batch_loss_counted(void **state)
{
	(void)state;
	char spool[512];
	path_in_tmp(spool, sizeof spool, "full.spool");
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		if (pp_open(&(pp_options){.spool_path = spool}) != 0)
			_exit(10);
		struct stat sb;
		if (stat(spool, &sb) != 0)
			_exit(11);
		/* nothing more fits: every later write fails */
		struct rlimit rl = {(rlim_t)sb.st_size, RLIM_INFINITY};
		setrlimit(RLIMIT_FSIZE, &rl);
		for (int i = 0; i < 100; i++)
			pp_mark("m");
		if (pp_close() == 0)
			_exit(12);
		pp_recorder_stats rs;
		pp_stats(&rs);
		if (!strstr(pp_last_error(), "100 events could not be written"))
			_exit(13);
		_exit(rs.events_lost == 100 ? 0 : 14);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Rows written over several drains (the writer reuses the last drained
 * side buffer for the next rows) all arrive, each once. */
static void test_rows_over_drains(void **state)
{
	(void)state;
	char spool[512], db[512];
	path_in_tmp(spool, sizeof spool, "drains.spool");
	path_in_tmp(db, sizeof db, "drains.db");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .flush_ms = 1}), 0);
	int64_t n = 0;
	for (int burst = 0; burst < 5; burst++) {
		/* bursts of different sizes: the spare is smaller or larger than needed */
		for (int i = 0; i < (burst % 2 ? 3000 : 40); i++, n++)
			assert_int_equal(pp_row("libraries", "siiiiiiiit", "/lib/x.so", n, (int64_t)1, (int64_t)10,
						(int64_t)20, (int64_t)30, (int64_t)5, (int64_t)5, (int64_t)1, "dlopen"),
					 0);
		usleep(20000); /* a drain or more */
	}
	assert_int_equal(pp_close(), 0);
	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	char q[128];
	snprintf(q, sizeof q, "SELECT count(*) FROM libraries");
	assert_int_equal(ppt_q_int(st, q), n);
	assert_int_equal(ppt_q_int(st, "SELECT count(DISTINCT base) FROM libraries"), n);
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

static void test_fork_follow(void **state)
{
	(void)state;
	char spool[512], db[512], child_spool[600];
	path_in_tmp(spool, sizeof spool, "fork.spool");
	path_in_tmp(db, sizeof db, "fork.db");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .fork_policy = PP_FORK_FOLLOW}), 0);
	pp_phase_begin(PP_RUNTIME_INIT, "parent-before");
	pp_phase_end();
	pid_t pid = fork();
	if (pid == 0) {
		pp_phase_begin(PP_STEP, "child-work");
		pp_phase_end();
		pp_mark("parent-before"); /* a string interned before the fork */
		_exit(pp_close() == 0 ? 0 : 3);
	}
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pp_phase_begin(PP_RUNTIME_INIT, "parent-after");
	pp_phase_end();
	assert_int_equal(pp_close(), 0);
	snprintf(child_spool, sizeof child_spool, "%s.%d", spool, (int)pid);

	pp_ingest_result res, cres;
	pp_store *st = ppt_ingest(spool, db, &res);
	char err[256];
	pp_ingest_opts co = {.parent_run = res.run_id, .exit_code = -1};
	assert_int_equal(pp_store_ingest(st, child_spool, &co, &cres, err, sizeof err), 0);
	/* the parent's spool holds only the parent's phases, the child's only its own */
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE run_id=1"), 2);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans_v WHERE run_id=2 AND name='child-work'"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans WHERE run_id=2"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM marks m JOIN strings s ON s.id=m.name_id "
				    "WHERE m.run_id=2 AND s.value='parent-before'"),
			 1);
	assert_int_equal(ppt_q_int(st, "SELECT parent_run FROM runs WHERE id=2"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT ppid FROM runs WHERE id=2"), (int64_t)getpid());
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

static void test_fork_disable(void **state)
{
	(void)state;
	char spool[512], child_spool[600];
	path_in_tmp(spool, sizeof spool, "forkoff.spool");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .fork_policy = PP_FORK_DISABLE}), 0);
	pid_t pid = fork();
	if (pid == 0) {
		pp_mark("child"); /* no-op: the child's recorder is closed */
		_exit(pp_is_open() ? 1 : 0);
	}
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(pp_close(), 0);
	snprintf(child_spool, sizeof child_spool, "%s.%d", spool, (int)pid);
	assert_int_not_equal(access(child_spool, F_OK), 0);
}

/* A recording cut at every possible length: ingest never fails once the
 * header is whole, keeps a prefix, and says where it stopped. */
static void test_truncated(void **state)
{
	(void)state;
	char spool[512], cut[512], db[512];
	path_in_tmp(spool, sizeof spool, "full.spool");
	path_in_tmp(cut, sizeof cut, "cut.spool");
	path_in_tmp(db, sizeof db, "cut.db");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool}), 0);
	for (int i = 0; i < 50; i++) {
		pp_step_begin(i);
		pp_counter("c", i);
		pp_step_end();
	}
	assert_int_equal(pp_close(), 0);
	FILE *f = fopen(spool, "rb");
	assert_non_null(f);
	static unsigned char data[1 << 20];
	size_t n = fread(data, 1, sizeof data, f);
	fclose(f);
	char err[512];
	unlink(db);
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	int64_t prev_spans = -1;
	for (size_t len = 80; len <= n; len += (len < 400 ? 1 : 37)) {
		FILE *o = fopen(cut, "wb");
		fwrite(data, 1, len, o);
		fclose(o);
		pp_ingest_result res;
		int rc = pp_store_ingest(st, cut, NULL, &res, err, sizeof err);
		if (rc != 0)
			fail_msg("cut at %zu: %s", len, err);
		if (len < n) {
			assert_true(res.truncated || res.bytes == len);
		}
		(void)prev_spans;
	}
	/* a cut file is marked as such */
	FILE *o = fopen(cut, "wb");
	fwrite(data, 1, n - 5, o);
	fclose(o);
	pp_ingest_result res;
	assert_int_equal(pp_store_ingest(st, cut, NULL, &res, err, sizeof err), 0);
	assert_int_equal(res.truncated, 1);
	pp_run_info run;
	assert_int_equal(pp_store_run(st, res.run_id, &run), 0);
	assert_string_equal(run.status, "truncated");
	assert_non_null(strstr(run.note, "offset"));
	/* the whole file: complete, 50 steps */
	assert_int_equal(pp_store_ingest(st, spool, NULL, &res, err, sizeof err), 0);
	assert_int_equal(res.truncated, 0);
	assert_int_equal(res.spans, 50);
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
	/* a header-only cut is refused with the file named */
	o = fopen(cut, "wb");
	fwrite(data, 1, 20, o);
	fclose(o);
	st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_int_equal(pp_store_ingest(st, cut, NULL, &res, err, sizeof err), -1);
	assert_non_null(strstr(err, "cut.spool"));
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

static void test_corrupt(void **state)
{
	(void)state;
	char spool[512], db[512];
	path_in_tmp(spool, sizeof spool, "corrupt.spool");
	path_in_tmp(db, sizeof db, "corrupt.db");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .buffer_events = 16}), 0);
	for (int i = 0; i < 200; i++) {
		pp_phase_begin(PP_SPAN, "x");
		pp_phase_end();
	}
	assert_int_equal(pp_close(), 0);
	struct stat sb;
	stat(spool, &sb);
	/* flip a payload byte of the chunk two thirds in (events are packed, so
	 * headers are a good part of the file): CRC must catch it; the prefix
	 * is kept */
	FILE *f = fopen(spool, "r+b");
	long at = (long)sizeof(pp_spool_header), pos = -1;
	pp_chunk_header h;
	while (pos < 0 && fseek(f, at, SEEK_SET) == 0 && fread(&h, sizeof h, 1, f) == 1) {
		long next = at + (long)sizeof h + (long)((h.size + 7u) & ~7u);
		if (next > sb.st_size * 2 / 3 && h.size > 0)
			pos = at + (long)sizeof h + (long)h.size / 2;
		at = next;
	}
	assert_true(pos > 0);
	fseek(f, pos, SEEK_SET);
	int c = fgetc(f);
	fseek(f, pos, SEEK_SET);
	fputc(c ^ 0x5a, f);
	fclose(f);
	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	assert_int_equal(res.truncated, 1);
	assert_true(res.truncated_at > 0 && res.truncated_at <= (uint64_t)pos);
	assert_true(res.spans > 0 && res.spans <= 200);
	assert_non_null(strstr(res.note, "offset"));
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
	/* a file that is not a spool at all */
	f = fopen(spool, "wb");
	fputs("this is not a spool file, just some text that is long enough for a header.............", f);
	fclose(f);
	char err[512];
	st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_int_equal(pp_store_ingest(st, spool, NULL, &res, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a phaseprof spool"));
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

/* Spans are stamped in TSC ticks and converted at ingest; pp_now() reads
 * CLOCK_MONOTONIC. Both must land on the same time line. */
static void test_clock_alignment(void **state)
{
	(void)state;
	char spool[512], db[512];
	path_in_tmp(spool, sizeof spool, "clock.spool");
	path_in_tmp(db, sizeof db, "clock.db");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .flush_ms = 5}), 0);
	int64_t before[20], after[20];
	for (int i = 0; i < 20; i++) {
		before[i] = (int64_t)pp_now();
		pp_step_begin(i);
		uint64_t t0 = pp_now();
		while (pp_now() - t0 < 2000000) /* 2 ms of work between calibration points */
			;
		pp_step_end();
		after[i] = (int64_t)pp_now();
	}
	assert_int_equal(pp_close(), 0);
	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	pp_step_row *steps;
	int n;
	assert_int_equal(pp_store_steps(st, res.run_id, &steps, &n), 0);
	assert_int_equal(n, 20);
	for (int i = 0; i < 20; i++) {
		/* 20 us of slack: the recorder's own call around each stamp (the
		 * bound is unsigned in cmocka: a clock that starts near 0 must
		 * not wrap it) */
		assert_in_range(steps[i].start_ns, before[i] > 20000 ? before[i] - 20000 : 0, after[i]);
		assert_in_range(steps[i].start_ns + steps[i].dur_ns, before[i], after[i] + 20000);
		assert_in_range(steps[i].dur_ns, 1900000, 2100000 + (after[i] - before[i] - 2000000));
	}
	free(steps);
	assert_int_equal(pp_store_close(st, NULL, 0), 0);
}

static int hook_depth, hook_begins, hook_compile;

static void hook(int begin, int kind, const char *name, void *ud)
{
	(void)ud;
	hook_depth += begin ? 1 : -1;
	if (begin) {
		hook_begins++;
		if (kind == PP_COMPILE && name && strcmp(name, "compile") == 0)
			hook_compile++;
	}
}

static void test_phase_hook(void **state)
{
	(void)state;
	char spool[512];
	path_in_tmp(spool, sizeof spool, "hook.spool");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool}), 0);
	pp_set_phase_hook(hook, NULL);
	pp_step_begin(0);
	{
		PP_PHASE(PP_COMPILE, "compile");
		pp_phase_begin(PP_SPAN, "inner");
		pp_phase_end();
	}
	pp_step_end();
	pp_set_phase_hook(NULL, NULL);
	pp_phase_begin(PP_SPAN, "unobserved");
	pp_phase_end();
	assert_int_equal(pp_close(), 0);
	assert_int_equal(hook_begins, 3);
	assert_int_equal(hook_depth, 0);
	assert_int_equal(hook_compile, 1);
}

static void test_closed_is_noop(void **state)
{
	(void)state;
	assert_false(pp_is_open());
	pp_phase_begin(PP_STEP, "nothing");
	pp_phase_end();
	pp_mark("nothing");
	pp_counter("nothing", 1);
	assert_int_equal(pp_row("io", "i", (int64_t)1), -1);
	char spool[512];
	path_in_tmp(spool, sizeof spool, "no/such/dir/x.spool");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool}), -1);
	assert_non_null(strstr(pp_last_error(), "no/such/dir/x.spool"));
	assert_int_equal(pp_kind_from_name("compile"), PP_COMPILE);
	assert_string_equal(pp_kind_name(PP_FIRST_STEP), "first_step");
}

/* The spool never follows a link (a planted symlink cannot redirect it
 * onto someone's file), is private (0600), and its descriptor sits high,
 * close-on-exec, out of the program's range. */
static void test_spool_safety(void **state)
{
	(void)state;
	char victim[512], link[512], spool[512];
	path_in_tmp(victim, sizeof victim, "victim.txt");
	path_in_tmp(link, sizeof link, "planted.spool");
	FILE *f = fopen(victim, "w");
	assert_non_null(f);
	fputs("precious\n", f);
	fclose(f);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(pp_open(&(pp_options){.spool_path = link}), -1);
	assert_non_null(strstr(pp_last_error(), "planted.spool"));
	f = fopen(victim, "r");
	char buf[64] = {0};
	assert_non_null(fgets(buf, sizeof buf, f));
	fclose(f);
	assert_string_equal(buf, "precious\n");

	path_in_tmp(spool, sizeof spool, "safe.spool");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool}), 0);
	struct stat st;
	assert_int_equal(stat(spool, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* its descriptor: high and close-on-exec */
	int spool_fd = -1;
	for (int fd = 0; fd < 4096 && spool_fd < 0; fd++) {
		char lp[64], target[600];
		snprintf(lp, sizeof lp, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(lp, target, sizeof target - 1);
		if (n > 0) {
			target[n] = 0;
			if (strcmp(target, spool) == 0)
				spool_fd = fd;
		}
	}
	assert_true(spool_fd >= 64);
	assert_true(fcntl(spool_fd, F_GETFD) & FD_CLOEXEC);
	pp_mark("safe");
	assert_int_equal(pp_close(), 0);
}

/* The spool's checksum is zlib's crc32, bit for bit, at every length and
 * alignment, chained or not (the folded path takes 64 bytes and more). */
static void test_crc32_is_zlibs(void **state)
{
	(void)state;
	enum { N = 4096 };
	unsigned char *buf = malloc(N + 16);
	assert_non_null(buf);
	uint32_t x = 12345;
	for (int i = 0; i < N + 16; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (unsigned char)(x >> 16);
	}
	for (size_t len = 0; len <= 600; len++)
		for (size_t off = 0; off < 16; off += 5) {
			uint32_t want = (uint32_t)crc32(0L, buf + off, (uInt)len);
			assert_int_equal(pp_crc32(0, buf + off, len), want);
			/* chained: a header part, then the rest */
			size_t h = len / 3;
			assert_int_equal(pp_crc32(pp_crc32(0, buf + off, h), buf + off + h, len - h), want);
		}
	assert_int_equal(pp_crc32(0, buf, N), (uint32_t)crc32(0L, buf, N));
	assert_int_equal(pp_crc32(0x89abcdefu, buf + 3, N - 7), (uint32_t)crc32(0x89abcdefu, buf + 3, N - 7));
	free(buf);
}

/* Events carry TSC ticks exactly when the kernel calls the TSC invariant
 * (constant_tsc and nonstop_tsc in /proc/cpuinfo), whichever way the
 * recorder finds out. */
static void test_clock_kind_is_cpuinfos(void **state)
{
	(void)state;
	const char *force = getenv("PHASEPROF_CLOCK");
	if (force && strcmp(force, "mono") == 0)
		skip();
	int want = 0;
#if defined(__x86_64__)
	FILE *f = fopen("/proc/cpuinfo", "r");
	assert_non_null(f);
	char line[8192];
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "flags", 5) == 0) {
			want = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
			break;
		}
	fclose(f);
#endif
	pp_clock_init();
	assert_int_equal(pp_clock_kind(), want ? PP_CLOCK_TSC : PP_CLOCK_MONO);
}

/* The packed form gives back every field of every event, and a cut or
 * garbled payload is refused, never read past. */
static void test_events_pack(void **state)
{
	(void)state;
	enum { N = 64 };
	pp_event ev[N], back[N];
	memset(ev, 0, sizeof ev);
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ev[i].ts = i % 7 == 3 ? x : 1000000 + (uint64_t)i * 37; /* deltas of both signs */
		ev[i].type = (uint8_t)(i % 9);                         /* 0 and 8: stored raw */
		ev[i].kind = (uint8_t)(i % 3 ? i : 0);
		ev[i].reserved = (uint16_t)(i % 5 == 0 ? 1 : i % 11 == 0 ? 65535 : 0);
		ev[i].name = i % 4 ? (uint32_t)(x >> 32) : 0;
		ev[i].arg = i % 3 == 0 ? UINT64_MAX : i % 3 == 1 ? 0 : x;
	}
	unsigned char buf[N * PP_PACK_MAX];
	size_t n = pp_events_pack(ev, N, buf);
	assert_true(n > 0 && n <= sizeof buf);
	pp_unpack u = {.p = buf, .len = n};
	assert_int_equal(pp_events_unpack(&u, back, 10), 10); /* in batches */
	assert_int_equal(pp_events_unpack(&u, back + 10, N), N - 10);
	assert_int_equal(pp_events_unpack(&u, back, N), 0);
	assert_memory_equal(ev, back, sizeof ev);
	/* a begin and an end as the recorder writes them: a few bytes each */
	pp_event two[2] = {{.ts = 5000, .type = PP_EV_BEGIN, .name = 3, .arg = UINT64_MAX},
			   {.ts = 5030, .type = PP_EV_END}};
	assert_true(pp_events_pack(two, 2, buf) <= 8);
	/* every cut of the payload: events before the cut, then -1 or the end */
	n = pp_events_pack(ev, N, buf);
	for (size_t len = 0; len < n; len++) {
		pp_unpack c = {.p = buf, .len = len};
		long k, total = 0;
		while ((k = pp_events_unpack(&c, back, N)) > 0)
			total += k;
		assert_true(k == -1 || (k == 0 && total < N));
		assert_true(c.off <= len);
	}
	/* an endless varint, both arg flags */
	unsigned char bad[16];
	memset(bad, 0xff, sizeof bad);
	bad[0] = PP_EV_BEGIN;
	pp_unpack b = {.p = bad, .len = sizeof bad};
	assert_int_equal(pp_events_unpack(&b, back, N), -1);
	unsigned char both[2] = {PP_EV_BEGIN | PP_PACK_ARG | PP_PACK_ARG_NONE, 0};
	pp_unpack b2 = {.p = both, .len = 2};
	assert_int_equal(pp_events_unpack(&b2, back, N), -1);
}

int main(void)
{
	if (ppt_tmpdir(tmpdir, sizeof tmpdir, "pp-test-recorder") != 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_closed_is_noop), cmocka_unit_test(test_nesting),
		cmocka_unit_test(test_threads),        cmocka_unit_test(test_overflow_accounting),
		cmocka_unit_test(test_full_buffers_drain),
		cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_fork_follow),
		cmocka_unit_test(test_fork_disable),   cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt),        cmocka_unit_test(test_phase_hook),
		cmocka_unit_test(test_clock_alignment), cmocka_unit_test(test_spool_safety),
		cmocka_unit_test(test_crc32_is_zlibs), cmocka_unit_test(test_events_pack),
		cmocka_unit_test(test_clock_kind_is_cpuinfos), cmocka_unit_test(test_long_rows),
		cmocka_unit_test(test_batch_loss_counted), cmocka_unit_test(test_rows_over_drains),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	return ppt_rmtree(tmpdir) != 0 ? 1 : rc;
}
