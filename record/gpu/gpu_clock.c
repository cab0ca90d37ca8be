/* Clock alignment between CUPTI timestamps and the recorder's clock. The
 * collector normally makes them equal (timestamp callback = pp_now), but
 * CUPTI may refuse the callback; then one pair taken at the centre of the
 * tightest cpu-gpu-cpu bracket converts every record (as clockcmp.c did). */
#include "ppgpu.h"

void ppgpu_clock_calibrate(ppgpu_clock_fn gpu, void *gpu_ud, ppgpu_clock_fn cpu, void *cpu_ud,
			   int rounds, ppgpu_clock_pair *out)
{
	if (rounds < 1)
		rounds = 1;
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < rounds; i++) {
		uint64_t a = cpu(cpu_ud);
		uint64_t g = gpu(gpu_ud);
		uint64_t b = cpu(cpu_ud);
		if (b < a) /* a clock that ran backwards gives no bracket */
			continue;
		if (b - a < best) {
			best = b - a;
			out->gpu_ns = g;
			/* midpoint without overflow */
			out->cpu_ns = a + (b - a) / 2;
		}
	}
	if (best == UINT64_MAX) {
		out->gpu_ns = gpu(gpu_ud);
		out->cpu_ns = cpu(cpu_ud);
		best = 0;
	}
	out->bracket_ns = best;
	out->offset_ns = (int64_t)(out->gpu_ns - out->cpu_ns);
}

uint64_t ppgpu_clock_to_cpu(const ppgpu_clock_pair *p, uint64_t ts)
{
	if (ts == 0 || !p)
		return ts;
	/* Unsigned wrap-around arithmetic, then clamp: an offset larger than
	 * the timestamp means it predates the cpu clock's origin. */
	if (p->offset_ns >= 0)
		return ts > (uint64_t)p->offset_ns ? ts - (uint64_t)p->offset_ns : 0;
	uint64_t add = (uint64_t)(-(p->offset_ns + 1)) + 1;
	return ts > UINT64_MAX - add ? UINT64_MAX : ts + add;
}
