/* report.c — the HTML report backend: one self-contained file (inline CSS,
 * inline SVG charts, one small script), nothing fetched from the network.
 * Charts that don't need interaction are drawn here as SVG with <title>
 * tooltips, so they render with scripts off; only tabs and the zoomable
 * timeline need the script. The timeline ships a level-of-detail subset:
 * above the budget, the shortest items are merged into "N items" blocks per
 * track row, so a million-event run stays a few MB and quick to draw.
 * This file is the page: head, navigation, each run's panel header and
 * the order of the sections, which are report_<section>.c. */
#include "report_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void report_run_title(pp_out *o, const pp_run_info *r)
{
	if (r->scenario[0]) {
		E(r->scenario);
		P(" / ");
		E(r->variant[0] ? r->variant : "?");
	} else if (r->label[0]) {
		E(r->label);
	} else if (r->command[0]) {
		char c[64];
		snprintf(c, sizeof c, "%.60s", r->command);
		E(c);
	} else {
		pp_out_printf(o, "run %lld", (long long)r->id);
	}
}

static void nav(pp_view_ctx *c, html_state *s)
{
	pp_out *o = c->out;
	P("<nav class=\"side\" id=\"nav\"><button class=\"tab active\" data-tab=\"overview\">Overview</button>\n");
	const char **groups = malloc((size_t)c->n_runs * sizeof *groups);
	int ng = groups ? report_scenario_groups(c, groups) : 0;
	for (int g = 0; g < ng; g++) {
		P("<div class=\"group\">");
		E(groups[g][0] ? groups[g] : (ng > 1 ? "other runs" : "runs"));
		P("</div>\n");
		for (int i = 0; i < c->n_runs; i++) {
			const pp_run_info *r = &c->runs[i];
			if (strcmp(r->scenario, groups[g]) != 0)
				continue;
			pp_out_printf(o, "<button class=\"tab\" data-tab=\"run-%lld\"><span class=\"muted\">%lld</span> ",
				      (long long)r->id, (long long)r->id);
			if (r->scenario[0])
				E(r->variant[0] ? r->variant : "?");
			else
				report_run_title(o, r);
			int high, n = report_count_findings(s, r->id, &high);
			if (n)
				pp_out_printf(o, "<span class=\"n%s\">%d</span>", high ? " high" : "", n);
			P("</button>\n");
		}
	}
	free(groups);
	P("</nav>\n");
}

static int html_begin(pp_view_ctx *c)
{
	html_state *s = calloc(1, sizeof *s);
	if (!s)
		return pp_view_fail(c, "out of memory");
	c->priv = s;
	/* every step number of the page (overview tables, cards, chart) from
	 * one summary per run: the Theil-Sen fit is the costly part */
	s->steps = calloc((size_t)(c->n_runs ? c->n_runs : 1), sizeof *s->steps);
	if (!s->steps)
		return pp_view_fail(c, "out of memory");
	for (int i = 0; i < c->n_runs; i++)
		diag_step_summary(c->st, c->runs[i].id, DIAG_STEPS_TREND, &s->steps[i]);
	report_load_findings(c, s);
	pp_out *o = c->out;
	const char *title = c->opts->title;
	const char *path = pp_store_path(c->st);
	if (!title) {
		const char *slash = strrchr(path, '/');
		title = slash ? slash + 1 : path;
	}
	P("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
	  "<meta name=\"generator\" content=\"phaseprof\"><title>phaseprof · ");
	E(title);
	P("</title>\n<style>\n");
	P(pp_report_css);
	P("</style></head>\n<body>\n<header class=\"top\"><span class=\"brand\">phaseprof</span><span class=\"title\">");
	E(title);
	char when[64];
	time_t now = time(NULL);
	struct tm tmv;
	strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime_r(&now, &tmv));
	pp_out_printf(o, "</span><span class=\"sub\">%d run%s · report written %s</span></header>\n<div class=\"layout\">\n",
		      c->n_runs, c->n_runs == 1 ? "" : "s", when);
	nav(c, s);
	P("<main>\n");
	report_summary(c, s);
	return 0;
}

static int html_run(pp_view_ctx *c, const pp_run_info *run)
{
	html_state *s = c->priv;
	pp_out *o = c->out;
	pp_model m;
	if (pp_model_load_kept(c->st, run, &m, c->err, c->errlen) != 0)
		return -1;
	pp_out_printf(o, "<section class=\"panel\" id=\"run-%lld\"><h1>Run %lld: ", (long long)run->id, (long long)run->id);
	report_run_title(o, run);
	P("</h1>\n<p class=\"lead\">");
	E(run->command[0] ? run->command : run->label);
	P("</p>\n<div class=\"toc\">");
	static const char *const toc[][2] = {{"phases", "phases"}, {"steps", "steps"}, {"timeline", "timeline"},
					     {"ops", "ops"}, {"memory", "memory"}, {"graph", "graph"},
					     {"flame", "flame graph"}, {"libs", "libraries"}, {"io", "I/O"},
					     {"meta", "metadata"}};
	for (size_t k = 0; k < sizeof toc / sizeof *toc; k++)
		pp_out_printf(o, "<a href=\"#%s-%lld\" onclick=\"var e=document.getElementById('%s-%lld');"
			      "if(e){e.scrollIntoView();}return false;\">%s</a>",
			      toc[k][0], (long long)run->id, toc[k][0], (long long)run->id, toc[k][1]);
	P("</div>\n");
	/* summary cards */
	const pp_step_summary *ss = &s->steps[c->run_index];
	int64_t steady = (int64_t)ss->steady_median_ns;
	P("<div class=\"cards\">");
	html_card_open(o, NULL, "wall time");
	html_dur(o, run->duration_ns);
	P("</div></div>");
	if (ss->first_ns >= 0) {
		html_card_open(o, NULL, "first step");
		html_dur(o, ss->first_ns);
		P("</div></div>");
	}
	if (steady >= 0) {
		html_card_open(o, NULL, "steady step");
		html_dur(o, steady);
		P("</div></div>");
	}
	html_card_open(o, NULL, "threads / tracks");
	pp_out_printf(o, "%d</div></div>", m.n_tracks);
	html_card_open(o, NULL, "events");
	html_num(o, (double)run->events);
	P("</div></div>");
	if (run->events_lost || run->rows_lost) {
		html_card_open(o, "warn", "lost");
		html_num(o, (double)(run->events_lost + run->rows_lost));
		P("</div><div class=\"d\">dropped by the recorder</div></div>");
	}
	P("</div>\n");
	if (strcmp(run->status, "complete") != 0 && run->status[0]) {
		P("<div class=\"note\">Run status: <b>");
		E(run->status);
		P("</b>");
		if (run->note[0]) {
			P(" — ");
			E(run->note);
		}
		P("</div>\n");
	}
	report_findings(c, s, run);
	report_waterfall(c, run, &m);
	report_imports(c, &m);
	report_phase_totals(c, run);
	report_steps(c, run, ss);
	report_timeline(c, run, &m);
	int64_t t_end = m.t_end;
	pp_model_free(&m);
	pp_op_stat *ops = NULL;
	int n_ops = 0;
	pp_store_ops(c->st, run->id, 0, &ops, &n_ops);
	report_ops(c, run, ops, n_ops);
	report_memory(c, run, t_end);
	report_graph(c, run, ops, n_ops);
	free(ops);
	report_flame(c, run);
	report_libs_io(c, run);
	report_meta(c, run);
	P("</section>\n");
	return 0;
}

static int html_end(pp_view_ctx *c)
{
	html_state *s = c->priv;
	if (!s)
		return 0;
	pp_out *o = c->out;
	P("</main></div>\n<script>\n");
	P(pp_report_js);
	P("</script>\n</body></html>\n");
	free(s->findings);
	free(s->steps);
	free(s);
	c->priv = NULL;
	return 0;
}

const pp_view_ops pp_backend_html = {
	.name = "html",
	.description = "self-contained HTML report (inline SVG, no network)",
	.begin = html_begin,
	.run = html_run,
	.end = html_end,
};
