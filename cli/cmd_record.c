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
 */
#include "cli.h"
#include "cli_opt.h"
#include "diagnostics.h"
#include "phaseprof.h"
#include "spool_writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elf_file.h"
#include "pp_grow.h"
#include "spool_reader.h"

const char cmd_record_summary[] = "run a program under the LD_PRELOAD agent and record it";

extern char **environ;

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
	 "PHASEPROF_ALLOC_SAMPLE (1000)", NULL},
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

/* ---------------------------------------------------------------- checks */

static int find_in_path(const char *cmd, char *out, size_t outlen)
{
	if (strchr(cmd, '/')) {
		snprintf(out, outlen, "%s", cmd);
		return access(out, F_OK) == 0 ? 0 : -1;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int found_noexec = 0;
	for (const char *p = path; *p;) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		snprintf(out, outlen, "%.*s/%s", (int)n, n ? p : ".", cmd);
		struct stat st;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			found_noexec = 1;
		}
		p = e ? e + 1 : p + n;
	}
	return found_noexec ? -2 : -1;
}

/* Refuses what LD_PRELOAD cannot wrap. Returns 0 or prints why and returns 1. */
static int check_command(const char *cmd, char *resolved, size_t len)
{
	int r = find_in_path(cmd, resolved, len);
	if (r == -1) {
		cli_error("record: %s: command not found", cmd);
		return 1;
	}
	if (r == -2) {
		cli_error("record: %s: found in PATH but not executable", cmd);
		return 1;
	}
	struct stat st;
	if (stat(resolved, &st) != 0) {
		cli_error("record: %s: %s", resolved, strerror(errno));
		return 1;
	}
	if (!S_ISREG(st.st_mode)) {
		cli_error("record: %s: not a regular file", resolved);
		return 1;
	}
	if (access(resolved, X_OK) != 0) {
		cli_error("record: %s: not executable (permission denied)", resolved);
		return 1;
	}
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		cli_error("record: %s: set-user/group-ID program; the loader ignores LD_PRELOAD for it, "
			  "so it cannot be recorded", resolved);
		return 1;
	}
	const char *target = resolved;
	char interp[PATH_MAX];
	int fd = open(resolved, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char head[PATH_MAX + 3];
		ssize_t n = read(fd, head, sizeof head - 1);
		close(fd);
		if (n > 2 && head[0] == '#' && head[1] == '!') {
			/* a script: what matters is its interpreter */
			head[n] = 0;
			char *s = head + 2;
			while (*s == ' ' || *s == '\t')
				s++;
			size_t k = strcspn(s, " \t\n");
			snprintf(interp, sizeof interp, "%.*s", (int)k, s);
			target = interp;
			if (stat(interp, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID))) {
				cli_error("record: %s: its interpreter %s is set-user/group-ID and cannot be recorded",
					  resolved, interp);
				return 1;
			}
		}
	}
	int s = pp_elf_is_static(target);
	if (s == 1) {
		cli_error("record: %s: statically linked; LD_PRELOAD cannot wrap it (no dynamic loader runs)",
			  target);
		return 1;
	}
	return 0;
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

/* Progress on stderr once an ingest has taken more than a second. */
typedef struct progress_state { double last; int shown; } progress_state;

static void show_progress(void *ud, const char *spool, uint64_t done, uint64_t total, double seconds)
{
	progress_state *p = ud;
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
static void print_run_ids(const pp_session_spool *sp, int n)
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

/* Findings of every recorded run are stored (before anything is printed:
 * the last write, so the log can be synced meanwhile), then the last top
 * image's printed. d: one result per slot. */
static void diagnose(pp_store *st, const pp_session_spool *sp, int n, pp_diag_result *d)
{
	for (int s = 0; s < n; s++)
		if (sp[s].run_id && pp_diag_run(st, sp[s].run_id, &d[s]) != 0) {
			cli_error("record: diagnostics of run %lld: %s", (long long)sp[s].run_id, d[s].error);
			pp_diag_result_free(&d[s]);
			memset(&d[s], 0, sizeof d[s]);
		}
}

static void print_findings(const pp_session_spool *sp, int n, pp_diag_result *d, int64_t last_top)
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
		pp_diag_result_free(&d[s]);
	}
}

static void list_other_runs(pp_store *st, const pp_session_spool *sp, int n, int64_t last_top)
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

/* The session's spools (*.spool in dir); NULL paths on failure. */
static int list_spools(const char *dir, pp_session_spool **out)
{
	pp_session_spool *sp = NULL;
	int n = 0, cap = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 7 || strcmp(de->d_name + l - 6, ".spool") != 0)
			continue;
		if (PP_GROW(sp, n + 1, cap) != 0)
			break;
		memset(&sp[n], 0, sizeof sp[n]);
		size_t pl = strlen(dir) + l + 2;
		char *path = malloc(pl);
		if (!path)
			break;
		snprintf(path, pl, "%s/%s", dir, de->d_name);
		sp[n++].path = path;
	}
	if (d)
		closedir(d);
	*out = sp;
	return n;
}

/* A database made while the program ran and then not needed goes: record
 * leaves no file when nothing was recorded (one that existed stays, and so
 * does one another record made first or still has open: its -shm outlives
 * our close while any other connection is open). */
static void drop_early(pp_store *early, int created, const char *out)
{
	if (!early)
		return;
	created = created && pp_store_created(early);
	pp_store_close(early, NULL, 0);
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s-shm", out);
	if (!created || access(p, F_OK) == 0)
		return;
	static const char *const ext[] = {"", "-wal", "-shm", "-journal"};
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof p, "%s%s", out, ext[i]);
		unlink(p);
	}
}

/* No -wal or -journal beside db: no other writer is in the middle of it. */
static int no_other_writer(const char *db)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s-wal", db);
	if (access(p, F_OK) == 0)
		return 0;
	snprintf(p, sizeof p, "%s-journal", db);
	return access(p, F_OK) != 0;
}

/* Ingests the session (into early when the database was opened while the
 * program ran; early_created: it was made then), prints what was recorded.
 * Returns the number of runs recorded, -1 if the database could not be
 * written. */
static int ingest_and_report(const char *out, const char *dir, const char *resolved, pid_t pid,
			     int code, int sig, int64_t wall, int keep_all, pp_store *early, int early_created,
			     const pp_session_spool *done, int *failed)
{
	pp_session_spool *sp = NULL;
	int nsp = list_spools(dir, &sp);
	for (int s = 0; done->ingested && s < nsp; s++)
		if (!strcmp(sp[s].path, done->path)) {
			const char *path = sp[s].path;
			sp[s] = *done;
			sp[s].path = path;
		}
	if (!nsp) {
		drop_early(early, early_created, out);
		early = NULL;
	}
	pp_store *st = early ? early : nsp ? cli_open_store(out, PP_STORE_WRITE) : NULL;
	int ingested = 0;
	if (!nsp) {
		cli_error("record: nothing was recorded: %s left no spool (did the agent load? see messages above)",
			  resolved);
		free(sp);
		return 0;
	}
	if (!st) {
		(*failed)++;
		goto out;
	}
	progress_state ps = {0, 0};
	pp_session_opts so = {(uint32_t)pid, code, sig, keep_all, show_progress, &ps, 0};
	ingested = pp_store_ingest_session(st, sp, nsp, &so);
	/* the indexes now, in bulk after the rows: the summary and the
	 * diagnostics read through them (without, a read by kind scanned the
	 * run's spans once per kind); close adds those of tables they filled */
	char ierr[512];
	if (ingested && pp_store_build_indexes(st, ierr, sizeof ierr) != 0)
		cli_error("record: %s", ierr);
	pp_diag_result *diag = calloc((size_t)nsp, sizeof *diag);
	if (diag)
		diagnose(st, sp, nsp, diag);
	pp_store_sync_ahead(st);
	int64_t top_run = 0, last_top = 0, samples = 0;
	for (int s = 0; s < nsp; s++) {
		if (!sp[s].run_id || sp[s].err[0]) {
			cli_error("record: %s", sp[s].err);
			(*failed)++;
		}
		if (!sp[s].run_id)
			continue;
		if (sp[s].is_top && !top_run)
			top_run = sp[s].run_id;
		if (sp[s].is_last_top)
			last_top = sp[s].run_id;
		if (sp[s].res.truncated)
			cli_error("record: run %lld: %s", (long long)sp[s].run_id, sp[s].res.note);
		char stopped[400];
		if (pp_store_run_meta(st, sp[s].run_id, "agent.stopped", stopped, sizeof stopped) == 0)
			cli_error("record: run %lld: %s", (long long)sp[s].run_id, stopped);
		if (pp_store_run_meta(st, sp[s].run_id, "agent.child_unrecorded", stopped, sizeof stopped) == 0)
			cli_error("record: run %lld: a child could not be recorded (run_meta agent.child_unrecorded): %s",
				  (long long)sp[s].run_id, stopped);
		samples += (int64_t)sp[s].res.samples;
	}
	if (ingested) {
		say("phaseprof: %d run%s recorded into %s", ingested, ingested == 1 ? "" : "s", out);
		print_run_ids(sp, nsp);
		if (samples)
			say(", %lld CPU samples", (long long)samples);
		say("; %s %s\n", resolved,
			sig ? strsignal(sig) : code == 0 ? "exited normally" : "exited with an error status");
	}
	if (last_top) {
		pp_run_info ri;
		if (pp_store_run(st, last_top, &ri) == 0 && last_top != top_run)
			say("  (after exec: run %lld, %.60s)\n", (long long)last_top, ri.command);
		summarise_run(st, last_top, last_top == top_run ? wall : 0);
	}
	if (diag)
		print_findings(sp, nsp, diag, last_top);
	free(diag);
	list_other_runs(st, sp, nsp, last_top);
	if (cli_close_store(st) != 0)
		(*failed)++;
out:
	for (int s = 0; s < nsp; s++)
		free((char *)sp[s].path);
	free(sp);
	return *failed && !ingested ? -1 : ingested;
}

/* ------------------------------------------------- ingest while it exits */

/* The kernel takes a while to tear a large process down after its last
 * instruction (~1.5 ms for `import numpy` on this VM), and the agent closes
 * the spool before that. When the program's spool has been closed at its
 * exit and is the session's only one, it is ingested meanwhile, on the
 * other CPU; its parent's wait still has the last word on how it ended. */
typedef struct early_ingest {
	int watch, wd;           /* inotify on the spool folder, -1: none */
	pp_session_spool slot;   /* slot.ingested: tried */
	char path[PATH_MAX + 256];
	pp_spool_summary m;      /* its own account of how it ended */
} early_ingest;

static void early_watch(early_ingest *e, const char *dir, int mpi)
{
	memset(e, 0, sizeof *e);
	e->watch = mpi ? -1 : inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (e->watch >= 0 && (e->wd = inotify_add_watch(e->watch, dir, IN_CLOSE_WRITE)) < 0) {
		close(e->watch);
		e->watch = -1;
	}
}

/* pid's spool closed at its exit, alone in dir: its path in e->path */
static int closed_at_exit(early_ingest *e, const char *dir, pid_t pid)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	char prefix[32];
	int n = snprintf(prefix, sizeof prefix, "%d-", (int)pid), found = 0;
	ssize_t len;
	while ((len = read(e->watch, buf, sizeof buf)) > 0)
		for (char *q = buf; q < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)q;
			size_t l = ev->len ? strlen(ev->name) : 0;
			if (l > 6 && !strncmp(ev->name, prefix, (size_t)n) && !strcmp(ev->name + l - 6, ".spool")) {
				snprintf(e->path, sizeof e->path, "%.4000s/%.255s", dir, ev->name);
				found = 1;
			}
			q += sizeof *ev + ev->len;
		}
	if (!found)
		return 0;
	pp_session_spool *sp = NULL;
	int nsp = list_spools(dir, &sp);
	for (int i = 0; i < nsp; i++)
		free((char *)sp[i].path);
	free(sp);
	char err[256];
	const pp_spool_summary *m = &e->m;
	return nsp == 1 && pp_spool_summarise(e->path, &e->m, err, sizeof err) == 0 && m->agent_closed &&
	       m->exit_code >= 0 && !m->exit_signal && (!strcmp(m->end, "exit") || !strcmp(m->end, "_exit"));
}

/* The database is opened while the program runs (a new one's schema, an
 * existing one's checks and its switch to WAL), in a thread at nice 19:
 * the CPU it takes is one the program leaves idle (at nice 0 it took ~1.5 ms
 * from `import numpy` on 2 CPUs, at nice 10 as much). After
 * EARLY_OPEN_RAISE_MS, or when the program ends first, the thread is
 * raised to the caller's priority; where that is not allowed
 * (RLIMIT_NICE), it is told at the end to give up and the open is done
 * again at full priority, so a loaded machine cannot leave it starving. */
#define EARLY_OPEN_RAISE_MS 20
typedef struct early_open {
	const char *out;
	pthread_t thread;
	pid_t tid;
	_Atomic int tid_known, done, cancel;
	int started;
	pp_store *st;
	char err[512];
} early_open;

static void *early_open_main(void *arg)
{
	early_open *o = arg;
	o->tid = (pid_t)syscall(SYS_gettid);
	atomic_store(&o->tid_known, 1);
	setpriority(PRIO_PROCESS, (id_t)o->tid, 19);
	o->st = pp_store_open_cancellable(o->out, PP_STORE_WRITE, &o->cancel, o->err, sizeof o->err);
	atomic_store(&o->done, 1);
	return NULL;
}

static void early_open_start(early_open *o)
{
	o->started = pthread_create(&o->thread, NULL, early_open_main, o) == 0;
}

/* The thread at our own priority again: 0, or -1 where not allowed. */
static int early_open_raise(early_open *o)
{
	if (!atomic_load(&o->tid_known))
		return -1;
	return setpriority(PRIO_PROCESS, (id_t)o->tid, getpriority(PRIO_PROCESS, 0));
}

static pp_store *early_open_join(early_open *o)
{
	if (!o->started)
		return o->st;
	o->started = 0;
	if (!atomic_load(&o->done) && early_open_raise(o) != 0)
		atomic_store(&o->cancel, 1);
	pthread_join(o->thread, NULL);
	if (!o->st && atomic_load(&o->cancel))
		o->st = pp_store_open(o->out, PP_STORE_WRITE, o->err, sizeof o->err);
	return o->st;
}

/* When the program ended, for its wall time: record may be ingesting then.
 * (Set in a SIGCHLD handler: the program is record's only child unless MPI
 * makes it a subreaper, when no ingest overlaps the wait.) */
static struct timespec program_end;
static volatile sig_atomic_t program_ended;

static void note_program_end(int sig)
{
	(void)sig;
	if (!program_ended) {
		clock_gettime(CLOCK_MONOTONIC, &program_end);
		program_ended = 1;
	}
}

/* Waits for the program (its status in *status, the time it ended in
 * *end); ingests its spool into the early store meanwhile when it can
 * (e->slot.ingested). */
static void wait_program(pid_t pid, int *status, early_ingest *e, const char *dir, early_open *eo, int keep_all,
			 struct timespec *end)
{
	int pfd = eo->started || (e->watch >= 0 && eo->st) ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	/* a program that keeps both CPUs busy (numpy's OpenBLAS threads spin
	 * a while) leaves the open no idle time at all: after 20 ms it runs at
	 * our priority (without, 1 run in 3 opened only after the exit) */
	int raise_ms = eo->started ? EARLY_OPEN_RAISE_MS : -1;
	while (pfd >= 0) {
		struct pollfd p[2] = {{pfd, POLLIN, 0}, {e->watch, POLLIN, 0}};
		int n = poll(p, e->watch >= 0 ? 2 : 1, raise_ms);
		if (n < 0 && errno != EINTR)
			break;
		if (n == 0) {
			if (!atomic_load(&eo->done))
				(void)early_open_raise(eo);
			raise_ms = -1;
			if (e->watch < 0)
				break; /* the exit is all that is left to wait for */
			continue;
		}
		if (p[0].revents)
			break;
		if ((p[1].revents & POLLIN) && closed_at_exit(e, dir, pid)) {
			progress_state ps = {0, 0};
			pp_session_opts so = {(uint32_t)pid, e->m.exit_code, 0, keep_all, show_progress, &ps, 0};
			e->slot.path = e->path;
			/* woken by the close, we may have preempted one of the
			 * program's threads that its exit waits for (joined at
			 * exit): it goes first (1.5 ms of overlap lost without) */
			sched_yield();
			pp_store *st = early_open_join(eo);
			if (!st)
				break;
			(void)pp_store_ingest_session(st, &e->slot, 1, &so);
			e->slot.ingested = 1;
			break;
		}
	}
	if (pfd >= 0)
		close(pfd);
	/* the watch goes now, its descriptor at the end: closing it while it
	 * has a watch waits for an RCU grace period (8-20 ms on this VM),
	 * removing the watch queues that wait in the kernel's background */
	if (e->watch >= 0)
		inotify_rm_watch(e->watch, e->wd);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, end);
	if (program_ended) /* during the ingest: the wait came after */
		*end = program_end;
}

/* ---------------------------------------------------------------- main */

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static int agent_has_symbol(const char *agent, const char *name)
{
	pp_elf e;
	if (pp_elf_open(agent, &e) != 0)
		return 0;
	int found = pp_elf_dynstr_has(&e, name, 1);
	pp_elf_close(&e);
	return found;
}

static int rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	char p[PATH_MAX];
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	return rmdir(dir);
}

static char *env_join(const char *name, const char *first, const char *rest)
{
	size_t n = strlen(name) + strlen(first) + (rest ? strlen(rest) : 0) + 3;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s=%s%s%s", name, first, rest && *rest ? ":" : "", rest ? rest : "");
	return s;
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

/* The database must be usable before we spend the program's time: an
 * existing file must be a phaseprof database we can write, a new one needs
 * a writable folder (opening for writing here would cost the schema set-up
 * twice). 0 or -1 (reported). */
static void folder_of(const char *path, char *folder, size_t n)
{
	snprintf(folder, n, "%s", path);
	char *slash = strrchr(folder, '/');
	if (slash)
		*(slash == folder ? slash + 1 : slash) = 0;
	else
		snprintf(folder, n, ".");
}

static int check_database(const char *out)
{
	char folder[PATH_MAX];
	folder_of(out, folder, sizeof folder);
	if (access(out, F_OK) == 0) {
		/* through SQLite (another record may be creating it right now: no
		 * tables yet is fine), which parses the whole schema: ~0.4 ms
		 * before the program starts, but a file carrying its own SQL
		 * (a trigger, a view) is refused before the program runs, not
		 * after (the header alone cannot show it) */
		pp_store *probe = cli_open_store(out, PP_STORE_CHECK);
		if (!probe)
			return -1;
		pp_store_close(probe, NULL, 0);
		if (access(out, W_OK) != 0) {
			cli_error("record: %s: not writable (%s)", out, strerror(errno));
			return -1;
		}
		/* an append writes a journal beside the file: a read-only folder
		 * failed it after the program had run */
		if (access(folder, W_OK) != 0) {
			cli_error("record: %s: its folder %s is not writable (%s): SQLite keeps its "
				  "journal there",
				  out, folder, strerror(errno));
			return -1;
		}
		/* refused before the program runs, as the append would be after */
		struct stat sb;
		if (stat(out, &sb) == 0 && sb.st_uid != geteuid() && !pp_store_foreign_allowed()) {
			cli_error("record: %s: belongs to another user (uid %u); not appending to it (--force to append)",
				  out, (unsigned)sb.st_uid);
			return -1;
		}
		return 0;
	}
	if (access(folder, W_OK) != 0) {
		cli_error("record: cannot create %s: folder %s is not writable (%s)", out, folder, strerror(errno));
		return -1;
	}
	return 0;
}
/* The launcher's orphans (PR_SET_CHILD_SUBREAPER): reaped as they die,
 * for at most a second; one killed by a signal gets it in its spool (its
 * own agent may have been stopped by SIGKILL before it could say). */
static void reap_orphans(const char *dir)
{
	for (int waited_ms = 0;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			if (WIFSIGNALED(st))
				pp_spool_note_exit(dir, (int32_t)p, 0, -1, WTERMSIG(st));
			continue;
		}
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0 || waited_ms >= 1000)
			return; /* none left, or alive and well: left to run */
		struct timespec t = {0, 10000000};
		nanosleep(&t, NULL);
		waited_ms += 10;
	}
}


int cmd_record(int argc, char **argv)
{
	record_opts ro;
	int prc = parse_options(argc, argv, &ro);
	if (prc >= 0)
		return prc;
	const char *out = ro.out;
	int hz = ro.hz, detailed = ro.detailed, follow = ro.follow, keep = ro.keep, keep_all = ro.keep_all;
	int python = ro.python, mpi = ro.mpi;
	int i = ro.cmd;
	char **cmd = argv + i;
	char resolved[PATH_MAX];
	if (check_command(cmd[0], resolved, sizeof resolved) != 0)
		return 127;
	char out_buf[PATH_MAX];
	if (cli_expand_output(out, out_buf, sizeof out_buf) != 0)
		return 2;
	out = out_buf;

	char agent[PATH_MAX];
	if (cli_lib_path("libphaseprof-agent.so", agent, sizeof agent) != 0) {
		cli_error("record: agent library %s is missing (build the phaseprof_agent target)", agent);
		return 2;
	}
	/* the PMPI layer goes after the agent in LD_PRELOAD: its wrappers call
	 * the recorder the agent exports */
	char mpilib[PATH_MAX];
	int have_mpilib = cli_lib_path("libphaseprof-mpi.so", mpilib, sizeof mpilib) == 0;
	if (mpi < 0)
		mpi = cli_is_mpi_command(resolved);
	if (mpi && !have_mpilib) {
		cli_error("record: %s is missing (phaseprof was built without MPI); recording without "
			  "MPI communication", mpilib);
		mpi = 0;
	}
	if (check_database(out) != 0)
		return 2;
	sum_out = ro.quiet ? NULL : stderr;
	if (ro.summary && summary_open(ro.summary) != 0)
		return 2;

	char dir[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/phaseprof-record-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		cli_error("record: cannot create a spool folder %s: %s", dir, strerror(errno));
		summary_close(ro.summary, 0);
		return 2;
	}
	/* the agent gets an absolute folder: processes chdir before they fork */
	if (dir[0] != '/') {
		char abs[PATH_MAX];
		if (!realpath(dir, abs)) {
			cli_error("record: cannot resolve the spool folder %s: %s", dir, strerror(errno));
			rmdir(dir);
			summary_close(ro.summary, 0);
			return 2;
		}
		snprintf(dir, sizeof dir, "%s", abs);
	}

	/* the child's environment */
	size_t ne = 0;
	while (environ[ne])
		ne++;
	char **env = calloc(ne + 16, sizeof *env);
	char hzs[32], *tun;
	size_t k = 0;
	const char *old_pre = NULL, *old_aud = NULL, *old_tun = NULL;
	for (size_t j = 0; j < ne; j++) {
		const char *e = environ[j];
		if (!strncmp(e, "LD_PRELOAD=", 11))
			old_pre = e + 11;
		else if (!strncmp(e, "LD_AUDIT=", 9))
			old_aud = e + 9;
		else if (!strncmp(e, "GLIBC_TUNABLES=", 15))
			old_tun = e + 15;
		else if (strncmp(e, "PHASEPROF_", 10) != 0 || !strncmp(e, "PHASEPROF_CLOCK=", 16) ||
			 !strncmp(e, "PHASEPROF_ALLOC_SAMPLE=", 23) || !strncmp(e, "PHASEPROF_AGENT_PERIOD_MS=", 26) ||
			 (python && !strncmp(e, "PHASEPROF_PYTHON=", 17)) ||
			 !strncmp(e, "PHASEPROF_PYSTACK_FAKE_VERSION=", 31) || /* tests: an unchecked CPython */
			 !strncmp(e, "PHASEPROF_BUFFER_EVENTS=", 24) || /* tests: few small buffers */
			 !strncmp(e, "PHASEPROF_MAX_BUFFERS=", 22) ||
			 !strncmp(e, "PHASEPROF_KEPT=", 15)) /* 0: no step_kept (agent_kept.c) */
			env[k++] = environ[j];
	}
	size_t k_own = k;
	if (mpi) {
		char both[2 * PATH_MAX + 2];
		snprintf(both, sizeof both, "%s:%s", agent, mpilib);
		env[k++] = env_join("LD_PRELOAD", both, old_pre);
	} else {
		env[k++] = env_join("LD_PRELOAD", agent, old_pre);
	}
	env[k++] = env_join("LD_AUDIT", agent, old_aud);
	/* the audit copy (own namespace) needs static TLS beyond glibc's small
	 * default surplus for the recorder's thread-local state */
	tun = env_join("GLIBC_TUNABLES", old_tun && *old_tun ? old_tun : "glibc.rtld.optional_static_tls=65536",
		       old_tun && *old_tun ? "glibc.rtld.optional_static_tls=65536" : NULL);
	env[k++] = tun;
	env[k++] = env_join("PHASEPROF_SPOOL_DIR", dir, NULL);
	env[k++] = env_join("PHASEPROF_AGENT", agent, NULL);
	env[k++] = env_join("PHASEPROF_FOLLOW_FORK", follow ? "1" : "0", NULL);
	env[k++] = env_join("PHASEPROF_MODE", detailed ? "detailed" : "default", NULL);
	if (!python)
		env[k++] = env_join("PHASEPROF_PYTHON", "0", NULL);
	if (hz) {
		snprintf(hzs, sizeof hzs, "%d", hz);
		env[k++] = env_join("PHASEPROF_SAMPLE_HZ", hzs, NULL);
	}
	if (agent_has_symbol(agent, "InitializeInjectionNvtx2")) {
		env[k++] = env_join("CUDA_INJECTION64_PATH", agent, NULL);
		env[k++] = env_join("NVTX_INJECTION64_PATH", agent, NULL);
	}
	env[k] = NULL;

	say("phaseprof: recording %s%s%s into %s\n", resolved, hz ? " (sampling)" : "",
		mpi ? " (MPI)" : "", out);
	if (sum_out)
		fflush(sum_out);

	struct timespec ts0, ts1;
	clock_gettime(CLOCK_MONOTONIC, &ts0);
	/* An MPI launcher that aborts a job kills its ranks and exits without
	 * reaping them: we adopt them, to learn how each ended. */
	if (mpi)
		prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L);
	early_ingest early_ing;
	early_watch(&early_ing, dir, mpi);
	struct sigaction chld = {0}, old_chld;
	chld.sa_handler = note_program_end;
	chld.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	if (early_ing.watch >= 0)
		sigaction(SIGCHLD, &chld, &old_chld);
	/* posix_spawn, not fork: the child shares our memory until it execs
	 * (glibc's CLONE_VFORK), so neither copies page tables nor leaves our
	 * pages copy-on-write for the threads that start next; an exec that
	 * fails is its return value */
	/* A file size limit (ulimit -f) must fail our writes (EFBIG, reported),
	 * not kill us by SIGXFSZ, from here on: the database is opened and
	 * spools ingested while the program runs. The program gets the
	 * disposition we were given. */
	struct sigaction xfsz_ign = {0}, old_xfsz;
	xfsz_ign.sa_handler = SIG_IGN;
	sigaction(SIGXFSZ, &xfsz_ign, &old_xfsz);
	posix_spawnattr_t sattr;
	posix_spawnattr_init(&sattr);
	if (old_xfsz.sa_handler == SIG_DFL) {
		sigset_t def;
		sigemptyset(&def);
		sigaddset(&def, SIGXFSZ);
		posix_spawnattr_setsigdefault(&sattr, &def);
		posix_spawnattr_setflags(&sattr, POSIX_SPAWN_SETSIGDEF);
	}
	pid_t pid;
	int exec_errno = posix_spawn(&pid, resolved, NULL, &sattr, cmd, env);
	posix_spawnattr_destroy(&sattr);
	for (size_t j = k_own; j < k; j++)
		free(env[j]);
	free(env);
	if (exec_errno) {
		if (early_ing.watch >= 0) {
			sigaction(SIGCHLD, &old_chld, NULL);
			close(early_ing.watch);
		}
		cli_error("record: cannot run %s: %s", resolved, strerror(exec_errno));
		rm_dir(dir);
		summary_close(ro.summary, 0);
		return 127;
	}
	child_pid = pid;
	/* like a shell waiting for a job: ^C goes to the program, we stay to ingest */
	struct sigaction ign = {0}, fwd = {0}, old_int, old_quit, old_term, old_hup;
	ign.sa_handler = SIG_IGN;
	fwd.sa_handler = forward;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fwd, &old_term);
	sigaction(SIGHUP, &fwd, &old_hup);
	/* the database is opened while the program runs, off the wait after
	 * it exits (early_open; a failure there is met again, and reported,
	 * after the run). Not while another writer has it open (a -wal or
	 * -journal beside it): the open would wait for that writer. */
	early_open eo = {.out = out};
	int early_created = access(out, F_OK) != 0;
	if (early_created || no_other_writer(out))
		early_open_start(&eo);
	int status = 0;
	wait_program(pid, &status, &early_ing, dir, &eo, keep_all, &ts1);
	if (early_ing.watch >= 0)
		sigaction(SIGCHLD, &old_chld, NULL);
	pp_store *early = early_open_join(&eo);
	if (mpi)
		reap_orphans(dir);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	int64_t wall = (int64_t)(ts1.tv_sec - ts0.tv_sec) * 1000000000 + (ts1.tv_nsec - ts0.tv_nsec);
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;

	int failed = 0;
	int recorded = ingest_and_report(out, dir, resolved, pid, code, sig, wall, keep_all, early, early_created,
					 &early_ing.slot, &failed);
	struct rlimit fsz;
	if ((failed || recorded <= 0) && getrlimit(RLIMIT_FSIZE, &fsz) == 0 && fsz.rlim_cur != RLIM_INFINITY)
		cli_error("record: the file size limit (ulimit -f) is %llu bytes: writes past it fail with EFBIG",
			  (unsigned long long)fsz.rlim_cur);
	if (failed)
		cli_error("record: spool files kept in %s (ingest them with 'phaseprof ingest DIR/*.spool -o DB')",
			  dir);
	else if (keep)
		say("phaseprof: spool files kept in %s\n", dir);
	else
		rm_dir(dir);
	if (early_ing.watch >= 0)
		close(early_ing.watch);
	/* the program's status stays the exit status; a summary that could
	 * not be written is reported on stderr */
	summary_close(ro.summary, recorded > 0);
	if (recorded <= 0) {
		/* the program's own status when it failed, else: nothing recorded */
		if (sig)
			return 128 + sig;
		return code ? code : 3;
	}
	if (sig)
		return 128 + sig;
	return code;
}
