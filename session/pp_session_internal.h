/* pp_session_internal.h — what the session's files share (session/ only). */
#ifndef PP_SESSION_INTERNAL_H
#define PP_SESSION_INTERNAL_H

#include "pp_session.h"
#include "spool_reader.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <time.h>

/* The kernel takes a while to tear a large process down after its last
 * instruction (~1.5 ms for `import numpy` on this VM), and the agent closes
 * the spool before that. When the program's spool has been closed at its
 * exit and is the session's only one, it is ingested meanwhile, on the
 * other CPU; its parent's wait still has the last word on how it ended. */
typedef struct early_ingest {
	int watch, wd;           /* inotify on the spool folder, -1: none */
	pp_ingest_spool slot;    /* slot.ingested: tried */
	char path[PATH_MAX + 256];
	pp_spool_summary m;      /* its own account of how it ended */
} early_ingest;

/* The database opened while the program runs (session_finish.c). */
typedef struct early_open {
	const char *out;
	pthread_t thread;
	pid_t tid;
	_Atomic int tid_known, done, cancel;
	int started;
	pp_store *st;
	char err[512];
} early_open;

struct pp_session {
	pp_session_opts o;
	char dir[PATH_MAX];      /* the spool folder (absolute) */
	pid_t pid;
	struct timespec t0, t1;  /* spawn, the program's end */
	int status;              /* its wait status */
	int early_created;       /* the database did not exist at start */
	early_ingest ei;
	early_open eo;
	pp_store *early;         /* eo's store, joined after the wait */
	int waited;
	struct sigaction old_chld, old_int, old_quit, old_term, old_hup;
	/* finish's */
	pp_ingest_spool *sp;
	pp_diag_result *diag;
	int nsp;
	pp_store *st;
};

/* A message through o->report, "record: " and all. */
void session_say(const pp_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A new pass of ingest progress. */
void session_progress_reset(const pp_session *s);

/* session_env.c: the program's environment; entries from *own_from on are
 * its own (session_env_free frees them and the array). NULL: no memory. */
char **session_env_build(const pp_session_opts *o, const char *dir, size_t *own_from);
void session_env_free(char **env, size_t own_from);

/* session_spools.c */
int session_list_spools(const char *dir, pp_ingest_spool **out);
void session_free_spools(pp_ingest_spool *sp, int n);
int session_rm_dir(const char *dir);
void session_watch(early_ingest *e, const char *dir, int mpi);
int session_closed_at_exit(early_ingest *e, const char *dir, pid_t pid);

/* session_finish.c: the early open. It runs at nice 19 and is raised to
 * the caller's priority after this long, or when the program ends first. */
#define SESSION_EARLY_OPEN_RAISE_MS 20
void session_early_open_start(early_open *o);
int session_early_open_raise(early_open *o);
pp_store *session_early_open_join(early_open *o);
int session_no_other_writer(const char *db);

#endif
