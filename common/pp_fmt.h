/* pp_fmt.h — the one way phaseprof prints a duration or a byte count, so a
 * value reads the same in diff, stats, the report, findings and scenarios. */
#ifndef PP_FMT_H
#define PP_FMT_H

#include <stddef.h>

/* Three significant digits in the largest unit that keeps the value >= 1:
 * "812 ns", "1.5 us", "12.3 us", "2.50 ms", "15.0 ms", "150 ms", "3.20 s".
 * Negative values keep their sign; NaN and infinities print "?".
 * Returns buf. */
const char *pp_fmt_dur(char *buf, size_t len, double ns);

/* Binary units: "512 B", "1.5 KiB", "3.0 MiB", "2.3 GiB", "1.0 TiB". */
const char *pp_fmt_bytes(char *buf, size_t len, double bytes);

#endif
