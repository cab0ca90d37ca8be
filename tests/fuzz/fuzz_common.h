/* fuzz_common.h — what both weight-file fuzz targets do: parse an
 * exact-size copy of the input (any read past the end is caught), read every
 * byte of every tensor of an accepted file and convert it (an offset that
 * escaped validation shows up as an ASan report), and require a one-line
 * message for every rejection. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weights.h"

static void fuzz_touch(flow_weights *w)
{
	volatile unsigned sum = 0;
	for (int i = 0; i < flow_weights_count(w); i++) {
		const flow_weight *t = flow_weights_at(w, i);
		const unsigned char *p = t->data;
		for (size_t k = 0; k < t->nbytes; k++)
			sum += p[k];
		size_t sz = flow_wdtype_size(t->dtype);
		if (sz && t->nbytes / sz < (1u << 20)) {
			float *f = malloc((t->nbytes / sz + 1) * sizeof *f);
			if (f) {
				flow_weights_to_f32(t, f);
				free(f);
			}
		}
		if (flow_weights_find(w, t->name) == NULL)
			abort();
	}
	(void)sum;
}

typedef flow_weights *(*fuzz_parse_fn)(const void *buf, size_t len, const char *label, char *err,
				       size_t errlen);

static inline int fuzz_weights(const uint8_t *data, size_t size, fuzz_parse_fn parse, const char *label)
{
	char err[512];
	unsigned char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	err[0] = 0;
	flow_weights *w = parse(buf, size, label, err, sizeof err);
	if (w) {
		fuzz_touch(w);
		flow_weights_close(w);
	} else if (!err[0] || strchr(err, '\n')) {
		abort();
	}
	free(buf);
	return 0;
}

#endif
