/* bench_diag — how long the rules and the diff take on large recordings.
 * Builds a database of runs with N steps (each with nested phases and the
 * allocator counters), then times pp_diag_analyze and pp_diag_diff.
 * Prints figures; asserts nothing.  usage: bench_diag [DIR] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diagnostics.h"
#include "phaseprof.h"
#include "store.h"
#include "store_internal.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static int64_t make_run(pp_store *st, int n_steps, double growth)
{
	sqlite3 *db = pp_store_db(st);
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	sqlite3_exec(db, "INSERT INTO runs(label, status) VALUES('bench', 'complete')", NULL, NULL, NULL);
	int64_t run = sqlite3_last_insert_rowid(db);
	int64_t k_step = pp_store_intern(st, "step"), k_c = pp_store_intern(st, "compile"),
		k_a = pp_store_intern(st, "alloc"), k_g = pp_store_intern(st, "build");
	int64_t c_count = pp_store_intern(st, "alloc.count"), c_nodes = pp_store_intern(st, "graph.nodes");
	sqlite3_stmt *sp, *ct;
	sqlite3_prepare_v2(db, "INSERT INTO spans(run_id,tid,kind,name_id,start_ns,end_ns,depth,parent_id,step) "
			       "VALUES(?1,1,?2,?3,?4,?5,?6,?7,?8)", -1, &sp, NULL);
	sqlite3_prepare_v2(db, "INSERT INTO counters(run_id,tid,name_id,ts_ns,value) VALUES(?1,1,?2,?3,?4)",
			   -1, &ct, NULL);
	int64_t t = 1000000;
	double count = 0;
	for (int i = 0; i < n_steps; i++) {
		int64_t d = (int64_t)(1e6 * (1 + growth * i / n_steps) * (0.9 + 0.2 * urand()));
		int64_t ids[4];
		struct { int kind; int64_t name, s, e; int parent; } ph[4] = {
			{PP_STEP, k_step, t, t + d, -1},
			{PP_GRAPH_BUILD, k_g, t + 1000, t + 20000, 0},
			{PP_COMPILE, k_c, t + 20000, t + 90000, 0},
			{PP_MEMORY_ALLOC, k_a, t + 30000, t + 40000, 2},
		};
		for (int p = 0; p < 4; p++) {
			sqlite3_bind_int64(sp, 1, run);
			sqlite3_bind_int(sp, 2, ph[p].kind);
			sqlite3_bind_int64(sp, 3, ph[p].name);
			sqlite3_bind_int64(sp, 4, ph[p].s);
			sqlite3_bind_int64(sp, 5, ph[p].e);
			sqlite3_bind_int(sp, 6, p == 0 ? 0 : p == 3 ? 2 : 1);
			if (ph[p].parent >= 0)
				sqlite3_bind_int64(sp, 7, ids[ph[p].parent]);
			else
				sqlite3_bind_null(sp, 7);
			sqlite3_bind_int64(sp, 8, i);
			sqlite3_step(sp);
			sqlite3_reset(sp);
			ids[p] = sqlite3_last_insert_rowid(db);
		}
		count += 100;
		int64_t vals[2] = {c_count, c_nodes};
		double v[2] = {count, 100 + (growth > 0 ? i : 0)};
		for (int c = 0; c < 2; c++) {
			sqlite3_bind_int64(ct, 1, run);
			sqlite3_bind_int64(ct, 2, vals[c]);
			sqlite3_bind_int64(ct, 3, t + d - 1000);
			sqlite3_bind_double(ct, 4, v[c]);
			sqlite3_step(ct);
			sqlite3_reset(ct);
		}
		t += d + 5000;
	}
	sqlite3_finalize(sp);
	sqlite3_finalize(ct);
	char sql[128];
	snprintf(sql, sizeof sql, "UPDATE runs SET duration_ns=%lld WHERE id=%lld", (long long)t, (long long)run);
	sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	return run;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	char path[512], err[512];
	snprintf(path, sizeof path, "%s/bench_diag_%d.db", dir, (int)getpid());
	pp_store *st = pp_store_open(path, PP_STORE_WRITE, err, sizeof err);
	if (!st) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("%-8s %-8s %10s %12s %12s %9s\n", "steps", "series", "spans", "analyze ms", "diff ms", "findings");
	int sizes[] = {1000, 10000, 50000};
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		for (int g = 0; g < 2; g++) {
			int64_t a = make_run(st, sizes[s], g ? 2.0 : 0.0);
			int64_t b = make_run(st, sizes[s], 0.0);
			pp_diag_result r;
			double t0 = now_s();
			if (pp_diag_analyze(st, a, &r) != 0) {
				fprintf(stderr, "%s\n", r.error);
				return 1;
			}
			double t1 = now_s();
			pp_diff d;
			if (pp_diag_diff(st, a, st, b, &d) != 0) {
				fprintf(stderr, "%s\n", d.error);
				return 1;
			}
			double t2 = now_s();
			printf("%-8d %-8s %10d %12.1f %12.1f %9d\n", sizes[s], g ? "growing" : "flat",
			       sizes[s] * 4, 1e3 * (t1 - t0), 1e3 * (t2 - t1), r.n);
			pp_diag_result_free(&r);
			pp_diff_free(&d);
		}
	}
	pp_store_close(st, NULL, 0);
	unlink(path);
	return 0;
}
