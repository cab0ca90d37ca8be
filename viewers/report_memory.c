/* report_memory.c — counters as charts (memory-like first) and the
 * allocation table. */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
	bytes ? html_bytes(o, r[n - 1].value) : html_num(o, r[n - 1].value);
	P(" · max ");
	bytes ? html_bytes(o, hi) : html_num(o, hi);
	P("</text>");
	for (int k = 0; k <= 2; k++) {
		double v = lo + (hi - lo) * k / 2, y = Y0 + H - H * k / 2;
		pp_out_printf(o, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e9ef\"/>"
			      "<text x=\"%.0f\" y=\"%.1f\" font-size=\"9\" fill=\"#5f6b7d\" text-anchor=\"end\">",
			      X0, X0 + W, y, y, X0 - 4, y + 3);
		bytes ? html_bytes(o, v) : html_num(o, v);
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
	html_dur(o, t0);
	pp_out_printf(o, " · %d samples</text><text x=\"482\" y=\"152\" font-size=\"9\" fill=\"#5f6b7d\" text-anchor=\"end\">", n);
	html_dur(o, r[n - 1].ts_ns);
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
	html_bytes(o, r->bytes);
	P("</td><td class=\"r\">");
	html_dur(o, r->time_ns);
	P("</td><td class=\"r\">");
	if (r->has_in_use)
		html_bytes(o, r->in_use);
	P("</td><td class=\"r\">");
	if (r->has_peak)
		html_bytes(o, r->peak);
	P("</td></tr>\n");
	return 0;
}

void report_memory(pp_view_ctx *c, const pp_run_info *run, int64_t t_end)
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
