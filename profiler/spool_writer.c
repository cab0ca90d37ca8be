#include "recorder_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

int pp_spool_create(pp_spool_writer *w, const char *path, int exclusive, char *err, size_t errlen)
{
	memset(w, 0, sizeof *w);
	w->fd = -1;
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND | (exclusive ? O_EXCL : O_TRUNC);
	int fd = open(path, flags, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create spool %s: %s", path, strerror(errno));
		return -1;
	}
	w->fd = fd;
	snprintf(w->path, sizeof w->path, "%s", path);
	return 0;
}

static int write_all(pp_spool_writer *w, struct iovec *iov, int n)
{
	if (w->failed || w->fd < 0)
		return -1;
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	while (total > 0) {
		ssize_t k = writev(w->fd, iov, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			w->failed = errno;
			return -1;
		}
		w->bytes += (uint64_t)k;
		total -= (size_t)k;
		/* advance the iovecs past what was written (short writes are rare) */
		while (k > 0 && n > 0) {
			if ((size_t)k >= iov->iov_len) {
				k -= (ssize_t)iov->iov_len;
				iov++;
				n--;
			} else {
				iov->iov_base = (char *)iov->iov_base + k;
				iov->iov_len -= (size_t)k;
				k = 0;
			}
		}
	}
	return 0;
}

int pp_spool_write_header(pp_spool_writer *w, const pp_spool_header *h)
{
	struct iovec iov = {(void *)h, sizeof *h};
	return write_all(w, &iov, 1);
}

int pp_spool_write_chunk2(pp_spool_writer *w, uint16_t type, uint32_t tid, const void *p1,
			  uint32_t n1, const void *p2, uint32_t n2)
{
	static const char pad[8];
	pp_chunk_header h = {0};
	h.magic = PP_CHUNK_MAGIC;
	h.type = type;
	h.tid = tid;
	h.size = n1 + n2;
	uLong crc = crc32(0L, Z_NULL, 0);
	if (n1)
		crc = crc32(crc, p1, n1);
	if (n2)
		crc = crc32(crc, p2, n2);
	h.crc = (uint32_t)crc;
	struct iovec iov[4] = {
		{&h, sizeof h}, {(void *)p1, n1}, {(void *)p2, n2}, {(void *)pad, (8 - (h.size & 7)) & 7},
	};
	return write_all(w, iov, 4);
}

int pp_spool_write_chunk(pp_spool_writer *w, uint16_t type, uint32_t tid, const void *payload,
			 uint32_t size)
{
	return pp_spool_write_chunk2(w, type, tid, payload, size, NULL, 0);
}

void pp_spool_close(pp_spool_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}
