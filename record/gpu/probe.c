/* The driver probe. CUPTI without a working driver answers only
 * CUPTI_ERROR_UNKNOWN (measured with CUDA 13.0), so the driver itself is asked
 * first: dlopen(libcuda.so.1) and cuInit(0), each failure mapped to a plain
 * sentence. Needs no CUDA header; function types are declared here. */
#include "gpu_internal.h"
#include "pp_env.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_int_fn)(int *);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_device_name_fn)(char *, int, int);

static const struct {
	int code;
	const char *name;
} cu_names[] = {
	{PPGPU_CU_SUCCESS, "CUDA_SUCCESS"},
	{PPGPU_CU_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
	{PPGPU_CU_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
	{PPGPU_CU_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
	{PPGPU_CU_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY"},
	{PPGPU_CU_INSUFFICIENT_DRIVER, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
	{PPGPU_CU_CALL_REQUIRES_NEWER_DRIVER, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
	{PPGPU_CU_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
	{PPGPU_CU_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
	{PPGPU_CU_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
	{PPGPU_CU_DEVICE_NOT_LICENSED, "CUDA_ERROR_DEVICE_NOT_LICENSED"},
	{PPGPU_CU_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM"},
	{PPGPU_CU_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
	{PPGPU_CU_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
	{PPGPU_CU_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY"},
	{PPGPU_CU_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
	{PPGPU_CU_COMPAT_NOT_SUPPORTED_ON_DEVICE, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
	{PPGPU_CU_UNKNOWN, "CUDA_ERROR_UNKNOWN"},
};

const char *ppgpu_cu_result_name(int code)
{
	static __thread char buf[32];
	for (size_t i = 0; i < sizeof cu_names / sizeof cu_names[0]; i++)
		if (cu_names[i].code == code)
			return cu_names[i].name;
	snprintf(buf, sizeof buf, "CUresult %d", code);
	return buf;
}

const char *ppgpu_cupti_result_name(int code)
{
	static __thread char buf[32];
	switch (code) {
	case PPGPU_CUPTI_SUCCESS: return "CUPTI_SUCCESS";
	case PPGPU_CUPTI_NOT_INITIALIZED: return "CUPTI_ERROR_NOT_INITIALIZED";
	case PPGPU_CUPTI_INSUFFICIENT_PRIVILEGES: return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
	case PPGPU_CUPTI_MULTIPLE_SUBSCRIBERS: return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
	case PPGPU_CUPTI_VIRT_INSUFFICIENT_PRIVILEGES: return "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES";
	case PPGPU_CUPTI_UNKNOWN: return "CUPTI_ERROR_UNKNOWN";
	}
	snprintf(buf, sizeof buf, "CUptiResult %d", code);
	return buf;
}

static const char *state_names[PPGPU_STATE_COUNT] = {
	"ok", "no_driver", "stub_driver", "no_device", "driver_too_old",
	"driver_mismatch", "no_permission", "driver_error", "cupti_missing",
	"cupti_busy", "cupti_error", "not_built", "unused",
};

const char *ppgpu_state_name(int state)
{
	if (state < 0 || state >= PPGPU_STATE_COUNT)
		return "invalid";
	return state_names[state];
}

int ppgpu_state_from_cu_result(int r)
{
	switch (r) {
	case PPGPU_CU_SUCCESS: return PPGPU_OK;
	case PPGPU_CU_STUB_LIBRARY: return PPGPU_STUB_DRIVER;
	case PPGPU_CU_NO_DEVICE: return PPGPU_NO_DEVICE;
	case PPGPU_CU_INSUFFICIENT_DRIVER:
	case PPGPU_CU_CALL_REQUIRES_NEWER_DRIVER: return PPGPU_DRIVER_TOO_OLD;
	case PPGPU_CU_SYSTEM_DRIVER_MISMATCH:
	case PPGPU_CU_COMPAT_NOT_SUPPORTED_ON_DEVICE: return PPGPU_DRIVER_MISMATCH;
	case PPGPU_CU_NOT_PERMITTED: return PPGPU_NO_PERMISSION;
	default: return PPGPU_DRIVER_ERROR;
	}
}

const char *ppgpu_state_advice(int state)
{
	switch (state) {
	case PPGPU_OK:
		return "GPU tracing will record kernels, memcpy/memset, CUDA runtime and driver calls,\n"
		       "synchronisation and CUPTI overhead, on the recorder's clock, tied to phases.";
	case PPGPU_NO_DRIVER:
	case PPGPU_STUB_DRIVER:
	case PPGPU_NO_DEVICE:
		return "GPU tracing will not record anything on this machine; flow runs its CUDA ops on the CPU.\n"
		       "CPU phases, spans, samples, allocations and NVTX ranges are recorded as usual.";
	case PPGPU_DRIVER_TOO_OLD:
	case PPGPU_DRIVER_MISMATCH:
		return "GPU tracing will not record anything until the driver is fixed (update it, or reboot\n"
		       "after a driver update); CUDA programs themselves will likely fail the same way.";
	case PPGPU_NO_PERMISSION:
		return "GPU tracing needs profiling permission: run as root, or load nvidia with\n"
		       "NVreg_RestrictProfilingToAdminUsers=0. CUDA programs still run.";
	case PPGPU_CUPTI_MISSING:
		return "GPU tracing needs libcupti (CUDA toolkit, extras/CUPTI): set PHASEPROF_LIBCUPTI=/path/libcupti.so.";
	case PPGPU_CUPTI_BUSY:
		return "GPU tracing is off while another CUPTI client (Nsight, cuda-gdb, a framework profiler)\n"
		       "is attached; only one can hold CUPTI. NVTX ranges are still recorded.";
	case PPGPU_NOT_BUILT:
		return "This phaseprof was built without the CUDA toolkit's CUPTI headers; GPU activity is not\n"
		       "collected. Rebuild with the toolkit installed.";
	case PPGPU_UNUSED:
		return "The program did not initialise CUDA, so there was no GPU work to trace.\n"
		       "CPU phases, spans, samples, allocations and NVTX ranges are recorded as usual.";
	default:
		return "GPU tracing will not record anything; the reason above names the call that failed.\n"
		       "CPU phases, spans, samples, allocations and NVTX ranges are recorded as usual.";
	}
}

unsigned ppgpu_features(void)
{
	unsigned f = 0;
#ifdef PPGPU_WITH_CUPTI
	f |= PPGPU_HAVE_CUPTI;
#endif
#ifdef PPGPU_WITH_NVTX
	f |= PPGPU_HAVE_NVTX;
#endif
	return f;
}

static void copy_str(char *dst, size_t n, const char *src)
{
	if (!n)
		return;
	size_t l = src ? strlen(src) : 0;
	if (l >= n)
		l = n - 1;
	memcpy(dst, src ? src : "", l);
	dst[l] = 0;
}

/* The file the loader actually mapped (the stub vs. a real driver). */
static void loaded_path(void *h, char *out, size_t n)
{
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0]) {
		char real[4096];
		copy_str(out, n, realpath(lm->l_name, real) ? real : lm->l_name);
	}
}

static void fmt_version(int v, char *out, size_t n)
{
	if (v > 0)
		snprintf(out, n, "%d.%d", v / 1000, (v % 1000) / 10);
	else
		snprintf(out, n, "unknown version");
}

int ppgpu_probe_driver(const char *libcuda, ppgpu_probe_result *r)
{
	memset(r, 0, sizeof *r);
	r->cu_result = -1;
	r->cupti_result = -1;
	if (!libcuda || !*libcuda)
		libcuda = getenv(PP_ENV_LIBCUDA);
	if (!libcuda || !*libcuda)
		libcuda = "libcuda.so.1";
	copy_str(r->driver_path, sizeof r->driver_path, libcuda);

	dlerror();
	void *h = dlopen(libcuda, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		r->state = PPGPU_NO_DRIVER;
		int node = access("/dev/nvidiactl", F_OK) == 0;
		snprintf(r->reason, sizeof r->reason,
			 "no NVIDIA driver: %s cannot be loaded (%s)%s", libcuda,
			 e ? e : "dlopen failed",
			 node ? "; /dev/nvidiactl exists, so the kernel module is loaded but its user-space library is missing"
			      : "");
		return r->state;
	}
	char mapped[256] = "";
	loaded_path(h, mapped, sizeof mapped);
	if (mapped[0])
		copy_str(r->driver_path, sizeof r->driver_path, mapped);

	cu_init_fn cu_init = (cu_init_fn)dlsym(h, "cuInit");
	cu_int_fn drv_version = (cu_int_fn)dlsym(h, "cuDriverGetVersion");
	cu_int_fn dev_count = (cu_int_fn)dlsym(h, "cuDeviceGetCount");
	cu_device_get_fn dev_get = (cu_device_get_fn)dlsym(h, "cuDeviceGet");
	cu_device_name_fn dev_name = (cu_device_name_fn)dlsym(h, "cuDeviceGetName");
	if (!cu_init) {
		r->state = PPGPU_DRIVER_ERROR;
		snprintf(r->reason, sizeof r->reason,
			 "%s is not a CUDA driver library: it has no cuInit", r->driver_path);
		dlclose(h);
		return r->state;
	}
	int rc = cu_init(0);
	r->cu_result = rc;
	if (drv_version && drv_version(&r->driver_version) != 0)
		r->driver_version = 0;
	r->state = ppgpu_state_from_cu_result(rc);
	if (r->state == PPGPU_OK && dev_count) {
		int n = 0;
		if (dev_count(&n) == 0)
			r->device_count = n;
		if (n == 0) /* a driver that initialises with no device left */
			r->state = PPGPU_NO_DEVICE;
		int dev;
		if (n > 0 && dev_get && dev_name && dev_get(&dev, 0) == 0 &&
		    dev_name(r->device_name, (int)sizeof r->device_name, dev) != 0)
			r->device_name[0] = 0;
	}
	/* EACCES on the device nodes shows up as an unknown cuInit error. */
	if (r->state == PPGPU_DRIVER_ERROR && access("/dev/nvidiactl", F_OK) == 0 &&
	    access("/dev/nvidiactl", R_OK | W_OK) != 0 && errno == EACCES)
		r->state = PPGPU_NO_PERMISSION;

	char ver[32];
	fmt_version(r->driver_version, ver, sizeof ver);
	const char *cname = ppgpu_cu_result_name(rc);
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	switch (r->state) {
	case PPGPU_OK:
		snprintf(r->reason, sizeof r->reason, "NVIDIA driver %s with %d GPU%s (%s)", ver,
			 r->device_count, r->device_count == 1 ? "" : "s",
			 r->device_name[0] ? r->device_name : "name unknown");
		break;
	case PPGPU_STUB_DRIVER:
		snprintf(r->reason, sizeof r->reason,
			 "the CUDA toolkit's stub libcuda (%s) is on the loader path and no real NVIDIA driver "
			 "is installed (cuInit: %s)", r->driver_path, cname);
		break;
	case PPGPU_NO_DEVICE:
		snprintf(r->reason, sizeof r->reason,
			 "NVIDIA driver %s is installed but no GPU is visible (cuInit: %s)%s%s%s", ver,
			 rc ? cname : "CUDA_SUCCESS, 0 devices", vis ? "; CUDA_VISIBLE_DEVICES=\"" : "",
			 vis ? vis : "", vis ? "\"" : "");
		break;
	case PPGPU_DRIVER_TOO_OLD:
		snprintf(r->reason, sizeof r->reason,
			 "the NVIDIA driver (%s) is too old for this CUDA version (cuInit: %s)", ver, cname);
		break;
	case PPGPU_DRIVER_MISMATCH:
		snprintf(r->reason, sizeof r->reason,
			 rc == PPGPU_CU_SYSTEM_DRIVER_MISMATCH
				 ? "the NVIDIA kernel module and the user-space driver (%s) are different versions; "
				   "reboot or reinstall the driver (cuInit: %s)"
				 : "the CUDA forward-compatibility driver (%s) does not support this GPU (cuInit: %s)",
			 ver, cname);
		break;
	case PPGPU_NO_PERMISSION:
		snprintf(r->reason, sizeof r->reason,
			 "not permitted to use the GPU: the NVIDIA device nodes are not accessible to this user "
			 "(cuInit: %s)", cname);
		break;
	default:
		snprintf(r->reason, sizeof r->reason, "the NVIDIA driver (%s, %s) failed to initialise (cuInit: %s)",
			 r->driver_path, ver, cname);
		break;
	}
	/* Keep a working driver loaded (the process will use it); drop the rest. */
	if (r->state != PPGPU_OK)
		dlclose(h);
	return r->state;
}

/* ---- CUPTI: loaded once, never unloaded ---- */

typedef struct {
	size_t structSize;
	const char *subscriberName;
	char *oldSubscriberName;
	size_t oldSubscriberSize;
} subscriber_params; /* mirrors CUpti_SubscriberParams (cupti_callbacks.h, 13.0) */
typedef void (*cupti_cb)(void *ud, int domain, uint32_t cbid, const void *data);
typedef int (*subscribe_v2_fn)(void **, cupti_cb, void *, subscriber_params *);
typedef int (*subscribe_fn)(void **, cupti_cb, void *);
typedef int (*unsubscribe_fn)(void *);
typedef int (*get_version_fn)(uint32_t *);

static pthread_mutex_t cupti_lock = PTHREAD_MUTEX_INITIALIZER;
static void *cupti_handle;
static char cupti_loaded_path[256];

void *ppgpu__cupti_lib(void)
{
	return cupti_handle;
}

static void *try_open(const char *path)
{
	if (!path || !*path)
		return NULL;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h)
		loaded_path(h, cupti_loaded_path, sizeof cupti_loaded_path);
	return h;
}

static void *load_cupti(const char *explicit_path, char *tried, size_t tried_len)
{
	pthread_mutex_lock(&cupti_lock);
	if (!cupti_handle) {
		char buf[3][512];
		const char *home = getenv("CUDA_HOME");
		if (!home)
			home = getenv("CUDA_PATH");
		snprintf(buf[0], sizeof buf[0], "%s/lib64/libcupti.so", home ? home : "");
		snprintf(buf[1], sizeof buf[1], "%s/extras/CUPTI/lib64/libcupti.so", home ? home : "");
#ifdef PPGPU_CUPTI_LIBDIR
		snprintf(buf[2], sizeof buf[2], "%s/libcupti.so", PPGPU_CUPTI_LIBDIR);
#else
		buf[2][0] = 0;
#endif
		const char *cands[] = {
			explicit_path, getenv(PP_ENV_LIBCUPTI), "libcupti.so", "libcupti.so.13",
			home ? buf[0] : NULL, home ? buf[1] : NULL, buf[2],
		};
		const char *last = NULL;
		for (size_t i = 0; i < sizeof cands / sizeof cands[0] && !cupti_handle; i++) {
			if (!cands[i] || !*cands[i])
				continue;
			last = cands[i];
			cupti_handle = try_open(cands[i]);
			/* An explicit path that fails is the answer, not a hint. */
			if (!cupti_handle && i < 2)
				break;
		}
		if (!cupti_handle && tried)
			snprintf(tried, tried_len, "%s (%s)", last ? last : "libcupti.so", dlerror());
	}
	void *h = cupti_handle;
	pthread_mutex_unlock(&cupti_lock);
	return h;
}

/* The subscriber's callback: forwards to the collector's, once it set one
 * (the probe's own subscription needs none). */
static cupti_cb _Atomic api_cb;

void ppgpu__cupti_set_callback(void (*fn)(void *ud, int domain, uint32_t cbid, const void *data))
{
	atomic_store(&api_cb, fn);
}

static void noop_callback(void *ud, int domain, uint32_t cbid, const void *data)
{
	cupti_cb fn = atomic_load_explicit(&api_cb, memory_order_acquire);
	if (fn)
		fn(ud, domain, cbid, data);
}

int ppgpu__cupti_subscribe(void **handle, char *holder, size_t holder_len)
{
	void *h = cupti_handle;
	*handle = NULL;
	if (!h)
		return PPGPU_CUPTI_NOT_INITIALIZED;
	subscribe_v2_fn sub2 = (subscribe_v2_fn)dlsym(h, "cuptiSubscribe_v2");
	if (sub2) {
		char old[256] = "";
		subscriber_params p = {sizeof p, "phaseprof", old, sizeof old};
		int rc = sub2(handle, noop_callback, NULL, &p);
		if (holder && holder_len)
			copy_str(holder, holder_len, old);
		return rc;
	}
	subscribe_fn sub = (subscribe_fn)dlsym(h, "cuptiSubscribe");
	return sub ? sub(handle, noop_callback, NULL) : PPGPU_CUPTI_NOT_INITIALIZED;
}

void ppgpu__cupti_unsubscribe(void *handle)
{
	if (!handle || !cupti_handle)
		return;
	unsubscribe_fn unsub = (unsubscribe_fn)dlsym(cupti_handle, "cuptiUnsubscribe");
	if (unsub)
		unsub(handle);
}

void ppgpu__cupti_failure(ppgpu_probe_result *r, const char *what, int rc)
{
	r->cupti_result = rc;
	switch (rc) {
	case PPGPU_CUPTI_MULTIPLE_SUBSCRIBERS:
		r->state = PPGPU_CUPTI_BUSY;
		snprintf(r->reason, sizeof r->reason,
			 "CUPTI is already held by %s%s%s (%s: %s); only one CUPTI client can trace at a time",
			 r->holder[0] ? "\"" : "another tool", r->holder, r->holder[0] ? "\"" : "", what,
			 ppgpu_cupti_result_name(rc));
		break;
	case PPGPU_CUPTI_INSUFFICIENT_PRIVILEGES:
	case PPGPU_CUPTI_VIRT_INSUFFICIENT_PRIVILEGES:
		r->state = PPGPU_NO_PERMISSION;
		snprintf(r->reason, sizeof r->reason,
			 "GPU profiling is restricted to administrators on this machine (%s: %s); run as root or "
			 "set NVreg_RestrictProfilingToAdminUsers=0", what, ppgpu_cupti_result_name(rc));
		break;
	default:
		r->state = PPGPU_CUPTI_ERROR;
		snprintf(r->reason, sizeof r->reason, "CUPTI refused to trace (%s: %s)", what,
			 ppgpu_cupti_result_name(rc));
		break;
	}
}

int ppgpu_probe_cupti(const char *libcupti, ppgpu_probe_result *r)
{
	if (r->state != PPGPU_OK)
		return r->state;
	char tried[600] = "";
	void *h = load_cupti(libcupti, tried, sizeof tried);
	if (!h) {
		r->state = PPGPU_CUPTI_MISSING;
		snprintf(r->reason, sizeof r->reason,
			 "the NVIDIA driver works but libcupti cannot be loaded: %.300s; set PHASEPROF_LIBCUPTI", tried);
		return r->state;
	}
	copy_str(r->cupti_path, sizeof r->cupti_path, cupti_loaded_path);
	get_version_fn ver = (get_version_fn)dlsym(h, "cuptiGetVersion");
	if (ver && ver(&r->cupti_version) != 0)
		r->cupti_version = 0;
	void *sub = NULL;
	int rc = ppgpu__cupti_subscribe(&sub, r->holder, sizeof r->holder);
	r->cupti_result = rc;
	if (rc != PPGPU_CUPTI_SUCCESS) {
		ppgpu__cupti_failure(r, "cuptiSubscribe_v2", rc);
		return r->state;
	}
	ppgpu__cupti_unsubscribe(sub);
	size_t len = strlen(r->reason);
	snprintf(r->reason + len, sizeof r->reason - len, "; CUPTI %u attachable", r->cupti_version);
	return r->state;
}
