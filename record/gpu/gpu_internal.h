/* gpu_internal.h — shared between the files of record/gpu/ only. */
#ifndef PPGPU_INTERNAL_H
#define PPGPU_INTERNAL_H

#include "ppgpu.h"

/* CUDA driver results the probe maps (cuda.h values; CUDA 13's header no
 * longer names 35, so they are spelled out here and need no CUDA header). */
enum {
	PPGPU_CU_SUCCESS = 0,
	PPGPU_CU_INVALID_VALUE = 1,
	PPGPU_CU_OUT_OF_MEMORY = 2,
	PPGPU_CU_NOT_INITIALIZED = 3,
	PPGPU_CU_STUB_LIBRARY = 34,
	PPGPU_CU_INSUFFICIENT_DRIVER = 35,
	PPGPU_CU_CALL_REQUIRES_NEWER_DRIVER = 36,
	PPGPU_CU_DEVICE_UNAVAILABLE = 46,
	PPGPU_CU_NO_DEVICE = 100,
	PPGPU_CU_INVALID_DEVICE = 101,
	PPGPU_CU_DEVICE_NOT_LICENSED = 102,
	PPGPU_CU_OPERATING_SYSTEM = 304,
	PPGPU_CU_NOT_PERMITTED = 800,
	PPGPU_CU_NOT_SUPPORTED = 801,
	PPGPU_CU_SYSTEM_NOT_READY = 802,
	PPGPU_CU_SYSTEM_DRIVER_MISMATCH = 803,
	PPGPU_CU_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
	PPGPU_CU_UNKNOWN = 999,
};

/* CUPTI results the probe names (cupti_result.h values). */
enum {
	PPGPU_CUPTI_SUCCESS = 0,
	PPGPU_CUPTI_NOT_INITIALIZED = 15,
	PPGPU_CUPTI_INSUFFICIENT_PRIVILEGES = 35,
	PPGPU_CUPTI_MULTIPLE_SUBSCRIBERS = 39,
	PPGPU_CUPTI_VIRT_INSUFFICIENT_PRIVILEGES = 40,
	PPGPU_CUPTI_UNKNOWN = 999,
};

/* libcupti, loaded once by the probe and kept loaded: CUDA 13.0-13.1 crash
 * when libcupti is unloaded without cuptiFinalize. NULL if not loaded. */
void *ppgpu__cupti_lib(void);
/* Subscribes for the probe / the collector; on success *handle is set and
 * stays subscribed until ppgpu__cupti_unsubscribe. Returns the CUptiResult. */
int ppgpu__cupti_subscribe(void **handle, char *holder, size_t holder_len);
void ppgpu__cupti_unsubscribe(void *handle);
/* The callback the subscription forwards CUPTI's API callbacks to (NULL: none). */
void ppgpu__cupti_set_callback(void (*fn)(void *ud, int domain, uint32_t cbid, const void *data));
/* Fills reason/state from a CUPTI failure during start. */
void ppgpu__cupti_failure(ppgpu_probe_result *r, const char *what, int cupti_result);

#endif
