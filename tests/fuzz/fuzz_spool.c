/* libFuzzer target: the spool reader and ingest on arbitrary bytes. */
#include <stdint.h>
#include "fuzz_spool_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pp_store *st;
static char db[64], spool[64];
static unsigned runs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	/* a fresh scratch database now and then keeps it small */
	if (!st || ++runs % 2000 == 0) {
		if (st)
			pp_store_close(st, NULL, 0);
		snprintf(db, sizeof db, "/tmp/pp-fuzz-spool-%d.db", (int)getpid());
		snprintf(spool, sizeof spool, "/tmp/pp-fuzz-spool-%d.spool", (int)getpid());
		unlink(db);
		st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
		if (!st)
			abort();
	}
	spool_fuzz_one(st, spool, data, size, err, sizeof err);
	return 0;
}
