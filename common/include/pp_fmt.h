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

/* The same as values: pp_dur(ns).s is a string that lives until the end of
 * the full expression it appears in (C11 6.2.4p8), so one printf may format
 * several durations without a buffer each - pp_fmt_dur into one buffer
 * twice in one call prints the last value twice ("3.44 s of 3.44 s").
 *   printf("%s of %s", pp_dur(wait).s, pp_dur(loop).s); */
typedef struct pp_str32 { char s[32]; } pp_str32;
pp_str32 pp_dur(double ns);
pp_str32 pp_bytes(double bytes);

#endif
