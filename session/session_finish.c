/*
 * session_finish.c — the database: checked before the program runs,
 * opened while it runs (a thread at nice 19), then every spool ingested,
 * indexed and diagnosed; closed at the end.
 */
#include "pp_session_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------------- before */

static void folder_of(const char *path, char *folder, size_t n)
{
	snprintf(folder, n, "%s", path);
	char *slash = strrchr(folder, '/');
	if (slash)
		*(slash == folder ? slash + 1 : slash) = 0;
	else
		snprintf(folder, n, ".");
}

/* Opening for writing here would cost the schema set-up twice. */
int pp_session_check_db(const char *out, char *err, size_t errlen)
{
	char folder[PATH_MAX];
	folder_of(out, folder, sizeof folder);
	if (access(out, F_OK) == 0) {
		/* through SQLite (another record may be creating it right now: no
		 * tables yet is fine), which parses the whole schema: ~0.4 ms
		 * before the program starts, but a file carrying its own SQL
		 * (a trigger, a view) is refused before the program runs, not
		 * after (the header alone cannot show it) */
		pp_store *probe = pp_store_open(out, PP_STORE_CHECK, err, errlen);
		if (!probe)
			return -1;
		pp_store_close(probe, NULL, 0);
		if (access(out, W_OK) != 0) {
			snprintf(err, errlen, "record: %s: not writable (%s)", out, strerror(errno));
			return -1;
		}
		/* an append writes a journal beside the file: a read-only folder
		 * failed it after the program had run */
		if (access(folder, W_OK) != 0) {
			snprintf(err, errlen, "record: %s: its folder %s is not writable (%s): SQLite keeps its "
				 "journal there", out, folder, strerror(errno));
			return -1;
		}
		/* refused before the program runs, as the append would be after */
		struct stat sb;
		if (stat(out, &sb) == 0 && sb.st_uid != geteuid() && !pp_store_foreign_allowed()) {
			snprintf(err, errlen, "record: %s: belongs to another user (uid %u); not appending to it "
				 "(--force to append)", out, (unsigned)sb.st_uid);
			return -1;
		}
		return 0;
	}
	if (access(folder, W_OK) != 0) {
		snprintf(err, errlen, "record: cannot create %s: folder %s is not writable (%s)", out, folder,
			 strerror(errno));
		return -1;
	}
	return 0;
}

/* No -wal or -journal beside db: no other writer is in the middle of it. */
int session_no_other_writer(const char *db)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s-wal", db);
	if (access(p, F_OK) == 0)
		return 0;
	snprintf(p, sizeof p, "%s-journal", db);
	return access(p, F_OK) != 0;
}

/* ------------------------------------------------------- while it runs */

/* The database is opened while the program runs (a new one's schema, an
 * existing one's checks and its switch to WAL), in a thread at nice 19:
 * the CPU it takes is one the program leaves idle (at nice 0 it took ~1.5 ms
 * from `import numpy` on 2 CPUs, at nice 10 as much). After
 * SESSION_EARLY_OPEN_RAISE_MS, or when the program ends first, the thread
 * is raised to the caller's priority; where that is not allowed
 * (RLIMIT_NICE), it is told at the end to give up and the open is done
 * again at full priority, so a loaded machine cannot leave it starving. */
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

void session_early_open_start(early_open *o)
{
	o->started = pthread_create(&o->thread, NULL, early_open_main, o) == 0;
}

/* The thread at our own priority again: 0, or -1 where not allowed. */
int session_early_open_raise(early_open *o)
{
	if (!atomic_load(&o->tid_known))
		return -1;
	return setpriority(PRIO_PROCESS, (id_t)o->tid, getpriority(PRIO_PROCESS, 0));
}

pp_store *session_early_open_join(early_open *o)
{
	if (!o->started)
		return o->st;
	o->started = 0;
	if (!atomic_load(&o->done) && session_early_open_raise(o) != 0)
		atomic_store(&o->cancel, 1);
	pthread_join(o->thread, NULL);
	if (!o->st && atomic_load(&o->cancel))
		o->st = pp_store_open(o->out, PP_STORE_WRITE, o->err, sizeof o->err);
	return o->st;
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

/* ---------------------------------------------------------------- after */

/* Findings of every recorded run are stored (the last write, so the log
 * can be synced meanwhile). d: one result per slot. */
static void diagnose(pp_session *s, pp_diag_result *d)
{
	for (int i = 0; i < s->nsp; i++)
		if (s->sp[i].run_id && pp_diag_run(s->st, s->sp[i].run_id, &d[i]) != 0) {
			session_say(s, "record: diagnostics of run %lld: %s", (long long)s->sp[i].run_id, d[i].error);
			pp_diag_result_free(&d[i]);
			memset(&d[i], 0, sizeof d[i]);
		}
}

int pp_session_finish(pp_session *s, pp_session_result *r)
{
	pp_session_wait(s);
	memset(r, 0, sizeof *r);
	int code = WIFEXITED(s->status) ? WEXITSTATUS(s->status) : -1;
	int sig = WIFSIGNALED(s->status) ? WTERMSIG(s->status) : 0;
	r->exit_code = code;
	r->term_signal = sig;
	r->wall_ns = (int64_t)(s->t1.tv_sec - s->t0.tv_sec) * 1000000000 + (s->t1.tv_nsec - s->t0.tv_nsec);
	snprintf(r->spool_dir, sizeof r->spool_dir, "%s", s->dir);

	/* the program's spool ingested while it exited keeps its slot */
	const pp_ingest_spool *done = &s->ei.slot;
	pp_store *early = s->early;
	s->early = NULL;
	s->eo.st = NULL; /* finish owns it now (s->st, or dropped) */
	s->nsp = session_list_spools(s->dir, &s->sp);
	for (int i = 0; done->ingested && i < s->nsp; i++)
		if (!strcmp(s->sp[i].path, done->path)) {
			const char *path = s->sp[i].path;
			s->sp[i] = *done;
			s->sp[i].path = path;
		}
	if (!s->nsp) {
		drop_early(early, s->early_created, s->o.db);
		session_say(s, "record: nothing was recorded: %s left no spool (did the agent load? see messages "
			    "above)", s->o.path);
		goto out;
	}
	if (early) {
		s->st = early;
	} else {
		char err[512];
		s->st = pp_store_open(s->o.db, PP_STORE_WRITE, err, sizeof err);
		if (!s->st) {
			session_say(s, "%s", err);
			r->failed++;
			goto out;
		}
	}
	pp_ingest_session_opts so = {(uint32_t)s->pid, code, sig, s->o.keep_all_spans, s->o.progress, s->o.ud, 0};
	session_progress_reset(s);
	r->ingested = pp_store_ingest_session(s->st, s->sp, s->nsp, &so);
	/* the indexes now, in bulk after the rows: the diagnostics (and the
	 * caller's summary) read through them (without, a read by kind
	 * scanned the run's spans once per kind); close adds those of tables
	 * they filled */
	char ierr[512];
	if (r->ingested && pp_store_build_indexes(s->st, ierr, sizeof ierr) != 0)
		session_say(s, "record: %s", ierr);
	s->diag = calloc((size_t)s->nsp, sizeof *s->diag);
	if (s->diag)
		diagnose(s, s->diag);
	pp_store_sync_ahead(s->st);
	for (int i = 0; i < s->nsp; i++) {
		const pp_ingest_spool *p = &s->sp[i];
		if (!p->run_id || p->err[0]) {
			session_say(s, "record: %s", p->err);
			r->failed++;
		}
		if (!p->run_id)
			continue;
		if (p->is_top && !r->top_run)
			r->top_run = p->run_id;
		if (p->is_last_top)
			r->last_top = p->run_id;
		if (p->res.truncated)
			session_say(s, "record: run %lld: %s", (long long)p->run_id, p->res.note);
		char stopped[400];
		if (pp_store_run_meta(s->st, p->run_id, "agent.stopped", stopped, sizeof stopped) == 0)
			session_say(s, "record: run %lld: %s", (long long)p->run_id, stopped);
		if (pp_store_run_meta(s->st, p->run_id, "agent.child_unrecorded", stopped, sizeof stopped) == 0)
			session_say(s, "record: run %lld: a child could not be recorded (run_meta "
				    "agent.child_unrecorded): %s", (long long)p->run_id, stopped);
		r->samples += (int64_t)p->res.samples;
		if (s->diag)
			r->findings += s->diag[i].n;
	}
	r->store = s->st;
	r->spools = s->sp;
	r->diag = s->diag;
	r->nspools = s->nsp;
out:
	if (r->failed && !r->ingested)
		r->ingested = -1;
	/* the program's own status when it failed, else 3 when nothing was
	 * recorded */
	if (sig)
		r->status = 128 + sig;
	else
		r->status = r->ingested <= 0 && !code ? 3 : code;
	return 0;
}

void pp_session_free(pp_session *s, pp_session_result *r)
{
	if (!s)
		return;
	int failed = r ? r->failed : 0;
	if (s->st) {
		char err[512];
		if (pp_store_close(s->st, err, sizeof err) != 0) {
			session_say(s, "%s", err);
			failed++;
		}
		s->st = NULL;
	}
	if (!s->waited)
		pp_session_wait(s);
	/* finish never ran: the early open is not needed */
	pp_store *early = s->early ? s->early : session_early_open_join(&s->eo);
	if (early)
		pp_store_close(early, NULL, 0);
	int kept = failed || s->o.keep_spools;
	if (!kept)
		session_rm_dir(s->dir);
	if (s->ei.watch >= 0)
		close(s->ei.watch);
	for (int i = 0; s->diag && i < s->nsp; i++)
		pp_diag_result_free(&s->diag[i]);
	free(s->diag);
	session_free_spools(s->sp, s->nsp);
	if (r) {
		r->failed = failed;
		if (failed && !r->ingested)
			r->ingested = -1;
		r->spools_kept = kept;
		r->store = NULL;
		r->spools = NULL;
		r->diag = NULL;
		r->nspools = 0;
	}
	free(s);
}
