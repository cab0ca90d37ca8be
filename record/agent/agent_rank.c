/*
 * agent_rank.c — the rank identity of a process started by a parallel
 * launcher, read from the launcher's environment at start-up and stored as
 * run_meta (rank, world_size, local_rank, job, rank.source).
 *
 * Launchers and their variables, first match wins:
 *   Open MPI   OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK, job PMIX_NAMESPACE
 *   PMIx       PMIX_RANK, job PMIX_NAMESPACE
 *   Slurm      SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID, job SLURM_JOB_ID.SLURM_STEP_ID
 *   MPICH/PMI  PMI_RANK / PMI_SIZE, job PMI_JOBID or MPI_LOCALNRANKS' kvsname
 *   torchrun   RANK / WORLD_SIZE / LOCAL_RANK, job TORCHELASTIC_RUN_ID, else
 *              MASTER_ADDR:MASTER_PORT (unique per job while it runs)
 * A process with none of them records nothing here.
 */
#include "agent_internal.h"
#include "phaseprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

typedef struct source {
	const char *name, *rank, *size, *local, *job;
} source;

static const source sources[] = {
	{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_NAMESPACE"},
	{"pmix", "PMIX_RANK", NULL, NULL, "PMIX_NAMESPACE"},
	{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_JOB_ID"},
	{"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_JOBID"},
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID"},
};

void ppa_rank_meta(void)
{
	for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
		const source *s = &sources[i];
		const char *rank = env(s->rank);
		if (!rank)
			continue;
		char job[256];
		const char *j = s->job ? env(s->job) : NULL;
		if (j && strcmp(s->name, "slurm") == 0 && env("SLURM_STEP_ID"))
			snprintf(job, sizeof job, "slurm:%s.%s", j, env("SLURM_STEP_ID"));
		else if (j)
			snprintf(job, sizeof job, "%s:%s", s->name, j);
		else if (env("MASTER_ADDR") && env("MASTER_PORT"))
			snprintf(job, sizeof job, "%s:%s:%s", s->name, env("MASTER_ADDR"), env("MASTER_PORT"));
		else
			snprintf(job, sizeof job, "%s:unknown", s->name);
		pp_meta("rank", rank);
		if (s->size && env(s->size))
			pp_meta("world_size", env(s->size));
		if (s->local && env(s->local))
			pp_meta("local_rank", env(s->local));
		pp_meta("job", job);
		pp_meta("rank.source", s->name);
		return;
	}
}
