/* test_viewers.c — the report, the exports, graph rendering and stats on
 * databases recorded through the recorder API and ingested. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "fixture.h"
#include "phaseprof.h"
#include "store.h"
#include "store_internal.h"
#include "viewers.h"

#ifndef CHECK_CHROME
#define CHECK_CHROME "check_chrome.py"
#endif
#ifndef CHECK_PERFETTO
#define CHECK_PERFETTO "check_perfetto.py"
#endif

static char *dir;
static char db[1024];
static int64_t run_slow, run_fixed, run_graphs, run_overlap, run_lossy;
static int64_t g_empty, g_one, g_big;

static int graph_id_row(sqlite3_stmt *row, void *ud)
{
	int64_t *ids = ud;
	int64_t v = sqlite3_column_int64(row, 1);
	if (v == 1)
		ids[0] = sqlite3_column_int64(row, 0);
	else if (v == 2)
		ids[1] = sqlite3_column_int64(row, 0);
	else if (v == 3)
		ids[2] = sqlite3_column_int64(row, 0);
	return 0;
}

/* A run with graph snapshots of 0, 1 and 5,000 nodes. */
static int64_t record_graphs(void)
{
	char spool[1100];
	snprintf(spool, sizeof spool, "%s/graphs.spool", dir);
	if (pp_open(&(pp_options){.spool_path = spool, .label = "graphs"}) != 0)
		return -1;
	pp_graph_snapshot("empty", 1, NULL, 0, NULL, 0);
	pp_graph_node one = {"only", "Const", NULL, NULL, 0};
	pp_graph_snapshot("one", 2, &one, 1, NULL, 0);
	enum { N = 5000 };
	pp_graph_node *nodes = calloc(N, sizeof *nodes);
	pp_graph_edge *edges = calloc(2 * N, sizeof *edges);
	char (*names)[40] = calloc(N, sizeof *names);
	static const char *const ops[] = {"MatMul", "Add", "Relu", "Mul", "Sub", "Const", "Identity"};
	int ne = 0;
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "block%d/unit%d/op%d", i / 10, i / 3, i);
		nodes[i] = (pp_graph_node){names[i], ops[i % 7], "cpu:0", NULL, (double)(i % 97) * 100};
		if (i > 0)
			edges[ne++] = (pp_graph_edge){i - 1, i, 0};
		if (i > 10)
			edges[ne++] = (pp_graph_edge){i - 10, i, 1};
	}
	pp_graph_snapshot("big", 3, nodes, N, edges, ne);
	free(nodes);
	free(edges);
	free(names);
	pp_phase_begin(PP_GRAPH_BUILD, "graph_build");
	pp_phase_end();
	if (pp_close() != 0)
		return -1;
	char err[512];
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	pp_ingest_result res;
	if (!st || pp_store_ingest(st, spool, NULL, &res, err, sizeof err) != 0)
		return -1;
	int64_t ids[3] = {0};
	pp_store_query(st, "SELECT id, version FROM graphs WHERE run_id = ?1", res.run_id, graph_id_row, ids);
	g_empty = ids[0];
	g_one = ids[1];
	g_big = ids[2];
	pp_store_close(st, NULL, 0);
	return res.run_id;
}

/* A run whose ops overlap partially on one thread (an executor timing
 * kernels itself): they cannot nest on one track and must get a lane. */
static int64_t record_overlap(void)
{
	char spool[1100];
	snprintf(spool, sizeof spool, "%s/overlap.spool", dir);
	if (pp_open(&(pp_options){.spool_path = spool, .label = "overlap"}) != 0)
		return -1;
	pp_step_begin(0);
	uint64_t t = pp_now();
	pp_op("a", "A", t, t + 10000, 0);
	pp_op("b", "B", t + 5000, t + 15000, 0);
	pp_op("c", "C", t + 6000, t + 7000, 0);
	pp_step_end();
	/* a 600-frame deep CPU stack: the flame graph and folded output must
	 * cope (recursion, path length) */
	for (int64_t i = 1; i <= 600; i++) {
		char sym[32];
		snprintf(sym, sizeof sym, "frame_%lld", (long long)i);
		pp_row("frames", "iiss", i, 0x1000 + i, sym, "/bin/deep");
		pp_row("stacks", "iii", i, i - 1, i);
	}
	for (int i = 0; i < 5; i++)
		pp_row("samples", "iii", (int64_t)0, (int64_t)i, (int64_t)600);
	pp_phase_begin(PP_SPAN, "never closed");  /* open at the end of the run */
	if (pp_close() != 0)
		return -1;
	char err[512];
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	pp_ingest_result res;
	if (!st || pp_store_ingest(st, spool, NULL, &res, err, sizeof err) != 0)
		return -1;
	pp_store_close(st, NULL, 0);
	return res.run_id;
}

/* A run that overflows the recorder's buffers: losses must be shown. */
static int64_t record_lossy(void)
{
	char spool[1100];
	snprintf(spool, sizeof spool, "%s/lossy.spool", dir);
	if (pp_open(&(pp_options){.spool_path = spool, .label = "lossy", .buffer_events = 64, .max_buffers = 1,
				  .flush_ms = 1000, .full_policy = PP_FULL_DROP}) != 0)
		return -1;
	for (int i = 0; i < 200000; i++) {
		pp_phase_begin(PP_SPAN, "tiny");
		pp_phase_end();
	}
	pp_recorder_stats rs;
	pp_stats(&rs);
	if (pp_close() != 0 || rs.events_lost == 0)
		return -1;
	char err[512];
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	pp_ingest_result res;
	if (!st || pp_store_ingest(st, spool, NULL, &res, err, sizeof err) != 0)
		return -1;
	pp_store_close(st, NULL, 0);
	return res.run_id;
}

static int setup(void **state)
{
	(void)state;
	dir = vfix_tmpdir();
	if (!dir)
		return -1;
	snprintf(db, sizeof db, "%s/run.db", dir);
	vfix_opts slow = {.scenario = "growing-graph", .variant = "slow", .label = "slow", .steps = 30,
			  .ops_per_step = 6, .graph_versions = 5, .graph_nodes = 8, .gpu = 1, .samples = 100,
			  .threads = 2};
	vfix_opts fixed = {.scenario = "growing-graph", .variant = "ops-built-once", .label = "fixed", .steps = 30,
			   .ops_per_step = 4, .graph_versions = 1, .graph_nodes = 8};
	run_slow = vfix_record(db, dir, &slow);
	run_fixed = vfix_record(db, dir, &fixed);
	run_graphs = record_graphs();
	run_overlap = record_overlap();
	run_lossy = record_lossy();
	if (run_slow < 0 || run_fixed < 0 || run_graphs < 0 || run_overlap < 0 || run_lossy < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	vfix_rmdir(dir);
	return 0;
}

static pp_store *open_db(void)
{
	char err[512];
	pp_store *st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
	if (!st)
		fail_msg("%s", err);
	return st;
}

static char *write_format(const char *format, const pp_view_opts *o, const char *file, long *len)
{
	char path[1200], err[512];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	pp_store *st = open_db();
	int rc = pp_view_write(st, format, o, path, err, sizeof err);
	pp_store_close(st, NULL, 0);
	if (rc != 0)
		fail_msg("%s: %s", format, err);
	char *b = vfix_slurp(path, len);
	assert_non_null(b);
	return b;
}

static void test_report_self_contained(void **state)
{
	(void)state;
	long len;
	char *h = write_format("html", NULL, "report.html", &len);
	assert_true(len > 1000);
	assert_null(strstr(h, "http://"));
	assert_null(strstr(h, "https://"));
	assert_null(strstr(h, "<script src"));
	assert_null(strstr(h, "<link"));
	assert_null(strstr(h, "@import"));
	assert_null(strstr(h, "url("));
	/* sections, summary first */
	const char *sections[] = {"<h1>Summary</h1>", "What is slow", "Scenarios: variants side by side",
				  "Phase waterfall", "Step time per iteration", "Timeline", "<h2 id=\"ops-",
				  "Memory and counters", "<h2 id=\"graph-", "CPU flame graph", "Libraries loaded",
				  "File I/O", "Run metadata", NULL};
	const char *prev = h;
	for (int i = 0; sections[i]; i++) {
		const char *p = strstr(h, sections[i]);
		if (!p)
			fail_msg("section '%s' missing", sections[i]);
		if (i < 3)   /* the summary comes before any run panel */
			assert_true(p >= prev);
		prev = p;
	}
	assert_true(strstr(h, "What is slow") < strstr(h, "Phase waterfall"));
	/* numbers: first-step vs steady op times from the recorded pp_op durations */
	char first[32], steady[32];
	pp_fmt_dur(first, sizeof first, (double)(VFIX_MATMUL_FIRST_NS * 3));   /* 3 MatMuls in step 0 */
	pp_fmt_dur(steady, sizeof steady, (double)(VFIX_MATMUL_STEADY_NS * 3));
	assert_non_null(strstr(h, first));
	assert_non_null(strstr(h, steady));
	assert_non_null(strstr(h, "dense/MatMul"));
	/* scenario comparison with a speed-up and the baseline marked */
	assert_non_null(strstr(h, "(baseline)"));
	assert_non_null(strstr(h, "ops-built-once"));
	assert_non_null(strstr(h, "×</span>"));
	/* graph grew: 8 → 20 nodes over 5 snapshots, side by side */
	assert_non_null(strstr(h, "8 nodes in v1 → 20 nodes in v5"));
	assert_non_null(strstr(h, "first snapshot"));
	assert_non_null(strstr(h, "last snapshot"));
	assert_non_null(strstr(h, "class=\"node\""));
	/* flame graph frames, GPU status, timeline data */
	assert_non_null(strstr(h, "sgemm_kernel"));
	assert_non_null(strstr(h, "GPU tracing</dt><dd>available"));
	assert_non_null(strstr(h, "no CUDA driver"));
	assert_non_null(strstr(h, "GPU 0 stream 7"));
	assert_non_null(strstr(h, "worker-0"));
	assert_non_null(strstr(h, "/usr/lib/libopenblas.so.0"));
	assert_non_null(strstr(h, "/data/weights.npy"));
	assert_non_null(strstr(h, "bytes_in_use"));
	assert_non_null(strstr(h, "fragmentation"));
	/* the 5,000-node graph is grouped, with a note */
	assert_non_null(strstr(h, "5000 nodes exceed the drawing cap"));
	/* marks travel with the timeline data */
	assert_non_null(strstr(h, "\"training done\""));
	/* the open span is drawn and said so */
	assert_non_null(strstr(h, "still open at the end"));
	free(h);
}

static void test_report_lod(void **state)
{
	(void)state;
	/* A tiny budget forces level-of-detail merging: merged blocks and the
	 * note appear; the page stays valid. */
	pp_view_opts o = {.run_id = run_slow, .timeline_budget = 50};
	long len;
	char *h = write_format("html", &o, "lod.html", &len);
	assert_non_null(strstr(h, "Level of detail"));
	assert_non_null(strstr(h, "are merged into"));
	assert_null(strstr(h, "http://"));
	/* only the selected run has a panel */
	char want[64], other[64];
	snprintf(want, sizeof want, "id=\"run-%lld\"", (long long)run_slow);
	snprintf(other, sizeof other, "id=\"run-%lld\"", (long long)run_fixed);
	assert_non_null(strstr(h, want));
	assert_null(strstr(h, other));
	free(h);
}

/* 20,000 tiny spans 1 us apart on one thread, a budget of 100 items: the
 * tiny items merge into blocks and the page holds a few hundred entries
 * (the gaps between them were longer than the shortest item kept, so each
 * stayed an entry of its own: 10^7 spans made a 36 MB page). */
static void test_report_lod_bounded(void **state)
{
	(void)state;
	char spool[1100], ldb[1100], html[1100], err[512];
	snprintf(spool, sizeof spool, "%s/tiny.spool", dir);
	snprintf(ldb, sizeof ldb, "%s/tiny.db", dir);
	snprintf(html, sizeof html, "%s/tiny.html", dir);
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .label = "tiny", .max_buffers = 4096}), 0);
	uint64_t t = pp_now();
	for (int i = 0; i < 20000; i++, t += 1000)
		pp_phase_at(PP_SPAN, "tiny", t, t + 10 + (uint64_t)(i % 7));
	assert_int_equal(pp_close(), 0);
	pp_store *st = pp_store_open(ldb, PP_STORE_WRITE, err, sizeof err);
	assert_non_null(st);
	pp_ingest_result res;
	assert_int_equal(pp_store_ingest(st, spool, NULL, &res, err, sizeof err), 0);
	pp_view_opts o = {.run_id = res.run_id, .timeline_budget = 100};
	assert_int_equal(pp_view_write(st, "html", &o, html, err, sizeof err), 0);
	pp_store_close(st, NULL, 0);
	long len;
	char *h = vfix_slurp(html, &len);
	assert_non_null(h);
	const char *d = strstr(h, "\"d\":[");
	assert_non_null(d);
	long numbers = 0;
	for (const char *p = d + 5; *p && *p != ']'; p++)
		numbers += *p == ',';
	long entries = (numbers + 1) / 5;
	assert_true(entries > 0);
	if (entries > 300)
		fail_msg("%ld timeline entries for a budget of 100", entries);
	assert_non_null(strstr(h, "are merged into"));
	free(h);
}

static void test_report_losses(void **state)
{
	(void)state;
	pp_view_opts o = {.run_id = run_lossy};
	long len;
	char *h = write_format("html", &o, "lossy.html", &len);
	assert_non_null(strstr(h, "dropped by the recorder"));
	assert_non_null(strstr(h, "<dt>lost</dt><dd>"));
	assert_null(strstr(h, "<dt>lost</dt><dd>0 events"));
	free(h);
}

/* The overview's recorded time is the recording's wall time: a child run
 * (a DataLoader worker) lies inside its parent's time; it once showed
 * 16.8 s for a 6.5 s program, the children's times summed. */
static void test_report_recorded_wall_time(void **state)
{
	(void)state;
	char kids[1100], path[1200], err[512];
	snprintf(kids, sizeof kids, "%s/children.db", dir);
	vfix_opts o = {.label = "main", .steps = 3, .ops_per_step = 1};
	int64_t ids[4];
	for (int i = 0; i < 4; i++)
		assert_true((ids[i] = vfix_record(kids, dir, &o)) > 0);
	pp_store *st = pp_store_open(kids, PP_STORE_WRITE, err, sizeof err);
	if (!st)
		fail_msg("%s", err);
	/* main 6.5 s from t = 100 s; two workers of 3 s inside it; another
	 * recording of 1 s, later, on its own */
	const int64_t s0 = 100000000000LL, sec = 1000000000LL;
	const int64_t start[4] = {s0, s0 + 1 * sec, s0 + 2 * sec, s0 + 20 * sec};
	const int64_t dur[4] = {6500000000LL, 3 * sec, 3 * sec, 1 * sec};
	const int64_t parent[4] = {0, ids[0], ids[0], 0};
	for (int i = 0; i < 4; i++) {
		char sql[256];
		snprintf(sql, sizeof sql,
			 "UPDATE runs SET start_unix_ns = %lld, duration_ns = %lld, "
			 "parent_run = NULLIF(%lld, 0) WHERE id = %lld",
			 (long long)start[i], (long long)dur[i], (long long)parent[i], (long long)ids[i]);
		assert_int_equal(sqlite3_exec(pp_store_db(st), sql, NULL, NULL, NULL), SQLITE_OK);
	}
	snprintf(path, sizeof path, "%s/children.html", dir);
	assert_int_equal(pp_view_write(st, "html", NULL, path, err, sizeof err), 0);
	pp_store_close(st, NULL, 0);
	long len;
	char *h = vfix_slurp(path, &len);
	assert_non_null(h);
	const char *card = strstr(h, "recorded time</div><div class=\"v\">");
	assert_non_null(card);
	if (strncmp(card + strlen("recorded time</div><div class=\"v\">"), "7.50 s<", 7) != 0)
		fail_msg("recorded time: %.80s", card);
	free(h);
}

static int run_checker(const char *file, const char *extra)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s/%s %s", CHECK_CHROME, dir, file, extra);
	return system(cmd);
}

static void test_chrome_valid(void **state)
{
	(void)state;
	long len;
	char *j = write_format("chrome", NULL, "trace.json", &len);
	assert_non_null(strstr(j, "\"traceEvents\""));
	assert_non_null(strstr(j, "\"ph\":\"M\""));
	assert_non_null(strstr(j, "\"ph\":\"C\""));
	assert_non_null(strstr(j, "\"name\":\"thread_name\""));
	free(j);
	/* 50 us first-step MatMul, 2 us steady MatMul, 0.7 us Relu: µs units */
	assert_int_equal(run_checker("trace.json", "--expect dense/MatMul=50 --expect dense/MatMul=2 "
				     "--expect dense/Relu=0.7 --expect sgemm_128x64=20 --flows 30"), 0);
}

static void test_chrome_overlap_lanes(void **state)
{
	(void)state;
	pp_view_opts o = {.run_id = run_overlap};
	long len;
	char *j = write_format("chrome", &o, "overlap.json", &len);
	/* b overlaps a partially: it must sit on another track ("+1" lane) */
	assert_non_null(strstr(j, " +1\""));
	free(j);
	assert_int_equal(run_checker("overlap.json", "--expect a=10 --expect b=10 --expect c=1"), 0);
}

/* Perfetto's protobuf trace, decoded back by check_perfetto.py (its own
 * wire-format reader): every span of every run (the overlapping one on an
 * overflow lane), mark and counter sample, exact to the ns. */
static void test_perfetto_roundtrip(void **state)
{
	(void)state;
	long len;
	char *b = write_format("perfetto", NULL, "trace.pftrace", &len);
	assert_true(len > 100);
	assert_int_equal(b[0], 0x0a); /* Trace.packet, length-delimited */
	free(b);
	char cmd[3200];
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s/trace.pftrace %s", CHECK_PERFETTO, dir, db);
	assert_int_equal(system(cmd), 0);
}

static int check_folded(const char *text, int *lines);

static void test_deep_stack(void **state)
{
	(void)state;
	pp_view_opts o = {.run_id = run_overlap};
	long len;
	int lines;
	char *f = write_format("folded", &o, "deep.folded", &len);
	assert_int_equal(check_folded(f, &lines), 0);
	assert_int_equal(lines, 1);
	/* chains are cut at 512 frames on the root side: the leaf stays */
	assert_true(strncmp(f, "frame_89;frame_90;", 18) == 0);
	assert_non_null(strstr(f, ";frame_600 5\n"));
	free(f);
	char *h = write_format("html", &o, "deep.html", &len);
	assert_non_null(strstr(h, "CPU flame graph"));
	assert_non_null(strstr(h, "frame_89"));
	free(h);
}

static void test_chrome_gzip(void **state)
{
	(void)state;
	pp_view_opts o = {.run_id = run_slow, .gzip = 1};
	long len;
	char *z = write_format("chrome", &o, "trace.json.gz", &len);
	assert_true(len > 20);
	assert_int_equal((unsigned char)z[0], 0x1f);
	assert_int_equal((unsigned char)z[1], 0x8b);
	free(z);
	pp_view_opts p = {.run_id = run_slow};
	long plen;
	char *plain = write_format("chrome", &p, "trace1.json", &plen);
	char path[1200];
	snprintf(path, sizeof path, "%s/trace.json.gz", dir);
	gzFile g = gzopen(path, "rb");
	assert_non_null(g);
	char *buf = malloc((size_t)plen + 16);
	int got = gzread(g, buf, (unsigned)plen + 16);
	gzclose(g);
	assert_int_equal(got, plen);
	assert_memory_equal(buf, plain, (size_t)plen);
	free(buf);
	free(plain);
	assert_int_equal(run_checker("trace.json.gz", ""), 0);
}

/* Every line: "frame;frame;... <integer>", no empty frames. */
static int check_folded(const char *text, int *lines)
{
	*lines = 0;
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		if (!nl)
			return -1;   /* last line must end with a newline */
		const char *sp = nl;
		while (sp > p && sp[-1] != ' ')
			sp--;
		if (sp == p || sp == nl)
			return -2;
		for (const char *d = sp; d < nl; d++)
			if (*d < '0' || *d > '9')
				return -3;
		if (atoll(sp) <= 0)
			return -4;
		const char *f = p;
		for (const char *q = p; q < sp - 1; q++)
			if (*q == ';') {
				if (q == f)
					return -5;
				f = q + 1;
			}
		if (f >= sp - 1)
			return -5;
		(*lines)++;
		p = nl + 1;
	}
	return 0;
}

static void test_folded(void **state)
{
	(void)state;
	pp_view_opts o = {.run_id = run_slow};
	long len;
	int lines;
	char *f = write_format("folded", &o, "samples.folded", &len);
	assert_int_equal(check_folded(f, &lines), 0);
	assert_int_equal(lines, 4);
	/* 100 samples, 6 in 10 at sgemm_kernel */
	assert_non_null(strstr(f, "main;train_loop;sgemm_kernel 60\n"));
	assert_non_null(strstr(f, "main;train_loop;relu_fwd 20\n"));
	assert_non_null(strstr(f, "main;load_weights 10\n"));
	assert_non_null(strstr(f, "main;train_loop 10\n"));
	free(f);
	o.folded_source = PP_FOLDED_SPANS;
	f = write_format("folded", &o, "spans.folded", &len);
	assert_int_equal(check_folded(f, &lines), 0);
	assert_true(lines > 3);
	assert_non_null(strstr(f, "main ("));
	assert_non_null(strstr(f, ";runtime_init;op_registration "));
	free(f);
	/* all runs: each stack rooted at its run */
	pp_view_opts all = {.folded_source = PP_FOLDED_SPANS};
	f = write_format("folded", &all, "all.folded", &len);
	assert_int_equal(check_folded(f, &lines), 0);
	char root[32];
	snprintf(root, sizeof root, "run %lld;", (long long)run_fixed);
	assert_non_null(strstr(f, root));
	free(f);
}

static int count_str(const char *h, const char *s)
{
	int n = 0;
	for (const char *p = strstr(h, s); p; p = strstr(p + 1, s))
		n++;
	return n;
}

static void render(int64_t gid, const char *fmt, int cap, pp_graph_render_info *info, char **text)
{
	pp_store *st = open_db();
	pp_out *o = pp_out_memory();
	char err[256];
	int rc = pp_graph_render(st, gid, fmt, cap, o, info, err, sizeof err);
	pp_store_close(st, NULL, 0);
	if (rc != 0)
		fail_msg("graph %lld: %s", (long long)gid, err);
	*text = strdup(pp_out_data(o, NULL));
	pp_out_close(o, NULL, 0);
}

static void test_graph_empty(void **state)
{
	(void)state;
	pp_graph_render_info info;
	char *s;
	assert_true(g_empty > 0);
	render(g_empty, "svg", 0, &info, &s);
	assert_int_equal(info.n_nodes, 0);
	assert_non_null(strstr(s, "<svg"));
	assert_non_null(strstr(s, "empty graph"));
	assert_int_equal(count_str(s, "class=\"node\""), 1);   /* the placeholder */
	free(s);
}

static void test_graph_one(void **state)
{
	(void)state;
	pp_graph_render_info info;
	char *s;
	render(g_one, "svg", 0, &info, &s);
	assert_int_equal(info.n_nodes, 1);
	assert_int_equal(info.shown_nodes, 1);
	assert_int_equal(info.clustered, 0);
	assert_int_equal(count_str(s, "class=\"node\""), 1);
	assert_int_equal(count_str(s, "class=\"edge\""), 0);
	assert_non_null(strstr(s, "only"));
	free(s);
	render(g_one, "dot", 0, &info, &s);
	assert_non_null(strstr(s, "digraph"));
	assert_non_null(strstr(s, "only"));
	free(s);
}

static void test_graph_5000(void **state)
{
	(void)state;
	pp_graph_render_info info;
	char *s;
	render(g_big, "svg", 0, &info, &s);
	assert_int_equal(info.n_nodes, 5000);
	assert_int_equal(info.clustered, 1);
	assert_true(info.shown_nodes <= PP_GRAPH_DEFAULT_CAP);
	assert_true(info.shown_nodes > 1);
	assert_non_null(strstr(info.note, "5000 nodes exceed the drawing cap"));
	assert_int_equal(count_str(s, "class=\"node\""), info.shown_nodes);
	free(s);
	/* a smaller cap folds the rarest op types into one node */
	render(g_big, "svg", 4, &info, &s);
	assert_int_equal(info.shown_nodes, 4);
	assert_non_null(strstr(s, "other op types"));
	free(s);
	/* DOT has no cap: every node is written */
	render(g_big, "dot", 0, &info, &s);
	assert_int_equal(info.shown_nodes, 5000);
	assert_non_null(strstr(s, "block499/unit1666/op4999"));
	free(s);
}

static void test_graph_export_errors(void **state)
{
	(void)state;
	pp_store *st = open_db();
	char err[512];
	pp_out *o = pp_out_memory();
	pp_view_opts opts = {.run_id = run_overlap};
	assert_int_equal(pp_view_write_out(st, "svg", &opts, o, err, sizeof err), -1);
	assert_non_null(strstr(err, "has no graph snapshot"));
	pp_view_opts bad = {.run_id = run_slow, .graph_id = g_big};
	assert_int_equal(pp_view_write_out(st, "dot", &bad, o, err, sizeof err), -1);
	assert_non_null(strstr(err, "belongs to run"));
	pp_out_close(o, NULL, 0);
	pp_store_close(st, NULL, 0);
}

static void test_csv(void **state)
{
	(void)state;
	pp_view_opts o = {.run_id = run_overlap};
	long len;
	char *c = write_format("csv", &o, "phases.csv", &len);
	assert_true(strncmp(c, "run_id,tid,thread,kind,name,start_ns,end_ns,dur_ns,depth,step\n", 62) == 0);
	assert_non_null(strstr(c, ",step,"));
	/* the open span has empty end and duration */
	const char *open = strstr(c, "\"never closed\"");
	assert_non_null(open);
	const char *nl = strchr(open, '\n');
	int commas = 0;
	for (const char *p = open; p < nl; p++)
		commas += *p == ',';
	assert_int_equal(commas, 5);
	assert_non_null(strstr(open, ",,,"));
	free(c);
}

static void test_stats(void **state)
{
	(void)state;
	pp_store *st = open_db();
	char err[512];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(pp_stats_print(st, 0, 0, 80, f, err, sizeof err), 0);
	fclose(f);
	assert_non_null(strstr(buf, "growing-graph/slow"));
	assert_non_null(strstr(buf, "dense/MatMul"));
	assert_non_null(strstr(buf, "op_registration"));
	assert_non_null(strstr(buf, "graphs: #"));
	/* every line fits 80 columns (counting code points) */
	int line = 0, col = 0, maxcol = 0;
	for (const char *p = buf; *p; p++) {
		if (*p == '\n') {
			line++;
			col = 0;
			continue;
		}
		if (((unsigned char)*p & 0xc0) != 0x80)
			col++;
		if (col > maxcol)
			maxcol = col;
	}
	assert_true(line > 10);
	assert_true(maxcol <= 80);
	free(buf);
	/* JSON parses */
	char path[1200];
	snprintf(path, sizeof path, "%s/stats.json", dir);
	f = fopen(path, "w");
	assert_int_equal(pp_stats_print(st, run_slow, 1, 80, f, err, sizeof err), 0);
	fclose(f);
	char cmd[2600];
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c \"import json,sys; d=json.load(open('%s')); "
		 "r=d['runs'][0]; assert r['steps']==30, r['steps']; "
		 "assert any(o['name']=='dense/MatMul' and o['first_step_ns']==%d and o['steady_ns_per_step']==%d "
		 "for o in r['ops']), r['ops']; assert len(r['graphs'])==5\"",
		 path, 3 * VFIX_MATMUL_FIRST_NS, 3 * VFIX_MATMUL_STEADY_NS);
	assert_int_equal(system(cmd), 0);
	/* unknown run */
	f = fopen("/dev/null", "w");
	assert_int_equal(pp_stats_print(st, 999, 0, 80, f, err, sizeof err), -1);
	fclose(f);
	assert_non_null(strstr(err, "no run 999"));
	pp_store_close(st, NULL, 0);
}

static void test_errors(void **state)
{
	(void)state;
	pp_store *st = open_db();
	char err[512];
	pp_out *o = pp_out_memory();
	pp_view_opts opts = {.run_id = 999};
	assert_int_equal(pp_view_write_out(st, "chrome", &opts, o, err, sizeof err), -1);
	assert_non_null(strstr(err, "no run 999"));
	assert_int_equal(pp_view_write_out(st, "pdf", NULL, o, err, sizeof err), -1);
	assert_non_null(strstr(err, "unknown format 'pdf'"));
	pp_out_close(o, NULL, 0);
	/* unwritable output names the file */
	assert_int_equal(pp_view_write(st, "chrome", NULL, "/nonexistent-dir/x.json", err, sizeof err), -1);
	assert_non_null(strstr(err, "/nonexistent-dir/x.json"));
	pp_store_close(st, NULL, 0);
}

static void test_out_formatting(void **state)
{
	(void)state;
	pp_out *o = pp_out_memory();
	pp_out_us(o, 1234567);
	pp_out_putc(o, ' ');
	pp_out_us(o, 5000);
	pp_out_putc(o, ' ');
	pp_out_us(o, 7);
	pp_out_putc(o, ' ');
	pp_out_i64(o, -42);
	pp_out_putc(o, ' ');
	pp_out_json_str(o, "a\"b\\c\n</script>");
	pp_out_putc(o, ' ');
	pp_out_html(o, "<a & 'b'>");
	pp_out_putc(o, ' ');
	pp_out_json_str(o, "ok \xc3\xa9 bad \xff\xc3 end");   /* é is kept, stray bytes replaced */
	assert_string_equal(pp_out_data(o, NULL),
			    "1234.567 5 0.007 -42 \"a\\\"b\\\\c\\n\\u003c/script>\" &lt;a &amp; &#39;b&#39;&gt; "
			    "\"ok \xc3\xa9 bad \\ufffd\\ufffd end\"");
	pp_out_close(o, NULL, 0);
	char b[32];
	assert_string_equal(pp_fmt_dur(b, sizeof b, (double)1500), "1.5 us");
	assert_string_equal(pp_fmt_dur(b, sizeof b, (double)2500000), "2.50 ms");
	assert_string_equal(pp_fmt_dur(b, sizeof b, (double)3200000000LL), "3.20 s");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_out_formatting),
		cmocka_unit_test(test_report_self_contained),
		cmocka_unit_test(test_report_lod),
		cmocka_unit_test(test_report_lod_bounded),
		cmocka_unit_test(test_report_losses),
		cmocka_unit_test(test_report_recorded_wall_time),
		cmocka_unit_test(test_chrome_valid),
		cmocka_unit_test(test_chrome_overlap_lanes),
		cmocka_unit_test(test_perfetto_roundtrip),
		cmocka_unit_test(test_chrome_gzip),
		cmocka_unit_test(test_deep_stack),
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_graph_empty),
		cmocka_unit_test(test_graph_one),
		cmocka_unit_test(test_graph_5000),
		cmocka_unit_test(test_graph_export_errors),
		cmocka_unit_test(test_csv),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
