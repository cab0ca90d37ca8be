/* fuzz_spool_common.h — what the spool fuzz target and the corpus replay do
 * with one input: the reader's own walk, the session summary, and a full
 * ingest into a scratch database. Returns the ingest's result (0 / -1);
 * aborts when a rejection has no one-line message naming the file. */
#ifndef FUZZ_SPOOL_COMMON_H
#define FUZZ_SPOOL_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spool_reader.h"
#include "store.h"

static int spool_fuzz_one(pp_store *st, const char *path, const unsigned char *data, size_t size,
			  char *err, size_t errlen)
{
	/* the reader over memory: every chunk it hands out lies in the input */
	pp_spool_reader *r = pp_spool_reader_open_mem(data, size, path, err, errlen);
	if (r) {
		pp_spool_chunk c;
		volatile unsigned sum = 0;
		while (pp_spool_reader_next(r, &c))
			if (c.size)
				sum += c.data[0] + c.data[c.size - 1];
		(void)sum;
		if (pp_spool_reader_end(r) > size)
			abort();
		pp_spool_reader_close(r);
	}
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	pp_spool_summary s;
	err[0] = 0;
	if (pp_spool_summarise(path, &s, err, errlen) != 0 && (!strstr(err, path) || strchr(err, '\n')))
		abort();
	err[0] = 0;
	pp_ingest_result res;
	int rc = pp_store_ingest(st, path, NULL, &res, err, errlen);
	if (rc != 0 && (!strstr(err, path) || strchr(err, '\n')))
		abort();
	if (rc == 0 && res.truncated && res.truncated_at > size)
		abort();
	return rc;
}

#endif
