/* libFuzzer target: the npy reader on arbitrary bytes. */
#include <stdint.h>
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	/* exact-size copy: any read past the end is caught */
	unsigned char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	err[0] = 0;
	flow_weights *w = flow_npy_parse(buf, size, "fuzz.npy", err, sizeof err);
	if (w) {
		fuzz_touch(w);
		flow_weights_close(w);
	} else if (!err[0] || strchr(err, '\n')) {
		abort(); /* every rejection has a one-line message */
	}
	free(buf);
	return 0;
}
