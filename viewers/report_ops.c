/* report_ops.c — the ops table (first step vs steady per step). */
#include "report_int.h"

void report_ops(pp_view_ctx *c, const pp_run_info *run, const pp_op_stat *ops, int n)
{
	pp_out *o = c->out;
	int more = n > 30 ? n - 30 : 0;
	n -= more;
	pp_out_printf(o, "<h2 id=\"ops-%lld\">Ops</h2>\n", (long long)run->id);
	if (n == 0) {
		P("<p class=\"muted\">No op executions recorded.</p>\n");
		return;
	}
	int64_t total = 0;
	for (int i = 0; i < n; i++)
		total += ops[i].total_ns;
	P("<p class=\"lead\">Top ops by total time. <i>First step</i> is the time in the run's first step; "
	  "<i>steady / step</i> is the mean per later step.</p>\n");
	P("<table class=\"t\"><tr><th>op</th><th>type</th><th class=\"r\">calls</th><th class=\"r\">total</th>"
	  "<th class=\"r\">max</th><th class=\"r\">first step</th><th class=\"r\">steady / step</th><th class=\"r\">first ÷ steady</th></tr>\n");
	for (int i = 0; i < n; i++) {
		const pp_op_stat *s = &ops[i];
		P("<tr><td class=\"m\">");
		E(s->name);
		P("</td><td>");
		E(s->type);
		pp_out_printf(o, "</td><td class=\"r\">%lld</td><td class=\"r\">", (long long)s->calls);
		html_dur(o, s->total_ns);
		P("</td><td class=\"r\">");
		html_dur(o, s->max_ns);
		P("</td><td class=\"r\">");
		if (s->first_step >= 0)
			html_dur(o, s->first_ns);
		else
			P("—");
		P("</td><td class=\"r\">");
		double per = s->steady_steps > 0 ? (double)s->steady_ns / (double)s->steady_steps : -1;
		html_dur_or_dash(o, per >= 0 ? (int64_t)per : -1);
		P("</td><td class=\"r\">");
		if (per > 0 && s->first_ns > 0)
			pp_out_printf(o, "%.1f×", (double)s->first_ns / per);
		else
			P("—");
		P("</td></tr>\n");
	}
	P("</table>\n");
	if (more)
		pp_out_printf(o, "<p class=\"muted\">%d more ops with less time not shown.</p>\n", more);
}
