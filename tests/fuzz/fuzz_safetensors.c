/* libFuzzer target: the safetensors reader on arbitrary bytes. */
#include <stdint.h>
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_weights(data, size, flow_safetensors_parse, "fuzz.safetensors");
}
