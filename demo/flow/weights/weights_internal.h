/* weights_internal.h — shared by the weight-file readers and writers. */
#ifndef FLOW_WEIGHTS_INTERNAL_H
#define FLOW_WEIGHTS_INTERNAL_H

#include "weights.h"

#include <stdarg.h>
#include <sys/uio.h>

struct flow_weights {
	void *map;              /* munmap on close (NULL when parsed from memory) */
	size_t map_len;
	void **heap;            /* owned buffers (text data, fortran copies) */
	int n_heap, cap_heap;
	flow_weight *t;
	int n, cap;
	char **meta;            /* key0, value0, key1, ... (owned) */
	int n_meta;
	size_t file_bytes;
};

flow_weights *weights_new(void);
/* Appends a tensor; takes ownership of name. Returns its slot or NULL. */
flow_weight *weights_add(flow_weights *w, char *name);
int weights_own(flow_weights *w, void *buf);
/* One-line error "label: ..." into err; returns NULL for convenience. */
void *werr(char *err, size_t errlen, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Bytes of prod(shape) elements of dtype, or -1 on overflow. */
int weights_nbytes(flow_wdtype t, const int64_t *shape, int rank, size_t *out);
/* Writes the iovecs to a temp file next to path, fsyncs, renames. */
int weights_atomic_write(const char *path, const struct iovec *iov, int n,
			 char *err, size_t errlen);
const char *weights_basename(const char *path);

#endif
