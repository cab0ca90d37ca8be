/* NVTX injection: NVTX_INJECTION64_PATH names the library exporting
 * InitializeInjectionNvtx2; on the program's first NVTX call the nvtx3
 * loader dlopens it and lets it fill the CORE and CORE2 function tables.
 * LD_PRELOAD alone is not enough (the "already injected" lookup is disabled
 * in nvtx3 load-sequence v2), so `phaseprof record` sets the variable.
 *
 * Push/pop ranges become recorder spans (PP_SPAN, named "domain:message" as
 * nsys does for non-default domains), marks become marks, start/end ranges
 * (which may end on another thread and need not nest) become gpu_activity
 * rows of kind "marker". While the CUPTI collector runs, its phase hook
 * pushes an external correlation id for each span, so GPU work joins to the
 * range. */
#define NVTX_NO_IMPL
#include <nvToolsExt.h> /* with NVTX_NO_IMPL: types and the callback tables only */

#include "ppgpu.h"
#include "phaseprof.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

/* Domains and registered strings are our own heap objects behind NVTX's
 * opaque handles; they live until exit (handles may be used after destroy). */
#define DOMAIN_MAGIC 0x504e5644u /* "DVNP" */
#define STRING_MAGIC 0x504e5453u
typedef struct pp_nvtx_domain {
	uint32_t magic;
	char name[120];
	struct pp_nvtx_domain *next;
} pp_nvtx_domain;
typedef struct pp_nvtx_string {
	uint32_t magic;
	char *s;
	struct pp_nvtx_string *next;
} pp_nvtx_string;
/* Every handle ever given out, so they stay owned (and reachable) until exit. */
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static pp_nvtx_domain *all_domains;
static pp_nvtx_string *all_strings;

/* Open push/pop ranges of this thread: only ours may be popped, so a pop
 * without a push never ends a phase opened by someone else. */
#define MAX_DEPTH 256
static __thread int depth;

static int64_t tid_now(void)
{
	return (int64_t)syscall(SYS_gettid);
}

/* wchar_t (UTF-32 on Linux) to UTF-8, without the locale wcstombs needs. */
static void wide_to_utf8(const wchar_t *w, char *out, size_t n)
{
	size_t o = 0;
	if (!n)
		return;
	for (; w && *w && o + 4 < n; w++) {
		uint32_t c = (uint32_t)*w;
		if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
			c = 0xFFFD;
		if (c < 0x80) {
			out[o++] = (char)c;
		} else if (c < 0x800) {
			out[o++] = (char)(0xC0 | (c >> 6));
			out[o++] = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			out[o++] = (char)(0xE0 | (c >> 12));
			out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
			out[o++] = (char)(0x80 | (c & 0x3F));
		} else {
			out[o++] = (char)(0xF0 | (c >> 18));
			out[o++] = (char)(0x80 | ((c >> 12) & 0x3F));
			out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
			out[o++] = (char)(0x80 | (c & 0x3F));
		}
	}
	out[o] = 0;
}

static void compose(char *out, size_t n, nvtxDomainHandle_t dom, const char *msg)
{
	const pp_nvtx_domain *d = (const pp_nvtx_domain *)dom;
	if (!msg || !*msg)
		msg = "(unnamed nvtx range)";
	if (d && d->magic == DOMAIN_MAGIC && d->name[0])
		snprintf(out, n, "%s:%s", d->name, msg);
	else
		snprintf(out, n, "%s", msg);
}

/* The message of an event attribute structure, as UTF-8. */
static void attr_message(const nvtxEventAttributes_t *a, char *out, size_t n)
{
	out[0] = 0;
	if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message)
		return;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		snprintf(out, n, "%s", a->message.ascii ? a->message.ascii : "");
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		wide_to_utf8(a->message.unicode, out, n);
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED: {
		const pp_nvtx_string *s = (const pp_nvtx_string *)a->message.registered;
		if (s && s->magic == STRING_MAGIC)
			snprintf(out, n, "%s", s->s);
		break;
	}
	default:
		break;
	}
}

static int push_named(const char *name)
{
	pp_phase_begin(PP_SPAN, name);
	int level = depth;
	depth++;
	return level;
}

static int pop_one(void)
{
	if (depth <= 0)
		return -1;
	depth--;
	pp_phase_end();
	return depth;
}

static void mark_named(const char *name, const nvtxEventAttributes_t *a)
{
	pp_mark(name);
	/* A numeric payload on a mark is a sample of a value: keep it. */
	if (a && a->size >= offsetof(nvtxEventAttributes_t, messageType)) {
		double v;
		int have = 1;
		switch (a->payloadType) {
		case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: v = (double)a->payload.ullValue; break;
		case NVTX_PAYLOAD_TYPE_INT64: v = (double)a->payload.llValue; break;
		case NVTX_PAYLOAD_TYPE_DOUBLE: v = a->payload.dValue; break;
		case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: v = a->payload.uiValue; break;
		case NVTX_PAYLOAD_TYPE_INT32: v = a->payload.iValue; break;
		case NVTX_PAYLOAD_TYPE_FLOAT: v = a->payload.fValue; break;
		default: have = 0; v = 0; break;
		}
		if (have)
			pp_counter(name, v);
	}
}

/* ---- start/end ranges ---- */

typedef struct open_range {
	uint64_t id, start;
	int64_t tid;
	char *name;
	struct open_range *next;
} open_range;
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static open_range *ranges;
static atomic_uint_fast64_t next_range_id = 1;

static nvtxRangeId_t range_start(const char *name)
{
	open_range *r = malloc(sizeof *r);
	char *copy = strdup(name);
	if (!r || !copy) {
		free(r);
		free(copy);
		return 0;
	}
	r->id = atomic_fetch_add(&next_range_id, 1);
	r->start = pp_now();
	r->tid = tid_now();
	r->name = copy;
	pthread_mutex_lock(&ranges_lock);
	r->next = ranges;
	ranges = r;
	pthread_mutex_unlock(&ranges_lock);
	return r->id;
}

static void range_end(nvtxRangeId_t id)
{
	uint64_t end = pp_now();
	pthread_mutex_lock(&ranges_lock);
	open_range **pp = &ranges, *r = NULL;
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			r = *pp;
			*pp = r->next;
			break;
		}
	pthread_mutex_unlock(&ranges_lock);
	if (!r)
		return; /* unknown id: ignore, as the NVTX no-op would */
	ppgpu_row row;
	ppgpu_row_init(&row, "marker");
	row.start_ns = (int64_t)r->start;
	row.end_ns = (int64_t)end;
	row.name = r->name;
	row.external_id = (int64_t)r->id;
	row.tid = r->tid;
	ppgpu_row_to_recorder(&row, NULL);
	free(r->name);
	free(r);
}

/* ---- CORE ---- */
#define NAMEBUF 256

static void NVTX_API core_MarkEx(const nvtxEventAttributes_t *a)
{
	char m[NAMEBUF];
	attr_message(a, m, sizeof m);
	mark_named(m[0] ? m : "(unnamed nvtx mark)", a);
}
static void NVTX_API core_MarkA(const char *msg)
{
	mark_named(msg && *msg ? msg : "(unnamed nvtx mark)", NULL);
}
static void NVTX_API core_MarkW(const wchar_t *msg)
{
	char m[NAMEBUF];
	wide_to_utf8(msg, m, sizeof m);
	mark_named(m[0] ? m : "(unnamed nvtx mark)", NULL);
}
static nvtxRangeId_t NVTX_API core_RangeStartEx(const nvtxEventAttributes_t *a)
{
	char m[NAMEBUF], n[NAMEBUF];
	attr_message(a, m, sizeof m);
	compose(n, sizeof n, NULL, m);
	return range_start(n);
}
static nvtxRangeId_t NVTX_API core_RangeStartA(const char *msg)
{
	char n[NAMEBUF];
	compose(n, sizeof n, NULL, msg);
	return range_start(n);
}
static nvtxRangeId_t NVTX_API core_RangeStartW(const wchar_t *msg)
{
	char m[NAMEBUF], n[NAMEBUF];
	wide_to_utf8(msg, m, sizeof m);
	compose(n, sizeof n, NULL, m);
	return range_start(n);
}
static void NVTX_API core_RangeEnd(nvtxRangeId_t id)
{
	range_end(id);
}
static int NVTX_API core_RangePushEx(const nvtxEventAttributes_t *a)
{
	char m[NAMEBUF], n[NAMEBUF];
	attr_message(a, m, sizeof m);
	compose(n, sizeof n, NULL, m);
	return push_named(n);
}
static int NVTX_API core_RangePushA(const char *msg)
{
	char n[NAMEBUF];
	compose(n, sizeof n, NULL, msg);
	return push_named(n);
}
static int NVTX_API core_RangePushW(const wchar_t *msg)
{
	char m[NAMEBUF], n[NAMEBUF];
	wide_to_utf8(msg, m, sizeof m);
	compose(n, sizeof n, NULL, m);
	return push_named(n);
}
static int NVTX_API core_RangePop(void)
{
	return pop_one();
}
static void NVTX_API core_NameCategoryA(uint32_t cat, const char *name)
{
	(void)cat, (void)name; /* categories are not stored */
}
static void NVTX_API core_NameCategoryW(uint32_t cat, const wchar_t *name)
{
	(void)cat, (void)name;
}
static void NVTX_API core_NameOsThreadA(uint32_t tid, const char *name)
{
	/* the recorder can only name the calling thread */
	if (name && (int64_t)tid == tid_now())
		pp_thread_name(name);
}
static void NVTX_API core_NameOsThreadW(uint32_t tid, const wchar_t *name)
{
	char m[NAMEBUF];
	wide_to_utf8(name, m, sizeof m);
	core_NameOsThreadA(tid, m);
}

/* ---- CORE2 (domains) ---- */

static void NVTX_API d_MarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char m[NAMEBUF], n[NAMEBUF];
	attr_message(a, m, sizeof m);
	compose(n, sizeof n, d, m);
	mark_named(n, a);
}
static nvtxRangeId_t NVTX_API d_RangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char m[NAMEBUF], n[NAMEBUF];
	attr_message(a, m, sizeof m);
	compose(n, sizeof n, d, m);
	return range_start(n);
}
static void NVTX_API d_RangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	(void)d;
	range_end(id);
}
static int NVTX_API d_RangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char m[NAMEBUF], n[NAMEBUF];
	attr_message(a, m, sizeof m);
	compose(n, sizeof n, d, m);
	return push_named(n);
}
static int NVTX_API d_RangePop(nvtxDomainHandle_t d)
{
	(void)d;
	return pop_one();
}
static void NVTX_API d_NameCategoryA(nvtxDomainHandle_t d, uint32_t c, const char *n)
{
	(void)d, (void)c, (void)n;
}
static void NVTX_API d_NameCategoryW(nvtxDomainHandle_t d, uint32_t c, const wchar_t *n)
{
	(void)d, (void)c, (void)n;
}
static nvtxStringHandle_t register_string(const char *s)
{
	pp_nvtx_string *r = malloc(sizeof *r);
	if (!r)
		return NULL;
	r->magic = STRING_MAGIC;
	r->s = strdup(s ? s : "");
	if (!r->s) {
		free(r);
		return NULL;
	}
	pthread_mutex_lock(&handles_lock);
	r->next = all_strings;
	all_strings = r;
	pthread_mutex_unlock(&handles_lock);
	return (nvtxStringHandle_t)r;
}
static nvtxStringHandle_t NVTX_API d_RegisterStringA(nvtxDomainHandle_t d, const char *s)
{
	(void)d;
	return register_string(s);
}
static nvtxStringHandle_t NVTX_API d_RegisterStringW(nvtxDomainHandle_t d, const wchar_t *s)
{
	(void)d;
	char m[NAMEBUF];
	wide_to_utf8(s, m, sizeof m);
	return register_string(m);
}
static nvtxDomainHandle_t NVTX_API d_CreateA(const char *name)
{
	pp_nvtx_domain *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->magic = DOMAIN_MAGIC;
	size_t l = name ? strnlen(name, sizeof d->name - 1) : 0;
	memcpy(d->name, name ? name : "", l);
	d->name[l] = 0;
	pthread_mutex_lock(&handles_lock);
	d->next = all_domains;
	all_domains = d;
	pthread_mutex_unlock(&handles_lock);
	return (nvtxDomainHandle_t)d;
}
static nvtxDomainHandle_t NVTX_API d_CreateW(const wchar_t *name)
{
	char m[NAMEBUF];
	wide_to_utf8(name, m, sizeof m);
	return d_CreateA(m);
}
static void NVTX_API d_Destroy(nvtxDomainHandle_t d)
{
	(void)d; /* kept: ranges in flight may still name it */
}
static void NVTX_API d_Initialize(const void *reserved)
{
	(void)reserved;
}

#define SET(tab, size, id, fn)                                                 \
	do {                                                                   \
		if ((unsigned)(id) < (size) && (tab)[id])                      \
			*(tab)[id] = (NvtxFunctionPointer)(fn);                \
	} while (0)

__attribute__((visibility("default"))) int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	if (!get)
		return 0;
	const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
		return 0;
	NvtxFunctionTable t = NULL;
	unsigned n = 0;
	if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t)
		return 0;
	SET(t, n, NVTX_CBID_CORE_MarkEx, core_MarkEx);
	SET(t, n, NVTX_CBID_CORE_MarkA, core_MarkA);
	SET(t, n, NVTX_CBID_CORE_MarkW, core_MarkW);
	SET(t, n, NVTX_CBID_CORE_RangeStartEx, core_RangeStartEx);
	SET(t, n, NVTX_CBID_CORE_RangeStartA, core_RangeStartA);
	SET(t, n, NVTX_CBID_CORE_RangeStartW, core_RangeStartW);
	SET(t, n, NVTX_CBID_CORE_RangeEnd, core_RangeEnd);
	SET(t, n, NVTX_CBID_CORE_RangePushEx, core_RangePushEx);
	SET(t, n, NVTX_CBID_CORE_RangePushA, core_RangePushA);
	SET(t, n, NVTX_CBID_CORE_RangePushW, core_RangePushW);
	SET(t, n, NVTX_CBID_CORE_RangePop, core_RangePop);
	SET(t, n, NVTX_CBID_CORE_NameCategoryA, core_NameCategoryA);
	SET(t, n, NVTX_CBID_CORE_NameCategoryW, core_NameCategoryW);
	SET(t, n, NVTX_CBID_CORE_NameOsThreadA, core_NameOsThreadA);
	SET(t, n, NVTX_CBID_CORE_NameOsThreadW, core_NameOsThreadW);

	t = NULL;
	n = 0;
	/* CORE2 is optional for very old NVTX clients */
	if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t) {
		SET(t, n, NVTX_CBID_CORE2_DomainMarkEx, d_MarkEx);
		SET(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, d_RangeStartEx);
		SET(t, n, NVTX_CBID_CORE2_DomainRangeEnd, d_RangeEnd);
		SET(t, n, NVTX_CBID_CORE2_DomainRangePushEx, d_RangePushEx);
		SET(t, n, NVTX_CBID_CORE2_DomainRangePop, d_RangePop);
		SET(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, d_NameCategoryA);
		SET(t, n, NVTX_CBID_CORE2_DomainNameCategoryW, d_NameCategoryW);
		SET(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, d_RegisterStringA);
		SET(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, d_RegisterStringW);
		SET(t, n, NVTX_CBID_CORE2_DomainCreateA, d_CreateA);
		SET(t, n, NVTX_CBID_CORE2_DomainCreateW, d_CreateW);
		SET(t, n, NVTX_CBID_CORE2_DomainDestroy, d_Destroy);
		SET(t, n, NVTX_CBID_CORE2_Initialize, d_Initialize);
	}
	return 1;
}
