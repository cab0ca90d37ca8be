/*
 * session_spawn.c — the program: found and checked, spawned with the
 * agent's environment, waited for like a shell waits for a job (^C goes
 * to the program; the supervisor stays to ingest), and, under an MPI
 * launcher, the ranks it leaves behind reaped with how they ended noted
 * in their spools.
 */
#include "pp_session_internal.h"
#include "elf_file.h"
#include "spool_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

void session_say(const pp_session *s, const char *fmt, ...)
{
	if (!s->o.report)
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	s->o.report(s->o.ud, msg);
}

void session_progress_reset(const pp_session *s)
{
	if (s->o.progress)
		s->o.progress(s->o.ud, NULL, 0, 0, 0.0);
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

int pp_session_check_command(const char *cmd, char *resolved, size_t len, char *err, size_t errlen)
{
	int r = find_in_path(cmd, resolved, len);
	if (r == -1) {
		snprintf(err, errlen, "record: %s: command not found", cmd);
		return -1;
	}
	if (r == -2) {
		snprintf(err, errlen, "record: %s: found in PATH but not executable", cmd);
		return -1;
	}
	struct stat st;
	if (stat(resolved, &st) != 0) {
		snprintf(err, errlen, "record: %s: %s", resolved, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "record: %s: not a regular file", resolved);
		return -1;
	}
	if (access(resolved, X_OK) != 0) {
		snprintf(err, errlen, "record: %s: not executable (permission denied)", resolved);
		return -1;
	}
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		snprintf(err, errlen, "record: %s: set-user/group-ID program; the loader ignores LD_PRELOAD for it, "
			 "so it cannot be recorded", resolved);
		return -1;
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
				snprintf(err, errlen, "record: %s: its interpreter %s is set-user/group-ID and cannot be recorded",
					 resolved, interp);
				return -1;
			}
		}
	}
	if (pp_elf_is_static(target) == 1) {
		snprintf(err, errlen, "record: %s: statically linked; LD_PRELOAD cannot wrap it (no dynamic loader runs)",
			 target);
		return -1;
	}
	return 0;
}

static const char *const launchers[] = {
	"mpirun", "mpiexec", "orterun", "mpiexec.hydra", "mpiexec.openmpi", "mpirun.openmpi",
	"mpiexec.mpich", "mpirun.mpich", "srun", "prun", "oshrun", NULL,
};

/* The file names libmpi among its dependencies: its dynamic string table
 * holds "libmpi.so" (a needed library, or a versioned name of one). Only
 * that table is read: a whole-file scan of a large interpreter cost more
 * than the rest of record's start. */
static int links_libmpi(const char *path)
{
	pp_elf e;
	if (pp_elf_open(path, &e) != 0)
		return 0;
	int found = pp_elf_dynstr_has(&e, "libmpi.so", 0) || pp_elf_dynstr_has(&e, "libmpich.so", 0);
	pp_elf_close(&e);
	return found;
}

int pp_session_is_mpi_command(const char *resolved)
{
	const char *base = strrchr(resolved, '/');
	base = base ? base + 1 : resolved;
	for (int i = 0; launchers[i]; i++)
		if (strcmp(base, launchers[i]) == 0)
			return 1;
	char real[4096];
	if (realpath(resolved, real)) {
		base = strrchr(real, '/');
		base = base ? base + 1 : real;
		for (int i = 0; launchers[i]; i++)
			if (strcmp(base, launchers[i]) == 0)
				return 1;
	}
	return links_libmpi(resolved);
}

/* ---------------------------------------------------------------- signals */

/* One session at a time: the handlers' state. */
static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

/* When the program ended, for its wall time: the session may be ingesting
 * then. (Set in a SIGCHLD handler: the program is the only child unless
 * MPI makes us a subreaper, when no ingest overlaps the wait.) */
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

/* ---------------------------------------------------------------- start */

int pp_session_start(const pp_session_opts *o, pp_session **out, char *err, size_t errlen)
{
	int rc = 2;
	char **env = NULL;
	size_t own_from = 0;
	*out = NULL;
	pp_session *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "record: %s", strerror(ENOMEM));
		return rc;
	}
	s->o = *o;
	s->ei.watch = -1;
	const char *tmp = getenv("TMPDIR");
	snprintf(s->dir, sizeof s->dir, "%s/phaseprof-record-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->dir)) {
		snprintf(err, errlen, "record: cannot create a spool folder %s: %s", s->dir, strerror(errno));
		s->dir[0] = 0;
		goto fail;
	}
	/* the agent gets an absolute folder: processes chdir before they fork */
	if (s->dir[0] != '/') {
		char abs[PATH_MAX];
		if (!realpath(s->dir, abs)) {
			snprintf(err, errlen, "record: cannot resolve the spool folder %s: %s", s->dir, strerror(errno));
			goto fail;
		}
		snprintf(s->dir, sizeof s->dir, "%s", abs);
	}
	env = session_env_build(o, s->dir, &own_from);
	if (!env) {
		snprintf(err, errlen, "record: %s", strerror(ENOMEM));
		goto fail;
	}
	if (o->announce)
		o->announce(o->ud);

	int mpi = o->mpi_lib != NULL;
	child_pid = 0;
	program_ended = 0;
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	/* An MPI launcher that aborts a job kills its ranks and exits without
	 * reaping them: we adopt them, to learn how each ended. */
	if (mpi)
		prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L);
	session_watch(&s->ei, s->dir, mpi);
	struct sigaction chld = {0};
	chld.sa_handler = note_program_end;
	chld.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	if (s->ei.watch >= 0)
		sigaction(SIGCHLD, &chld, &s->old_chld);
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
	int exec_errno = posix_spawn(&s->pid, o->path, NULL, &sattr, o->argv, env);
	posix_spawnattr_destroy(&sattr);
	session_env_free(env, own_from);
	env = NULL;
	if (exec_errno) {
		if (s->ei.watch >= 0) {
			sigaction(SIGCHLD, &s->old_chld, NULL);
			close(s->ei.watch);
		}
		snprintf(err, errlen, "record: cannot run %s: %s", o->path, strerror(exec_errno));
		rc = 127;
		goto fail;
	}
	child_pid = s->pid;
	/* like a shell waiting for a job: ^C goes to the program, we stay to ingest */
	struct sigaction ign = {0}, fwd = {0};
	ign.sa_handler = SIG_IGN;
	fwd.sa_handler = forward;
	sigaction(SIGINT, &ign, &s->old_int);
	sigaction(SIGQUIT, &ign, &s->old_quit);
	sigaction(SIGTERM, &fwd, &s->old_term);
	sigaction(SIGHUP, &fwd, &s->old_hup);
	/* the database is opened while the program runs, off the wait after
	 * it exits (a failure there is met again, and reported, after the
	 * run). Not while another writer has it open (a -wal or -journal
	 * beside it): the open would wait for that writer. */
	s->eo.out = o->db;
	s->early_created = access(o->db, F_OK) != 0;
	if (s->early_created || session_no_other_writer(o->db))
		session_early_open_start(&s->eo);
	*out = s;
	return 0;
fail:
	session_env_free(env, own_from);
	if (s->dir[0])
		session_rm_dir(s->dir);
	free(s);
	return rc;
}

/* ---------------------------------------------------------------- wait */

/* Waits for the program (its wait status in s->status, the time it ended
 * in s->t1); ingests its spool into the early store meanwhile when it can
 * (s->ei.slot.ingested). */
static void wait_program(pp_session *s)
{
	early_ingest *e = &s->ei;
	early_open *eo = &s->eo;
	pid_t pid = s->pid;
	int pfd = eo->started || (e->watch >= 0 && eo->st) ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	/* a program that keeps both CPUs busy (numpy's OpenBLAS threads spin
	 * a while) leaves the open no idle time at all: after a while it runs
	 * at our priority (without, 1 run in 3 opened only after the exit) */
	int raise_ms = eo->started ? SESSION_EARLY_OPEN_RAISE_MS : -1;
	while (pfd >= 0) {
		struct pollfd p[2] = {{pfd, POLLIN, 0}, {e->watch, POLLIN, 0}};
		int n = poll(p, e->watch >= 0 ? 2 : 1, raise_ms);
		if (n < 0 && errno != EINTR)
			break;
		if (n == 0) {
			if (!atomic_load(&eo->done))
				(void)session_early_open_raise(eo);
			raise_ms = -1;
			if (e->watch < 0)
				break; /* the exit is all that is left to wait for */
			continue;
		}
		if (p[0].revents)
			break;
		if ((p[1].revents & POLLIN) && session_closed_at_exit(e, s->dir, pid)) {
			pp_ingest_session_opts so = {(uint32_t)pid, e->m.exit_code, 0, s->o.keep_all_spans,
						     s->o.progress, s->o.ud, 0};
			e->slot.path = e->path;
			/* woken by the close, we may have preempted one of the
			 * program's threads that its exit waits for (joined at
			 * exit): it goes first (1.5 ms of overlap lost without) */
			sched_yield();
			pp_store *st = session_early_open_join(eo);
			if (!st)
				break;
			session_progress_reset(s);
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
	while (waitpid(pid, &s->status, 0) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &s->t1);
	if (program_ended) /* during the ingest: the wait came after */
		s->t1 = program_end;
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

int pp_session_wait(pp_session *s)
{
	if (!s->waited) {
		wait_program(s);
		if (s->ei.watch >= 0)
			sigaction(SIGCHLD, &s->old_chld, NULL);
		s->early = session_early_open_join(&s->eo);
		if (s->o.mpi_lib)
			reap_orphans(s->dir);
		sigaction(SIGINT, &s->old_int, NULL);
		sigaction(SIGQUIT, &s->old_quit, NULL);
		sigaction(SIGTERM, &s->old_term, NULL);
		sigaction(SIGHUP, &s->old_hup, NULL);
		child_pid = 0;
		s->waited = 1;
	}
	if (WIFSIGNALED(s->status))
		return 128 + WTERMSIG(s->status);
	return WIFEXITED(s->status) ? WEXITSTATUS(s->status) : -1;
}
