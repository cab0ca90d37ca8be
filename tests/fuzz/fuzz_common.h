/* fuzz_common.h — what both weight-file fuzz targets do with an accepted
 * file: read every byte of every tensor and convert it, so an offset that
 * escaped validation shows up as an ASan report. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

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

#endif
