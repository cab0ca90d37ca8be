/* report_summary.c — the report's overview tab: totals, each run's top
 * finding, rank swimlanes, scenario variants side by side, the run table. */
#include "report_int.h"

#include <stdlib.h>
#include <string.h>

static const pp_run_info *run_by_id(pp_view_ctx *c, int64_t id)
{
	for (int i = 0; i < c->n_runs; i++)
		if (c->runs[i].id == id)
			return &c->runs[i];
	return NULL;
}

/* Scenario groups in order of first appearance; "" = runs without one.
 * names[] points into c->runs (at most n_runs groups). */
int report_scenario_groups(pp_view_ctx *c, const char **names)
{
	int n = 0;
	for (int i = 0; i < c->n_runs; i++) {
		int seen = 0;
		for (int k = 0; k < n && !seen; k++)
			if (!strcmp(names[k], c->runs[i].scenario))
				seen = 1;
		if (!seen)
			names[n++] = c->runs[i].scenario;
	}
	return n;
}

static void scenario_table(pp_view_ctx *c, html_state *s, const char *scen)
{
	pp_out *o = c->out;
	int *idx = malloc((size_t)c->n_runs * sizeof *idx), n = 0;
	int64_t *steady = malloc((size_t)c->n_runs * sizeof *steady), *first = malloc((size_t)c->n_runs * sizeof *first);
	for (int i = 0; idx && i < c->n_runs; i++)
		if (!strcmp(c->runs[i].scenario, scen))
			idx[n++] = i;
	if (n == 0 || !steady || !first) {
		free(idx);
		free(steady);
		free(first);
		return;
	}
	int base = pp_pick_baseline(c->runs, idx, n);
	for (int i = 0; i < n; i++) {
		first[i] = s->steps[idx[i]].first_ns;
		steady[i] = (int64_t)s->steps[idx[i]].steady_median_ns;
	}
	int best = 0;
	for (int i = 1; i < n; i++)
		if (c->runs[idx[i]].duration_ns < c->runs[idx[best]].duration_ns)
			best = i;
	P("<h3>Scenario <code>");
	E(scen);
	P("</code></h3>\n<table class=\"t\"><tr><th>variant</th><th>run</th><th class=\"r\">total time</th>"
	  "<th class=\"r\">speed-up</th><th class=\"r\">first step</th><th class=\"r\">steady step (median)</th>"
	  "<th class=\"r\">step speed-up</th><th>findings</th></tr>\n");
	const pp_run_info *b = &c->runs[idx[base]];
	for (int i = 0; i < n; i++) {
		const pp_run_info *r = &c->runs[idx[i]];
		pp_out_printf(o, "<tr class=\"%s\"><td><b>", i == base ? "base" : i == best ? "best" : "");
		E(r->variant[0] ? r->variant : "?");
		pp_out_printf(o, "</b>%s</td><td><a href=\"#run-%lld\" data-goto=\"run-%lld\">%lld</a></td><td class=\"r\">",
			      i == base ? " <span class=\"muted\">(baseline)</span>" : "", (long long)r->id,
			      (long long)r->id, (long long)r->id);
		html_dur(o, r->duration_ns);
		P("</td><td class=\"r\">");
		if (i == base || r->duration_ns <= 0) {
			P("—");
		} else {
			html_speedup(o, (double)b->duration_ns / (double)r->duration_ns);
		}
		P("</td><td class=\"r\">");
		html_dur_or_dash(o, first[i]);
		P("</td><td class=\"r\">");
		html_dur_or_dash(o, steady[i]);
		P("</td><td class=\"r\">");
		if (i != base && steady[i] > 0 && steady[base] > 0) {
			html_speedup(o, (double)steady[base] / (double)steady[i]);
		} else {
			P("—");
		}
		P("</td><td>");
		int high, nf = report_count_findings(s, r->id, &high);
		if (nf) {
			for (int k = 0; k < s->n_findings; k++)
				if (s->findings[k].run_id == r->id && strcmp(s->findings[k].severity, "info")) {
					pp_out_printf(o, "<span class=\"sev %s\">", report_sev_class(s->findings[k].severity));
					E(s->findings[k].rule);
					P("</span>");
					break;
				}
			if (nf > 1)
				pp_out_printf(o, " +%d", nf - 1);
		} else {
			P("<span class=\"quiet\">quiet</span>");
		}
		P("</td></tr>\n");
	}
	P("</table>\n");
	/* Bar chart of total time per variant. */
	int64_t maxd = 1;
	for (int i = 0; i < n; i++)
		if (c->runs[idx[i]].duration_ns > maxd)
			maxd = c->runs[idx[i]].duration_ns;
	int h = 26 * n + 10;
	pp_out_printf(o, "<div class=\"chart\" style=\"max-width:900px\"><svg viewBox=\"0 0 900 %d\" class=\"bars\">", h);
	for (int i = 0; i < n; i++) {
		const pp_run_info *r = &c->runs[idx[i]];
		double w = 560.0 * (double)r->duration_ns / (double)maxd;
		int y = 6 + i * 26;
		P("<g><title>");
		E(r->variant);
		P(": ");
		html_dur(o, r->duration_ns);
		P("</title>");
		pp_out_printf(o, "<text x=\"170\" y=\"%d\" font-size=\"12\" text-anchor=\"end\" fill=\"#1d2330\">", y + 14);
		E(r->variant[0] ? r->variant : "?");
		pp_out_printf(o, "</text><rect x=\"180\" y=\"%d\" width=\"%.1f\" height=\"18\" rx=\"3\" fill=\"%s\"/>", y,
			      w > 1 ? w : 1, i == base ? "#d9674e" : i == best ? "#2e9e6a" : "#5b8def");
		pp_out_printf(o, "<text x=\"%.1f\" y=\"%d\" font-size=\"12\" fill=\"#1d2330\">", 186 + w, y + 14);
		html_dur(o, r->duration_ns);
		if (i != base && r->duration_ns > 0)
			pp_out_printf(o, " (%.2f×)", (double)b->duration_ns / (double)r->duration_ns);
		P("</text></g>");
	}
	P("</svg></div>\n");
	free(idx);
	free(steady);
	free(first);
}

static int cmp_iv(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Wall time of the recordings: the union of the runs' intervals on the
 * wall clock, since a child (a DataLoader worker, a rank) runs while its
 * parent does; a run without a start time counts whole when it has no
 * parent (its parent's interval covers it otherwise). */
static int64_t recorded_wall_ns(const pp_run_info *runs, int n)
{
	int64_t total = 0;
	int64_t(*iv)[2] = malloc((size_t)(n ? n : 1) * sizeof *iv);
	int m = 0;
	for (int i = 0; i < n; i++) {
		const pp_run_info *r = &runs[i];
		if (r->duration_ns <= 0)
			continue;
		if (r->start_unix_ns > 0 && iv) {
			iv[m][0] = r->start_unix_ns;
			iv[m][1] = r->start_unix_ns + r->duration_ns;
			m++;
		} else if (r->parent_run == 0) {
			total += r->duration_ns;
		}
	}
	if (m)
		qsort(iv, (size_t)m, sizeof *iv, cmp_iv);
	for (int i = 0; i < m;) {
		int64_t a = iv[i][0], b = iv[i][1];
		for (i++; i < m && iv[i][0] <= b; i++)
			if (iv[i][1] > b)
				b = iv[i][1];
		total += b - a;
	}
	free(iv);
	return total;
}

void report_summary(pp_view_ctx *c, html_state *s)
{
	pp_out *o = c->out;
	P("<section class=\"panel active\" id=\"overview\"><h1>Summary</h1>\n<p class=\"lead\">");
	int64_t total = recorded_wall_ns(c->runs, c->n_runs), events = 0, lost = 0;
	for (int i = 0; i < c->n_runs; i++) {
		events += c->runs[i].events;
		lost += c->runs[i].events_lost + c->runs[i].rows_lost;
	}
	pp_out_printf(o, "%d run%s recorded in <code>", c->n_runs, c->n_runs == 1 ? "" : "s");
	E(pp_store_path(c->st));
	P("</code>.</p>\n<div class=\"cards\">");
	html_card_open(o, NULL, "runs");
	pp_out_printf(o, "%d</div></div>", c->n_runs);
	html_card_open(o, NULL, "recorded time");
	html_dur(o, total);
	P("</div><div class=\"d\">wall clock, child processes inside their parent's</div></div>");
	int nh = 0, nm = 0;
	for (int i = 0; i < s->n_findings; i++) {
		nh += !strcmp(s->findings[i].severity, "high");
		nm += !strcmp(s->findings[i].severity, "moderate");
	}
	html_card_open(o, nh ? "warn" : NULL, "findings");
	pp_out_printf(o, "%d</div><div class=\"d\">%d high · %d moderate</div></div>", nh + nm, nh, nm);
	html_card_open(o, NULL, "events");
	html_num(o, (double)events);
	P("</div></div>");
	html_card_open(o, lost ? "warn" : NULL, "lost");
	html_num(o, (double)lost);
	P("</div><div class=\"d\">events + rows dropped</div></div></div>\n");

	P("<h2>What is slow</h2>\n");
	if (s->computed)
		P("<p class=\"muted\">No stored findings: these come from running the diagnostic rules while writing this report.</p>\n");
	/* The most important finding of each run first (findings are ranked);
	 * the rest stay one click away so the page opens on the causes. */
	int shown = 0, rest = 0;
	char *top = calloc((size_t)(s->n_findings ? s->n_findings : 1), 1);
	for (int i = 0; top && i < s->n_findings; i++) {
		int seen = 0;
		for (int k = 0; k < i; k++)
			if (top[k] && s->findings[k].run_id == s->findings[i].run_id)
				seen = 1;
		if (!seen && strcmp(s->findings[i].severity, "info") != 0) {
			top[i] = 1;
			report_finding_block(o, &s->findings[i], run_by_id(c, s->findings[i].run_id));
			shown++;
		} else {
			rest++;
		}
	}
	if (rest && top) {
		pp_out_printf(o, "<details><summary>%d more finding%s (all runs)</summary>\n", rest, rest == 1 ? "" : "s");
		for (int i = 0; i < s->n_findings; i++)
			if (!top[i])
				report_finding_block(o, &s->findings[i], run_by_id(c, s->findings[i].run_id));
		P("</details>\n");
	}
	free(top);
	if (!shown && !rest)
		P("<p class=\"quiet\">No findings: the diagnostic rules found nothing slow in these runs.</p>\n");
	report_ranks(c);

	const char **groups = malloc((size_t)c->n_runs * sizeof *groups);
	int ng = groups ? report_scenario_groups(c, groups) : 0;
	int any = 0;
	for (int g = 0; g < ng; g++)
		if (groups[g][0])
			any = 1;
	if (any) {
		P("<h2>Scenarios: variants side by side</h2>\n<p class=\"lead\">Speed-up is the baseline variant's time "
		  "divided by the variant's time (above 1× = faster).</p>\n");
		for (int g = 0; g < ng; g++)
			if (groups[g][0])
				scenario_table(c, s, groups[g]);
	}
	free(groups);
	P("<h2>Runs</h2>\n<table class=\"t\"><tr><th>run</th><th>what</th><th>status</th><th class=\"r\">duration</th>"
	  "<th class=\"r\">steps</th><th class=\"r\">events</th><th class=\"r\">lost</th><th>command</th></tr>\n");
	for (int i = 0; i < c->n_runs; i++) {
		const pp_run_info *r = &c->runs[i];
		pp_out_printf(o, "<tr><td><a href=\"#run-%lld\" data-goto=\"run-%lld\">%lld</a></td><td>", (long long)r->id,
			      (long long)r->id, (long long)r->id);
		report_run_title(o, r);
		P("</td><td>");
		E(r->status);
		P("</td><td class=\"r\">");
		html_dur(o, r->duration_ns);
		pp_out_printf(o, "</td><td class=\"r\">%d</td><td class=\"r\">%lld</td><td class=\"r\">%lld</td><td class=\"m\">",
			      s->steps[i].n, (long long)r->events, (long long)(r->events_lost + r->rows_lost));
		E(r->command);
		P("</td></tr>\n");
	}
	P("</table>\n</section>\n");
}
