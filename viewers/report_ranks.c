/*
 * report_ranks.c — the report's per-rank swimlanes: one lane per rank of a
 * distributed job on the job's (aligned) clock, showing communicator
 * set-up, steps and communication, so a late or straggling rank stands out.
 * Each lane is drawn from per-pixel coverage, so a rank with a million
 * calls costs at most a few hundred rectangles.
 */
#include "report_int.h"
#include "phaseprof.h"

#include <stdlib.h>
#include <string.h>

#define LANES_MAX 64   /* more ranks: the first 64 are drawn and the rest counted */
#define PX 900         /* drawing width of a lane */

/* kind -> layer: steps under communication under set-up */
static const struct layer { int kind; const char *colour, *label; } layers[] = {
	{PP_STEP, "#c9d7f2", "step"},
	{PP_COMM, "#d9674e", "comm"},
	{PP_COMM_INIT, "#8e6fd8", "comm_init"},
};

static void lane(pp_view_ctx *c, const pp_rank_run *r, int64_t t0, int64_t span, double y, unsigned char *px)
{
	pp_out *o = c->out;
	for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++) {
		pp_span_list sl;
		if (pp_store_spans(c->st, r->run_id, layers[l].kind, &sl) != 0)
			continue;
		memset(px, 0, PX);
		for (int i = 0; i < sl.n; i++) {
			const pp_span_row *s = &sl.rows[i];
			int64_t a = r->start_unix_ns + s->start_ns - t0;
			int64_t b = r->start_unix_ns + (s->end_ns >= 0 ? s->end_ns : r->duration_ns) - t0;
			int xa = (int)((double)a * PX / (double)span), xb = (int)((double)b * PX / (double)span);
			if (xa < 0)
				xa = 0;
			if (xb >= PX)
				xb = PX - 1;
			for (int x = xa; x <= xb; x++)
				px[x] = 1;
		}
		pp_span_list_free(&sl);
		for (int x = 0; x < PX;) {
			if (!px[x]) {
				x++;
				continue;
			}
			int e = x;
			while (e + 1 < PX && px[e + 1])
				e++;
			pp_out_printf(o, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"14\" fill=\"%s\"/>", 90 + x,
				      y + (l == 0 ? 0 : 3), e - x + 1, layers[l].colour);
			x = e + 1;
		}
	}
}

void report_ranks(pp_view_ctx *c)
{
	pp_out *o = c->out;
	pp_rank_run *rr = NULL;
	int n = 0;
	if (pp_store_rank_runs(c->st, &rr, &n) != 0 || n == 0) {
		free(rr);
		return;
	}
	unsigned char *px = malloc(PX);
	for (int i = 0; px && i < n;) {
		int j = i;
		while (j < n && strcmp(rr[j].job, rr[i].job) == 0)
			j++;
		/* only ranks among the selected runs */
		int k = 0;
		for (int q = i; q < j; q++)
			for (int s = 0; s < c->n_runs; s++)
				if (c->runs[s].id == rr[q].run_id)
					rr[i + k++] = rr[q];
		if (k) {
			int lanes = k < LANES_MAX ? k : LANES_MAX;
			int64_t t0 = INT64_MAX, t1 = INT64_MIN;
			for (int q = i; q < i + k; q++) {
				if (rr[q].start_unix_ns < t0)
					t0 = rr[q].start_unix_ns;
				if (rr[q].start_unix_ns + rr[q].duration_ns > t1)
					t1 = rr[q].start_unix_ns + rr[q].duration_ns;
			}
			int64_t span = t1 > t0 ? t1 - t0 : 1;
			P("<h2>Ranks of job <code>");
			E(rr[i].job);
			pp_out_printf(o, "</code></h2>\n<p class=\"lead\">One lane per rank on the job's clock (%s); ",
				      rr[i + (k > 1)].clock_uncertainty_ns >= 0 && k > 1 ? "aligned by merge" : "one host clock");
			for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++)
				pp_out_printf(o, "<span style=\"color:%s\">■</span> %s ", layers[l].colour, layers[l].label);
			if (k > lanes)
				pp_out_printf(o, "— the first %d of %d ranks are drawn.", lanes, k);
			P("</p>\n");
			int h = 20 + 20 * lanes + 8;
			pp_out_printf(o, "<div class=\"chart\"><svg class=\"ranks\" viewBox=\"0 0 1000 %d\">", h);
			for (int q = 0; q < lanes; q++) {
				const pp_rank_run *r = &rr[i + q];
				double y = 20 + 20.0 * q;
				int ok = strcmp(r->status, "complete") == 0;
				pp_out_printf(o, "<text x=\"0\" y=\"%.1f\" font-size=\"11\" fill=\"%s\">rank %d%s</text>", y + 11,
					      ok ? "#1f2a3c" : "#c0392b", r->rank, ok ? "" : " ✕");
				lane(c, r, t0, span, y, px);
				if (!ok) {
					double xe = 90 + PX * (double)(r->start_unix_ns + r->duration_ns - t0) / (double)span;
					pp_out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#c0392b\">✕ ", xe + 2,
						      y + 11);
					E(r->status);
					P("</text>");
				}
			}
			char b[32];
			pp_out_printf(o, "<text x=\"90\" y=\"12\" font-size=\"10\" fill=\"#5f6b7d\">0</text>"
				      "<text x=\"%d\" y=\"12\" font-size=\"10\" fill=\"#5f6b7d\" text-anchor=\"end\">%s</text>",
				      90 + PX, pp_fmt_dur(b, sizeof b, (double)span));
			P("</svg></div>\n");
		}
		i = j;
	}
	free(px);
	free(rr);
}
