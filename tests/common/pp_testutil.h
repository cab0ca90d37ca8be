/*
 * pp_testutil.h — what several test suites share: one-value queries on a
 * store (a failed query fails the current cmocka test), ingesting a spool,
 * running a program or a shell line with its output captured, reading a
 * file whole, scratch folders. Include after <cmocka.h>.
 */
#ifndef PP_TESTUTIL_H
#define PP_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The first column of the first row: -1 when there is no row, -2 when the
 * value is NULL. */
int64_t ppt_q_int(pp_store *st, const char *sql);
double ppt_q_double(pp_store *st, const char *sql); /* -1 when there is no row */
/* Text of the first column into out ("" when none); returns out. */
char *ppt_q_text(pp_store *st, const char *sql, char *out, size_t n);

/* Runs argv[0] (a path) with env's NAME, VALUE pairs (NULL-terminated) set,
 * its stdout, and its stderr too when merge_stderr, into out (terminated).
 * Returns the exit status, 128 + signal for a killed program. */
int ppt_run(char *const argv[], const char *const env[], int merge_stderr, char *out, size_t n);

/* The whole file as a string (malloc'd; "" when it cannot be read). */
char *ppt_slurp(const char *path);

/* A shell command line run in dir, stdout and stderr into dir/out and
 * dir/err, stdin empty. Returns the exit status the shell saw, 128 + signal
 * for a killed command. */
int ppt_sh(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A fresh folder /tmp/<prefix>-XXXXXX into dir (0, or -1); and removing one
 * with everything in it (0, or -1). */
int ppt_tmpdir(char *dir, size_t n, const char *prefix);
int ppt_rmtree(const char *dir);

/* Opens db (created; an old one is removed) and ingests spool into it:
 * the store, or the current test fails. */
pp_store *ppt_ingest(const char *spool, const char *db, pp_ingest_result *res);

#endif
