/* report_findings.c — the report's findings: their order, one finding's block,
 * counts per run and a run's findings section. */
#include "report_int.h"

#include <stdlib.h>
#include <string.h>
#include "diagnostics.h"

static int sev_rank(const char *s)
{
	return !strcmp(s, "high") ? 3 : !strcmp(s, "moderate") ? 2 : 1;
}

static int cmp_finding(const void *a, const void *b)
{
	const pp_finding *x = a, *y = b;
	int r = sev_rank(y->severity) - sev_rank(x->severity);
	if (r)
		return r;
	return (y->score > x->score) - (y->score < x->score);
}

const char *report_sev_class(const char *s)
{
	return !strcmp(s, "high") ? "high" : !strcmp(s, "moderate") ? "moderate" : "info";
}

void report_finding_block(pp_out *o, const pp_finding *f, const pp_run_info *run)
{
	pp_out_printf(o, "<div class=\"finding %s\"><div class=\"t\"><span class=\"sev %s\">", report_sev_class(f->severity),
		      report_sev_class(f->severity));
	E(f->severity);
	P("</span>");
	E(f->title);
	if (run) {
		pp_out_printf(o, " <a href=\"#run-%lld\" data-goto=\"run-%lld\" class=\"muted\">run %lld: ",
			      (long long)run->id, (long long)run->id, (long long)run->id);
		report_run_title(o, run);
		P("</a>");
	}
	P("</div>");
	if (f->evidence[0]) {
		P("<div class=\"ev\">");
		E(f->evidence);
		P("</div>");
	}
	if (f->fix[0]) {
		P("<div class=\"fix\"><b>Fix:</b> ");
		E(f->fix);
		P("</div>");
	}
	P("<div class=\"muted\" style=\"font-size:11px\">rule <code>");
	E(f->rule);
	pp_out_printf(o, "</code> · score %.2f</div></div>\n", f->score);
}

int report_count_findings(html_state *s, int64_t run_id, int *high)
{
	int n = 0;
	*high = 0;
	for (int i = 0; i < s->n_findings; i++)
		if (s->findings[i].run_id == run_id && strcmp(s->findings[i].severity, "info") != 0) {
			n++;
			if (!strcmp(s->findings[i].severity, "high"))
				(*high)++;
		}
	return n;
}

void report_load_findings(pp_view_ctx *c, html_state *s)
{
	/* Per run: the stored findings, or (never diagnosed) the rules' now. */
	int cap = 0;
	for (int i = 0; i < c->n_runs; i++) {
		pp_finding *f = NULL;
		int n = 0, computed = 0;
		if (pp_diag_findings(c->st, c->runs[i].id, &f, &n, &computed) != 0)
			continue;
		s->computed |= computed && n > 0;
		for (int k = 0; k < n; k++) {
			if (PP_GROW(s->findings, s->n_findings + 1, cap) != 0)
				break;
			s->findings[s->n_findings++] = f[k];
		}
		free(f);
	}
	if (s->n_findings > 1)
		pp_sort(s->findings, (size_t)s->n_findings, sizeof *s->findings, cmp_finding);
}

void report_findings(pp_view_ctx *c, html_state *s, const pp_run_info *run)
{
	pp_out *o = c->out;
	pp_out_printf(o, "<h2 id=\"findings-%lld\">Findings</h2>\n", (long long)run->id);
	int nf = 0;
	for (int i = 0; i < s->n_findings; i++)
		if (s->findings[i].run_id == run->id) {
			report_finding_block(o, &s->findings[i], NULL);
			nf++;
		}
	if (!nf)
		P("<p class=\"quiet\">No findings for this run.</p>\n");
}
