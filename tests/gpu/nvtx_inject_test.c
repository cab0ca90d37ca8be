/* The injection library for the NVTX test before `phaseprof record` exists
 * in this build: phaseprof_gpu + the recorder in one .so, opening the
 * recorder on load ($PHASEPROF_OUT) and closing it at exit, as the agent does. */
#include "phaseprof.h"
#include "ppgpu.h"

int InitializeInjectionNvtx2(const void *(*get)(uint32_t));
/* referencing it pulls nvtx_inject.o out of the archive; default visibility exports it */
__attribute__((used)) static void *keep = (void *)&InitializeInjectionNvtx2;

__attribute__((constructor)) static void open_recorder(void)
{
	pp_open(NULL);
}

__attribute__((destructor)) static void close_recorder(void)
{
	pp_close();
}
