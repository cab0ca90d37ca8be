/* scn_testutil.h — running `phaseprof` from the scenario tests and reading
 * the database it wrote. */
#ifndef SCN_TESTUTIL_H
#define SCN_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "scenarios.h"
#include "store.h"

/* Runs `bin args...` (NULL-terminated) with stdout+stderr captured into a
 * malloc'd string (*out, may be NULL). Extra environment: env "K=V" or NULL.
 * Returns the exit status (0..255), 128+signal when killed, -1 on error. */
int scn_t_run(const char *bin, const char *const *args, const char *env, char **out);
/* A fresh temporary folder (static buffer per call site: copy it). */
char *scn_t_tmpdir(void);
/* Removes a folder made by scn_t_tmpdir. */
void scn_t_rmdir(const char *dir);
/* Run id of scenario:variant in the store, 0 if absent. */
int64_t scn_t_run_id(pp_store *st, const char *scenario, const char *variant);
/* 1 if str contains sub. */
int scn_t_has(const char *str, const char *sub);

#endif
