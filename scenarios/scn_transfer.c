/*
 * transfer — "the GPU sits idle while data is copied every step" (GPU only).
 *
 * Listed so users see it and why it cannot run here: it needs a CUDA driver
 * and device (the profiler's probe, profiler/gpu/ppgpu.h, says what is
 * missing) and flow device kernels. On a machine without them `phaseprof
 * run transfer` reports the probe's reason instead of running.
 */
#include "scn_internal.h"

#include <stdio.h>
#include <string.h>

#ifdef PP_HAVE_GPU_PROBE
#include "ppgpu.h"
#endif

static int transfer_available(char *why, size_t len)
{
#ifdef PP_HAVE_GPU_PROBE
	ppgpu_probe_result r;
	if (ppgpu_probe_driver(NULL, &r) != PPGPU_OK) {
		snprintf(why, len, "no usable GPU (%s): %s", ppgpu_state_name(r.state), r.reason);
		return 0;
	}
	/* A driver and a device exist, but flow only has CPU kernels: the
	 * workload would measure nothing on the device. */
	snprintf(why, len,
		 "GPU %s found, but flow was built with CPU kernels only (no device placement "
		 "for the copy/compute workload)",
		 r.device_name[0] ? r.device_name : "device 0");
	return 0;
#else
	snprintf(why, len, "phaseprof was built without the GPU probe (profiler/gpu)");
	return 0;
#endif
}

static int transfer_unavailable(scn_env *e)
{
	char why[512];
	transfer_available(why, sizeof why);
	return scn_fail(e, "transfer cannot run here: %s", why);
}

static const scn_variant variants[] = {
	{"per-step-copy", SCN_SLOW,
	 "inputs copied host->device from pageable memory inside every step, then synchronised",
	 transfer_unavailable, NULL},
	{"pinned-async", SCN_FIX, "pinned host buffers, asynchronous copies overlapped with compute",
	 transfer_unavailable, NULL},
	{"resident", SCN_FIX, "the data set kept on the device; no copies inside the loop",
	 transfer_unavailable, NULL},
};

static const char *const rules[] = {"gpu_step_transfers", "gpu_sync_copies", "gpu_idle_gaps"};

const pp_scenario scn_transfer = {
	.name = "transfer",
	.complaint = "training on the GPU is slow: the GPU idles while data is copied every step",
	.source = "001 (data transfer to the device), 002 (data transfer per iteration)",
	.metric = "time of the training steps",
	.variants = variants,
	.n_variants = SCN_COUNT(variants),
	.rules = rules,
	.n_rules = SCN_COUNT(rules),
	.available = transfer_available,
};
