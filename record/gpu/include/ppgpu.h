/*
 * ppgpu.h — GPU support for phaseprof: the driver probe, the CUPTI activity
 * collector (libcupti loaded with dlopen, never linked), the decoder of
 * CUPTI activity buffers into gpu_activity rows, and NVTX injection.
 *
 * Nothing here needs a GPU, a driver or the CUDA toolkit at run time: every
 * entry point says plainly why GPU tracing is unavailable instead of failing.
 * The probe needs no CUDA headers at all; the CUPTI parts are compiled when
 * the toolkit's CUPTI headers were found (PPGPU_HAVE_CUPTI in ppgpu_features).
 */
#ifndef PPGPU_H
#define PPGPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- driver probe ---------------------------------------------------- */

typedef enum ppgpu_state {
	PPGPU_OK = 0,             /* driver and device usable; CUPTI attachable */
	PPGPU_NO_DRIVER,          /* libcuda.so.1 cannot be loaded */
	PPGPU_STUB_DRIVER,        /* the toolkit's stub libcuda answered (34) */
	PPGPU_NO_DEVICE,          /* driver present, no GPU (100) */
	PPGPU_DRIVER_TOO_OLD,     /* insufficient driver (35) / needs newer (36) */
	PPGPU_DRIVER_MISMATCH,    /* kernel module vs user library (803, 804) */
	PPGPU_NO_PERMISSION,      /* cuInit 800, or CUPTI insufficient privileges */
	PPGPU_DRIVER_ERROR,       /* any other cuInit failure */
	PPGPU_CUPTI_MISSING,      /* driver fine, libcupti not found */
	PPGPU_CUPTI_BUSY,         /* another CUPTI client holds the subscription */
	PPGPU_CUPTI_ERROR,        /* CUPTI refused for another reason */
	PPGPU_NOT_BUILT,          /* built without the CUPTI headers */
	PPGPU_UNUSED,             /* the program never initialised CUDA */
	PPGPU_STATE_COUNT
} ppgpu_state;

typedef struct ppgpu_probe_result {
	int state;                /* ppgpu_state */
	int cu_result;            /* cuInit's CUresult; -1 if not reached */
	int driver_version;       /* cuDriverGetVersion (13000 = 13.0); 0 unknown */
	int device_count;
	char device_name[128];    /* device 0, if any */
	char driver_path[256];    /* what dlopen was asked for */
	int cupti_result;         /* CUptiResult of the CUPTI check; -1 not reached */
	uint32_t cupti_version;   /* cuptiGetVersion; 0 unknown */
	char cupti_path[256];     /* the libcupti that was loaded */
	char holder[128];         /* the tool already holding CUPTI, if named */
	char reason[384];         /* one plain sentence */
} ppgpu_probe_result;

/* dlopen(libcuda) and cuInit(0); never touches CUPTI. libcuda NULL means
 * $PHASEPROF_LIBCUDA, else "libcuda.so.1". Fills *out, returns out->state. */
int ppgpu_probe_driver(const char *libcuda, ppgpu_probe_result *out);
/* After a driver probe that said OK: load libcupti (NULL = $PHASEPROF_LIBCUPTI,
 * the loader path, then the build's toolkit) and try cuptiSubscribe_v2 so a
 * tool already attached is named. Updates *io, returns io->state. */
int ppgpu_probe_cupti(const char *libcupti, ppgpu_probe_result *io);

const char *ppgpu_state_name(int state);     /* "no_driver", "stub_driver"… */
/* The probe's mapping of a cuInit result; exposed for tests. */
int ppgpu_state_from_cu_result(int cu_result);
const char *ppgpu_cu_result_name(int cu_result); /* "CUDA_ERROR_NO_DEVICE" or "CUresult 123" */
const char *ppgpu_cupti_result_name(int cupti_result);
/* What GPU tracing will and won't do in this state (several lines). */
const char *ppgpu_state_advice(int state);

/* Build features: bit 0 = CUPTI collector, bit 1 = NVTX injection. */
#define PPGPU_HAVE_CUPTI 1u
#define PPGPU_HAVE_NVTX 2u
unsigned ppgpu_features(void);

/* ---- clock alignment -------------------------------------------------
 * GPU timestamps come from CUPTI. With our timestamp callback registered they
 * already are pp_now() ns; otherwise CUPTI uses CLOCK_REALTIME and one offset
 * pair converts: cpu = gpu - offset. */
typedef uint64_t (*ppgpu_clock_fn)(void *ud);
typedef struct ppgpu_clock_pair {
	uint64_t gpu_ns, cpu_ns;  /* one sample, taken at the centre of the tightest bracket */
	int64_t offset_ns;        /* gpu_ns - cpu_ns */
	uint64_t bracket_ns;      /* width of the cpu bracket around the gpu read */
} ppgpu_clock_pair;
/* Reads cpu, gpu, cpu `rounds` times and keeps the tightest bracket. */
void ppgpu_clock_calibrate(ppgpu_clock_fn gpu, void *gpu_ud, ppgpu_clock_fn cpu, void *cpu_ud,
			   int rounds, ppgpu_clock_pair *out);
/* Converts a GPU timestamp; 0 (CUPTI's "unknown") stays 0; saturates at 0. */
uint64_t ppgpu_clock_to_cpu(const ppgpu_clock_pair *p, uint64_t gpu_ts);

/* ---- decoder: CUPTI activity records -> gpu_activity rows --------------
 * Pure: no CUPTI calls, no globals; the collector feeds it the records CUPTI
 * hands back, tests feed it synthetic buffers built from the 13.0 structs. */
typedef struct ppgpu_row {
	const char *kind;         /* kernel memcpy memset runtime driver sync overhead external */
	int64_t start_ns, end_ns; /* on the recorder clock; end_ns < 0: unknown */
	int64_t device, context, stream, correlation_id;
	const char *name;         /* kernel name, API cbid name, sync type…; may be NULL */
	int64_t grid[3], block[3];
	int64_t bytes;            /* -1 if not applicable */
	const char *copy_kind, *src_kind, *dst_kind; /* NULL if not applicable */
	int64_t external_id;      /* phase id via external correlation; -1 unknown */
	int64_t tid;              /* launching thread; -1 unknown */
} ppgpu_row;

/* A row of kind with every field unknown (-1, NULL). */
void ppgpu_row_init(ppgpu_row *r, const char *kind);

typedef void (*ppgpu_row_sink)(const ppgpu_row *row, void *ud);

typedef struct ppgpu_decoder ppgpu_decoder;
/* clock may be NULL (timestamps already on the recorder clock). */
ppgpu_decoder *ppgpu_decoder_new(const ppgpu_clock_pair *clock, ppgpu_row_sink sink, void *ud);
void ppgpu_decoder_free(ppgpu_decoder *d);
/* One record (a CUpti_Activity*, `size` bytes available). Returns 1 if a row
 * was emitted, 0 if the record was only remembered (external correlation is
 * also emitted) or skipped, -1 if it is malformed. */
int ppgpu_decode_record(ppgpu_decoder *d, const void *record, size_t size);
/* A buffer of records laid out back to back as CUPTI lays them out, each the
 * size of its kind's struct (ppgpu_record_size). Returns records decoded, or
 * -1 with ppgpu_decoder_error() naming the offset and kind of the bad record;
 * records before it are kept. */
long ppgpu_decode_buffer(ppgpu_decoder *d, const uint8_t *buf, size_t valid);
/* Size of a kind's record struct in CUDA 13.0; 0 for kinds we don't decode. */
size_t ppgpu_record_size(uint32_t kind);
/* Dropped-record counts reported by CUPTI are added here (and summed). */
void ppgpu_decoder_add_dropped(ppgpu_decoder *d, uint64_t n);
typedef struct ppgpu_decoder_stats {
	uint64_t records, rows, dropped, skipped, malformed;
	uint64_t kernels, memcpys, memsets, apis, syncs, overheads, externals;
} ppgpu_decoder_stats;
void ppgpu_decoder_stats_get(const ppgpu_decoder *d, ppgpu_decoder_stats *out);
const char *ppgpu_decoder_error(const ppgpu_decoder *d);

/* The recorder sink: writes a row into gpu_activity (pp_row_gpu_activity). */
void ppgpu_row_to_recorder(const ppgpu_row *row, void *ud);

/* ---- the collector ------------------------------------------------------ */
typedef struct ppgpu_options {
	size_t buffer_bytes;      /* activity buffer size; 0 = 4 MiB */
	uint32_t flush_timeout_ms;/* bound on the forced flush at stop; 0 = 2000 */
	int skip_driver_probe;    /* 1 inside InitializeInjection: the driver is calling us */
	const char *libcupti;     /* NULL = default search */
} ppgpu_options;

/* Probes, loads CUPTI, registers the timestamp and buffer callbacks, enables
 * the activity kinds. Returns 0, or -1 with the reason in ppgpu_status(). CPU
 * recording is never affected by a failure here. */
int ppgpu_start(const ppgpu_options *opts);
/* Forced flush (bounded by flush_timeout_ms), disable, cuptiFinalize, and
 * writes the gpu_status row and the CUPTI losses. Safe to call twice or when
 * ppgpu_start failed (then only the status row is written). */
void ppgpu_stop(void);
/* For wrappers (the agent) at exit, before pp_close(): ppgpu_stop() if the
 * collector was started, else a gpu_status row saying the program never
 * initialised CUDA (so an empty GPU timeline is explained). */
void ppgpu_finish(void);
int ppgpu_active(void);
/* Last probe / collector status (reason filled even on success). */
const ppgpu_probe_result *ppgpu_status(void);
void ppgpu_collector_stats(ppgpu_decoder_stats *out);

/* Ties GPU work to a phase: pushes a CUSTOM0 external correlation id (a
 * fresh one per push, returned) and writes a gpu_activity row of kind
 * "phase" naming it, so kernels join to phases by external_id. No-ops (and
 * return 0) when the collector is not active or 32 ids are already pushed on
 * this thread. While the collector runs it does this itself for every
 * recorder phase (pp_set_phase_hook, registered by ppgpu_start and removed
 * by ppgpu_stop): call these only for ranges that are not recorder phases. */
uint64_t ppgpu_phase_push(const char *name);
void ppgpu_phase_pop(void);

/* Writes one gpu_status row for the current run (pp_row_gpu_status). */
int ppgpu_record_status(const ppgpu_probe_result *p, uint64_t records_dropped,
			int64_t clock_offset_ns);

/* ---- injection entry points (exported from the agent) -------------------
 * int InitializeInjection(void);                          CUDA_INJECTION64_PATH
 * int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t); NVTX_INJECTION64_PATH
 * are defined in this library with default visibility; link it whole-archive. */

#ifdef __cplusplus
}
#endif
#endif /* PPGPU_H */
