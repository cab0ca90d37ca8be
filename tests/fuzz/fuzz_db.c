/* libFuzzer target: the database reader on arbitrary file contents (mutated
 * small phaseprof databases: damaged pages, foreign schemas, newer versions). */
#include <stdint.h>
#include <unistd.h>

#include "fuzz_db_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	if (!path[0])
		snprintf(path, sizeof path, "/tmp/pp-fuzz-db-%d.db", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	if (size && fwrite(data, 1, size, f) != size) {
		fclose(f);
		return 0;
	}
	fclose(f);
	char err[512];
	fz_read_db(path, err, sizeof err);
	unlink(path);
	return 0;
}
