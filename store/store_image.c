/* A new database from the built-in image: parsing and running the schema's
 * CREATE statements was a fifth of a short `record`. */
#include "store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static int write_all(int fd, const unsigned char *p, size_t n)
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

int store_image_place(const char *path)
{
	static atomic_uint seq;
	char tmp[4096];
	if (pp_store_image_len == 0)
		return -1;
	/* a -wal or -journal left beside a missing file would be replayed onto
	 * the image; SQLite discards them only for an empty file */
	static const char *const side[] = {"-wal", "-journal"};
	for (int i = 0; i < 2; i++) {
		int n = snprintf(tmp, sizeof tmp, "%s%s", path, side[i]);
		if (n < 0 || (size_t)n >= sizeof tmp || access(tmp, F_OK) == 0 || errno != ENOENT)
			return -1;
	}
	int n = snprintf(tmp, sizeof tmp, "%s.%ld-%u.new", path, (long)getpid(), atomic_fetch_add(&seq, 1));
	if (n < 0 || (size_t)n >= sizeof tmp)
		return -1;
	/* owner only, as perf.data: a recording holds command lines, paths,
	 * host names (pp_store_open) */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int rc = write_all(fd, pp_store_image, pp_store_image_len);
	if (close(fd) != 0)
		rc = -1;
	/* link, unlike rename, never replaces a file another writer made first */
	if (rc == 0 && link(tmp, path) != 0)
		rc = errno == EEXIST ? 1 : -1;
	unlink(tmp);
	return rc;
}
