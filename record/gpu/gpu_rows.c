/* Rows into the recorder: gpu_activity (one per decoded record) and
 * gpu_status (one per run, also when the program never used CUDA). No
 * CUDA header needed. */
#include "ppgpu.h"
#include "phaseprof.h"
#include "pp_rows.h"

#include <stdio.h>
#include <string.h>

/* ppgpu_row marks an unknown integer with -1; the column stores NULL. */
static int64_t opt(int64_t v)
{
	return v < 0 ? PP_NULL : v;
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
	pp_row_gpu_activity(r->kind, opt(r->start_ns), opt(r->end_ns), opt(r->device), opt(r->context),
			    opt(r->stream), opt(r->correlation_id), r->name, opt(r->grid[0]),
			    opt(r->grid[1]), opt(r->grid[2]), opt(r->block[0]), opt(r->block[1]),
			    opt(r->block[2]), opt(r->bytes), r->copy_kind, r->src_kind, r->dst_kind,
			    opt(r->external_id), opt(r->tid));
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
	return pp_row_gpu_status(p->state == PPGPU_OK, p->reason, (int64_t)dropped, clock_offset_ns);
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
