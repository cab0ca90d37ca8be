/* Out-of-memory fault injection, SQLite-style (its test/malloc*.test): every
 * allocation the store, the ingest readers and SQLite make during (a) a
 * database create + ingest of a small spool and (b) an open + typed reads of
 * a database is failed in turn — the Nth only, then every one from the Nth
 * on — until a run hits no injected failure. Each run must end cleanly (an
 * error or success, never a crash), and afterwards, allocations on again:
 * the file passes PRAGMA integrity_check, holds the whole run or nothing of
 * it (ingest is one transaction per spool), a read that said 0 read all of
 * it, and nothing leaked (live allocations counted through the wrappers).
 *
 * Linked with -Wl,--wrap=malloc,... (tests/oom/CMakeLists.txt): only the
 * calls in our static libraries and this file are wrapped, libc's own are
 * not (asprintf, zlib's); SQLite's go through SQLITE_CONFIG_MALLOC. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "phaseprof.h"
#include "store.h"

/* ---- the fault injector ---- */

static _Atomic long alloc_seq;   /* allocations seen since arming */
static _Atomic long fail_at;     /* fail the fail_at-th (0: off) */
static _Atomic int fail_persist; /* and every one after it */
static _Atomic long fail_hits;   /* failures injected */

static int inject(void)
{
	long at = atomic_load(&fail_at);
	if (!at)
		return 0;
	long n = atomic_fetch_add(&alloc_seq, 1) + 1;
	if (n == at || (n > at && atomic_load(&fail_persist))) {
		atomic_fetch_add(&fail_hits, 1);
		return 1;
	}
	return 0;
}

static void arm(long n, int persist)
{
	atomic_store(&alloc_seq, 0);
	atomic_store(&fail_hits, 0);
	atomic_store(&fail_persist, persist);
	atomic_store(&fail_at, n);
}

static void disarm(void) { atomic_store(&fail_at, 0); }

/* Live pointers from the wrapped calls: an open-addressing set with
 * backward-shift deletion in static memory (the set must not allocate).
 * A pointer libc allocated (strdup inside libc, getline) and our code frees
 * is not in it and is simply freed. */
#define LIVE_CAP (1u << 20)
static uintptr_t live[LIVE_CAP];
static long live_n;
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;

static uint32_t slot_of(uintptr_t p) { return (uint32_t)((p >> 4) * 0x9E3779B1u) & (LIVE_CAP - 1); }

static void live_add(void *vp)
{
	if (!vp)
		return;
	uintptr_t p = (uintptr_t)vp;
	pthread_mutex_lock(&live_mu);
	if (live_n >= (long)LIVE_CAP / 2) {
		fprintf(stderr, "test_oom: live set full\n");
		abort();
	}
	uint32_t i = slot_of(p);
	while (live[i])
		i = (i + 1) & (LIVE_CAP - 1);
	live[i] = p;
	live_n++;
	pthread_mutex_unlock(&live_mu);
}

/* 1 when p was ours (and is now forgotten) */
static int live_del(void *vp)
{
	uintptr_t p = (uintptr_t)vp;
	int found = 0;
	pthread_mutex_lock(&live_mu);
	uint32_t i = slot_of(p);
	while (live[i] && live[i] != p)
		i = (i + 1) & (LIVE_CAP - 1);
	if (live[i]) {
		found = 1;
		live_n--;
		/* shift later members of the probe run back into the hole */
		uint32_t hole = i;
		for (uint32_t j = (i + 1) & (LIVE_CAP - 1); live[j]; j = (j + 1) & (LIVE_CAP - 1)) {
			uint32_t home = slot_of(live[j]);
			if (((j - home) & (LIVE_CAP - 1)) >= ((j - hole) & (LIVE_CAP - 1))) {
				live[hole] = live[j];
				hole = j;
			}
		}
		live[hole] = 0;
	}
	pthread_mutex_unlock(&live_mu);
	return found;
}

static long live_count(void)
{
	pthread_mutex_lock(&live_mu);
	long n = live_n;
	pthread_mutex_unlock(&live_mu);
	return n;
}

void *__real_malloc(size_t);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
char *__real_strdup(const char *);
char *__real_strndup(const char *, size_t);
void __real_free(void *);

void *__wrap_malloc(size_t n)
{
	if (inject())
		return NULL;
	void *p = __real_malloc(n);
	live_add(p);
	return p;
}

void *__wrap_calloc(size_t k, size_t n)
{
	if (inject())
		return NULL;
	void *p = __real_calloc(k, n);
	live_add(p);
	return p;
}

void *__wrap_realloc(void *old, size_t n)
{
	if (!old)
		return __wrap_malloc(n);
	if (n == 0) { /* glibc frees; nobody should rely on it */
		live_del(old);
		return __real_realloc(old, n);
	}
	if (inject())
		return NULL;
	int ours = live_del(old);
	void *p = __real_realloc(old, n);
	if (!p) {
		if (ours)
			live_add(old);
		return NULL;
	}
	live_add(p); /* a block libc made (ours false) is counted from here on */
	return p;
}

char *__wrap_strdup(const char *s)
{
	if (inject())
		return NULL;
	char *p = __real_strdup(s);
	live_add(p);
	return p;
}

char *__wrap_strndup(const char *s, size_t n)
{
	if (inject())
		return NULL;
	char *p = __real_strndup(s, n);
	live_add(p);
	return p;
}

void __wrap_free(void *p)
{
	if (p)
		live_del(p);
	__real_free(p);
}

/* SQLite's allocator, wrapped the same way */
static sqlite3_mem_methods sq_real;
static _Atomic long sq_live;

static void *sq_malloc(int n)
{
	if (inject())
		return NULL;
	void *p = sq_real.xMalloc(n);
	if (p)
		atomic_fetch_add(&sq_live, 1);
	return p;
}

static void sq_free(void *p)
{
	if (p)
		atomic_fetch_sub(&sq_live, 1);
	sq_real.xFree(p);
}

static void *sq_realloc(void *p, int n)
{
	if (inject())
		return NULL;
	return sq_real.xRealloc(p, n);
}

static int install_sqlite_allocator(void)
{
	if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sq_real) != SQLITE_OK)
		return -1;
	sqlite3_mem_methods m = sq_real;
	m.xMalloc = sq_malloc;
	m.xFree = sq_free;
	m.xRealloc = sq_realloc;
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK)
		return -1;
	return sqlite3_initialize() == SQLITE_OK ? 0 : -1;
}

/* ---- checks ---- */

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("test_oom: FAIL: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	failures++;
}

/* Row counts of every table, in name order, as one string ("" when the
 * file is missing or empty); and the integrity check's verdict. */
static int db_state(const char *path, char *out, size_t n, char *integrity, size_t in)
{
	struct stat sb;
	out[0] = 0;
	snprintf(integrity, in, "ok");
	if (stat(path, &sb) != 0 || sb.st_size == 0)
		return 0;
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int rc = -1;
	size_t len = 0;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto done;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL) != SQLITE_OK)
		goto done;
	if (sqlite3_step(s) == SQLITE_ROW)
		snprintf(integrity, in, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	s = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
			       "'sqlite_%' ORDER BY name",
			       -1, &s, NULL) != SQLITE_OK)
		goto done;
	while (sqlite3_step(s) == SQLITE_ROW) {
		char sql[256];
		sqlite3_stmt *c = NULL;
		const char *t = (const char *)sqlite3_column_text(s, 0);
		/* rows, and NULL cells: a bind that failed for memory stores NULL */
		snprintf(sql, sizeof sql, "SELECT * FROM \"%s\"", t);
		long long k = 0, nulls = 0;
		if (sqlite3_prepare_v2(db, sql, -1, &c, NULL) != SQLITE_OK)
			k = -1;
		while (k >= 0 && sqlite3_step(c) == SQLITE_ROW) {
			k++;
			for (int i = 0; i < sqlite3_column_count(c); i++)
				nulls += sqlite3_column_type(c, i) == SQLITE_NULL;
		}
		sqlite3_finalize(c);
		len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s=%lld/%lld ", t, k, nulls);
	}
	rc = len < n ? 0 : -1;
done:
	sqlite3_finalize(s);
	sqlite3_close(db);
	return rc;
}

static void remove_db(const char *path)
{
	char p[600];
	unlink(path);
	snprintf(p, sizeof p, "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", path);
	unlink(p);
	snprintf(p, sizeof p, "%s-journal", path);
	unlink(p);
}

/* ---- the runs ---- */

static char dir[256], spool[512], ref_db[512], work_db[512];
static char state_empty[8192], state_full[8192];

/* (a): create + ingest + close; 0 when every call succeeded */
static int run_ingest(const char *db)
{
	char err[512];
	pp_ingest_result r;
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	if (!st)
		return -1;
	int rc = pp_store_ingest(st, spool, NULL, &r, err, sizeof err);
	if (pp_store_close(st, err, sizeof err) != 0)
		rc = -1;
	return rc;
}

/* What (b) read from the reference, to compare a run that said 0 with. */
typedef struct read_result {
	int runs, steps, findings, phases, spans, counters, ops, threads, graphs, meta, nodes, each_spans,
		counter_names, kept;
	long long step_sum;
	char label[128], finding[64];
} read_result;
static read_result read_ref;

/* row counters for the pp_store_each_* scans */
static int count_kv(const pp_kv_row *r, void *ud)
{
	(void)r;
	++*(int *)ud;
	return 0;
}

static int count_span(const pp_span_row *r, void *ud)
{
	(void)r;
	++*(int *)ud;
	return 0;
}

static int count_node(const pp_graph_node_row *r, void *ud)
{
	(void)r;
	++*(int *)ud;
	return 0;
}

/* (b): open + typed reads; 0 when every call succeeded */
static int run_read(const char *db, read_result *o)
{
	char err[512];
	int rc = -1;
	pp_run_info *runs = NULL;
	pp_step_row *steps = NULL;
	pp_finding *f = NULL;
	pp_phase_total *ph = NULL;
	pp_span_list sl = {0};
	pp_counter_row *cr = NULL;
	pp_op_stat *ops = NULL;
	pp_thread_row *th = NULL;
	pp_graph_info *gr = NULL;
	char **names = NULL;
	pp_span_list kept = {0};
	memset(o, 0, sizeof *o);
	pp_store *st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
	if (!st)
		return -1;
	if (pp_store_runs(st, &runs, &o->runs) != 0 || o->runs < 1)
		goto done;
	snprintf(o->label, sizeof o->label, "%s", runs[0].label);
	if (pp_store_steps(st, runs[0].id, &steps, &o->steps) != 0)
		goto done;
	for (int i = 0; i < o->steps; i++)
		o->step_sum += steps[i].step + steps[i].dur_ns;
	if (pp_store_findings(st, 0, &f, &o->findings) != 0)
		goto done;
	if (o->findings > 0)
		snprintf(o->finding, sizeof o->finding, "%s", f[0].rule);
	if (pp_store_phase_totals(st, runs[0].id, &ph, &o->phases) != 0)
		goto done;
	if (pp_store_spans(st, runs[0].id, -1, &sl) != 0)
		goto done;
	o->spans = sl.n;
	if (pp_store_counter(st, runs[0].id, "loss", &cr, &o->counters) != 0)
		goto done;
	if (pp_store_ops(st, runs[0].id, 0, &ops, &o->ops) != 0 ||
	    pp_store_threads(st, runs[0].id, &th, &o->threads) != 0 ||
	    pp_store_graphs(st, runs[0].id, 0, &gr, &o->graphs) != 0 ||
	    pp_store_each_run_meta(st, runs[0].id, count_kv, &o->meta) != 0 ||
	    pp_store_each_span(st, runs[0].id, count_span, &o->each_spans) != 0)
		goto done;
	if (o->graphs > 0 && pp_store_each_graph_node(st, gr[0].id, count_node, &o->nodes) != 0)
		goto done;
	if (!(names = pp_store_counter_names(st, runs[0].id)))
		goto done;
	while (names[o->counter_names])
		o->counter_names++;
	int64_t left_out = 0;
	if (pp_store_spans_kept(st, runs[0].id, PP_SPANS_KEPT_PER_NAME, &kept, &left_out) != 0)
		goto done;
	o->kept = kept.n;
	rc = 0;
done:
	free(runs);
	free(steps);
	free(f);
	free(ph);
	free(cr);
	free(ops);
	free(th);
	free(gr);
	pp_store_free_names(names);
	pp_span_list_free(&sl);
	pp_span_list_free(&kept);
	if (pp_store_close(st, err, sizeof err) != 0)
		rc = -1;
	return rc;
}

/* the spool: a short training-like program under the recorder, in a child */
static int make_spool(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (pp_open(&(pp_options){.spool_path = spool, .label = "oom", .flush_ms = 5}) != 0)
			_exit(2);
		pp_meta("framework", "flow");
		pp_thread_name("main");
		pp_phase_begin(PP_RUNTIME_INIT, "runtime init");
		pp_phase_end();
		pp_phase_begin(PP_GRAPH_BUILD, "build");
		pp_graph_node nodes[3] = {{"x", "Placeholder", NULL, "4x4", 0},
					  {"w", "Variable", "cpu", "4x4", 0},
					  {"y", "MatMul", "cpu", "4x4", 120}};
		pp_graph_edge edges[2] = {{0, 2, 0}, {1, 2, 0}};
		pp_graph_snapshot("model", 1, nodes, 3, edges, 2);
		pp_phase_end();
		for (int i = 0; i < 6; i++) {
			pp_step_begin(i);
			uint64_t t = pp_now();
			pp_op("y", "MatMul", t, t + 1000, i);
			pp_counter("loss", 1.0 / (i + 1));
			if (i == 3)
				pp_mark("checkpoint");
			pp_step_end();
		}
		pp_row("libraries", "stiiii", "libfake.so", (int64_t)0, (int64_t)10, (int64_t)0,
		       (int64_t)1000, (int64_t)1);
		_exit(pp_close() == 0 ? 0 : 3);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return 0;
}

/* One fault-injection loop over run(); check() judges the state after. */
typedef int (*run_fn)(void);

static int ingest_once(void)
{
	remove_db(work_db);
	return run_ingest(work_db);
}

static void ingest_check(long n, int persist, int rc)
{
	char state[8192], integrity[256];
	if (db_state(work_db, state, sizeof state, integrity, sizeof integrity) != 0) {
		fail("ingest N=%ld%s: cannot read the database after", n, persist ? "+" : "");
		return;
	}
	if (strcmp(integrity, "ok") != 0)
		fail("ingest N=%ld%s: integrity_check: %s", n, persist ? "+" : "", integrity);
	if (rc == 0 && strcmp(state, state_full) != 0)
		fail("ingest N=%ld%s: succeeded but holds %s, not %s", n, persist ? "+" : "", state,
		     state_full);
	if (state[0] && strcmp(state, state_full) != 0 && strcmp(state, state_empty) != 0)
		fail("ingest N=%ld%s: holds part of the run: %s (whole: %s; empty: %s)", n,
		     persist ? "+" : "", state, state_full, state_empty);
}

static int read_once(void)
{
	read_result r;
	int rc = run_read(ref_db, &r);
	if (rc == 0 && memcmp(&r, &read_ref, sizeof r) != 0) {
		const read_result *x[2] = {&r, &read_ref};
		for (int i = 0; i < 2; i++)
			fprintf(stderr,
				"test_oom: %s: runs %d steps %d findings %d phases %d spans %d counters %d ops %d "
				"threads %d graphs %d meta %d nodes %d each_spans %d counter_names %d kept %d "
				"%lld (%s, %s)\n",
				i ? "the reference" : "read", x[i]->runs, x[i]->steps, x[i]->findings,
				x[i]->phases, x[i]->spans, x[i]->counters, x[i]->ops, x[i]->threads,
				x[i]->graphs, x[i]->meta, x[i]->nodes, x[i]->each_spans, x[i]->counter_names,
				x[i]->kept, x[i]->step_sum, x[i]->label, x[i]->finding);
		return 2; /* a short answer said 0 */
	}
	return rc;
}

static void read_check(long n, int persist, int rc)
{
	char state[8192], integrity[256];
	if (rc == 2)
		fail("read N=%ld%s: every call returned 0 but the answers differ from the reference", n,
		     persist ? "+" : "");
	if (db_state(ref_db, state, sizeof state, integrity, sizeof integrity) != 0 ||
	    strcmp(integrity, "ok") != 0 || strcmp(state, state_full) != 0)
		fail("read N=%ld%s: the database changed: %s (%s)", n, persist ? "+" : "", state, integrity);
}

static void loop(const char *what, run_fn run, void (*check)(long, int, int), int persist)
{
	long n, errors = 0;
	/* OOM_FROM=N starts there: to look at one failure again */
	const char *from = getenv("OOM_FROM");
	for (n = from ? atol(from) : 1;; n++) {
		long live0 = live_count(), sq0 = atomic_load(&sq_live);
		arm(n, persist);
		int rc = run();
		long hits = atomic_load(&fail_hits);
		disarm();
		long live1 = live_count(), sq1 = atomic_load(&sq_live);
		if (live1 != live0)
			fail("%s N=%ld%s: %ld allocations leaked", what, n, persist ? "+" : "",
			     live1 - live0);
		if (sq1 != sq0)
			fail("%s N=%ld%s: %ld SQLite allocations leaked", what, n, persist ? "+" : "",
			     sq1 - sq0);
		check(n, persist, rc);
		errors += rc != 0;
		if (hits == 0) {
			if (rc != 0)
				fail("%s: failed with no allocation failure (N=%ld)", what, n);
			break;
		}
		if (failures > 20)
			break;
	}
	printf("%s, %s: %ld allocations, each failed in turn: %ld runs returned an error, %ld succeeded\n",
	       what, persist ? "every one from the Nth on" : "the Nth", n - 1, errors, n - 1 - errors);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL; /* "ingest" or "read" */
	if (install_sqlite_allocator() != 0) {
		fprintf(stderr, "test_oom: cannot install the SQLite allocator\n");
		return 1;
	}
	snprintf(dir, sizeof dir, "/tmp/pp-oom-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(spool, sizeof spool, "%s/oom.spool", dir);
	snprintf(ref_db, sizeof ref_db, "%s/ref.db", dir);
	snprintf(work_db, sizeof work_db, "%s/work.db", dir);
	if (make_spool() != 0) {
		fprintf(stderr, "test_oom: cannot record the spool\n");
		return 1;
	}

	/* the two states a database may be in after (a) */
	char err[512], integrity[256];
	pp_store *st = pp_store_open(ref_db, PP_STORE_WRITE, err, sizeof err);
	if (!st || pp_store_close(st, err, sizeof err) != 0 ||
	    db_state(ref_db, state_empty, sizeof state_empty, integrity, sizeof integrity) != 0) {
		fprintf(stderr, "test_oom: %s\n", err);
		return 1;
	}
	remove_db(ref_db);
	/* the reference, with a finding for (b) to read; run twice so SQLite's
	 * lazily made globals exist before counting starts */
	for (int i = 0; i < 2; i++) {
		remove_db(ref_db);
		if (run_ingest(ref_db) != 0 || run_read(ref_db, &read_ref) != 0) {
			fprintf(stderr, "test_oom: the reference run failed\n");
			return 1;
		}
	}
	st = pp_store_open(ref_db, PP_STORE_WRITE, err, sizeof err);
	pp_finding f = {.run_id = 1,
			.rule = "oom_rule",
			.severity = "info",
			.score = 0.5,
			.title = "t",
			.evidence = "e",
			.fix = "x"};
	if (!st || pp_store_add_finding(st, &f) != 0 || pp_store_close(st, err, sizeof err) != 0)
		return 1;
	if (run_read(ref_db, &read_ref) != 0 || read_ref.findings != 1 || read_ref.steps != 6 ||
	    read_ref.counters != 6) {
		fprintf(stderr, "test_oom: the reference reads %d findings, %d steps, %d counters\n",
			read_ref.findings, read_ref.steps, read_ref.counters);
		return 1;
	}
	if (db_state(ref_db, state_full, sizeof state_full, integrity, sizeof integrity) != 0)
		return 1;
	/* state_full for (a) is without the finding */
	char state_ingested[8192];
	if (ingest_once() != 0 ||
	    db_state(work_db, state_ingested, sizeof state_ingested, integrity, sizeof integrity) != 0)
		return 1;

	if (getenv("OOM_VERBOSE"))
		printf("empty: %s\ningested: %s\nreference: %s\n", state_empty, state_ingested, state_full);
	char state_ref[8192];
	memcpy(state_ref, state_full, sizeof state_ref);
	if (!only || strcmp(only, "ingest") == 0) {
		memcpy(state_full, state_ingested, sizeof state_full);
		loop("create + ingest", ingest_once, ingest_check, 0);
		loop("create + ingest", ingest_once, ingest_check, 1);
	}
	if (!only || strcmp(only, "read") == 0) {
		memcpy(state_full, state_ref, sizeof state_full);
		loop("open + read", read_once, read_check, 0);
		loop("open + read", read_once, read_check, 1);
	}
	remove_db(ref_db);
	remove_db(work_db);
	unlink(spool);
	rmdir(dir);
	if (failures)
		fprintf(stderr, "test_oom: %d failures\n", failures);
	return failures ? 1 : 0;
}
