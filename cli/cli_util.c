#include "cli.h"
#include "pp_json.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>

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

int cli_lib_path(const char *file, char *out, size_t cap)
{
	/* the build folder's layout first: what the tests run */
	static const char *const dirs[] = {"", "/" CLI_PKGLIB_FROM_BIN};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		int n = snprintf(out, cap, "%s%s/%s", cli_self_dir(), dirs[i], file);
		if (n > 0 && (size_t)n < cap && access(out, R_OK) == 0) {
			/* bin/../lib/... named plainly: it shows in LD_PRELOAD,
			 * doctor's output and the run's python.dir */
			char real[PATH_MAX];
			if (realpath(out, real) && strlen(real) < cap)
				strcpy(out, real);
			return 0;
		}
	}
	snprintf(out, cap, "%s/%s", cli_self_dir(), file);
	return -1;
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

/* ---- text for a terminal ----
 * Names in a recording come from other programs (executables, arguments,
 * op and thread names) and from whoever sent the file: an ESC or BEL in
 * one, printed as it is, is a command to the terminal (retitle it, move
 * the cursor over earlier lines, set colours, some terminals more). The
 * CLI's stdout and stderr go through this filter: C0 controls but newline
 * and tab, DEL, C1 controls (U+0080..U+009F) and bytes that are not UTF-8
 * are written as \xNN (\u00NN for C1), everything else as it is. */
typedef struct tty_filter {
	int fd;
	unsigned char carry[4]; /* a character cut at the end of one write */
	int ncarry;
} tty_filter;

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Bytes a UTF-8 character starting with c takes, 0 for a byte no
 * character starts with. */
static int lead_len(unsigned c)
{
	return c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

/* Filters n bytes at p into out (room for 6 bytes per input byte); sets
 * *used to the bytes consumed (the rest: a character cut short at the end,
 * only when more may follow). Returns the bytes written to out. */
static size_t tty_escape(const unsigned char *p, size_t n, int more, size_t *used, char *out)
{
	size_t i = 0, o = 0;
	static const char hex[] = "0123456789abcdef";
	while (i < n) {
		unsigned c = p[i];
		if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
			out[o++] = (char)c;
			i++;
			continue;
		}
		int len = lead_len(c);
		if (len > 1 && i + (size_t)len > n && more) {
			/* cut short by the end of the write: wait for the rest if what
			 * there is can start a character */
			unsigned char t[4] = {0};
			memcpy(t, p + i, n - i);
			int ok = 1;
			for (size_t k = 1; k < n - i; k++)
				ok &= (t[k] & 0xc0) == 0x80;
			if (ok)
				break;
		}
		int valid = len > 1 && i + (size_t)len <= n;
		if (valid) {
			unsigned char t[5] = {0};
			memcpy(t, p + i, (size_t)len);
			valid = pp_utf8_len(t) == len;
		}
		if (valid && !(c == 0xc2 && p[i + 1] < 0xa0)) {
			memcpy(out + o, p + i, (size_t)len);
			o += (size_t)len;
			i += (size_t)len;
		} else if (valid) { /* C1 control */
			memcpy(out + o, "\\u00", 4);
			out[o + 4] = hex[p[i + 1] >> 4];
			out[o + 5] = hex[p[i + 1] & 15];
			o += 6;
			i += 2;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
			i++;
		}
	}
	*used = i;
	return o;
}

static ssize_t tty_write(void *cookie, const char *buf, size_t size)
{
	tty_filter *f = cookie;
	unsigned char in[4096 + 4];
	char out[6 * sizeof in];
	size_t done = 0;
	while (done < size || f->ncarry) {
		size_t take = size - done < 4096 ? size - done : 4096;
		memcpy(in, f->carry, (size_t)f->ncarry);
		memcpy(in + f->ncarry, buf + done, take);
		size_t n = (size_t)f->ncarry + take, used;
		done += take;
		size_t o = tty_escape(in, n, 1, &used, out);
		f->ncarry = (int)(n - used);
		memcpy(f->carry, in + used, (size_t)f->ncarry);
		if (write_all(f->fd, out, o) != 0)
			return -1;
		if (take == 0)
			break; /* only a cut character left: kept for the next write */
	}
	return (ssize_t)size;
}

static int tty_close(void *cookie)
{
	tty_filter *f = cookie;
	char out[32];
	size_t used;
	size_t o = tty_escape(f->carry, (size_t)f->ncarry, 0, &used, out);
	f->ncarry = 0;
	return write_all(f->fd, out, o);
}

static tty_filter tty_out = {1, {0}, 0}, tty_err = {2, {0}, 0};

static void tty_flush_carry(void)
{
	fflush(NULL);
	tty_close(&tty_out);
	tty_close(&tty_err);
}

int cli_safe_stdio(int filter_stdout)
{
	cookie_io_functions_t io = {.write = tty_write, .close = tty_close};
	FILE *e = fopencookie(&tty_err, "w", io);
	if (!e)
		return -1;
	setvbuf(e, NULL, _IONBF, 0);
	stderr = e;
	if (filter_stdout) {
		FILE *o = fopencookie(&tty_out, "w", io);
		if (!o)
			return -1;
		/* as the real stdout: line-buffered on a terminal */
		setvbuf(o, NULL, isatty(1) ? _IOLBF : _IOFBF, BUFSIZ);
		stdout = o;
	}
	atexit(tty_flush_carry);
	return 0;
}
