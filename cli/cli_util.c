#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("phaseprof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

pp_store *cli_open_store(const char *path, int mode)
{
	char err[512];
	pp_store *st = pp_store_open(path, mode, err, sizeof err);
	if (!st)
		cli_error("%s", err);
	return st;
}

pp_store *cli_open_store_for_output(const char *cmd, const char *db, const char *out, int *status)
{
	pp_store *st = cli_open_store(db, PP_STORE_READ);
	*status = 1;
	if (st && strcmp(out, "-") != 0 && pp_store_is_file(st, out)) {
		cli_error("%s: %s: is the database being read; choose another output file", cmd, out);
		pp_store_close(st, NULL, 0);
		st = NULL;
		*status = 2;
	}
	return st;
}

int cli_close_store(pp_store *st)
{
	char err[512];
	if (pp_store_close(st, err, sizeof err) != 0) {
		cli_error("%s", err);
		return 1;
	}
	return 0;
}

int cli_is_help(const char *arg)
{
	return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

const char *cli_self_dir(void)
{
	static char dir[PATH_MAX];
	if (dir[0])
		return dir;
	ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
	if (n <= 0) {
		strcpy(dir, ".");
		return dir;
	}
	dir[n] = 0;
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	return dir;
}

int cli_parse_int64(const char *what, const char *s, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end) {
		cli_error("%s: '%s' is not a number", what, s);
		return -1;
	}
	*out = v;
	return 0;
}
