/* html.c — the report's HTML-writing helpers (html.h). */
#include "html.h"

#include <math.h>
#include "pp_fmt.h"

void html_dur(pp_out *o, int64_t ns)
{
	char b[32];
	P(pp_fmt_dur(b, sizeof b, (double)ns));
}

void html_bytes(pp_out *o, double v)
{
	char b[32];
	P(pp_fmt_bytes(b, sizeof b, v));
}

void html_num(pp_out *o, double v)
{
	double a = fabs(v);
	if (a >= 1e9)
		pp_out_printf(o, "%.2fG", v / 1e9);
	else if (a >= 1e6)
		pp_out_printf(o, "%.2fM", v / 1e6);
	else if (a >= 1e4)
		pp_out_printf(o, "%.1fk", v / 1e3);
	else if (a == floor(a))
		pp_out_printf(o, "%.0f", v);
	else
		pp_out_printf(o, "%.3g", v);
}

void html_dur_or_dash(pp_out *o, int64_t ns)
{
	if (ns >= 0)
		html_dur(o, ns);
	else
		P("—");
}

void html_speedup(pp_out *o, double sp)
{
	pp_out_printf(o, "<span class=\"%s\">%.2f×</span>", sp >= 1 ? "speed" : "slower", sp);
}

void html_kv(pp_out *o, const char *key, const char *value)
{
	if (!value || !*value)
		return;
	P("<dt>");
	E(key);
	P("</dt><dd>");
	E(value);
	P("</dd>");
}

void html_card_open(pp_out *o, const char *cls, const char *key)
{
	pp_out_printf(o, "<div class=\"card%s%s\"><div class=\"k\">%s</div><div class=\"v\">", cls && *cls ? " " : "",
		      cls ? cls : "", key);
}
