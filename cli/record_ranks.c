/*
 * record_ranks.c — what `record` needs to know about parallel jobs: whether
 * a command is an MPI job (to preload the PMPI layer), and the expansion of
 * %r (rank), %h (host), %p (pid) in the output name for one database per
 * rank under a launcher.
 */
#include "cli.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const launchers[] = {
	"mpirun", "mpiexec", "orterun", "mpiexec.hydra", "mpiexec.openmpi", "mpirun.openmpi",
	"mpiexec.mpich", "mpirun.mpich", "srun", "prun", "oshrun", NULL,
};

/* The file names libmpi among its dependencies (its dynamic string table
 * holds "libmpi.so"); a cheap scan is enough to choose a default. */
static int links_libmpi(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	int found = 0;
	if (fstat(fd, &st) == 0 && st.st_size > 4 && S_ISREG(st.st_mode)) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			found = memcmp(p, "\177ELF", 4) == 0 &&
				(memmem(p, (size_t)st.st_size, "libmpi.so", 9) != NULL ||
				 memmem(p, (size_t)st.st_size, "libmpich.so", 11) != NULL);
			munmap(p, (size_t)st.st_size);
		}
	}
	close(fd);
	return found;
}

int cli_is_mpi_command(const char *resolved)
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

const char *cli_env_rank(void)
{
	static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID",
					    "PMI_RANK", "RANK", NULL};
	for (int i = 0; names[i]; i++) {
		const char *v = getenv(names[i]);
		if (v && *v)
			return v;
	}
	return NULL;
}

int cli_expand_output(const char *in, char *out, size_t outlen)
{
	size_t k = 0;
	for (const char *p = in; *p; p++) {
		char buf[256];
		const char *add = NULL;
		if (p[0] == '%' && p[1]) {
			p++;
			switch (*p) {
			case 'r':
				add = cli_env_rank();
				if (!add) {
					cli_error("record: -o %s: %%r but no rank in the environment (no launcher variable: "
						  "OMPI_COMM_WORLD_RANK, PMIX_RANK, SLURM_PROCID, PMI_RANK, RANK)", in);
					return -1;
				}
				break;
			case 'h':
				if (gethostname(buf, sizeof buf) != 0)
					snprintf(buf, sizeof buf, "unknown-host");
				buf[sizeof buf - 1] = 0;
				add = buf;
				break;
			case 'p':
				snprintf(buf, sizeof buf, "%ld", (long)getpid());
				add = buf;
				break;
			case '%':
				add = "%";
				break;
			default:
				cli_error("record: -o %s: unknown %%%c (%%r rank, %%h host, %%p pid, %%%% a percent sign)",
					  in, *p);
				return -1;
			}
		}
		size_t n = add ? strlen(add) : 1;
		if (k + n + 1 > outlen) {
			cli_error("record: -o %s: name too long once expanded", in);
			return -1;
		}
		memcpy(out + k, add ? add : p, n);
		k += n;
	}
	out[k] = 0;
	return 0;
}
