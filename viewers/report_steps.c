/* report_steps.c — the step time chart and its cards; the numbers are
 * diag's step summary (diag_steps.h), the growth rule's own. */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>

void report_steps(pp_view_ctx *c, const pp_run_info *run, const pp_step_summary *ss)
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
	/* The numbers are diag's (first, steady median, p99, Theil-Sen trend
	 * with the growth rule's cap), so the page cannot disagree with a
	 * finding; this file only draws them. */
	int64_t maxs = ss->steady_max_ns, p99 = ss->steady_p99_ns;
	int64_t med = (int64_t)ss->steady_median_ns; /* whole ns, as always printed */
	double slope = ss->slope_ns, icpt = ss->intercept_ns;
	/* What one step is, where the recorder said (the Python layer: an
	 * iteration, an optimizer step of N micro-batches, a batch...). */
	char unit[160];
	if (pp_store_run_meta(c->st, run->id, "python.step_unit", unit, sizeof unit) == 0) {
		P("<p class=\"lead\">One step is: ");
		pp_out_html(o, unit);
		P(".</p>\n");
	}
	P("<div class=\"cards\">");
	html_card_open(o, NULL, "steps");
	pp_out_printf(o, "%d</div></div>", n);
	html_card_open(o, NULL, "first step");
	html_dur(o, s[0].dur_ns);
	P("</div>");
	if (med > 0)
		pp_out_printf(o, "<div class=\"d\">%.1f× the steady median</div>", (double)s[0].dur_ns / (double)med);
	P("</div>");
	if (med >= 0) {
		html_card_open(o, NULL, "steady step (median)");
		html_dur(o, med);
		P("</div></div>");
	}
	if (ss->has_trend) {
		double growth = ss->growth_pct;
		html_card_open(o, growth > 20 ? "warn" : NULL, "trend over steady steps");
		P(slope >= 0 ? "+" : "−");
		html_dur(o, (int64_t)fabs(slope));
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
		html_dur(o, (int64_t)v);
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
			html_dur(o, s[i].dur_ns);
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
		html_dur(o, s[0].dur_ns);
		P("</title></rect>");
	}
	if (broken) {
		pp_out_printf(o, "<path d=\"M%.1f %.1f l%.1f 4 M%.1f %.1f l%.1f 4\" stroke=\"#fff\" stroke-width=\"2\"/>",
			      X0 - 1, Y0 + 10, bw > 3 ? bw : 4, X0 - 1, Y0 + 15, bw > 3 ? bw : 4);
		pp_out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#b85c1c\">first step ", X0 + (bw > 3 ? bw : 4) + 4,
			      Y0 + 10);
		html_dur(o, s[0].dur_ns);
		P(" (bar cut: off scale)</text>");
	}
	if (clipped) {
		pp_out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#5f6b7d\" text-anchor=\"end\">"
			      "%d step%s above the scale (longest ", X0 + W, Y0 + 10, clipped, clipped == 1 ? "" : "s");
		html_dur(o, maxs);
		P("; scale set by the 99th percentile)</text>");
	}
	if (med > 0) {
		double y = Y0 + H - H * (double)med / yscale;
		pp_out_printf(o, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#1e8e5a\" stroke-dasharray=\"4 3\"/>",
			      X0, X0 + W, y, y);
	}
	if (ss->has_trend) {
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
