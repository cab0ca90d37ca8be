/* pp_fmt.c — duration and byte formatting (see pp_fmt.h). */
#include "pp_fmt.h"

#include <math.h>
#include <stdio.h>

const char *pp_fmt_dur(char *buf, size_t len, double ns)
{
	double a = fabs(ns);
	if (!isfinite(ns))
		snprintf(buf, len, "?");
	else if (a >= 100e9)
		snprintf(buf, len, "%.0f s", ns / 1e9);
	else if (a >= 10e9)
		snprintf(buf, len, "%.1f s", ns / 1e9);
	else if (a >= 1e9)
		snprintf(buf, len, "%.2f s", ns / 1e9);
	else if (a >= 100e6)
		snprintf(buf, len, "%.0f ms", ns / 1e6);
	else if (a >= 10e6)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else if (a >= 1e6)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else if (a >= 100e3)
		snprintf(buf, len, "%.0f us", ns / 1e3);
	else if (a >= 1e3)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else
		snprintf(buf, len, "%.0f ns", ns);
	return buf;
}

const char *pp_fmt_bytes(char *buf, size_t len, double bytes)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	if (!isfinite(bytes)) {
		snprintf(buf, len, "?");
		return buf;
	}
	double v = bytes;
	int k = 0;
	while (fabs(v) >= 1024 && k < 4) {
		v /= 1024;
		k++;
	}
	snprintf(buf, len, k ? "%.1f %s" : "%.0f %s", v, unit[k]);
	return buf;
}
