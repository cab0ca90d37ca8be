/*
 * pp_session.h — the recording supervisor: runs one program under the
 * LD_PRELOAD agent (its environment: common/include/pp_env.h), waits for
 * it, and ingests and diagnoses every spool it left into a database.
 * `phaseprof record` is its options and its printing; this is the rest.
 *
 *   pp_session_check_command / pp_session_check_db   before anything runs
 *   pp_session_start    spool folder, environment, early open, spawn
 *   pp_session_wait     the program's end (signals forwarded meanwhile)
 *   pp_session_finish   ingest, indexes, diagnostics: the results
 *   pp_session_free     the database closed, the spool folder removed
 *
 * One session at a time per process: the supervisor owns SIGCHLD, SIGINT,
 * SIGQUIT, SIGTERM and SIGHUP between start and wait (like a shell waiting
 * for a job), and the program is its only child (but under MPI).
 *
 * Every message is one line in record's voice ("record: ..."), for the
 * caller to print after its "phaseprof: ".
 */
#ifndef PP_SESSION_H
#define PP_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "diagnostics.h"
#include "store.h"

typedef struct pp_session pp_session;

typedef struct pp_session_opts {
	const char *path;            /* the program (pp_session_check_command) */
	char *const *argv;           /* its arguments, argv[0] first, NULL-terminated */
	const char *db;              /* database to write (appended to) */
	const char *agent;           /* libphaseprof-agent.so */
	const char *mpi_lib;         /* libphaseprof-mpi.so preloaded after it; NULL: none */
	int sample_hz;               /* CPU samples per thread and second; 0: none */
	int detailed;                /* --mode detailed */
	int follow_fork;             /* 0: only the first process (and its execs) */
	int python;                  /* 0: the agent leaves CPython alone */
	int keep_all_spans;          /* pp_ingest_opts.keep_all_spans */
	int keep_spools;             /* pp_session_free leaves the spool folder */
	/* Called once the session is set up, just before the program starts. */
	void (*announce)(void *ud);
	/* An error or warning, one line; NULL: not said. */
	void (*report)(void *ud, const char *msg);
	/* Ingest progress; a NULL spool starts a new pass (seconds from 0). */
	pp_ingest_progress_fn progress;
	void *ud;                    /* for the three above */
} pp_session_opts;

/* Resolves cmd through PATH into resolved and refuses what LD_PRELOAD
 * cannot wrap (set-ID programs or interpreters, static binaries). 0, or
 * -1 with why in err. */
int pp_session_check_command(const char *cmd, char *resolved, size_t len, char *err, size_t errlen);

/* An MPI launcher (mpirun, mpiexec, srun...), or a program linking libmpi:
 * the PMPI layer is preloaded for it by default (1/0). */
int pp_session_is_mpi_command(const char *resolved);

/* The database must be usable before the program's time is spent: an
 * existing one a phaseprof database we may append to, a new one in a
 * writable folder. 0, or -1 with why in err. */
int pp_session_check_db(const char *db, char *err, size_t errlen);

/* Creates the spool folder ($TMPDIR or /tmp), starts opening the database
 * and spawns the program. 0, or the exit status record gives (2: the
 * session could not be set up, 127: the program could not be run) with
 * err set; *out is NULL then. */
int pp_session_start(const pp_session_opts *o, pp_session **out, char *err, size_t errlen);

/* Waits for the program (ingesting its spool meanwhile when it closed it
 * at exit and is alone); under MPI, reaps the launcher's orphans. Returns
 * the program's status as a shell gives it (128 + signal when killed). */
int pp_session_wait(pp_session *s);

typedef struct pp_session_result {
	int exit_code;               /* the program's; -1: killed */
	int term_signal;             /* 0: not killed */
	int64_t wall_ns;             /* spawn to the program's end */
	/* what record exits with: the program's status; 3 if it exited 0
	 * but nothing was recorded */
	int status;
	int ingested;                /* runs recorded; -1: the database could not be written */
	int failed;                  /* problems met: the spool folder is kept */
	int spools_kept;             /* the folder is left (failed, or keep_spools) */
	char spool_dir[4096];
	/* valid until pp_session_free: */
	pp_store *store;             /* open for reading the results; NULL: none */
	const pp_ingest_spool *spools; /* one per spool: run id, ingest result, error */
	const pp_diag_result *diag;  /* one per spool (empty when not diagnosed) */
	int nspools;
	int64_t top_run;             /* the program's first image's run, 0: none */
	int64_t last_top;            /* its last image's (after exec), 0: none */
	int64_t samples;             /* CPU samples symbolised */
	int findings;                /* over every run */
} pp_session_result;

/* Ingests every spool (parents first, the program's exit on its last
 * image), builds the indexes, stores each run's findings. 0; problems are
 * reported and counted in r->failed. */
int pp_session_finish(pp_session *s, pp_session_result *r);

/* Closes the database (an error there is reported and counted in
 * r->failed; r->store is NULL after), removes the spool folder unless
 * r->failed or keep_spools (r->spools_kept), frees the session and what
 * finish lent. r may be NULL when finish was not called (the program is
 * waited for first). */
void pp_session_free(pp_session *s, pp_session_result *r);

#endif
