/* scn_util.c — child-side helpers: failure messages, the measured span,
 * process counters. */
#include "scn_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int scn_fail(scn_env *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->err, e->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

void scn_measured_begin(void)
{
	pp_phase_begin(PP_SPAN, "measured");
}

void scn_measured_end(void)
{
	pp_phase_end();
}

uint64_t scn_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t scn_rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	unsigned long size = 0, resident = 0;
	int ok = fscanf(f, "%lu %lu", &size, &resident) == 2;
	fclose(f);
	return ok ? (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

void scn_sample_proc(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		pp_counter("proc.minflt", (double)ru.ru_minflt);
		pp_counter("proc.majflt", (double)ru.ru_majflt);
	}
	uint64_t rss = scn_rss_bytes();
	if (rss)
		pp_counter("proc.rss_bytes", (double)rss);
}
