/* bench_report — report generation time and file size for recordings of
 * about 10^5 and 10^6 events (target: < 2 s and < 10 MB at 10^6), plus the
 * Chrome export for comparison. Prints figures; asserts nothing.
 * usage: bench_report [EVENTS...]   (default: 100000 1000000) */
#include "fixture.h"
#include "viewers.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double file_mb(const char *p)
{
	struct stat s;
	return stat(p, &s) == 0 ? (double)s.st_size / 1e6 : -1;
}

int main(int argc, char **argv)
{
	long sizes[8] = {100000, 1000000};
	int n = 2;
	if (argc > 1) {
		n = 0;
		for (int i = 1; i < argc && n < 8; i++)
			sizes[n++] = atol(argv[i]);
	}
	char *dir = vfix_tmpdir();
	if (!dir)
		return 1;
	printf("%-10s %10s %8s %9s %9s %10s %9s %10s %9s\n", "events", "recorded", "lost", "ingest_s", "db_MB",
	       "report_s", "html_MB", "chrome_s", "json_MB");
	for (int k = 0; k < n; k++) {
		char db[1200], html[1200], json[1200];
		snprintf(db, sizeof db, "%s/bench%d.db", dir, k);
		snprintf(html, sizeof html, "%s/bench%d.html", dir, k);
		snprintf(json, sizeof json, "%s/bench%d.json", dir, k);
		/* each op is 2 events (start, end); 500 ops per step */
		int ops = 500;
		int steps = (int)(sizes[k] / 2 / ops);
		if (steps < 1)
			steps = 1;
		vfix_opts o = {.label = "bench", .steps = steps, .ops_per_step = ops, .graph_versions = 2,
			       .graph_nodes = 200, .samples = 1000, .threads = 2,
			       .buffer_events = 65536, .max_buffers = 65536};
		double t0 = now();
		int64_t run = vfix_record(db, dir, &o);
		double t1 = now();
		if (run < 0)
			return 1;
		char err[512];
		pp_store *st = pp_store_open(db, PP_STORE_READ, err, sizeof err);
		if (!st) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		pp_run_info ri;
		pp_store_run(st, run, &ri);
		double r0 = now();
		if (pp_view_write(st, "html", NULL, html, err, sizeof err) != 0) {
			fprintf(stderr, "report: %s\n", err);
			return 1;
		}
		double r1 = now();
		if (pp_view_write(st, "chrome", NULL, json, err, sizeof err) != 0) {
			fprintf(stderr, "chrome: %s\n", err);
			return 1;
		}
		double r2 = now();
		pp_store_close(st, NULL, 0);
		printf("%-10ld %10lld %8lld %9.2f %9.1f %10.3f %9.2f %10.3f %9.1f\n", sizes[k], (long long)ri.events,
		       (long long)ri.events_lost, t1 - t0, file_mb(db), r1 - r0, file_mb(html), r2 - r1, file_mb(json));
		fflush(stdout);
		remove(db);
		remove(html);
		remove(json);
	}
	printf("(ingest_s includes recording the fixture; targets at 10^6 events: report < 2 s, html < 10 MB)\n");
	vfix_rmdir(dir);
	return 0;
}
