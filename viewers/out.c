/* out.c — the output sink: one buffer in front of a FILE, a gzFile or memory.
 * Formatting a million events goes through pp_out_i64/pp_out_us rather than
 * printf, which is several times slower for plain integers. */
#include "pp_json.h"
#include "viewers.h"
#include "pp_grow.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

enum { OUT_FILE, OUT_GZ, OUT_MEM };
#define OUT_BUF (1 << 16)

struct pp_out {
	int type;
	FILE *fp;
	gzFile gz;
	char *path;
	char *dest;               /* file outputs: renamed from tmp on success */
	char *tmp;
	char *buf;                /* OUT_FILE/OUT_GZ: staging buffer; OUT_MEM: the data */
	size_t len, cap;
	int failed;
	int err_no;
};

static void out_flush(pp_out *o)
{
	if (o->type == OUT_MEM || o->len == 0)
		return;
	if (!o->failed) {
		if (o->type == OUT_FILE) {
			if (fwrite(o->buf, 1, o->len, o->fp) != o->len) {
				o->failed = 1;
				o->err_no = errno;
			}
		} else if (gzwrite(o->gz, o->buf, (unsigned)o->len) != (int)o->len) {
			o->failed = 1;
			o->err_no = errno;
		}
	}
	o->len = 0;
}

static const char *file_type(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
		: S_ISFIFO(m) ? "a named pipe" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* Opens a temporary file beside the destination; the destination itself is
 * only replaced, by rename, once everything was written. An existing
 * destination must be a regular file (a symbolic link is followed, so the
 * link stays and its target is replaced). A new file is the owner's only
 * (0600, as perf writes perf.data: a report holds command lines, paths
 * and names of the recorded program); an existing one keeps its mode.
 * Returns the descriptor or -1. */
static int open_tmp(pp_out *o, const char *path, char *err, size_t errlen)
{
	struct stat sb;
	mode_t mode;
	char real[PATH_MAX];
	const char *dest = path;
	if (stat(path, &sb) == 0) {
		if (!S_ISREG(sb.st_mode)) {
			snprintf(err, errlen, "%s: is %s; refusing to write over it (choose a file)", path,
				 file_type(sb.st_mode));
			return -1;
		}
		if (realpath(path, real))
			dest = real;
		mode = sb.st_mode & 07777;
	} else if (errno == ENOENT) {
		mode = 0600;
	} else {
		snprintf(err, errlen, "%s: cannot open for writing: %s", path, strerror(errno));
		return -1;
	}
	size_t n = strlen(dest);
	o->dest = strdup(dest);
	o->tmp = malloc(n + 32);
	if (!o->dest || !o->tmp) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	const char *slash = strrchr(dest, '/');
	size_t dirlen = slash ? (size_t)(slash - dest) + 1 : 0;
	snprintf(o->tmp, n + 32, "%.*s.%s.tmp-XXXXXX", (int)dirlen, dest, dest + dirlen);
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot create a temporary file beside it: %s", path,
			 strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	if (fchmod(fd, mode) != 0) {
		snprintf(err, errlen, "%s: cannot set the mode of %s: %s", path, o->tmp, strerror(errno));
		close(fd);
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	return fd;
}

pp_out *pp_out_open(const char *path, int gzip, char *err, size_t errlen)
{
	pp_out *o = calloc(1, sizeof *o);
	if (!o) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	o->path = strdup(path);
	o->cap = OUT_BUF;
	o->buf = malloc(o->cap);
	int to_stdout = strcmp(path, "-") == 0;
	int fd = to_stdout ? 1 : open_tmp(o, path, err, errlen);
	if (fd < 0)
		goto fail;
	if (gzip) {
		o->type = OUT_GZ;
		o->gz = gzdopen(to_stdout ? dup(1) : fd, "wb6");
		if (!o->gz) {
			snprintf(err, errlen, "%s: cannot open for writing: %s", path,
				 errno ? strerror(errno) : "zlib error");
			goto fail;
		}
	} else {
		o->type = OUT_FILE;
		o->fp = to_stdout ? stdout : fdopen(fd, "wb");
		if (!o->fp) {
			snprintf(err, errlen, "%s: cannot open for writing: %s", path, strerror(errno));
			goto fail;
		}
	}
	if (!o->buf || !o->path) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	return o;
fail:
	if (o->fp && o->fp != stdout)
		fclose(o->fp);
	else if (o->gz)
		gzclose(o->gz);
	else if (fd > 1)
		close(fd);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->dest);
	free(o->buf);
	free(o->path);
	free(o);
	return NULL;
}

pp_out *pp_out_memory(void)
{
	pp_out *o = calloc(1, sizeof *o);
	if (!o)
		return NULL;
	o->type = OUT_MEM;
	o->cap = 4096;
	o->buf = malloc(o->cap);
	o->path = strdup("(memory)");
	if (!o->buf || !o->path) {
		free(o->buf);
		free(o->path);
		free(o);
		return NULL;
	}
	o->buf[0] = 0;
	return o;
}

void pp_out_write(pp_out *o, const void *p, size_t n)
{
	if (o->type == OUT_MEM) {
		if (PP_GROW(o->buf, o->len + n + 1, o->cap) != 0) {
			o->failed = 1;
			o->err_no = ENOMEM;
			return;
		}
		memcpy(o->buf + o->len, p, n);
		o->len += n;
		o->buf[o->len] = 0;
		return;
	}
	if (o->len + n > o->cap) {
		out_flush(o);
		if (n > o->cap) {   /* large block: write straight through */
			o->len = n;
			char *save = o->buf;
			o->buf = (char *)p;
			out_flush(o);
			o->buf = save;
			return;
		}
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

void pp_out_puts(pp_out *o, const char *s) { pp_out_write(o, s, strlen(s)); }

void pp_out_putc(pp_out *o, int c)
{
	char ch = (char)c;
	if (o->type != OUT_MEM && o->len < o->cap) {
		o->buf[o->len++] = ch;
		return;
	}
	pp_out_write(o, &ch, 1);
}

void pp_out_printf(pp_out *o, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		pp_out_write(o, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		o->failed = 1;
		o->err_no = ENOMEM;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	pp_out_write(o, big, (size_t)n);
	free(big);
}

void pp_out_i64(pp_out *o, int64_t v)
{
	char tmp[24];
	int i = sizeof tmp;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		tmp[--i] = '-';
	pp_out_write(o, tmp + i, sizeof tmp - (size_t)i);
}

void pp_out_us(pp_out *o, int64_t ns)
{
	/* Exact decimal microseconds: no float rounding, so nesting that holds
	 * in ns holds in the printed µs too. */
	if (ns < 0) {
		pp_out_putc(o, '-');
		ns = -ns;
	}
	pp_out_i64(o, ns / 1000);
	int frac = (int)(ns % 1000);
	if (frac) {
		char t[5] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
			     (char)('0' + frac % 10), 0};
		pp_out_write(o, t, 4);
	}
}

void pp_out_html(pp_out *o, const char *s)
{
	if (!s)
		return;
	const char *run = s;
	for (; *s; s++) {
		const char *rep = NULL;
		switch (*s) {
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '&': rep = "&amp;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&#39;"; break;
		default:
			/* Control characters are not valid in XML (SVG), nor are
			 * bytes that are not UTF-8 */
			if (((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t') || *s == 0x7f)
				rep = " ";
			else if ((unsigned char)*s >= 0x80) {
				int n = pp_utf8_len((const unsigned char *)s);
				if (n == 0)
					rep = "&#xfffd;";
				else
					s += n - 1; /* a whole character, kept */
			}
		}
		if (rep) {
			pp_out_write(o, run, (size_t)(s - run));
			pp_out_puts(o, rep);
			run = s + 1;
		}
	}
	pp_out_write(o, run, (size_t)(s - run));
}

static void out_sink(void *ud, const char *p, size_t n) { pp_out_write(ud, p, n); }

void pp_out_json_str(pp_out *o, const char *s) { pp_json_string(out_sink, o, s); }

const char *pp_out_data(pp_out *o, size_t *len)
{
	if (o->type != OUT_MEM) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = o->len;
	return o->buf;
}

static int out_finish(pp_out *o, int keep, char *err, size_t errlen)
{
	if (!o)
		return 0;
	out_flush(o);
	int rc = 0;
	if (o->type == OUT_FILE) {
		if (fflush(o->fp) != 0 && !o->failed) {
			o->failed = 1;
			o->err_no = errno;
		}
		if (o->tmp && keep && !o->failed && fsync(fileno(o->fp)) != 0 && errno != EINVAL) {
			o->failed = 1;
			o->err_no = errno;
		}
		if (o->fp != stdout && fclose(o->fp) != 0 && !o->failed) {
			o->failed = 1;
			o->err_no = errno;
		}
	} else if (o->type == OUT_GZ) {
		if (gzclose(o->gz) != Z_OK && !o->failed) {
			o->failed = 1;
			o->err_no = errno;
		}
	}
	if (o->tmp) {
		if (keep && !o->failed && rename(o->tmp, o->dest) != 0) {
			o->failed = 1;
			o->err_no = errno;
		}
		if (!keep || o->failed)
			unlink(o->tmp); /* whatever stood at the destination is untouched */
	}
	if (o->failed && keep) {
		if (err)
			snprintf(err, errlen, "%s: write failed: %s", o->path,
				 o->err_no ? strerror(o->err_no) : "unknown error");
		rc = -1;
	}
	free(o->tmp);
	free(o->dest);
	free(o->buf);
	free(o->path);
	free(o);
	return rc;
}

int pp_out_close(pp_out *o, char *err, size_t errlen) { return out_finish(o, 1, err, errlen); }

void pp_out_abort(pp_out *o) { out_finish(o, 0, NULL, 0); }
