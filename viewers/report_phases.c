/* report_phases.c — the phase waterfall and the phase totals per kind. */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
		html_dur(o, (int64_t)t);
		P("</text>");
	}
}

static const char *const phase_colours[] = {
	"#9aa5b8", "#5b8def", "#8e6fd8", "#3fa7a0", "#c77dba", "#4f9d5d", "#74a6d8", "#e08a3c",
	"#b9a23b", "#d9674e", "#6b8e23", "#a0522d", "#5f7fbf", "#9b59b6", "#e6b422", "#d35454",
	"#2e86c1", "#16a085", "#7f8c8d", "#c0392b", "#95a5a6", "#34495e"};

void report_waterfall(pp_view_ctx *c, const pp_run_info *run, const pp_model *m)
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
		html_dur(o, r->total);
		P(" in total, starts at ");
		html_dur(o, r->start);
		if (r->count > 1) {
			P(", longest ");
			html_dur(o, r->max);
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
		html_dur(o, r->total);
		pp_out_printf(o, "<tspan fill=\"#5f6b7d\"> · %.1f%%</tspan></text></g>", 100.0 * (double)r->total / (double)span);
	}
	if (other) {
		double y = 22 + 22 * n;
		pp_out_printf(o, "<text x=\"232\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\" fill=\"#5f6b7d\">%d smaller phases</text>"
			      "<text x=\"792\" y=\"%.1f\" font-size=\"12\" fill=\"#5f6b7d\">", y + 13, other, y + 13);
		html_dur(o, other_total);
		P("</text>");
	}
	P("</svg></div>\n");
	free(rows);
}

/* Phase totals per kind, next to the waterfall. */
void report_phase_totals(pp_view_ctx *c, const pp_run_info *run)
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
		html_dur(o, pt[i].total_ns);
		pp_out_printf(o, "</td><td class=\"r\">%.1f%%</td><td class=\"r\">", 100.0 * (double)pt[i].total_ns / span);
		html_dur(o, pt[i].max_ns);
		P("</td></tr>\n");
	}
	P("</table>\n");
	free(pt);
}
