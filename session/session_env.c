/*
 * session_env.c — the recorded program's environment: record's own, less
 * any PHASEPROF_* variable not passed through (a stale one must not
 * redirect a recording), plus the agent preloaded (and loaded as the
 * rtld-audit module) and the settings the agent reads (pp_env.h).
 */
#include "pp_session_internal.h"
#include "elf_file.h"
#include "pp_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* e is "name=..." */
static int env_is(const char *e, const char *name)
{
	size_t n = strlen(name);
	return strncmp(e, name, n) == 0 && e[n] == '=';
}

/* What record passes through of its own PHASEPROF_* variables: the user's
 * and the tests' settings of the agent; PHASEPROF_PYTHON unless the
 * session turns Python off itself. */
static int passed_through(const char *e, int python)
{
	static const char *const keep[] = {
		PP_ENV_CLOCK, PP_ENV_ALLOC_SAMPLE, PP_ENV_AGENT_PERIOD_MS,
		PP_ENV_PYSTACK_FAKE_VERSION, /* tests: an unchecked CPython */
		PP_ENV_BUFFER_EVENTS,        /* tests: few small buffers */
		PP_ENV_MAX_BUFFERS,
		PP_ENV_KEPT,                 /* 0: no step_kept (agent_kept.c) */
		NULL,
	};
	if (strncmp(e, PP_ENV_PREFIX, strlen(PP_ENV_PREFIX)) != 0)
		return 1;
	if (python && env_is(e, PP_ENV_PYTHON))
		return 1;
	for (int i = 0; keep[i]; i++)
		if (env_is(e, keep[i]))
			return 1;
	return 0;
}

static char *env_join(const char *name, const char *first, const char *rest)
{
	size_t n = strlen(name) + strlen(first) + (rest ? strlen(rest) : 0) + 3;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s=%s%s%s", name, first, rest && *rest ? ":" : "", rest ? rest : "");
	return s;
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

char **session_env_build(const pp_session_opts *o, const char *dir, size_t *own_from)
{
	size_t ne = 0;
	while (environ[ne])
		ne++;
	char **env = calloc(ne + 16, sizeof *env);
	if (!env)
		return NULL;
	const char *agent = o->agent;
	char hzs[32];
	size_t k = 0;
	const char *old_pre = NULL, *old_aud = NULL, *old_tun = NULL;
	for (size_t j = 0; j < ne; j++) {
		const char *e = environ[j];
		if (env_is(e, "LD_PRELOAD"))
			old_pre = e + 11;
		else if (env_is(e, "LD_AUDIT"))
			old_aud = e + 9;
		else if (env_is(e, "GLIBC_TUNABLES"))
			old_tun = e + 15;
		else if (passed_through(e, o->python))
			env[k++] = environ[j];
	}
	*own_from = k;
	/* the PMPI layer goes after the agent in LD_PRELOAD: its wrappers call
	 * the recorder the agent exports */
	if (o->mpi_lib) {
		char both[2 * PATH_MAX + 2];
		snprintf(both, sizeof both, "%s:%s", agent, o->mpi_lib);
		env[k++] = env_join("LD_PRELOAD", both, old_pre);
	} else {
		env[k++] = env_join("LD_PRELOAD", agent, old_pre);
	}
	env[k++] = env_join("LD_AUDIT", agent, old_aud);
	/* the audit copy (own namespace) needs static TLS beyond glibc's small
	 * default surplus for the recorder's thread-local state */
	env[k++] = env_join("GLIBC_TUNABLES", old_tun && *old_tun ? old_tun : "glibc.rtld.optional_static_tls=65536",
			    old_tun && *old_tun ? "glibc.rtld.optional_static_tls=65536" : NULL);
	env[k++] = env_join(PP_ENV_SPOOL_DIR, dir, NULL);
	env[k++] = env_join(PP_ENV_AGENT, agent, NULL);
	env[k++] = env_join(PP_ENV_FOLLOW_FORK, o->follow_fork ? "1" : "0", NULL);
	env[k++] = env_join(PP_ENV_MODE, o->detailed ? "detailed" : "default", NULL);
	if (!o->python)
		env[k++] = env_join(PP_ENV_PYTHON, "0", NULL);
	if (o->sample_hz) {
		snprintf(hzs, sizeof hzs, "%d", o->sample_hz);
		env[k++] = env_join(PP_ENV_SAMPLE_HZ, hzs, NULL);
	}
	if (agent_has_symbol(agent, "InitializeInjectionNvtx2")) {
		env[k++] = env_join("CUDA_INJECTION64_PATH", agent, NULL);
		env[k++] = env_join("NVTX_INJECTION64_PATH", agent, NULL);
	}
	env[k] = NULL;
	for (size_t j = *own_from; j < k; j++)
		if (!env[j]) {
			for (j = *own_from; j < k; j++)
				free(env[j]);
			free(env);
			return NULL;
		}
	return env;
}

void session_env_free(char **env, size_t own_from)
{
	if (!env)
		return;
	for (size_t j = own_from; env[j]; j++)
		free(env[j]);
	free(env);
}
