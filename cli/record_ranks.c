/*
 * record_ranks.c — the expansion of %r (rank), %h (host), %p (pid) in
 * record's output name, for one database per rank under a launcher.
 * (Whether a command is an MPI job is the session's:
 * pp_session_is_mpi_command.)
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* A value from the environment or the system (%r, %h) as one name in the
 * path: letters, digits, '-', '_' and '.' only (others become '_'), never
 * starting with '.' (no "..", no hidden file, no '/': RANK=../../x or a
 * host name cannot move the output). */
static const char *name_safe(const char *v, char *buf, size_t n)
{
	size_t k = 0;
	for (; v[k] && k + 1 < n; k++) {
		char c = v[k];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
			 c == '_' || (c == '.' && k > 0);
		buf[k] = ok ? c : '_';
	}
	buf[k] = 0;
	return buf;
}

int cli_expand_output(const char *in, char *out, size_t outlen)
{
	size_t k = 0;
	for (const char *p = in; *p; p++) {
		char buf[256], safe[256];
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
				add = name_safe(add, safe, sizeof safe);
				break;
			case 'h':
				if (gethostname(buf, sizeof buf) != 0)
					snprintf(buf, sizeof buf, "unknown-host");
				buf[sizeof buf - 1] = 0;
				add = name_safe(buf, safe, sizeof safe);
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
