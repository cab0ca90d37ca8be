/*
 * cmd_merge.c — `phaseprof merge A.db B.db … -o job.db [--force]`
 *
 * Joins the per-rank databases of one distributed job (`mpirun … phaseprof
 * record -o job-%r.db`) into one, aligns the ranks' clocks and runs the
 * diagnostics over the whole job. Refuses databases of different jobs (or
 * without a rank) unless --force. The output is written beside the
 * destination and renamed into place when everything succeeded.
 *
 * The clock alignment itself is the store's (store/store_align.c:
 * pp_store_align_ranks); this file keeps the options and the printing.
 */
#include "cli.h"
#include "diagnostics.h"
#include "pp_grow.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_merge_summary[] = "join the per-rank databases of a distributed job, clocks aligned";

static void usage(FILE *o)
{
	fprintf(o,
		"usage: phaseprof merge A.db B.db ... -o job.db [--force] [--no-diag]\n"
		"\n"
		"Copies every run of the per-rank databases of one job (recorded with\n"
		"`mpirun -np N phaseprof record -o job-%%r.db -- ./prog`) into job.db, aligns\n"
		"the ranks' clocks on the collectives they share (MPI_Init, barriers,\n"
		"allreduces, init_process_group), prints each rank's offset with its\n"
		"uncertainty and runs the diagnostics over the job.\n"
		"\n"
		"  -o FILE    the merged database (must not exist)\n"
		"  --force    merge databases of different jobs, without a rank, or\n"
		"             holding the same rank twice\n"
		"  --no-diag  skip the diagnostics over the job (the findings each input\n"
		"             already held are kept)\n");
}

/* Aligns one job's clocks (pp_store_align_ranks) and prints each rank's
 * offset: 0, or -1 (pp_store_error says why; the ranks aligned before the
 * failure are printed). */
static int align_job(pp_store *st, const pp_rank_run *ranks, int n)
{
	pp_rank_align *a = calloc((size_t)n, sizeof *a);
	if (!a)
		return -1;
	int done = pp_store_align_ranks(st, ranks, n, a);
	if (done < 0) {
		free(a);
		return -1;
	}
	printf("job %s: %d rank%s, clocks aligned to rank %d (run %lld, host %s)\n", ranks[0].job, n,
	       n == 1 ? "" : "s", ranks[0].rank, (long long)ranks[0].run_id, ranks[0].host);
	printf("  %5s %6s  %-20s %-10s %14s %14s  %s\n", "rank", "run", "host", "status", "offset", "uncertainty",
	       "aligned on");
	for (int i = 0; i < done; i++) {
		const pp_rank_run *r = &ranks[i];
		char off[32], unc[32];
		snprintf(off, sizeof off, "%+.3f ms", (double)a[i].offset_ns / 1e6);
		if (i > 0 && !a[i].events)
			snprintf(unc, sizeof unc, "unknown");
		else
			snprintf(unc, sizeof unc, "+-%.3f ms", (double)(i == 0 ? 0 : a[i].uncertainty_ns) / 1e6);
		printf("  %5d %6lld  %-20.20s %-10s %14s %14s  %s\n", r->rank, (long long)r->run_id, r->host, r->status,
		       off, unc, a[i].how);
	}
	free(a);
	return done == n ? 0 : -1;
}

static void remove_db(const char *path)
{
	char p[PATH_MAX + 8];
	unlink(path);
	snprintf(p, sizeof p, "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", path);
	unlink(p);
	snprintf(p, sizeof p, "%s-journal", path);
	unlink(p);
}

int cmd_merge(int argc, char **argv)
{
	const char *out = NULL;
	int force = 0, nin = 0, rc = 1, diag = 1;
	const char **in = calloc((size_t)argc, sizeof *in);
	if (!in)
		return 1;
	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			usage(stdout);
			free(in);
			return 0;
		} else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			out = argv[++i];
		} else if (strcmp(argv[i], "--force") == 0) {
			force = 1;
		} else if (strcmp(argv[i], "--no-diag") == 0) {
			diag = 0;
		} else if (argv[i][0] == '-') {
			cli_error("merge: unknown option '%s' (see 'phaseprof merge --help')", argv[i]);
			free(in);
			return 2;
		} else {
			in[nin++] = argv[i];
		}
	}
	if (!out || nin == 0) {
		cli_error("merge: %s (phaseprof merge A.db B.db ... -o job.db)",
			  !out ? "no output given (-o job.db)" : "no database to merge");
		free(in);
		return 2;
	}
	if (access(out, F_OK) == 0) {
		cli_error("merge: %s exists; merge writes a new database (remove it or choose another name)", out);
		free(in);
		return 2;
	}

	/* every input readable, one job, each rank once */
	char job[128] = "";
	const char *job_file = NULL;
	int problems = 0;
	typedef struct seen { char job[128]; int rank; const char *file; } seen;
	seen *ranks_seen = NULL;
	int nseen = 0, cap_seen = 0;
	for (int f = 0; f < nin; f++) {
		pp_store *st = cli_open_store(in[f], PP_STORE_READ);
		if (!st) {
			free(ranks_seen);
			free(in);
			return 1;
		}
		pp_rank_run *rr;
		int n;
		if (pp_store_rank_runs(st, &rr, &n) != 0) {
			cli_error("merge: %s: cannot read its runs: %s", in[f], pp_store_error(st));
			pp_store_close(st, NULL, 0);
			free(ranks_seen);
			free(in);
			return 1;
		}
		pp_store_close(st, NULL, 0);
		if (n == 0) {
			cli_error("merge: %s: no run has a rank (not recorded under a parallel launcher)%s", in[f],
				  force ? "; merged anyway (--force)" : "");
			problems++;
		}
		if (PP_GROW(ranks_seen, nseen + n, cap_seen) != 0) {
			free(rr);
			free(ranks_seen);
			free(in);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			if (!job[0]) {
				snprintf(job, sizeof job, "%s", rr[i].job);
				job_file = in[f];
			} else if (strcmp(job, rr[i].job) != 0) {
				cli_error("merge: %s holds rank %d of job %s, but %s is job %s: different jobs%s", in[f],
					  rr[i].rank, rr[i].job, job_file, job, force ? "; merged anyway (--force)" : "");
				problems++;
			}
			for (int j = 0; j < nseen; j++)
				if (ranks_seen[j].rank == rr[i].rank && strcmp(ranks_seen[j].job, rr[i].job) == 0) {
					cli_error("merge: rank %d of job %s is in both %s and %s%s", rr[i].rank, rr[i].job,
						  ranks_seen[j].file, in[f], force ? "; merged anyway (--force)" : "");
					problems++;
				}
			snprintf(ranks_seen[nseen].job, sizeof ranks_seen[nseen].job, "%s", rr[i].job);
			ranks_seen[nseen].rank = rr[i].rank;
			ranks_seen[nseen].file = in[f];
			nseen++;
		}
		free(rr);
	}
	free(ranks_seen);
	if (problems && !force) {
		cli_error("merge: nothing written (--force merges them anyway)");
		free(in);
		return 1;
	}

	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s.merge-%ld.tmp", out, (long)getpid()) >= (int)sizeof tmp) {
		cli_error("merge: %s: name too long", out);
		free(in);
		return 2;
	}
	remove_db(tmp);
	pp_store *st = cli_open_store(tmp, PP_STORE_WRITE);
	if (!st) {
		free(in);
		return 1;
	}
	/* the merged rows go in without indexes, built after in bulk */
	char derr[512];
	if (pp_store_defer_indexes(st, derr, sizeof derr) != 0) {
		cli_error("merge: %s", derr);
		goto fail;
	}
	int64_t runs_total = 0;
	for (int f = 0; f < nin; f++) {
		int64_t first;
		int n;
		char err[600];
		if (pp_store_merge_file(st, in[f], &first, &n, err, sizeof err) != 0) {
			cli_error("merge: %s", err);
			goto fail;
		}
		runs_total += n;
	}

	char ierr[512];
	if (pp_store_build_indexes(st, ierr, sizeof ierr) != 0) {
		cli_error("merge: %s", ierr);
		goto fail;
	}
	pp_rank_run *rr = NULL;
	int n = 0;
	if (pp_store_rank_runs(st, &rr, &n) != 0) {
		cli_error("merge: %s: cannot read the merged ranks", tmp);
		goto fail;
	}
	for (int i = 0; i < n;) {
		int j = i;
		while (j < n && strcmp(rr[j].job, rr[i].job) == 0)
			j++;
		if (align_job(st, rr + i, j - i) != 0) {
			cli_error("merge: aligning the clocks of job %s failed: %s", rr[i].job,
				  pp_store_error(st));
			free(rr);
			goto fail;
		}
		i = j;
	}
	/* findings over the whole job (the rank rules need every rank) */
	for (int i = 0; i < n && diag; i++) {
		pp_diag_result d;
		if (pp_diag_run(st, rr[i].run_id, &d) != 0) {
			cli_error("merge: diagnostics of run %lld: %s", (long long)rr[i].run_id, d.error);
			continue;
		}
		/* the job's findings are on its lowest rank; the others' own are stored */
		if (d.n && (i == 0 || strcmp(rr[i].job, rr[i - 1].job) != 0)) {
			printf("findings (rank %d, run %lld; every rank's are in the database):\n", rr[i].rank,
			       (long long)rr[i].run_id);
			pp_diag_print(stdout, d.findings, d.n < 3 ? d.n : 3, 0);
		}
		pp_diag_result_free(&d);
	}
	free(rr);
	if (cli_close_store(st) != 0) {
		st = NULL;
		goto fail;
	}
	st = NULL;
	if (rename(tmp, out) != 0) {
		cli_error("merge: cannot rename %s to %s: %s", tmp, out, strerror(errno));
		goto fail;
	}
	printf("phaseprof: %lld run%s from %d database%s merged into %s\n", (long long)runs_total,
	       runs_total == 1 ? "" : "s", nin, nin == 1 ? "" : "s", out);
	rc = 0;
	free(in);
	return rc;
fail:
	if (st)
		pp_store_close(st, NULL, 0);
	remove_db(tmp);
	free(in);
	return 1;
}
