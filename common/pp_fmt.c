/* pp_fmt.c — duration and byte formatting (see pp_fmt.h). */
#include "pp_fmt.h"

#include <math.h>
#include <stdio.h>

const char *pp_fmt_dur(char *buf, size_t len, double ns)
{
	static const struct { double scale; const char *unit; } units[] = {
		{1e9, "s"}, {1e6, "ms"}, {1e3, "us"},
	};
	double a = fabs(ns);
	if (!isfinite(ns)) {
		snprintf(buf, len, "?");
		return buf;
	}
	for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
		if (a < units[k].scale)
			continue;
		double v = ns / units[k].scale, av = a / units[k].scale;
		/* three significant digits; microseconds keep one decimal below 100 */
		int decimals = av >= 100 ? 0 : av >= 10 || units[k].scale == 1e3 ? 1 : 2;
		snprintf(buf, len, "%.*f %s", decimals, v, units[k].unit);
		return buf;
	}
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

pp_str32 pp_dur(double ns)
{
	pp_str32 v;
	pp_fmt_dur(v.s, sizeof v.s, ns);
	return v;
}

pp_str32 pp_bytes(double bytes)
{
	pp_str32 v;
	pp_fmt_bytes(v.s, sizeof v.s, bytes);
	return v;
}
