/* The recorder's clock. The TSC costs ~11 ns here against ~23 ns for
 * clock_gettime, and the event budget is 20 ns, so events carry raw TSC ticks
 * when the TSC is invariant (constant_tsc + nonstop_tsc); the writer thread
 * stores (ticks, CLOCK_MONOTONIC) calibration pairs and ingest converts. */
#include "recorder_internal.h"
#include "pp_env.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__) && __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#endif

int pp_clock_use_tsc;
static int clock_ready;

uint64_t pp_mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

uint64_t pp_realtime_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* constant_tsc + nonstop_tsc in /proc/cpuinfo are the CPU's invariant-TSC
 * bit (CPUID 0x80000007 EDX[8]); glibc keeps the loader's copy of cpuid, so
 * neither cpuid (a trap to the hypervisor in a VM, ~20 us) nor the
 * kernel's cpuinfo text (an IPI per CPU for its MHz line) is needed. */
static int tsc_is_invariant(void)
{
#if defined(__x86_64__) && __has_include(<sys/platform/x86.h>)
	return CPU_FEATURE_PRESENT(INVARIANT_TSC);
#elif defined(__x86_64__)
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return 0;
	char line[4096];
	int ok = 0;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "flags", 5) == 0) {
			ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
			break;
		}
	}
	fclose(f);
	return ok;
#else
	return 0;
#endif
}

void pp_clock_init(void)
{
	if (clock_ready)
		return;
	const char *force = getenv(PP_ENV_CLOCK);
	if (force && strcmp(force, "mono") == 0)
		pp_clock_use_tsc = 0;
	else
		pp_clock_use_tsc = tsc_is_invariant();
	clock_ready = 1;
}

int pp_clock_kind(void)
{
	return pp_clock_use_tsc ? PP_CLOCK_TSC : PP_CLOCK_MONO;
}
