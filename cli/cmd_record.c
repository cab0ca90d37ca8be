/*
 * cmd_record.c — `phaseprof record [-o run.db] [options] -- CMD ARGS…`
 *
 * Runs an unmodified program with libphaseprof-agent.so preloaded (and
 * loaded as its rtld-audit module), waits for it, ingests every spool the
 * session left (one per process image: the program, its forks, its execs,
 * its posix_spawn children; parents first, each child linked to its parent
 * run), symbolises CPU samples, prints a start-up summary (on stderr, into
 * --summary FILE, or not at all with -q) and exits with the program's
 * status (128 + signal when it was killed).
 *
 * The supervisor doing that is session/ (pp_session.h); this file keeps
 * the options and the printing.
 */
#include "cli.h"
#include "cli_opt.h"
#include "diagnostics.h"
#include "pp_env.h"
#include "pp_session.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

const char cmd_record_summary[] = "run a program under the LD_PRELOAD agent and record it";

enum { OPT_OUTPUT = 1, OPT_SAMPLE, OPT_MODE, OPT_NO_FOLLOW, OPT_KEEP, OPT_KEEP_ALL, OPT_NO_PYTHON, OPT_MPI,
       OPT_NO_MPI, OPT_SUMMARY, OPT_QUIET, OPT_FORCE };
static const cli_opt opts[] = {
	{OPT_OUTPUT, 'o', "output", 1, "FILE", "database to write (appended to if it exists)", NULL},
	{OPT_SUMMARY, 0, "summary", 1, "FILE", "write the summary (what was recorded, start-up figures,\n"
	 "findings) into FILE instead of stderr: written beside it and\nrenamed into place once complete", NULL},
	{OPT_QUIET, 'q', "quiet", 0, NULL, "no summary: stderr carries only the program's own output\n"
	 "(and phaseprof's errors)", NULL},
	{OPT_SAMPLE, 0, "sample", 1, "HZ", "CPU sampling at HZ per thread (libunwind), 1..10000", NULL},
	{OPT_MODE, 0, "mode", 1, "MODE", "default, or detailed: also record one allocation event in\n"
	 PP_ENV_ALLOC_SAMPLE " (1000)", NULL},
	{OPT_NO_FOLLOW, 0, "no-follow-fork", 0, NULL, "record only the first process (and what it execs)", NULL},
	{OPT_KEEP, 0, "keep-spools", 0, NULL, "keep the raw spool files and print their folder", NULL},
	{OPT_KEEP_ALL, 0, "keep-all-spans", 0, NULL, "a row for every span (default: short leaf op/span spans\n"
	 "past 10,000 per thread and name are kept as per-name groups)", NULL},
	{OPT_NO_PYTHON, 0, "no-python", 0, NULL, "do not look inside CPython (start-up, import tree, the\n"
	 "phaseprof module and framework adapters); native recording\ngoes on", NULL},
	{OPT_MPI, 0, "mpi", 0, NULL, "preload the MPI profiling layer (libphaseprof-mpi.so); by\n"
	 "default it is preloaded when CMD is an MPI launcher (mpirun,\nmpiexec, srun...) or links libmpi", NULL},
	{OPT_NO_MPI, 0, "no-mpi", 0, NULL, "do not preload the MPI profiling layer", NULL},
	{OPT_FORCE, 0, "force", 0, NULL, "append to a database owned by another user (new databases\n"
	 "are created 0600)", NULL},
	{0},
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: phaseprof record [-o run.db] [--summary FILE | -q] [--sample HZ]\n"
		"                        [--mode default|detailed] [--no-follow-fork]\n"
		"                        [--keep-spools] [--keep-all-spans]\n"
		"                        [--no-python] [--mpi|--no-mpi] -- CMD [ARGS...]\n"
		"\n"
		"Runs CMD with the phaseprof agent preloaded and records start-up (time to\n"
		"main, every shared object loaded: mapping vs relocation+constructors),\n"
		"allocations, file I/O, mmap, threads, forks/execs and optional CPU samples\n"
		"into run.db (default phaseprof.db; runs are appended). CMD's input, output\n"
		"and exit status are left as they are. The summary goes to stderr, mixed with\n"
		"the program's own, unless --summary or -q sends it elsewhere.\n"
		"\n");
	cli_opt_help(out, opts);
	fprintf(out, "\n"
		     "In -o, %%r is the rank the launcher gave this process, %%h the host name, %%p the\n"
		     "pid: `mpirun -np 4 phaseprof record -o job-%%r.db -- ./prog` writes one database\n"
		     "per rank, `phaseprof merge job-*.db -o job.db` joins them.\n"
		     "\n"
		     "Exit status: the program's (128 + signal if it was killed); 3 if it exited 0\n"
		     "but nothing was recorded.\n");
}

/* ---------------------------------------------------------------- after the run */

static double ms(int64_t ns) { return (double)ns / 1e6; }

/* Where the summary goes: stderr (the default), the --summary file being
 * written, or nowhere (-q: NULL). Errors always go to stderr (cli_error):
 * a user who sends the summary away still needs to see what failed. */
static FILE *sum_out;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	if (!sum_out)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(sum_out, fmt, ap);
	va_end(ap);
}

/* --summary FILE: the summary is written into a new file beside FILE and
 * renamed over it once complete, so a reader never sees half a summary and
 * an older one stays until the new one is whole. The file is opened before
 * the program starts (a folder we cannot write fails the command before
 * the program's time is spent) and close-on-exec, so the program does not
 * inherit it. */
static char sum_tmp[PATH_MAX + 16];

static int summary_open(const char *path)
{
	snprintf(sum_tmp, sizeof sum_tmp, "%s.XXXXXX", path);
	int fd = mkostemp(sum_tmp, O_CLOEXEC);
	if (fd < 0) {
		cli_error("record: --summary %s: cannot create a file beside it (%s)", path, strerror(errno));
		sum_tmp[0] = 0;
		return -1;
	}
	/* mkostemp makes it 0600; the summary gets a new file's usual mode */
	mode_t um = umask(0);
	umask(um);
	fchmod(fd, 0666 & ~um);
	sum_out = fdopen(fd, "w");
	if (!sum_out) {
		cli_error("record: --summary %s: %s", path, strerror(errno));
		close(fd);
		unlink(sum_tmp);
		sum_tmp[0] = 0;
		return -1;
	}
	return 0;
}

/* Ends the --summary file: renamed into place when keep, else removed.
 * 0, or -1 (reported) when it could not be written whole. */
static int summary_close(const char *path, int keep)
{
	if (!sum_tmp[0])
		return 0;
	int bad = ferror(sum_out);
	bad |= fclose(sum_out) != 0;
	sum_out = NULL;
	if (!bad && keep && rename(sum_tmp, path) == 0) {
		sum_tmp[0] = 0;
		return 0;
	}
	int err = errno;
	unlink(sum_tmp);
	sum_tmp[0] = 0;
	if (bad || keep) {
		cli_error("record: --summary %s: could not write it (%s)", path, strerror(err));
		return -1;
	}
	return 0;
}

/* What the Python layer saw: start-up, imports. */
static void summarise_python(pp_store *st, int64_t run, const pp_startup_summary *s)
{
	char py[512];
	if (pp_store_python_status(st, run, py, sizeof py) != 1)
		return;
	say("  python        %s\n", py);
	if (s->py_startup_ns >= 0)
		say("    start-up    %8.1f ms  (to the program's first line)\n", ms(s->py_startup_ns));
	if (s->imports)
		say("    imports     %8.1f ms  %lld modules; slowest %s (%.1f ms with what it imported)\n",
			ms(s->imports_ns > 0 ? s->imports_ns : 0), (long long)s->imports, s->slowest_import,
			ms(s->slowest_import_ns));
}

/* The start-up question for one run, into the summary. */
static void summarise_run(pp_store *st, int64_t run, int64_t wall_ns)
{
	pp_startup_summary s;
	if (pp_store_startup_summary(st, run, &s) != 0) {
		cli_error("record: run %lld: cannot read its start-up figures", (long long)run);
		return;
	}
	int have_main = s.loader_ns != INT64_MIN && s.main_ns != INT64_MIN;
	int64_t t0 = s.loader_ns != INT64_MIN ? s.loader_ns : 0;
	if (wall_ns <= 0 && s.end_ns != INT64_MIN)
		wall_ns = s.end_ns - t0;
	char b1[32], b2[32];
	if (have_main)
		say("  before main   %8.1f ms  (from the loader's start to main)\n", ms(s.main_ns - s.loader_ns));
	if (s.libs)
		say("  libraries     %8lld loaded, %lld through dlopen (%lld dlopen calls)\n",
			(long long)s.libs, (long long)s.libs_dlopen, (long long)s.dlopen_calls);
	if (s.startup_batches)
		say("    at start-up %8.1f ms mapping, %.1f ms relocation + constructors\n",
			ms(s.startup_map_ns), ms(s.startup_init_ns));
	if (s.dlopen_calls)
		say("    dlopen      %8.1f ms mapping, %.1f ms relocation + constructors\n",
			ms(s.dlopen_map_ns), ms(s.dlopen_init_ns));
	if (s.split_loads)
		say("    split by CPU samples: %.1f ms relocation / symbol lookup, %.1f ms constructors"
			" (%lld loads)\n", ms(s.reloc_ns), ms(s.ctor_ns), (long long)s.split_loads);
	if (s.allocs) {
		pp_fmt_bytes(b1, sizeof b1, (double)s.alloc_bytes);
		pp_fmt_bytes(b2, sizeof b2, (double)s.alloc_peak);
		say("  allocation   ~%8.1f ms  %lld allocations (%s), %lld frees, peak %s in use\n",
			ms(s.alloc_ns), (long long)s.allocs, b1, (long long)s.frees, b2);
	}
	if (s.files_opened || s.reads || s.failed_opens) {
		pp_fmt_bytes(b1, sizeof b1, (double)s.read_bytes);
		say("  file I/O      %8.1f ms  %lld files opened (%lld failed opens), %lld reads of %s, %lld of them <= 4 KiB\n",
			ms(s.io_ns), (long long)s.files_opened, (long long)s.failed_opens, (long long)s.reads, b1,
			(long long)s.small_reads);
	}
	summarise_python(st, run, &s);
	if (wall_ns > 0) {
		int64_t before = have_main ? s.main_ns - s.loader_ns : 0;
		int64_t rest = wall_ns - before - s.dlopen_map_ns - s.dlopen_init_ns - s.alloc_ns - s.io_ns;
		say("  the program   %8.1f ms  (the rest of %.1f ms wall time)\n", ms(rest > 0 ? rest : 0), ms(wall_ns));
	}
}

/* What the session's callbacks print with (pp_session_opts.ud). */
typedef struct progress_state { double last; int shown; } progress_state;
typedef struct record_ctx {
	progress_state ps;
	const char *resolved, *out;
	int hz, mpi;
} record_ctx;

/* Progress on stderr once an ingest has taken more than a second. */

static void show_progress(void *ud, const char *spool, uint64_t done, uint64_t total, double seconds)
{
	progress_state *p = &((record_ctx *)ud)->ps;
	if (!spool) { /* a new pass (pp_session_opts.progress) */
		*p = (progress_state){0, 0};
		return;
	}
	/* live progress belongs on the terminal: not in a summary file read
	 * after the fact, and not at all with -q */
	if (sum_out != stderr)
		return;
	if (seconds < 1.0 || seconds - p->last < 1.0 || !total)
		return;
	p->last = seconds;
	p->shown = 1;
	const char *base = strrchr(spool, '/');
	fprintf(stderr, "phaseprof: ingesting %s: %3.0f%% after %.0f s\n", base ? base + 1 : spool,
		100.0 * (double)(done < total ? done : total) / (double)total, seconds);
}

/* "runs 3, 5..7": exactly the runs this record ingested. */
static void print_run_ids(const pp_ingest_spool *sp, int n)
{
	int64_t *ids = malloc((n > 0 ? (size_t)n : 1) * sizeof *ids);
	int k = 0;
	for (int i = 0; ids && i < n; i++)
		if (sp[i].run_id)
			ids[k++] = sp[i].run_id;
	/* insertion sort: a handful of runs */
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
			int64_t t = ids[j];
			ids[j] = ids[j - 1];
			ids[j - 1] = t;
		}
	say(" (run%s ", k == 1 ? "" : "s");
	for (int i = 0; i < k;) {
		int j = i;
		while (j + 1 < k && ids[j + 1] == ids[j] + 1)
			j++;
		say("%s%lld", i ? ", " : "", (long long)ids[i]);
		if (j > i)
			say("..%lld", (long long)ids[j]);
		i = j + 1;
	}
	say(")");
	free(ids);
}

/* The last top image's findings; a distributed job's, on its lowest rank. */
static void print_findings(const pp_ingest_spool *sp, int n, const pp_diag_result *d, int64_t last_top)
{
	for (int s = 0; s < n; s++) {
		if (d[s].n && sp[s].run_id == last_top) {
			say("  findings:\n");
			if (sum_out)
				pp_diag_print(sum_out, d[s].findings, d[s].n < 3 ? d[s].n : 3, 0);
		}
		/* a distributed job's findings sit on its lowest rank, not on the launcher */
		for (int f = 0, head = 0; f < d[s].n && sp[s].run_id != last_top; f++)
			if (strncmp(d[s].findings[f].rule, "rank_", 5) == 0) {
				if (!head++)
					say("  job findings (on the lowest rank, run %lld):\n",
						(long long)sp[s].run_id);
				if (sum_out)
					pp_diag_print(sum_out, d[s].findings + f, 1, PP_DIAG_PRINT_BRIEF);
			}
	}
}

static void list_other_runs(pp_store *st, const pp_ingest_spool *sp, int n, int64_t last_top)
{
	for (int s = 0; s < n && n > 1; s++) {
		if (!sp[s].run_id || sp[s].run_id == last_top)
			continue;
		pp_run_info ri;
		if (pp_store_run(st, sp[s].run_id, &ri) != 0)
			continue;
		for (char *c = ri.command; *c; c++)
			if (*c == '\n' || *c == '\t')
				*c = ' ';
		say("  run %lld  pid %lld  %-9s %8.1f ms  %.60s\n", (long long)ri.id, (long long)ri.pid,
			ri.status, ms(ri.duration_ns), ri.command);
	}
}

/* What the session recorded, into the summary (its problems were
 * reported as they were met). */
static void report(const pp_session_result *r, const char *out, const char *resolved)
{
	const pp_ingest_spool *sp = r->spools;
	int nsp = r->nspools;
	if (!r->store)
		return;
	int code = r->exit_code, sig = r->term_signal;
	if (r->ingested > 0) {
		say("phaseprof: %d run%s recorded into %s", r->ingested, r->ingested == 1 ? "" : "s", out);
		print_run_ids(sp, nsp);
		if (r->samples)
			say(", %lld CPU samples", (long long)r->samples);
		say("; %s %s\n", resolved,
			sig ? strsignal(sig) : code == 0 ? "exited normally" : "exited with an error status");
	}
	if (r->last_top) {
		pp_run_info ri;
		if (pp_store_run(r->store, r->last_top, &ri) == 0 && r->last_top != r->top_run)
			say("  (after exec: run %lld, %.60s)\n", (long long)r->last_top, ri.command);
		summarise_run(r->store, r->last_top, r->last_top == r->top_run ? r->wall_ns : 0);
	}
	if (r->diag)
		print_findings(sp, nsp, r->diag, r->last_top);
	list_other_runs(r->store, sp, nsp, r->last_top);
}

/* The session's messages, as record's errors. */
static void session_report(void *ud, const char *msg)
{
	(void)ud;
	cli_error("%s", msg);
}

/* Just before the program starts. */
static void announce(void *ud)
{
	const record_ctx *c = ud;
	say("phaseprof: recording %s%s%s into %s\n", c->resolved, c->hz ? " (sampling)" : "",
		c->mpi ? " (MPI)" : "", c->out);
	if (sum_out)
		fflush(sum_out);
}

typedef struct record_opts {
	const char *out;
	int hz, detailed, follow, keep, keep_all;
	int cmd;                   /* index of the command in argv */
	int python;                /* the CPython layer (--no-python: 0) */
	int mpi;                   /* the PMPI layer: 1 --mpi, 0 --no-mpi, -1 by the command */
	const char *summary;       /* --summary FILE, or NULL */
	int quiet;                 /* -q: no summary */
} record_opts;

/* Returns -1 to go on, else the exit status (help, bad option). */
static int parse_options(int argc, char **argv, record_opts *o)
{
	*o = (record_opts){"phaseprof.db", 0, 0, 1, 0, 0, 0, 1, -1, NULL, 0};
	cli_parse p;
	long long v;
	cli_parse_init(&p, "record", opts, usage, argc, argv, CLI_STOP_AT_ARG);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case OPT_OUTPUT:
			o->out = p.val[0];
			break;
		case OPT_SAMPLE:
			if (cli_parse_int64("--sample", p.val[0], &v) != 0)
				return 2;
			if (v < 1 || v > 10000) {
				cli_error("record: --sample %lld: the rate must be 1..10000 Hz", v);
				return 2;
			}
			o->hz = (int)v;
			break;
		case OPT_MODE:
			if (strcmp(p.val[0], "detailed") == 0) {
				o->detailed = 1;
			} else if (strcmp(p.val[0], "default") != 0) {
				cli_error("record: --mode %s: expected default or detailed", p.val[0]);
				return 2;
			}
			break;
		case OPT_NO_FOLLOW:
			o->follow = 0;
			break;
		case OPT_KEEP:
			o->keep = 1;
			break;
		case OPT_KEEP_ALL:
			o->keep_all = 1;
			break;
		case OPT_FORCE:
			pp_store_allow_foreign(1);
			break;
		case OPT_NO_PYTHON:
			o->python = 0;
			break;
		case OPT_MPI:
			o->mpi = 1;
			break;
		case OPT_NO_MPI:
			o->mpi = 0;
			break;
		case OPT_SUMMARY:
			o->summary = p.val[0];
			break;
		case OPT_QUIET:
			o->quiet = 1;
			break;
		}
	}
	if (o->summary && o->quiet) {
		cli_error("record: --summary and -q say opposite things: give one");
		return 2;
	}
	/* the command starts at the first positional, or after "--" */
	if (p.i >= argc) {
		cli_error("record: no command given (phaseprof record [-o run.db] -- CMD ARGS...)");
		return 2;
	}
	o->cmd = p.i;
	return -1;
}

int cmd_record(int argc, char **argv)
{
	record_opts ro;
	int prc = parse_options(argc, argv, &ro);
	if (prc >= 0)
		return prc;
	const char *out = ro.out;
	int mpi = ro.mpi;
	char **cmd = argv + ro.cmd;
	char resolved[PATH_MAX], err[PATH_MAX + 1024];
	if (pp_session_check_command(cmd[0], resolved, sizeof resolved, err, sizeof err) != 0) {
		cli_error("%s", err);
		return 127;
	}
	char out_buf[PATH_MAX];
	if (cli_expand_output(out, out_buf, sizeof out_buf) != 0)
		return 2;
	out = out_buf;

	char agent[PATH_MAX];
	if (cli_lib_path("libphaseprof-agent.so", agent, sizeof agent) != 0) {
		cli_error("record: agent library %s is missing (build the phaseprof_agent target)", agent);
		return 2;
	}
	char mpilib[PATH_MAX];
	int have_mpilib = cli_lib_path("libphaseprof-mpi.so", mpilib, sizeof mpilib) == 0;
	if (mpi < 0)
		mpi = pp_session_is_mpi_command(resolved);
	if (mpi && !have_mpilib) {
		cli_error("record: %s is missing (phaseprof was built without MPI); recording without "
			  "MPI communication", mpilib);
		mpi = 0;
	}
	if (pp_session_check_db(out, err, sizeof err) != 0) {
		cli_error("%s", err);
		return 2;
	}
	sum_out = ro.quiet ? NULL : stderr;
	if (ro.summary && summary_open(ro.summary) != 0)
		return 2;

	record_ctx ctx = {{0, 0}, resolved, out, ro.hz, mpi};
	pp_session_opts so = {
		.path = resolved, .argv = cmd, .db = out, .agent = agent, .mpi_lib = mpi ? mpilib : NULL,
		.sample_hz = ro.hz, .detailed = ro.detailed, .follow_fork = ro.follow, .python = ro.python,
		.keep_all_spans = ro.keep_all, .keep_spools = ro.keep,
		.announce = announce, .report = session_report, .progress = show_progress, .ud = &ctx,
	};
	pp_session *s;
	int rc = pp_session_start(&so, &s, err, sizeof err);
	if (rc != 0) {
		cli_error("%s", err);
		summary_close(ro.summary, 0);
		return rc;
	}
	pp_session_wait(s);
	pp_session_result r;
	pp_session_finish(s, &r);
	report(&r, out, resolved);
	pp_session_free(s, &r);
	int recorded = r.ingested;
	struct rlimit fsz;
	if ((r.failed || recorded <= 0) && getrlimit(RLIMIT_FSIZE, &fsz) == 0 && fsz.rlim_cur != RLIM_INFINITY)
		cli_error("record: the file size limit (ulimit -f) is %llu bytes: writes past it fail with EFBIG",
			  (unsigned long long)fsz.rlim_cur);
	if (r.failed)
		cli_error("record: spool files kept in %s (ingest them with 'phaseprof ingest DIR/*.spool -o DB')",
			  r.spool_dir);
	else if (ro.keep)
		say("phaseprof: spool files kept in %s\n", r.spool_dir);
	/* the program's status stays the exit status; a summary that could
	 * not be written is reported on stderr */
	summary_close(ro.summary, recorded > 0);
	return r.status;
}
