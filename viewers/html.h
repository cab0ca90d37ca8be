/* html.h — private to viewers/: the small HTML-writing vocabulary of the
 * report. Text from a recording goes out through E (escaped, as
 * pp_out_html: < > & " ' and control bytes), markup through P. Both expect
 * a `pp_out *o` in scope. */
#ifndef PP_HTML_H
#define PP_HTML_H

#include <stdint.h>
#include "viewers.h"

#define P(s) pp_out_puts(o, s)
#define E(s) pp_out_html(o, s)

/* Numbers with units: a duration (ns), a byte count, a plain count
 * (k/M/G above 10^4, up to 3 significant digits below). */
void html_dur(pp_out *o, int64_t ns);
void html_bytes(pp_out *o, double v);
void html_num(pp_out *o, double v);
/* A duration, or an em dash when ns < 0 (not measured). */
void html_dur_or_dash(pp_out *o, int64_t ns);
/* "<span class="speed">1.23×</span>" (class "slower" below 1×). */
void html_speedup(pp_out *o, double sp);
/* One <dt>key</dt><dd>value</dd> pair, both escaped; nothing when the
 * value is empty. */
void html_kv(pp_out *o, const char *key, const char *value);
/* A card's opening up to its value: <div class="card CLS"><div class="k">KEY</div><div class="v">
 * (cls NULL or "" for a plain card; key is markup, not recorded text). */
void html_card_open(pp_out *o, const char *cls, const char *key);

#endif
