/* Ingest on hand-made and recorded spools: allocations bounded by the file,
 * killed vs truncated, CRC-checked summaries, samples stored as stack ids,
 * span folding, failed writes reported, hostile ELF files refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <elf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf_file.h"
#include "idmap.h"
#include "phaseprof.h"
#include "spool_build.h"
#include "spool_reader.h"
#include "store.h"
#include "store_internal.h"
#include "symbols.h"
#include "pp_testutil.h"
#include "recorder_internal.h"

static char tmpdir[256];

static void tmp(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", tmpdir, name);
}

static pp_store *fresh(const char *name)
{
	char db[512], err[512];
	tmp(db, sizeof db, name);
	unlink(db);
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	if (!st)
		fail_msg("%s", err);
	return st;
}

/* A 240-byte spool naming string and graph ids near 2^24 made ingest
 * allocate ~517 MB (dense maps sized by the largest id). */
static void test_sparse_ids_bounded(void **state)
{
	(void)state;
	char spool[512];
	tmp(spool, sizeof spool, "sparse.spool");
	sb b = {0};
	sb_header(&b, 10, 1, 1000);
	sb_string(&b, 0xfffffe, "x");
	sb_row(&b, "graphs", "itiiii", (int64_t)0xfffffe, "g", (int64_t)1, (int64_t)5, (int64_t)0, (int64_t)0);
	sb_end(&b, 2000);
	assert_true(b.n <= 256);
	assert_int_equal(sb_write(&b, spool), 0);
	free(b.p);
	pid_t pid = fork();
	if (pid == 0) {
		pp_store *st = fresh("sparse.db");
		char err[512];
		pp_ingest_result r;
		int rc = pp_store_ingest(st, spool, NULL, &r, err, sizeof err);
		pp_store_close(st, NULL, 0);
		_exit(rc == 0 && r.rows == 1 ? 0 : 1);
	}
	int status;
	struct rusage ru;
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* ru_maxrss in KiB: well below the 517 MB the dense maps took */
	assert_true(ru.ru_maxrss < 200 * 1024);
}

/* The room the recorder keeps after the header (a PAD chunk of zeros,
 * shrunk when losses are written into it) had the number of a packed events
 * chunk: a PAD of 25 x k bytes read as k events of type 0, counted as
 * recorded. And a malformed packed chunk's note was written where the run's
 * note overwrote it: never stored. */
static void test_pad_not_events_and_packed_note_kept(void **state)
{
	(void)state;
	char spool[512];
	tmp(spool, sizeof spool, "pad.spool");
	sb b = {0};
	sb_header(&b, 12, 1, 1000);
	static const unsigned char zeros[250];
	sb_chunk(&b, PP_CHUNK_PAD, 0, zeros, sizeof zeros, 0);
	sb_meta(&b, "k", "v", 0);
	sb_end(&b, 2000);
	assert_int_equal(sb_write(&b, spool), 0);
	free(b.p);
	pp_store *st = fresh("pad.db");
	pp_ingest_result r;
	char err[512];
	assert_int_equal(pp_store_ingest(st, spool, NULL, &r, err, sizeof err), 0);
	assert_int_equal(r.events, 0);
	pp_run_info ri;
	assert_int_equal(pp_store_run(st, r.run_id, &ri), 0);
	assert_string_equal(ri.status, "complete");
	assert_true(ri.note[0] == 0);

	/* a packed chunk that ends inside an event: said in the run's note */
	tmp(spool, sizeof spool, "badpack.spool");
	memset(&b, 0, sizeof b);
	sb_header(&b, 13, 1, 1000);
	static const unsigned char bad[5] = {0, 1, 2, 3, 4}; /* tag 0: a raw event, 4 bytes of it */
	sb_chunk(&b, PP_CHUNK_EVENTS_PACKED, 7, bad, sizeof bad, 0);
	sb_end(&b, 2000);
	assert_int_equal(sb_write(&b, spool), 0);
	free(b.p);
	assert_int_equal(pp_store_ingest(st, spool, NULL, &r, err, sizeof err), 0);
	assert_int_equal(pp_store_run(st, r.run_id, &ri), 0);
	assert_non_null(strstr(ri.note, "packed events chunk at offset 80 is malformed"));
	pp_store_close(st, NULL, 0);
}

/* A process killed by SIGKILL leaves whole chunks and no close record: its
 * run is "killed", not "truncated". */
static void test_killed_not_truncated(void **state)
{
	(void)state;
	char spool[512];
	tmp(spool, sizeof spool, "killed.spool");
	unlink(spool);
	pid_t pid = fork();
	if (pid == 0) {
		if (pp_open(&(pp_options){.spool_path = spool, .flush_ms = 5}) != 0)
			_exit(2);
		pp_phase_begin(PP_RUNTIME_INIT, "init");
		pp_mark("before the kill");
		usleep(300 * 1000);
		raise(SIGKILL);
		_exit(3);
	}
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFSIGNALED(status));
	pp_store *st = fresh("killed.db");
	pp_ingest_result r;
	char err[512];
	assert_int_equal(pp_store_ingest(st, spool, NULL, &r, err, sizeof err), 0);
	pp_run_info ri;
	assert_int_equal(pp_store_run(st, r.run_id, &ri), 0);
	assert_string_equal(ri.status, "killed");
	assert_non_null(strstr(ri.note, "without closing"));
	/* a torn tail is still "truncated" */
	sb b = {0};
	sb_header(&b, 11, 1, 0);
	sb_meta(&b, "k", "v", 0);
	sb_put(&b, "CHNK", 4);
	char torn[512];
	tmp(torn, sizeof torn, "torn.spool");
	assert_int_equal(sb_write(&b, torn), 0);
	free(b.p);
	assert_int_equal(pp_store_ingest(st, torn, NULL, &r, err, sizeof err), 0);
	assert_int_equal(pp_store_run(st, r.run_id, &ri), 0);
	assert_string_equal(ri.status, "truncated");
	assert_non_null(strstr(ri.note, "offset 112"));
	pp_store_close(st, NULL, 0);
}

/* A process killed by a fatal signal in the middle of a writev of several
 * pages leaves a torn chunk at its end; its parent's waitpid appends the
 * signal (pp_spool_note_exit). The EXIT chunk must not land after the
 * torn bytes, where it reads as part of them: the run then said
 * 'truncated' (or 'killed' without the signal) for an abort(). */
static void test_exit_after_torn_tail(void **state)
{
	(void)state;
	char spool[600], dir[512];
	tmp(dir, sizeof dir, "torn-exit");
	mkdir(dir, 0700);
	snprintf(spool, sizeof spool, "%s/4242-0.spool", dir);
	sb b = {0};
	sb_header(&b, 4242, 77, 0);
	sb_meta(&b, "k", "v", 0);
	/* a chunk header claiming 4096 bytes, 100 of them written */
	pp_chunk_header ch = {.magic = PP_CHUNK_MAGIC, .type = PP_CHUNK_META, .size = 4096};
	sb_put(&b, &ch, sizeof ch);
	char junk[100];
	memset(junk, 'x', sizeof junk);
	sb_put(&b, junk, sizeof junk);
	assert_int_equal(sb_write(&b, spool), 0);
	free(b.p);
	assert_int_equal(pp_spool_note_exit(dir, 4242, 77, -1, SIGABRT), 0);
	pp_store *st = fresh("torn-exit.db");
	pp_ingest_result r;
	char err[512];
	assert_int_equal(pp_store_ingest(st, spool, NULL, &r, err, sizeof err), 0);
	pp_run_info ri;
	assert_int_equal(pp_store_run(st, r.run_id, &ri), 0);
	assert_string_equal(ri.status, "crashed");
	assert_int_equal(ri.term_signal, SIGABRT);
	/* the wrong parent: left alone */
	assert_int_equal(pp_spool_note_exit(dir, 4242, 78, -1, SIGKILL), -1);
	pp_store_close(st, NULL, 0);
}

/* record ingests the program's spool while the program exits (a session of
 * one, with the spool's own account), then the whole session after its
 * wait: that slot is not read again, a child found later links to it, and
 * the wait's status overrules the spool's. */
static void write_exited(const char *path, uint32_t pid, uint32_t ppid, uint64_t start, const char *code)
{
	sb b = {0};
	sb_header(&b, pid, ppid, start);
	sb_meta(&b, "agent.exit_code", code, 0);
	sb_meta(&b, "agent.end", "exit", 0);
	sb_end(&b, 10);
	assert_int_equal(sb_write(&b, path), 0);
	free(b.p);
}

static void test_session_slot_ingested_early(void **state)
{
	(void)state;
	char top[512], child[512];
	tmp(top, sizeof top, "4242-0.spool");
	tmp(child, sizeof child, "4243-0.spool");
	write_exited(top, 4242, 1, 100, "0");
	write_exited(child, 4243, 4242, 200, "5");
	pp_store *st = fresh("early.db");
	pp_ingest_spool early = {.path = top};
	pp_ingest_session_opts so = {4242, 0, 0, 0, NULL, NULL, 0};
	assert_int_equal(pp_store_ingest_session(st, &early, 1, &so), 1);
	early.ingested = 1;
	int64_t r = early.run_id;
	pp_run_info ri;
	assert_int_equal(pp_store_run(st, r, &ri), 0);
	assert_int_equal(ri.exit_code, 0);

	/* the wait saw exit status 7; a child's spool turned up after */
	pp_ingest_spool sp[2] = {{.path = child}, early};
	so.exit_code = 7;
	assert_int_equal(pp_store_ingest_session(st, sp, 2, &so), 2);
	assert_int_equal(sp[0].run_id, r); /* session order: the parent first */
	assert_true(sp[0].is_last_top);
	assert_string_equal(sp[0].err, "");
	int nruns = 0;
	pp_run_info *runs = NULL;
	assert_int_equal(pp_store_runs(st, &runs, &nruns), 0);
	assert_int_equal(nruns, 2); /* not ingested twice */
	free(runs);
	assert_int_equal(pp_store_run(st, r, &ri), 0);
	assert_int_equal(ri.exit_code, 7);
	assert_string_equal(ri.status, "complete");
	assert_int_equal(pp_store_run(st, sp[1].run_id, &ri), 0);
	assert_int_equal(ri.parent_run, r);
	assert_int_equal(ri.exit_code, 5);

	/* killed after the agent closed its spool */
	sp[0].ingested = 1;
	sp[1].ingested = 1;
	so.exit_code = -1;
	so.term_signal = SIGKILL;
	assert_int_equal(pp_store_ingest_session(st, sp, 2, &so), 2);
	assert_int_equal(pp_store_run(st, r, &ri), 0);
	assert_int_equal(ri.term_signal, SIGKILL);
	assert_string_equal(ri.status, "killed");
	pp_store_close(st, NULL, 0);
}

/* record's view of a spool (exit status from the agent's metadata) goes
 * through the same checks as ingest: a chunk failing its CRC is not read. */
static void test_summary_checks_crc(void **state)
{
	(void)state;
	char spool[512], err[512];
	tmp(spool, sizeof spool, "crc.spool");
	sb b = {0};
	sb_header(&b, 12, 1, 0);
	sb_meta(&b, "agent.exit_code", "7", 1); /* damaged */
	sb_meta(&b, "agent.exit_signal", "9", 0);
	sb_end(&b, 10);
	assert_int_equal(sb_write(&b, spool), 0);
	free(b.p);
	pp_spool_summary s;
	assert_int_equal(pp_spool_summarise(spool, &s, err, sizeof err), 0);
	assert_int_equal(s.pid, 12);
	assert_int_equal(s.exit_code, -1);
	assert_int_equal(s.exit_signal, 9);
	/* and a spool of another version is refused with the file named */
	b = (sb){0};
	sb_header(&b, 12, 1, 0);
	((pp_spool_header *)(void *)b.p)->version = 99;
	assert_int_equal(sb_write(&b, spool), 0);
	free(b.p);
	assert_int_equal(pp_spool_summarise(spool, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "crc.spool: spool version 99"));
}

__attribute__((noinline)) int pp_test_leaf_function(int x);
__attribute__((noinline)) int pp_test_leaf_function(int x)
{
	return x * 3 + 1;
}

/* Raw samples ("ip,ip,…" text from the agent) are symbolised by ingest and
 * stored once, as stack ids. */
static void test_samples_symbolised(void **state)
{
	(void)state;
	Dl_info di;
	assert_true(dladdr((void *)pp_test_leaf_function, &di) != 0);
	char self[512];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	assert_true(n > 0);
	self[n] = 0;
	uintptr_t ip = (uintptr_t)pp_test_leaf_function + 4, caller = (uintptr_t)test_samples_symbolised + 8;
	char text[64];
	snprintf(text, sizeof text, "%lx,%lx", (unsigned long)ip, (unsigned long)caller);
	char spool[512], err[512];
	tmp(spool, sizeof spool, "samples.spool");
	sb b = {0};
	sb_header(&b, 13, 1, 0);
	sb_row(&b, "libraries", "siiiiinnit", self, (int64_t)(uintptr_t)di.dli_fbase, (int64_t)1 << 20,
	       (int64_t)0, (int64_t)1, (int64_t)2, (int64_t)0, "exec");
	for (int i = 0; i < 3; i++)
		sb_row(&b, "samples", "iit", (int64_t)13, (int64_t)(100 + i), text);
	sb_end(&b, 1000);
	assert_int_equal(sb_write(&b, spool), 0);
	free(b.p);
	pp_store *st = fresh("samples.db");
	pp_ingest_result r;
	assert_int_equal(pp_store_ingest(st, spool, NULL, &r, err, sizeof err), 0);
	assert_int_equal(r.samples, 3);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM samples WHERE typeof(stack) = 'integer'"), 3);
	assert_int_equal(ppt_q_int(st, "SELECT count(DISTINCT stack) FROM samples"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM stacks"), 2);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM samples s JOIN stacks k ON k.run_id = s.run_id AND k.id = s.stack"
				" JOIN frames f ON f.run_id = k.run_id AND f.id = k.frame"
				" JOIN strings y ON y.id = f.symbol_id WHERE y.value = 'pp_test_leaf_function'"), 3);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM stacks k JOIN frames f ON f.run_id = k.run_id AND f.id = k.frame"
				" JOIN strings y ON y.id = f.symbol_id WHERE k.parent IS NULL"
				" AND y.value = 'test_samples_symbolised'"), 1);
	pp_store_close(st, NULL, 0);
}

/* Short leaf op spans past 10,000 per thread and name go to span_groups by
 * default; every span is kept on request. */
static void test_span_folding(void **state)
{
	(void)state;
	char spool[512], err[512];
	tmp(spool, sizeof spool, "fold.spool");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .max_buffers = 4096}), 0);
	pp_step_begin(0);
	for (int i = 0; i < 25000; i++) {
		pp_phase_begin(PP_OP, "matmul");
		pp_phase_end();
	}
	pp_step_end();
	assert_int_equal(pp_close(), 0);
	pp_store *st = fresh("fold.db");
	pp_ingest_result r;
	assert_int_equal(pp_store_ingest(st, spool, NULL, &r, err, sizeof err), 0);
	assert_int_equal(r.spans, 10001);
	assert_int_equal(r.spans_folded, 15000);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM spans WHERE kind = 21"), 10000);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM span_groups"), 1);
	assert_int_equal(ppt_q_int(st, "SELECT sum(count) FROM span_groups g JOIN spans p ON p.id = g.parent_id"
				" WHERE p.kind = 16 AND g.step = 0 AND g.depth = 1"), 15000);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM span_groups WHERE min_ns <= max_ns AND total_ns >= count * min_ns"), 1);
	pp_ingest_opts o = {.exit_code = -1, .keep_all_spans = 1};
	assert_int_equal(pp_store_ingest(st, spool, &o, &r, err, sizeof err), 0);
	assert_int_equal(r.spans, 25001);
	assert_int_equal(r.spans_folded, 0);
	pp_store_close(st, NULL, 0);
}

/* pp_store_spans hands rows over by (thread, start), a span before the
 * spans it opened at the same instant, whatever order the table holds them
 * in (rows of one thread out of start order, threads interleaved). */
static void test_spans_order(void **state)
{
	(void)state;
	pp_store *st = fresh("order.db");
	assert_int_equal(sqlite3_exec(pp_store_db(st),
				      "INSERT INTO spans(id,run_id,tid,kind,name_id,start_ns,end_ns,depth,parent_id) VALUES"
				      "(1,5,7,0,NULL,50,60,0,NULL),(2,5,3,0,NULL,40,90,0,NULL),(3,5,7,0,NULL,10,20,0,NULL),"
				      "(4,5,3,0,NULL,40,45,1,2),(5,5,3,0,NULL,5,6,0,NULL),(6,6,3,0,NULL,1,2,0,NULL),"
				      "(7,5,7,21,NULL,55,NULL,1,1)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	pp_span_list l;
	assert_int_equal(pp_store_spans(st, 5, -1, &l), 0);
	static const int64_t want[] = {5, 2, 4, 3, 1, 7};
	assert_int_equal(l.n, 6);
	for (int i = 0; i < l.n; i++)
		assert_int_equal(l.rows[i].id, want[i]);
	assert_int_equal(l.rows[5].end_ns, -1);
	assert_string_equal(l.rows[0].name, "");
	pp_span_list_free(&l);
	assert_int_equal(pp_store_spans(st, 5, 21, &l), 0);
	assert_int_equal(l.n, 1);
	pp_span_list_free(&l);
	pp_store_close(st, NULL, 0);
}

/* Phase totals count what span_groups folded: the same recording ingested
 * by default and with keep_all_spans gives the same counts and times per
 * kind, an op nested in an op stays uncounted, and the span-name total
 * includes the grouped spans. */
static void test_groups_in_totals(void **state)
{
	(void)state;
	char spool[512], err[512];
	tmp(spool, sizeof spool, "groups.spool");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .max_buffers = 4096}), 0);
	for (int step = 0; step < 3; step++) {
		pp_step_begin(step);
		for (int i = 0; i < 6000; i++) {
			pp_phase_begin(PP_OP, i & 1 ? "matmul" : "relu");
			pp_phase_end();
		}
		/* leaf ops inside an op: folded, and nested in their own kind */
		pp_phase_begin(PP_OP, "block");
		for (int i = 0; i < 4000; i++) {
			pp_phase_begin(PP_OP, "matmul");
			pp_phase_end();
		}
		pp_phase_end();
		for (int i = 0; i < 5000; i++) {
			pp_phase_begin(PP_SPAN, "tick");
			pp_phase_end();
		}
		pp_step_end();
	}
	assert_int_equal(pp_close(), 0);
	pp_store *a = fresh("groups_a.db"), *b = fresh("groups_b.db");
	pp_ingest_result ra, rb;
	pp_ingest_opts keep = {.exit_code = -1, .keep_all_spans = 1};
	assert_int_equal(pp_store_ingest(a, spool, NULL, &ra, err, sizeof err), 0);
	assert_int_equal(pp_store_ingest(b, spool, &keep, &rb, err, sizeof err), 0);
	assert_true(ra.spans_folded > 10000);
	assert_int_equal(rb.spans_folded, 0);
	assert_true(ppt_q_int(a, "SELECT count(*) FROM span_groups WHERE kind = 0") > 0);
	pp_phase_total *ta, *tb;
	int na, nb;
	assert_int_equal(pp_store_phase_totals(a, ra.run_id, &ta, &na), 0);
	assert_int_equal(pp_store_phase_totals(b, rb.run_id, &tb, &nb), 0);
	assert_int_equal(na, nb);
	int64_t ops = -1;
	for (int i = 0; i < na; i++) {
		assert_int_equal(ta[i].kind, tb[i].kind);
		assert_int_equal(ta[i].count, tb[i].count);
		assert_int_equal(ta[i].total_ns, tb[i].total_ns);
		assert_int_equal(ta[i].max_ns, tb[i].max_ns);
		if (ta[i].kind == PP_OP)
			ops = ta[i].count;
	}
	/* 6000 leaf ops and one block per step; the block's 4000 are inside it */
	assert_int_equal(ops, 3 * 6001);
	int64_t ta_ns, tb_ns, ca, cb;
	assert_int_equal(pp_store_span_name_total(a, ra.run_id, "matmul", &ta_ns, &ca), 0);
	assert_int_equal(pp_store_span_name_total(b, rb.run_id, "matmul", &tb_ns, &cb), 0);
	assert_int_equal(ca, 3 * 7000);
	assert_int_equal(ca, cb);
	assert_int_equal(ta_ns, tb_ns);
	free(ta);
	free(tb);
	pp_store_close(a, NULL, 0);
	pp_store_close(b, NULL, 0);
}

static int count_span(const pp_span_row *r, void *ud)
{
	int64_t *n = ud;
	(void)r;
	++*n;
	return 0;
}

/* What the diagnostics and the report's timeline read of a keep_all_spans
 * recording (pp_store_spans_kept) is what a default ingest of the same
 * spool keeps one by one, row for row, and the rest is counted; on a
 * default recording nothing is left out. pp_store_each_span streams every
 * row. */
static void test_spans_kept_matches_default(void **state)
{
	(void)state;
	char spool[512], err[512];
	tmp(spool, sizeof spool, "kept.spool");
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .max_buffers = 4096}), 0);
	for (int step = 0; step < 3; step++) {
		pp_step_begin(step);
		for (int i = 0; i < 6000; i++) {
			pp_phase_begin(PP_OP, i & 1 ? "matmul" : "relu");
			pp_phase_end();
		}
		pp_phase_begin(PP_OP, "block"); /* an op with children: always kept */
		for (int i = 0; i < 4000; i++) {
			pp_phase_begin(PP_OP, "matmul");
			pp_phase_end();
		}
		pp_phase_end();
		for (int i = 0; i < 5000; i++) {
			pp_phase_begin(PP_SPAN, "tick");
			pp_phase_end();
		}
		pp_step_end();
	}
	assert_int_equal(pp_close(), 0);
	pp_store *a = fresh("kept_a.db"), *b = fresh("kept_b.db");
	pp_ingest_result ra, rb;
	pp_ingest_opts keep = {.exit_code = -1, .keep_all_spans = 1};
	assert_int_equal(pp_store_ingest(a, spool, NULL, &ra, err, sizeof err), 0);
	assert_int_equal(pp_store_ingest(b, spool, &keep, &rb, err, sizeof err), 0);
	assert_true(ra.spans_folded > 10000);
	pp_span_list la, lb;
	int64_t left = -1;
	assert_int_equal(pp_store_spans(a, ra.run_id, -1, &la), 0);
	assert_int_equal(pp_store_spans_kept(b, rb.run_id, PP_SPANS_KEPT_PER_NAME, &lb, &left), 0);
	assert_int_equal(left, ra.spans_folded);
	assert_int_equal(la.n, lb.n);
	for (int i = 0; i < la.n; i++) {
		assert_int_equal(la.rows[i].tid, lb.rows[i].tid);
		assert_int_equal(la.rows[i].kind, lb.rows[i].kind);
		assert_string_equal(la.rows[i].name, lb.rows[i].name);
		assert_int_equal(la.rows[i].start_ns, lb.rows[i].start_ns);
		assert_int_equal(la.rows[i].end_ns, lb.rows[i].end_ns);
		assert_int_equal(la.rows[i].depth, lb.rows[i].depth);
		assert_int_equal(la.rows[i].step, lb.rows[i].step);
	}
	pp_span_list_free(&lb);
	assert_int_equal(pp_store_spans_kept(a, ra.run_id, PP_SPANS_KEPT_PER_NAME, &lb, &left), 0);
	assert_int_equal(left, 0);
	assert_int_equal(lb.n, la.n);
	pp_span_list_free(&la);
	pp_span_list_free(&lb);
	int64_t n = 0;
	assert_int_equal(pp_store_each_span(b, rb.run_id, count_span, &n), 0);
	assert_int_equal(n, rb.spans);
	pp_store_close(a, NULL, 0);
	pp_store_close(b, NULL, 0);
}

/* A write that fails (here the losses row, refused by a trigger) fails the
 * ingest with the spool named; nothing of the run is kept. */
static void test_failed_write_is_an_error(void **state)
{
	(void)state;
	char spool[512], err[512];
	tmp(spool, sizeof spool, "loss.spool");
	sb b = {0};
	sb_header(&b, 14, 1, 0);
	unsigned char loss[16] = {5};
	memcpy(loss + 8, "events", 6);
	sb_chunk(&b, PP_CHUNK_LOSS, 3, loss, 14, 0);
	sb_end(&b, 10);
	assert_int_equal(sb_write(&b, spool), 0);
	free(b.p);
	pp_store *st = fresh("loss.db");
	/* the store opens every file with triggers off: on for this one, made here */
	assert_int_equal(sqlite3_db_config(pp_store_db(st), SQLITE_DBCONFIG_ENABLE_TRIGGER, 1, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(pp_store_db(st), "CREATE TRIGGER no_losses BEFORE INSERT ON losses"
				      " BEGIN SELECT RAISE(ABORT, 'disk says no'); END;", NULL, NULL, NULL), SQLITE_OK);
	pp_ingest_result r;
	assert_int_equal(pp_store_ingest(st, spool, NULL, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "loss.spool"));
	assert_non_null(strstr(err, "losses"));
	assert_null(strchr(err, '\n'));
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM runs"), 0);
	assert_int_equal(sqlite3_exec(pp_store_db(st), "DROP TRIGGER no_losses", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(pp_store_ingest(st, spool, NULL, &r, err, sizeof err), 0);
	assert_int_equal(ppt_q_int(st, "SELECT count FROM losses"), 5);
	pp_store_close(st, NULL, 0);
}

/* ELF headers whose table offsets overflow when added to their sizes are
 * refused (record --sample read through them and crashed). */
/* A zeroed 64-bit ELF file of 4096 bytes with its header's identity and
 * table entry sizes set. */
static Elf64_Ehdr *elf_blank(unsigned char *f)
{
	memset(f, 0, 4096);
	Elf64_Ehdr *h = (Elf64_Ehdr *)(void *)f;
	memcpy(h->e_ident, ELFMAG, SELFMAG);
	h->e_ident[EI_CLASS] = ELFCLASS64;
	h->e_phentsize = sizeof(Elf64_Phdr);
	h->e_shentsize = sizeof(Elf64_Shdr);
	return h;
}

static void test_hostile_elf(void **state)
{
	(void)state;
	unsigned char f[4096];
	Elf64_Ehdr *h = elf_blank(f);
	h->e_shoff = UINT64_MAX - 63; /* + shnum * 64 wraps to a small number */
	h->e_shnum = 2;
	pp_elf e;
	assert_int_equal(pp_elf_open_mem(f, sizeof f, &e), -2);
	h->e_shoff = 0;
	h->e_shnum = 0;
	h->e_phoff = UINT64_MAX - 55;
	h->e_phnum = 1;
	assert_int_equal(pp_elf_open_mem(f, sizeof f, &e), -2);
	/* a symbol table whose offset + size wraps: skipped, not read */
	h->e_phoff = 0;
	h->e_phnum = 0;
	h->e_shoff = 512;
	h->e_shnum = 2;
	Elf64_Shdr *sh = (Elf64_Shdr *)(void *)(f + 512);
	sh[0].sh_type = SHT_SYMTAB;
	sh[0].sh_link = 1;
	sh[0].sh_offset = UINT64_MAX - 8;
	sh[0].sh_size = 4096;
	sh[1].sh_type = SHT_STRTAB;
	sh[1].sh_offset = 0;
	sh[1].sh_size = 64;
	assert_int_equal(pp_elf_open_mem(f, sizeof f, &e), 0);
	pp_elf_sym *syms;
	size_t n;
	assert_int_equal(pp_elf_functions(&e, &syms, &n), 0);
	assert_int_equal(n, 0);
	/* and the same file on disk through symbolisation */
	char path[512];
	tmp(path, sizeof path, "hostile.so");
	h->e_shoff = UINT64_MAX - 63;
	FILE *o = fopen(path, "wb");
	assert_non_null(o);
	assert_int_equal(fwrite(f, 1, sizeof f, o), sizeof f);
	fclose(o);
	pp_symbols *s = pp_symbols_new();
	assert_int_equal(pp_symbols_add_module(s, path, 0x400000), 0);
	const char *name, *module;
	char buf[128];
	pp_symbols_lookup(s, 0x400100, &name, &module, buf, sizeof buf);
	assert_string_equal(module, "?");
	pp_symbols_free(s);
}

/* The id map ingest re-keys through: values by (a, b), replaced in place,
 * kept across growth, keys differing in one half apart. */
static void test_idmap(void **state)
{
	(void)state;
	pp_idmap m = {0};
	assert_int_equal(pp_idmap_get(&m, 1, 2), 0);
	for (uint64_t i = 1; i <= 5000; i++) {
		assert_int_equal(pp_idmap_put(&m, i, i % 7, (int64_t)i * 3), 0);
		assert_int_equal(pp_idmap_put(&m, i % 7, i, (int64_t)i * 5), 0);
	}
	/* below 7 both puts name the key (i, i): the second value stays */
	for (uint64_t i = 1; i <= 5000; i++) {
		assert_int_equal(pp_idmap_get(&m, i, i % 7), (int64_t)i * (i < 7 ? 5 : 3));
		assert_int_equal(pp_idmap_get(&m, i % 7, i), (int64_t)i * 5);
	}
	assert_int_equal(pp_idmap_get(&m, 5001, 0), 0);
	/* put replaces; at counts in place and adds a missing key as 0 */
	assert_int_equal(pp_idmap_put(&m, 10, 3, 42), 0);
	assert_int_equal(pp_idmap_get(&m, 10, 3), 42);
	int64_t *v = pp_idmap_at(&m, 10, 3);
	assert_non_null(v);
	++*v;
	assert_int_equal(pp_idmap_get(&m, 10, 3), 43);
	v = pp_idmap_at(&m, 9999, 9999);
	assert_non_null(v);
	assert_int_equal(*v, 0);
	*v = 7;
	assert_int_equal(pp_idmap_get(&m, 9999, 9999), 7);
	pp_idmap_free(&m);
	assert_int_equal(pp_idmap_get(&m, 10, 3), 0);
}

/* The dynamic string table alone decides what a program links: the whole
 * file also holds string constants, so a program that merely mentions
 * "libmpi.so" (as this test does) was taken for an MPI program. */
static void test_dynstr(void **state)
{
	(void)state;
	static const char mention[] = "libmpi.so";
	pp_elf e;
	assert_int_equal(pp_elf_open("/proc/self/exe", &e), 0);
	assert_non_null(memmem(e.p, e.n, mention, strlen(mention)));
	assert_int_equal(pp_elf_dynstr_has(&e, mention, 0), 0);
	assert_int_equal(pp_elf_dynstr_has(&e, "libsqlite3.so", 0), 1);
	assert_int_equal(pp_elf_dynstr_has(&e, "sqlite3_open_v2", 1), 1);
	assert_int_equal(pp_elf_dynstr_has(&e, "sqlite3_open_v", 1), 0);
	pp_elf_close(&e);
	/* a dynamic segment or string table outside the file: nothing read */
	unsigned char f[4096];
	Elf64_Ehdr *h = elf_blank(f);
	h->e_phoff = 64;
	h->e_phnum = 2;
	Elf64_Phdr *ph = (Elf64_Phdr *)(void *)(f + 64);
	ph[0].p_type = PT_LOAD;
	ph[0].p_vaddr = 0x1000;
	ph[0].p_offset = 0;
	ph[0].p_filesz = sizeof f;
	ph[1].p_type = PT_DYNAMIC;
	ph[1].p_offset = UINT64_MAX - 8;
	ph[1].p_filesz = 64;
	assert_int_equal(pp_elf_open_mem(f, sizeof f, &e), 0);
	assert_int_equal(pp_elf_dynstr_has(&e, "x", 0), 0);
	ph[1].p_offset = 1024;
	Elf64_Dyn *d = (Elf64_Dyn *)(void *)(f + 1024);
	d[0].d_tag = DT_STRTAB;
	d[0].d_un.d_ptr = 0x1000 + 2048;
	d[1].d_tag = DT_STRSZ;
	d[1].d_un.d_val = UINT64_MAX - 100; /* past the segment */
	memcpy(f + 2048, "\0libx.so\0", 10);
	assert_int_equal(pp_elf_dynstr_has(&e, "libx.so", 0), 0);
	d[1].d_un.d_val = 10;
	assert_int_equal(pp_elf_dynstr_has(&e, "libx.so", 1), 1);
}

/* A database created by the store is written without syncs and left as one
 * rollback-journal file in 4 KiB pages; appending to an existing file
 * commits to the WAL without syncs or automatic checkpoints (its own pages
 * change only in the checkpoint at close, which syncs) and leaves one
 * file too. */
static void test_fresh_database(void **state)
{
	(void)state;
	char db[512], wal[520], err[512];
	tmp(db, sizeof db, "fresh.db");
	snprintf(wal, sizeof wal, "%s-wal", db);
	unlink(db);
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(ppt_q_int(st, "PRAGMA synchronous"), 0);
	assert_int_equal(ppt_q_int(st, "PRAGMA page_size"), 4096);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(access(wal, F_OK), -1);
	struct stat sb;
	assert_int_equal(stat(db, &sb), 0);
	assert_true(sb.st_size < 1 << 20); /* 64 KiB pages: ~3 MB of empty tables */
	st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	assert_int_equal(ppt_q_int(st, "PRAGMA synchronous"), 0);
	assert_int_equal(ppt_q_int(st, "PRAGMA wal_autocheckpoint"), 0);
	assert_int_equal(pp_store_intern(st, "appended") > 0, 1);
	assert_int_equal(pp_store_close(st, err, sizeof err), 0);
	assert_int_equal(access(wal, F_OK), -1);
	st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
	assert_non_null(st);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(pp_store_db(st), "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(s, 0), "delete");
	sqlite3_finalize(s);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM strings WHERE value = 'appended'"), 1);
	pp_store_close(st, NULL, 0);
}

int main(void)
{
	if (ppt_tmpdir(tmpdir, sizeof tmpdir, "pp-test-ingest") != 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparse_ids_bounded),
		cmocka_unit_test(test_pad_not_events_and_packed_note_kept),
		cmocka_unit_test(test_killed_not_truncated),
		cmocka_unit_test(test_exit_after_torn_tail),
		cmocka_unit_test(test_session_slot_ingested_early),
		cmocka_unit_test(test_summary_checks_crc),
		cmocka_unit_test(test_samples_symbolised),
		cmocka_unit_test(test_span_folding),
		cmocka_unit_test(test_groups_in_totals),
		cmocka_unit_test(test_spans_kept_matches_default),
		cmocka_unit_test(test_spans_order),
		cmocka_unit_test(test_failed_write_is_an_error),
		cmocka_unit_test(test_hostile_elf),
		cmocka_unit_test(test_idmap),
		cmocka_unit_test(test_dynstr),
		cmocka_unit_test(test_fresh_database),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	return ppt_rmtree(tmpdir) != 0 ? 1 : rc;
}
