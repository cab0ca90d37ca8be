/* Decoding of CUPTI activity records (CUDA 13.0 structs) into gpu_activity
 * rows. A pure function of the records plus a little state that must span
 * buffers: CUPTI writes the external-correlation and API records into the
 * launching thread's buffer but kernel/memcpy records into device buffers,
 * delivered later and separately, so the correlation id -> (phase, thread)
 * maps outlive any one buffer. Rows of kind "external" are emitted too, so a
 * join in SQL still works when a kernel arrived before its API record. */
#include "gpu_internal.h"

#include "pp_grow.h"
#include "pp_hash.h"

#include <cupti_activity.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ppgpu__cbid_name(int runtime, uint32_t cbid); /* generated */

/* Correlation map: uint32 correlation ids (CUPTI's start at 1; 0 is none)
 * in an array under the shared hash index. Bounded: at CORR_MAX ids it is
 * cleared, and the "external" rows keep the join possible in SQL. */
#define CORR_MAX (3u << 18)
typedef struct corr_entry {
	uint32_t key;
	uint32_t tid;             /* 0 unknown */
	int64_t ext;              /* -1 unknown */
} corr_entry;

struct ppgpu_decoder {
	ppgpu_clock_pair clock;
	int have_clock;
	ppgpu_row_sink sink;
	void *ud;
	corr_entry *map;
	uint32_t n, cap;
	pp_hash index;
	ppgpu_decoder_stats st;
	char err[192];
};

ppgpu_decoder *ppgpu_decoder_new(const ppgpu_clock_pair *clock, ppgpu_row_sink sink, void *ud)
{
	ppgpu_decoder *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	if (clock) {
		d->clock = *clock;
		d->have_clock = 1;
	}
	d->sink = sink;
	d->ud = ud;
	return d;
}

void ppgpu_decoder_free(ppgpu_decoder *d)
{
	if (!d)
		return;
	free(d->map);
	pp_hash_free(&d->index);
	free(d);
}

void ppgpu_decoder_add_dropped(ppgpu_decoder *d, uint64_t n)
{
	d->st.dropped += n;
}

void ppgpu_decoder_stats_get(const ppgpu_decoder *d, ppgpu_decoder_stats *out)
{
	*out = d->st;
}

const char *ppgpu_decoder_error(const ppgpu_decoder *d)
{
	return d->err;
}

static corr_entry *corr_find(ppgpu_decoder *d, uint32_t key, int create)
{
	if (!key)
		return NULL;
	uint32_t h = pp_hash_u64(key), id;
	for (uint32_t it = 0; pp_hash_next(&d->index, h, &it, &id);)
		if (d->map[id].key == key)
			return &d->map[id];
	if (!create)
		return NULL;
	if (d->n >= CORR_MAX) { /* forget old ids */
		pp_hash_free(&d->index);
		d->n = 0;
	}
	if (PP_GROW(d->map, d->n + 1, d->cap) != 0 || pp_hash_add(&d->index, h, d->n) != 0)
		return NULL;
	d->map[d->n] = (corr_entry){key, 0, -1};
	return &d->map[d->n++];
}

size_t ppgpu_record_size(uint32_t kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
	case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
	case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
	default: return 0;
	}
}

static const char *copy_kind_name(unsigned k)
{
	static const char *n[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
				  "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
	return k < sizeof n / sizeof n[0] ? n[k] : "unknown";
}

static const char *mem_kind_name(unsigned k)
{
	static const char *n[] = {"unknown", "pageable", "pinned", "device", "array",
				  "managed", "device_static", "managed_static"};
	return k < sizeof n / sizeof n[0] ? n[k] : "unknown";
}

static const char *sync_type_name(unsigned t)
{
	static const char *n[] = {"unknown", "event_synchronize", "stream_wait_event",
				  "stream_synchronize", "context_synchronize"};
	return t < sizeof n / sizeof n[0] ? n[t] : "unknown";
}

static const char *overhead_name(unsigned k)
{
	switch (k) {
	case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "driver_compiler";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "cupti_buffer_flush";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "cupti_instrumentation";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "cupti_resource";
	case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "module_loading";
	case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "lazy_function_loading";
	case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "command_buffer_full";
	case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "activity_buffer_request";
	case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "uvm_activity_init";
	default: return "unknown";
	}
}

static const char *ext_kind_name(unsigned k)
{
	static const char *n[] = {"invalid", "unknown", "openacc", "custom0", "custom1", "custom2"};
	return k < sizeof n / sizeof n[0] ? n[k] : "unknown";
}

/* start/end on the recorder clock; 0 (and end before start, as records cut by a
 * forced flush have) become unknown. */
static void row_times(ppgpu_decoder *d, ppgpu_row *r, uint64_t start, uint64_t end)
{
	uint64_t s = start, e = end;
	if (d->have_clock) {
		s = ppgpu_clock_to_cpu(&d->clock, start);
		e = ppgpu_clock_to_cpu(&d->clock, end);
	}
	r->start_ns = start && s <= INT64_MAX ? (int64_t)s : -1;
	r->end_ns = end && end >= start && e <= INT64_MAX ? (int64_t)e : -1;
}

/* Joins a device-side record to its API call. */
static void row_join(ppgpu_decoder *d, ppgpu_row *r, uint32_t corr)
{
	r->correlation_id = corr;
	corr_entry *e = corr_find(d, corr, 0);
	if (!e)
		return;
	if (e->ext >= 0)
		r->external_id = e->ext;
	if (e->tid)
		r->tid = e->tid;
}

static void emit(ppgpu_decoder *d, const ppgpu_row *r)
{
	d->st.rows++;
	if (d->sink)
		d->sink(r, d->ud);
}

/* Memcpy and peer-to-peer memcpy records share these fields but not a type.
 * async vs sync is what a pageable-copy rule needs; it has no column of its
 * own and goes in the name. */
/* The fields every device-side record (kernel, copy, memset) shares; the
 * CUPTI structs differ, so a macro over the record pointer x. */
#define DEVICE_ROW(x, kind_name)                                                       \
	do {                                                                           \
		ppgpu_row_init(&r, kind_name);                                               \
		row_times(d, &r, (x)->start, (x)->end);                                \
		r.device = (x)->deviceId;                                              \
		r.context = (x)->contextId;                                            \
		r.stream = (x)->streamId;                                              \
	} while (0)

#define MEMCPY_ROW(m)                                                                  \
	do {                                                                           \
		DEVICE_ROW(m, "memcpy");                                               \
		r.name = ((m)->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? "async" : "sync"; \
		r.bytes = (int64_t)(m)->bytes;                                         \
		r.copy_kind = copy_kind_name((m)->copyKind);                           \
		r.src_kind = mem_kind_name((m)->srcKind);                              \
		r.dst_kind = mem_kind_name((m)->dstKind);                              \
		row_join(d, &r, (m)->correlationId);                                   \
		d->st.memcpys++;                                                       \
	} while (0)

int ppgpu_decode_record(ppgpu_decoder *d, const void *record, size_t size)
{
	if (!record || size < sizeof(CUpti_Activity)) {
		d->st.malformed++;
		snprintf(d->err, sizeof d->err, "CUPTI record of %zu bytes is shorter than its kind field", size);
		return -1;
	}
	const CUpti_Activity *a = record;
	uint32_t kind = (uint32_t)a->kind;
	size_t need = ppgpu_record_size(kind);
	d->st.records++;
	if (!need) {
		d->st.skipped++; /* kinds we don't enable or store (NAME, DEVICE…) */
		return 0;
	}
	if (size < need) {
		d->st.malformed++;
		snprintf(d->err, sizeof d->err,
			 "CUPTI record of kind %u needs %zu bytes but only %zu remain", kind, need, size);
		return -1;
	}
	ppgpu_row r;
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = record;
		DEVICE_ROW(k, "kernel");
		r.name = k->name;
		r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
		r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
		row_join(d, &r, k->correlationId);
		d->st.kernels++;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = record;
		MEMCPY_ROW(m);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY2: {
		const CUpti_ActivityMemcpyPtoP4 *m = record;
		MEMCPY_ROW(m);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = record;
		DEVICE_ROW(m, "memset");
		r.name = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? "async" : "sync";
		r.bytes = (int64_t)m->bytes;
		r.dst_kind = mem_kind_name(m->memoryKind);
		row_join(d, &r, m->correlationId);
		d->st.memsets++;
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *api = record;
		int rt = kind == CUPTI_ACTIVITY_KIND_RUNTIME;
		ppgpu_row_init(&r, rt ? "runtime" : "driver");
		row_times(d, &r, api->start, api->end);
		r.name = ppgpu__cbid_name(rt, api->cbid);
		char unnamed[32];
		if (!r.name) {
			snprintf(unnamed, sizeof unnamed, "%s cbid %u", rt ? "runtime" : "driver", api->cbid);
			r.name = unnamed;
		}
		r.tid = api->threadId;
		corr_entry *e = corr_find(d, api->correlationId, 1);
		if (e)
			e->tid = api->threadId;
		row_join(d, &r, api->correlationId);
		r.tid = api->threadId;
		d->st.apis++;
		emit(d, &r);
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s = record;
		ppgpu_row_init(&r, "sync");
		row_times(d, &r, s->start, s->end);
		r.context = s->contextId;
		/* CUPTI_SYNCHRONIZATION_INVALID_VALUE (-1) marks "no stream" */
		r.stream = s->streamId == (uint32_t)-1 ? -1 : (int64_t)s->streamId;
		r.name = sync_type_name(s->type);
		row_join(d, &r, s->correlationId);
		d->st.syncs++;
		break;
	}
	case CUPTI_ACTIVITY_KIND_OVERHEAD: {
		const CUpti_ActivityOverhead3 *o = record;
		ppgpu_row_init(&r, "overhead");
		row_times(d, &r, o->start, o->end);
		r.name = overhead_name(o->overheadKind);
		if (o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
			r.tid = o->objectId.pt.threadId;
		} else if (o->objectKind == CUPTI_ACTIVITY_OBJECT_DEVICE ||
			   o->objectKind == CUPTI_ACTIVITY_OBJECT_CONTEXT ||
			   o->objectKind == CUPTI_ACTIVITY_OBJECT_STREAM) {
			r.device = o->objectId.dcs.deviceId;
			if (o->objectKind != CUPTI_ACTIVITY_OBJECT_DEVICE)
				r.context = o->objectId.dcs.contextId;
			if (o->objectKind == CUPTI_ACTIVITY_OBJECT_STREAM)
				r.stream = o->objectId.dcs.streamId;
		}
		if (o->correlationId) {
			int64_t tid = r.tid;
			row_join(d, &r, o->correlationId);
			if (tid >= 0)
				r.tid = tid;
		}
		d->st.overheads++;
		break;
	}
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
		const CUpti_ActivityExternalCorrelation *x = record;
		/* Only our own pushes name phases; other tools' ids are kept as rows. */
		if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
			corr_entry *e = corr_find(d, x->correlationId, 1);
			if (e)
				e->ext = (int64_t)x->externalId;
		}
		ppgpu_row_init(&r, "external");
		r.correlation_id = x->correlationId;
		r.external_id = (int64_t)x->externalId;
		r.name = ext_kind_name(x->externalKind);
		d->st.externals++;
		emit(d, &r);
		return 0;
	}
	default:
		d->st.skipped++;
		return 0;
	}
	emit(d, &r);
	return 1;
}

long ppgpu_decode_buffer(ppgpu_decoder *d, const uint8_t *buf, size_t valid)
{
	size_t off = 0;
	long n = 0;
	while (off < valid) {
		if (valid - off < sizeof(CUpti_Activity)) {
			snprintf(d->err, sizeof d->err,
				 "CUPTI buffer: %zu stray bytes at offset %zu (a cut record)", valid - off, off);
			d->st.malformed++;
			return -1;
		}
		uint32_t kind;
		memcpy(&kind, buf + off, sizeof kind);
		size_t sz = ppgpu_record_size(kind);
		if (!sz) {
			snprintf(d->err, sizeof d->err,
				 "CUPTI buffer: record kind %u at offset %zu has no known size", kind, off);
			d->st.malformed++;
			return -1;
		}
		if (sz > valid - off) {
			snprintf(d->err, sizeof d->err,
				 "CUPTI buffer: record kind %u at offset %zu needs %zu bytes, %zu remain", kind, off,
				 sz, valid - off);
			d->st.malformed++;
			return -1;
		}
		if ((uintptr_t)(buf + off) % 8) {
			snprintf(d->err, sizeof d->err, "CUPTI buffer: record at offset %zu is not 8-byte aligned", off);
			d->st.malformed++;
			return -1;
		}
		if (ppgpu_decode_record(d, buf + off, sz) < 0) {
			char e[sizeof d->err];
			memcpy(e, d->err, sizeof e);
			int k = snprintf(d->err, sizeof d->err, "CUPTI buffer offset %zu: ", off);
			if (k > 0 && (size_t)k < sizeof d->err)
				memcpy(d->err + k, e, strnlen(e, sizeof d->err - (size_t)k - 1) + 1);
			d->err[sizeof d->err - 1] = 0;
			return -1;
		}
		off += sz;
		n++;
	}
	return n;
}
