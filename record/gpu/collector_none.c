/* The collector when phaseprof was built without the CUPTI headers: the
 * probe still runs so the reason recorded is the real one (no driver beats
 * "not built"), and phases simply carry no GPU correlation. */
#include "gpu_internal.h"
#include "phaseprof.h"

#include <stdio.h>
#include <string.h>

static ppgpu_probe_result status;
static int status_valid, stopped;

int ppgpu_start(const ppgpu_options *opts)
{
	if (opts && opts->skip_driver_probe) {
		memset(&status, 0, sizeof status);
		status.cu_result = status.cupti_result = -1;
		status.state = PPGPU_OK;
	} else {
		ppgpu_probe_driver(NULL, &status);
	}
	if (status.state == PPGPU_OK) {
		status.state = PPGPU_NOT_BUILT;
		snprintf(status.reason, sizeof status.reason,
			 "this phaseprof was built without the CUDA toolkit's CUPTI headers, so GPU activity "
			 "is not collected");
	}
	status_valid = 1;
	stopped = 0;
	return -1;
}

void ppgpu_stop(void)
{
	if (!status_valid || stopped)
		return;
	stopped = 1;
	ppgpu_record_status(&status, 0, 0);
}

int ppgpu_active(void)
{
	return 0;
}

const ppgpu_probe_result *ppgpu_status(void)
{
	return status_valid ? &status : NULL;
}

void ppgpu_collector_stats(ppgpu_decoder_stats *out)
{
	memset(out, 0, sizeof *out);
}

uint64_t ppgpu_phase_push(const char *name)
{
	(void)name;
	return 0;
}

void ppgpu_phase_pop(void)
{
}

__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
	ppgpu_options o = {0};
	o.skip_driver_probe = 1;
	ppgpu_start(&o);
	return 1;
}
