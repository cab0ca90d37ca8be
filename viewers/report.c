/* report.c — the HTML report backend: one self-contained file (inline CSS,
 * inline SVG charts, one small script), nothing fetched from the network.
 * Charts that don't need interaction are drawn here as SVG with <title>
 * tooltips, so they render with scripts off; only tabs and the zoomable
 * timeline need the script. The timeline ships a level-of-detail subset:
 * above the budget, the shortest items are merged into "N items" blocks per
 * track row, so a million-event run stays a few MB and quick to draw. */
#include "view_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "diagnostics.h"
#include "diag_stats.h"

typedef struct html_state {
	pp_finding *findings;     /* all stored findings, or computed ones */
	int n_findings;
	int computed;             /* findings came from the rules now, not the store */
} html_state;

/* ---- small output helpers ---- */
#define P(s) pp_out_puts(o, s)
#define E(s) pp_out_html(o, s)

static void pdur(pp_out *o, int64_t ns)
{
	char b[32];
	P(pp_fmt_dur(b, sizeof b, (double)ns));
}

static void pbytes(pp_out *o, double v)
{
	char b[32];
	P(pp_fmt_bytes(b, sizeof b, v));
}

static void pnum(pp_out *o, double v)
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

static const char *sev_class(const char *s)
{
	return !strcmp(s, "high") ? "high" : !strcmp(s, "moderate") ? "moderate" : "info";
}

static void run_title(pp_out *o, const pp_run_info *r)
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

static void finding_block(pp_out *o, const pp_finding *f, const pp_run_info *run)
{
	pp_out_printf(o, "<div class=\"finding %s\"><div class=\"t\"><span class=\"sev %s\">", sev_class(f->severity),
		      sev_class(f->severity));
	E(f->severity);
	P("</span>");
	E(f->title);
	if (run) {
		pp_out_printf(o, " <a href=\"#run-%lld\" data-goto=\"run-%lld\" class=\"muted\">run %lld: ",
			      (long long)run->id, (long long)run->id, (long long)run->id);
		run_title(o, run);
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

/* ---- head, navigation, overview ---- */
static int count_findings(html_state *s, int64_t run_id, int *high)
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

static void load_findings(pp_view_ctx *c, html_state *s)
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

static const pp_run_info *run_by_id(pp_view_ctx *c, int64_t id)
{
	for (int i = 0; i < c->n_runs; i++)
		if (c->runs[i].id == id)
			return &c->runs[i];
	return NULL;
}

/* Scenario groups in order of first appearance; "" = runs without one.
 * names[] points into c->runs (at most n_runs groups). */
static int scenario_groups(pp_view_ctx *c, const char **names)
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

static void nav(pp_view_ctx *c, html_state *s)
{
	pp_out *o = c->out;
	P("<nav class=\"side\" id=\"nav\"><button class=\"tab active\" data-tab=\"overview\">Overview</button>\n");
	const char **groups = malloc((size_t)c->n_runs * sizeof *groups);
	int ng = groups ? scenario_groups(c, groups) : 0;
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
				run_title(o, r);
			int high, n = count_findings(s, r->id, &high);
			if (n)
				pp_out_printf(o, "<span class=\"n%s\">%d</span>", high ? " high" : "", n);
			P("</button>\n");
		}
	}
	free(groups);
	P("</nav>\n");
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
	for (int i = 0; i < n; i++)
		steady[i] = pp_run_steady_step(c->st, c->runs[idx[i]].id, &first[i]);
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
		pdur(o, r->duration_ns);
		P("</td><td class=\"r\">");
		if (i == base || r->duration_ns <= 0) {
			P("—");
		} else {
			double sp = (double)b->duration_ns / (double)r->duration_ns;
			pp_out_printf(o, "<span class=\"%s\">%.2f×</span>", sp >= 1 ? "speed" : "slower", sp);
		}
		P("</td><td class=\"r\">");
		if (first[i] >= 0)
			pdur(o, first[i]);
		else
			P("—");
		P("</td><td class=\"r\">");
		if (steady[i] >= 0)
			pdur(o, steady[i]);
		else
			P("—");
		P("</td><td class=\"r\">");
		if (i != base && steady[i] > 0 && steady[base] > 0) {
			double sp = (double)steady[base] / (double)steady[i];
			pp_out_printf(o, "<span class=\"%s\">%.2f×</span>", sp >= 1 ? "speed" : "slower", sp);
		} else {
			P("—");
		}
		P("</td><td>");
		int high, nf = count_findings(s, r->id, &high);
		if (nf) {
			for (int k = 0; k < s->n_findings; k++)
				if (s->findings[k].run_id == r->id && strcmp(s->findings[k].severity, "info")) {
					pp_out_printf(o, "<span class=\"sev %s\">", sev_class(s->findings[k].severity));
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
		pdur(o, r->duration_ns);
		P("</title>");
		pp_out_printf(o, "<text x=\"170\" y=\"%d\" font-size=\"12\" text-anchor=\"end\" fill=\"#1d2330\">", y + 14);
		E(r->variant[0] ? r->variant : "?");
		pp_out_printf(o, "</text><rect x=\"180\" y=\"%d\" width=\"%.1f\" height=\"18\" rx=\"3\" fill=\"%s\"/>", y,
			      w > 1 ? w : 1, i == base ? "#d9674e" : i == best ? "#2e9e6a" : "#5b8def");
		pp_out_printf(o, "<text x=\"%.1f\" y=\"%d\" font-size=\"12\" fill=\"#1d2330\">", 186 + w, y + 14);
		pdur(o, r->duration_ns);
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

static void overview(pp_view_ctx *c, html_state *s)
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
	pp_out_printf(o, "<div class=\"card\"><div class=\"k\">runs</div><div class=\"v\">%d</div></div>", c->n_runs);
	P("<div class=\"card\"><div class=\"k\">recorded time</div><div class=\"v\">");
	pdur(o, total);
	P("</div><div class=\"d\">wall clock, child processes inside their parent's</div></div>");
	int nh = 0, nm = 0;
	for (int i = 0; i < s->n_findings; i++) {
		nh += !strcmp(s->findings[i].severity, "high");
		nm += !strcmp(s->findings[i].severity, "moderate");
	}
	pp_out_printf(o, "<div class=\"card%s\"><div class=\"k\">findings</div><div class=\"v\">%d</div>"
		      "<div class=\"d\">%d high · %d moderate</div></div>", nh ? " warn" : "", nh + nm, nh, nm);
	P("<div class=\"card\"><div class=\"k\">events</div><div class=\"v\">");
	pnum(o, (double)events);
	P("</div></div>");
	pp_out_printf(o, "<div class=\"card%s\"><div class=\"k\">lost</div><div class=\"v\">", lost ? " warn" : "");
	pnum(o, (double)lost);
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
			finding_block(o, &s->findings[i], run_by_id(c, s->findings[i].run_id));
			shown++;
		} else {
			rest++;
		}
	}
	if (rest && top) {
		pp_out_printf(o, "<details><summary>%d more finding%s (all runs)</summary>\n", rest, rest == 1 ? "" : "s");
		for (int i = 0; i < s->n_findings; i++)
			if (!top[i])
				finding_block(o, &s->findings[i], run_by_id(c, s->findings[i].run_id));
		P("</details>\n");
	}
	free(top);
	if (!shown && !rest)
		P("<p class=\"quiet\">No findings: the diagnostic rules found nothing slow in these runs.</p>\n");
	pp_report_ranks(c);

	const char **groups = malloc((size_t)c->n_runs * sizeof *groups);
	int ng = groups ? scenario_groups(c, groups) : 0;
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
		pp_step_row *st = NULL;
		int ns = 0;
		pp_store_steps(c->st, r->id, &st, &ns);
		free(st);
		pp_out_printf(o, "<tr><td><a href=\"#run-%lld\" data-goto=\"run-%lld\">%lld</a></td><td>", (long long)r->id,
			      (long long)r->id, (long long)r->id);
		run_title(o, r);
		P("</td><td>");
		E(r->status);
		P("</td><td class=\"r\">");
		pdur(o, r->duration_ns);
		pp_out_printf(o, "</td><td class=\"r\">%d</td><td class=\"r\">%lld</td><td class=\"r\">%lld</td><td class=\"m\">",
			      ns, (long long)r->events, (long long)(r->events_lost + r->rows_lost));
		E(r->command);
		P("</td></tr>\n");
	}
	P("</table>\n</section>\n");
}

static int html_begin(pp_view_ctx *c)
{
	html_state *s = calloc(1, sizeof *s);
	if (!s)
		return pp_view_fail(c, "out of memory");
	c->priv = s;
	load_findings(c, s);
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
	overview(c, s);
	return 0;
}

/* ---- phase waterfall ---- */
typedef struct wf_row {
	int kind, name;
	int64_t start, end, total, max;
	int count;
} wf_row;

static int cmp_wf_start(const void *a, const void *b)
{
	const wf_row *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

static int cmp_wf_total(const void *a, const void *b)
{
	const wf_row *x = a, *y = b;
	return (y->total > x->total) - (y->total < x->total);
}

/* Top-level phases: phase items (kind > 0) with no phase around them, in
 * time order, consecutive repeats of one phase merged ("step ×500"). */
static int waterfall_rows(const pp_model *m, int phases_only, wf_row **out)
{
	wf_row *v = NULL;
	int n = 0, cap = 0;
	for (int t = 0; t < m->n_tracks; t++) {
		const pp_track *tr = &m->tracks[t];
		if (tr->gpu)
			continue;
		int stack_phase[512];   /* per depth: 1 if that open item is a phase */
		for (int i = 0; i < tr->n; i++) {
			const pp_item *it = &tr->items[i];
			int d = it->depth < 512 ? it->depth : 511;
			int inside = 0;
			for (int k = 0; k < d; k++)
				inside |= stack_phase[k];
			int is_phase = it->cat == PP_CAT_SPAN && (phases_only ? it->kind != PP_SPAN : 1);
			stack_phase[d] = is_phase;
			if (!is_phase || inside || (!phases_only && d > 0))
				continue;
			if (PP_GROW(v, n + 1, cap) != 0)
				break;
			int64_t dur = it->end - it->start;
			v[n++] = (wf_row){it->kind, it->name, it->start, it->end, dur, dur, 1};
		}
	}
	pp_sort(v, (size_t)n, sizeof *v, cmp_wf_start);
	int k = 0;
	for (int i = 0; i < n; i++) {
		/* steps merge whatever their names; other phases by kind+name */
		if (k && v[k - 1].kind == v[i].kind && (v[i].kind == PP_STEP || v[k - 1].name == v[i].name)) {
			wf_row *r = &v[k - 1];
			r->count++;
			r->total += v[i].total;
			if (v[i].end > r->end)
				r->end = v[i].end;
			if (v[i].total > r->max)
				r->max = v[i].total;
		} else {
			v[k++] = v[i];
		}
	}
	*out = v;
	return k;
}

static void axis_ticks(pp_out *o, double x0, double w, int64_t span, double y_text, double y0, double y1)
{
	if (span <= 0)
		return;
	double step = pow(10, floor(log10((double)span / 6)));
	if (span / step > 12)
		step *= 5;
	else if (span / step > 6)
		step *= 2;
	for (double t = 0; t <= (double)span + 1; t += step) {
		double x = x0 + w * t / (double)span;
		pp_out_printf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e9ef\"/>"
			      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#5f6b7d\" text-anchor=\"middle\">",
			      x, x, y0, y1, x, y_text);
		pdur(o, (int64_t)t);
		P("</text>");
	}
}

static const char *const phase_colours[] = {
	"#9aa5b8", "#5b8def", "#8e6fd8", "#3fa7a0", "#c77dba", "#4f9d5d", "#74a6d8", "#e08a3c",
	"#b9a23b", "#d9674e", "#6b8e23", "#a0522d", "#5f7fbf", "#9b59b6", "#e6b422", "#d35454",
	"#2e86c1", "#16a085", "#7f8c8d", "#c0392b", "#95a5a6", "#34495e"};

static void section_waterfall(pp_view_ctx *c, const pp_run_info *run, const pp_model *m)
{
	pp_out *o = c->out;
	wf_row *rows = NULL;
	int n = waterfall_rows(m, 1, &rows);
	int phases = 1;
	if (n == 0) {
		free(rows);
		n = waterfall_rows(m, 0, &rows);
		phases = 0;
	}
	pp_out_printf(o, "<h2 id=\"phases-%lld\">Phase waterfall</h2>\n", (long long)run->id);
	if (n == 0) {
		P("<p class=\"muted\">No phases or spans were recorded in this run.</p>\n");
		free(rows);
		return;
	}
	P("<p class=\"lead\">Start-up → initialisation → first step → steady steps. Each bar is a top-level ");
	P(phases ? "phase" : "span");
	P(" (repeats merged); the share is of the run's wall time.</p>\n");
	int64_t span = m->t_end > 0 ? m->t_end : 1;
	const int maxrows = 40;
	int other = 0;
	int64_t other_total = 0;
	if (n > maxrows) {
		/* keep the costliest rows, still shown in time order */
		pp_sort(rows, (size_t)n, sizeof *rows, cmp_wf_total);
		for (int i = maxrows - 1; i < n; i++) {
			other += rows[i].count;
			other_total += rows[i].total;
		}
		n = maxrows - 1;
		pp_sort(rows, (size_t)n, sizeof *rows, cmp_wf_start);
	}
	int h = 26 + 22 * (n + (other ? 1 : 0)) + 6;
	pp_out_printf(o, "<div class=\"chart\"><svg class=\"waterfall\" viewBox=\"0 0 1000 %d\">", h);
	axis_ticks(o, 240, 540, span, 12, 18, h - 4);
	for (int i = 0; i < n; i++) {
		const wf_row *r = &rows[i];
		double y = 22 + 22 * i;
		double x = 240 + 540.0 * (double)r->start / (double)span;
		double w = 540.0 * (double)(r->end - r->start) / (double)span;
		if (w < 1.5)
			w = 1.5;
		const char *name = m->names.s[r->name];
		const char *col = phase_colours[r->kind % (int)(sizeof phase_colours / sizeof *phase_colours)];
		P("<g><title>");
		E(name);
		if (r->count > 1)
			pp_out_printf(o, " ×%d", r->count);
		P(": ");
		pdur(o, r->total);
		P(" in total, starts at ");
		pdur(o, r->start);
		if (r->count > 1) {
			P(", longest ");
			pdur(o, r->max);
		}
		P("</title>");
		pp_out_printf(o, "<text x=\"232\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\" fill=\"#1d2330\">", y + 13);
		char lab[80];
		snprintf(lab, sizeof lab, "%.40s", name);
		E(lab);
		if (r->kind != PP_SPAN && strcmp(name, pp_kind_name((pp_kind)r->kind)) != 0) {
			P(" <tspan fill=\"#8792a3\">");
			E(pp_kind_name((pp_kind)r->kind));
			P("</tspan>");
		}
		if (r->count > 1)
			pp_out_printf(o, " ×%d", r->count);
		pp_out_printf(o, "</text><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"16\" rx=\"2\" fill=\"%s\"%s/>", x,
			      y + 1, w, col, r->count > 1 ? " fill-opacity=\"0.75\"" : "");
		pp_out_printf(o, "<text x=\"792\" y=\"%.1f\" font-size=\"12\" fill=\"#1d2330\">", y + 13);
		pdur(o, r->total);
		pp_out_printf(o, "<tspan fill=\"#5f6b7d\"> · %.1f%%</tspan></text></g>", 100.0 * (double)r->total / (double)span);
	}
	if (other) {
		double y = 22 + 22 * n;
		pp_out_printf(o, "<text x=\"232\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\" fill=\"#5f6b7d\">%d smaller phases</text>"
			      "<text x=\"792\" y=\"%.1f\" font-size=\"12\" fill=\"#5f6b7d\">", y + 13, other, y + 13);
		pdur(o, other_total);
		P("</text>");
	}
	P("</svg></div>\n");
	free(rows);
}

/* ---- Python import tree ----
 * The imports of a recorded Python program as a tree (nested as they
 * nested, library loads an import caused shown inside it), the costliest
 * first-come rows kept so that parents always come with their children. */
typedef struct imp_row {
	const pp_item *it;
	int depth;                /* imports around it */
	int64_t self;             /* less its direct child imports */
} imp_row;

static int cmp_i64_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x < y) - (x > y);
}

static void section_imports(pp_view_ctx *c, const pp_model *m)
{
	pp_out *o = c->out;
	int cap = 0, n = 0;
	imp_row *rows = NULL;
	int64_t total = 0;
	for (int t = 0; t < m->n_tracks; t++) {
		const pp_track *tr = &m->tracks[t];
		if (tr->gpu)
			continue;
		int stack[256], sd = 0; /* open items: index into rows (-1: not a row) */
		int64_t stack_end[256];
		for (int i = 0; i < tr->n; i++) {
			const pp_item *it = &tr->items[i];
			if (it->cat != PP_CAT_SPAN)
				continue;
			while (sd && stack_end[sd - 1] <= it->start)
				sd--;
			int imp_depth = 0, parent = -1;
			for (int k = sd - 1; k >= 0; k--)
				if (stack[k] >= 0 && rows[stack[k]].it->kind == PP_IMPORT) {
					if (parent < 0)
						parent = stack[k];
					imp_depth++;
				}
			int row = -1;
			int lib_in_import = it->kind == PP_LIBRARY_LOAD && parent >= 0;
			if (it->kind == PP_IMPORT || lib_in_import) {
				if (PP_GROW(rows, n + 1, cap) != 0)
					break;
				int64_t d = it->end - it->start;
				rows[n] = (imp_row){it, imp_depth, d};
				if (it->kind == PP_IMPORT && parent >= 0)
					rows[parent].self -= d;
				if (it->kind == PP_IMPORT && imp_depth == 0)
					total += d;
				row = n++;
			}
			if (sd < 256) {
				stack[sd] = row;
				stack_end[sd++] = it->end;
			}
		}
	}
	if (n == 0) {
		free(rows);
		return;
	}
	/* keep the 60 costliest; containment keeps every kept row's parents */
	const int keep = 60;
	int64_t floor_ns = 0;
	if (n > keep) {
		int64_t *d = malloc((size_t)n * sizeof *d);
		if (d) {
			for (int i = 0; i < n; i++)
				d[i] = rows[i].it->end - rows[i].it->start;
			pp_sort(d, (size_t)n, sizeof *d, cmp_i64_desc);
			floor_ns = d[keep - 1];
			free(d);
		}
	}
	P("<h3>Python imports</h3>\n<p class=\"lead\">Every module the program imported, nested as the "
	  "imports nested, with the shared libraries an import loaded inside it. Self time leaves out "
	  "nested imports (as <code>python -X importtime</code>); top-level imports took ");
	pdur(o, total);
	P(" in all.</p>\n<table class=\"t\"><tr><th>module</th><th class=\"r\">self</th>"
	  "<th class=\"r\">cumulative</th><th class=\"r\">starts at</th></tr>\n");
	int shown = 0;
	for (int i = 0; i < n; i++) {
		const pp_item *it = rows[i].it;
		int64_t d = it->end - it->start;
		if (d < floor_ns || shown >= keep)
			continue;
		shown++;
		pp_out_printf(o, "<tr><td style=\"padding-left:%dpx\">", 6 + 14 * (rows[i].depth < 30 ? rows[i].depth : 30));
		if (it->kind == PP_LIBRARY_LOAD)
			P("<span class=\"muted\">library </span>");
		E(m->names.s[it->name]);
		P("</td><td class=\"r\">");
		if (it->kind == PP_IMPORT)
			pdur(o, rows[i].self);
		P("</td><td class=\"r\">");
		pdur(o, d);
		P("</td><td class=\"r\">");
		pdur(o, it->start);
		P("</td></tr>\n");
	}
	P("</table>\n");
	if (shown < n)
		pp_out_printf(o, "<p class=\"muted\">%d shorter imports and loads not shown "
				 "(<code>phaseprof stats</code> lists them by self time).</p>\n", n - shown);
	free(rows);
}

/* Phase totals per kind, next to the waterfall. */
static void section_phase_totals(pp_view_ctx *c, const pp_run_info *run)
{
	pp_out *o = c->out;
	pp_phase_total *pt = NULL;
	int n = 0;
	if (pp_store_phase_totals(c->st, run->id, &pt, &n) != 0 || n == 0) {
		free(pt);
		return;
	}
	P("<table class=\"t\"><tr><th>phase kind</th><th class=\"r\">count</th><th class=\"r\">total</th>"
	  "<th class=\"r\">share</th><th class=\"r\">longest</th></tr>\n");
	double span = run->duration_ns > 0 ? (double)run->duration_ns : 1;
	for (int i = 0; i < n; i++) {
		P("<tr><td>");
		E(pt[i].kind_name);
		pp_out_printf(o, "</td><td class=\"r\">%lld</td><td class=\"r\">", (long long)pt[i].count);
		pdur(o, pt[i].total_ns);
		pp_out_printf(o, "</td><td class=\"r\">%.1f%%</td><td class=\"r\">", 100.0 * (double)pt[i].total_ns / span);
		pdur(o, pt[i].max_ns);
		P("</td></tr>\n");
	}
	P("</table>\n");
	free(pt);
}

/* ---- per-iteration chart ---- */
static int cmp_i64d(const void *a, const void *b);

static void section_steps(pp_view_ctx *c, const pp_run_info *run)
{
	pp_out *o = c->out;
	pp_step_row *s = NULL;
	int n = 0;
	pp_out_printf(o, "<h2 id=\"steps-%lld\">Step time per iteration</h2>\n", (long long)run->id);
	if (pp_store_steps(c->st, run->id, &s, &n) != 0 || n == 0) {
		P("<p class=\"muted\">No steps recorded (the program did not call pp_step_begin / step phases).</p>\n");
		free(s);
		return;
	}
	/* Steady statistics over the steps after the first. */
	int64_t maxs = 0, mins = INT64_MAX;
	int m = n - 1;
	int64_t *d = malloc((size_t)(n > 1 ? n - 1 : 1) * sizeof *d);
	double *tx = malloc((size_t)(n > 1 ? n - 1 : 1) * sizeof *tx);
	double *ty = malloc((size_t)(n > 1 ? n - 1 : 1) * sizeof *ty);
	for (int i = 1; i < n; i++) {
		int64_t v = s[i].dur_ns;
		if (d)
			d[i - 1] = v;
		if (tx && ty) {
			tx[i - 1] = (double)i;
			ty[i - 1] = (double)v;
		}
		if (v > maxs)
			maxs = v;
		if (v < mins)
			mins = v;
	}
	int64_t med = m > 0 && d ? pp_median_i64(d, m) : -1;
	/* 99th percentile of the steady steps: a few preempted steps must not
	 * flatten the growth the chart exists to show */
	int64_t p99 = maxs;
	if (m >= 20 && d) {
		int64_t *sorted = malloc((size_t)m * sizeof *sorted);
		if (sorted) {
			memcpy(sorted, d, (size_t)m * sizeof *sorted);
			pp_sort(sorted, (size_t)m, sizeof *sorted, cmp_i64d); /* descending */
			p99 = sorted[(size_t)((m - 1) * 0.01)];
			free(sorted);
		}
	}
	free(d);
	/* The trend line is the growth rule's own fit (Theil-Sen: the median of
	 * pairwise slopes), so a few preempted steps cannot tilt the page
	 * against the finding. */
	double slope = 0, icpt = 0;
	if (m >= 3 && tx && ty &&
	    diag_theil_sen(tx, ty, m, DIAG_THEIL_SEN_CAP, &slope, &icpt) != 0)
		slope = icpt = 0;
	free(tx);
	free(ty);
	/* What one step is, where the recorder said (the Python layer: an
	 * iteration, an optimizer step of N micro-batches, a batch...). */
	char unit[160];
	if (pp_store_run_meta(c->st, run->id, "python.step_unit", unit, sizeof unit) == 0) {
		P("<p class=\"lead\">One step is: ");
		pp_out_html(o, unit);
		P(".</p>\n");
	}
	P("<div class=\"cards\"><div class=\"card\"><div class=\"k\">steps</div>");
	pp_out_printf(o, "<div class=\"v\">%d</div></div><div class=\"card\"><div class=\"k\">first step</div><div class=\"v\">", n);
	pdur(o, s[0].dur_ns);
	P("</div>");
	if (med > 0)
		pp_out_printf(o, "<div class=\"d\">%.1f× the steady median</div>", (double)s[0].dur_ns / (double)med);
	P("</div>");
	if (med >= 0) {
		P("<div class=\"card\"><div class=\"k\">steady step (median)</div><div class=\"v\">");
		pdur(o, med);
		P("</div></div>");
	}
	if (m >= 3) {
		/* a fitted line can start below zero: floor it at the fastest step */
		double first_fit = fmax(icpt + slope * 1, (double)mins);
		double last_fit = fmax(icpt + slope * (n - 1), (double)mins);
		double growth = first_fit > 0 ? (last_fit - first_fit) / first_fit * 100 : 0;
		pp_out_printf(o, "<div class=\"card%s\"><div class=\"k\">trend over steady steps</div><div class=\"v\">",
			      growth > 20 ? " warn" : "");
		P(slope >= 0 ? "+" : "−");
		pdur(o, (int64_t)fabs(slope));
		pp_out_printf(o, "/iter</div><div class=\"d\">%+.0f%% from step 2 to step %d (Theil–Sen fit)</div></div>", growth, n);
	}
	P("</div>\n");

	/* y range: when the first step dwarfs the rest, scale to the steady
	 * steps and draw the first bar broken, so growth stays visible. */
	int64_t top = maxs;
	int clipped = 0;
	if (p99 > 0 && maxs > 3 * p99) {
		top = p99 + p99 / 2;
		for (int i = 1; i < n; i++)
			clipped += s[i].dur_ns > top;
	}
	int64_t ymax = top;
	int broken = 0;
	if (n == 1 || s[0].dur_ns <= 3 * (top > 0 ? top : 1))
		ymax = s[0].dur_ns > top ? s[0].dur_ns : top;
	else
		broken = 1;
	if (ymax <= 0)
		ymax = 1;
	double yscale = ymax * 1.12;
	const double X0 = 70, W = 910, Y0 = 16, H = 200;
	pp_out_printf(o, "<div class=\"chart\"><svg class=\"steps\" viewBox=\"0 0 1000 %d\">", (int)(Y0 + H + 40));
	for (int k = 0; k <= 4; k++) {
		double v = yscale * k / 4, y = Y0 + H - H * k / 4;
		pp_out_printf(o, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e9ef\"/>"
			      "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\" fill=\"#5f6b7d\" text-anchor=\"end\">",
			      X0, X0 + W, y, y, X0 - 6, y + 3);
		pdur(o, (int64_t)v);
		P("</text>");
	}
	double bw = W / n;
	if (n <= 600) {
		for (int i = 0; i < n; i++) {
			double v = (double)s[i].dur_ns, hh = H * (v > yscale ? yscale : v) / yscale;
			double x = X0 + i * bw;
			pp_out_printf(o, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>step %lld: ",
				      x + (bw > 3 ? bw * 0.1 : 0), Y0 + H - hh, bw > 3 ? bw * 0.8 : (bw > 0.6 ? bw : 0.6),
				      hh < 0.5 ? 0.5 : hh, i == 0 ? "#e0803c" : "#5b8def", (long long)s[i].step);
			pdur(o, s[i].dur_ns);
			P(i == 0 ? " (first step)</title></rect>" : "</title></rect>");
		}
	} else {
		/* Many steps: per-pixel buckets, min–max band and mean line. */
		int nb = 900;
		P("<path fill=\"#bcd0f7\" d=\"");
		double *mean = calloc((size_t)nb, sizeof *mean);
		int64_t *bmin = malloc((size_t)nb * sizeof *bmin), *bmax = malloc((size_t)nb * sizeof *bmax);
		int *cnt = calloc((size_t)nb, sizeof *cnt);
		if (mean && bmin && bmax && cnt) {
			for (int b = 0; b < nb; b++) {
				bmin[b] = INT64_MAX;
				bmax[b] = 0;
			}
			for (int i = 1; i < n; i++) {
				int b = (int)((int64_t)i * nb / n);
				if (s[i].dur_ns < bmin[b])
					bmin[b] = s[i].dur_ns;
				if (s[i].dur_ns > bmax[b])
					bmax[b] = s[i].dur_ns;
				mean[b] += (double)s[i].dur_ns;
				cnt[b]++;
			}
			int started = 0;
			for (int b = 0; b < nb; b++)
				if (cnt[b]) {
					pp_out_printf(o, "%c%.1f %.1f", started ? 'L' : 'M', X0 + W * b / nb,
						      Y0 + H - H * fmin((double)bmax[b], yscale) / yscale);
					started = 1;
				}
			for (int b = nb - 1; b >= 0; b--)
				if (cnt[b])
					pp_out_printf(o, "L%.1f %.1f", X0 + W * b / nb, Y0 + H - H * fmin((double)bmin[b], yscale) / yscale);
			P("Z\"/><polyline fill=\"none\" stroke=\"#2f5fb3\" stroke-width=\"1.2\" points=\"");
			for (int b = 0; b < nb; b++)
				if (cnt[b])
					pp_out_printf(o, "%.1f,%.1f ", X0 + W * b / nb,
						      Y0 + H - H * fmin(mean[b] / cnt[b], yscale) / yscale);
			P("\"/>");
		} else {
			P("\"/>");
		}
		free(mean);
		free(bmin);
		free(bmax);
		free(cnt);
		double hh = H * fmin((double)s[0].dur_ns, yscale) / yscale;
		pp_out_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"3\" height=\"%.1f\" fill=\"#e0803c\"><title>first step: ",
			      X0, Y0 + H - hh, hh);
		pdur(o, s[0].dur_ns);
		P("</title></rect>");
	}
	if (broken) {
		pp_out_printf(o, "<path d=\"M%.1f %.1f l%.1f 4 M%.1f %.1f l%.1f 4\" stroke=\"#fff\" stroke-width=\"2\"/>",
			      X0 - 1, Y0 + 10, bw > 3 ? bw : 4, X0 - 1, Y0 + 15, bw > 3 ? bw : 4);
		pp_out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#b85c1c\">first step ", X0 + (bw > 3 ? bw : 4) + 4,
			      Y0 + 10);
		pdur(o, s[0].dur_ns);
		P(" (bar cut: off scale)</text>");
	}
	if (clipped) {
		pp_out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#5f6b7d\" text-anchor=\"end\">"
			      "%d step%s above the scale (longest ", X0 + W, Y0 + 10, clipped, clipped == 1 ? "" : "s");
		pdur(o, maxs);
		P("; scale set by the 99th percentile)</text>");
	}
	if (med > 0) {
		double y = Y0 + H - H * (double)med / yscale;
		pp_out_printf(o, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#1e8e5a\" stroke-dasharray=\"4 3\"/>",
			      X0, X0 + W, y, y);
	}
	if (m >= 3) {
		double ya = icpt + slope * 1, yb = icpt + slope * (n - 1);
		pp_out_printf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" stroke-width=\"1.5\"/>",
			      X0 + bw * 1.5, X0 + bw * (n - 0.5), Y0 + H - H * fmin(fmax(ya, 0), yscale) / yscale,
			      Y0 + H - H * fmin(fmax(yb, 0), yscale) / yscale);
	}
	/* x labels */
	for (int k = 0; k <= 5 && n > 1; k++) {
		int i = (int)((int64_t)(n - 1) * k / 5);
		pp_out_printf(o, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"10\" fill=\"#5f6b7d\" text-anchor=\"middle\">%lld</text>",
			      X0 + bw * (i + 0.5), Y0 + H + 14, (long long)s[i].step);
	}
	pp_out_printf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" fill=\"#5f6b7d\" text-anchor=\"middle\">iteration</text>",
		      X0 + W / 2, Y0 + H + 32);
	P("</svg><div class=\"legend\"><span><i style=\"background:#e0803c\"></i>first step</span>"
	  "<span><i style=\"background:#5b8def\"></i>later steps</span><span><i style=\"background:#1e8e5a\"></i>steady median</span>"
	  "<span><i style=\"background:#c0392b\"></i>trend (Theil–Sen)</span></div></div>\n");
	free(s);
}

/* ---- timeline data (level of detail) ---- */
typedef struct tl_ent {
	int64_t start, dur;
	int32_t name;             /* < 0: -count of merged items */
	uint16_t depth;
	uint8_t c;                /* cat << 5 | kind; 255 merged */
} tl_ent;

static int cmp_tl(const void *a, const void *b)
{
	const tl_ent *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->depth - y->depth;
}

static int cmp_i64d(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x < y) - (x > y);   /* descending */
}

/* The (k+1)-th largest of v[0..n) (0 <= k < n), v reordered: a selection,
 * not a sort of 10^7 durations. */
static int64_t nth_longest(int64_t *v, int64_t n, int64_t k)
{
	int64_t lo = 0, hi = n - 1;
	while (lo < hi) {
		int64_t pivot = v[lo + (hi - lo) / 2], i = lo, j = hi;
		while (i <= j) {
			while (v[i] > pivot)
				i++;
			while (v[j] < pivot)
				j--;
			if (i <= j) {
				int64_t t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

typedef struct mark_ctx {
	pp_out *o;
	int n;
} mark_ctx;

static int mark_row(const pp_mark_row *r, void *ud)
{
	mark_ctx *k = ud;
	if (k->n++)
		pp_out_putc(k->o, ',');
	pp_out_i64(k->o, r->ts_ns);
	pp_out_putc(k->o, ',');
	pp_out_json_str(k->o, r->name);
	return 0;
}

static void section_timeline(pp_view_ctx *c, const pp_run_info *run, const pp_model *m)
{
	pp_out *o = c->out;
	pp_out_printf(o, "<h2 id=\"timeline-%lld\">Timeline</h2>\n", (long long)run->id);
	if (m->n_items == 0) {
		P("<p class=\"muted\">Nothing to draw: no spans, ops or GPU activity in this run.</p>\n");
		return;
	}
	int64_t budget = c->opts->timeline_budget > 0 ? c->opts->timeline_budget : PP_TIMELINE_DEFAULT_BUDGET;
	/* Threshold: the budget-th longest duration. Shorter items are merged. */
	int64_t thr = 0, gap = 0;
	if (m->n_items > budget) {
		int64_t *durs = calloc((size_t)m->n_items, sizeof *durs);
		if (durs) {
			int64_t k = 0;
			for (int t = 0; t < m->n_tracks; t++)
				for (int i = 0; i < m->tracks[t].n; i++)
					durs[k++] = m->tracks[t].items[i].end - m->tracks[t].items[i].start;
			thr = nth_longest(durs, k, budget - 1) + 1;
			free(durs);
		}
		/* Short items merge across gaps shorter than this: each row of a
		 * track then holds at most t_end / gap blocks, so all rows together
		 * at most budget / 2, however many tiny items a run has (10^7 spans
		 * of ~20 ns made 2.5 million blocks, a 36 MB page, with gaps of
		 * thr alone). */
		int64_t rows = 0;
		for (int t = 0; t < m->n_tracks; t++)
			rows += m->tracks[t].depth > 0 ? m->tracks[t].depth : 1;
		gap = (int64_t)((double)m->t_end * (double)rows / ((double)budget / 2));
		if (gap < thr)
			gap = thr;
	}
	int64_t merged_items = 0, merged_blocks = 0;
	pp_out_printf(o, "<p class=\"lead\">%s spans, ops%s per thread. Wheel to zoom, drag to pan, double-click to reset.",
		      m->has_gpu ? "Phases," : "Phases and", m->has_gpu ? ", CUDA calls and GPU streams" : "");
	if (m->open_spans)
		pp_out_printf(o, " %d span%s still open at the end of the run are drawn to its end.", m->open_spans,
			      m->open_spans == 1 ? " was" : "s were");
	P("</p>\n");
	pp_out_printf(o, "<div class=\"timeline\" data-src=\"tl-%lld\"><div class=\"tb\"><button data-z=\"in\">+</button>"
		      "<button data-z=\"out\">−</button><button data-z=\"reset\">reset</button><span class=\"range\"></span></div>"
		      "<svg class=\"tl\" height=\"60\"></svg></div>\n",
		      (long long)run->id);
	pp_out_printf(o, "<script type=\"application/json\" id=\"tl-%lld\">{\"t_end\":", (long long)run->id);
	pp_out_i64(o, m->t_end);
	P(",\"kinds\":[");
	for (int k = 0; k < PP_KIND_COUNT; k++) {
		if (k)
			P(",");
		pp_out_json_str(o, pp_kind_name((pp_kind)k));
	}
	P("],\"names\":[");
	for (int i = 0; i < m->names.n; i++) {
		if (i)
			pp_out_putc(o, ',');
		pp_out_json_str(o, m->names.s[i]);
	}
	P("],\"marks\":[");
	mark_ctx mk = {o, 0};
	pp_store_each_mark(c->st, run->id, 2000, mark_row, &mk);
	P("],\"tracks\":[");
	tl_ent *ents = NULL;
	int ecap = 0;
	for (int t = 0; t < m->n_tracks; t++) {
		const pp_track *tr = &m->tracks[t];
		int ne = 0;
		if (ecap < tr->n) {
			tl_ent *nv = realloc(ents, (size_t)tr->n * sizeof *nv);
			if (!nv)
				break;
			ents = nv;
			ecap = tr->n;
		}
		/* pending merged block per depth */
		int pd_cap = tr->depth > 0 ? tr->depth : 1;
		tl_ent *pend = calloc((size_t)pd_cap, sizeof *pend);
		char *has = calloc((size_t)pd_cap, 1);
		if (!pend || !has) {
			free(pend);
			free(has);
			break;
		}
		for (int i = 0; i < tr->n; i++) {
			const pp_item *it = &tr->items[i];
			int64_t dur = it->end - it->start;
			uint8_t cc = (uint8_t)((it->cat << 5) | (it->kind & 31));
			int d = it->depth < pd_cap ? it->depth : pd_cap - 1;
			tl_ent *p = &pend[d];
			if (dur >= thr) {
				/* a block of its row ends here: it must not reach over the item */
				if (has[d]) {
					ents[ne++] = *p;
					merged_blocks += p->name < 0;
					has[d] = 0;
				}
				ents[ne++] = (tl_ent){it->start, dur, it->name, it->depth, cc};
				continue;
			}
			if (has[d] && it->start - (p->start + p->dur) < gap) {
				int64_t end = it->end > p->start + p->dur ? it->end : p->start + p->dur;
				p->dur = end - p->start;
				p->name = p->name < 0 ? p->name - 1 : -2;
				p->c = 255;
				merged_items++;
				continue;
			}
			if (has[d]) {
				ents[ne++] = *p;
				merged_blocks += p->name < 0;
			}
			*p = (tl_ent){it->start, dur, it->name, (uint16_t)d, cc};
			has[d] = 1;
		}
		for (int d = 0; d < pd_cap; d++)
			if (has[d]) {
				ents[ne++] = pend[d];
				merged_blocks += pend[d].name < 0;
			}
		free(pend);
		free(has);
		pp_sort(ents, (size_t)ne, sizeof *ents, cmp_tl);
		if (t)
			pp_out_putc(o, ',');
		P("{\"n\":");
		pp_out_json_str(o, tr->name);
		pp_out_printf(o, ",\"g\":%d,\"rows\":%d,\"d\":[", tr->gpu, tr->depth > 0 ? tr->depth : 1);
		int64_t prev = 0;
		for (int i = 0; i < ne; i++) {
			const tl_ent *e = &ents[i];
			if (i)
				pp_out_putc(o, ',');
			pp_out_i64(o, e->start - prev);
			pp_out_putc(o, ',');
			pp_out_i64(o, e->dur);
			pp_out_putc(o, ',');
			pp_out_i64(o, e->name);
			pp_out_putc(o, ',');
			pp_out_i64(o, e->depth);
			pp_out_putc(o, ',');
			pp_out_i64(o, e->c);
			prev = e->start;
		}
		P("]}");
	}
	free(ents);
	P("]}</script>\n");
	if (thr > 0 || m->dropped || m->left_out) {
		P("<div class=\"note\">");
		if (thr > 0) {
			pp_out_printf(o, "Level of detail: %lld items recorded; items shorter than ", (long long)m->n_items);
			pdur(o, thr);
			if (gap > thr) {
				P(" less than ");
				pdur(o, gap);
				P(" apart");
			}
			pp_out_printf(o, " are merged into %lld grey blocks (%lld items). Every item is in "
				      "<code>phaseprof export --format chrome</code>.", (long long)merged_blocks,
				      (long long)(merged_items + merged_blocks));
		}
		if (m->dropped)
			pp_out_printf(o, " %lld items overlapped too many others on one thread to be placed and are not drawn.",
				      (long long)m->dropped);
		if (m->left_out)
			pp_out_printf(o, " %lld leaf spans past the first %d of their name on a thread are not drawn, "
				      "as a default recording groups them; every one is in <code>phaseprof export "
				      "--format chrome</code> or <code>--format perfetto</code>.",
				      (long long)m->left_out, PP_SPANS_KEPT_PER_NAME);
		P("</div>\n");
	}
}

/* ---- ops ---- */
static void section_ops(pp_view_ctx *c, const pp_run_info *run, const pp_op_stat *ops, int n)
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
		pdur(o, s->total_ns);
		P("</td><td class=\"r\">");
		pdur(o, s->max_ns);
		P("</td><td class=\"r\">");
		if (s->first_step >= 0)
			pdur(o, s->first_ns);
		else
			P("—");
		P("</td><td class=\"r\">");
		double per = s->steady_steps > 0 ? (double)s->steady_ns / (double)s->steady_steps : -1;
		if (per >= 0)
			pdur(o, (int64_t)per);
		else
			P("—");
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

/* ---- memory ---- */
static int name_is_bytes(const char *n)
{
	return strstr(n, "bytes") || strstr(n, "in_use") || strstr(n, "mem") || strstr(n, "peak");
}

/* Drops non-finite values (NaN in SVG path data is an error in browsers). */
static int finite_only(pp_counter_row *r, int n)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(r[i].value))
			r[k++] = r[i];
	return k;
}

static void series_chart(pp_out *o, const char *title, const pp_counter_row *r, int n, int64_t t_end, int bytes)
{
	if (n <= 0)
		return;
	double lo = r[0].value, hi = r[0].value;
	for (int i = 1; i < n; i++) {
		lo = fmin(lo, r[i].value);
		hi = fmax(hi, r[i].value);
	}
	if (lo > 0)
		lo = 0;
	if (hi <= lo)
		hi = lo + 1;
	const double X0 = 62, W = 420, Y0 = 26, H = 110;
	/* x spans the series itself (counters often cover only the steps) */
	(void)t_end;
	int64_t t0 = r[0].ts_ns, span = r[n - 1].ts_ns - t0;
	if (span <= 0)
		span = 1;
	P("<div class=\"chart\"><svg class=\"counter\" viewBox=\"0 0 500 160\">");
	P("<text x=\"8\" y=\"16\" font-size=\"12\" font-weight=\"600\" fill=\"#1d2330\">");
	E(title);
	P("</text><text x=\"492\" y=\"16\" font-size=\"11\" text-anchor=\"end\" fill=\"#5f6b7d\">last ");
	bytes ? pbytes(o, r[n - 1].value) : pnum(o, r[n - 1].value);
	P(" · max ");
	bytes ? pbytes(o, hi) : pnum(o, hi);
	P("</text>");
	for (int k = 0; k <= 2; k++) {
		double v = lo + (hi - lo) * k / 2, y = Y0 + H - H * k / 2;
		pp_out_printf(o, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e9ef\"/>"
			      "<text x=\"%.0f\" y=\"%.1f\" font-size=\"9\" fill=\"#5f6b7d\" text-anchor=\"end\">",
			      X0, X0 + W, y, y, X0 - 4, y + 3);
		bytes ? pbytes(o, v) : pnum(o, v);
		P("</text>");
	}
	/* step line; above ~2 points per pixel keep min and max per pixel */
	P("<path fill=\"none\" stroke=\"#2f6fdf\" stroke-width=\"1.3\" d=\"");
	double px_prev = -1, ylo = 0, yhi = 0, ylast = 0;
	int open = 0;
	for (int i = 0; i < n; i++) {
		double x = X0 + W * (double)(r[i].ts_ns - t0) / (double)span;
		double y = Y0 + H - H * (r[i].value - lo) / (hi - lo);
		if (i == 0) {
			pp_out_printf(o, "M%.1f %.1f", x, y);
			px_prev = floor(x);
			ylo = yhi = ylast = y;
			continue;
		}
		if (floor(x) == px_prev) {
			ylo = fmin(ylo, y);
			yhi = fmax(yhi, y);
			ylast = y;
			open = 1;
			continue;
		}
		if (open)
			pp_out_printf(o, "V%.1fV%.1fV%.1f", ylo, yhi, ylast);
		pp_out_printf(o, "H%.1fV%.1f", x, y);
		px_prev = floor(x);
		ylo = yhi = ylast = y;
		open = 0;
	}
	if (open)
		pp_out_printf(o, "V%.1fV%.1fV%.1f", ylo, yhi, ylast);
	pp_out_printf(o, "H%.1f\"/>", X0 + W);
	P("<text x=\"62\" y=\"152\" font-size=\"9\" fill=\"#5f6b7d\">");
	pdur(o, t0);
	pp_out_printf(o, " · %d samples</text><text x=\"482\" y=\"152\" font-size=\"9\" fill=\"#5f6b7d\" text-anchor=\"end\">", n);
	pdur(o, r[n - 1].ts_ns);
	P("</text></svg></div>\n");
}

typedef struct alloc_ctx {
	pp_out *o;
	int rows;
} alloc_ctx;

static int alloc_row(const pp_alloc_source *r, void *ud)
{
	alloc_ctx *a = ud;
	pp_out *o = a->o;
	if (a->rows++ == 0)
		P("<table class=\"t\"><tr><th>source</th><th>kind</th><th class=\"r\">count</th><th class=\"r\">bytes</th>"
		  "<th class=\"r\">time</th><th class=\"r\">in use (last)</th><th class=\"r\">peak</th></tr>\n");
	P("<tr><td>");
	E(r->source);
	P("</td><td>");
	E(r->kind);
	pp_out_printf(o, "</td><td class=\"r\">%lld</td><td class=\"r\">", (long long)r->count);
	pbytes(o, r->bytes);
	P("</td><td class=\"r\">");
	pdur(o, r->time_ns);
	P("</td><td class=\"r\">");
	if (r->has_in_use)
		pbytes(o, r->in_use);
	P("</td><td class=\"r\">");
	if (r->has_peak)
		pbytes(o, r->peak);
	P("</td></tr>\n");
	return 0;
}

static void section_memory(pp_view_ctx *c, const pp_run_info *run, int64_t t_end)
{
	pp_out *o = c->out;
	char **names = pp_store_counter_names(c->st, run->id);
	alloc_ctx ac = {o, 0};
	struct { pp_counter_row *v; int n; } inuse = {NULL, 0};
	pp_store_alloc_in_use(c->st, run->id, &inuse.v, &inuse.n);
	int n_names = 0;
	while (names && names[n_names])
		n_names++;
	pp_out_printf(o, "<h2 id=\"memory-%lld\">Memory and counters</h2>\n", (long long)run->id);
	if (n_names == 0 && inuse.n == 0) {
		/* the table below may still have summaries */
	}
	/* Memory-like counters first (bytes in use, fragmentation…), then the rest. */
	int shown = 0;
	if (inuse.n > 0 || n_names > 0)
		P("<div class=\"grid2\">");
	inuse.n = finite_only(inuse.v, inuse.n);
	if (inuse.n > 0) {
		series_chart(o, "bytes in use (allocator)", inuse.v, inuse.n, t_end, 1);
		shown++;
	}
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n_names && shown < 12; i++) {
			int memlike = name_is_bytes(names[i]) || strstr(names[i], "frag") || strstr(names[i], "alloc");
			if (memlike != (pass == 0))
				continue;
			pp_counter_row *r = NULL;
			int n = 0;
			if (pp_store_counter(c->st, run->id, names[i], &r, &n) == 0 && (n = finite_only(r, n)) > 0) {
				series_chart(o, names[i], r, n, t_end, name_is_bytes(names[i]) && !strstr(names[i], "frag"));
				shown++;
			}
			free(r);
		}
	if (inuse.n > 0 || n_names > 0)
		P("</div>\n");
	if (n_names > shown)
		pp_out_printf(o, "<p class=\"muted\">%d more counters not drawn (see the Chrome export).</p>\n", n_names - shown);
	free(inuse.v);
	pp_store_free_names(names);
	pp_store_each_alloc_source(c->st, run->id, alloc_row, &ac);
	if (ac.rows)
		P("</table>\n");
	if (!ac.rows && !shown)
		P("<p class=\"muted\">No allocation records or counters in this run.</p>\n");
}

/* ---- graph ---- */
typedef pp_graph_info gsnap;

typedef struct gsnaps {
	gsnap *v;
	int n;
} gsnaps;

/* Inline SVG in HTML: drop the XML prolog/doctype and the namespace URLs
 * (the HTML parser puts <svg> in the SVG namespace by itself), so the page
 * carries no http:// reference at all. */
static void inline_svg(pp_out *o, const char *svg)
{
	const char *p = strstr(svg, "<svg");
	if (!p)
		return;
	static const char *const drop[] = {" xmlns=\"http://www.w3.org/2000/svg\"",
					   " xmlns:xlink=\"http://www.w3.org/1999/xlink\"", NULL};
	while (*p) {
		const char *next = NULL;
		int which = -1;
		for (int k = 0; drop[k]; k++) {
			const char *q = strstr(p, drop[k]);
			if (q && (!next || q < next)) {
				next = q;
				which = k;
			}
		}
		if (!next) {
			P(p);
			break;
		}
		pp_out_write(o, p, (size_t)(next - p));
		p = next + strlen(drop[which]);
	}
}

static void render_snapshot(pp_view_ctx *c, const gsnap *g, const char *heading, const pp_op_stat *ops, int n_ops)
{
	pp_out *o = c->out;
	pp_out *mem = pp_out_memory();
	pp_graph_render_info info;
	char err[256];
	P("<div class=\"graphbox\"><div class=\"gt\">");
	E(heading);
	pp_out_printf(o, " <span class=\"muted\">v%lld", (long long)g->version);
	if (g->label[0]) {
		P(" · ");
		E(g->label);
	}
	pp_out_printf(o, " · %lld nodes, %lld edges</span></div>", (long long)g->n_nodes, (long long)g->n_edges);
	if (mem && pp_graph_render_ops(c->st, g->id, "svg", c->opts->max_graph_nodes, mem, &info, err, sizeof err,
					    ops, n_ops) == 0) {
		if (info.note[0]) {
			P("<div class=\"note\">");
			E(info.note);
			P(".</div>");
		}
		inline_svg(o, pp_out_data(mem, NULL));
	} else {
		P("<div class=\"note\">");
		E(mem ? err : "out of memory");
		P("</div>");
	}
	pp_out_close(mem, NULL, 0);
	P("</div>\n");
}

static void section_graph(pp_view_ctx *c, const pp_run_info *run, const pp_op_stat *ops, int n_ops)
{
	pp_out *o = c->out;
	gsnaps g = {0};
	if (pp_store_graphs(c->st, run->id, 0, &g.v, &g.n) != 0)
		g.n = 0;
	if (g.n == 0) {
		free(g.v);
		return;
	}
	pp_out_printf(o, "<h2 id=\"graph-%lld\">Graph</h2>\n", (long long)run->id);
	const gsnap *first = &g.v[0], *last = &g.v[g.n - 1];
	if (g.n > 1 && last->n_nodes != first->n_nodes) {
		pp_out_printf(o, "<p class=\"lead\">The graph %s between snapshots: %lld nodes in v%lld → %lld nodes in v%lld "
			      "(%+lld over %d snapshots). Node colour: measured time (pale = cheap, red = expensive).</p>\n",
			      last->n_nodes > first->n_nodes ? "grew" : "shrank", (long long)first->n_nodes,
			      (long long)first->version, (long long)last->n_nodes, (long long)last->version,
			      (long long)(last->n_nodes - first->n_nodes), g.n);
		if (g.n > 2) {
			/* node count per snapshot */
			int64_t mx = 1;
			for (int i = 0; i < g.n; i++)
				if (g.v[i].n_nodes > mx)
					mx = g.v[i].n_nodes;
			P("<div class=\"chart\" style=\"max-width:700px\"><div class=\"cap\">nodes per snapshot</div>"
			  "<svg class=\"gcount\" viewBox=\"0 0 700 110\"><polyline fill=\"none\" stroke=\"#8e6fd8\" stroke-width=\"2\" points=\"");
			for (int i = 0; i < g.n; i++)
				pp_out_printf(o, "%.1f,%.1f ", 40 + 650.0 * i / (g.n - 1), 96 - 84.0 * (double)g.v[i].n_nodes / (double)mx);
			pp_out_printf(o, "\"/><text x=\"36\" y=\"16\" font-size=\"10\" text-anchor=\"end\" fill=\"#5f6b7d\">%lld</text>"
				      "<text x=\"36\" y=\"98\" font-size=\"10\" text-anchor=\"end\" fill=\"#5f6b7d\">0</text></svg></div>\n",
				      (long long)mx);
		}
		P("<div class=\"graphs\">");
		render_snapshot(c, first, "first snapshot", ops, n_ops);
		render_snapshot(c, last, "last snapshot", ops, n_ops);
		P("</div>\n");
	} else {
		P("<p class=\"lead\">Node colour: measured time (pale = cheap, red = expensive).</p>\n<div class=\"graphs\">");
		render_snapshot(c, last, g.n > 1 ? "last snapshot (unchanged size)" : "snapshot", ops, n_ops);
		P("</div>\n");
	}
	free(g.v);
}

/* ---- CPU flame graph ---- */
typedef struct fnode {
	int name;                 /* strtab index of the frame */
	int64_t count;
	int first_child, next;    /* -1 terminated */
} fnode;

typedef struct ftree {
	fnode *v;
	int n, cap;
	pp_strtab names;
} ftree;

static int fchild(ftree *t, int parent, int name)
{
	for (int k = t->v[parent].first_child; k >= 0; k = t->v[k].next)
		if (t->v[k].name == name)
			return k;
	if (PP_GROW(t->v, t->n + 1, t->cap) != 0)
		return -1;
	int k = t->n++;
	t->v[k] = (fnode){name, 0, -1, t->v[parent].first_child};
	t->v[parent].first_child = k;
	return k;
}

static int flame_depth(const ftree *t, int k)
{
	int d = 0;
	for (int c = t->v[k].first_child; c >= 0; c = t->v[c].next) {
		int cd = flame_depth(t, c);
		if (cd > d)
			d = cd;
	}
	return d + 1;
}

typedef struct fkid { const char *name; int node; } fkid;

static int cmp_fkid(const void *a, const void *b)
{
	return strcmp(((const fkid *)a)->name, ((const fkid *)b)->name);
}

static void flame_draw(pp_out *o, const ftree *t, int k, double x, double w, int depth, int maxd, double total)
{
	if (w < 0.4 || depth >= maxd)   /* too thin, or below the drawn depth */
		return;
	const double RH = 17;
	double y = (maxd - depth - 1) * RH;
	const char *name = k == 0 ? "all" : t->names.s[t->v[k].name];
	uint32_t h = pp_hash_str(name);
	int r = 205 + (int)(h % 50), g = 90 + (int)((h >> 8) % 120), b = 40 + (int)((h >> 16) % 40);
	P("<g><title>");
	E(name);
	pp_out_printf(o, ": %lld samples (%.1f%%)</title>", (long long)t->v[k].count, 100.0 * (double)t->v[k].count / total);
	pp_out_printf(o, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" rx=\"2\" fill=\"#%02x%02x%02x\"/>", x, y,
		      w > 0.8 ? w - 0.4 : w, RH - 1, r, g, b);
	if (w > 36) {
		int chars = (int)((w - 6) / 6.5);
		char lab[200];
		if ((int)strlen(name) > chars)
			snprintf(lab, sizeof lab, "%.*s…", chars > 1 ? chars - 1 : 0, name);
		else
			snprintf(lab, sizeof lab, "%s", name);
		pp_out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#2b1d0e\">", x + 3, y + 12);
		E(lab);
		P("</text>");
	}
	P("</g>");
	/* children in name order (flamegraph.pl's alphabetical x axis) */
	int nk = 0;
	for (int c = t->v[k].first_child; c >= 0; c = t->v[c].next)
		nk++;
	if (!nk)
		return;
	fkid *kids = malloc((size_t)nk * sizeof *kids);   /* heap: deep stacks recurse */
	if (!kids)
		return;
	nk = 0;
	for (int c = t->v[k].first_child; c >= 0; c = t->v[c].next)
		kids[nk++] = (fkid){t->names.s[t->v[c].name], c};
	pp_sort(kids, (size_t)nk, sizeof *kids, cmp_fkid);
	double cx = x;
	for (int i = 0; i < nk; i++) {
		double cw = w * (double)t->v[kids[i].node].count / (double)t->v[k].count;
		flame_draw(o, t, kids[i].node, cx, cw, depth + 1, maxd, total);
		cx += cw;
	}
	free(kids);
}

static void section_flame(pp_view_ctx *c, const pp_run_info *run)
{
	pp_out *o = c->out;
	pp_strtab paths = {0};
	int64_t *counts = NULL;
	if (pp_folded_samples(c->st, run->id, NULL, &paths, &counts) != 0 || paths.n == 0) {
		pp_strtab_free(&paths);
		free(counts);
		return;
	}
	ftree t = {0};
	t.cap = 256;
	t.v = malloc((size_t)t.cap * sizeof *t.v);
	if (!t.v) {
		pp_strtab_free(&paths);
		free(counts);
		return;
	}
	t.v[0] = (fnode){-1, 0, -1, -1};
	t.n = 1;
	int64_t total = 0;
	for (int i = 0; i < paths.n; i++) {
		int node = 0;
		t.v[0].count += counts[i];
		total += counts[i];
		char *p = paths.s[i];
		while (p && node >= 0) {
			char *semi = strchr(p, ';');
			if (semi)
				*semi = 0;
			node = fchild(&t, node, pp_strtab_add(&t.names, p));
			if (node >= 0)
				t.v[node].count += counts[i];
			if (semi)
				*semi = ';';
			p = semi ? semi + 1 : NULL;
		}
	}
	int maxd = flame_depth(&t, 0);
	if (maxd > 60)
		maxd = 60;
	pp_out_printf(o, "<h2 id=\"flame-%lld\">CPU flame graph</h2>\n<p class=\"lead\">%lld CPU samples; width = share of "
		      "samples, frames ordered by name (x is not time). Hover for counts.</p>\n",
		      (long long)run->id, (long long)total);
	pp_out_printf(o, "<div class=\"chart\"><svg class=\"flame\" viewBox=\"0 0 1000 %d\">", maxd * 17 + 2);
	flame_draw(o, &t, 0, 0, 1000, 0, maxd, (double)(total ? total : 1));
	P("</svg></div>\n");
	free(t.v);
	pp_strtab_free(&t.names);
	pp_strtab_free(&paths);
	free(counts);
}

/* ---- libraries, I/O, metadata ---- */
typedef struct tab_ctx {
	pp_out *o;
	int rows;
	int64_t total;
} tab_ctx;

static int lib_row(const pp_library_row *r, void *ud)
{
	tab_ctx *a = ud;
	pp_out *o = a->o;
	if (a->rows++ == 0)
		P("<table class=\"t\"><tr><th>library</th><th class=\"r\">opened at</th><th class=\"r\">load time</th>"
		  "<th class=\"r\">relocation</th><th class=\"r\">constructors</th><th class=\"r\">size</th><th class=\"r\">depth</th><th>via</th></tr>\n");
	P("<tr><td class=\"m\">");
	E(r->path);
	P("</td><td class=\"r\">");
	pdur(o, r->open_ns);
	P("</td><td class=\"r\">");
	pdur(o, r->end_ns - r->open_ns);
	P("</td><td class=\"r\">");
	pdur(o, r->reloc_ns);
	P("</td><td class=\"r\">");
	pdur(o, r->ctor_ns);
	P("</td><td class=\"r\">");
	pbytes(o, (double)r->size);
	pp_out_printf(o, "</td><td class=\"r\">%lld</td><td>", (long long)r->depth);
	E(r->via);
	P("</td></tr>\n");
	return 0;
}

static int io_row(const pp_io_row *r, void *ud)
{
	tab_ctx *a = ud;
	pp_out *o = a->o;
	if (a->rows++ == 0)
		P("<table class=\"t\"><tr><th>path</th><th>op</th><th class=\"r\">calls</th><th class=\"r\">bytes</th>"
		  "<th class=\"r\">time</th><th class=\"r\">small calls</th><th class=\"r\">bytes / call</th></tr>\n");
	P("<tr><td class=\"m\">");
	E(r->path);
	P("</td><td>");
	E(r->op);
	int64_t calls = r->calls;
	double bytes = r->bytes;
	pp_out_printf(o, "</td><td class=\"r\">%lld</td><td class=\"r\">", (long long)calls);
	pbytes(o, bytes);
	P("</td><td class=\"r\">");
	pdur(o, r->time_ns);
	pp_out_printf(o, "</td><td class=\"r\">%lld</td><td class=\"r\">", (long long)r->small_calls);
	if (calls > 0)
		pbytes(o, bytes / (double)calls);
	P("</td></tr>\n");
	return 0;
}


static void section_libs_io(pp_view_ctx *c, const pp_run_info *run)
{
	pp_out *o = c->out;
	int64_t n_all = 0, n_top = 0, top_ns = 0;
	if (pp_store_library_totals(c->st, run->id, &n_all, &n_top, &top_ns) == 0 && n_all > 0) {
		pp_out_printf(o, "<h2 id=\"libs-%lld\">Libraries loaded</h2>\n<p class=\"lead\">%d shared objects; "
			      "top-level loads took ", (long long)run->id, (int)n_all);
		pdur(o, top_ns);
		P(" in total. The 40 slowest:</p>\n");
		tab_ctx t = {o, 0, 0};
		pp_store_each_library(c->st, run->id, 40, lib_row, &t);
		if (t.rows)
			P("</table>\n");
	}
	int64_t io_rows = 0, io_ns = 0;
	if (pp_store_io_totals(c->st, run->id, &io_rows, &io_ns) == 0 && io_rows > 0) {
		pp_out_printf(o, "<h2 id=\"io-%lld\">File I/O</h2>\n<p class=\"lead\">", (long long)run->id);
		pdur(o, io_ns);
		P(" in file I/O. The 40 costliest paths:</p>\n");
		tab_ctx t = {o, 0, 0};
		pp_store_each_io(c->st, run->id, 40, io_row, &t);
		if (t.rows)
			P("</table>\n");
	}
}

static int kv_row(const pp_kv_row *r, void *ud)
{
	pp_out *o = ud;
	static const char *const shown[] = {"command", "host", "label", "scenario", "variant", NULL};
	for (int i = 0; r->key && shown[i]; i++)
		if (strcmp(r->key, shown[i]) == 0)
			return 0; /* already in the run's header */
	P("<dt>");
	E(r->key);
	P("</dt><dd>");
	E(r->value);
	P("</dd>");
	return 0;
}

static int loss_row(const pp_loss_row *r, void *ud)
{
	tab_ctx *a = ud;
	pp_out *o = a->o;
	if (a->rows++ == 0)
		P("<table class=\"t\"><tr><th>lost from</th><th class=\"r\">count</th><th>detail</th></tr>\n");
	P("<tr><td>");
	E(r->source);
	pp_out_printf(o, "</td><td class=\"r\">%lld</td><td>", (long long)r->count);
	E(r->detail);
	P("</td></tr>\n");
	return 0;
}

static int gpu_status_row(const pp_gpu_status *r, void *ud)
{
	tab_ctx *a = ud;
	pp_out *o = a->o;
	a->rows++;
	int avail = r->available;
	pp_out_printf(o, "<dt>GPU tracing</dt><dd>%s", avail ? "available" : "unavailable");
	const char *why = r->reason;
	if (why && *why) {
		P(avail ? " — " : ": ");
		E(why);
	}
	if (r->records_dropped)
		pp_out_printf(o, " (%lld records dropped)", (long long)r->records_dropped);
	P("</dd>");
	return 0;
}

static void kv(pp_out *o, const char *k, const char *v)
{
	if (!v || !*v)
		return;
	P("<dt>");
	E(k);
	P("</dt><dd>");
	E(v);
	P("</dd>");
}

static void section_meta(pp_view_ctx *c, const pp_run_info *run)
{
	pp_out *o = c->out;
	char b[64];
	pp_out_printf(o, "<h2 id=\"meta-%lld\">Run metadata</h2>\n<dl class=\"kv\">", (long long)run->id);
	snprintf(b, sizeof b, "%lld", (long long)run->id);
	kv(o, "run", b);
	kv(o, "label", run->label);
	kv(o, "scenario", run->scenario);
	kv(o, "variant", run->variant);
	kv(o, "command", run->command);
	kv(o, "host", run->host);
	snprintf(b, sizeof b, "%lld (parent %lld)", (long long)run->pid, (long long)run->ppid);
	kv(o, "pid", b);
	if (run->start_unix_ns > 0) {
		time_t sec = (time_t)(run->start_unix_ns / 1000000000);
		struct tm tmv;
		strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&sec, &tmv));
		kv(o, "started", b);
	}
	kv(o, "duration", pp_fmt_dur(b, sizeof b, (double)run->duration_ns));
	kv(o, "status", run->status);
	if (run->exit_code >= 0 || run->term_signal) {
		snprintf(b, sizeof b, "exit code %d%s", run->exit_code, run->term_signal ? ", killed by a signal" : "");
		if (run->term_signal)
			snprintf(b, sizeof b, "signal %d", run->term_signal);
		kv(o, "exit", b);
	}
	kv(o, "clock", run->clock);
	snprintf(b, sizeof b, "%lld", (long long)run->events);
	kv(o, "events", b);
	snprintf(b, sizeof b, "%lld events, %lld rows", (long long)run->events_lost, (long long)run->rows_lost);
	kv(o, "lost", b);
	if (run->parent_run) {
		snprintf(b, sizeof b, "%lld", (long long)run->parent_run);
		kv(o, "parent run", b);
	}
	kv(o, "ingest note", run->note);
	tab_ctx g = {o, 0, 0};
	pp_store_each_gpu_status(c->st, run->id, gpu_status_row, &g);
	if (!g.rows)
		P("<dt>GPU tracing</dt><dd>not attempted (no GPU status recorded)</dd>");
	pp_store_each_run_meta(c->st, run->id, kv_row, o);
	P("</dl>\n");
	tab_ctx l = {o, 0, 0};
	pp_store_each_loss(c->st, run->id, loss_row, &l);
	if (l.rows)
		P("</table>\n");
}

static int html_run(pp_view_ctx *c, const pp_run_info *run)
{
	html_state *s = c->priv;
	pp_out *o = c->out;
	pp_model m;
	if (pp_model_load_kept(c->st, run, &m, c->err, c->errlen) != 0)
		return -1;
	pp_out_printf(o, "<section class=\"panel\" id=\"run-%lld\"><h1>Run %lld: ", (long long)run->id, (long long)run->id);
	run_title(o, run);
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
	int64_t first = -1, steady = pp_run_steady_step(c->st, run->id, &first);
	P("<div class=\"cards\"><div class=\"card\"><div class=\"k\">wall time</div><div class=\"v\">");
	pdur(o, run->duration_ns);
	P("</div></div>");
	if (first >= 0) {
		P("<div class=\"card\"><div class=\"k\">first step</div><div class=\"v\">");
		pdur(o, first);
		P("</div></div>");
	}
	if (steady >= 0) {
		P("<div class=\"card\"><div class=\"k\">steady step</div><div class=\"v\">");
		pdur(o, steady);
		P("</div></div>");
	}
	pp_out_printf(o, "<div class=\"card\"><div class=\"k\">threads / tracks</div><div class=\"v\">%d</div></div>", m.n_tracks);
	P("<div class=\"card\"><div class=\"k\">events</div><div class=\"v\">");
	pnum(o, (double)run->events);
	P("</div></div>");
	if (run->events_lost || run->rows_lost) {
		P("<div class=\"card warn\"><div class=\"k\">lost</div><div class=\"v\">");
		pnum(o, (double)(run->events_lost + run->rows_lost));
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
	/* findings */
	pp_out_printf(o, "<h2 id=\"findings-%lld\">Findings</h2>\n", (long long)run->id);
	int nf = 0;
	for (int i = 0; i < s->n_findings; i++)
		if (s->findings[i].run_id == run->id) {
			finding_block(o, &s->findings[i], NULL);
			nf++;
		}
	if (!nf)
		P("<p class=\"quiet\">No findings for this run.</p>\n");
	section_waterfall(c, run, &m);
	section_imports(c, &m);
	section_phase_totals(c, run);
	section_steps(c, run);
	section_timeline(c, run, &m);
	int64_t t_end = m.t_end;
	pp_model_free(&m);
	pp_op_stat *ops = NULL;
	int n_ops = 0;
	pp_store_ops(c->st, run->id, 0, &ops, &n_ops);
	section_ops(c, run, ops, n_ops);
	section_memory(c, run, t_end);
	section_graph(c, run, ops, n_ops);
	free(ops);
	section_flame(c, run);
	section_libs_io(c, run);
	section_meta(c, run);
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
