/* Rows into the recorder: gpu_activity (one per decoded record) and
 * gpu_status (one per run, also when the program never used CUDA). No
 * CUDA header needed. */
#include "ppgpu.h"
#include "phaseprof.h"

#include <stdio.h>
#include <string.h>

/* pp_row's 'n' takes no argument, so a row whose NULL columns vary cannot
 * be written with one fixed argument list. Integer columns are therefore
 * passed as 't' (decimal text, or NULL pointer = SQL NULL); the columns are
 * declared INTEGER, so SQLite's type affinity stores them as integers. */
typedef struct numtxt {
	char b[24];
} numtxt;

/* Decimal digits of v >= 0 (snprintf costs ~200 ns a call; this ~10). */
static const char *num(numtxt *t, int64_t v)
{
	if (v < 0)
		return NULL;
	char *p = t->b + sizeof t->b - 1;
	*p = 0;
	uint64_t u = (uint64_t)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	return p;
}

void ppgpu_row_init(ppgpu_row *r, const char *kind)
{
	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->start_ns = r->end_ns = -1;
	r->device = r->context = r->stream = r->correlation_id = -1;
	for (int i = 0; i < 3; i++)
		r->grid[i] = r->block[i] = -1;
	r->bytes = -1;
	r->external_id = -1;
	r->tid = -1;
}

void ppgpu_row_to_recorder(const ppgpu_row *r, void *ud)
{
	(void)ud;
	numtxt t[15];
	pp_row("gpu_activity", "ttttttts" "tttttttttttt", /* the 20 columns after run_id */
	       r->kind, num(&t[0], r->start_ns), num(&t[1], r->end_ns), num(&t[2], r->device),
	       num(&t[3], r->context), num(&t[4], r->stream), num(&t[5], r->correlation_id), r->name,
	       num(&t[6], r->grid[0]), num(&t[7], r->grid[1]), num(&t[8], r->grid[2]),
	       num(&t[9], r->block[0]), num(&t[10], r->block[1]), num(&t[11], r->block[2]),
	       num(&t[12], r->bytes), r->copy_kind, r->src_kind, r->dst_kind,
	       num(&t[13], r->external_id), num(&t[14], r->tid));
}

int ppgpu_record_status(const ppgpu_probe_result *p, uint64_t dropped, int64_t clock_offset_ns)
{
	if (!p)
		return -1;
	char buf[32];
	pp_meta("gpu.state", ppgpu_state_name(p->state));
	if (p->cu_result >= 0) {
		snprintf(buf, sizeof buf, "%d", p->cu_result);
		pp_meta("gpu.cuinit_result", buf);
	}
	if (p->driver_version > 0) {
		snprintf(buf, sizeof buf, "%d", p->driver_version);
		pp_meta("gpu.driver_version", buf);
	}
	if (p->device_name[0])
		pp_meta("gpu.device", p->device_name);
	if (p->cupti_version) {
		snprintf(buf, sizeof buf, "%u", p->cupti_version);
		pp_meta("gpu.cupti_version", buf);
	}
	return pp_row("gpu_status", "itii", (int64_t)(p->state == PPGPU_OK), p->reason, (int64_t)dropped,
		      clock_offset_ns);
}

/* Either collector: stopped if started, else the status row of a run
 * without CUDA. */
void ppgpu_finish(void)
{
	if (ppgpu_status()) {
		ppgpu_stop();
		return;
	}
	ppgpu_probe_result r;
	memset(&r, 0, sizeof r);
	r.state = PPGPU_UNUSED;
	r.cu_result = r.cupti_result = -1;
	snprintf(r.reason, sizeof r.reason,
		 "the program did not initialise CUDA, so there was no GPU work to trace");
	ppgpu_record_status(&r, 0, 0);
}
